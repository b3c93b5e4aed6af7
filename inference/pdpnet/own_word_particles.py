"""Left to right with a test document's own word vectors, a CHAIN of them, the top one over SEVERAL frozen parents
mixed by rho (issue 28, 3; whole-network mode's held-out word side, :mod:`drivers.models.pdp_network.whole_words`;
one own vector over one frozen parent: :func:`inference.pdpnet.bigram_left_to_right.bigram_particles`). Pure numba.

The document's own word vectors (burst[topic, document]: per document; [topic, segment]: per segment; a chain,
e.g. burst[topic, segment] over burst[topic, document]) start empty; each is a Pitman-Yor (a, b) vector (its own
a, b per level) over the next one up, the top one over E shared parents frozen at their trained means P_e,k(w); a
mixture node (b infinite) never joins. Token n's word factor, from the top of its chain down, over the particle's
own counts:

    g_top(k) = sum_e rho_cke P_e,k(w),  rho_cke = (gamma_e + S_cke) / (sum gamma + T_ck)  (:mod:`inference.pdpnet.rho`),
    g_l(k) = [(n_lkw - a_l t_lkw) + (b_l + a_l T_lk) g_l+1(k)] / (b_l + N_lk),   f_n(k) = g_0(k),

S_cke the top vector's tables sent up edge e. The token is seated by the same sequential process from the bottom
up: at level l an own table of its cell (weight size - a_l) or a new one (weight (b_l + a_l T) g_l+1(w)) whose
customer is seated at level l + 1 the same way; at the top a new table is sent up edge e (weight (b + a T) rho_e
P_e(w)). Given the counts the seating is exchangeable, so the particles' products are unbiased for p(w | the frozen
parents) as in :mod:`inference.pdpnet.bigram_left_to_right` (tests/kernels/test_pdpnet_whole_words.py: against the
process enumerated). The topic side: :func:`inference.pdpnet.left_to_right.network_particles`' moves.

A cell is a pair u (an own vector, the context ``pctx[u]``, at a word) and a topic; ``up[u]`` is the pair of the
vector one level up at the same word (-1 at the top).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.doc_restaurant import doc_add, doc_remove, doc_rows
from inference.pdpnet.left_to_right import predictive_rows, trained_cells
from inference.pdpnet.rho import rho_den, rho_num
from inference.pdpnet.sweep import draw_topic, topic_scratch


@token_kernel
def _above(u, c, k, P, gamma, gsum, S, T):
    """sum_e rho_cke P_e,k(w) of a top pair u."""
    total = 0.0
    for e in range(P.shape[2]):
        total += rho_num(gamma[e], S[c, k, e], gsum) / rho_den(gsum, T[c, k]) * P[u, k, e]
    return total


@numba.njit(cache=True)
def _chain(u, k, up, pctx, a, b, P, gamma, gsum, n, t, N, T, S, path, g):
    """g_l(k) of pair u's chain from the top down (module docstring): ``path[l]`` the level-l pair, ``g[l]`` its
    predictive, ``g[L]`` the top's sum_e rho P; returns L, the chain's length."""
    L = 0
    while u >= 0:
        path[L] = u
        L += 1
        u = up[u]
    top = path[L - 1]
    g[L] = _above(top, pctx[top], k, P, gamma, gsum, S, T)
    for lv in range(L - 1, -1, -1):
        v = path[lv]
        c = pctx[v]
        if b[c] == np.inf:
            g[lv] = g[lv + 1]
        else:
            g[lv] = ((n[v, k] - a[c] * t[v, k]) + (b[c] + a[c] * T[c, k]) * g[lv + 1]) / (b[c] + N[c, k])
    return L


@numba.njit(cache=True)
def _seat(i, u, k, up, pctx, a, b, P, gamma, gsum, n, t, N, T, S, tab, size, cell, edge, tup, path, g):
    """Seat token i at cell (u, k) and up its chain: at an own table or at a new one whose customer goes one level
    up (at the top: sent up an edge) (module docstring)."""
    K = n.shape[1]
    E = P.shape[2]
    L = _chain(u, k, up, pctx, a, b, P, gamma, gsum, n, t, N, T, S, path, g)
    below = -1                                  # the table just opened one level down (its customer seated here)
    for lv in range(L):
        v = path[lv]
        c = pctx[v]
        join = 0.0 if b[c] == np.inf else n[v, k] - a[c] * t[v, k]
        lead = 1.0 if b[c] == np.inf else b[c] + a[c] * T[c, k]
        x = np.random.random() * (join + lead * g[lv + 1])
        n[v, k] += 1
        N[c, k] += 1
        if x < join:
            last = -1
            for j in range(size.shape[0]):
                if size[j] > 0 and cell[j] == v * K + k:
                    last = j
                    if x < size[j] - a[c]:
                        break
                    x -= size[j] - a[c]
            if last >= 0:
                size[last] += 1
                if below >= 0:
                    tup[below] = last
                else:
                    tab[i] = last
                return
            x = join                      # rounding at the end of the tables: a new table
        x -= join
        e = 0
        if lv == L - 1:
            while e < E - 1:
                w = lead * rho_num(gamma[e], S[c, k, e], gsum) / rho_den(gsum, T[c, k]) * P[v, k, e]
                if x < w:
                    break
                x -= w
                e += 1
            S[c, k, e] += 1
        j = 0
        while size[j] > 0:
            j += 1
        size[j], cell[j], edge[j], tup[j] = 1, v * K + k, e, -1
        if below >= 0:
            tup[below] = j
        else:
            tab[i] = j
        t[v, k] += 1
        T[c, k] += 1
        below = j


@numba.njit(cache=True)
def _unseat(i, u, k, up, pctx, n, t, N, T, S, tab, size, edge, tup):
    """Token i leaves its table; a table it leaves empty closes and its customer leaves the table one level up (at
    the top: the frozen parent)."""
    j = tab[i]
    while u >= 0:
        c = pctx[u]
        n[u, k] -= 1
        N[c, k] -= 1
        size[j] -= 1
        if size[j] > 0:
            return
        t[u, k] -= 1
        T[c, k] -= 1
        if up[u] < 0:
            S[c, k, edge[j]] -= 1
            return
        j = tup[j]
        u = up[u]


@numba.njit(cache=True, error_model="numpy")
def own_word_particles(seeds, resample, uidx, pctx, up, C, P, gamma, gsum, a, b, topic_inst, anc_ptr, anc, kind, dim,
                       off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, n0,
                       tc0, tp0, Nn0, TC0, TP0, s0, Se0, eoff, shared, own_c0, own_t0):
    """(R, N) p_n^(r) of a document's N tokens for every particle r (module docstring). Word side: token i's pair
    ``uidx[i]`` (a distinct (own vector, word) at the chain's bottom), a pair's context ``pctx[u]`` among ``C``
    (every level's own vectors), ``up[u]`` the pair one level up (-1: the top), ``P`` (U, K, E) the frozen parents'
    means at a top pair's word, ``gamma`` (E,) and ``gsum`` the top vector's rho prior, ``a``/``b`` (C,) every
    own vector's discount and concentration (b infinite: a mixture node). Topic side as
    :func:`inference.pdpnet.left_to_right.network_particles`."""
    N_ = uidx.shape[0]
    U, K, E = P.shape
    R = seeds.shape[0]
    J = kind.shape[0]
    Z, terms, Zb, slot, pn, pe, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    mx = np.zeros(2, np.int64)
    z = np.zeros(N_, np.int64)
    pt = np.empty(J + 1, np.int64)
    c0, t0 = trained_cells(shared, off, n0, tc0, tp0, own_c0, own_t0)
    tsize = np.zeros(N_ * maxanc + 1, np.int64)
    tcell = np.zeros(N_ * maxanc + 1, np.int64)
    tedge = np.zeros(N_ * maxanc + 1, np.int64)
    hi = np.zeros(1, np.int64)
    out = np.empty((R, N_))
    rows, cols = RJ.shape[1] + 1, RJ.shape[2] + 1
    tab = np.zeros(N_, np.int64)
    depth = 1
    for u in range(U):
        L, v = 0, u
        while v >= 0:
            L += 1
            v = up[v]
        depth = max(depth, L)
    path = np.zeros(depth, np.int64)
    g = np.zeros(depth + 1)
    size = np.zeros(N_ * depth + 1, np.int64)
    cell = np.zeros(N_ * depth + 1, np.int64)
    edge = np.zeros(N_ * depth + 1, np.int64)
    tup = np.zeros(N_ * depth + 1, np.int64)
    for r in range(R):
        np.random.seed(seeds[r])
        n, tc, tp, Nn, TC, TP = n0.copy(), tc0.copy(), tp0.copy(), Nn0.copy(), TC0.copy(), TP0.copy()
        s, Se = s0.copy(), Se0.copy()
        grp = np.zeros_like(c0)
        tsize[:] = 0
        hi[0] = 0
        nw, tw = np.zeros((U, K), np.int64), np.zeros((U, K), np.int64)
        Nw, Tw, Sw = np.zeros((C, K), np.int64), np.zeros((C, K), np.int64), np.zeros((C, K, E), np.int64)
        size[:] = 0
        for i in range(N_):
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                raise ValueError("own_word_particles: the Stirling table must cover the document's tokens + 3")
            if resample:
                for m in range(i):
                    u, jt, k0 = uidx[m], topic_inst[m], z[m]
                    _, refused = doc_remove(jt, k0, True, shared, c0, grp, tsize, tcell, tedge, hi, pn, pe, pt,
                                            kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    if refused:                 # the topic side's rule: the move is not made
                        continue
                    _unseat(m, u, k0, up, pctx, nw, tw, Nw, Tw, Sw, tab, size, edge, tup)
                    row = doc_rows(jt, K, Zb, slot, shared, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                   par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
                    total = 0.0
                    for k in range(K):
                        _chain(u, k, up, pctx, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, path, g)
                        total += Zb[row, k] * g[0]
                        cum[k] = total
                    k = draw_topic(cum, total, K)
                    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                        Z[anc[q]] = Zb[slot[anc[q]], k]
                    doc_add(jt, k, True, False, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim,
                            off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n,
                            tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    _seat(m, u, k, up, pctx, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, tab, size, cell, edge, tup,
                          path, g)
                    z[m] = k
            u, jt = uidx[i], topic_inst[i]
            row = predictive_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                  par_node, par_gamma, gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se)
            total = 0.0
            for k in range(K):
                _chain(u, k, up, pctx, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, path, g)
                total += Zb[row, k] * g[0]
                cum[k] = total
            if not (total > 0.0 and total < np.inf):
                raise FloatingPointError("own_word_particles: a token's predictive is 0, NaN or inf")
            out[r, i] = total
            k = draw_topic(cum, total, K)
            for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                Z[anc[q]] = Zb[slot[anc[q]], k]
            doc_add(jt, k, True, True, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim, off, alpha,
                    a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP,
                    s, Se, eoff, mx)
            _seat(i, u, k, up, pctx, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, tab, size, cell, edge, tup, path, g)
            z[i] = k
    return out
