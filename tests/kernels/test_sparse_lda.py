"""SparseLDA (drivers/models/lda_gibbs/sparse.py) against eq (4.3): the bucket draw over a fine grid of uniforms
equals the exact conditional at tokens in the middle of a sweep, the incrementally kept buckets, coefficients and
topic lists equal their recomputation at every token, the counts stay those of z, the chain's stationary
distribution is the exact posterior (also K = 1, 2, and with other partitions' counts in the table), and
``LdaGibbs``' ``sampler`` switch (dense below the auto threshold, exactly the old kernel)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import gammaln

from drivers.models.lda_gibbs.model import SPARSE_MIN_TOPICS, LdaGibbs, lda_init, lda_sweep
from drivers.models.lda_gibbs.sparse import _check_token, lda_sweep_sparse, sparse_sweep_core, word_topic_lists
from inference.gibbs.local import global_counts, run_local
from inference.gibbs.model import SegmentedBlock

GRID = 200_000
UNIFORMS = (np.arange(GRID) + 0.5) / GRID          # a fine grid of uniforms: frequencies are exact to ~1/GRID


def random_problem(seed, K, V=30, docs=12, max_len=15, external=True, spare_topics=2):
    """A block, an initial z, and ``nwk``/``nk`` = the block's counts plus another partition's ("external").

    The last ``spare_topics`` topics have no count anywhere (n_k = 0), word V-1 has one token in the block and
    no other count (after removing that token, the word has no counts at all)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, docs)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words = rng.integers(0, V - 1, ptr[-1]).astype(np.int32)
    words[ptr[docs // 2]] = V - 1                                   # a word with a single token
    used = max(1, K - spare_topics)
    z = rng.integers(0, used, ptr[-1]).astype(np.int32)
    ext = np.zeros((V, K), np.int32)
    if external:
        ext[:V - 1, :used] = rng.integers(0, 4, (V - 1, used)) * (rng.random((V - 1, used)) < 0.3)
    nwk = ext.copy()
    np.add.at(nwk, (words, z), 1)
    alpha = rng.gamma(2.0, 0.2, K) + 0.01
    return ptr, words, z, nwk, nwk.sum(0).astype(np.int64), ext, alpha


def exact_conditional(ptr, words, z, ext, alpha, beta, i):
    """Eq (4.3) for token i with every other token at ``z`` (the counts without token i)."""
    K, V = alpha.shape[0], ext.shape[0]
    nwk = ext.astype(np.float64).copy()
    np.add.at(nwk, (words, z), 1)
    nk = nwk.sum(0)
    w, k0 = words[i], z[i]
    d = np.searchsorted(ptr, i, side="right") - 1
    m = np.bincount(z[ptr[d]:ptr[d + 1]], minlength=K).astype(np.float64)
    m[k0] -= 1
    nwk[w, k0] -= 1
    nk[k0] -= 1
    inv = 1.0 / (nk + V * beta)
    buckets = np.array([(alpha * beta * inv).sum(), (m * beta * inv).sum(), ((alpha + m) * nwk[w] * inv).sum()])
    p = (m + alpha) * (nwk[w] + beta) * inv
    return p / p.sum(), buckets, nwk[w] > 0


def probe(ptr, words, z0, nwk, nk, alpha, beta, seed, i):
    """Sweep with a probe at token i; returns (masses, topics of the grid, errors, z after the sweep)."""
    z = z0.copy()
    masses, topics, errors = sparse_sweep_core(ptr, words, z, nwk.copy(), nk.copy(), alpha, beta, seed, i,
                                               UNIFORMS, True)
    return masses, topics, errors, z


@pytest.mark.parametrize("K,seed", [(2, 0), (5, 1), (9, 2), (40, 3)])
def test_bucket_draw_follows_eq_4_3_in_the_middle_of_a_sweep(K, seed):
    """At several tokens (the first, one of a word with no other count, the last, random ones) the grid of
    uniforms lands on each topic with frequency (m_dk + alpha_k)(n_kw + beta)/(n_k + V beta), normalised, with
    the counts of the sweep so far (tokens before i at their new topics, after i at their old ones)."""
    beta = 0.05
    ptr, words, z0, nwk, nk, ext, alpha = random_problem(seed, K)
    V = nwk.shape[0]
    single = int(np.flatnonzero(words == V - 1)[0])
    rng = np.random.default_rng(seed + 10)
    for i in [0, single, words.shape[0] - 1, *rng.integers(1, words.shape[0] - 1, 3)]:
        masses, topics, errors, z1 = probe(ptr, words, z0, nwk, nk, alpha, beta, 7 + i, i)
        z_mid = np.concatenate([z1[:i], z0[i:]])              # the state when token i is drawn
        p, buckets, word_topics = exact_conditional(ptr, words, z_mid, ext, alpha, beta, i)
        np.testing.assert_allclose(masses, buckets, rtol=1e-12, atol=1e-300)
        freq = np.bincount(topics, minlength=K) / GRID
        np.testing.assert_allclose(freq, p, rtol=0, atol=1e-4, err_msg=f"token {i}")
        assert np.abs(freq - p).max() < 5 / GRID          # in fact exact up to the grid
        # the q bucket comes first: the grid's first q / (s + r + q) lands on the word's topics only
        head = topics[:max(0, int(GRID * masses[2] / masses.sum()) - 1)]
        assert np.all(word_topics[head]), i
        assert errors[:3].max() < 1e-12 and not np.any(errors[3:]), errors
        if i == single:
            assert masses[2] == 0.0 and not word_topics.any()   # a word with no other count: no q bucket
    # the comparison has power: the same formula with token 0's own counts left in is off by far more than atol
    w_counts = ext.astype(float).copy()
    np.add.at(w_counts, (words, z0), 1)
    naive = (np.bincount(z0[:ptr[1]], minlength=K) + alpha) * (w_counts[words[0]] + beta) \
        / (w_counts.sum(0) + V * beta)                          # counts *with* token 0: not eq (4.3)
    p0, _, _ = exact_conditional(ptr, words, z0, ext, alpha, beta, 0)
    assert np.abs(naive / naive.sum() - p0).max() > 50 * 1e-4


def test_topics_without_counts_and_the_s_bucket():
    """Many empty topics (K = 300, 40 tokens): most of the mass is in the s bucket, whose draws follow
    alpha_k beta / (n_k + V beta) over every topic."""
    beta, K = 0.5, 300
    ptr, words, z0, nwk, nk, ext, alpha = random_problem(4, K, V=8, docs=4, max_len=10, spare_topics=296)
    for i in (0, 11):
        masses, topics, errors, z1 = probe(ptr, words, z0, nwk, nk, alpha, beta, 3, i)
        p, buckets, _ = exact_conditional(ptr, words, np.concatenate([z1[:i], z0[i:]]), ext, alpha, beta, i)
        np.testing.assert_allclose(masses, buckets, rtol=1e-12)
        assert masses[0] > 0.5 * masses.sum()
        np.testing.assert_allclose(np.bincount(topics, minlength=K) / GRID, p, rtol=0, atol=1e-4)
        assert np.abs(np.bincount(topics, minlength=K) / GRID - p).max() < 5 / GRID
        assert errors[:3].max() < 1e-12 and not np.any(errors[3:]), errors


@pytest.mark.parametrize("K", [1, 2, 7, 60])
def test_kept_buckets_lists_and_counts_equal_their_recomputation(K):
    """Debug mode: at every token of 30 sweeps the kept s, r, q equal a from-scratch sum (to rounding), inv and
    the coefficients (alpha_k + m_dk) / (n_k + V beta) are exact, the word's and the document's topic lists are
    exactly the topics with counts (the token's old topic aside); after each sweep nwk/nk are the counts of z."""
    beta = 0.02
    ptr, words, z, nwk, nk, ext, alpha = random_problem(5, K, V=40, docs=30, max_len=25)
    worst = np.zeros(6)
    for sweep in range(30):
        _, _, errors = sparse_sweep_core(ptr, words, z, nwk, nk, alpha, beta, sweep, -1, np.zeros(0), True)
        worst = np.maximum(worst, errors)
        expected = ext.copy()
        np.add.at(expected, (words, z), 1)
        np.testing.assert_array_equal(nwk, expected)
        np.testing.assert_array_equal(nk, expected.sum(0))
        assert z.min() >= 0 and z.max() < K
    assert worst[0] < 1e-12 and worst[1] < 1e-12 and worst[2] < 1e-12, worst[:3]
    assert worst[3] == 0.0 and worst[4] == 0 and worst[5] == 0, worst[3:]
    if K == 1:
        assert np.all(z == 0)


def test_the_debug_check_can_fail():
    """The per-token check reports a word list missing a topic with counts, a listed topic without counts, a
    document list with a duplicate, and kept buckets or coefficients that differ from the recomputation."""
    K, V, beta = 4, 3, 0.1
    alpha = np.array([0.1, 0.2, 0.3, 0.4])
    nwk = np.array([[2, 0, 1, 0], [0, 0, 0, 3], [1, 1, 1, 1]], np.int32)
    nk = nwk.sum(0).astype(np.int64)
    ndk = np.array([1, 0, 2, 0], np.int64)
    inv = 1.0 / (nk + V * beta)
    coef = (alpha + ndk) * inv
    s, r, q = (alpha * beta * inv).sum(), (ndk * beta * inv).sum(), ((alpha + ndk) * nwk[0] * inv).sum()
    wtopics, dtopics = np.array([0, 2, 3], np.int32), np.array([2, 0, 0], np.int32)

    def check(ws=0, nw=2, nd=2, old=1, kept=(s, r, q), inv=inv, coef=coef, wt=wtopics, dt=dtopics):
        errors = np.zeros(6)
        _check_token(errors, np.zeros(K, np.int64), 0, old, *kept, nwk, nk, ndk, inv, coef, alpha, beta, V * beta,
                     wt, ws, nw, dt, nd)
        return errors

    assert not np.any(check())                                   # consistent: nothing reported
    assert not np.any(check(nw=3, old=3))                        # the old topic may stay listed with no count
    assert check(nw=1)[4] > 0                                    # topic 2 has counts but is not listed
    assert check(nw=3)[4] > 0                                    # topic 3 listed without counts
    assert check(nd=3)[5] > 0                                    # topic 0 twice in the document's list
    assert check(nd=1)[5] > 0                                    # topic 0 missing from the document's list
    assert check(kept=(s * (1 + 1e-9), r, q))[0] > 1e-10
    assert check(kept=(s, r * 1.01, q))[1] > 1e-3 and check(kept=(s, r, q + 1e-6))[2] > 1e-8
    assert check(coef=coef * (1 + 1e-15) + 1e-17)[3] > 0 and check(inv=inv * (1 + 1e-12))[3] > 0


def exact_posterior(block, K, V, alpha, beta, ext):
    """p(z | w) over every assignment with another partition's counts ``ext`` fixed in the table."""
    N = block.n_tokens
    configs = np.array(list(itertools.product(range(K), repeat=N)), dtype=np.int32)
    ptr = block.token_ptr()
    logp = np.empty(len(configs))
    for c, z in enumerate(configs):
        total = 0.0
        for d in range(block.n_docs):
            m = np.bincount(z[ptr[d]:ptr[d + 1]], minlength=K)
            total += gammaln(alpha + m).sum() - gammaln(alpha.sum() + m.sum())
        nwk = ext.copy()
        np.add.at(nwk, (block.words, z), 1)
        total += gammaln(nwk + beta).sum() - gammaln(nwk.sum(0) + V * beta).sum()
        logp[c] = total
    p = np.exp(logp - logp.max())
    return configs, p / p.sum()


@pytest.mark.parametrize("K,external", [(1, False), (2, False), (2, True), (3, True)],
                         ids=["K1", "K2", "K2-other-partition", "K3-other-partition"])
def test_chain_converges_to_the_exact_posterior(K, external):
    """Many sparse sweeps on a 5-token corpus visit every assignment with its exact posterior probability (with
    another partition's counts in the table, as the engine hands them over, kept fixed)."""
    block = SegmentedBlock.from_segments([("a", [[0, 1], [1]]), ("b", [[2, 0]])])
    V, beta = 3, 0.4
    alpha = np.array([0.3, 0.9, 0.5])[:K]
    ext = np.zeros((V, K), np.int32)
    if external:
        ext[0, 0], ext[2, K - 1], ext[1, 1] = 2, 1, 3
    configs, exact = exact_posterior(block, K, V, alpha, beta, ext)
    model = LdaGibbs(K, V)
    hyper = model.initial_hyper(alpha=alpha, beta=beta, sampler="sparse")
    assert model.uses_sparse_kernel(hyper)
    nwk, nk = ext.copy(), ext.sum(0).astype(np.int64)
    state = model.init_state(block, hyper, nwk, nk, 0)
    index = {tuple(c): i for i, c in enumerate(configs)}
    visits = np.zeros(len(configs))
    for s in range(60000):
        model.sweep(block, state, hyper, nwk, nk, s + 1)
        visits[index[tuple(state["z"])]] += 1
    tv = 0.5 * np.abs(visits / visits.sum() - exact).sum()
    assert tv < 0.02, tv
    if K > 1:   # the test has power: the dense chain's target without the other partition's counts differs
        _, without = exact_posterior(block, K, V, alpha, beta, np.zeros_like(ext))
        assert not external or 0.5 * np.abs(without - exact).sum() > 0.1
    expected = ext.copy()
    np.add.at(expected, (block.words, state["z"]), 1)
    np.testing.assert_array_equal(nwk, expected)
    np.testing.assert_array_equal(nk, expected.sum(0))


def test_sparse_and_dense_chains_agree_on_a_larger_problem():
    """On a problem too large to enumerate (K = 6, 28 tokens) both kernels' chains give the same probability that
    two tokens share a topic (invariant to label switching), up to Monte Carlo error."""
    K, beta, V = 6, 0.1, 12
    ptr, words, _, _, _, _, alpha = random_problem(8, K, V=V, docs=6, max_len=6, external=False, spare_topics=0)
    out = {}
    for name in ("dense", "sparse"):
        nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
        z = lda_init(words, K, nwk, nk, 1)
        same = np.zeros((words.shape[0], words.shape[0]))
        for s in range(20000):
            if name == "dense":
                lda_sweep(ptr, words, z, nwk, nk, alpha, beta, np.zeros((1, 1)), False, s)
            else:
                lda_sweep_sparse(ptr, words, z, nwk, nk, alpha, beta, s)
            if s >= 1000:
                same += z[:, None] == z[None, :]
        out[name] = same / 19000
    assert np.abs(out["dense"] - out["sparse"]).max() < 0.05


def test_word_topic_lists():
    """Built from nwk: exactly the topics with counts, with room for the word's tokens in the block (at most K)."""
    ptr, words, z, nwk, nk, ext, alpha = random_problem(6, 5)
    start, length, topics = word_topic_lists(words, nwk)
    tokens = np.bincount(words, minlength=nwk.shape[0])
    for w in range(nwk.shape[0]):
        listed = topics[start[w]:start[w] + length[w]]
        room = start[w + 1] - start[w]
        if tokens[w] == 0:
            assert room == 0
        else:
            np.testing.assert_array_equal(np.sort(listed), np.flatnonzero(nwk[w] > 0))
            assert room == min(5, length[w] + tokens[w])


def test_the_sampler_switch():
    """``sampler``: a model option passed to initial_hyper; auto is sparse from SPARSE_MIN_TOPICS topics on;
    below it the model's sweep is the dense kernel bit for bit; a bad name is refused; frozen topics (held-out
    sweeps) always take the dense kernel and leave the counts alone."""
    assert "sampler" in [o.name for o in LdaGibbs.options] and "sampler" not in LdaGibbs.construction_options
    small, large = LdaGibbs(SPARSE_MIN_TOPICS - 1, 30), LdaGibbs(SPARSE_MIN_TOPICS, 30)
    assert "sampler" not in small.initial_hyper()                     # not given: unchanged hyperparameters
    assert not small.uses_sparse_kernel(small.initial_hyper()) and large.uses_sparse_kernel(large.initial_hyper())
    assert small.uses_sparse_kernel(small.initial_hyper(sampler="sparse"))
    assert not large.uses_sparse_kernel(large.initial_hyper(sampler="dense"))
    assert large.initial_hyper(sampler="auto")["sampler"] == "auto"
    with pytest.raises(ValueError, match="sampler"):
        small.initial_hyper(sampler="fast")
    # the command line: `train --model lda-gibbs --sampler sparse` (with --segment-level) reaches the hyperparameters
    import argparse
    from drivers import registry
    from drivers.families.gibbs.models import hyper_overrides, initial_hyper, make_model
    from jobs import train
    from inference.errors import UsageError
    for flag, expected in (("sparse", "sparse"), ("fast", UsageError)):
        argv = ["--model", "lda-gibbs", "--corpus", "c", "--output", "o", "--topics", "5", "--segment-level",
                "--sampler", flag]
        parser = argparse.ArgumentParser()
        train.add_arguments(parser, ["train", *argv])
        if expected is UsageError:      # the option's declared constraint refuses it when the request is made
            with pytest.raises(UsageError, match="--sampler must be one of dense, sparse, auto, got 'fast'"):
                train.request_from(parser.parse_args(argv))
            continue
        request = train.request_from(parser.parse_args(argv))
        model = make_model(registry.model("lda-gibbs"), 5, 30, segment_level=True)
        assert initial_hyper(model, hyper_overrides(request, model))["sampler"] == expected
        assert model.segment_level and model.uses_sparse_kernel({"sampler": expected})
    ptr, words, z0, nwk, nk, _, alpha = random_problem(9, SPARSE_MIN_TOPICS - 1, V=30)
    block = SegmentedBlock(np.array([str(d) for d in range(ptr.shape[0] - 1)], dtype=object),
                           np.arange(ptr.shape[0], dtype=np.int64), ptr, words)
    hyper = small.initial_hyper(alpha=alpha, beta=0.05)
    results = []
    for kernel in ("model", "lda_sweep", "sparse"):
        z, a, b = z0.copy(), nwk.copy(), nk.copy()
        if kernel == "model":
            small.sweep(block, {"z": z}, hyper, a, b, 11)
        elif kernel == "lda_sweep":
            lda_sweep(ptr, words, z, a, b, alpha, 0.05, np.zeros((1, 1)), False, 11)
        else:
            small.sweep(block, {"z": z}, dict(hyper, sampler="sparse"), a, b, 11)
        results.append((z, a, b))
    for x, y in zip(results[0], results[1]):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(results[0][0], results[2][0])           # the other kernel: other draws
    phi = np.full((30, SPARSE_MIN_TOPICS - 1), 1.0 / 30)
    z, a = z0.copy(), nwk.copy()
    small.sweep(block, {"z": z}, dict(hyper, sampler="sparse"), a, nk.copy(), 3, frozen_phi=phi)
    np.testing.assert_array_equal(a, nwk)


@pytest.mark.parametrize("segment_level", [False, True], ids=["LDA_D", "LDA_P"])
def test_run_local_with_the_sparse_kernel(segment_level):
    """The engine's loop (run_local) with sampler=sparse, at document and at segment level: counts of z,
    proportions that sum to one, alpha learnt."""
    rng = np.random.default_rng(3)
    docs = [(f"d{d}", [rng.integers(0, 25, rng.integers(2, 9)).tolist() for _ in range(3)]) for d in range(15)]
    model = LdaGibbs(8, 25, segment_level=segment_level)
    block, state, hyper, nwk, nk = run_local(model, SegmentedBlock.from_segments(docs), 6, seed=1,
                                             hyper=model.initial_hyper(sampler="sparse"))
    assert hyper["sampler"] == "sparse" and hyper["cycles"] == 6
    expected = global_counts(block, state["z"], 8, 25)
    np.testing.assert_array_equal(nwk, expected[0])
    assert block.n_docs == (45 if segment_level else 15)
    np.testing.assert_allclose(model.doc_topic(block, state, hyper).sum(1), 1.0)
