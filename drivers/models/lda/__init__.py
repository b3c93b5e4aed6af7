"""``lda``: variational LDA (thesis ch. 3) and its informed priors (§3.3.1)."""
