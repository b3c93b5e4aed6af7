"""lda-gibbs' topic-word concentration beta learnt between synchronisations (``--beta-update``), as every other
model of Wallach's chapter 5 learns its own (the thesis slice-samples LDA's hyperparameters after every Gibbs
iteration, §5.3.2): the driver's global step reads the summed topic-word counts N_{w|t} and updates the
symmetric beta (per word; the base measure stays uniform, pitfall 7) under the evidence (5.15)

    log P(w | z, beta) = sum_t [ sum_w lnGamma(N_{w|t} + beta) - V lnGamma(beta) - lnGamma(N_t + V beta)
                                 + lnGamma(V beta) ]

from the topics' count histograms (Alg. 2.3: the cost follows the distinct counts):

* ``fixed`` (default): beta stays as given; the hyperparameters and the draws are the old ones bit for bit;
* ``sample``: 5 iterations of slice sampling (Alg. 3.2) in log space under a vague Gamma(1, 1000) hyperprior,
  cluster-lda's and dp-mixture's own beta update (like for like in the chapter-5 comparison);
* ``optimise``: the maximiser of (5.15) by the digamma-recurrence fixed point ("Exact", §2.3.5), symmetric.
"""
from __future__ import annotations

import numpy as np

from inference.dm.estimators import estimate
from inference.dm.evidence import log_evidence
from inference.dm.histograms import CountHistograms
from inference.dm.slice import sample_concentrations

BETA_UPDATES = ("fixed", "sample", "optimise")
#: the hyperprior of a sampled beta: Gamma(shape 1, scale HYPER_SCALE), vague (cluster-lda's, dp-mixture's)
HYPER_SCALE = 1000.0
SLICE_ITERATIONS = 5


def topic_histograms(nwk: np.ndarray) -> CountHistograms:
    """The topics (groups) over the words (items) of the V x K counts ``nwk``, as count histograms."""
    return CountHistograms(nwk.shape[0]).add_counts(np.asarray(nwk).T)


def log_words_given_topics(nwk: np.ndarray, beta: float) -> float:
    """log P(w | z, beta) (5.15) of the topic-word counts ``nwk`` (V x K) under the symmetric per-word ``beta``."""
    return log_evidence(topic_histograms(nwk), np.full(nwk.shape[0], float(beta)))


def updated_beta(how: str, nwk: np.ndarray, beta: float, rng: np.random.Generator) -> float:
    """beta after one update of kind ``how`` (:data:`BETA_UPDATES`) given the summed counts ``nwk`` (V x K)."""
    if how == "fixed":
        return float(beta)
    if how not in BETA_UPDATES:
        raise ValueError(f"beta_update must be one of {', '.join(BETA_UPDATES)}, got {how!r}")
    hist = topic_histograms(nwk)
    if how == "optimise":
        return float(estimate(hist, "exact", start=float(beta), symmetric=True).alpha_m[0])
    V = nwk.shape[0]
    value = sample_concentrations(lambda v: log_evidence(hist, np.full(V, v[0])) - float(v[0]) / HYPER_SCALE,
                                  [float(beta)], rng, 1.0, SLICE_ITERATIONS)
    return float(value[0])
