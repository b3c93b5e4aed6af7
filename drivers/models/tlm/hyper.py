"""The topic-based language model's hyperparameters (Wallach §3.4.1-3.4.2), on the driver from the summed tables.

* **Gibbs EM** (Alg. 3.1) for the non-hierarchical priors: the E-step is the engine's sweeps, S samples (one per
  synchronisation, ``em_samples``, default 1) pooled by :class:`SamplePool`, the M-step the thesis' fixed point
  (2.58)/(3.30) by :func:`inference.dm.estimate` ("exact") on count
  histograms: alpha m from the document-topic histograms (a keyed table the partitions count), beta n (prior 1:
  the contexts are the (w', t) pairs) or beta n_t (prior 2: the contexts of topic t are its previous words).
* **Slice sampling** (Alg. 3.2, :func:`inference.dm.slice_sample`) of beta, beta0 (and beta1) for the hierarchical
  priors, in log space under the noninformative prior p(log beta) flat, with the sequential evidence (3.55) as the
  density. The driver has the counts, not the corpus order, so the sequence is the table's observations in a
  fixed pseudo-random order (a function of the table only, the same on every run): an order the path
  assumptions' counts are rebuilt along, as the thesis rebuilds them along the corpus.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from inference.dm import CountHistograms, estimate, slice_sample
from inference.gibbs.tables import KeyedCounts
from drivers.models.tlm.counts import Prior, empty_counts, split_keys
from drivers.models.tlm.kernels import H2B, H3, sequential_log_evidence

#: the order of the sequential evidence: a fixed permutation of the table's observations
ORDER_SEED = 20080101
#: sampled concentrations stay in [e^-LOG_BOUND, e^LOG_BOUND] (a flat density in log space is improper)
LOG_BOUND = 25.0


def alpha_histograms(hist_table: KeyedCounts, num_topics: int) -> CountHistograms:
    """The documents' topic-count histograms C_t(n), C_.(n) of one sample (the summed keyed table's rows)."""
    return CountHistograms.from_rows(num_topics, hist_table.keys, hist_table.counts[:, 0])


def context_histograms(table: KeyedCounts, vocab_size: int, num_topics: int, prior_variant: str) -> list:
    """The bigram contexts' word-count histograms of one sample: prior 1 one set over every (w', t) context,
    prior 2 one per topic over its contexts w' (None for a topic without tokens)."""
    V, K = int(vocab_size), int(num_topics)
    prev, word, topic = split_keys(table.keys, V, K)
    counts = table.counts[:, 0].astype(np.int64)
    if prior_variant == "1":
        return [CountHistograms(V).add_sparse(prev * K + topic, word, counts)]
    out = []
    for t in range(K):
        mine = topic == t
        out.append(CountHistograms(V).add_sparse(prev[mine], word[mine], counts[mine]) if mine.any() else None)
    return out


class SamplePool:
    """The E-step's samples of Gibbs EM (Alg. 3.1): the histograms of the samples drawn since the last M-step,
    merged, every sample's documents and contexts groups of their own, so the fixed point (2.58) maximises
    sum_s log P(w, z^(s) | U), the Monte Carlo E-step's objective, rather than one sample's."""

    def __init__(self, vocab_size: int, num_topics: int, prior_variant: str):
        self.V, self.K, self.variant = int(vocab_size), int(num_topics), prior_variant
        self.size = 0
        self.alpha = CountHistograms(self.K)
        self.contexts = [None] * (1 if prior_variant == "1" else self.K)

    def add(self, tables: dict, with_contexts: bool) -> "SamplePool":
        """Add one sample (the summed tables of one synchronisation)."""
        self.alpha.merge(alpha_histograms(tables["doc_topic_histograms"], self.K))
        if with_contexts:
            for i, hist in enumerate(context_histograms(tables["bigram_topics"], self.V, self.K, self.variant)):
                if hist is not None:
                    self.contexts[i] = hist if self.contexts[i] is None else self.contexts[i].merge(hist)
        self.size += 1
        return self


def alpha_step(hist: CountHistograms, alpha_m, tol: float, max_steps: int) -> np.ndarray:
    """alpha m maximising P(z | alpha m) (3.27) of the documents' topic counts in ``hist``, by (2.58)."""
    return estimate(hist, "exact", np.asarray(alpha_m, dtype=np.float64), tol=tol, max_iter=max_steps).alpha_m


def base_measure_step(contexts: list, bn: np.ndarray, tol: float, max_steps: int) -> np.ndarray:
    """(K, V) beta n_t maximising P(w | z, U) (3.26) of the contexts' histograms (:func:`context_histograms`):
    prior 1 one beta n (equal rows), prior 2 one beta n_t per topic (a topic without tokens keeps its values)."""
    out = np.array(bn, dtype=np.float64, copy=True)
    if len(contexts) == 1:
        if contexts[0] is not None:
            out[:] = estimate(contexts[0], "exact", out[0], tol=tol, max_iter=max_steps).alpha_m
        return out
    for t, hist in enumerate(contexts):
        if hist is not None:
            out[t] = estimate(hist, "exact", out[t], tol=tol, max_iter=max_steps).alpha_m
    return out


def dirichlet_log_evidence(table: KeyedCounts, vocab_size: int, num_topics: int, prior: Prior) -> float:
    """log P(w | z, U) (3.26) of the non-hierarchical priors: every (w', t) context's Dirichlet-multinomial."""
    V, K = int(vocab_size), int(num_topics)
    prev, word, topic = split_keys(table.keys, V, K)
    counts = table.counts[:, 0].astype(np.float64)
    contexts, at = np.unique(prev * K + topic, return_inverse=True)
    totals = np.bincount(at.ravel(), weights=counts)
    bn = prior.bn[topic, word]
    beta = prior.beta_t[contexts % K]
    return float((gammaln(beta) - gammaln(totals + beta)).sum() + (gammaln(counts + bn) - gammaln(bn)).sum())


class SequentialEvidence:
    """log P(w | z, U) of the hierarchical priors by (3.55) over the table's observations in the fixed order, as a
    function of the concentrations (the slice sampler's density)."""

    def __init__(self, table: KeyedCounts, vocab_size: int, num_topics: int, prior: Prior):
        self.V, self.K, self.prior = int(vocab_size), int(num_topics), prior
        keys, counts = table.keys, table.counts[:, 0].astype(np.int64)
        self.pairs, entry_pair = np.unique(keys // self.K, return_inverse=True)
        order = np.random.default_rng(ORDER_SEED).permutation(int(counts.sum()))
        self.order_pair = np.repeat(entry_pair.ravel().astype(np.int64), counts)[order]
        self.order_topic = np.repeat(keys % self.K, counts)[order]

    def __call__(self, beta: float, beta0: float, beta1: float) -> float:
        local = empty_counts(self.pairs, self.V, self.K, self.prior.variant)
        return float(sequential_log_evidence(self.order_pair, self.order_topic, self.prior.variant,
                                             self.prior.minimal, beta, beta0, beta1, self.prior.bn,
                                             self.prior.beta_t, *local.arrays()))


def concentration_names(prior_variant: str) -> tuple:
    return ("beta", "beta0", "beta1") if prior_variant in ("h2b", "h3") else ("beta", "beta0")


def sample_concentrations(evidence: SequentialEvidence, hyper: dict, rng: np.random.Generator) -> dict:
    """beta, beta0 (beta1) after ``slice_iterations`` draws of Alg. 3.2 in log space (widths ``slice_width``)."""
    names = concentration_names(hyper["prior_variant"])

    def log_density(x):
        if np.any(np.abs(x) > LOG_BOUND):
            return -math.inf
        v = np.exp(x)
        return evidence(v[0], v[1], v[2] if len(v) > 2 else 1.0)

    start = np.log([float(hyper[n]) for n in names])
    x = slice_sample(log_density, start, rng, np.full(len(names), float(hyper.get("slice_width", 1.0))),
                     int(hyper.get("slice_iterations", 5)))
    return {n: float(math.exp(v)) for n, v in zip(names, x)}


def uses_beta1(variant: int) -> bool:
    return variant in (H2B, H3)
