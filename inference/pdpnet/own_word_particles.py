"""Left to right with a test document's own word vectors over SEVERAL frozen parents mixed by rho (issue 28, 3;
whole-network mode's held-out word side, :mod:`drivers.models.pdp_network.whole_words`; one frozen parent:
:func:`inference.pdpnet.bigram_left_to_right.bigram_particles`). Pure numba.

The document's own word vector at (topic k, context c) (burst[topic, document]: the document; [topic, segment]: the
segment) starts empty, a Pitman-Yor (a, b) vector over E shared parents frozen at their trained means P_e,k(w); a
mixture node (b infinite) never joins. Token n's word factor, over the particle's own counts:

    f_n(k) = [(n_ckw - a t_ckw) + (b + a T_ck) sum_e rho_cke P_e,k(w)] / (b + N_ck),
    rho_cke = (gamma_e + S_cke) / (sum gamma + T_ck)     (:mod:`inference.pdpnet.rho`; fixed weights: gamma_e),

S_cke the vector's tables sent up edge e. The token is seated by the same sequential process: an own table of its
cell (weight size - a) or a new one sent up edge e (weight (b + a T) rho_e P_e(w)). Given the counts the seating is
exchangeable, so the particles' products are unbiased for p(w | the frozen parents) as in
:mod:`inference.pdpnet.bigram_left_to_right` (tests/kernels/test_pdpnet_whole_words.py: against the process
enumerated). The topic side: :func:`inference.pdpnet.left_to_right.network_particles`' moves.
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
    """sum_e rho_cke P_e,k(w) of pair u."""
    total = 0.0
    for e in range(P.shape[2]):
        total += rho_num(gamma[e], S[c, k, e], gsum) / rho_den(gsum, T[c, k]) * P[u, k, e]
    return total


@token_kernel
def _factor(u, c, k, a, b, P, gamma, gsum, n, t, N, T, S):
    """f(k) of pair u in context c (module docstring)."""
    if b == np.inf:
        return _above(u, c, k, P, gamma, gsum, S, T)
    return ((n[u, k] - a * t[u, k]) + (b + a * T[c, k]) * _above(u, c, k, P, gamma, gsum, S, T)) / (b + N[c, k])


@numba.njit(cache=True)
def _seat(i, u, c, k, a, b, P, gamma, gsum, n, t, N, T, S, tab, size, cell, edge):
    """Seat token i at cell (u, k): at an own table or at a new one sent up an edge (module docstring)."""
    K = n.shape[1]
    E = P.shape[2]
    join = 0.0 if b == np.inf else n[u, k] - a * t[u, k]
    lead = 1.0 if b == np.inf else b + a * T[c, k]
    total = join + lead * _above(u, c, k, P, gamma, gsum, S, T)
    x = np.random.random() * total
    n[u, k] += 1
    N[c, k] += 1
    if x < join:
        last = -1
        for j in range(size.shape[0]):
            if size[j] > 0 and cell[j] == u * K + k:
                last = j
                if x < size[j] - a:
                    break
                x -= size[j] - a
        if last >= 0:
            size[last] += 1
            tab[i] = last
            return
        x = join                          # rounding at the end of the tables: a new table
    x -= join
    e = 0
    while e < E - 1:
        w = lead * rho_num(gamma[e], S[c, k, e], gsum) / rho_den(gsum, T[c, k]) * P[u, k, e]
        if x < w:
            break
        x -= w
        e += 1
    j = 0
    while size[j] > 0:
        j += 1
    size[j], cell[j], edge[j], tab[i] = 1, u * K + k, e, j
    t[u, k] += 1
    T[c, k] += 1
    S[c, k, e] += 1


@numba.njit(cache=True)
def _unseat(i, u, c, k, n, t, N, T, S, tab, size, edge):
    """Token i leaves its table; a table it leaves empty closes (its customer leaves the frozen parent)."""
    n[u, k] -= 1
    N[c, k] -= 1
    j = tab[i]
    size[j] -= 1
    if size[j] == 0:
        t[u, k] -= 1
        T[c, k] -= 1
        S[c, k, edge[j]] -= 1


@numba.njit(cache=True, error_model="numpy")
def own_word_particles(seeds, resample, uidx, pctx, C, P, gamma, gsum, a, b, topic_inst, anc_ptr, anc, kind, dim,
                       off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, n0,
                       tc0, tp0, Nn0, TC0, TP0, s0, Se0, eoff, shared, own_c0, own_t0):
    """(R, N) p_n^(r) of a document's N tokens for every particle r (module docstring). Word side: token i's pair
    ``uidx[i]`` (a distinct (context, word)), a pair's context ``pctx[u]`` among ``C``, ``P`` (U, K, E) the frozen
    parents' means at the pair's word, ``gamma`` (E,) and ``gsum`` the own vector's rho prior, ``a``/``b`` its
    discount and concentration (b infinite: a mixture node). Topic side as
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
    size = np.zeros(N_ + 1, np.int64)
    cell = np.zeros(N_ + 1, np.int64)
    edge = np.zeros(N_ + 1, np.int64)
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
                    c = pctx[u]
                    _, refused = doc_remove(jt, k0, True, shared, c0, grp, tsize, tcell, tedge, hi, pn, pe, pt,
                                            kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    if refused:                 # the topic side's rule: the move is not made
                        continue
                    _unseat(m, u, c, k0, nw, tw, Nw, Tw, Sw, tab, size, edge)
                    row = doc_rows(jt, K, Zb, slot, shared, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                   par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
                    total = 0.0
                    for k in range(K):
                        total += Zb[row, k] * _factor(u, c, k, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw)
                        cum[k] = total
                    k = draw_topic(cum, total, K)
                    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                        Z[anc[q]] = Zb[slot[anc[q]], k]
                    doc_add(jt, k, True, False, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim,
                            off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n,
                            tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    _seat(m, u, c, k, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, tab, size, cell, edge)
                    z[m] = k
            u, jt = uidx[i], topic_inst[i]
            c = pctx[u]
            row = predictive_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                  par_node, par_gamma, gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se)
            total = 0.0
            for k in range(K):
                total += Zb[row, k] * _factor(u, c, k, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw)
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
            _seat(i, u, c, k, a, b, P, gamma, gsum, nw, tw, Nw, Tw, Sw, tab, size, cell, edge)
            z[i] = k
    return out
