"""A test document's customers at shared Pitman-Yor topic vectors in left-to-right (issue 28; the topic side of
:mod:`inference.pdpnet.left_to_right` and :mod:`inference.pdpnet.bigram_left_to_right`), seated by the Chinese
restaurant continued from the trained counts, as the bigram word side's customers are. Pure numba.

At a shared vector x (``shared[x]``; hdp-pyp-lda.json's corpus-level PYP) the trained customers c0 sit at t0
tables, frozen and first. The document's customers come after them: with the trained tables as a group (weight
c0 + g - a t0, g the document's customers that joined it), at one of the tables the document opened (its size
- a), or at a new one ((b + a T) rho_e P_parent(e)(k), its customer sent up edge e to the parent's restaurant).
Given the trained arrangement every probability depends on the counts only and the document's customers are
exchangeable, so a leaving customer is any of the document's customers of its cell with equal chance (the group
with chance g / (c - c0), an own table with chance its size / (c - c0)); an own table it leaves empty closes and
its customer leaves the parent in turn (:func:`doc_remove`). The document's own vectors keep the network
sampler's exact table-indicator moves (:mod:`inference.pdpnet.kernels`); their Z^+ reads a shared parent's
predictive (:func:`doc_rows`), which is the restaurant's ratio of the joint after and before one more customer,
its seat summed out. Adding a customer (:func:`doc_add`) draws its seat at a shared vector from the weights above
(the sequential predictive's terms), at the document's own vectors from their Z^+ terms (resampling) or from the
sequential predictive's (``pred``: the new token of step 3).

Why (session 23): the engine's indicators for the document's customers (a leaving customer holding one of the
document's with chance t^d / c^d, the trained ones frozen; :mod:`inference.pdpnet.owned`) are not that
restaurant, and with resampling the particles' products were biased: E[p-hat]/p = 1.0083 +- 0.0010 on the
document 0 2 1 of tests/kernels/test_pdpnet_left_to_right.py, 0.9485 +- 0.0027 on 1 1 2 2 (200,000 particles).
"""
from __future__ import annotations

import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import DIR, PYP, UNI, _count, forced_edge, seat_table
from inference.pdpnet.ratio_path import path_step_r
from inference.pdpnet.rho import rho_den, rho_num


@token_kernel
def _own_table(cell, u, a, tsize, tcell, hi):
    """The own table of ``cell`` that ``u`` falls in, tables weighted by size - a (the last one on rounding)."""
    last = -1
    for m in range(hi[0]):
        if tsize[m] > 0 and tcell[m] == cell:
            last = m
            if u < tsize[m] - a:
                return m
            u -= tsize[m] - a
    return last


@token_kernel
def doc_remove(j, v, data, shared, c0, grp, tsize, tcell, tedge, hi, pn, pe, pt, kind, off, par_ptr, par_node, n,
               tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Decrement cell (j, v): at a shared vector the leaving customer is one of the document's, each with equal
    chance (module docstring); elsewhere :func:`kernels.remove_path`'s indicator draw. The path goes into ``pn``/
    ``pe``/``pt`` (edge -1: no table removed; ``pt``: the own table it left, -1 the trained group). Returns
    (path length, refused): a move that leaves a cell of the document's own vectors with customers but no table
    is undone (the sampler's identity move)."""
    depth = 0
    while True:
        cell = off[j] + v
        c = n[cell] + tc[cell]
        _count(j, cell, data, -1, n, tc, Nn, TC, mx, False)
        pn[depth] = j
        pe[depth] = -1
        pt[depth] = -1
        depth += 1
        if kind[j] != PYP:
            break
        e = par_ptr[j]
        e1 = par_ptr[j + 1] - 1
        if shared[j]:
            u = np.random.random() * (c - c0[cell])
            if u < grp[cell]:
                grp[cell] -= 1
                break
            m = _own_table(cell, u - grp[cell], 0.0, tsize, tcell, hi)
            pt[depth - 1] = m
            tsize[m] -= 1
            if tsize[m] > 0:
                break
            e = tedge[m]
        else:
            t = tp[cell]
            if t < c:
                r = np.random.random() * c
                if r < c - t:
                    break
                r -= c - t
                while e < e1 and r >= s[eoff[e] + v]:
                    r -= s[eoff[e] + v]
                    e += 1
            elif e < e1:                        # t = c: it held a table for certain; at which parent
                e = forced_edge(e, e1, v, t, s, eoff)
        pe[depth - 1] = e
        s[eoff[e] + v] -= 1
        Se[e] -= 1
        tp[cell] -= 1
        TP[j] -= 1
        j = par_node[e]
        data = False
    refused = False
    for d in range(depth):
        x = pn[d]
        cell = off[x] + v
        if pe[d] >= 0 and not shared[x] and tp[cell] == 0 and n[cell] + tc[cell] > 0:
            refused = True
    if refused:
        for d in range(depth):
            x = pn[d]
            cell = off[x] + v
            _count(x, cell, data and d == 0, 1, n, tc, Nn, TC, mx, False)
            if shared[x] and kind[x] == PYP:
                if pt[d] < 0:
                    grp[cell] += 1
                else:
                    tsize[pt[d]] += 1
            e = pe[d]
            if e >= 0:
                tp[cell] += 1
                TP[x] += 1
                s[eoff[e] + v] += 1
                Se[e] += 1
    return depth, refused


@token_kernel
def doc_rows(jt, K, Zb, slot, shared, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
             gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se):
    """``Zb[r, k]``: Z^+ of value k at the r-th ancestor of ``jt`` (ascending ids, parents first; ``slot[x]`` =
    r): a root's and a shared vector's predictive (:func:`inference.pdpnet.left_to_right.predictive_rows`), a
    document vector's table-indicator Z^+ (:func:`inference.pdpnet.sweep.topic_zplus_rows`). Returns jt's row."""
    r = 0
    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
        x = anc[q]
        slot[x] = r
        o = off[x]
        C = Nn[x] + TC[x]
        if kind[x] == DIR:
            den = alpha[x] * dim[x] + C
            for k in range(K):
                Zb[r, k] = (alpha[x] + (n[o + k] + tc[o + k])) / den
        elif kind[x] == UNI:
            for k in range(K):
                Zb[r, k] = 1.0 / dim[x]
        else:
            p = a_of[x]
            a = avals[p]
            b = bvals[b_of[x]]
            T = TP[x]
            lead = 1.0 if b == np.inf else (b + a * T) / (b + C)     # b infinite: a mixture node
            for k in range(K):
                c = n[o + k] + tc[o + k]
                t = tp[o + k]
                above = 0.0
                for e in range(par_ptr[x], par_ptr[x + 1]):
                    above += rho_num(par_gamma[e], Se[e], gamma_sum[x]) / rho_den(gamma_sum[x], T) * Zb[
                        slot[par_node[e]], k]
                if shared[x]:
                    Zb[r, k] = (c - a * t) / (b + C) + lead * above
                else:
                    Zb[r, k] = RJ[p, c, t] / (b + C) + lead * RO[p, c, t] * above
        r += 1
    return r - 1


@token_kernel
def doc_add(j, v, data, pred, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim, off, alpha, a_of,
            b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff,
            mx):
    """Increment cell (j, v) along a path drawn node by node (module docstring; ``Z[x]``: the row of ancestor x
    at v of :func:`doc_rows`, or with ``pred`` of the predictive): a shared vector seats the customer with the
    trained group, at an own table or at a new one; a document vector by its Z^+ terms
    (:func:`inference.pdpnet.ratio_path.path_step_r`) or, ``pred``, by the sequential predictive's."""
    while True:
        cell = off[j] + v
        if kind[j] != PYP:
            _count(j, cell, data, 1, n, tc, Nn, TC, mx, False)
            return
        if not shared[j] and not pred:
            j = path_step_r(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                            gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            if j < 0:
                return
            data = False
            continue
        a = avals[a_of[j]]
        b = bvals[b_of[j]]
        T = TP[j]
        e0, e1 = par_ptr[j], par_ptr[j + 1]
        join = n[cell] + tc[cell] - a * tp[cell]
        lead = b + a * T
        if b == np.inf:                          # a mixture node: never joins; opens up edge e with rho_e
            join = 0.0
            lead = 1.0
        total = join
        for e in range(e0, e1):
            total += lead * rho_num(par_gamma[e], Se[e], gamma_sum[j]) / rho_den(gamma_sum[j], T) * Z[par_node[e]]
        edge = e0
        if join > 0.0 or e1 - e0 > 1:            # else forced: nothing to join, one parent (no random number)
            u = np.random.random() * total
            if u < join:
                if not shared[j]:
                    seat_table(j, v, cell, data, -1, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    return
                _count(j, cell, data, 1, n, tc, Nn, TC, mx, False)
                group = c0[cell] + grp[cell] - a * t0[cell]
                if u < group:
                    grp[cell] += 1
                else:
                    m = _own_table(cell, u - group, a, tsize, tcell, hi)
                    if m < 0:                    # rounding at a group weight of ~0: the trained group
                        grp[cell] += 1
                    else:
                        tsize[m] += 1
                return
            u -= join
            while edge < e1 - 1:
                w = lead * rho_num(par_gamma[edge], Se[edge], gamma_sum[j]) / rho_den(gamma_sum[j], T) * Z[
                    par_node[edge]]
                if u < w:
                    break
                u -= w
                edge += 1
        if shared[j]:
            _count(j, cell, data, 1, n, tc, Nn, TC, mx, False)
            m = 0
            while tsize[m] > 0:
                m += 1
            hi[0] = max(hi[0], m + 1)
            tsize[m], tcell[m], tedge[m] = 1, cell, edge
            tp[cell] += 1
            TP[j] += 1
            s[eoff[edge] + v] += 1
            Se[edge] += 1
        else:
            seat_table(j, v, cell, data, edge, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        j = par_node[edge]
        data = False

