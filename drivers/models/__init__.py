"""Models of the variational family (:class:`drivers.families.variational.VariationalModel`), one module each.

The Gibbs family's models are numba kernels and live in :mod:`inference.gibbs`.
"""
