"""alpha^theta of the infinite-vocabulary model learned online (inference.infvoc.doc_prior): the statistics against
E[log theta] of the documents' Dirichlet posteriors over the kept samples, the minibatch's optimum against scipy,
and recovery of a known asymmetric alpha from documents drawn from LDA with known topics."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln

from inference.infvoc.doc_prior import ALPHA_FLOOR, minibatch_optimum, online_step, posterior_statistics
from inference.infvoc.local_step import StringBlock, sample_block
from inference.infvoc.tos import TopicSet, step_size

WORDS = 8


def known_topic(k: int) -> TopicSet:
    """Topic k: uniform over its own WORDS words w{k}_0.. (sticks of mass 10^5: E[beta] = 1/WORDS each, nothing
    left for other words but G_0's crumbs)."""
    share = np.array([1.0 / (WORDS - t) for t in range(WORDS)])
    share[-1] = 1.0 - 1e-6
    mass = 1e5
    terms = np.array([f"w{k}x{t}" for t in range(WORDS)], dtype=object)
    return TopicSet(terms, mass * share, mass * (1.0 - share), np.zeros(WORDS), np.zeros(WORDS, dtype=np.int64))


def lda_documents(rng, alpha, n_docs: int, length: int, prefix: str) -> list:
    docs = []
    for d in range(n_docs):
        theta = rng.dirichlet(alpha)
        z = rng.choice(len(alpha), size=length, p=theta)
        docs.append((f"{prefix}{d:05d}", [f"w{k}x{rng.integers(WORDS)}" for k in z]))
    return docs


def test_statistics_are_the_kept_samples_mean_of_the_posterior_e_log_theta():
    """The kernel's sum_d mean_s [Psi(alpha_k + n^(s)_dk)] - Psi(A + N_d) equals the direct form over the kept
    samples' counts (sample s is the last sample of a run with s more burn-in sweeps: the same draws)."""
    rng = np.random.default_rng(1)
    K = 3
    vocabulary = np.array([f"w{k}x{t}" for k in range(K) for t in range(WORDS)], dtype=object)
    sets = [TopicSet(rng.permutation(vocabulary), rng.gamma(2.0, 2.0, K * WORDS) + 0.5,
                     rng.gamma(2.0, 10.0, K * WORDS) + 0.5, np.zeros(K * WORDS), np.zeros(K * WORDS, dtype=np.int64))
            for _ in range(K)]          # every word in every topic: the samples move
    alpha = np.array([0.7, 0.2, 0.05])
    block = StringBlock.from_documents(lda_documents(rng, [1.0, 0.5, 0.5], 30, 25, "d"))
    log_g0 = np.full(block.terms.shape[0], -8.0)
    burn_in, samples = 3, 4
    phi, last, stats = sample_block(block, sets, log_g0, alpha, 7, 2, burn_in, samples, alpha_statistics=True)
    phi_plain, last_plain = sample_block(block, sets, log_g0, alpha, 7, 2, burn_in, samples)
    np.testing.assert_array_equal(phi, phi_plain)          # the statistics change no sample
    np.testing.assert_array_equal(last, last_plain)
    kept = np.stack([sample_block(block, sets, log_g0, alpha, 7, 2, burn_in + s, 1)[1] for s in range(samples)])
    np.testing.assert_array_equal(kept[-1], last)
    assert len({kept[s].tobytes() for s in range(samples)}) > 1     # the samples differ: a mean, not one of them
    assert stats.shape == (block.n_docs, K)                 # one row per document, summed by the driver
    np.testing.assert_allclose(stats.sum(axis=0), posterior_statistics(kept, alpha), rtol=1e-10)
    assert not np.allclose(stats.sum(axis=0), posterior_statistics(kept[-1:], alpha), rtol=1e-6)
    half = block.n_docs // 2                                # a partition of the block: its rows to the bit
    for part in (slice(0, half), slice(half, block.n_docs)):
        documents = [(str(d), []) for d in block.doc_ids[part]]
        for d, (lo, hi) in zip(range(len(documents)), zip(block.indptr[part], block.indptr[1:][part])):
            documents[d] = (documents[d][0], [str(block.terms[t]) for t, n in
                                              zip(block.local_terms[lo:hi], block.counts[lo:hi]) for _ in range(int(n))])
        sub = StringBlock.from_documents(documents)
        _, _, rows = sample_block(sub, sets, np.full(sub.terms.shape[0], -8.0), alpha, 7, 2, burn_in, samples,
                                  alpha_statistics=True)
        np.testing.assert_array_equal(rows, stats[part])


def test_posterior_statistics_are_e_log_theta_of_the_dirichlet_posterior():
    """One document, one sample: E[log theta_k] under Dir(alpha + n) by Monte Carlo."""
    alpha, counts = np.array([0.3, 1.2, 0.05]), np.array([4.0, 0.0, 9.0])
    draws = np.random.default_rng(0).dirichlet(alpha + counts, 400_000)
    np.testing.assert_allclose(posterior_statistics(counts[None, None, :], alpha), np.log(draws).mean(axis=0),
                               atol=0.01)


def test_the_minibatch_optimum_maximises_its_objective_as_scipy_finds_it():
    rng = np.random.default_rng(3)
    K, n, D = 5, 40, 3000.0
    true = np.array([1.5, 0.4, 0.2, 0.1, 0.05])
    thetas = rng.dirichlet(true, n)
    stats = np.log(thetas).sum(axis=0)
    scale = D / n

    def negative(a):
        return -(D * (gammaln(a.sum()) - gammaln(a).sum()) + np.dot(a - 1.0, stats * scale))

    best = minimize(negative, np.full(K, 0.3), method="L-BFGS-B", bounds=[(1e-4, 50)] * K,
                    options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10_000})
    got = minibatch_optimum(np.full(K, 1.0 / K), stats, n, D)
    np.testing.assert_allclose(got, best.x, rtol=1e-3)
    assert negative(got) <= best.fun + 1e-6 * abs(best.fun)
    eps = 0.3
    np.testing.assert_allclose(online_step(np.full(K, 0.2), stats, n, D, eps), 0.7 * 0.2 + 0.3 * got, rtol=1e-12)
    assert np.all(online_step(np.full(K, 0.2), stats - 1e6 * (np.arange(K) == 4), n, D, 1.0) >= ALPHA_FLOOR)
    np.testing.assert_array_equal(online_step(np.full(K, 0.2), stats, 0, D, eps), np.full(K, 0.2))


@pytest.mark.parametrize("fit", [True, False])
def test_online_steps_recover_a_known_asymmetric_alpha(fit):
    """Documents from LDA with alpha [2, 0.5, 0.1, 0.1] and known topics; 40 minibatches of 50 through the local
    step and the online step from alpha = 1/K: the learned alpha has the truth's order and scale (a symmetric
    alpha, the fixed prior, fails the same checks)."""
    rng = np.random.default_rng(0)
    true = np.array([2.0, 0.5, 0.1, 0.1])
    K = true.shape[0]
    sets = [known_topic(k) for k in range(K)]
    alpha = np.full(K, 1.0 / K)
    seen = 0
    for i in range(1, 41):
        documents = lda_documents(rng, true, 50, 40, f"m{i:03d}d")
        block = StringBlock.from_documents(documents)
        seen += block.n_docs
        _, _, stats = sample_block(block, sets, np.full(block.terms.shape[0], -12.0), alpha, 0, i, 5, 10,
                                   alpha_statistics=True)
        if fit:
            alpha = online_step(alpha, stats.sum(axis=0), block.n_docs, seen, step_size(i, 1.0, 0.6))
    ok = (alpha[0] > alpha[1] > max(alpha[2], alpha[3])
          and np.all(np.abs(np.log(alpha / true)) < np.log([1.3, 1.3, 1.6, 1.6])))
    assert ok == fit, alpha


def test_documents_without_words_give_the_prior_e_log_theta():
    """A block whose documents have no token: each contributes Psi(alpha_k) - Psi(A), as the kernel's empty
    documents do."""
    block = StringBlock.from_documents([("a", []), ("b", [])])
    alpha = np.array([0.3, 0.1])
    _, _, stats = sample_block(block, [known_topic(0), known_topic(1)], np.zeros(0), alpha, 0, 1, 2, 2,
                               alpha_statistics=True)
    np.testing.assert_allclose(stats, np.tile(posterior_statistics(np.zeros((1, 1, 2)), alpha), (2, 1)), rtol=1e-12)
