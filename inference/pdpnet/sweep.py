"""The network sampler's cycle over a corpus (one numba kernel), built from the moves of
:mod:`inference.pdpnet.kernels` (001_003 extract §2.4-2.6).

Speed (issue 28, 1): a token's topic conditional needs Z^+_topic(k) for every k. It is computed one vector at a
time over all K values (:func:`topic_zplus_rows`): the token's topic vector and its ancestors, parents first,
each a tight loop over k whose parent terms read the parents' rows; the per-vector factors (b + C, b + a T,
(gamma_e + S_e)/(sum gamma + T)) are taken out of the loop. When the topic vector is a Dirichlet root its
row is left unnormalised (alpha + c_k: the denominator is the same for every k), and with the engine's word
table the word factor is (n_wk + beta) * inv_k with inv_k = 1/(n_k + V beta) kept per topic: for lda.json
this is the collapsed LDA kernel's arithmetic, operation for operation.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.kept_rows import (add_path_kept, enter_vector, kept_topic_row, max_row_drift, raw_cell,
                                        raw_rows, stale_from)
from inference.pdpnet.kernels import DIR, PYP, UNI, remove_path, undo_path
from inference.pdpnet.rho import rho_den, rho_num
from inference.pdpnet.ratio_path import add_path_r, eval_zplus_r, open_exp_table
from inference.pdpnet.reseat import reseat_cells


@token_kernel
def graph_widths(par_ptr, anc_ptr, J):
    """(most parents of a vector + 1, longest ancestor list) of the compiled graph: the kernels' scratch sizes."""
    maxpar = 1
    maxanc = 1
    for j in range(J):
        maxpar = max(maxpar, par_ptr[j + 1] - par_ptr[j] + 1)
        maxanc = max(maxanc, anc_ptr[j + 1] - anc_ptr[j])
    return maxpar, maxanc


@numba.njit(cache=True)
def topic_scratch(par_ptr, anc_ptr, J, K):
    """The topic side's scratch of a sweep kernel (one place for the header the kernels repeat): Z (J,), terms
    (maxpar,), Zb (maxanc, K), slot (J,), a removed path's nodes and edges (J + 1,), cum (K,), maxpar, maxanc."""
    maxpar, maxanc = graph_widths(par_ptr, anc_ptr, J)
    return (np.zeros(J), np.zeros(maxpar), np.zeros((maxanc, K)), np.zeros(J, np.int64), np.empty(J + 1, np.int64),
            np.empty(J + 1, np.int64), np.empty(K), maxpar, maxanc)


@token_kernel
def draw_topic(cum, total, K):
    """The topic of the cumulative weights ``cum[:K]`` (sum ``total``); one topic: forced, no random number."""
    u = np.random.random() * total if K > 1 else 0.0
    k = 0
    while k < K - 1 and cum[k] <= u:
        k += 1
    return k


@token_kernel
def topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                     par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se):
    """``Zb[r, k]`` = Z^+ of value k at the r-th ancestor of ``jt`` (ascending ids, parents first; ``slot[x]``
    = r), for every k, with the formulas of :func:`kernels.node_terms` and the Stirling ratios of
    :func:`ratio_tables`; returns the row of ``jt``, which is unnormalised when ``jt`` is a Dirichlet root."""
    r = 0
    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
        x = anc[q]
        slot[x] = r
        o = off[x]
        C = Nn[x] + TC[x]
        kd = kind[x]
        row = Zb[r]
        if kd == DIR:
            ax = alpha[x]
            if x == jt:
                for k in range(K):
                    row[k] = ax + (n[o + k] + tc[o + k])
            else:
                iden = 1.0 / (ax * dim[x] + C)
                for k in range(K):
                    row[k] = (ax + (n[o + k] + tc[o + k])) * iden
        elif kd == UNI:
            u = 1.0 / dim[x]
            for k in range(K):
                row[k] = u
        else:
            p = a_of[x]
            a = avals[p]
            b = bvals[b_of[x]]
            T = TP[x]
            gs = gamma_sum[x]
            e0, e1 = par_ptr[x], par_ptr[x + 1]
            bc = b + C
            lead = 1.0 if b == np.inf else (b + a * T) / bc     # b infinite: a mixture node
            Jp = RJ[p]
            Op = RO[p]
            if e1 - e0 == 1:                      # one parent: its factor and row out of the loop
                pr = Zb[slot[par_node[e0]]]
                f = lead * (par_gamma[e0] + Se[e0]) / (gs + T)
                ibc = 1.0 / bc
                if TC[x] == 0:                    # no children's tables: c = n
                    for k in range(K):
                        c = n[o + k]
                        t = tp[o + k]
                        row[k] = Jp[c, t] * ibc + f * Op[c, t] * pr[k]
                else:
                    for k in range(K):
                        c = n[o + k] + tc[o + k]
                        t = tp[o + k]
                        row[k] = Jp[c, t] * ibc + f * Op[c, t] * pr[k]
                r += 1
                continue
            for k in range(K):
                c = n[o + k] + tc[o + k]
                t = tp[o + k]
                join = Jp[c, t] / bc
                opn = lead * Op[c, t]
                total = join
                for e in range(e0, e1):
                    total += opn * rho_num(par_gamma[e], Se[e], gs) / rho_den(gs, T) * Zb[slot[par_node[e]], k]
                row[k] = total
        r += 1
    return r - 1


@token_kernel
def pyp_over_root_row(jt, w, K, Zb, slot, cum, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                      gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se, nwk, inv, beta, frozen_phi, frozen):
    """:func:`topic_zplus_rows` and the engine's word factor in one loop over k for a Pitman-Yor topic vector
    ``jt`` whose one parent is a Dirichlet root (its ancestors: the root, slot 0, and itself, slot 1), the same
    arithmetic operation for operation; fills ``cum`` and returns the sum."""
    e0 = par_ptr[jt]
    q = par_node[e0]
    slot[q] = 0
    slot[jt] = 1
    oq = off[q]
    aq = alpha[q]
    Cq = Nn[q] + TC[q]
    iden = 1.0 / (aq * dim[q] + Cq)
    o = off[jt]
    p = a_of[jt]
    a = avals[p]
    b = bvals[b_of[jt]]
    T = TP[jt]
    bc = b + (Nn[jt] + TC[jt])
    lead = 1.0 if b == np.inf else (b + a * T) / bc         # b infinite: a mixture node
    f = lead * (par_gamma[e0] + Se[e0]) / (gamma_sum[jt] + T)
    ibc = 1.0 / bc
    Jp = RJ[p]
    Op = RO[p]
    pr = Zb[0]
    row = Zb[1]
    total = 0.0
    for k in range(K):
        pr[k] = (aq + (n[oq + k] + tc[oq + k])) * iden
        c = n[o + k] + tc[o + k]
        t = tp[o + k]
        x = Jp[c, t] * ibc + f * Op[c, t] * pr[k]
        row[k] = x
        if frozen:
            total += x * frozen_phi[w, k]
        else:
            total += x * (nwk[w, k] + beta) * inv[k]
        cum[k] = total
    return total


@numba.njit(cache=True)
def ratio_tables(L3):
    """``RJ[p, c, t]`` = S^{c+1}_t / S^c_t (c+1-t)/(c+1) (0 for c = 0: no table to join) and ``RO[p, c, t]`` =
    S^{c+1}_{t+1} / S^c_t (t+1)/(c+1), the Stirling factors of joining and opening a table (node_terms), for
    every stored (c, t) with t <= c; 0 elsewhere (never read in a legal state)."""
    P, R, M = L3.shape
    RJ = np.zeros((P, R - 1, M - 1))
    RO = np.zeros((P, R - 1, M - 1))
    for p in range(P):
        for c in range(R - 1):
            for t in range(min(c + 1, M - 1)):
                base = L3[p, c, t]
                if c > 0:
                    RJ[p, c, t] = math.exp(L3[p, c + 1, t] - base) * (c + 1 - t) / (c + 1)
                RO[p, c, t] = math.exp(L3[p, c + 1, t + 1] - base) * (t + 1) / (c + 1)
    return RJ, RO


@numba.njit(cache=True, error_model="numpy")
def network_sweep(start, reseed, seed, reseat, words, z, topic_inst, word_inst, anc_ptr, anc, kind, dim, off,
                  alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC,
                  TP, s, Se, eoff, mx, init, ext_word, nwk, nk, beta, frozen_phi, frozen, drift):
    """One cycle from position ``start``: every token (``init``: add token i with its topic z[i] instead), then,
    with ``reseat``, one re-seating of a customer of every occupied Pitman-Yor cell. Returns -1 when done, or the
    position to resume from once the Stirling table covers max c + 2 and max t + 2 (``mx``).

    ``ext_word``: the word side is the Gibbs engine's topic-word table instead of the network's own cells (a
    Dirichlet(beta) family indexed by topic): the word factor is (nwk[w, k] + beta) / (nk[k] + V beta), or
    ``frozen_phi[w, k]`` with ``frozen`` (then nwk/nk stay untouched).

    A Pitman-Yor topic vector's Z^+ rows (other than a Pitman-Yor vector over one Dirichlet root, STM) are kept
    from token to token (:mod:`inference.pdpnet.kept_rows`). ``drift`` (size 1, else size 0): recompute them
    from scratch at every token and keep the largest relative difference in drift[0] (0.0: they are exact)."""
    if reseed:
        np.random.seed(seed)
    N = words.shape[0]
    K = word_inst.shape[1]
    J = kind.shape[0]
    Z, terms, Zb, slot, pnA, peA, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    pnB = np.empty(J + 1, np.int64)
    peB = np.empty(J + 1, np.int64)
    vbeta = nwk.shape[0] * beta
    inv = np.empty(K)
    if ext_word and not frozen:
        for k in range(K):
            inv[k] = 1.0 / (nk[k] + vbeta)
    ZA = np.zeros((maxanc, K))
    ZB = np.zeros((maxanc, K))
    zr = np.zeros(K)
    SC = np.zeros((maxanc, maxpar))       # the kept Pitman-Yor rows' topic-free factors (kept_rows.pyp_scalars)
    kept_node = np.full(maxanc, -1, np.int64)
    kslot = np.zeros(J, np.int64)
    JR = np.zeros((maxanc, K))
    OR = np.zeros((maxanc, K))
    cur, fresh, rf, rawok = -1, 0, -1, 0
    check = drift.shape[0] > 0
    Zb2 = np.zeros((maxanc, K)) if check else Zb
    rows = L3.shape[1]
    cols = L3.shape[2]
    RJ, RO = ratio_tables(L3)
    EO = open_exp_table(L3)
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        w = words[i]
        jt = topic_inst[i]
        kept = False
        if init:
            k = z[i]
            eval_zplus_r(jt, k, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                       par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
        else:
            k0 = z[i]
            kept = kind[jt] == PYP and not (ext_word and par_ptr[jt + 1] - par_ptr[jt] == 1
                                            and kind[par_node[par_ptr[jt]]] == DIR)
            if kept:
                fresh, rf, same = enter_vector(jt, cur, fresh, rf, kept_node, kslot, anc_ptr, anc, kind, par_ptr,
                                               par_node)
                rawok = min(rawok, same)
                cur = jt
            else:                                               # its paths may change the slots' factors
                rawok = 0
            da, ia = remove_path(jt, k0, True, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s,
                                 Se, eoff, mx)
            db, ib = 0, False
            if not ext_word:
                db, ib = remove_path(word_inst[i, k0], w, True, pnB, peB, kind, off, par_ptr, par_node, n, tc, tp,
                                     Nn, TC, TP, s, Se, eoff, mx)
            if ia or ib:
                undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                undo_path(db, w, True, pnB, peB, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                pos += 1
                continue
            fresh = stale_from(fresh, pnA[da - 1], pnA[da - 2] if da > 1 else -1, rf, kept_node, kslot)
            if kept:
                for d in range(da):
                    raw_cell(pnA[d], k0, rawok, JR, OR, kept_node, kslot, kind, off, a_of, RJ, RO, n, tc, tp)
            if db > 0:
                fresh = stale_from(fresh, pnB[db - 1], pnB[db - 2] if db > 1 else -1, rf, kept_node, kslot)
            if ext_word and not frozen:
                nwk[w, k0] -= 1
                nk[k0] -= 1
                inv[k0] = 1.0 / (nk[k0] + vbeta)
            total = 0.0
            r = -1
            if kind[jt] == DIR and ext_word and not frozen:    # a Dirichlet root's row fused with the word factor
                o = off[jt]
                ax = alpha[jt]
                if TC[jt] == 0:                                 # no children's tables: tc is zero
                    for kk in range(K):
                        total += (ax + n[o + kk]) * (nwk[w, kk] + beta) * inv[kk]
                        cum[kk] = total
                else:
                    for kk in range(K):
                        total += (ax + (n[o + kk] + tc[o + kk])) * (nwk[w, kk] + beta) * inv[kk]
                        cum[kk] = total
            elif ext_word and kind[jt] == PYP and par_ptr[jt + 1] - par_ptr[jt] == 1 \
                    and kind[par_node[par_ptr[jt]]] == DIR:     # a PYP over one Dirichlet root (STM): one loop
                total = pyp_over_root_row(jt, w, K, Zb, slot, cum, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                          par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC,
                                          TP, Se, nwk, inv, beta, frozen_phi, frozen)
                r = -2
            elif kept:
                last = anc_ptr[jt + 1] - anc_ptr[jt] - 1
                raw_rows(rawok, last + 1, K, JR, OR, kept_node, kind, off, a_of, RJ, RO, n, tc, tp)
                rawok = last + 1
                total = kept_topic_row(jt, K, fresh, rf, ZA, ZB, zr, SC, Zb[last], JR, OR, kept_node, kslot, anc_ptr,
                                       kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
                                       avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se, ext_word, w, nwk, inv, beta,
                                       frozen_phi, frozen, cum, True)
                fresh = last
                r = -2 if ext_word else last
                if check:
                    r2 = topic_zplus_rows(jt, K, Zb2, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                                          par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp,
                                          Nn, TC, TP, Se)
                    drift[0] = max_row_drift(drift[0], Zb[last], Zb2[r2], K)
            else:
                r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                     par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
            if r < 0:
                pass
            elif ext_word and frozen:
                for kk in range(K):
                    total += Zb[r, kk] * frozen_phi[w, kk]
                    cum[kk] = total
            elif ext_word:
                for kk in range(K):
                    total += Zb[r, kk] * (nwk[w, kk] + beta) * inv[kk]
                    cum[kk] = total
            else:
                for kk in range(K):
                    zw = eval_zplus_r(word_inst[i, kk], w, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                                    par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC,
                                    TP, Se)
                    total += Zb[r, kk] * zw
                    cum[kk] = total
            if not (total > 0.0 and total < np.inf):
                raise FloatingPointError("network_sweep: a token's topic weights sum to NaN, inf or 0")
            k = draw_topic(cum, total, K)
            if r != -1 and not kept:
                for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                    x = anc[q]
                    Z[x] = Zb[slot[x], k]
        if kept:
            prev, last = add_path_kept(jt, k, ZA, ZB, zr, rf, kslot, JR, OR, SC, rawok, kept_node, terms, kind, off,
                                       a_of, par_ptr, par_node, RJ, RO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        else:
            prev, last = add_path_r(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                                    par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                                    mx)
        fresh = stale_from(fresh, last, prev, rf, kept_node, kslot)
        if ext_word:
            if not frozen:
                nwk[w, k] += 1
                nk[k] += 1
                inv[k] = 1.0 / (nk[k] + vbeta)
        else:
            jw = word_inst[i, k]
            eval_zplus_r(jw, w, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                       par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
            prev, last = add_path_r(jw, w, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                                    par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            fresh = stale_from(fresh, last, prev, rf, kept_node, kslot)
        z[i] = k
        pos += 1
    if init or not reseat:
        return -1
    D = max(K, dim.max())       # the values of a re-seated vector: topics, or words (a chain of word vectors)
    return reseat_cells(pos, N, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals,
                        bvals, L3, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, anc_ptr, anc, Z,
                        np.empty((D, maxanc)), np.empty((D, maxanc, maxpar)), np.zeros(D, np.int64),
                        np.full(maxanc, -1, np.int64), np.zeros(J, np.int64), pnA, peA)
