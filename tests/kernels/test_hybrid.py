"""The hybrid variational-MCMC local step (inference/hybrid.py) against eq (4.9) and a slow reference."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from inference.blocks import DocBlock
from inference.hybrid import document_seeds, draw_dense, hybrid_documents, sampling_weights, word_log_joint
from inference.mapper import doc_topic_counts, hybrid_block


def random_block(seed=0, docs=12, vocab=15):
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(docs):
        ids = np.sort(rng.choice(vocab, size=rng.integers(1, 6), replace=False))
        rows.append((f"doc{d:03d}", ids, rng.integers(1, 4, size=ids.size).astype(float)))
    return DocBlock.from_documents(rows)


def test_the_reference_draw_follows_eq_4_9():
    """Over a fine grid of uniforms the dense reference's topic frequencies are (alpha_k + n_k) e_kw / sum
    (eq 4.9); the sparse sampler draws what it draws (next test)."""
    rng = np.random.default_rng(1)
    K = 9
    alpha = rng.gamma(1.0, 0.2, K)
    e_row = rng.gamma(1.0, 0.1, K)
    n = np.zeros(K, dtype=np.int64)
    n[[1, 4, 7]] = [3, 1, 5]
    xs = (np.arange(200_000) + 0.5) / 200_000                 # a fine grid of uniforms: exact frequencies
    dense = np.array([draw_dense(x, n, e_row[None, :], 0, alpha, K) for x in xs])
    weights = (alpha + n) * e_row
    np.testing.assert_allclose(np.bincount(dense, minlength=K) / xs.size, weights / weights.sum(), atol=2e-5)


@pytest.mark.parametrize("K,float32", [(6, False), (40, False), (40, True)])
def test_sparse_and_dense_samplers_give_the_same_samples(K, float32):
    """Also with the float32, row-scaled weights the mapper gives the kernel (inference.hybrid.sampling_weights)."""
    block = random_block(docs=60)
    rng = np.random.default_rng(2)
    eb = np.exp(np.log(rng.dirichlet(np.full(15, 0.3), size=K)).T)    # U x K for the block's words
    eb_local = np.ascontiguousarray(eb[block.vocab_ids])
    if float32:
        eb_local = sampling_weights(eb_local * 1e-45)     # rows this small underflow float32 unless scaled
        assert eb_local.dtype == np.float32 and np.all(eb_local.max(axis=1) == 1.0)
    alpha = np.full(K, 0.3)
    seeds = document_seeds(block.doc_ids, 7, 3)
    tokens = int(block.counts.sum())
    results = []
    for dense in (True, False):
        z = np.zeros(tokens, dtype=np.int32)
        out = hybrid_documents(block.indptr, block.local_terms, block.counts, z, eb_local, alpha, 3, 4, seeds,
                               True, dense)
        results.append((z.copy(),) + out)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


MASK = (1 << 64) - 1


def splitmix_uniforms(state: int):
    """A document's stream in plain Python integers: SplitMix64 (Steele, Lea & Flood 2014), top 53 bits."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        x = state
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
        x ^= x >> 31
        yield (x >> 11) / 9007199254740992.0


def slow_reference(block, z, eb_local, alpha, burn_in, samples, seeds, average_digammas=False):
    """Eq (4.9) token by token in plain Python, with the documents' SplitMix64 streams; the alpha statistics
    from Psi of the kept samples' mean counts, or (``average_digammas``) the samples' mean of Psi."""
    K = alpha.size
    U = eb_local.shape[0]
    sstats, alpha_stats, log_joint, word_part = np.zeros((U, K)), np.zeros(K), [], 0.0
    t0 = 0
    for d in range(block.n_docs):
        uniforms = splitmix_uniforms(int(seeds[d]))
        entries = range(block.indptr[d], block.indptr[d + 1])
        words = [block.local_terms[j] for j in entries for _ in range(int(block.counts[j]))]
        zd = list(z[t0:t0 + len(words)])
        nbar, lj_mean, psi_mean = np.zeros(K), 0.0, np.zeros(K)
        for sweep in range(burn_in + samples):
            for i, u in enumerate(words):
                n = np.bincount(np.delete(np.array(zd), i), minlength=K)
                x = next(uniforms)
                # the canonical order: the document's topics, then the smoothing bucket
                doc = [(k, n[k] * eb_local[u, k]) for k in range(K) if n[k] > 0]
                smooth = [(k, alpha[k] * eb_local[u, k]) for k in range(K)]
                total = sum(w for _, w in doc) + sum(w for _, w in smooth)
                x *= total
                for k, w in doc + smooth:
                    if x < w:
                        break
                    x -= w
                zd[i] = k
            if sweep >= burn_in:
                n = np.bincount(zd, minlength=K)
                nbar += n / samples
                psi_mean += digamma(alpha + n) / samples
                for i, u in enumerate(words):
                    sstats[u, zd[i]] += 1 / samples
                lj = (gammaln(alpha.sum()) - gammaln(alpha.sum() + len(words))
                      + np.sum(gammaln(alpha + n) - gammaln(alpha)))
                lj_mean += lj / samples
                word_part += sum(math.log(eb_local[u, zd[i]]) for i, u in enumerate(words)) / samples
        alpha_stats += (psi_mean if average_digammas else digamma(alpha + nbar)) - digamma(alpha.sum() + len(words))
        log_joint.append(lj_mean)
        z[t0:t0 + len(words)] = zd
        t0 += len(words)
    return sstats, alpha_stats, np.array(log_joint), word_part


@pytest.mark.parametrize("average_digammas", [False, True], ids=["psi-of-mean", "mean-of-psi"])
def test_statistics_equal_a_slow_reference(average_digammas):
    block = random_block(3, docs=8, vocab=10)
    K = 4
    rng = np.random.default_rng(4)
    eb_local = np.ascontiguousarray(np.exp(np.log(rng.dirichlet(np.full(10, 0.5), size=K)).T)[block.vocab_ids])
    alpha = np.array([0.2, 0.5, 0.1, 0.3])
    seeds = document_seeds(block.doc_ids, 1, 2)
    z0 = rng.integers(0, K, size=int(block.counts.sum())).astype(np.int32)
    z_fast, z_slow = z0.copy(), z0.copy()
    sstats, alpha_stats, log_joint, _ = hybrid_documents(block.indptr, block.local_terms, block.counts, z_fast,
                                                         eb_local, alpha, 2, 3, seeds, False, False,
                                                         average_digammas)
    ref = slow_reference(block, z_slow, eb_local, alpha, 2, 3, seeds, average_digammas)
    np.testing.assert_array_equal(z_fast, z_slow)
    np.testing.assert_allclose(sstats, ref[0], atol=1e-12)
    np.testing.assert_allclose(alpha_stats, ref[1], rtol=1e-10)
    np.testing.assert_allclose(log_joint, ref[2], rtol=1e-10)
    assert word_log_joint(sstats, eb_local) == pytest.approx(ref[3], rel=1e-10)


def test_seeds_follow_the_document_not_its_partition():
    """The same documents in other blocks (another partitioning) are sampled alike."""
    block = random_block(5, docs=10)
    K = 5
    eb = np.exp(np.log(np.random.default_rng(6).dirichlet(np.full(15, 0.3), size=K)).T)
    run = lambda b: hybrid_block(0, b, None, np.log(eb[b.vocab_ids]), np.full(K, 0.2), 11, 4, 2, 2)   # noqa: E731
    whole_z = run(block)[0]
    counts = doc_topic_counts(block, whole_z, K)
    halves = [DocBlock.from_documents([(block.doc_ids[d], block.vocab_ids[block.local_terms[block.indptr[d]:
                                        block.indptr[d + 1]]], block.counts[block.indptr[d]:block.indptr[d + 1]])
                                       for d in part]) for part in (range(0, 10, 2), range(1, 10, 2))]
    for half, docs in zip(halves, (range(0, 10, 2), range(1, 10, 2))):
        np.testing.assert_array_equal(doc_topic_counts(half, run(half)[0], K), counts[list(docs)])
    with pytest.raises(ValueError, match="state has"):
        hybrid_block(0, block, np.zeros(3, dtype=np.int32), np.log(eb[block.vocab_ids]), np.full(K, 0.2), 11, 4, 2, 2)


def test_reducer_gives_mappers_the_mean_topics_on_request():
    """--hybrid-weights mean: the row a mapper gets is lambda normalised per language (E_q[beta]), the ELBO terms
    and lambda are the same as with exp(E_q[log beta])."""
    from inference.layout import VocabLayout
    from inference.reducer import reduce_topic

    layout = VocabLayout.from_sizes(["a", "b"], [3, 2])
    eta = np.full(5, 0.1)
    contributions = [(0, np.array([0, 3]), np.array([2.0, 1.0])), (1, np.array([1, 4]), np.array([0.5, 4.0]))]
    digamma_row = reduce_topic(0, contributions, eta, layout)
    mean_row = reduce_topic(0, contributions, eta, layout, mean_weights=True)
    np.testing.assert_array_equal(digamma_row.lambda_row, mean_row.lambda_row)
    assert digamma_row.prior_term == mean_row.prior_term and digamma_row.entropy_term == mean_row.entropy_term
    mean = np.exp(mean_row.log_weight_row)
    np.testing.assert_allclose(mean, layout.normalise(mean_row.lambda_row))
    np.testing.assert_allclose([mean[:3].sum(), mean[3:].sum()], 1.0)
