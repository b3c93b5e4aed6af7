"""Shared Pitman-Yor topic vectors beside a deep Pitman-Yor word side on the Gibbs engine (issue 28; hca's full
structure, ``hca-2.json``: documents over a corpus-level PYP over a root, phi_k over a chain of corpus-level PYP
word vectors; and the same beside the [topic, column:NAME] side over phi0[topic]): one sweep.

The topic side is :func:`inference.pdpnet.owned.owned_sweep`'s moves (the shared vectors' cells hold the global
(c, t), the partition's own in ``own_c``/``own_t``: :func:`owned_remove`, :func:`owned_add`, the race rule
:func:`repair`, :func:`owned_reseat`); the word side is :func:`inference.pdpnet.word_column.column_word_sweep`'s,
or without a bottom level (``pb`` < 0: token i's cell is phi_k's row ``pidx[i]``) :func:`inference.pdpnet.
word_chain.chain_word_sweep`'s, their helpers unchanged (:func:`word_chain.leave`, :func:`word_chain.move`,
:func:`word_chain.upper_terms`, :func:`word_chain.level_terms`, :func:`word_chain.seat_up`). The two sides touch
different cells, so the moves are the two sweeps' in the order of the word-side kernels: a token's topic-side
decrement, its word-side one, z drawn from Z^+_topic(k) Z^+_word(k), the two increments; then the topic side's
re-seating, then the word side's upper cells'. With one partition (own = global) this is the network sampler
draw for draw (tested, ``tests/kernels/test_pdpnet_owned_chain.py``)."""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.owned import owned_add, owned_remove, owned_reseat, owned_undo, repair
from inference.pdpnet.sweep import draw_topic, topic_scratch, topic_zplus_rows
from inference.pdpnet.word_chain import held, leave, level_terms, move, reseat_upper_cells, seat_up, upper_terms
from inference.pdpnet.word_pyp import opens


@token_kernel
def bottom_move(q, g, k, d, h, bn, bt, BN, BT, own_bn, own_bt, mx):
    """Add (d = 1) or remove (d = -1) a customer of pair q's cell at topic k (value g), with its indicator when
    ``h``."""
    own_bn[q, k] += d
    bn[q, k] += d
    BN[g, k] += d
    if h:
        own_bt[q, k] += d
        bt[q, k] += d
        BT[g, k] += d
    mx[0] = max(mx[0], bn[q, k])
    mx[1] = max(mx[1], bt[q, k])


@numba.njit(cache=True, error_model="numpy")
def owned_chain_sweep(start, reseed, seed, pidx, pword, pval, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                      a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, n, tc, tp, Nn,
                      TC, TP, s, Se, eoff, mx, shared, own_c, own_t, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk,
                      Tk, cup, tup, Cup, Tup, own_n, own_wt, own_wc, own_up, pb, bb, gb, pl, bl, gl, gsl, beta0, V):
    """One cycle from position ``start`` (module docstring): the topic side's arguments are ``owned_sweep``'s
    (``RJ, RO, EO`` the ratio tables covering both sides), the word side's ``column_word_sweep``'s after ``mx``
    (phi_k's own ``own_n, own_wt``, the corpus levels' ``own_wc, own_up``); without a bottom level (``pb`` < 0)
    ``bn .. own_bt`` are not read and ``pidx[i]`` is token i's word row. Returns -1 when done or the position to
    resume from (tokens, N + topic cell, N + cells + word cell) once the tables cover max c + 2 and max t + 2."""
    if reseed:
        np.random.seed(seed)
    N = pidx.shape[0]
    K = nloc.shape[1]
    U = nloc.shape[0]
    L = cup.shape[1]
    J = kind.shape[0]
    Z, terms, Zb, slot, pn, pe, cum, _, _ = topic_scratch(par_ptr, anc_ptr, J, K)
    oc = np.zeros(J, np.int64)
    ot = np.zeros(J, np.int64)
    JL = np.zeros(L + 2)
    XL = np.zeros(L + 2)
    ZL = np.zeros(L + 2)
    rows = RJ.shape[1] + 1
    cols = RJ.shape[2] + 1
    bottom = pb >= 0
    pB = max(pb, 0)
    ab = avals[pB]
    bB = bvals[max(bb, 0)]
    p0 = pl[0]
    a0 = avals[p0]
    b0 = bvals[bl[0]]
    if start == 0:
        repair(shared, own_c, own_t, oc, ot, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
               par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        pos += 1
        q = pidx[i]
        u = pword[q] if bottom else q
        g = pval[q] if bottom else 0
        jt = topic_inst[i]
        k0 = z[i]
        depth, refused = owned_remove(jt, k0, True, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off,
                                      par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        hb = held(own_bn[q, k0], own_bt[q, k0]) if bottom else True
        h = 0
        if hb:
            h = leave(u, k0, 0, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_wt, own_wc, own_up, mx)
        if bottom:
            bottom_move(q, g, k0, -1, hb, bn, bt, BN, BT, own_bn, own_bt, mx)
        if refused or h < 0 or (bottom and hb and bt[q, k0] == 0 and bn[q, k0] > 0):
            if not refused:
                owned_undo(jt, k0, depth, True, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, off, n, tc, tp,
                           Nn, TC, TP, s, Se, eoff, mx)
            if hb and h >= 0:
                move(u, k0, 0, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_wt, own_wc, own_up, mx)
            if bottom:
                bottom_move(q, g, k0, 1, hb, bn, bt, BN, BT, own_bn, own_bt, mx)
            continue
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        upper_terms(u, 1, L, tloc, Tk, cup, tup, Cup, Tup, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V, JL, XL,
                    ZL)
        total = 0.0
        for kk in range(K):
            c = nloc[u, kk]
            t = tloc[u, kk]
            j0, x0 = level_terms(c, t, Nk[kk], Tk[kk], a0, b0, gl[0], gsl[0], RJ[p0, c, t], EO[p0, c, t], ZL[1])
            zw = j0
            zw += x0
            if bottom:
                c = bn[q, kk]
                t = bt[q, kk]
                jb, xb = level_terms(c, t, BN[g, kk], BT[g, kk], ab, bB, gb, gb, RJ[pB, c, t], EO[pB, c, t], zw)
                zw = jb
                zw += xb
            total += Zb[r, kk] * zw
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("owned_chain_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
        k = draw_topic(cum, total, K)
        for x in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[x]] = Zb[slot[anc[x]], k]
        owned_add(jt, k, True, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha, a_of,
                  b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se,
                  eoff, mx)
        c = nloc[u, k]
        t = tloc[u, k]
        j0, x0 = level_terms(c, t, Nk[k], Tk[k], a0, b0, gl[0], gsl[0], RJ[p0, c, t], EO[p0, c, t], ZL[1])
        seat = True
        if bottom:
            z0 = j0
            z0 += x0
            c = bn[q, k]
            t = bt[q, k]
            jb, xb = level_terms(c, t, BN[g, k], BT[g, k], ab, bB, gb, gb, RJ[pB, c, t], EO[pB, c, t], z0)
            seat = opens(jb, xb)
        if seat:
            h = 0
            if opens(j0, x0):
                h = 1 + seat_up(1, L, JL, XL)
            move(u, k, 0, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_wt, own_wc, own_up, mx)
        if bottom:
            bottom_move(q, g, k, 1, seat, bn, bt, BN, BT, own_bn, own_bt, mx)
        z[i] = k
    ncell = off[J]
    if pos < N + ncell:
        back = owned_reseat(pos, N, shared, own_c, own_t, oc, ot, Z, terms, pn, pe, anc_ptr, anc, kind, dim, off,
                            alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc,
                            tp, Nn, TC, TP, s, Se, eoff, mx)
        if back >= 0:
            return back
        pos = N + ncell
    last = (L + (K if bottom else 0)) * U
    back = reseat_upper_cells(pos - N - ncell, last, U, L, rows, cols, nloc, tloc, Nk, Tk, cup, tup, Cup,
                              Tup, own_n, own_wt, own_wc, own_up, mx, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V,
                              JL, XL, ZL, a0, b0, p0)       # corpus levels L..1, then phi0 topic by topic
    return -1 if back < 0 else N + ncell + back
