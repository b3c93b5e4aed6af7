"""tlm: Wallach's topic-based language model (thesis §3.4) on the Gibbs engine, its one home: ``model.py`` (the
GibbsModel), ``kernels.py`` (numba: sweep, path counts, sequential evidence, left to right), ``counts.py`` (keys,
prior variants, upper-level counts, local arrays), ``hyper.py`` (Gibbs EM's M-step, slice sampling)."""
