"""Left to right with a test document's own word vectors: one over SEVERAL frozen parents mixed by rho, a CHAIN of
them, or any own vectors whose parents are own or frozen (issue 28, 3; whole-network mode's held-out word side,
:mod:`drivers.models.pdp_network.whole_words`; one own vector over one frozen parent:
:func:`inference.pdpnet.bigram_left_to_right.bigram_particles`). Pure numba.

The document's own word vectors (burst[topic, document]: per document; [topic, segment]: per segment; e.g.
burst[topic, segment] over burst[topic, document] over phi[topic]) start empty; each is a Pitman-Yor (a, b) vector
(its own a, b) over E parents mixed by rho, a parent another own vector or a shared one frozen at its trained mean
P_e,k(w); a mixture node (b infinite) never joins. Token n's word factor, from the top down (parents first), over
the particle's own counts:

    g_c(k) = [(n_ckw - a_c t_ckw) + (b_c + a_c T_ck) sum_e rho_cke G_e] / (b_c + N_ck),   f_n(k) = g of its vector,
    rho_cke = (gamma_ce + S_cke) / (sum gamma_c + T_ck)     (:mod:`inference.pdpnet.rho`; fixed weights: gamma_ce),

G_e the own parent's g or the frozen P_e,k(w), S_cke the vector's tables sent up edge e. The token is seated by the
same sequential process from the bottom up: an own table of its cell (weight size - a) or a new one sent up edge e
(weight (b + a T) rho_e G_e) whose customer, an own parent's, is seated there the same way. Given the counts the
seating is exchangeable, so the particles' products are unbiased for p(w | the frozen parents) as in
:mod:`inference.pdpnet.bigram_left_to_right` (tests/kernels/test_pdpnet_whole_words.py: against the process
enumerated). The topic side: :func:`inference.pdpnet.left_to_right.network_particles`' moves.

A cell is a pair u (an own vector, the context ``pctx[u]``, at a word) and a topic; ``upw[u, e]`` the pair of its
own parent on edge e at the same word (-1: a frozen parent, ``P[u, :, e]``).
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
def _above(v, k, upw, pctx, P, gamma, gsum, S, T, g):
    """sum_e rho_cke x (the own parent pair's g, or the frozen P_e,k(w)) of pair v."""
    c = pctx[v]
    total = 0.0
    for e in range(P.shape[2]):
        above = g[upw[v, e]] if upw[v, e] >= 0 else P[v, k, e]
        total += rho_num(gamma[c, e], S[c, k, e], gsum[c]) / rho_den(gsum[c], T[c, k]) * above
    return total


@numba.njit(cache=True)
def _predict(u, k, upw, pctx, optr, order, a, b, P, gamma, gsum, n, t, N, T, S, g):
    """g(k) of pair u and its own ancestors, parents first (``order[optr[u]:optr[u + 1]]``; module docstring)."""
    for q in range(optr[u], optr[u + 1]):
        v = order[q]
        c = pctx[v]
        above = _above(v, k, upw, pctx, P, gamma, gsum, S, T, g)
        if b[c] == np.inf:
            g[v] = above
        else:
            g[v] = ((n[v, k] - a[c] * t[v, k]) + (b[c] + a[c] * T[c, k]) * above) / (b[c] + N[c, k])
    return g[u]


@numba.njit(cache=True)
def _seat(i, u, k, upw, pctx, optr, order, a, b, P, gamma, gsum, n, t, N, T, S, tab, size, cell, edge, tup, g):
    """Seat token i at cell (u, k) and up its own vectors: at an own table, or at a new one sent up an edge e (to
    an own parent: its customer seated there the same way) (module docstring)."""
    K = n.shape[1]
    E = P.shape[2]
    _predict(u, k, upw, pctx, optr, order, a, b, P, gamma, gsum, n, t, N, T, S, g)
    below, v = -1, u                            # the table just opened one level down (its customer seated at v)
    while v >= 0:
        c = pctx[v]
        join = 0.0 if b[c] == np.inf else n[v, k] - a[c] * t[v, k]
        lead = 1.0 if b[c] == np.inf else b[c] + a[c] * T[c, k]
        x = np.random.random() * (join + lead * _above(v, k, upw, pctx, P, gamma, gsum, S, T, g))
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
        while e < E - 1:
            above = g[upw[v, e]] if upw[v, e] >= 0 else P[v, k, e]
            w = lead * rho_num(gamma[c, e], S[c, k, e], gsum[c]) / rho_den(gsum[c], T[c, k]) * above
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
        below, v = j, upw[v, e]


@numba.njit(cache=True)
def _unseat(i, u, k, upw, pctx, n, t, N, T, S, tab, size, edge, tup):
    """Token i leaves its table; a table it leaves empty closes and its customer leaves the table it sits at one
    level up (a frozen parent: nothing more)."""
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
        e = edge[j]
        S[c, k, e] -= 1
        j = tup[j]
        u = upw[u, e]


@numba.njit(cache=True, error_model="numpy")
def own_word_particles(seeds, resample, uidx, pctx, upw, optr, order, C, P, gamma, gsum, a, b, topic_inst, anc_ptr,
                       anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals,
                       RJ, RO, EO, n0, tc0, tp0, Nn0, TC0, TP0, s0, Se0, eoff, shared, own_c0, own_t0):
    """(R, N) p_n^(r) of a document's N tokens for every particle r (module docstring). Word side: token i's pair
    ``uidx[i]`` (a distinct (own vector, word): the token's), a pair's context ``pctx[u]`` among ``C`` (every own
    vector), ``upw`` (U, E) its own parents' pairs (-1: frozen), ``order[optr[u]:optr[u + 1]]`` the pair and its own
    ancestors, parents first, ``P`` (U, K, E) the frozen parents' means at the pair's word, ``gamma`` (C, E) and
    ``gsum`` (C,) the vectors' rho priors (a vector with fewer edges: gamma and P 0), ``a``/``b`` (C,) every own
    vector's discount and concentration (b infinite: a mixture node). Topic side as
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
    depth = max(1, np.max(optr[1:] - optr[:-1]))             # the most own vectors a token's customer reaches
    g = np.zeros(U)
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
                    _unseat(m, u, k0, upw, pctx, nw, tw, Nw, Tw, Sw, tab, size, edge, tup)
                    row = doc_rows(jt, K, Zb, slot, shared, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                   par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
                    total = 0.0
                    for k in range(K):
                        total += Zb[row, k] * _predict(u, k, upw, pctx, optr, order, a, b, P, gamma, gsum, nw, tw,
                                                      Nw, Tw, Sw, g)
                        cum[k] = total
                    k = draw_topic(cum, total, K)
                    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                        Z[anc[q]] = Zb[slot[anc[q]], k]
                    doc_add(jt, k, True, False, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim,
                            off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n,
                            tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    _seat(m, u, k, upw, pctx, optr, order, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, tab, size, cell,
                          edge, tup, g)
                    z[m] = k
            u, jt = uidx[i], topic_inst[i]
            row = predictive_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                  par_node, par_gamma, gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se)
            total = 0.0
            for k in range(K):
                total += Zb[row, k] * _predict(u, k, upw, pctx, optr, order, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw,
                                              g)
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
            _seat(i, u, k, upw, pctx, optr, order, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, tab, size, cell, edge, tup,
                  g)
            z[i] = k
    return out
