"""The harmonic-mean estimate (thesis 3.57, :mod:`inference.gibbs.harmonic_mean`), no Spark: under the exact
posterior the samples' mean of 1 / P(w_d | latent) is 1 / P(w_d) (enumerated over the latent variables of tiny
models: LDA's topics by its frozen Gibbs chain, the DP mixture's cluster by exact draws), the two aggregations, the
out-of-vocabulary tokens skipped, and a model without the hook refused in one line."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from drivers.models.dp_mixture.model import DPMixture
from drivers.models.lda_gibbs.model import LdaGibbs
from drivers.models.tlm.model import TopicLM
from inference.errors import RefusedError
from inference.gibbs import harmonic_mean
from inference.gibbs.heldout import HeldoutSchedule
from inference.gibbs.model import SegmentedBlock

PHI = np.array([[0.5, 0.2], [0.3, 0.2], [0.2, 0.6]])           # V x K
DOCS = [[2, 0, 2], [1, 1, 0, 2]]
ALPHA = np.array([0.4, 0.9])
SAMPLES = 20000


def lda_likelihood(doc):
    """p(w_d) = sum_z DM(z | alpha) prod_n phi_{z_n}(w_n), every topic vector enumerated."""
    total = 0.0
    for z in np.ndindex(*(2,) * len(doc)):
        n = np.bincount(z, minlength=2)
        prior = math.exp(gammaln(ALPHA.sum()) - gammaln(ALPHA.sum() + len(doc))
                         + np.sum(gammaln(ALPHA + n) - gammaln(ALPHA)))
        total += prior * np.prod([PHI[w, t] for w, t in zip(doc, z)])
    return total


def inverse_mean(logliks):
    """log of the samples' mean of 1 / P(w | latent), per document."""
    return logsumexp(-logliks, axis=0) - math.log(logliks.shape[0])


def test_lda_chain_samples_give_the_inverse_likelihood_in_expectation():
    block = SegmentedBlock.from_segments([(f"d{d}", [doc + [7]]) for d, doc in enumerate(DOCS)])   # 7: OOV
    model = LdaGibbs(2, 3)
    hyper = {"alpha": ALPHA.tolist(), "beta": 0.1}
    schedule = HeldoutSchedule(iterations=50 + SAMPLES, burn_in=50, lag=1, samples=SAMPLES)
    est = harmonic_mean.estimate(model, block, hyper, PHI, schedule, seed=3, partition=0)
    assert est.logliks.shape == (SAMPLES, 2) and est.tokens == 7 and est.skipped == 2
    exact = np.log([lda_likelihood(doc) for doc in DOCS])
    # (1 / P(w | z) is heavy-tailed: 0.04 is the Monte Carlo error's scale; topics drawn from the prior, not the
    # posterior, give 0.54 and 0.33 nats more)
    np.testing.assert_allclose(inverse_mean(est.logliks), -exact, atol=0.04)
    assert est.per_document == pytest.approx(float(harmonic_mean.log_harmonic_mean(est.logliks).sum()))
    assert est.whole_set == pytest.approx(math.log(SAMPLES) - float(logsumexp(-est.logliks.sum(axis=1))))
    assert est.per_document == pytest.approx(exact.sum(), abs=0.08)


def test_dp_mixture_draws_give_the_inverse_likelihood_in_expectation():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 5, (3, 3)).astype(np.int32)
    docs, beta, zeta = np.array([4, 2, 1], dtype=np.int64), 0.3, 0.7
    model = DPMixture(3, 3)
    model.bind_arrays({"cluster_words": words, "cluster_docs": docs}, {"hyper": {"beta": beta, "zeta": zeta}})
    block = SegmentedBlock.from_segments([(f"d{d}", [doc]) for d, doc in enumerate(DOCS)])
    schedule = HeldoutSchedule(iterations=SAMPLES, burn_in=0, lag=1, samples=SAMPLES)
    est = harmonic_mean.estimate(model, block, {"beta": beta, "zeta": zeta}, None, schedule, seed=1, partition=0)
    exact = []
    for doc in DOCS:        # sum_c pi_c DM(w_d | c), the C trained clusters and a new one
        counts = np.vstack([words, np.zeros(3)])
        terms = [math.log(n / (docs.sum() + zeta)) + float(
            np.sum(gammaln(row + np.bincount(doc, minlength=3) + beta) - gammaln(row + beta))
            + gammaln(row.sum() + 3 * beta) - gammaln(row.sum() + len(doc) + 3 * beta))
            for n, row in zip(np.r_[docs, zeta], counts)]
        exact.append(float(logsumexp(terms)))
    np.testing.assert_allclose(inverse_mean(est.logliks), -np.array(exact), atol=0.02)
    again = harmonic_mean.estimate(model, block, {"beta": beta, "zeta": zeta}, None, schedule, seed=1, partition=5)
    np.testing.assert_array_equal(again.logliks, est.logliks)         # seeded by the document, not the partition


def test_a_model_without_samples_of_its_own_is_refused():
    block = SegmentedBlock.from_segments([("d0", [[0, 1]])])
    with pytest.raises(RefusedError, match="harmonic-mean"):
        harmonic_mean.estimate(TopicLM(2, 3), block, {}, PHI, HeldoutSchedule(2, 0, 1, 2), 0, 0)
