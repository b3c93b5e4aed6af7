"""SeqLDA (thesis ch. 6): conditionals against the joint (6.3), chain invariants, b and alpha updates, recovery,
determinism, segment order."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.special import gammaln, polygamma

from gibbs_helpers import exact_log_stirling, stationary_tvs
from drivers.models.seqlda.model import SeqLDA
from drivers.models.seqlda.kernels import alpha_newton_terms, seqlda_sweep, seqlda_topic_weights
from drivers.models.seqlda.token_steps import seqlda_table_support, seqlda_table_weights
from inference.dirichlet import alpha_newton_step
from inference.distances import matched_hellinger
from inference.gibbs.counts import topic_word_estimate
from inference.gibbs.local import global_counts, run_local
from inference.gibbs.model import SegmentedBlock
from inference.gibbs.pdp import log_stirling_table, stirling_table
from inference.gibbs.synthetic import seqlda_corpus
from inference.special import trigamma


def seg_counts(block, z, K):
    n = np.zeros((block.n_segments, K), dtype=np.int64)
    np.add.at(n, (np.repeat(np.arange(block.n_segments), np.diff(block.seg_ptr)), z), 1)
    return n


def check_chain(block, n, t):
    """Constraints of §6.4.2 for every (i, j, k): t = 0 iff n + t_next = 0, t <= n + t_next, zeros a suffix."""
    for d in range(block.n_docs):
        s0, s1 = block.doc_ptr[d], block.doc_ptr[d + 1]
        for s in range(s0, s1):
            nxt = t[s + 1] if s + 1 < s1 else 0
            cust = n[s] + nxt
            assert np.all(t[s] <= cust) and np.all((t[s] > 0) == (cust > 0)), (d, s)
            if s + 1 < s1:
                assert np.all((t[s] > 0) | (t[s + 1] == 0)), (d, s)   # zeros form a suffix


def log_joint_seqlda(block, z, t, alpha, beta, a, b, V, logS):
    """log of (6.3) computed directly (b a scalar for every document)."""
    K = alpha.shape[0]
    n = seg_counts(block, z, K)
    check_chain(block, n, t)
    lp = 0.0
    for d in range(block.n_docs):
        s0, s1 = block.doc_ptr[d], block.doc_ptr[d + 1]
        t1 = t[s0]
        lp += np.sum(gammaln(alpha + t1)) - gammaln(np.sum(alpha + t1))
        for s in range(s0, s1):
            nxt = t[s + 1] if s + 1 < s1 else np.zeros(K, dtype=np.int64)
            T, C = int(t[s].sum()), int(n[s].sum() + nxt.sum())
            lp += sum(math.log(b + i * a) for i in range(T)) - (gammaln(b + C) - gammaln(b))
            lp += sum(logS[n[s, k] + nxt[k], t[s, k]] for k in range(K))
    M = np.zeros((V, K))
    np.add.at(M, (block.words, z), 1)
    lp += np.sum(gammaln(beta + M)) - np.sum(gammaln(V * beta + M.sum(axis=0)))
    return lp


def small_state(a, seed):
    K, V = 3, 8
    block, _ = seqlda_corpus(num_docs=2, num_topics=K, vocab_size=V, seg_range=(3, 4), len_range=(2, 5), alpha=0.8,
                             beta=0.5, a=a, b=1.5, seed=seed)
    model = SeqLDA(K, V)
    hyper = model.initial_hyper(alpha=[0.3, 0.7, 1.1], beta=0.2, a=a, b=1.7, sample_b=False, optimize_alpha=False)
    _, state, hyper, nwk, nk = run_local(model, block, 2, seed=seed, hyper=hyper)
    return block, model, hyper, state, nwk, nk


@pytest.mark.parametrize("a_frac", [Fraction(0), Fraction(1, 5)])
def test_topic_and_table_conditionals_match_joint(a_frac):
    """(6.4)-(6.6) and (6.7) from the kernel helpers equal normalised ratios of the joint (6.3) (exact Stirling)."""
    a = float(a_frac)
    exact = exact_log_stirling(24, a_frac)
    table = stirling_table(a).ensure(30, 24)
    cases, checked_t = set(), 0
    for seed in range(4):
        block, model, hyper, state, nwk, nk = small_state(a, seed)
        K, V = model.num_topics, model.vocab_size
        alpha = np.asarray(hyper["alpha"])
        beta, b = hyper["beta"], hyper["b"]
        seg_of = np.repeat(np.arange(block.n_segments), np.diff(block.seg_ptr))
        for i in range(block.n_tokens):
            z, n, t = state["z"].copy(), state["n"].copy(), state["t"].copy()
            s, w, k0 = seg_of[i], block.words[i], z[i]
            d = int(np.searchsorted(block.doc_ptr, s, side="right") - 1)
            s0, s1 = block.doc_ptr[d], block.doc_ptr[d + 1]
            j, J = s - s0, s1 - s0
            # remove as §6.4.2: cascade forced removals towards the first segment
            n[s, k0] -= 1
            for jj in range(j, -1, -1):
                cust = n[s0 + jj, k0] + (t[s0 + jj + 1, k0] if jj + 1 < J else 0)
                if t[s0 + jj, k0] <= cust:
                    break
                t[s0 + jj, k0] -= 1
            n_d, t_d = n[s0:s1].astype(np.int32), t[s0:s1].astype(np.int32)
            u = np.array([next((jj for jj in range(J) if t_d[jj, k] == 0), J) for k in range(K)], dtype=np.int64)
            M, Mk = nwk.copy(), nk.copy()
            M[w, k0] -= 1
            Mk[k0] -= 1
            p, Q = np.empty(K), np.empty(J)
            seqlda_topic_weights(p, Q, j, n_d, t_d, n_d.sum(1).astype(np.int64), t_d.sum(1).astype(np.int64), u,
                                 alpha, alpha.sum(), a, b, table.ratio, w, M, 1.0 / (Mk + V * beta), beta,
                                 np.zeros((1, 1)), False)
            direct = np.empty(K)
            for k in range(K):
                cases.add("6.4" if u[k] == 0 else "6.5" if u[k] <= j else "6.6")
                z2, t2 = z.copy(), t.copy()
                z2[i] = k
                for jj in range(u[k], j + 1):      # new tables at u..j
                    t2[s0 + jj, k] = 1
                direct[k] = log_joint_seqlda(block, z2, t2, alpha, beta, a, b, V, exact)
            direct = np.exp(direct - direct.max())
            np.testing.assert_allclose(p / p.sum(), direct / direct.sum(), rtol=1e-9)
        # table-count conditional (6.7) for every restaurant with a choice, on the full state
        n, t = state["n"], state["t"]
        for d in range(block.n_docs):
            s0, s1 = block.doc_ptr[d], block.doc_ptr[d + 1]
            n_d, t_d = n[s0:s1], t[s0:s1].copy()
            for j in range(s1 - s0):
                for k in range(K):
                    lo, hi = seqlda_table_support(j, k, n_d, t_d, 1000)
                    if hi == 0:
                        assert t_d[j, k] == 0
                        continue
                    assert lo <= t_d[j, k] <= hi
                    direct, valid = [], []
                    for v in range(max(lo - 1, 0), hi + 2):  # one value beyond each end must be invalid
                        t2 = t.copy()
                        t2[s0 + j, k] = v
                        try:
                            direct.append(log_joint_seqlda(block, state["z"], t2, alpha, beta, a, b, V, exact))
                            valid.append(v)
                        except AssertionError:
                            pass
                    assert valid == list(range(lo, hi + 1))  # the support is exactly the valid values (pitfall 5)
                    wt = np.empty(hi + 1)
                    total = seqlda_table_weights(wt, j, k, lo, hi, n_d, t_d, n_d.sum(1).astype(np.int64),
                                                 t_d.sum(1).astype(np.int64), alpha, alpha.sum(), a, b, table.ratio,
                                                 table.cratio)
                    got = wt[lo:]
                    assert total == pytest.approx(got.sum(), rel=1e-12)
                    direct = np.exp(np.asarray(direct) - max(direct))
                    np.testing.assert_allclose(got / got.sum(), direct / direct.sum(), rtol=1e-9)
                    checked_t += hi > lo
    assert cases == {"6.4", "6.5", "6.6"} and checked_t > 3


@pytest.mark.parametrize("a,table_sweep,sampler", [(0.0, True, "cmgs"), (0.3, False, "cmgs"), (0.3, True, "cmgs"),
                                                   (0.3, True, "exact"), (0.0, False, "exact")])
def test_chain_invariants_after_sweeps(a, table_sweep, sampler):
    block, _ = seqlda_corpus(num_docs=10, num_topics=5, vocab_size=30, a=a, b=2.0, seed=7)
    model = SeqLDA(5, 30)
    hyper = model.initial_hyper(a=a, b=2.0, m_max=6, table_sweep=table_sweep, sampler=sampler)
    _, state, hyper, nwk, nk = run_local(model, block, 8, seed=4, hyper=hyper)
    z, n, t = state["z"], state["n"], state["t"]
    np.testing.assert_array_equal(n, seg_counts(block, z, 5))
    check_chain(block, n, t)
    assert t.max() <= 6 and np.all(state["b"] > 0)
    assert np.all(t.max(axis=0) >= 1)
    # the kernel's running topic-word counts equal counts rebuilt from z
    nwk2, nk2 = global_counts(block, z, 5, 30)
    st = {k: v.copy() for k, v in state.items()}
    model.sweep(block, st, hyper, nwk2, nk2, seed=5)
    np.testing.assert_array_equal(nwk2, global_counts(block, st["z"], 5, 30)[0])
    np.testing.assert_array_equal(nk2, nwk2.sum(axis=0))
    check_chain(block, st["n"], st["t"])
    mu, nu = model.doc_topic(block, st, hyper), model.segment_topic(block, st, hyper)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0)
    np.testing.assert_allclose(nu.sum(axis=1), 1.0)
    assert np.all(nu > 0)


@pytest.mark.parametrize("a,sampler", [(0.0, "cmgs"), (0.3, "cmgs"), (0.0, "exact"), (0.3, "exact")])
def test_kept_values_equal_recomputation(a, sampler):
    """The sweep's kept chain products and topic factors (CMGS) or V_{j-1} (exact) equal a recomputation from
    scratch at every token of random sweeps (``check=True``), bit for bit; the checked sweep is the same chain."""
    block, _ = seqlda_corpus(num_docs=12, num_topics=5, vocab_size=30, seg_range=(4, 12), len_range=(1, 8), a=a,
                             b=2.0, seed=9)
    model = SeqLDA(5, 30)
    hyper = model.initial_hyper(a=a, b=2.0, m_max=8, sampler=sampler)
    _, state, hyper, nwk, nk = run_local(model, block, 3, seed=2, hyper=hyper)
    tab = stirling_table(a).ensure(200, 8)
    args = (block.doc_ptr, block.seg_ptr, block.words)
    for it in range(6):
        runs = []
        for check in (True, False):
            st, M, Mk = {k: v.copy() for k, v in state.items()}, nwk.copy(), nk.copy()
            dev = seqlda_sweep(*args, st["z"], st["n"], st["t"], st["b"], M, Mk, np.asarray(hyper["alpha"]),
                               hyper["beta"], a, tab.log, tab.ratio, tab.cratio, 8, np.zeros((1, 1)), False, True,
                               sampler == "exact", 50 + it, check)
            runs.append((st, M, dev))
        assert runs[0][2] == 0.0 and runs[1][2] == 0.0
        for key in ("z", "n", "t"):
            np.testing.assert_array_equal(runs[0][0][key], runs[1][0][key])
        state, nwk, nk = runs[1][0], runs[1][1], runs[1][1].sum(axis=0).astype(np.int64)
        check_chain(block, state["n"], state["t"])


def test_point_estimates():
    """(6.8) uses the first segment's tables; (6.9) recursion written out for one document."""
    block = SegmentedBlock.from_segments([("x", [[0, 1], [2], [1, 1, 0]])])
    model = SeqLDA(2, 3)
    hyper = model.initial_hyper(alpha=[0.5, 1.5], a=0.25, b=2.0, sample_b=False)
    z = np.array([0, 1, 1, 1, 1, 0], dtype=np.int32)
    n = np.array([[1, 1], [0, 1], [1, 2]], dtype=np.int32)
    t = np.array([[1, 2], [0, 2], [1, 2]], dtype=np.int32)
    state = {"z": z, "n": n, "t": t, "b": np.array([2.0])}
    mu0 = model.doc_topic(block, state, hyper)[0]
    np.testing.assert_allclose(mu0, np.array([1.5, 3.5]) / 5.0)
    nu = model.segment_topic(block, state, hyper)
    a, b, prev = 0.25, 2.0, mu0
    for s, nxt in enumerate([t[1], t[2], np.zeros(2)]):
        cust = n[s] + nxt
        prev = ((a * t[s].sum() + b) * prev + cust - a * t[s]) / (b + cust.sum())
        np.testing.assert_allclose(nu[s], prev)


@pytest.mark.parametrize("sampler", ["cmgs", "exact"])
def test_determinism(sampler):
    block, _ = seqlda_corpus(num_docs=8, num_topics=4, vocab_size=30, a=0.2, seed=3)
    model = SeqLDA(4, 30)
    hyper = model.initial_hyper(a=0.2, b=3.0, sampler=sampler, alpha_burn_in=0)
    runs = [run_local(model, block, 4, seed=s, hyper=hyper)[1:3] for s in (7, 7, 8)]
    for key in ("z", "n", "t", "b"):
        np.testing.assert_array_equal(runs[0][0][key], runs[1][0][key])
    assert runs[0][1]["alpha"] == runs[1][1]["alpha"]
    assert not np.array_equal(runs[0][0]["z"], runs[2][0]["z"])


def test_trigamma():
    x = np.array([1e-3, 0.05, 0.5, 1.0, 3.7, 6.0, 25.0, 1e4])
    np.testing.assert_allclose([trigamma(v) for v in x], polygamma(1, x), rtol=1e-10)


def test_alpha_newton_reaches_the_optimum():
    """Newton steps from partition terms converge to the maximiser of sum_i log Beta(alpha + t_i1)/Beta(alpha)."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    K, D = 5, 400
    true = np.array([0.2, 0.5, 1.0, 0.3, 2.0])
    t1 = np.array([rng.multinomial(rng.integers(1, 15), rng.dirichlet(true)) for _ in range(D)], dtype=np.int32)
    doc_ptr = np.arange(D + 1, dtype=np.int64)          # one segment per document: t_i1 = t1[i]

    def negf(log_alpha):
        al = np.exp(log_alpha)
        return -np.sum(gammaln(al + t1).sum(1) - gammaln((al + t1).sum(1)) - gammaln(al).sum() + gammaln(al.sum()))

    best = np.exp(minimize(negf, np.zeros(K), method="BFGS", options={"gtol": 1e-10}).x)
    alpha = np.full(K, 0.1)
    # partition terms summed over two "partitions"
    for _ in range(40):
        stats = alpha_newton_terms(doc_ptr[:201], t1, alpha) + alpha_newton_terms(doc_ptr[200:] - 200, t1[200:], alpha)
        alpha = alpha_newton_step(alpha, stats)
    np.testing.assert_allclose(alpha, best, rtol=1e-5)
    # the model's update_hyper path takes the same step
    model = SeqLDA(K, 10)
    hyper = model.initial_hyper(alpha=0.1)
    state = {"t": t1, "z": np.zeros(0, np.int32), "n": t1, "b": np.full(D, 10.0)}
    blk = SegmentedBlock(np.array([str(i) for i in range(D)], dtype=object), doc_ptr, doc_ptr.copy(),
                         np.zeros(D, np.int32))
    for _ in range(40):
        hyper = model.update_hyper(hyper, model.partition_stats(blk, state, hyper, 0), D, 0)
    np.testing.assert_allclose(hyper["alpha"], best, rtol=1e-5)


# Recovery: 60 documents x 5-10 segments x 10-30 words (~9k tokens), K = 4, V = 60, a = 0.2, b = 5, alpha = 0.5.
# Measured (data seeds 2, 5; 400 cycles): matched Hellinger 0.04-0.06, mean b_i 6.3-9.2 (a per-document posterior
# from ~7 restaurants, prior 1/b), mean alpha 0.62-0.87.
@pytest.mark.parametrize("sampler", ["cmgs", "exact"])
def test_recovery(sampler):
    block, truth = seqlda_corpus(num_docs=60, num_topics=4, vocab_size=60, a=0.2, b=5.0, alpha=0.5, beta=0.05,
                                 seed=2)
    model = SeqLDA(4, 60)
    hyper = model.initial_hyper(alpha=0.5, beta=0.05, a=0.2, b=1.0, sampler=sampler)
    trace = []
    _, state, hyper, nwk, nk = run_local(model, block, 300, seed=3, hyper=hyper,
                                         on_iteration=lambda it, s, h: trace.append((h["b_mean"], np.mean(h["alpha"]))))
    dist, _ = matched_hellinger(truth["phi"], topic_word_estimate(nwk, nk, hyper["beta"]))
    assert dist.max() < 0.15, dist
    trace = np.array(trace[150:])
    assert 2.5 < trace[:, 0].mean() < 12.0, trace[:, 0].mean()     # mean of the b_i (true 5)
    assert 0.25 < trace[:, 1].mean() < 1.2, trace[:, 1].mean()     # mean alpha (true 0.5)


def test_true_segment_order_beats_permuted():
    """Held-out documents scored with frozen phi (thesis §9.1): the true segment order gives lower perplexity.

    Measured (b = 0.5, 1, 2; data seeds 11, 12): true/permuted perplexity ratio 0.962-0.989.
    """
    from inference.gibbs.heldout import add_word_probabilities

    block, truth = seqlda_corpus(num_docs=40, num_topics=5, vocab_size=80, seg_range=(8, 12), len_range=(8, 16),
                                 a=0.0, b=2.0, alpha=0.3, beta=0.05, seed=11)
    rng = np.random.default_rng(0)
    phi_vk = truth["phi"].T.copy()
    model = SeqLDA(5, 80)
    hyper = model.initial_hyper(alpha=0.3, a=0.0, b=2.0, sample_b=False, optimize_alpha=False)

    def perplexity(blk):
        nwk, nk = np.zeros((80, 5), np.int32), np.zeros(5, np.int64)
        state = model.init_state(blk, hyper, nwk, nk, 1)
        prob, taken = np.zeros(blk.n_tokens), 0
        for it in range(60):
            model.sweep(blk, state, hyper, nwk, nk, seed=100 + it, frozen_phi=phi_vk)
            if it >= 30:
                add_word_probabilities(blk.seg_ptr, blk.words, model.segment_topic(blk, state, hyper), phi_vk, prob)
                taken += 1
        return float(np.exp(-np.mean(np.log(prob / taken))))

    segs = [[block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]] for s in range(block.doc_ptr[d], block.doc_ptr[d + 1])]
            for d in range(block.n_docs)]
    permuted = SegmentedBlock.from_segments([(block.doc_ids[d], [segs[d][j] for j in rng.permutation(len(segs[d]))])
                                             for d in range(block.n_docs)])
    ordered = SegmentedBlock.from_segments([(block.doc_ids[d], segs[d]) for d in range(block.n_docs)])
    p_true, p_perm = perplexity(ordered), perplexity(permuted)
    assert p_true < 0.985 * p_perm, (p_true, p_perm)   # measured 10.64 vs 11.06


def enumerate_chain_posterior(block, phi, alpha, a, b):
    """Exact p(z, t | w) ∝ (6.3) with frozen phi over every (z, t) of a one-document block satisfying §6.4.2."""
    K, S = phi.shape[1], block.n_segments
    logS = log_stirling_table(a, 16, 16)
    seg_of = np.repeat(np.arange(S), np.diff(block.seg_ptr))
    index, logp = {}, []
    for z in itertools.product(range(K), repeat=block.n_tokens):
        z = np.asarray(z)
        n = np.zeros((S, K), dtype=np.int64)
        np.add.at(n, (seg_of, z), 1)

        def tables(s, t):  # t filled from the last segment backwards
            if s < 0:
                yield t
                return
            nxt = t[s + 1] if s + 1 < S else np.zeros(K, dtype=np.int64)
            for tv in itertools.product(*[range(1, c + 1) if c else range(1) for c in n[s] + nxt]):
                t[s] = tv
                yield from tables(s - 1, t)

        for t in tables(S - 1, np.zeros((S, K), dtype=np.int64)):
            lp = np.sum(gammaln(alpha + t[0])) - gammaln(np.sum(alpha + t[0])) + np.sum(np.log(phi[block.words, z]))
            for s in range(S):
                nxt = t[s + 1] if s + 1 < S else np.zeros(K, dtype=np.int64)
                lp += sum(math.log(b + i * a) for i in range(int(t[s].sum()))) - gammaln(b + n[s].sum() + nxt.sum())
                lp += sum(logS[n[s, k] + nxt[k], t[s, k]] for k in range(K))
            index[tuple(z) + tuple(t.ravel())] = len(logp)
            logp.append(lp)
    p = np.exp(np.asarray(logp) - max(logp))
    return index, p / p.sum()


def chain_stationary_tv(sampler, a, segments, b=1.5, iterations=60000):
    """(z-marginal TV, joint TV) between the sampler's visits (frozen phi) and the enumerated posterior."""
    block = SegmentedBlock.from_segments([("d", [list(s) for s in segments])])
    phi, alpha = np.array([[0.8, 0.3], [0.2, 0.7]]), np.array([0.7, 0.4])
    index, p = enumerate_chain_posterior(block, phi, alpha, a, b)
    model = SeqLDA(2, 2)
    hyper = model.initial_hyper(alpha=alpha.tolist(), a=a, b=b, sample_b=False, optimize_alpha=False, sampler=sampler)
    nwk, nk = np.zeros((2, 2), np.int32), np.zeros(2, np.int64)
    st = model.init_state(block, hyper, nwk, nk, 1)
    tab = stirling_table(a).ensure(30, 20)
    counts = np.zeros(len(p))
    for it in range(iterations):
        seqlda_sweep(block.doc_ptr, block.seg_ptr, block.words, st["z"], st["n"], st["t"], np.array([b]), nwk, nk,
                     alpha, 0.1, a, tab.log, tab.ratio, tab.cratio, 20, phi, True, True, sampler == "exact", it + 5)
        counts[index[tuple(st["z"]) + tuple(st["t"].ravel())]] += 1
    return stationary_tvs(index, p, counts, block.n_tokens)


@pytest.mark.parametrize("a,segments", [(0.0, ([0, 1], [1, 0, 0])), (0.4, ([0, 1], [1, 0], [0, 0])),
                                        (0.3, ([0], [1, 0], [], [0, 1]))])
def test_exact_sampler_is_invariant_for_the_chain_posterior(a, segments):
    """The exact variant visits (z, t) with the enumerated posterior (6.3) (60k cycles: TV at Monte Carlo noise).

    Measured: z-marginal TV 0.008-0.017, joint 0.02-0.04. The thesis CMGS on the same set-ups: z-marginal TV
    0.047 (a = 0), 0.15 (a = 0.4), 0.19 (a = 0.3, four segments with an empty one).
    """
    tv_z, tv_joint = chain_stationary_tv("exact", a, segments, b=1.0 if len(segments) == 4 else 1.5)
    assert tv_z < 0.03 and tv_joint < 0.05, (tv_z, tv_joint)


@pytest.mark.benchmark
def test_cmgs_chain_stationary_bias_documented():
    tv = chain_stationary_tv("cmgs", 0.4, ([0, 1], [1, 0], [0, 0]), iterations=200000)[0]
    print(f"SeqLDA CMGS z-marginal TV {tv:.3f}")
    assert tv > 0.05
