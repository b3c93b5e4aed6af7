"""Segmented Topic Model (STM, thesis ch. 5; Du, Buntine & Jin 2010) on the Gibbs engine.

Generative process (thesis §5.3): mu_i ~ Dir(alpha); for every segment j of
document i, nu_ij ~ PDP(a, b, mu_i); z ~ nu_ij; w ~ phi_z. With nu and mu
integrated out, the joint in table counts (multiplicities) is (5.2)::

    p(z, w, t | alpha, gamma, a, b) = prod_i Beta_K(alpha + sum_j t_ij) / Beta_K(alpha)
        prod_j (b|a)_{T_ij} / (b)_{N_ij} prod_k S^{n_ijk}_{t_ijk, a}  x  prod_k Beta_W(gamma + M_k) / Beta_W(gamma)

with 1 <= t_ijk <= n_ijk when n_ijk > 0 and t_ijk = 0 otherwise.

Sampler (``hyper["sampler"]``): ``"cmgs"``, the collapsed multiplicity Gibbs
sampler of thesis Algorithm 4 (default). Per token: remove it (t_ijk' drops by
one exactly when the constraint forces it), draw the topic from (5.3), add it
(opening a table when n_ijk was 0), then redraw t_ijk of the new topic from
(5.4) over its support [1, min(n_ijk, M_max)] (M_max = ``hyper["m_max"]``, the
thesis' column cap of the Stirling table).

The forced-only removal makes the CMGS cycle not exactly invariant for (5.2):
on an enumerable 7-token posterior its stationary z-marginal is off by total
variation 0.10 (a = 0) and 0.21 (a = 0.4), and on synthetic corpora it finds
too few tables, so b from (5.8) comes out 8-25% low (tests/models/test_stm.py).
``"exact"`` replaces the removal by the seating posterior (the token sat alone
with probability S^{n-1}_{t-1} / S^n_t) and the topic draw by the seating
predictive (join: n - a t; open: (b + a T) x Dirichlet predictive), then the
same (5.4) step; it matches the enumerated posterior and costs the same.

Hyperparameters: ``alpha`` (K values) and ``a`` fixed; ``b`` fixed, or, when
a = 0 and ``sample_b``, drawn once per cycle by the auxiliary-variable scheme
(5.8): every non-empty segment draws q_ij ~ Beta(b, N_ij) in its partition
(``partition_stats`` returns sum T_ij and sum log 1/q_ij), the driver draws
b ~ Gamma(shape = sum T_ij, rate = sum log 1/q_ij) (improper prior 1/b).

Per-partition state: ``z`` (N,), ``n`` and ``t`` (S x K int32, customers and
tables of every segment restaurant); the document sums sum_j t_ijk are rebuilt
from ``t`` at the start of each document.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference import left_to_right
from inference.dirichlet import gamma_concentration_step
from inference.gibbs.common import (BIG, TABLE_SAMPLER, check_cmgs_hyper, check_pdp, dirichlet_mean, draw_scan,
                                    frozen_args, inverse_topic_totals, longest_span, move_word, parse_hyper,
                                    positive_vector, random_segment_topics, rescale_weights, token_kernel,
                                    word_factor)
from inference.gibbs.model import PDP_CONCENTRATION, PDP_DISCOUNT, GibbsModel, SegmentedBlock
from inference.gibbs.pdp import stirling_table
from inference.gibbs.franchise_left_to_right import franchise_scores, star

DEFAULT_ALPHA = 0.1
DEFAULT_BETA = 0.01
DEFAULT_B = 10.0
DEFAULT_M_MAX = 1000


# ----------------------------------------------------------------------------------------------------------------
# kernels (the per-token helpers are ``@token_kernel``: no reference counting, LLVM-inlined, see common.py)

@token_kernel
def stm_topic_weights(p, n_s, t_s, tsum, tsum_tot, T_s, alpha, alpha_sum, a, b, ratio, w, nwk, inv, beta,
                      frozen_phi, frozen):
    """Unnormalised topic conditional (5.3) for one token (all counts without it) into ``p``; returns the sum.

    n_ijk = 0: (alpha_k + sum_j t_ijk) / sum_k(alpha_k + sum_j t_ijk) (b + a T_ij) Phi_kw (a new table draws k
    from mu_i); n_ijk > 0: S^{n+1}_{t,a} / S^n_{t,a} Phi_kw. The common 1 / (b + N_ij) is dropped.
    """
    K = p.shape[0]
    new_table = (b + a * T_s) / (alpha_sum + tsum_tot)
    total = 0.0
    for k in range(K):
        nn = n_s[k]
        if nn == 0:
            g = (alpha[k] + tsum[k]) * new_table
        else:
            g = ratio[nn, t_s[k]]
        g *= word_factor(nwk, inv, w, k, beta, frozen_phi, frozen)
        p[k] = g
        total += g
    return total


@token_kernel
def stm_crp_weights(p, pnew, n_s, t_s, tsum, tsum_tot, T_s, alpha, alpha_sum, a, b, w, nwk, inv, beta,
                    frozen_phi, frozen):
    """Seating-arrangement predictive (thesis (2.10)) for the exact sampler: per topic, join an existing table
    (n_ijk - a t_ijk) Phi_kw into ``p[k] - pnew[k]``, open a new one (b + a T_ij) mu-pred_k Phi_kw into ``pnew[k]``;
    ``p[k]`` is their sum. Returns sum_k p[k]."""
    K = p.shape[0]
    new_table = (b + a * T_s) / (alpha_sum + tsum_tot)
    total = 0.0
    for k in range(K):
        f = word_factor(nwk, inv, w, k, beta, frozen_phi, frozen)
        g_new = (alpha[k] + tsum[k]) * new_table * f
        pnew[k] = g_new
        p[k] = (n_s[k] - a * t_s[k]) * f + g_new
        total += p[k]
    return total


@token_kernel
def stm_table_weights(wt, nn, alpha_k, alpha_sum, rest_k, rest_tot, T_rest, a, b, cratio, vmax):
    """Unnormalised p(t_ijk = v) by (5.4) for v = 1..vmax into ``wt[v]``; returns their sum.

    Gamma(alpha_k + R_k + v) / Gamma(alpha_0 + R + v) (b|a)_{T' + v} S^n_{v,a}, where R_k, R, T' are
    sum_j t_ijk, sum_jk t_ijk and T_ij without the current t_ijk (pitfall 6), as a running product of the
    neighbour ratios (alpha_k + R_k + v-1) (b + a (T' + v-1)) / (alpha_0 + R + v-1) S^n_v / S^n_{v-1}
    (no logs; rescaled before overflow; the conditional is unimodal in v, so underflow only drops a tail).
    """
    x = 1.0
    wt[1] = 1.0
    total = 1.0
    for v in range(2, vmax + 1):
        x *= (alpha_k + rest_k + v - 1) * (b + a * (T_rest + v - 1)) / (alpha_sum + rest_tot + v - 1) * cratio[nn, v]
        if x > BIG:
            total, x = rescale_weights(wt, 1, v, total, x)
        wt[v] = x
        total += x
    return total


@token_kernel
def stm_remove(k, w, n_s, t_s, tsum, nwk, nk, inv, vbeta, frozen, logS, exact):
    """Take a token of topic k out of its segment: n_ijk and M_kw drop by one, t_ijk too when the constraint
    t <= n forces it (5.3, cases 1-2) or, ``exact``, with the probability that the token sat alone,
    S^{n-1}_{t-1} / S^n_t (n = n_ijk with the token). Returns the number of tables removed (0 or 1)."""
    n_s[k] -= 1
    move_word(nwk, nk, inv, w, k, -1, vbeta, frozen)
    tk = t_s[k]
    if tk > n_s[k]:
        drop = True
    elif exact and tk > 1:
        drop = np.random.random() < math.exp(logS[n_s[k], tk - 1] - logS[n_s[k] + 1, tk])
    else:
        drop = False
    if not drop:
        return 0
    t_s[k] -= 1
    tsum[k] -= 1
    return 1


@token_kernel
def stm_draw_topic(p, pnew, n_s, t_s, tsum, tsum_tot, T_s, alpha, alpha_sum, a, b, ratio, w, nwk, inv, beta,
                   frozen_phi, frozen, mcap, exact):
    """The topic of a removed token from (5.3) (case 3, a new table, when t_ijk = 0) or, ``exact``, topic and
    "open a table" jointly from the seating predictive (:func:`stm_crp_weights`). Returns (k, opened)."""
    if exact:
        total = stm_crp_weights(p, pnew, n_s, t_s, tsum, tsum_tot, T_s, alpha, alpha_sum, a, b, w, nwk, inv, beta,
                                frozen_phi, frozen)
        k = draw_scan(p, 0, p.shape[0] - 1, total)
        return k, n_s[k] == 0 or (t_s[k] < mcap and np.random.random() * p[k] < pnew[k])
    total = stm_topic_weights(p, n_s, t_s, tsum, tsum_tot, T_s, alpha, alpha_sum, a, b, ratio, w, nwk, inv, beta,
                              frozen_phi, frozen)
    k = draw_scan(p, 0, p.shape[0] - 1, total)
    return k, t_s[k] == 0


@token_kernel
def stm_add(i, k, w, opened, z, n_s, t_s, tsum, tsum_tot, T_s, nwk, nk, inv, vbeta, frozen, wt, alpha, alpha_sum,
            a, b, cratio, mcap):
    """Put token i back with topic k (and a new table when ``opened``, whose proxy customer goes to mu_i), then
    redraw t_ijk by (5.4) on [1, min(n_ijk, M_max)]. Returns the change of the segment's table count T_ij."""
    z[i] = k
    n_s[k] += 1
    move_word(nwk, nk, inv, w, k, 1, vbeta, frozen)
    dt = 0
    if opened:
        t_s[k] += 1
        tsum[k] += 1
        dt = 1
    nn = n_s[k]
    if nn >= 2:
        tk = t_s[k]
        vmax = min(nn, mcap)
        total = stm_table_weights(wt, nn, alpha[k], alpha_sum, tsum[k] - tk, tsum_tot + dt - tk, T_s + dt - tk, a,
                                  b, cratio, vmax)
        v = draw_scan(wt, 1, vmax, total) if vmax > 1 else 1
        tsum[k] += v - tk
        t_s[k] = v
        dt += v - tk
    return dt


@numba.njit(cache=True)
def stm_init(doc_ptr, seg_ptr, words, K, mcap, nwk, nk, seed):
    """Uniform random topics; t_ijk uniform on [1, min(n_ijk, M_max)] (thesis Algorithm 4, steps 1-2)."""
    np.random.seed(seed)
    N = words.shape[0]
    S = seg_ptr.shape[0] - 1
    z = np.empty(N, dtype=np.int32)
    n = np.zeros((S, K), dtype=np.int32)
    t = np.zeros((S, K), dtype=np.int32)
    for s in range(S):
        random_segment_topics(seg_ptr[s], seg_ptr[s + 1], words, K, z, n[s], nwk, nk)
        for k in range(K):
            if n[s, k] > 0:
                t[s, k] = 1 + np.random.randint(0, min(n[s, k], mcap))
    return z, n, t


@numba.njit(cache=True, error_model="numpy")
def stm_sweep(doc_ptr, seg_ptr, words, z, n, t, nwk, nk, alpha, beta, a, b, logS, ratio, cratio, mcap,
              frozen_phi, frozen, exact, seed):
    """One CMGS cycle (thesis Algorithm 4) over documents -> segments -> tokens; state and counts in place. Per
    token: :func:`stm_remove`, :func:`stm_draw_topic`, :func:`stm_add`.

    ``exact``: the removal drops a table with the probability that the token sat alone, S^{n-1}_{t-1} / S^n_t,
    and the topic is drawn jointly with "join / open a table" from the seating predictive
    (:func:`stm_crp_weights`), which makes the cycle leave the posterior (5.2) exactly invariant; the
    table-count step (5.4) follows as in the thesis.
    """
    np.random.seed(seed)
    K = alpha.shape[0]
    vbeta = nwk.shape[0] * beta
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    tsum = np.zeros(K, dtype=np.int64)
    p = np.empty(K)
    pnew = np.empty(K)
    wt = np.empty(mcap + 1)
    inv = inverse_topic_totals(nk, vbeta)
    for d in range(doc_ptr.shape[0] - 1):
        s0, s1 = doc_ptr[d], doc_ptr[d + 1]
        tsum[:] = 0
        for s in range(s0, s1):
            for k in range(K):
                tsum[k] += t[s, k]
        tsum_tot = 0
        for k in range(K):
            tsum_tot += tsum[k]
        for s in range(s0, s1):
            n_s = n[s]
            t_s = t[s]
            T_s = 0
            for k in range(K):
                T_s += t_s[k]
            for i in range(seg_ptr[s], seg_ptr[s + 1]):
                w = words[i]
                dropped = stm_remove(z[i], w, n_s, t_s, tsum, nwk, nk, inv, vbeta, frozen, logS, exact)
                T_s -= dropped
                tsum_tot -= dropped
                k, opened = stm_draw_topic(p, pnew, n_s, t_s, tsum, tsum_tot, T_s, alpha, alpha_sum, a, b, ratio, w,
                                           nwk, inv, beta, frozen_phi, frozen, mcap, exact)
                dt = stm_add(i, k, w, opened, z, n_s, t_s, tsum, tsum_tot, T_s, nwk, nk, inv, vbeta, frozen, wt,
                             alpha, alpha_sum, a, b, cratio, mcap)
                T_s += dt
                tsum_tot += dt


@numba.njit(cache=True)
def stm_b_auxiliary(seg_ptr, t, b, seed):
    """(sum_ij T_ij, sum_ij log 1/q_ij) with q_ij ~ Beta(b, N_ij) for every non-empty segment (5.8, pitfall 11)."""
    np.random.seed(seed)
    S, K = t.shape
    sum_t = 0.0
    sum_log = 0.0
    for s in range(S):
        Ns = seg_ptr[s + 1] - seg_ptr[s]
        if Ns == 0:
            continue
        for k in range(K):
            sum_t += t[s, k]
        q = np.random.beta(b, Ns)
        sum_log -= math.log(max(q, 1e-300))
    return sum_t, sum_log


def stirling_arrays(a: float, max_customers: int, m_max: int):
    """(log S, ratio, cratio) arrays covering N <= max_customers + 1 and M <= min(max_customers, m_max)."""
    cols = max(1, min(int(max_customers), int(m_max)))
    table = stirling_table(a).ensure(int(max_customers) + 1, cols)
    return table.log, table.ratio, table.cratio


PROTOCOL_OF_SEATING = "particles: every particle seats the document's tokens in its segments' PDPs (exact)"


class STM(GibbsModel):
    """Segmented Topic Model with the collapsed multiplicity Gibbs sampler (thesis ch. 5)."""

    #: a revised document leaves the chain by these axes (inference.gibbs.continuation)
    state_axes = {"z": "token", "n": "segment", "t": "segment"}

    name = "stm"
    options = GibbsModel.options + (PDP_DISCOUNT, PDP_CONCENTRATION, TABLE_SAMPLER)

    def initial_hyper(self, **overrides) -> dict:
        """Defaults alpha = 0.1, beta = 0.01, a = 0, b = 10 (sampled by (5.8) when a = 0), m_max = 1000.

        Overrides (``None`` = default): ``alpha`` (scalar or K values), ``beta``, ``a``, ``b``, ``sample_b``,
        ``b_burn_in`` (cycles before b is sampled), ``m_max`` (cap on a table count), ``sampler``: ``"cmgs"``
        (thesis Algorithm 4, default) or ``"exact"`` (stochastic table removal + seating predictive, see
        :func:`stm_sweep`; the thesis' deterministic removal is not exactly invariant, see tests/models/test_stm.py).
        """
        K = self.num_topics
        hyper = parse_hyper(overrides, [
            ("alpha", DEFAULT_ALPHA, lambda v: positive_vector(v, K, "alpha")),
            ("beta", DEFAULT_BETA, float),
            ("a", 0.0, float),
            ("b", DEFAULT_B, float),
            ("sample_b", True, bool),
            ("b_burn_in", 0, int),
            ("m_max", DEFAULT_M_MAX, int),
            ("sampler", "cmgs", str),
        ])
        check_cmgs_hyper(hyper)
        return hyper

    @staticmethod
    def _exact(hyper) -> bool:
        return hyper.get("sampler", "cmgs") == "exact"

    def samples_b(self, hyper) -> bool:
        return bool(hyper.get("sample_b", True)) and float(hyper["a"]) == 0.0

    @staticmethod
    def _mcap(block: SegmentedBlock, hyper) -> int:
        return max(1, min(longest_span(block.seg_ptr), int(hyper.get("m_max", DEFAULT_M_MAX))))

    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        z, n, t = stm_init(block.doc_ptr, block.seg_ptr, block.words, self.num_topics, self._mcap(block, hyper),
                           nwk, nk, seed)
        return {"z": z, "n": n, "t": t}

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        a, b = float(hyper["a"]), float(hyper["b"])
        check_pdp(a, b)
        mcap = self._mcap(block, hyper)
        logS, ratio, cratio = stirling_arrays(a, longest_span(block.seg_ptr), mcap)
        phi, frozen = frozen_args(frozen_phi)
        stm_sweep(block.doc_ptr, block.seg_ptr, block.words, state["z"], state["n"], state["t"], nwk, nk,
                  np.asarray(hyper["alpha"], dtype=np.float64), float(hyper["beta"]), a, b, logS, ratio, cratio, mcap,
                  phi, frozen, self._exact(hyper), seed)

    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        """[sum_ij T_ij, sum_ij log 1/q_ij] with q_ij ~ Beta(b, N_ij) drawn here (5.8); zeros when b is fixed."""
        if not self.samples_b(hyper):
            return np.zeros(2)
        return np.array(stm_b_auxiliary(block.seg_ptr, state["t"], float(hyper["b"]), seed))

    def update_hyper(self, hyper, stats, num_documents, seed) -> dict:
        """b ~ Gamma(shape = sum T, rate = sum log 1/q) (5.8; numpy's scale is 1/rate, pitfall 10)."""
        return gamma_concentration_step(hyper, stats, self.samples_b(hyper), seed)

    def left_to_right(self, block, hyper, phi_vk, settings) -> left_to_right.LeftToRightScores:
        """Exact in the model: every particle carries the document's seating in its segments' PDPs, each
        hanging from the document's mu (:mod:`inference.gibbs.franchise_left_to_right`)."""
        return franchise_scores(block, hyper["alpha"], float(hyper["a"]), float(hyper["b"]), phi_vk, settings, star,
                                PROTOCOL_OF_SEATING)

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        """(D, K) mu-hat_ik = (alpha_k + sum_j t_ijk) / sum_k (alpha_k + sum_j t_ijk) (5.5)."""
        tsum = np.zeros((block.n_docs, self.num_topics))
        np.add.at(tsum, block.doc_of_segment(), state["t"])
        return dirichlet_mean(tsum, hyper["alpha"])

    def segment_topic(self, block, state, hyper) -> np.ndarray:
        """(S, K) nu-hat_ijk = (n_ijk - a t_ijk) / (b + N_ij) + mu_ik (a T_ij + b) / (b + N_ij) (5.6)."""
        a, b = float(hyper["a"]), float(hyper["b"])
        mu = self.doc_topic(block, state, hyper)[block.doc_of_segment()]
        n = state["n"].astype(np.float64)
        t = state["t"].astype(np.float64)
        N = n.sum(axis=1, keepdims=True)
        T = t.sum(axis=1, keepdims=True)
        return (n - a * t) / (b + N) + mu * (a * T + b) / (b + N)
