"""A word side indexed by [topic, column:NAME] on the Gibbs engine (issue 28; Chen, Buntine et al.'s differential
topic models): phi[k, g] ~ PYP(a, b, phi0_k) per topic and value g of a document's kept column, phi0_k ~ PYP over
the uniform, a Dirichlet root or a chain of corpus-level Pitman-Yor word vectors (:mod:`inference.pdpnet.
word_chain`, whose level 0 phi0 is here: its customers are the tables of the phi[k, g] above it).

The bottom level's cells are the pairs (g, w) of a partition's tokens: customers ``bn`` and indicators ``bt`` (P x
K, global), the restaurants (g, k) ``BN``/``BT`` (G x K), the partition's own ``own_bn`` (its tokens) and
``own_bt``. The moves are the network sampler's with its random numbers in its order (one partition: draw for
draw, tested): a token leaves its pair's cell (held one of its partition's indicators with probability t^p/c^p,
then leaves phi0 and up as :func:`word_chain.leave`), Z^+ = join_b + open_b Z_phi0(k), the path drawn from the
bottom up; after the tokens, the topic side's and the corpus levels' re-seating, one own customer of every phi0
cell with more than one customer is re-seated, topic by topic, words ascending (the network sampler's order).
Several partitions: the AD-LDA staleness and the race rule at every level (:mod:`drivers.models.pdp_network.words_column`)."""
from __future__ import annotations

import numba
import numpy as np

from inference.pdpnet.kernels import remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, open_exp_table
from inference.pdpnet.reseat import reseat_cells
from inference.pdpnet.sweep import draw_topic, ratio_tables, topic_scratch, topic_zplus_rows
from inference.pdpnet.word_chain import held, leave, level_terms, move, reseat_upper_cells, seat_up, upper_terms
from inference.pdpnet.word_pyp import opens


@numba.njit(cache=True, error_model="numpy")
def column_word_sweep(start, reseed, seed, pidx, pword, pval, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                      a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s,
                      Se, eoff, mx, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n,
                      own_t, own_c, own_up, pb, bb, gb, pl, bl, gl, gsl, beta0, V):
    """One cycle from ``start`` (module docstring); token i's pair ``pidx[i]``, a pair's word (row of ``nloc``)
    ``pword`` and value ``pval``; the bottom level's discount ``avals[pb]``, concentration ``bvals[bb]``, parent
    gamma ``gb``; phi0 and the corpus levels' as :func:`word_chain.chain_word_sweep`'s. Returns -1 when done or
    the position to resume from once the Stirling table covers max c + 2 and max t + 2 (``mx``)."""
    if reseed:
        np.random.seed(seed)
    N = pidx.shape[0]
    K = nloc.shape[1]
    U = nloc.shape[0]
    L = cup.shape[1]
    J = kind.shape[0]
    Z, terms, Zb, slot, pnA, peA, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    JL = np.zeros(L + 2)
    XL = np.zeros(L + 2)
    ZL = np.zeros(L + 2)
    rows = L3.shape[1]
    cols = L3.shape[2]
    RJ, RO = ratio_tables(L3)
    EO = open_exp_table(L3)
    ab = avals[pb]
    bB = bvals[bb]
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
        hb = held(own_bn[q, k0], own_bt[q, k0])
        h = 0
        if hb:
            h = leave(u, k0, 0, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
        d = 1 if hb else 0
        own_bn[q, k0] -= 1
        bn[q, k0] -= 1
        BN[g, k0] -= 1
        own_bt[q, k0] -= d
        bt[q, k0] -= d
        BT[g, k0] -= d
        if ia or h < 0 or (hb and bt[q, k0] == 0 and bn[q, k0] > 0):
            undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            if hb and h >= 0:
                move(u, k0, 0, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
            own_bn[q, k0] += 1
            bn[q, k0] += 1
            BN[g, k0] += 1
            own_bt[q, k0] += d
            bt[q, k0] += d
            BT[g, k0] += d
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
            c = bn[q, kk]
            t = bt[q, kk]
            jb, xb = level_terms(c, t, BN[g, kk], BT[g, kk], ab, bB, gb, gb, RJ[pb, c, t], EO[pb, c, t], z0)
            zw = jb
            zw += xb
            total += Zb[r, kk] * zw
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("column_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
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
        c = bn[q, k]
        t = bt[q, k]
        jb, xb = level_terms(c, t, BN[g, k], BT[g, k], ab, bB, gb, gb, RJ[pb, c, t], EO[pb, c, t], z0)
        d = 0
        if opens(jb, xb):
            d = 1
            h = 0
            if opens(j0, x0):
                h = 1 + seat_up(1, L, JL, XL)
            move(u, k, 0, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
        own_bn[q, k] += 1
        bn[q, k] += 1
        BN[g, k] += 1
        own_bt[q, k] += d
        bt[q, k] += d
        BT[g, k] += d
        mx[0] = max(mx[0], bn[q, k])
        mx[1] = max(mx[1], bt[q, k])
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
    back = reseat_upper_cells(pos - N - ncell, (L + K) * U, U, L, rows, cols, nloc, tloc, Nk, Tk, cup, tup, Cup,
                              Tup, own_n, own_t, own_c, own_up, mx, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V,
                              JL, XL, ZL, a0, b0, p0)       # corpus levels L..1, then phi0 topic by topic
    return -1 if back < 0 else N + ncell + back
