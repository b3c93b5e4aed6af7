"""Sequential LDA (SeqLDA, thesis ch. 6; Du, Buntine & Jin, ICDM 2010) on the Gibbs engine.

Generative process (thesis §6.3): mu_i0 ~ Dir(alpha); for the segments j = 1..J_i
of document i in layout order, mu_ij ~ PDP(a, b_i, mu_i,j-1); z ~ mu_ij;
w ~ phi_z. Restaurant j's tables are proxy customers of restaurant j-1, so its
customers for topic k number n_ijk + t_i,j+1,k. Joint with mu and phi
integrated out (6.3)::

    prod_i Beta_K(alpha + t_i1) / Beta_K(alpha)
        prod_j (b_i|a)_{T_ij} / (b_i)_{N_ij + T_i,j+1} prod_k S^{n_ijk + t_i,j+1,k}_{t_ijk, a}
    x prod_k Beta_W(gamma + M_k) / Beta_W(gamma)

subject to t_ijk = 0 iff n_ijk + t_i,j+1,k = 0 and t_ijk <= n_ijk + t_i,j+1,k;
the zeros of t_i.k form a suffix starting at u_ik.

Sampler (thesis Algorithm 5, collapsed multiplicity Gibbs): per token remove it
with the cascade of forced table removals towards j = 1 (pitfall 3), draw its
topic from the three cases (6.4)-(6.6) by u_ik (proportionalities: the common
1/(b + N_ij + T_i,j+1) is dropped), add it (tables at u_ik..j when u_ik <= j),
then redraw t_ijk of the new topic from (6.7) on its support
[max(1, t_i,j-1,k - n_i,j-1,k), min(n_ijk + t_i,j+1,k, M_max)] (pitfall 5).
``sampler="exact"`` instead removes tables stochastically up the chain (the
token, then each removed table's proxy, sat alone with probability
S^{c-1}_{t-1} / S^c_t) and draws topic and new-table path from the seating
predictive; the thesis' forced-only removal is not exactly invariant for (6.3)
(z-marginal TV 0.05-0.19 on enumerable chains, tests/models/test_seqlda.py).
Optional (``table_sweep``, default on): after each document, the table counts of
pass-through restaurants (n_ijk = 0, t_i,j+1,k >= 2), which no token move ever
redraws, are redrawn from (6.7) too (a valid extra Gibbs step).

Kernel cost per token (thesis §11.2: O(K) plus the product over j' = u_ik..j
plus O(n) for (6.7)): the products of G_j' over the restaurants above j and
each topic's factor of (6.4)-(6.6) are kept along a segment and refreshed for
the token's old and new topic only, in full only when a move adds or removes a
table above j (a few percent of tokens after burn-in); the exact sampler keeps
its chain rows V_l the same way, recomputed from the lowest stale row, and walks
them for the new-table path only as far as the draw needs. The per-token helpers
run without numba's reference counting (see ``common.token_kernel``). On the WEB
chapters split into sentences (K = 20, about 36 segments per document) a CMGS
sweep costs about 2.7x an LDA-Gibbs sweep in CPU time (6.3x before), the exact
sampler about 4x (19x before).

Hyperparameters: ``a`` fixed (global). ``b_i`` per document, state-resident
(``state["b"]``), drawn in ``local_hyper_update`` with the auxiliaries
q_ij ~ Beta(b_i, N_ij + T_i,j+1) (6.11): for a = 0 from
Gamma(sum_j T_ij, rate sum_j log 1/q_ij); for a > 0 from (6.12) with the same
1/b prior by an exact slice sampler on log b. ``alpha`` by Newton-Raphson
(thesis §6.5, Minka's O(K) Hessian inverse) on the driver from the first
segments' table counts t_i1k ((6.8) corrected: t*_{i,0,k} -> t*_{i,1,k}): each
partition returns gradient and Hessian terms at the broadcast alpha, the driver
takes one Newton step per cycle (a fixed-point step when Newton would leave
alpha > 0), limited to a factor 2 per cycle, after ``alpha_burn_in`` cycles.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.dirichlet import alpha_newton_step
from inference.gibbs.common import (BIG, check_cmgs_hyper, check_pdp, customers, dirichlet_mean, draw_scan,
                                    frozen_args, inverse_topic_totals, longest_span, max_doc_segments, move_word,
                                    parse_hyper, positive_vector, random_segment_topics, rescale_weights, token_kernel,
                                    word_factor)
from inference.gibbs.model import PDP_CONCENTRATION, PDP_DISCOUNT, GibbsModel, SegmentedBlock
from inference.gibbs.pdp import sample_chain_concentrations, stirling_table
from inference.special import digamma, trigamma

DEFAULT_ALPHA = 0.1
DEFAULT_BETA = 0.01
DEFAULT_A = 0.0
DEFAULT_B = 10.0
DEFAULT_M_MAX = 1000
DEFAULT_ALPHA_BURN_IN = 20


# ----------------------------------------------------------------------------------------------------------------
# kernels (one document's restaurants are rows s0..s0+J-1 of n and t; j below is the 0-based position)
#
# The per-token helpers are ``@token_kernel`` (common.py: no reference counting, LLVM-inlined); all kernels use
# the "numpy" error model.


@token_kernel
def seqlda_chain_factor(j, N, T, alpha_sum, a, b):
    """G_j = (b + a T_j) / (b + N_j-1 + T_j), G_0 = (b + a T_0) / (sum alpha + T_0): one restaurant's factor of
    the products in (6.4)/(6.5) (G_0 is the Dirichlet predictive of mu_i0)."""
    if j >= 1:
        return (b + a * T[j]) / (b + N[j - 1] + T[j])
    return (b + a * T[0]) / (alpha_sum + T[0])


@token_kernel
def seqlda_chain_products(S, j, umin, N, T, alpha_sum, a, b):
    """S[v] = prod_{j'=v..j-1} G_j' for umin <= v <= j (S[j] = 1): the part of the products of (6.4)/(6.5) above
    segment j, which a token move there changes only when it adds or removes a table above j."""
    q = 1.0
    S[j] = 1.0
    for jj in range(j - 1, umin - 1, -1):
        q *= seqlda_chain_factor(jj, N, T, alpha_sum, a, b)
        S[jj] = q


@token_kernel
def seqlda_topic_factor(k, j, u, S, n_d, t_d, alpha, ratio):
    """Topic k's factor of (6.4)-(6.6) without Phi_kw and, when u_k <= j, without G_j (see
    :func:`seqlda_topic_weights`): u_k > j: S^{c+1}_t / S^c_t at j; 0 < u_k <= j: S[u_k] S^{n+1}_t / S^n_t at
    u_k - 1; u_k = 0: S[0] alpha_k. Changes only with topic k's own counts, u_k, or a table change above j."""
    uk = u[k]
    if uk > j:
        c = n_d[j, k]
        if j + 1 < n_d.shape[0]:
            c += t_d[j + 1, k]
        return ratio[c, t_d[j, k]]
    if uk == 0:
        return S[0] * alpha[k]
    return S[uk] * ratio[n_d[uk - 1, k], t_d[uk - 1, k]]


@token_kernel
def seqlda_cmgs_weights(p, F, j, u, gj, w, nwk, inv, beta, frozen_phi, frozen):
    """p[k] = F[k] Phi_kw (times G_j when u_k <= j) from the topic factors F (:func:`seqlda_topic_factor`) and
    G_j (:func:`seqlda_chain_factor`). Returns the sum."""
    total = 0.0
    for k in range(p.shape[0]):
        g = F[k] * word_factor(nwk, inv, w, k, beta, frozen_phi, frozen)
        if u[k] <= j:
            g *= gj
        p[k] = g
        total += g
    return total


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


@token_kernel
def seqlda_remove_cmgs(j, k, n_d, t_d, N, T):
    """Thesis removal of a token of topic k from restaurant j: then the cascade of forced table removals towards
    the first segment (§6.4.2, pitfall 3). Returns the lowest restaurant that lost a table (j + 1: none)."""
    n_d[j, k] -= 1
    N[j] -= 1
    jj = j
    while jj >= 0:
        c = n_d[jj, k]
        if jj + 1 < n_d.shape[0]:
            c += t_d[jj + 1, k]
        if t_d[jj, k] <= c:
            break
        t_d[jj, k] -= 1
        T[jj] -= 1
        jj -= 1
    return jj + 1


@token_kernel
def seqlda_remove_exact(j, k, n_d, t_d, N, T, logS):
    """Exact removal of a token of topic k from restaurant j: the token (then each removed table's proxy) sat
    alone with probability S^{c-1}_{t-1} / S^c_t, c the customers including the one leaving. Returns the lowest
    restaurant that lost a table (j + 1: none)."""
    jj = j
    while jj >= 0:
        c = n_d[jj, k]
        if jj + 1 < n_d.shape[0]:
            c += t_d[jj + 1, k]
        if jj < j:
            c += 1              # the proxy of the table just removed at jj + 1
        tt = t_d[jj, k]
        if tt < c and (tt == 1 or np.random.random() >= math.exp(logS[c - 1, tt - 1] - logS[c, tt])):
            break
        t_d[jj, k] -= 1
        T[jj] -= 1
        jj -= 1
    n_d[j, k] -= 1
    N[j] -= 1
    return jj + 1


@token_kernel
def seqlda_chain_rows(R, lo, j, n_d, t_d, N, T, alpha, alpha_sum, a, b):
    """Exact sampler: rows lo..j-1 of R from row lo - 1, where R[l, k] = V_lk for l < j - 1 and
    R[j-1, k] = V_{j-1,k} - t_jk. The seating predictive of a customer of dish k arriving at restaurant l is
    V_lk / (b + N_l + T_l+1) with (thesis (2.10) down the chain)
    V_lk = (n_lk + t_l+1,k - a t_lk) + (b + a T_l) V_l-1,k / (b + N_l-1 + T_l) and, at the top,
    V_0k = (n_0k + t_1k - a t_0k) + (b + a T_0) (alpha_k + t_0k) / (sum alpha + T_0). Row l reads the
    restaurants <= l and t_l+1 (not t_j: that changes with every token at j)."""
    for lev in range(lo, j):
        for k in range(R.shape[1]):
            if lev == 0:
                P = (alpha[k] + t_d[0, k]) / (alpha_sum + T[0])
            else:
                P = R[lev - 1, k] / (b + N[lev - 1] + T[lev])
            c = n_d[lev, k]
            if lev + 1 < j:
                c += t_d[lev + 1, k]
            R[lev, k] = (c - a * t_d[lev, k]) + (b + a * T[lev]) * P


@token_kernel
def seqlda_arrival_predictive(R, j, k, t_d, N, T, alpha, alpha_sum, b):
    """Exact sampler: V_{j-1,k} / (b + N_j-1 + T_j) (the top's predictive (alpha_k + t_0k) / (sum alpha + T_0) at
    j = 0) from the rows of :func:`seqlda_chain_rows`: the weight of opening a table at j, per (b + a T_j)."""
    if j == 0:
        return (alpha[k] + t_d[0, k]) / (alpha_sum + T[0])
    return (R[j - 1, k] + t_d[j, k]) / (b + N[j - 1] + T[j])


@token_kernel
def seqlda_crp_weights(p, R, j, n_d, t_d, N, T, alpha, alpha_sum, a, b, w, nwk, inv, beta, frozen_phi, frozen):
    """Exact sampler: p[k] = V_jk Phi_kw, the seating predictive of a customer at restaurant j (join one of its
    tables, or open one and send a proxy up the chain; common 1/(b + N_j + T_j+1) dropped). Returns the sum."""
    J = n_d.shape[0]
    total = 0.0
    for k in range(p.shape[0]):
        c = n_d[j, k]
        if j + 1 < J:
            c += t_d[j + 1, k]
        P = seqlda_arrival_predictive(R, j, k, t_d, N, T, alpha, alpha_sum, b)
        g = ((c - a * t_d[j, k]) + (b + a * T[j]) * P) * word_factor(nwk, inv, w, k, beta, frozen_phi, frozen)
        p[k] = g
        total += g
    return total


@token_kernel
def seqlda_open_path(R, j, k, n_d, t_d, N, T, alpha, alpha_sum, a, b):
    """Exact sampler: after topic k is drawn for a token at j, the lowest restaurant that opens a new table
    (the token, then each proxy, joins an existing table with weight c - a t or opens one with weight
    (b + a T) x predictive above, i.e. joins with probability (c - a t) / V); returns m such that tables open
    at m..j (m = j + 1: none). V from the rows of :func:`seqlda_chain_rows`, walked only as far as needed."""
    J = n_d.shape[0]
    lev = j
    while lev >= 0:
        c = n_d[lev, k]
        if lev + 1 < J:
            c += t_d[lev + 1, k]
        if lev == j:
            V = (c - a * t_d[j, k]) + (b + a * T[j]) * seqlda_arrival_predictive(R, j, k, t_d, N, T, alpha,
                                                                                 alpha_sum, b)
        elif lev == j - 1:
            V = R[lev, k] + t_d[j, k]
        else:
            V = R[lev, k]
        if np.random.random() * V < c - a * t_d[lev, k]:
            return lev + 1
        lev -= 1
    return 0


@token_kernel
def seqlda_table_support(j, k, n_d, t_d, mcap):
    """(lo, hi) of t_jk by (6.7): [max(1, t_j-1,k - n_j-1,k), min(n_jk + t_j+1,k, M_max)]; (0, 0) if no customers."""
    J = n_d.shape[0]
    c = n_d[j, k]
    if j + 1 < J:
        c += t_d[j + 1, k]
    if c == 0:
        return 0, 0
    lo = 1
    if j >= 1:
        lo = max(1, t_d[j - 1, k] - n_d[j - 1, k])
    return lo, min(c, mcap)


@token_kernel
def seqlda_table_weights(wt, j, k, lo, hi, n_d, t_d, N, T, alpha, alpha_sum, a, b, ratio, cratio):
    """Unnormalised p(t_jk = v) by (6.7) for v in [lo, hi] into ``wt[v]`` (T_j includes the candidate); returns
    the sum. With T'_j = T_j - t_jk and c = n_jk + t_j+1,k, the factors in v are
    j = 0: Gamma(alpha_k + v) / Gamma(sum alpha + T'_0 + v) (b|a)_{T'_0+v} S^c_v;
    j > 0: S^{n_j-1,k + v}_{t_j-1,k} / (b)_{N_j-1 + T'_j + v} (b|a)_{T'_j+v} S^c_v,
    accumulated as a running product of neighbour ratios (no logs; rescaled before overflow).
    """
    J = n_d.shape[0]
    c = n_d[j, k]
    if j + 1 < J:
        c += t_d[j + 1, k]
    Tr = T[j] - t_d[j, k]
    x = 1.0
    wt[lo] = 1.0
    total = 1.0
    for v in range(lo + 1, hi + 1):
        y = Tr + v - 1
        f = (b + a * y) * cratio[c, v]
        if j == 0:
            f *= (alpha[k] + v - 1) / (alpha_sum + y)
        else:
            f *= ratio[n_d[j - 1, k] + v - 1, t_d[j - 1, k]] / (b + N[j - 1] + y)
        x *= f
        if x > BIG:
            total, x = rescale_weights(wt, lo, v, total, x)
        wt[v] = x
        total += x
    return total


@token_kernel
def seqlda_resample_table(wt, j, k, n_d, t_d, N, T, alpha, alpha_sum, a, b, ratio, cratio, mcap):
    """Redraw t_jk from (6.7) on its support (pitfall 5); T_j follows."""
    lo, hi = seqlda_table_support(j, k, n_d, t_d, mcap)
    if hi <= lo:
        return
    total = seqlda_table_weights(wt, j, k, lo, hi, n_d, t_d, N, T, alpha, alpha_sum, a, b, ratio, cratio)
    v = draw_scan(wt, lo, hi, total)
    T[j] += v - t_d[j, k]
    t_d[j, k] = v


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


@token_kernel
def seqlda_remove(j, k, w, n_d, t_d, N, T, u, nwk, nk, inv, vbeta, frozen, logS, exact):
    """Take a token (topic k, word w) out of restaurant j by :func:`seqlda_remove_exact` or
    :func:`seqlda_remove_cmgs`, and out of the topic-word counts; u_k follows. Returns the lowest restaurant
    that lost a table (j + 1: none)."""
    if exact:
        low = seqlda_remove_exact(j, k, n_d, t_d, N, T, logS)
    else:
        low = seqlda_remove_cmgs(j, k, n_d, t_d, N, T)
    move_word(nwk, nk, inv, w, k, -1, vbeta, frozen)
    while u[k] > 0 and t_d[u[k] - 1, k] == 0:
        u[k] -= 1
    return low


@token_kernel
def seqlda_cmgs_kept_weights(p, F, S, above, j, k, n_d, t_d, N, T, u, alpha, alpha_sum, a, b, ratio, w, nwk, inv,
                             beta, frozen_phi, frozen):
    """(6.4)-(6.6) into ``p`` (returns the sum) from the kept chain products S and topic factors F after the
    removal of a token of topic k: F_k alone is refreshed, or S and every F when a restaurant above j changed
    (``above``). Equals :func:`seqlda_topic_weights` bit for bit."""
    if above:
        umin = j
        for kk in range(p.shape[0]):
            umin = min(umin, u[kk])
        seqlda_chain_products(S, j, umin, N, T, alpha_sum, a, b)
        for kk in range(p.shape[0]):
            F[kk] = seqlda_topic_factor(kk, j, u, S, n_d, t_d, alpha, ratio)
    else:
        F[k] = seqlda_topic_factor(k, j, u, S, n_d, t_d, alpha, ratio)
    return seqlda_cmgs_weights(p, F, j, u, seqlda_chain_factor(j, N, T, alpha_sum, a, b), w, nwk, inv, beta,
                               frozen_phi, frozen)


@token_kernel
def seqlda_cmgs_open(p, total, j, t_d, T, u):
    """CMGS: a topic k ~ p, then new tables in restaurants u_k..j when u_k <= j (restaurant u_k - 1 gains a
    customer). Returns (k, the lowest restaurant that gained a table (j + 1: none))."""
    k = draw_scan(p, 0, p.shape[0] - 1, total)
    low = u[k]
    if low <= j:
        for jj in range(low, j + 1):
            t_d[jj, k] = 1
            T[jj] += 1
        u[k] = j + 1
    return k, low


@token_kernel
def seqlda_exact_open(p, total, R, j, n_d, t_d, N, T, u, alpha, alpha_sum, a, b, mcap):
    """Exact sampler: a topic k ~ p (:func:`seqlda_crp_weights`), then new tables in restaurants m..j by
    :func:`seqlda_open_path`, joining where a restaurant is at the M_max cap. Returns (k, the lowest restaurant
    that gained a table (j + 1: none))."""
    k = draw_scan(p, 0, p.shape[0] - 1, total)
    m = seqlda_open_path(R, j, k, n_d, t_d, N, T, alpha, alpha_sum, a, b)
    for jj in range(j, m - 1, -1):
        if t_d[jj, k] >= mcap:
            m = jj + 1
            break
    for jj in range(m, j + 1):
        t_d[jj, k] += 1
        T[jj] += 1
    if u[k] <= j:
        u[k] = j + 1
    return k, m


@token_kernel
def seqlda_add(i, j, k, w, z, n_d, t_d, N, T, u, S, F, wt, nwk, nk, inv, vbeta, frozen, alpha, alpha_sum, a, b,
               ratio, cratio, mcap, exact):
    """Seat token i (word w) with topic k in restaurant j (its tables already opened), count it in the
    topic-word counts, redraw t_jk by (6.7) and refresh the kept factor F_k (CMGS)."""
    z[i] = k
    n_d[j, k] += 1
    N[j] += 1
    move_word(nwk, nk, inv, w, k, 1, vbeta, frozen)
    seqlda_resample_table(wt, j, k, n_d, t_d, N, T, alpha, alpha_sum, a, b, ratio, cratio, mcap)
    if not exact:
        F[k] = seqlda_topic_factor(k, j, u, S, n_d, t_d, alpha, ratio)


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


# ----------------------------------------------------------------------------------------------------------------
# hyperparameters (b_i: pdp.sample_chain_concentrations)

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


class SeqLDA(GibbsModel):
    """Sequential LDA with the collapsed multiplicity Gibbs sampler on the segment chain (thesis ch. 6)."""

    name = "seqlda"
    options = GibbsModel.options + (PDP_DISCOUNT, PDP_CONCENTRATION)

    def initial_hyper(self, **overrides) -> dict:
        """Defaults alpha = 0.1 (optimised after 20 cycles), beta = 0.01, a = 0, b = 10 (initial b_i, sampled),
        m_max = 1000.

        Overrides (``None`` = default): ``alpha``, ``beta``, ``a``, ``b``, ``sample_b``, ``optimize_alpha``,
        ``alpha_burn_in`` / ``b_burn_in`` (cycles before updating), ``m_max`` (cap on a table count),
        ``table_sweep`` (redraw pass-through table counts after each document), ``sampler``: ``"cmgs"`` (thesis
        Algorithm 5, default) or ``"exact"`` (stochastic table removal + seating predictive, see
        :func:`seqlda_sweep`).
        """
        K = self.num_topics
        hyper = parse_hyper(overrides, [
            ("alpha", DEFAULT_ALPHA, lambda v: positive_vector(v, K, "alpha")),
            ("beta", DEFAULT_BETA, float),
            ("a", DEFAULT_A, float),
            ("b", DEFAULT_B, float),
            ("sample_b", True, bool),
            ("optimize_alpha", True, bool),
            ("alpha_burn_in", DEFAULT_ALPHA_BURN_IN, int),
            ("b_burn_in", 0, int),
            ("m_max", DEFAULT_M_MAX, int),
            ("table_sweep", True, bool),
            ("sampler", "cmgs", str),
        ])
        check_cmgs_hyper(hyper)
        return hyper

    @staticmethod
    def _sizes(block: SegmentedBlock, hyper) -> tuple[int, int]:
        """(M_max cap on a table count, largest customer count + 1 the kernels may look up)."""
        mcap = max(1, min(longest_span(block.token_ptr()), int(hyper.get("m_max", DEFAULT_M_MAX))))
        return mcap, longest_span(block.seg_ptr) + mcap + 1

    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        z, n, t = seqlda_init(block.doc_ptr, block.seg_ptr, block.words, self.num_topics, nwk, nk, seed)
        return {"z": z, "n": n, "t": t, "b": np.full(block.n_docs, float(hyper["b"]))}

    def _bdoc(self, block, state, hyper) -> np.ndarray:
        if hyper.get("sample_b", True) and "b" in state:
            return state["b"]
        return np.full(block.n_docs, float(hyper["b"]))

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        a = float(hyper["a"])
        check_pdp(a, float(hyper["b"]))
        mcap, rows = self._sizes(block, hyper)
        table = stirling_table(a).ensure(rows + 1, mcap)
        phi, frozen = frozen_args(frozen_phi)
        seqlda_sweep(block.doc_ptr, block.seg_ptr, block.words, state["z"], state["n"], state["t"],
                     self._bdoc(block, state, hyper), nwk, nk, np.asarray(hyper["alpha"], dtype=np.float64),
                     float(hyper["beta"]), a, table.log, table.ratio, table.cratio, mcap, phi, frozen,
                     bool(hyper.get("table_sweep", True)), hyper.get("sampler", "cmgs") == "exact", seed)

    def local_hyper_update(self, block, state, hyper, seed) -> None:
        """b_i per document (6.11)/(6.12), in the state."""
        if not hyper.get("sample_b", True) or int(hyper.get("cycles", 0)) < int(hyper.get("b_burn_in", 0)):
            return
        if "b" not in state:
            state["b"] = np.full(block.n_docs, float(hyper["b"]))
        sample_chain_concentrations(block.doc_ptr, block.seg_ptr, state["t"], state["t"], state["b"], float(hyper["a"]),
                                    seed)

    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        """Newton terms of alpha at the broadcast alpha (:func:`alpha_newton_terms`), then [sum_i b_i, D]."""
        K = self.num_topics
        out = np.zeros(2 * K + 5)
        if hyper.get("optimize_alpha", True):
            out[:2 * K + 3] = alpha_newton_terms(block.doc_ptr, state["t"], np.asarray(hyper["alpha"], np.float64))
        b = self._bdoc(block, state, hyper)
        out[2 * K + 3] = float(np.sum(b))
        out[2 * K + 4] = float(block.n_docs)
        return out

    def update_hyper(self, hyper, stats, num_documents, seed) -> dict:
        """One Newton step on alpha; ``b_mean`` (mean of the b_i) for the record."""
        K = self.num_topics
        hyper = dict(hyper, cycles=int(hyper.get("cycles", 0)) + 1)
        stats = np.asarray(stats, dtype=np.float64)
        if hyper.get("optimize_alpha", True) and hyper["cycles"] > int(hyper.get("alpha_burn_in", 0)):
            hyper["alpha"] = alpha_newton_step(np.asarray(hyper["alpha"], np.float64), stats[:2 * K + 3]).tolist()
        if stats.shape[0] >= 2 * K + 5 and stats[2 * K + 4] > 0:
            hyper["b_mean"] = float(stats[2 * K + 3] / stats[2 * K + 4])
        return hyper

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        """(D, K) mu-hat_i0k = (alpha_k + t_i1k) / sum_k (alpha_k + t_i1k) ((6.8), t of the first segment)."""
        t1 = np.zeros((block.n_docs, self.num_topics))
        has = np.diff(block.doc_ptr) > 0
        t1[has] = state["t"][block.doc_ptr[:-1][has]]
        return dirichlet_mean(t1, hyper["alpha"])

    def segment_topic(self, block, state, hyper) -> np.ndarray:
        """(S, K) mu-hat_ij (6.9), recursively from mu-hat_i0:
        [(a T_ij + b_i) mu_i,j-1 + n_ijk + t_i,j+1,k - a t_ijk] / (b_i + N_ij + T_i,j+1)."""
        a = float(hyper["a"])
        b = self._bdoc(block, state, hyper)
        mu0 = self.doc_topic(block, state, hyper)
        n = state["n"].astype(np.float64)
        t = state["t"].astype(np.float64)
        out = np.empty_like(n)
        for d in range(block.n_docs):
            s0, s1 = int(block.doc_ptr[d]), int(block.doc_ptr[d + 1])
            prev = mu0[d]
            for s in range(s0, s1):
                cust = n[s] + (t[s + 1] if s + 1 < s1 else 0.0)
                T = t[s].sum()
                prev = ((a * T + b[d]) * prev + cust - a * t[s]) / (b[d] + cust.sum())
                out[s] = prev
        return out
