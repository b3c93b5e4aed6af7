"""Gibbs-sampled structured topic models (issue 4): pure numba kernels, no Spark.

Every model plugs into the one Gibbs engine (``drivers/engines/gibbs/``) through the
:class:`inference.gibbs.model.GibbsModel` protocol; the data unit is a
:class:`inference.gibbs.model.SegmentedBlock` (one Spark partition's documents,
ordered segments, one entry per token).
"""
