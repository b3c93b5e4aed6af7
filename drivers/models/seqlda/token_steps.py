"""SeqLDA's per-token steps (``@token_kernel``: no reference counting, LLVM-inlined into the sweep of
:mod:`.kernels`): the chain factors of a segment's topic, a token's removal and arrival on the chain of its
document's segments, the CMGS and exact table weights (thesis ch. 6). One document's restaurants are rows
s0..s0+J-1 of n and t; j below is the 0-based position; every kernel uses the "numpy" error model."""
from __future__ import annotations

import math

import numpy as np

from inference.gibbs.common import BIG, draw_scan, move_word, rescale_weights, token_kernel, word_factor


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
