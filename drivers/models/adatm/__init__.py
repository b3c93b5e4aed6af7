"""``adatm``: the adaptive topic model (Du thesis ch. 7), its model and kernels."""
