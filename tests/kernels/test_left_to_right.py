"""Left-to-right evaluation kernel (inference/left_to_right.py) against enumeration on tiny models.

Slow references: p(w | Phi, alpha m) by summing over all K^N topic assignments, and the exact law of one
particle (the Gibbs sweeps and the draws of z_n as linear maps on measures over z_<n), from which the two
claims of the module docstring follow exactly: the expected particle product E[prod_n p_n] is p(w) (with and
without resampling), and the limit of the left-to-right estimate for infinitely many particles is prod_n
E_q[p_n] (not p(w) without resampling). The kernel is then checked against these by Monte Carlo with bounds of
4 standard errors.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln

from inference.left_to_right import (LeftToRight, bits_per_word, estimate_document, lda_scores,
                                     particle_seeds)

PHI_VK = np.array([[0.70, 0.05, 0.10],        # V = 4 words x K = 3 topics (columns sum to 1)
                   [0.10, 0.80, 0.05],
                   [0.15, 0.05, 0.70],
                   [0.05, 0.10, 0.15]])
ALPHA = np.array([0.3, 0.5, 0.2])
DOCS = [np.array([0, 1, 0, 2]), np.array([2, 2, 1, 0, 3]), np.array([1, 0, 1])]


# --------------------------------------------------------------------------- slow references

def exact_log_p(words, alpha, phi_vk) -> float:
    """log p(w | Phi, alpha) = log sum_z DM(z | alpha) prod_n phi[w_n, z_n], by enumeration."""
    K, A, N = len(alpha), alpha.sum(), len(words)
    total = 0.0
    for z in itertools.product(range(K), repeat=N):
        counts = np.bincount(z, minlength=K)
        log_dm = gammaln(A) - gammaln(N + A) + np.sum(gammaln(counts + alpha) - gammaln(alpha))
        total += math.exp(log_dm) * np.prod(phi_vk[words, list(z)])
    return math.log(total)


def _conditional(z, m, f, alpha):
    """p(z_m = k | z_-m, w_m) over the positions of z (a tuple), z_m left out."""
    counts = np.bincount([z[i] for i in range(len(z)) if i != m], minlength=len(alpha)).astype(float)
    p = (counts + alpha) * f[m]
    return p / p.sum()


def _sweep(measure, f, alpha):
    """One Gibbs sweep over positions 0..n-1 in order, as a map on a measure over z (tuples of length n)."""
    n = len(next(iter(measure)))
    for m in range(n):
        new = {}
        for z, mass in measure.items():
            for k, q in enumerate(_conditional(z, m, f, alpha)):
                key = z[:m] + (k,) + z[m + 1:]
                new[key] = new.get(key, 0.0) + mass * q
        measure = new
    return measure


def particle_law(words, alpha, phi_vk, resample):
    """Exact law of one particle: (E[prod_n p_n], [E_q p_n for every n]) with q the unweighted particle law."""
    f = phi_vk[words]
    weighted, unweighted = {(): 1.0}, {(): 1.0}
    factors = []
    for n in range(len(words)):
        if resample and n:
            weighted, unweighted = _sweep(weighted, f, alpha), _sweep(unweighted, f, alpha)
        expectation = 0.0
        new_w, new_u = {}, {}
        for z in set(weighted) | set(unweighted):
            counts = np.bincount(z, minlength=len(alpha)).astype(float)
            terms = (counts + alpha) * f[n]
            p_n = terms.sum() / (n + alpha.sum())
            expectation += unweighted.get(z, 0.0) * p_n
            for k in range(len(alpha)):
                q = terms[k] / terms.sum()
                new_w[z + (k,)] = weighted.get(z, 0.0) * p_n * q
                new_u[z + (k,)] = unweighted.get(z, 0.0) * q
        weighted, unweighted = new_w, new_u
        factors.append(expectation)
    return sum(weighted.values()), np.array(factors)


# --------------------------------------------------------------------------- the references agree with the claims

@pytest.mark.parametrize("resample", [False, True])
def test_expected_particle_product_is_exact(resample):
    """E[prod_n p_n] of one particle is p(w | Phi, alpha m): SIS with the optimal proposal, AIS with sweeps."""
    for words in DOCS:
        expected, _ = particle_law(words, ALPHA, PHI_VK, resample)
        assert math.log(expected) == pytest.approx(exact_log_p(words, ALPHA, PHI_VK), abs=1e-12)


def test_left_to_right_without_resampling_is_inconsistent():
    """prod_n E_q[p_n] (the limit for infinitely many particles) differs from p(w) without resampling from the
    third token on (for N <= 2 it is exact)."""
    words = DOCS[0]
    _, factors = particle_law(words[:2], ALPHA, PHI_VK, False)
    assert np.log(factors).sum() == pytest.approx(exact_log_p(words[:2], ALPHA, PHI_VK), abs=1e-12)
    _, factors = particle_law(words, ALPHA, PHI_VK, False)
    assert abs(np.log(factors).sum() - exact_log_p(words, ALPHA, PHI_VK)) > 1e-3


# --------------------------------------------------------------------------- the kernel against them

def _mean_and_error(log_weights):
    w = np.exp(log_weights)
    return w.mean(), w.std(ddof=1) / math.sqrt(len(w))


@pytest.mark.parametrize("resample", [False, True])
def test_kernel_particle_products_are_unbiased(resample):
    """The mean of the kernel's particle products (R = 20,000 independent particles) is p(w) within 4 standard
    errors, for every document."""
    for d, words in enumerate(DOCS):
        est = estimate_document(PHI_VK[words], ALPHA, particle_seeds(7, f"doc{d}", 20000), resample)
        mean, err = _mean_and_error(est.particle_log_weight)
        exact = math.exp(exact_log_p(words, ALPHA, PHI_VK))
        assert abs(mean - exact) < 4 * err, (d, mean, exact, err)
        assert est.log_importance == pytest.approx(math.log(mean), abs=1e-12)


@pytest.mark.parametrize("resample", [False, True])
def test_kernel_factors_match_their_exact_limit(resample):
    """Every token's particle average (R = 20,000) is E_q[p_n] of the exact particle law within 4 standard
    errors: the kernel's sweeps and draws follow the algorithm."""
    for d, words in enumerate(DOCS):
        est = estimate_document(PHI_VK[words], ALPHA, particle_seeds(3, f"doc{d}", 20000), resample)
        _, factors = particle_law(words, ALPHA, PHI_VK, resample)
        mean = np.exp(est.token_log_p)          # the particles' mean of p_n^(r)
        # a bound on 4 standard errors from the range of p_n^(r), which lies in [min_k f_n(k), max_k f_n(k)]
        f = PHI_VK[words]
        bound = 4 * (f.max(axis=1) - f.min(axis=1)) / 2 / math.sqrt(20000)
        assert np.all(np.abs(mean - factors) < bound), (d, mean, factors)


def test_resampling_reduces_the_bias_of_the_limit():
    """Both limits overestimate log p(w) on these documents; resampling brings it closer (the 5-token document:
    0.065 nats with resampling, 0.31 without)."""
    for words in DOCS:
        exact = exact_log_p(words, ALPHA, PHI_VK)
        bias = {rs: np.log(particle_law(words, ALPHA, PHI_VK, rs)[1]).sum() - exact for rs in (False, True)}
        assert 0 < bias[True] < bias[False]


def test_many_particles_importance_estimate_agrees_with_the_exact_marginal():
    """The importance estimate is consistent: 20,000 particles give log p(w) within 0.01 nats."""
    for d, words in enumerate(DOCS):
        est = estimate_document(PHI_VK[words], ALPHA, particle_seeds(11, f"doc{d}", 20000), True)
        assert est.log_importance == pytest.approx(exact_log_p(words, ALPHA, PHI_VK), abs=1e-2)


def test_one_particle_estimates_agree():
    """With R = 1 the left-to-right estimate is the particle's product (the unbiased one)."""
    est = estimate_document(PHI_VK[DOCS[1]], ALPHA, particle_seeds(0, "d", 1), True)
    assert est.log_left_to_right == pytest.approx(est.log_importance, abs=1e-12)


# --------------------------------------------------------------------------- the block scorer

def _block(docs):
    ptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
    return np.concatenate(docs).astype(np.int32), ptr


def test_scores_are_per_document_and_deterministic():
    """A document's row depends on the seed and its id only: the same alone or among others, twice the same;
    another seed gives another estimate."""
    settings = LeftToRight(particles=5, resample=True, seed=4)
    words, ptr = _block(DOCS)
    ids = ["a", "b", "c"]
    together = lda_scores(ids, ptr, words, ALPHA, PHI_VK, settings)
    np.testing.assert_array_equal(together, lda_scores(ids, ptr, words, ALPHA, PHI_VK, settings))
    w1, p1 = _block([DOCS[1]])
    np.testing.assert_array_equal(together[1], lda_scores(["b"], p1, w1, ALPHA, PHI_VK, settings)[0])
    other = lda_scores(ids, ptr, words, ALPHA, PHI_VK, LeftToRight(particles=5, resample=True, seed=5))
    assert not np.array_equal(other[:, 0], together[:, 0])
    np.testing.assert_array_equal(together[:, 2], [4, 5, 3])
    np.testing.assert_array_equal(together[:, 3], 0)


def test_out_of_vocabulary_tokens_are_skipped_and_counted():
    """Ids outside 0..V-1 neither score nor condition: the document scores as without them, 2 skipped."""
    settings = LeftToRight(particles=4, seed=1)
    clean, ptr = _block([DOCS[0]])
    dirty, dptr = _block([np.array([0, 4, 1, 0, -1, 2])])
    a = lda_scores(["x"], ptr, clean, ALPHA, PHI_VK, settings)[0]
    b = lda_scores(["x"], dptr, dirty, ALPHA, PHI_VK, settings)[0]
    np.testing.assert_array_equal(b, [a[0], a[1], 4, 2])


def test_long_document_of_tiny_probabilities_stays_finite():
    """3,000 tokens whose probabilities are ~1e-200 (a huge vocabulary): the estimate is the one of the
    unscaled topics plus 3000 log 1e-200, finite (rows are scaled, sums kept in logs)."""
    rng = np.random.default_rng(0)
    words = rng.integers(0, 4, 3000)
    seeds = particle_seeds(0, "long", 2)
    plain = estimate_document(PHI_VK[words], ALPHA, seeds, False)
    tiny = estimate_document(PHI_VK[words] * 1e-200, ALPHA, seeds, False)
    assert np.isfinite(tiny.log_left_to_right)
    assert tiny.log_left_to_right == pytest.approx(plain.log_left_to_right + 3000 * math.log(1e-200), rel=1e-12)
    resampled = estimate_document(PHI_VK[words[:400]] * 1e-200, ALPHA, seeds, True)
    assert np.isfinite(resampled.log_left_to_right)


def test_bits_per_word():
    assert bits_per_word(-8 * math.log(2) * 10, 10) == pytest.approx(8.0)
