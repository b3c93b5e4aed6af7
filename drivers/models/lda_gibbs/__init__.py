"""``lda-gibbs``: collapsed Gibbs LDA (thesis ch. 4): the model and the SparseLDA kernel."""
