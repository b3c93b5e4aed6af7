"""``dp-mixture``: the word-based Dirichlet-process mixture of documents (Wallach §4.5): model and kernels."""
