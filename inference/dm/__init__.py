"""Dirichlet-multinomial hyperparameters (Wallach 2008, ch. 2; extract §1): estimation from count histograms.

* :mod:`inference.dm.histograms`: :class:`CountHistograms`, the sufficient statistics C_k(n), C_.(n) (2.50, 2.53),
  added per partition and merged exactly in any order;
* :mod:`inference.dm.estimators`: :func:`estimate` by every method of the chapter (Minka's fixed point and Newton,
  leave-one-out, MacKay & Peto, the digamma recurrence "exact" and its approximation), symmetric or asymmetric,
  with an optional gamma hyperprior (2.74); :func:`estimate_contexts`, the same from a context-by-context pass as
  the thesis timed Minka's methods;
* :mod:`inference.dm.evidence`: the log evidence by Alg. 2.3 and the hyperprior's density;
* :mod:`inference.dm.slice`: slice sampling of concentrations given a log density (Alg. 3.2);
* :mod:`inference.dm.sums`: the numba kernels (running sums of the digamma recurrence, 2.57-2.59 and 2.78-2.80).

Pure numpy/numba: nothing here knows about Spark or the samplers.
"""
from inference.dm.estimators import METHODS, Contexts, Estimate, default_start, estimate, estimate_contexts
from inference.dm.evidence import GammaPrior, log_evidence, log_posterior
from inference.dm.histograms import CountHistograms
from inference.dm.slice import sample_concentrations, slice_sample

__all__ = ["METHODS", "Contexts", "CountHistograms", "Estimate", "GammaPrior", "default_start", "estimate",
           "estimate_contexts", "log_evidence", "log_posterior", "sample_concentrations", "slice_sample"]
