"""pdp-network: a topic model given as a network of Dirichlet / Pitman-Yor vectors (issue 28), its one home on the
Gibbs engine: ``model.py`` (the GibbsModel), ``engine_specs.py`` (options, shipped specs, what the engine runs),
``shared_roots.py`` / ``shared_pyp.py`` (vectors shared by documents: Dirichlet roots, partition-owned Pitman-Yor
tables), ``word_sides.py`` (one object per kind of word side) over ``words_pyp.py``, ``words_bigram.py``,
``words_chain.py``, ``words_column.py``, ``hyper_steps.py`` (the driver's concentration and discount steps),
``left_to_right_scores.py`` (held-out particles), ``block_memo.py`` (what the model remembers per block). The
kernels are :mod:`inference.pdpnet`."""
