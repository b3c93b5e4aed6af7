"""Dirichlet-multinomial hyperparameter estimation (inference/dm, Wallach ch. 2) against slow direct computations:
the log evidence (2.7) summed with gammaln context by context, scipy.optimize on it, data drawn with known alpha m."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from drivers.models.lda_gibbs.model import minka_statistics
from inference.dirichlet import minka_step
from inference.dm import (METHODS, CountHistograms, GammaPrior, estimate, estimate_contexts, log_evidence,
                          log_posterior, sample_concentrations)
from inference.dm.histograms import COUNT_SPAN
from inference.dm.synthetic import draw_base_measure, draw_counts

#: the exact methods find the maximum of the evidence; the others maximise an approximation of it
EXACT_METHODS = ("fixed-point", "exact", "newton")


def direct_log_evidence(counts, alpha_m) -> float:
    """(2.7) context by context with gammaln."""
    counts = np.asarray(counts, dtype=np.float64)
    counts = counts[counts.sum(axis=1) > 0]
    a = float(np.sum(alpha_m))
    return float(np.sum(special.gammaln(a) - special.gammaln(counts.sum(axis=1) + a))
                 + np.sum(special.gammaln(counts + alpha_m) - special.gammaln(alpha_m)))


def direct_leave_one_out(counts, alpha_m) -> float:
    """(2.24): every observation scored by the predictive (2.4) of the rest of its context."""
    counts = np.asarray(counts, dtype=np.float64)
    lengths = counts.sum(axis=1)
    a = float(np.sum(alpha_m))
    seen = counts > 0
    return float(np.sum(np.where(seen, counts * np.log(np.where(seen, counts - 1 + alpha_m, 1.0)), 0.0))
                 - np.sum(lengths[lengths > 0] * np.log(lengths[lengths > 0] - 1 + a)))


def scipy_maximum(objective, start) -> np.ndarray:
    """argmax of ``objective(alpha m)`` by L-BFGS-B over log(alpha m)."""
    res = optimize.minimize(lambda x: -objective(np.exp(x)), np.log(start), method="L-BFGS-B",
                            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 20000, "maxcor": 30})
    return np.exp(res.x)


def drawn(seed, K, D, N, alpha, m=None):
    rng = np.random.default_rng(seed)
    m = draw_base_measure(rng, K) if m is None else np.asarray(m)
    lengths = np.full(D, N) if np.isscalar(N) else np.asarray(N)
    return draw_counts(rng, alpha * m, lengths), alpha * m


def histograms(counts) -> CountHistograms:
    return CountHistograms(counts.shape[1]).add_counts(counts)


# --------------------------------------------------------------------------- histograms

def test_histograms_merged_in_any_order_equal_the_whole():
    rng = np.random.default_rng(0)
    counts, _ = drawn(1, 12, 300, rng.integers(1, 40, size=300), 3.0)
    whole = histograms(counts)
    parts = np.array_split(np.arange(300), 7)
    for trial in range(4):
        order = rng.permutation(len(parts))
        pieces = [histograms(counts[parts[i]]) for i in order]
        if trial % 2:                                     # a tree of merges rather than a chain
            merged = CountHistograms.merged([CountHistograms.merged(pieces[:3], 12),
                                             CountHistograms.merged(pieces[3:], 12)], 12)
        else:
            merged = CountHistograms(12)
            for p in pieces:
                merged.merge(p)
        assert merged.equals(whole)
    grown = CountHistograms(12)
    for i in rng.permutation(len(parts)):                 # added partition by partition
        grown.add_counts(counts[parts[i]])
    assert grown.equals(whole)
    # the definitions (2.50) and (2.53), counted directly
    ptr, n, c = whole.item_histograms()
    for k in range(12):
        direct = {v: int(np.sum(counts[:, k] == v)) for v in np.unique(counts[:, k]) if v > 0}
        assert dict(zip(n[ptr[k]:ptr[k + 1]].tolist(), c[ptr[k]:ptr[k + 1]].tolist())) == direct
    lengths, freqs = whole.length_histogram()
    assert dict(zip(lengths.tolist(), freqs.tolist())) == \
        {v: int(np.sum(counts.sum(1) == v)) for v in np.unique(counts.sum(1))}
    assert whole.num_groups == 300 and whole.num_observations == counts.sum()
    np.testing.assert_array_equal(whole.item_totals(), counts.sum(axis=0))


def test_histograms_from_triplets_observations_and_keyed_rows_are_the_same():
    counts, _ = drawn(2, 9, 80, 25, 1.0)
    whole = histograms(counts)
    d, k = np.nonzero(counts)
    rng = np.random.default_rng(3)
    order = rng.permutation(d.shape[0])
    assert CountHistograms(9).add_sparse(d[order] * 7 + 5, k[order], counts[d, k][order]).equals(whole)
    # a (group, item) pair given twice adds up
    half = counts[d, k] // 2
    assert CountHistograms(9).add_sparse(np.r_[d, d], np.r_[k, k], np.r_[half, counts[d, k] - half]).equals(whole)
    ptr = np.r_[0, np.cumsum(counts.sum(axis=1))]
    observations = np.concatenate([rng.permutation(np.repeat(np.arange(9), row)) for row in counts])
    assert CountHistograms(9).add_observations(ptr, observations).equals(whole)
    keys, rows = whole.rows()
    shuffled = rng.permutation(keys.shape[0])
    assert CountHistograms.from_rows(9, keys[shuffled], rows[shuffled]).equals(whole)
    assert keys.max() < 10 * COUNT_SPAN


# --------------------------------------------------------------------------- the log evidence (Alg. 2.3)

@pytest.mark.parametrize("scale", [1e-6, 0.05, 1.0, 30.0, 1e4])
def test_log_evidence_from_histograms_is_the_direct_gammaln_sum(scale):
    rng = np.random.default_rng(4)
    counts, _ = drawn(5, 15, 400, rng.integers(1, 300, size=400), 0.7)
    counts[:3, :3] += np.array([[100_000, 0, 7], [99_999, 40_000, 0], [3, 5, 2]])   # far apart: the closed form
    alpha_m = scale * rng.uniform(0.2, 2.0, size=15)
    assert log_evidence(histograms(counts), alpha_m) == pytest.approx(direct_log_evidence(counts, alpha_m),
                                                                      rel=1e-11, abs=1e-7)


# --------------------------------------------------------------------------- estimators

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("symmetric", [False, True])
def test_every_estimator_recovers_known_parameters(method, symmetric):
    K, alpha = 50, 5.0          # every alpha m_k < 1 < alpha: where MacKay & Peto's method is valid (§1.5, §7.3)
    m = np.full(K, 1.0 / K) if symmetric else np.linspace(1.0, 3.0, K) / (2.0 * K)
    counts, _ = drawn(6, K, 3000, 60, alpha, m)
    found = estimate(histograms(counts), method, symmetric=symmetric)
    assert found.converged and np.all(np.isfinite(found.alpha_m)) and np.all(found.alpha_m > 0)
    rel_error = abs(found.alpha - alpha) / alpha                                       # (2.67)
    kl_bits = float(np.sum(m * np.log2(m / found.m)))                                  # (2.66)
    assert rel_error < {"mackay-peto": 0.1, "leave-one-out": 0.1}.get(method, 0.05), found.alpha
    assert kl_bits < 4e-3
    if symmetric:
        assert np.all(found.alpha_m == found.alpha_m[0])


@pytest.mark.parametrize("symmetric", [False, True])
def test_exact_methods_agree_with_scipy_on_the_direct_log_evidence(symmetric):
    counts, _ = drawn(7, 6, 150, np.random.default_rng(8).integers(2, 60, size=150), 2.0)
    hist = histograms(counts)
    if symmetric:
        res = optimize.minimize_scalar(lambda x: -direct_log_evidence(counts, np.full(6, math.exp(x))),
                                       bracket=(-3, 1), tol=1e-12)
        best = np.full(6, math.exp(res.x))
    else:
        best = scipy_maximum(lambda a: direct_log_evidence(counts, a), np.ones(6))
    for method in EXACT_METHODS:
        found = estimate(hist, method, symmetric=symmetric, tol=1e-10)
        np.testing.assert_allclose(found.alpha_m, best, rtol=2e-5)
        assert log_evidence(hist, found.alpha_m) >= direct_log_evidence(counts, best) - 1e-7


def test_leave_one_out_agrees_with_scipy_on_the_leave_one_out_evidence():
    counts, _ = drawn(9, 5, 200, np.random.default_rng(10).integers(2, 30, size=200), 1.5)
    best = scipy_maximum(lambda a: direct_leave_one_out(counts, a), np.ones(5))
    np.testing.assert_allclose(estimate(histograms(counts), "leave-one-out", tol=1e-10).alpha_m, best, rtol=2e-5)


def test_approximate_methods_solve_their_own_equations_near_the_maximum():
    """Apprx. is the zero of the gradient with (2.60) for the digamma differences; MacKay & Peto's the zero of the
    approximate gradient (2.35); both near the maximum of the evidence when alpha m_k < 1 < alpha."""
    counts, _ = drawn(11, 20, 400, 40, 3.0, np.linspace(1.0, 2.0, 20) / 30.0)
    hist = histograms(counts)
    lengths = counts.sum(axis=1)

    def apprx_gradient(a):
        def diff(n, z):
            return np.where(n > 0, 1 / z + np.log((np.maximum(n, 1) + z - 0.5) / (z + 0.5)), 0.0)
        return diff(counts, a).sum(axis=0) - diff(lengths, a.sum()).sum()

    h1 = np.array([[np.sum(1 / np.arange(1, n)) for n in row] for row in counts])          # (2.42)
    h2 = np.array([[np.sum(1 / np.arange(1, n) ** 2) for n in row] for row in counts])     # (2.43)
    seen = counts > 0

    def mackay_peto_gradient(a):
        A = a.sum()
        k_alpha = np.sum(np.log(A) - 1 / (2 * A) - np.log(lengths + A) + 1 / (2 * (lengths + A)))
        return np.sum(seen * (1 / a + h1 - a * h2), axis=0) + k_alpha

    best = scipy_maximum(lambda a: direct_log_evidence(counts, a), np.ones(20))
    for method, gradient in (("approximate", apprx_gradient), ("mackay-peto", mackay_peto_gradient)):
        found = estimate(hist, method, tol=1e-12).alpha_m
        root = optimize.root(lambda x: gradient(np.exp(x)), np.log(found * 1.3), tol=1e-13).x
        np.testing.assert_allclose(found, np.exp(root), rtol=1e-7)
        np.testing.assert_allclose(found.sum(), best.sum(), rtol=0.1)
        assert log_evidence(hist, found) > direct_log_evidence(counts, best) - 0.01 * abs(
            direct_log_evidence(counts, best))


@pytest.mark.parametrize("method", ["fixed-point", "leave-one-out", "mackay-peto", "newton"])
def test_the_context_by_context_forms_give_the_histograms_estimates(method):
    counts, _ = drawn(12, 7, 120, np.random.default_rng(13).integers(1, 50, size=120), 4.0)
    counts[:, 3] = 0                                            # an item never seen stays at the floor
    by_contexts = estimate_contexts(counts, method, tol=1e-10)
    by_histograms = estimate(histograms(counts), method, tol=1e-10)
    np.testing.assert_allclose(by_contexts.alpha_m, by_histograms.alpha_m, rtol=1e-7)
    assert by_histograms.alpha_m[3] <= 1e-9


def test_one_fixed_point_step_is_the_lda_gibbs_step():
    """One step of (2.54) from the histograms of the document-topic counts = LDA-Gibbs' Minka step from its
    per-partition digamma sums (drivers.models.lda_gibbs.model), the form the Gibbs models would switch to."""
    counts, _ = drawn(14, 8, 500, np.random.default_rng(15).integers(1, 80, size=500), 0.8)
    alpha = np.random.default_rng(16).uniform(0.05, 0.5, size=8)
    theirs = minka_step(alpha, minka_statistics(counts, alpha))
    for method in ("fixed-point", "exact"):
        ours = estimate(histograms(counts), method, start=alpha, max_iter=1).alpha_m
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


# --------------------------------------------------------------------------- hard data

@pytest.mark.parametrize("method", METHODS)
def test_documents_of_one_to_twenty_tokens_give_positive_finite_estimates(method):
    """MALLET's learnSymmetricConcentration collapses to 0 (then NaN) on documents of 20 tokens or fewer."""
    rng = np.random.default_rng(17)
    for symmetric in (True, False):
        for max_len, alpha in ((20, 0.5), (5, 50.0), (2, 1.0), (1, 1.0)):
            counts, _ = drawn(int(rng.integers(1 << 30)), 50, 400, rng.integers(1, max_len + 1, size=400), alpha)
            for prior in (None, GammaPrior(1.0, 10.0)):
                found = estimate(histograms(counts), method, symmetric=symmetric, prior=prior)
                assert np.all(np.isfinite(found.alpha_m)) and np.all(found.alpha_m > 0), (max_len, alpha)


@pytest.mark.parametrize("method", METHODS)
def test_extreme_shapes(method):
    """1000 items in groups of one token; a few groups of up to 10^5 tokens."""
    rng = np.random.default_rng(18)
    single = np.zeros((3000, 1000), dtype=np.int64)
    single[np.arange(3000), rng.integers(0, 1000, size=3000)] = 1
    big, _ = drawn(19, 1000, 12, rng.integers(50_000, 100_001, size=12), 300.0)
    for counts in (single, big):
        for symmetric in (False, True):
            found = estimate(histograms(counts), method, symmetric=symmetric, max_iter=20_000)
            assert np.all(np.isfinite(found.alpha_m)) and np.all(found.alpha_m > 0)
    exact = estimate(histograms(big), "exact", tol=1e-9)
    fixed = estimate(histograms(big), "fixed-point", tol=1e-9)
    np.testing.assert_allclose(exact.alpha_m, fixed.alpha_m, rtol=1e-6)
    assert abs(exact.alpha - 300.0) / 300.0 < 0.25


# --------------------------------------------------------------------------- gamma hyperprior (2.70)-(2.74)

@pytest.mark.parametrize("method", EXACT_METHODS)
def test_the_gamma_hyperprior_update_maximises_the_posterior(method):
    counts, _ = drawn(20, 5, 60, np.random.default_rng(21).integers(1, 15, size=60), 1.0)
    counts[:, 4] = 0                                      # an unseen item: positive under a prior (c > 0)
    hist, prior = histograms(counts), GammaPrior(shape=2.0, scale=0.5)
    posterior = lambda a: direct_log_evidence(counts, a) + prior.log_density(a)   # noqa: E731
    best = scipy_maximum(posterior, np.ones(5))
    found = estimate(hist, method, prior=prior, tol=1e-11)
    np.testing.assert_allclose(found.alpha_m, best, rtol=2e-5)
    assert log_posterior(hist, found.alpha_m, prior) == pytest.approx(posterior(found.alpha_m), rel=1e-10)
    assert found.alpha_m[4] == pytest.approx(prior.shape / (
        np.sum(special.digamma(counts.sum(1) + found.alpha) - special.digamma(found.alpha)) + 1 / prior.scale))


def test_every_step_of_the_hyperprior_update_raises_the_posterior_and_mallets_sign_does_not_maximise_it():
    counts, _ = drawn(22, 6, 80, 12, 2.0)
    hist, prior = histograms(counts), GammaPrior(shape=1.5, scale=2.0)
    a = np.full(6, 5.0)
    values = [log_posterior(hist, a, prior)]
    for _ in range(30):
        a = estimate(hist, "exact", start=a, prior=prior, max_iter=1).alpha_m
        values.append(log_posterior(hist, a, prior))
    assert np.all(np.diff(values) > -1e-9)
    # MALLET's (old_k S_k + shape) / (S - 1/scale) converges elsewhere, to a lower posterior
    lengths = counts.sum(1)
    b = np.full(6, 5.0)
    for _ in range(2000):
        s = np.sum(special.digamma(lengths + b.sum()) - special.digamma(b.sum()))
        s_k = np.sum(special.digamma(counts + b) - special.digamma(b), axis=0)
        b = (b * s_k + prior.shape) / (s - 1 / prior.scale)
    ours = estimate(hist, "exact", prior=prior, tol=1e-10).alpha_m
    assert log_posterior(hist, ours, prior) > log_posterior(hist, b, prior) + 1e-3


# --------------------------------------------------------------------------- slice sampling (Alg. 3.2)

def test_slice_sampled_concentration_has_its_density():
    shape, rate = 3.0, 2.0
    rng = np.random.default_rng(23)
    x, draws = np.array([1.0]), []
    for _ in range(3000):
        x = sample_concentrations(lambda v: (shape - 1) * np.log(v[0]) - rate * v[0], x, rng, iterations=1)
        draws.append(x[0])
    draws = np.array(draws[::3])
    assert stats.kstest(draws, stats.gamma(shape, scale=1 / rate).cdf).pvalue > 1e-3
    assert draws.mean() == pytest.approx(shape / rate, rel=0.08)
