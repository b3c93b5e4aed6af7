"""Numerical kernels against slow, direct implementations of the thesis equations."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from inference.blocks import DocBlock
from inference.elbo import alpha_terms, log_dirichlet_normaliser, topic_terms
from inference.estep import estep_documents, initial_gamma
from inference.special import digamma


def test_digamma_matches_scipy():
    x = np.concatenate([np.logspace(-8, 4, 400), [0.5, 1.0, 5.999, 6.0, 6.001]])
    ours = np.array([digamma(v) for v in x])
    np.testing.assert_allclose(ours, special.digamma(x), rtol=1e-9, atol=1e-9)


def test_log_dirichlet_normaliser():
    a = np.array([0.3, 2.0, 7.5])
    assert log_dirichlet_normaliser(a) == pytest.approx(
        special.gammaln(a.sum()) - special.gammaln(a).sum(), rel=1e-12)


def reference_estep(doc_terms, doc_counts, gamma0, lam, alpha, tol, max_iter):
    """Direct Alg. 1 with an explicit phi matrix (per word type), E[log beta] from lambda."""
    elogbeta = special.digamma(lam) - special.digamma(lam.sum(1, keepdims=True))  # K x V
    gamma = gamma0.copy()
    iters = 0
    for _ in range(max_iter):
        iters += 1
        elogtheta = special.digamma(gamma) - special.digamma(gamma.sum())
        log_phi = elogtheta[None, :] + elogbeta[:, doc_terms].T          # n x K
        phi = np.exp(log_phi - special.logsumexp(log_phi, axis=1, keepdims=True))
        sigma = (doc_counts[:, None] * phi).sum(0)                      # sigma reset every pass
        new_gamma = alpha + sigma
        change = np.mean(np.abs(new_gamma - gamma))
        gamma = new_gamma
        if change < tol:
            break
    elogtheta = special.digamma(gamma) - special.digamma(gamma.sum())
    log_phi = elogtheta[None, :] + elogbeta[:, doc_terms].T
    phi = np.exp(log_phi - special.logsumexp(log_phi, axis=1, keepdims=True))
    w = doc_counts[:, None]
    # the seven terms of eq (2.4) that involve this document, closed forms of Blei et al. (2003)
    e_log_p_w = np.sum(w * phi * elogbeta[:, doc_terms].T)
    e_log_p_z = np.sum(w * phi * elogtheta[None, :])
    e_log_p_theta = special.gammaln(alpha.sum()) - special.gammaln(alpha).sum() + np.dot(alpha - 1, elogtheta)
    h_z = -np.sum(w * phi * np.log(phi))
    e_log_q_theta = special.gammaln(gamma.sum()) - special.gammaln(gamma).sum() + np.dot(gamma - 1, elogtheta)
    elbo = e_log_p_w + e_log_p_z + e_log_p_theta + h_z - e_log_q_theta
    stats = np.zeros_like(lam)
    stats[:, doc_terms] += (w * phi).T
    return gamma, stats, elbo, elogtheta, iters


@pytest.fixture
def small_problem():
    rng = np.random.default_rng(3)
    K, V = 5, 30
    lam = rng.gamma(2.0, 1.0, size=(K, V)) + 0.01
    alpha = rng.uniform(0.05, 0.8, size=K)
    docs = []
    for d in range(6):
        ids = np.sort(rng.choice(V, size=rng.integers(1, 12), replace=False))
        docs.append((f"doc{d}", ids, rng.integers(1, 6, size=ids.size)))
    return K, V, lam, alpha, DocBlock.from_documents(docs), docs


def test_estep_matches_reference(small_problem):
    K, V, lam, alpha, block, docs = small_problem
    elogbeta = special.digamma(lam) - special.digamma(lam.sum(1, keepdims=True))
    eb_local = np.ascontiguousarray(np.exp(elogbeta).T[block.vocab_ids])
    gamma0 = initial_gamma(block.indptr, block.counts, alpha)
    gamma = gamma0.copy()
    sstats, alpha_stats, doc_elbo, iters, _ = estep_documents(
        block.indptr, block.local_terms, block.counts, gamma, eb_local, alpha, 1e-6, 500, True)

    full_stats = np.zeros((K, V))
    full_stats[:, block.vocab_ids] = sstats.T
    expected_stats = np.zeros((K, V))
    expected_alpha_stats = np.zeros(K)
    total_elbo = 0.0
    for d, (doc_id, ids, cts) in enumerate(sorted(docs, key=lambda x: x[0])):
        g, st, elbo, elogtheta, it = reference_estep(ids, cts.astype(float), gamma0[d], lam, alpha, 1e-6, 500)
        np.testing.assert_allclose(gamma[d], g, rtol=1e-9)
        assert iters[d] == it
        expected_stats += st
        expected_alpha_stats += elogtheta
        total_elbo += elbo
    np.testing.assert_allclose(full_stats, expected_stats, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(alpha_stats, expected_alpha_stats, rtol=1e-9)
    # kernel doc terms + the driver's alpha terms == the per-document part of eq (2.4)
    ours = doc_elbo.sum() + alpha_terms(alpha, alpha_stats, block.n_docs)
    assert ours == pytest.approx(total_elbo, rel=1e-10)


def test_estep_cap_and_warm_start(small_problem):
    K, V, lam, alpha, block, _ = small_problem
    eb = np.ascontiguousarray(np.exp(special.digamma(lam) - special.digamma(lam.sum(1, keepdims=True))).T
                              [block.vocab_ids])
    gamma = initial_gamma(block.indptr, block.counts, alpha)
    *_, iters, _ = estep_documents(block.indptr, block.local_terms, block.counts, gamma, eb, alpha, 0.0, 7, True)
    assert np.all(iters == 7)                       # tol 0: the cap stops every document
    *_, cold, _ = estep_documents(block.indptr, block.local_terms, block.counts, gamma, eb, alpha, 1e-8, 5000, True)
    *_, warm, _ = estep_documents(block.indptr, block.local_terms, block.counts, gamma, eb, alpha, 1e-3, 100, True)
    assert cold.max() > 3
    assert np.all(warm == 1)                        # a converged warm start needs one pass
    *_, restarted, tried = estep_documents(block.indptr, block.local_terms, block.counts, gamma, eb, alpha,
                                           1e-3, 100, True, True, 3, 1)
    assert tried[1] == len(range(1, block.n_docs, 3))   # only the rotating slice is refitted
    assert np.all(restarted[1::3] > 1) and np.all(np.delete(restarted, np.s_[1::3]) == 1)


def test_topic_terms_match_direct_formula():
    rng = np.random.default_rng(0)
    lam = rng.gamma(1.0, 1.0, size=40) + 0.1
    eta = np.full(40, 0.05)
    elog, prior, entropy = topic_terms(lam, eta)
    e = special.digamma(lam) - special.digamma(lam.sum())
    direct_prior = special.gammaln(eta.sum()) - special.gammaln(eta).sum() + np.dot(eta - 1, e)
    direct_entropy = -(special.gammaln(lam.sum()) - special.gammaln(lam).sum() + np.dot(lam - 1, e))
    assert prior == pytest.approx(direct_prior, rel=1e-12)
    assert entropy == pytest.approx(direct_entropy, rel=1e-12)
    # -Phi(lambda) is the entropy of Dir(lambda): check against scipy
    from scipy.stats import dirichlet
    assert entropy == pytest.approx(dirichlet(lam).entropy(), rel=1e-10)


def test_dirichlet_expectation_matches_scipy():
    from inference.special import dirichlet_expectation_1d
    rng = np.random.default_rng(1)
    for a in (rng.gamma(0.3, 1.0, 50) + 1e-6, np.logspace(-7, 4, 40), np.array([1e-9, 3.0])):
        out = np.empty_like(a)
        dirichlet_expectation_1d(a, out)
        np.testing.assert_allclose(out, special.digamma(a) - special.digamma(a.sum()), rtol=1e-10, atol=1e-9)


def test_exp_digamma_matches_scipy():
    from inference.special import exp_digamma
    x = np.concatenate([np.logspace(-3, 6, 500), np.random.default_rng(2).gamma(0.5, 2.0, 500) + 1e-3])
    out, scratch = np.empty_like(x), np.empty_like(x)
    exp_digamma(x, scratch, out)
    # relative error of exp(Psi) is the absolute error of Psi (~1e-14 |Psi|, Psi ~ -1/x for small x)
    np.testing.assert_allclose(out, np.exp(special.digamma(x)), rtol=1e-11)


def test_cold_refit_against_the_warm_start(small_problem):
    """warm_max_iter=0: each document keeps the better of its cold fit and its (unfitted) warm start."""
    K, V, lam, alpha, block, _ = small_problem
    eb = np.ascontiguousarray(np.exp(special.digamma(lam) - special.digamma(lam.sum(1, keepdims=True))).T
                              [block.vocab_ids])
    rng = np.random.default_rng(5)
    warm = initial_gamma(block.indptr, block.counts, alpha) * rng.uniform(0.2, 3.0, size=(block.n_docs, K))
    warm[0] = initial_gamma(block.indptr, block.counts, alpha)[0]
    args = (block.indptr, block.local_terms, block.counts)
    _, _, at_start, passes, _ = estep_documents(*args, warm.copy(), eb, alpha, 1e-6, 0, True)
    assert np.all(passes == 0)
    cold = initial_gamma(block.indptr, block.counts, alpha)
    _, _, cold_fit, _, _ = estep_documents(*args, cold, eb, alpha, 1e-6, 500, True)
    gamma = warm.copy()
    _, astats, refit, _, kept = estep_documents(*args, gamma, eb, alpha, 1e-6, 500, True, True, 1, 0, 0)
    doc_alpha = lambda g: np.array([np.dot(alpha - 1.0, special.digamma(r) - special.digamma(r.sum())) for r in g])
    best = np.maximum(at_start + doc_alpha(warm), cold_fit + doc_alpha(cold))
    np.testing.assert_allclose(refit + doc_alpha(gamma), best, rtol=1e-9)
    assert kept[1] == block.n_docs and 0 < kept[0] <= block.n_docs


def test_estep_schedule():
    from drivers.engines.variational.settings import EMSettings, IterationRecord
    from inference.mapper import EStepSettings

    s = EMSettings(num_topics=5, estep=EStepSettings(tol=1e-3, max_iter=100))
    first = s.estep_at(1, [])
    assert first.max_iter == s.first_max_iter and first.tol == pytest.approx(1e-2)
    record = lambda change, kept: IterationRecord(1, -1.0, 0.1, 3.0, kept, 1.0, None, change)
    second = s.estep_at(2, [record(None, 0.0)])
    assert second.restart and second.warm_max_iter == 0 and second.restart_stride == 1
    assert second.max_iter == 100 and second.tol == pytest.approx(1e-2)
    later = s.estep_at(7, [record(-4e-3, 0.2)])
    assert later.tol == pytest.approx(4e-3) and later.restart and later.restart_stride == 4
    assert later.restart_offset == 3 and later.warm_max_iter == -1
    assert s.estep_at(30, [record(1e-6, 0.001)]).tol == pytest.approx(1e-3)
    assert not s.estep_at(30, [record(1e-6, 0.001)]).restart      # refits stopped paying
    fixed = EMSettings(num_topics=5, schedule="fixed", restarts="never").estep_at(1, [])
    assert fixed.tol == 1e-3 and fixed.max_iter == 100 and not fixed.restart
