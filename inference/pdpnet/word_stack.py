"""A word side whose bottom is a stack of Pitman-Yor levels on the Gibbs engine (issue 28): phi = level 0 over
level 1 over ... level B-1 over phi0[topic] (:mod:`inference.pdpnet.word_chain`'s level 0) over the corpus levels
and the root. Every bottom level's cells are the pairs (g, w) of a partition's tokens and the topics: level b's
restaurants (g, k), customers ``bn[b]`` (level 0: the tokens; level b > 0: level b-1's tables) and indicators
``bt[b]``, the partition's own ``own_bn[b]``/``own_bt[b]``. B = 1 is the [topic, column:NAME] side
(:func:`inference.pdpnet.word_column.column_word_sweep` is this kernel with one level); G = 1 (one value) and B
levels is a chain with B + 1 levels per topic, phi[topic] over phi1[topic] over ... over phi_B[topic].

The moves are the network sampler's with its random numbers in its order (one partition: draw for draw, tested):
a leaving customer at level b held one of its partition's indicators with probability t^p/c^p, then leaves level
b+1 likewise, up through phi0 and the corpus levels (:func:`word_chain.leave`); a removal leaving any cell's
customers without a table is undone whole. Z^+ of level b = join_b + open_b Z^+_{b+1}, Z^+_B = phi0's; the path is
drawn from the bottom up. After the tokens, the topic side's re-seating, the corpus levels' and phi0's
(:func:`word_chain.reseat_upper_cells`), one own customer of every cell of levels B-1..1 with more than one customer
is re-seated, level by level from the top (parents first), topic by topic, pairs ascending (the network sampler's
order). Several partitions: the AD-LDA staleness and the race rule at every level
(:mod:`drivers.models.pdp_network.words_column`)."""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, open_exp_table
from inference.pdpnet.reseat import reseat_cells
from inference.pdpnet.sweep import draw_topic, ratio_tables, topic_scratch, topic_zplus_rows
from inference.pdpnet.word_chain import held, leave, level_terms, move, reseat_upper_cells, seat_up, upper_terms
from inference.pdpnet.word_pyp import opens


@token_kernel
def bottom_move(q, k, g, lo, H, d, bn, bt, BN, BT, own_bn, own_bt, mx):
    """Add (d = 1) or remove (d = -1) a customer of pair q, topic k at bottom level ``lo`` whose path holds ``H``
    indicators, the bottom levels' part: the tables of levels lo..lo+H-1, each a customer one level up (up to
    level B-1; phi0's customer is :func:`word_chain.move`'s)."""
    B = bn.shape[0]
    for b in range(lo, min(lo + H, B - 1) + 1):
        own_bn[b, q, k] += d
        bn[b, q, k] += d
        BN[b, g, k] += d
        mx[0] = max(mx[0], bn[b, q, k])
        if b < lo + H:
            own_bt[b, q, k] += d
            bt[b, q, k] += d
            BT[b, g, k] += d
            mx[1] = max(mx[1], bt[b, q, k])


@token_kernel
def stack_move(q, u, k, g, lo, H, d, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup,
               own_n, own_t, own_c, own_up, mx):
    """:func:`bottom_move`, and when the path holds every bottom level's table from ``lo`` up, its customer at
    phi0 with the rest of the path (:func:`word_chain.move`)."""
    B = bn.shape[0]
    bottom_move(q, k, g, lo, H, d, bn, bt, BN, BT, own_bn, own_bt, mx)
    if H >= B - lo:
        move(u, k, 0, H - (B - lo), d, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)


@token_kernel
def stack_leave(q, u, k, g, lo, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n,
                own_t, own_c, own_up, mx):
    """Remove an own customer of pair q, topic k at bottom level ``lo`` (held draws level by level up, through
    :func:`word_chain.leave` past level B-1); returns its path's indicators H, or -1 when the removal left a cell's
    customers without a table (undone: an identity move)."""
    B = bn.shape[0]
    hb = 0
    for b in range(lo, B):
        if not held(own_bn[b, q, k], own_bt[b, q, k]):
            break
        hb += 1
    h = 0
    if hb == B - lo:
        h = leave(u, k, 0, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
        if h < 0:
            return -1
    bottom_move(q, k, g, lo, hb, -1, bn, bt, BN, BT, own_bn, own_bt, mx)
    for b in range(lo, lo + hb):
        if bt[b, q, k] == 0 and bn[b, q, k] > 0:
            stack_move(q, u, k, g, lo, hb + h, 1, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup,
                       Cup, Tup, own_n, own_t, own_c, own_up, mx)
            return -1
    return hb + h


@token_kernel
def bottom_terms(q, k, g, lo, bn, bt, BN, BT, avals, bvals, pbs, bbs, gbs, RJ, EO, z, JB, XB):
    """Z^+ of pair q's cells at topic k from level B-1 down to ``lo`` over phi0's ``z`` (terms in ``JB``/``XB``)."""
    for b in range(bn.shape[0] - 1, lo - 1, -1):
        c = bn[b, q, k]
        t = bt[b, q, k]
        p = pbs[b]
        jb, xb = level_terms(c, t, BN[b, g, k], BT[b, g, k], avals[p], bvals[bbs[b]], gbs[b], gbs[b], RJ[p, c, t],
                             EO[p, c, t], z)
        JB[b] = jb
        XB[b] = xb
        z = jb
        z += xb
    return z


@token_kernel
def draw_path(lo, B, JB, XB, j0, x0, L, JL, XL):
    """The indicators of a path seated at bottom level ``lo``, drawn level by level from the bottom up."""
    H = 0
    for b in range(lo, B):
        if not opens(JB[b], XB[b]):
            return H
        H += 1
    if opens(j0, x0):
        H += 1 + seat_up(1, L, JL, XL)
    return H


@token_kernel
def reseat_bottom_cells(first, last, P, K, L, rows, cols, pword, pval, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc,
                        Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx, avals, bvals, pbs, bbs, gbs,
                        pl, bl, gl, gsl, RJ, EO, beta0, V, JL, XL, ZL, JB, XB):
    """Re-seat one own customer of every cell of bottom levels B-1..1 with more than one customer (cells from
    ``first`` to ``last``: level by level from the top, topic by topic, pairs ascending). Returns the cell to resume
    at when the Stirling tables must grow first, else -1."""
    B = bn.shape[0]
    p0 = pl[0]
    for cell in range(first, last):
        b = B - 1 - cell // (K * P)
        k = (cell // P) % K
        q = cell % P
        if bn[b, q, k] <= 1 or own_bn[b, q, k] == 0:
            continue
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return cell
        u = pword[q]
        g = pval[q]
        H = stack_leave(q, u, k, g, b, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup,
                        own_n, own_t, own_c, own_up, mx)
        if H < 0:
            continue
        upper_terms(u, 1, L, tloc, Tk, cup, tup, Cup, Tup, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V, JL, XL,
                    ZL)
        c = nloc[u, k]
        t = tloc[u, k]
        j0, x0 = level_terms(c, t, Nk[k], Tk[k], avals[p0], bvals[bl[0]], gl[0], gsl[0], RJ[p0, c, t], EO[p0, c, t],
                             ZL[1])
        z0 = j0
        z0 += x0
        bottom_terms(q, k, g, b, bn, bt, BN, BT, avals, bvals, pbs, bbs, gbs, RJ, EO, z0, JB, XB)
        H = draw_path(b, B, JB, XB, j0, x0, L, JL, XL)
        stack_move(q, u, k, g, b, H, 1, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup,
                   own_n, own_t, own_c, own_up, mx)
    return -1


@numba.njit(cache=True, error_model="numpy")
def stack_word_sweep(start, reseed, seed, pidx, pword, pval, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                     a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s,
                     Se, eoff, mx, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n,
                     own_t, own_c, own_up, pbs, bbs, gbs, pl, bl, gl, gsl, beta0, V):
    """One cycle from ``start`` (module docstring); token i's pair ``pidx[i]``, a pair's word (row of ``nloc``)
    ``pword`` and value ``pval``; bottom level b's (B, P, K) cells, (B, G, K) restaurants, discount
    ``avals[pbs[b]]``, concentration ``bvals[bbs[b]]``, parent gamma ``gbs[b]``; phi0 and the corpus levels' as
    :func:`word_chain.chain_word_sweep`'s. Returns -1 when done or the position to resume from once the Stirling
    table covers max c + 2 and max t + 2 (``mx``)."""
    if reseed:
        np.random.seed(seed)
    N = pidx.shape[0]
    K = nloc.shape[1]
    U = nloc.shape[0]
    L = cup.shape[1]
    B = bn.shape[0]
    P = bn.shape[1]
    J = kind.shape[0]
    Z, terms, Zb, slot, pnA, peA, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    JL = np.zeros(L + 2)
    XL = np.zeros(L + 2)
    ZL = np.zeros(L + 2)
    JB = np.zeros(B)
    XB = np.zeros(B)
    rows = L3.shape[1]
    cols = L3.shape[2]
    RJ, RO = ratio_tables(L3)
    EO = open_exp_table(L3)
    p0 = pl[0]
    a0 = avals[p0]
    b0 = bvals[bl[0]]
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        q = pidx[i]
        u = pword[q]
        g = pval[q]
        jt = topic_inst[i]
        k0 = z[i]
        da, ia = remove_path(jt, k0, True, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se,
                             eoff, mx)
        H = stack_leave(q, u, k0, g, 0, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup,
                        own_n, own_t, own_c, own_up, mx)
        if ia or H < 0:
            undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            if H >= 0:
                stack_move(q, u, k0, g, 0, H, 1, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup,
                           Cup, Tup, own_n, own_t, own_c, own_up, mx)
            pos += 1
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
            z0 = j0
            z0 += x0
            zw = bottom_terms(q, kk, g, 0, bn, bt, BN, BT, avals, bvals, pbs, bbs, gbs, RJ, EO, z0, JB, XB)
            total += Zb[r, kk] * zw
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("stack_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
        k = draw_topic(cum, total, K)
        for x in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[x]] = Zb[slot[anc[x]], k]
        add_path_r(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        c = nloc[u, k]
        t = tloc[u, k]
        j0, x0 = level_terms(c, t, Nk[k], Tk[k], a0, b0, gl[0], gsl[0], RJ[p0, c, t], EO[p0, c, t], ZL[1])
        z0 = j0
        z0 += x0
        bottom_terms(q, k, g, 0, bn, bt, BN, BT, avals, bvals, pbs, bbs, gbs, RJ, EO, z0, JB, XB)
        H = draw_path(0, B, JB, XB, j0, x0, L, JL, XL)
        stack_move(q, u, k, g, 0, H, 1, L, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup,
                   own_n, own_t, own_c, own_up, mx)
        z[i] = k
        pos += 1
    ncell = off[J]
    if pos < N + ncell:
        back = reseat_cells(pos, N, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
                            avals, bvals, L3, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, anc_ptr, anc,
                            Z, np.empty((K, maxanc)), np.empty((K, maxanc, maxpar)),
                            np.zeros(K, np.int64), np.full(maxanc, -1, np.int64), np.zeros(J, np.int64), pnA, peA)
        if back >= 0:
            return back
        pos = N + ncell
    upper = (L + K) * U
    if pos < N + ncell + upper:
        back = reseat_upper_cells(pos - N - ncell, upper, U, L, rows, cols, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup,
                                  own_n, own_t, own_c, own_up, mx, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V,
                                  JL, XL, ZL, a0, b0, p0)       # corpus levels L..1, then phi0 topic by topic
        if back >= 0:
            return N + ncell + back
        pos = N + ncell + upper
    back = reseat_bottom_cells(pos - N - ncell - upper, (B - 1) * K * P, P, K, L, rows, cols, pword, pval, bn, bt,
                               BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c,
                               own_up, mx, avals, bvals, pbs, bbs, gbs, pl, bl, gl, gsl, RJ, EO, beta0, V, JL, XL, ZL,
                               JB, XB)      # bottom levels B-1..1, topic by topic
    return -1 if back < 0 else N + ncell + upper + back
