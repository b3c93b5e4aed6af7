"""cluster-lda: the cluster-based topic model (Wallach §5.3): ``model.py`` the GibbsModel, ``kernels.py`` its numba
kernels."""
