"""``seqlda``: sequential LDA (thesis ch. 6): the model and its kernels."""
