"""A chain of Pitman-Yor word vectors on the Gibbs engine (issue 28; hca's word side): phi_k ~ PYP(a_0, b_0, nu_1)
per topic, nu_l ~ PYP(a_l, b_l, nu_{l+1}) for l = 1..L corpus-level vectors over words, nu_{L+1} a Dirichlet(beta0)
root or the fixed uniform 1/V. With L = 0 it is pyp-lda's side (:mod:`inference.pdpnet.word_pyp`, which keeps its
own sweep).

Global state (summed over partitions): level 0's customers n_wk and indicators t_wk (V x K), level l's customers
c_lw = the tables of level l-1 (c_1w = sum_k t_wk, c_lw = t_{l-1,w}) and indicators t_lw (V x L), the totals N_k,
T_k, C_l, T_l; the root's customers are t_Lw. **Ownership** (as word_pyp's): an indicator is held by a customer,
so by its partition: a partition holds its customers n^p_wk (from z), c^p_lw (its own indicators one level down)
and the indicators they hold, t^p_wk and t^p_lw (0 <= t^p <= c^p), and the global counts are their sums. A
partition sweeps local copies of the global counts over its block's distinct words (U): ``nloc``/``tloc`` (U x K),
``cup``/``tup`` (U x L), ``Nk``/``Tk`` (K,), ``Cup``/``Tup`` (L,), with its own ``own_n``/``own_t``/``own_c``/
``own_up``.

Moves, the network sampler's (:mod:`inference.pdpnet.kernels`, the same random numbers in the same order): a
leaving customer at a level held one of its partition's indicators with probability t^p/c^p (drawn as
``remove_path``: r = u c^p, held when r >= c^p - t^p; forced, no random number, when t^p = c^p or t^p = 0) and
then leaves the level above likewise; a removal that leaves a cell's customers without a table is undone whole.
The increment of word w at topic k: Z^+ = join_0 + open_0 Z_1(w), Z_l(w) = join_l + open_l Z_{l+1}(w), Z_{L+1}(w)
the root's predictive (E14/E15 in table-indicator form, :func:`kernels.pyp_terms`' arithmetic operation for
operation), the path drawn level by level as ``add_path``. After the tokens and the topic side's re-seating, one
own customer of every upper cell with more than one customer is re-seated, levels from the root down (the network
sampler's order: parents have smaller ids), words ascending. With one partition this is the network sampler's
sweep draw for draw (tested); with several, the AD-LDA staleness and word_pyp's race rule at every level
(:func:`drivers.models.pdp_network.words_chain.local_arrays`).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, open_exp_table
from inference.pdpnet.reseat import reseat_cells
from inference.pdpnet.rho import rho_den, rho_num
from inference.pdpnet.sweep import draw_topic, ratio_tables, topic_scratch, topic_zplus_rows
from inference.pdpnet.word_pyp import opens


@token_kernel
def level_terms(c, t, C, T, a, b, g, gs, rj, eo, zpar):
    """(join, open) of a Pitman-Yor cell with c customers, t tables in a restaurant of C, T: join = RJ / (b + C),
    open = (b + a T)/(b + C) EO (t+1)/(c+1) rho Z_parent (:func:`kernels.pyp_terms`, the same operations)."""
    join = 0.0
    if c > 0:
        join = rj / (b + C)
    opn = (b + a * T) / (b + C) * eo * (t + 1) / (c + 1)
    return join, opn * rho_num(g, T, gs) / rho_den(gs, T) * zpar


@token_kernel
def held(c, t):
    """Whether a leaving customer of a cell where its partition has c customers and t indicators held one
    (``remove_path``'s draw; forced when t = c or t = 0)."""
    if t == 0:
        return False
    if t >= c:
        return True
    return np.random.random() * c >= c - t


@token_kernel
def upper_terms(u, lo, L, tloc, Tk, cup, tup, Cup, Tup, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V, JL, XL,
                ZL):
    """Z^+ of word u's cells at levels L..lo (``ZL[l]``, terms ``JL``/``XL``), the root's predictive in ZL[L+1]
    (its customers the top level's tables: with L = 0 the per-topic level's, sum_k t_uk)."""
    if beta0 <= 0.0:
        ZL[L + 1] = 1.0 / V
    elif L == 0:
        c = 0
        C = 0
        for k in range(tloc.shape[1]):
            c += tloc[u, k]
            C += Tk[k]
        ZL[1] = (beta0 + c) / (beta0 * V + C)
    else:
        ZL[L + 1] = (beta0 + tup[u, L - 1]) / (beta0 * V + Tup[L - 1])
    for l in range(L, lo - 1, -1):
        c = cup[u, l - 1]
        t = tup[u, l - 1]
        p = pl[l]
        jn, x = level_terms(c, t, Cup[l - 1], Tup[l - 1], avals[p], bvals[bl[l]], gl[l], gsl[l], RJ[p, c, t],
                            EO[p, c, t], ZL[l + 1])
        JL[l] = jn
        XL[l] = x
        total = jn
        total += x
        ZL[l] = total


@token_kernel
def move(u, k, lo, h, d, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx):
    """Add (d = 1) or remove (d = -1) a customer at level ``lo`` (0: cell (u, k)) whose path holds ``h``
    indicators: the tables of levels lo..lo+h-1 and the customers they are one level up."""
    for l in range(lo, min(lo + h, L) + 1):
        if l == 0:
            own_n[u, k] += d
            nloc[u, k] += d
            Nk[k] += d
            mx[0] = max(mx[0], nloc[u, k])
        else:
            own_c[u, l - 1] += d
            cup[u, l - 1] += d
            Cup[l - 1] += d
            mx[0] = max(mx[0], cup[u, l - 1])
        if l < lo + h:
            if l == 0:
                own_t[u, k] += d
                tloc[u, k] += d
                Tk[k] += d
                mx[1] = max(mx[1], tloc[u, k])
            else:
                own_up[u, l - 1] += d
                tup[u, l - 1] += d
                Tup[l - 1] += d
                mx[1] = max(mx[1], tup[u, l - 1])


@token_kernel
def leave(u, k, lo, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx):
    """Remove an own customer at level ``lo`` (the draws of ``remove_path``); returns its path's indicators h, or
    -1 when the removal left a cell's customers without a table (undone: an identity move)."""
    h = 0
    for l in range(lo, L + 1):
        if l == 0:
            hit = held(own_n[u, k], own_t[u, k])
        else:
            hit = held(own_c[u, l - 1], own_up[u, l - 1])
        if not hit:
            break
        h += 1
    move(u, k, lo, h, -1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
    for l in range(lo, min(lo + h, L + 1)):
        if l == 0:
            bad = tloc[u, k] == 0 and nloc[u, k] > 0
        else:
            bad = tup[u, l - 1] == 0 and cup[u, l - 1] > 0
        if bad:
            move(u, k, lo, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
            return -1
    return h


@token_kernel
def seat_up(lo, L, JL, XL):
    """The indicators of a path seated from level ``lo`` (> 0) up, drawn from the terms level by level."""
    h = 0
    for l in range(lo, L + 1):
        if not opens(JL[l], XL[l]):
            break
        h += 1
    return h


@token_kernel
def reseat_upper_cells(first, last, U, L, rows, cols, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c,
                       own_up, mx, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V, JL, XL, ZL, a0, b0, p0):
    """Re-seat one own customer of every upper cell from ``first`` to ``last``: the corpus levels L..1 word by word
    (cells < L U), then phi0 topic by topic (a bottom level's side, with its a0, b0 and discount slot p0). Returns
    the cell to resume at when the Stirling tables must grow first, else -1."""
    for cell in range(first, last):
        u = cell % U
        if cell < L * U:
            lo = L - cell // U
            k = 0
            if cup[u, lo - 1] <= 1 or own_c[u, lo - 1] == 0:
                continue
        else:
            lo = 0
            k = cell // U - L
            if nloc[u, k] <= 1 or own_n[u, k] == 0:
                continue
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return cell
        h = leave(u, k, lo, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
        if h < 0:
            continue
        upper_terms(u, max(lo, 1), L, tloc, Tk, cup, tup, Cup, Tup, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V,
                    JL, XL, ZL)
        if lo == 0:
            c = nloc[u, k]
            t = tloc[u, k]
            j0, x0 = level_terms(c, t, Nk[k], Tk[k], a0, b0, gl[0], gsl[0], RJ[p0, c, t], EO[p0, c, t], ZL[1])
            h = 0
            if opens(j0, x0):
                h = 1 + seat_up(1, L, JL, XL)
        else:
            h = seat_up(lo, L, JL, XL)
        move(u, k, lo, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
    return -1


@numba.njit(cache=True, error_model="numpy")
def chain_word_sweep(start, reseed, seed, uidx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                     par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                     mx, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, pl, bl, gl, gsl,
                     beta0, V):
    """One cycle from position ``start`` (tokens, the topic side's re-seating, the upper cells'): the module
    docstring's moves; level l's discount ``avals[pl[l]]``, concentration ``bvals[bl[l]]``, parent gamma ``gl[l]``
    (``gsl[l]`` its vector's sum). Returns -1 when done or the position to resume from once the Stirling table
    covers max c + 2 and max t + 2 (``mx``)."""
    if reseed:
        np.random.seed(seed)
    N = uidx.shape[0]
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
    p0 = pl[0]
    a0 = avals[p0]
    b0 = bvals[bl[0]]
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        u = uidx[i]
        jt = topic_inst[i]
        k0 = z[i]
        da, ia = remove_path(jt, k0, True, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se,
                             eoff, mx)
        h = leave(u, k0, 0, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
        if ia or h < 0:
            undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            if h >= 0:
                move(u, k0, 0, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
            pos += 1
            continue
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        upper_terms(u, 1, L, tloc, Tk, cup, tup, Cup, Tup, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V, JL, XL, ZL)
        total = 0.0
        for kk in range(K):
            c = nloc[u, kk]
            t = tloc[u, kk]
            jn, x = level_terms(c, t, Nk[kk], Tk[kk], a0, b0, gl[0], gsl[0], RJ[p0, c, t], EO[p0, c, t], ZL[1])
            zw = jn
            zw += x
            total += Zb[r, kk] * zw
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("chain_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
        k = draw_topic(cum, total, K)
        for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[q]] = Zb[slot[anc[q]], k]
        add_path_r(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        c = nloc[u, k]
        t = tloc[u, k]
        jn, x = level_terms(c, t, Nk[k], Tk[k], a0, b0, gl[0], gsl[0], RJ[p0, c, t], EO[p0, c, t], ZL[1])
        h = 0
        if opens(jn, x):
            h = 1 + seat_up(1, L, JL, XL)
        move(u, k, 0, h, 1, L, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c, own_up, mx)
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
    back = reseat_upper_cells(pos - N - ncell, L * U, U, L, rows, cols, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup,
                              own_n, own_t, own_c, own_up, mx, avals, bvals, pl, bl, gl, gsl, RJ, EO, beta0, V, JL,
                              XL, ZL, 0.0, 0.0, 0)      # levels L..1 (parents first), words ascending
    return -1 if back < 0 else N + ncell + back
