"""Numba kernels of the network sampler, driven by the arrays of :class:`inference.pdpnet.compile.CompiledNetwork`.

State (001_003 extract §2): per cell (vector j, value k) the own data n_jk, the customers sent up by children
t^c_jk and the tables t^p_jk; per vector the totals N_j, TC_j, TP_j; per parent edge e = (i -> j) and value k
the tables of j attributed to parent i, s_ijk (E8), and their total S_e. A vector's customers for k are
c = n_jk + t^c_jk, its customer total C = N_j + TC_j.

Sampler: the blocked table-indicator Gibbs sampler on a DAG (Du thesis §3.6, (3.14)/(3.18), here with rho
integrated out), whose augmented joint is the corrected (E12) times prod_jk binom(c_jk, t_jk)^{-1} C^{t}_{s}^{-1}
... i.e. (E12) with C^t_s replaced by t!(c-t)!/c! per cell. Moves:

* **decrement** (Z-): a customer leaving cell (j, k) was "responsible" for one of the t_jk tables with
  probability t_jk / c_jk (the table then attributed to parent i with probability s_ijk / t_jk, (3.15)/(3.16)),
  and then leaves the parent in turn; this is the exact conditional of its indicator given the counts. When the
  draw leaves a cell with customers but no table (its only table went), the rest of the state is illegal and the
  only legal completions restore it; the kernel then puts the customer back unchanged (an identity move, which
  leaves the conditional invariant).
* **increment** (Z+, E14/E15 in table-indicator form): Z_j^+(k) = join + sum_i open_i Z_i^+(k) with
  join = S^{c+1}_{t} / S^c_t (c+1-t)/(c+1) / (b+C), open_i = (b + a T)/(b + C) S^{c+1}_{t+1} / S^c_t (t+1)/(c+1)
  (gamma_i + S_e)/(sum gamma + T), and at a Dirichlet root (alpha + c)/(K alpha + C), at a fixed uniform 1/dim.
  Each term is the ratio of the augmented joint after/before; the path is drawn node by node from the terms.
* **token step**: remove the token from its topic vector (value z) and its word vector (value w) by
  decrements, draw z from Z^+_topic(k) Z^+_word(k), add it back along drawn paths.
* **re-seating** (the s-moving operators of [001] §3.2.3, both at once): one customer of a cell (j, k) of a
  Pitman-Yor vector is decremented and incremented again at the same cell, which redraws whether it holds a
  table and to which parent that table goes (moving s between parents and changing t^p with flow-on).

The Stirling table ``L3[p, N, M]`` (log S^N_{M, a_p}, one slice per discount parameter) must cover N <= max c + 2
and M <= max t + 2: the sweep kernels check the running maxima before every step and return the position to
resume from after the caller has grown the table (a lookup outside it raises IndexError, never a silent zero).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, KIND_UNIFORM

DIR, PYP, UNI = KIND_DIRICHLET, KIND_PYP, KIND_UNIFORM


@token_kernel
def log_s(L3, p, c, t):
    """log S^c_{t, a_p}; -inf for t > c; IndexError outside the stored table."""
    if t > c or t < 0:
        return -np.inf
    if c >= L3.shape[1] or t >= L3.shape[2]:
        raise IndexError("generalised Stirling number outside the table: grow it first")
    return L3[p, c, t]


@numba.njit(cache=True)
def ancestor_lists(par_ptr, par_node):
    """CSR (ptr, nodes) of every vector's ancestors including itself, ascending (parents have smaller ids)."""
    J = par_ptr.shape[0] - 1
    mark = np.full(J, -1, np.int64)
    stack = np.empty(J + 1, np.int64)
    lens = np.zeros(J + 1, np.int64)
    for j in range(J):
        top = 0
        stack[0] = j
        mark[j] = j
        cnt = 0
        while top >= 0:
            x = stack[top]
            top -= 1
            cnt += 1
            for e in range(par_ptr[x], par_ptr[x + 1]):
                q = par_node[e]
                if mark[q] != j:
                    mark[q] = j
                    top += 1
                    stack[top] = q
        lens[j + 1] = cnt
    ptr = np.cumsum(lens)
    out = np.empty(ptr[-1], np.int64)
    mark[:] = -1
    for j in range(J):
        top = 0
        stack[0] = j
        mark[j] = j
        pos = ptr[j]
        while top >= 0:
            x = stack[top]
            top -= 1
            out[pos] = x
            pos += 1
            for e in range(par_ptr[x], par_ptr[x + 1]):
                q = par_node[e]
                if mark[q] != j:
                    mark[q] = j
                    top += 1
                    stack[top] = q
        out[ptr[j]:ptr[j + 1]] = np.sort(out[ptr[j]:ptr[j + 1]])
    return ptr, out


@token_kernel
def node_terms(j, v, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
               avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se):
    """The increment terms of cell (j, v) into ``terms`` (join first, then one per parent edge, parents' Z^+
    from ``Z``); returns their sum Z_j^+(v). Roots: terms[0] = the predictive, no parent terms."""
    cell = off[j] + v
    c = n[cell] + tc[cell]
    C = Nn[j] + TC[j]
    kd = kind[j]
    if kd == DIR:
        terms[0] = (alpha[j] + c) / (alpha[j] * dim[j] + C)
        return terms[0]
    if kd == UNI:
        terms[0] = 1.0 / dim[j]
        return terms[0]
    p = a_of[j]
    a = avals[p]
    b = bvals[b_of[j]]
    t = tp[cell]
    T = TP[j]
    base = log_s(L3, p, c, t)
    join = 0.0
    if c > 0:
        join = math.exp(log_s(L3, p, c + 1, t) - base) * (c + 1 - t) / (c + 1) / (b + C)
    terms[0] = join
    opn = (b + a * T) / (b + C) * math.exp(log_s(L3, p, c + 1, t + 1) - base) * (t + 1) / (c + 1)
    total = join
    gs = gamma_sum[j]
    m = 1
    for e in range(par_ptr[j], par_ptr[j + 1]):
        x = opn * (par_gamma[e] + Se[e]) / (gs + T) * Z[par_node[e]]
        terms[m] = x
        total += x
        m += 1
    return total


@token_kernel
def eval_zplus(j, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
               gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se):
    """Z^+ of value v at j and at each of its ancestors into ``Z`` (E14/E15, table-indicator form); returns Z_j."""
    for q in range(anc_ptr[j], anc_ptr[j + 1]):
        x = anc[q]
        Z[x] = node_terms(x, v, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                          gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se)
    return Z[j]


@token_kernel
def _count(j, cell, data, delta, n, tc, Nn, TC, mx):
    if data:
        n[cell] += delta
        Nn[j] += delta
    else:
        tc[cell] += delta
        TC[j] += delta
    if delta > 0 and n[cell] + tc[cell] > mx[0]:
        mx[0] = n[cell] + tc[cell]


@token_kernel
def add_path(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
             avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Increment cell (j, v) along a path drawn from the terms (``Z`` must hold Z^+ of v at j's ancestors)."""
    while True:
        cell = off[j] + v
        if kind[j] != PYP:
            _count(j, cell, data, 1, n, tc, Nn, TC, mx)
            return
        total = node_terms(j, v, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                           gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se)
        r = np.random.random() * total
        if r < terms[0]:
            _count(j, cell, data, 1, n, tc, Nn, TC, mx)
            return
        r -= terms[0]
        e1 = par_ptr[j + 1] - 1
        e = par_ptr[j]
        m = 1
        while e < e1 and r >= terms[m]:
            r -= terms[m]
            e += 1
            m += 1
        _count(j, cell, data, 1, n, tc, Nn, TC, mx)
        tp[cell] += 1
        TP[j] += 1
        if tp[cell] > mx[1]:
            mx[1] = tp[cell]
        s[eoff[e] + v] += 1
        Se[e] += 1
        j = par_node[e]
        data = False


@token_kernel
def remove_path(j, v, data, pnode, pedge, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Decrement cell (j, v) with the exact indicator draw (module docstring); the path goes into ``pnode``/
    ``pedge`` (edge -1: no table removed there). Returns (path length, illegal rest)."""
    depth = 0
    illegal = False
    while True:
        cell = off[j] + v
        c = n[cell] + tc[cell]
        _count(j, cell, data, -1, n, tc, Nn, TC, mx)
        pnode[depth] = j
        pedge[depth] = -1
        depth += 1
        if kind[j] != PYP:
            return depth, illegal
        t = tp[cell]
        r = np.random.random() * c
        if r < c - t:
            return depth, illegal
        r -= c - t
        e1 = par_ptr[j + 1] - 1
        e = par_ptr[j]
        while e < e1 and r >= s[eoff[e] + v]:
            r -= s[eoff[e] + v]
            e += 1
        pedge[depth - 1] = e
        s[eoff[e] + v] -= 1
        Se[e] -= 1
        tp[cell] -= 1
        TP[j] -= 1
        if tp[cell] == 0 and c - 1 > 0:
            illegal = True
        j = par_node[e]
        data = False


@token_kernel
def undo_path(depth, v, data, pnode, pedge, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Put back what :func:`remove_path` took (same path)."""
    for d in range(depth):
        j = pnode[d]
        cell = off[j] + v
        _count(j, cell, data and d == 0, 1, n, tc, Nn, TC, mx)
        e = pedge[d]
        if e >= 0:
            tp[cell] += 1
            TP[j] += 1
            s[eoff[e] + v] += 1
            Se[e] += 1


@numba.njit(cache=True, error_model="numpy")
def network_sweep(start, reseed, seed, reseat, words, z, topic_inst, word_inst, anc_ptr, anc, kind, dim, off,
                  alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC,
                  TP, s, Se, eoff, mx, init, ext_word, nwk, nk, beta, frozen_phi, frozen):
    """One cycle from position ``start``: every token (``init``: add token i with its topic z[i] instead), then,
    with ``reseat``, one re-seating of a customer of every occupied Pitman-Yor cell. Returns -1 when done, or the
    position to resume from once the Stirling table covers max c + 2 and max t + 2 (``mx``).

    ``ext_word``: the word side is the Gibbs engine's topic-word table instead of the network's own cells (a
    Dirichlet(beta) family indexed by topic): the word factor is (nwk[w, k] + beta) / (nk[k] + V beta), or
    ``frozen_phi[w, k]`` with ``frozen`` (then nwk/nk stay untouched)."""
    if reseed:
        np.random.seed(seed)
    N = words.shape[0]
    K = word_inst.shape[1]
    J = kind.shape[0]
    Z = np.zeros(J)
    maxpar = 1
    for j in range(J):
        maxpar = max(maxpar, par_ptr[j + 1] - par_ptr[j] + 1)
    terms = np.zeros(maxpar)
    pnA = np.empty(J + 1, np.int64)
    peA = np.empty(J + 1, np.int64)
    pnB = np.empty(J + 1, np.int64)
    peB = np.empty(J + 1, np.int64)
    p = np.empty(K)
    vbeta = nwk.shape[0] * beta
    rows = L3.shape[1]
    cols = L3.shape[2]
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        w = words[i]
        jt = topic_inst[i]
        if init:
            k = z[i]
        else:
            k0 = z[i]
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
            if ext_word and not frozen:
                nwk[w, k0] -= 1
                nk[k0] -= 1
            total = 0.0
            for kk in range(K):
                zt = eval_zplus(jt, kk, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se)
                if ext_word:
                    if frozen:
                        zw = frozen_phi[w, kk]
                    else:
                        zw = (nwk[w, kk] + beta) / (nk[kk] + vbeta)
                else:
                    zw = eval_zplus(word_inst[i, kk], w, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                                    par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC,
                                    TP, Se)
                p[kk] = zt * zw
                total += p[kk]
            r = np.random.random() * total
            k = 0
            while k < K - 1 and r >= p[k]:
                r -= p[k]
                k += 1
        eval_zplus(jt, k, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se)
        add_path(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
                 avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        if ext_word:
            if not frozen:
                nwk[w, k] += 1
                nk[k] += 1
        else:
            jw = word_inst[i, k]
            eval_zplus(jw, w, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                       par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se)
            add_path(jw, w, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                     gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        z[i] = k
        pos += 1
    if init or not reseat:
        return -1
    ncell = off[J]
    while pos < N + ncell:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        cell = pos - N
        pos += 1
        # the vector of this cell (binary search on off)
        lo, hi = 0, J - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if off[mid] <= cell:
                lo = mid
            else:
                hi = mid - 1
        j = lo
        if kind[j] != PYP or n[cell] + tc[cell] == 0:
            continue
        v = cell - off[j]
        data = n[cell] > 0
        da, ia = remove_path(j, v, data, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                             mx)
        if ia:
            undo_path(da, v, data, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            continue
        eval_zplus(j, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se)
        add_path(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
                 avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    return -1
