"""Every model's one home: a module per model, or a package when it has several (its class in ``model.py``, its
own numba kernels beside it). A model of the variational family subclasses
:class:`drivers.families.variational.family.VariationalModel`, one of the Gibbs family
:class:`inference.gibbs.model.GibbsModel`; :mod:`drivers.registry` names each by ``"module:Class"``. Kernels that
several models share live in :mod:`inference` (the Gibbs ones in :mod:`inference.gibbs`).
"""
