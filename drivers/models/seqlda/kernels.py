"""SeqLDA's numba kernels: the sweep over a partition's documents (the CMGS or the exact sampler of the
segment chain), a token's topic weights, the start and the terms of alpha's Newton step (thesis ch. 6)."""
from __future__ import annotations

import numba
import numpy as np

from drivers.models.seqlda.token_steps import (seqlda_add, seqlda_chain_factor, seqlda_chain_products,
                                               seqlda_chain_rows, seqlda_cmgs_kept_weights, seqlda_cmgs_open,
                                               seqlda_cmgs_weights, seqlda_crp_weights, seqlda_exact_open,
                                               seqlda_remove, seqlda_resample_table, seqlda_topic_factor)
from inference.gibbs.common import customers, inverse_topic_totals, max_doc_segments, random_segment_topics
from inference.special import digamma, trigamma


@numba.njit(cache=True, error_model="numpy")
def seqlda_topic_weights(p, Q, j, n_d, t_d, N, T, u, alpha, alpha_sum, a, b, ratio, w, nwk, inv, beta,
                         frozen_phi, frozen):
    """Unnormalised topic conditional (6.4)-(6.6) of a token in segment j (all counts without it) into ``p``,
    from scratch (the sweep keeps its pieces; ``Q`` is scratch for the chain products).

    u_k > j (6.6): S^{c+1}_{t} / S^c_{t} with c = n_jk + t_j+1,k; 0 < u_k <= j (6.5):
    prod_{j'=u_k..j} G_j' S^{n+1}_{t} / S^n_{t} at u_k - 1; u_k = 0 (6.4): prod_{j'=0..j} G_j' alpha_k; where
    G_j' = (b + a T_j') / (b + N_j'-1 + T_j') and G_0 = (b + a T_0) / (sum alpha + T_0) (the Dirichlet
    predictive of mu_i0, with t_0k = 0 when u_k = 0). Everything is times Phi_kw. Returns the sum.
    """
    K = p.shape[0]
    umin = j
    for k in range(K):
        umin = min(umin, u[k])
    seqlda_chain_products(Q, j, umin, N, T, alpha_sum, a, b)
    for k in range(K):
        p[k] = seqlda_topic_factor(k, j, u, Q, n_d, t_d, alpha, ratio)
    return seqlda_cmgs_weights(p, p, j, u, seqlda_chain_factor(j, N, T, alpha_sum, a, b), w, nwk, inv, beta,
                               frozen_phi, frozen)


@numba.njit(cache=True)
def seqlda_init(doc_ptr, seg_ptr, words, K, nwk, nk, seed):
    """Uniform random topics; t_ijk = 1 wherever n_ijk + t_i,j+1,k > 0, set from the last segment backwards
    (thesis Algorithm 5, step 2 and the prose of §6.4.2)."""
    np.random.seed(seed)
    N = words.shape[0]
    S = seg_ptr.shape[0] - 1
    z = np.empty(N, dtype=np.int32)
    n = np.zeros((S, K), dtype=np.int32)
    t = np.zeros((S, K), dtype=np.int32)
    for s in range(S):
        random_segment_topics(seg_ptr[s], seg_ptr[s + 1], words, K, z, n[s], nwk, nk)
    for d in range(doc_ptr.shape[0] - 1):
        for s in range(doc_ptr[d + 1] - 1, doc_ptr[d] - 1, -1):
            for k in range(K):
                if customers(n, t, s, k, doc_ptr[d + 1]) > 0:
                    t[s, k] = 1
    return z, n, t


@numba.njit(cache=True, error_model="numpy")
def _max_relative_difference(x, y, dev):
    """max(dev, max_i |x_i - y_i| / |y_i|) over 1-d arrays: the self-check of :func:`seqlda_sweep`."""
    for i in range(x.shape[0]):
        if x[i] != y[i]:
            dev = max(dev, abs(x[i] - y[i]) / max(abs(y[i]), 1e-300))
    return dev


@numba.njit(cache=True, error_model="numpy")
def seqlda_sweep(doc_ptr, seg_ptr, words, z, n, t, bdoc, nwk, nk, alpha, beta, a, logS, ratio, cratio, mcap,
                 frozen_phi, frozen, table_sweep, exact, seed, check=False):
    """One cycle of thesis Algorithm 5 (documents -> segments in layout order -> tokens); state in place.

    ``exact``: the removal drops the token's table with the probability that it sat alone,
    S^{c-1}_{t-1} / S^c_t, and so on up the chain for each dropped table's proxy; the topic and the restaurants
    that open tables are drawn from the seating predictive (:func:`seqlda_crp_weights`,
    :func:`seqlda_open_path`). This leaves the posterior (6.3) exactly invariant, which the thesis' forced-only
    removal does not (tests/models/test_seqlda.py); the (6.7) table step follows in both.

    Kept along a document (thesis §11.2: O(K) per token plus the product over j' = u_k..j): CMGS keeps the
    chain products above j and every topic's factor (:func:`seqlda_cmgs_kept_weights`); a token refreshes the
    factors of its old and new topic and G_j, and everything only when a table above j was added or removed. The
    exact sampler keeps the rows V_l of :func:`seqlda_chain_rows` for l < j and recomputes them from the lowest
    one a table change made stale (``stale``: rows >= stale are out of date). ``check``: recompute the kept
    values from scratch at every token; returns the largest relative difference (0.0: they are exact).
    """
    np.random.seed(seed)
    K = alpha.shape[0]
    vbeta = nwk.shape[0] * beta
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    jmax = max_doc_segments(doc_ptr)
    N = np.zeros(jmax, dtype=np.int64)
    T = np.zeros(jmax, dtype=np.int64)
    S = np.empty(jmax)
    u = np.empty(K, dtype=np.int64)
    p = np.empty(K)
    F = np.empty(K)
    R = np.empty((jmax, K))
    wt = np.empty(mcap + 1)
    p2 = np.empty(K)
    R2 = np.empty((jmax, K))  # scratch of the self-check
    Q2 = np.empty(jmax)
    inv = inverse_topic_totals(nk, vbeta)
    dev = 0.0
    for d in range(doc_ptr.shape[0] - 1):
        s0, s1 = doc_ptr[d], doc_ptr[d + 1]
        J = s1 - s0
        if J == 0:
            continue
        n_d = n[s0:s1]
        t_d = t[s0:s1]
        b = bdoc[d]
        for j in range(J):
            N[j] = 0
            T[j] = 0
            for k in range(K):
                N[j] += n_d[j, k]
                T[j] += t_d[j, k]
        for k in range(K):
            u[k] = J
            for j in range(J):
                if t_d[j, k] == 0:
                    u[k] = j
                    break
        stale = 0
        for j in range(J):
            stale = min(stale, j - 2)  # row j - 2 now counts t_j-1, row j - 1 is new; CMGS: all from scratch
            for i in range(seg_ptr[s0 + j], seg_ptr[s0 + j + 1]):
                w = words[i]
                k = z[i]
                low = seqlda_remove(j, k, w, n_d, t_d, N, T, u, nwk, nk, inv, vbeta, frozen, logS, exact)
                if low < j:
                    stale = min(stale, low - 1)
                if exact:
                    if stale < j:
                        seqlda_chain_rows(R, max(stale, 0), j, n_d, t_d, N, T, alpha, alpha_sum, a, b)
                    if check:
                        seqlda_chain_rows(R2, 0, j, n_d, t_d, N, T, alpha, alpha_sum, a, b)
                        dev = _max_relative_difference(R[:j].ravel(), R2[:j].ravel(), dev)
                    total = seqlda_crp_weights(p, R, j, n_d, t_d, N, T, alpha, alpha_sum, a, b, w, nwk, inv, beta,
                                               frozen_phi, frozen)
                    k, low = seqlda_exact_open(p, total, R, j, n_d, t_d, N, T, u, alpha, alpha_sum, a, b, mcap)
                else:
                    total = seqlda_cmgs_kept_weights(p, F, S, stale < j, j, k, n_d, t_d, N, T, u, alpha, alpha_sum,
                                                     a, b, ratio, w, nwk, inv, beta, frozen_phi, frozen)
                    if check:
                        seqlda_topic_weights(p2, Q2, j, n_d, t_d, N, T, u, alpha, alpha_sum, a, b, ratio, w,
                                             nwk, inv, beta, frozen_phi, frozen)
                        dev = _max_relative_difference(p, p2, dev)
                    k, low = seqlda_cmgs_open(p, total, j, t_d, T, u)
                stale = j
                if low < j:
                    stale = low - 1
                seqlda_add(i, j, k, w, z, n_d, t_d, N, T, u, S, F, wt, nwk, nk, inv, vbeta, frozen, alpha, alpha_sum,
                           a, b, ratio, cratio, mcap, exact)
        if table_sweep:  # pass-through restaurants: no own customer of k, >= 2 tables from the next segment
            for j in range(J - 1):
                for k in range(K):
                    if n_d[j, k] == 0 and t_d[j + 1, k] >= 2:
                        seqlda_resample_table(wt, j, k, n_d, t_d, N, T, alpha, alpha_sum, a, b, ratio, cratio, mcap)
    return dev


@numba.njit(cache=True)
def alpha_newton_terms(doc_ptr, t, alpha):
    """(2K + 3,) terms of the gradient and Hessian of sum_i log Beta_K(alpha + t_i1) / Beta_K(alpha) (§6.5) at
    ``alpha``: [sum_i Psi(alpha_k + t_i1k) - Psi(alpha_k)] (K), sum_i Psi(A + T_i1) - Psi(A),
    [sum_i Psi'(alpha_k + t_i1k) - Psi'(alpha_k)] (K), sum_i Psi'(A) - Psi'(A + T_i1), documents counted."""
    K = alpha.shape[0]
    out = np.zeros(2 * K + 3)
    A = 0.0
    for k in range(K):
        A += alpha[k]
    for d in range(doc_ptr.shape[0] - 1):
        if doc_ptr[d + 1] == doc_ptr[d]:
            continue
        s = doc_ptr[d]
        T1 = 0
        for k in range(K):
            c = t[s, k]
            if c > 0:
                out[k] += digamma(alpha[k] + c) - digamma(alpha[k])
                out[K + 1 + k] += trigamma(alpha[k] + c) - trigamma(alpha[k])
                T1 += c
        if T1 > 0:
            out[K] += digamma(A + T1) - digamma(A)
            out[2 * K + 1] += trigamma(A) - trigamma(A + T1)
            out[2 * K + 2] += 1.0
    return out
