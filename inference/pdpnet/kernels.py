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
  leaves the conditional invariant). A draw whose outcome is forced is not made (issue 28; no random number):
  t_jk = c_jk (the indicator is 1) with its tables at one parent only; an increment at an empty cell of a
  one-parent vector (no table to join, one parent to open at; open terms are positive since gamma > 0).
* **increment** (Z+, E14/E15 in table-indicator form): Z_j^+(k) = join + sum_i open_i Z_i^+(k) with
  join = S^{c+1}_{t} / S^c_t (c+1-t)/(c+1) / (b+C), open_i = (b + a T)/(b + C) S^{c+1}_{t+1} / S^c_t (t+1)/(c+1)
  (gamma_i + S_e)/(sum gamma + T), and at a Dirichlet root (alpha + c)/(K alpha + C), at a fixed uniform 1/dim.
  Each term is the ratio of the augmented joint after/before; the path is drawn node by node from the terms.
* **token step**: remove the token from its topic vector (value z) and its word vector (value w) by
  decrements, draw z from Z^+_topic(k) Z^+_word(k), add it back along drawn paths.
* **re-seating** (the s-moving operators of [001] §3.2.3, both at once): one customer of a cell (j, k) of a
  Pitman-Yor vector is decremented and incremented again at the same cell, which redraws whether it holds a
  table and to which parent that table goes (moving s between parents and changing t^p with flow-on). Only
  cells whose customers are all children's tables (n = 0) need it: a token step that keeps its topic is this
  move for one data customer (:func:`inference.pdpnet.reseat.reseat_cells`).

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
from inference.pdpnet.rho import rho_den, rho_num

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
    if kind[j] != PYP:
        return root_term(j, c, Nn[j] + TC[j], terms, kind, dim, alpha)
    p = a_of[j]
    t = tp[cell]
    base = log_s(L3, p, c, t)
    join = 0.0
    if c > 0:
        join = math.exp(log_s(L3, p, c + 1, t) - base) * (c + 1 - t) / (c + 1)
    return pyp_terms(j, c, t, join, math.exp(log_s(L3, p, c + 1, t + 1) - base), Z, terms, a_of, b_of, par_ptr,
                     par_node, par_gamma, gamma_sum, avals, bvals, Nn, TC, TP, Se)


@token_kernel
def root_term(j, c, C, terms, kind, dim, alpha):
    """:func:`node_terms` at a root: (alpha + c)/(dim alpha + C) at a Dirichlet root, 1/dim at a fixed uniform."""
    if kind[j] == DIR:
        terms[0] = (alpha[j] + c) / (alpha[j] * dim[j] + C)
    else:
        terms[0] = 1.0 / dim[j]
    return terms[0]


@token_kernel
def pyp_terms(j, c, t, join_ratio, open_ratio, Z, terms, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
              avals, bvals, Nn, TC, TP, Se):
    """:func:`node_terms` at a Pitman-Yor cell with c customers and t tables, from its Stirling factors
    ``join_ratio`` = S^{c+1}_t / S^c_t (c+1-t)/(c+1) (unread for c = 0) and ``open_ratio`` = S^{c+1}_{t+1} /
    S^c_t, however they were obtained (logs here, ratio tables in :mod:`inference.pdpnet.ratio_path`)."""
    a = avals[a_of[j]]
    b = bvals[b_of[j]]
    C = Nn[j] + TC[j]
    T = TP[j]
    join = 0.0
    if c > 0:
        join = join_ratio / (b + C)
    terms[0] = join
    if b == np.inf:                 # a mixture node (b infinite): never joins (join / inf = 0), opens with rho_e
        opn = open_ratio * (t + 1) / (c + 1)
    else:
        opn = (b + a * T) / (b + C) * open_ratio * (t + 1) / (c + 1)
    total = join
    gs = gamma_sum[j]
    m = 1
    for e in range(par_ptr[j], par_ptr[j + 1]):
        x = opn * rho_num(par_gamma[e], Se[e], gs) / rho_den(gs, T) * Z[par_node[e]]
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
def _count(j, cell, data, delta, n, tc, Nn, TC, mx, track):
    if data:
        n[cell] += delta
        Nn[j] += delta
    else:
        tc[cell] += delta
        TC[j] += delta
    if track and n[cell] + tc[cell] > mx[0]:
        mx[0] = n[cell] + tc[cell]


@token_kernel
def add_path(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
             avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Increment cell (j, v) along a path drawn from the terms (``Z`` must hold Z^+ of v at j's ancestors)."""
    while True:
        cell = off[j] + v
        if kind[j] != PYP:
            _count(j, cell, data, 1, n, tc, Nn, TC, mx, False)
            return
        if seat_forced(j, cell, par_ptr, n, tc):
            j = par_node[seat_table(j, v, cell, data, par_ptr[j], n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)]
        else:
            total = node_terms(j, v, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                               gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, Se)
            j = seat_at_node(j, v, cell, data, terms, total, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                             mx)
        if j < 0:
            return
        data = False


@token_kernel
def seat_forced(j, cell, par_ptr, n, tc):
    """True when seating a customer at Pitman-Yor cell ``cell`` of j has one outcome (issue 28: no draw, no
    terms): the cell has no customer, so no table to join, and j has one parent, so the new table goes there."""
    return n[cell] + tc[cell] == 0 and par_ptr[j + 1] - par_ptr[j] == 1


@token_kernel
def seat_at_node(j, v, cell, data, terms, total, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """One step of :func:`add_path` at PYP node j, its ``terms`` (summing to ``total``) computed: the count joins
    an existing table (returns -1: the path ends) or opens one, sent up the drawn parent edge (returns that
    parent); :func:`seat_edge`."""
    e = seat_edge(j, v, cell, data, terms, total, par_ptr, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    if e < 0:
        return -1
    return par_node[e]


@token_kernel
def seat_edge(j, v, cell, data, terms, total, par_ptr, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """:func:`seat_at_node` returning the edge of the opened table (-1: joined one). Terms that do not sum to a
    finite positive number (an illegal cell: customers but no table) raise. The one forced case (issue 28; the
    open terms are positive, gamma > 0): an empty cell of a one-parent vector opens a table there without a
    random number."""
    if not (total > 0.0 and total < np.inf):
        raise FloatingPointError("seat_at_node: a cell's seating terms sum to NaN, inf or 0 (customers, no table)")
    e = par_ptr[j]
    e1 = par_ptr[j + 1] - 1
    if terms[0] == 0.0 and e == e1:         # nothing to join, one parent (open terms are positive: gamma > 0)
        return seat_table(j, v, cell, data, e, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    r = np.random.random() * total
    if r < terms[0]:
        return seat_table(j, v, cell, data, -1, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    r -= terms[0]
    m = 1
    while e < e1 and r >= terms[m]:
        r -= terms[m]
        e += 1
        m += 1
    return seat_table(j, v, cell, data, e, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)


@token_kernel
def seat_table(j, v, cell, data, e, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Count the customer at (j, v): it joins a table (``e`` = -1) or opens one attributed to parent edge ``e``;
    returns ``e``."""
    _count(j, cell, data, 1, n, tc, Nn, TC, mx, True)
    if e < 0:
        return -1
    tp[cell] += 1
    TP[j] += 1
    if tp[cell] > mx[1]:
        mx[1] = tp[cell]
    s[eoff[e] + v] += 1
    Se[e] += 1
    return e


@token_kernel
def remove_path(j, v, data, pnode, pedge, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Decrement cell (j, v) with the exact indicator draw (module docstring); the path goes into ``pnode``/
    ``pedge`` (edge -1: no table removed there). Returns (path length, illegal rest)."""
    depth = 0
    illegal = False
    while True:
        cell = off[j] + v
        c = n[cell] + tc[cell]
        _count(j, cell, data, -1, n, tc, Nn, TC, mx, False)
        pnode[depth] = j
        pedge[depth] = -1
        depth += 1
        if kind[j] != PYP:
            return depth, illegal
        t = tp[cell]
        e = par_ptr[j]
        e1 = par_ptr[j + 1] - 1
        if t < c:
            r = np.random.random() * c
            if r < c - t:
                return depth, illegal
            r -= c - t
            while e < e1 and r >= s[eoff[e] + v]:
                r -= s[eoff[e] + v]
                e += 1
        elif e < e1:                        # t = c: it held a table for certain; at which parent
            e = forced_edge(e, e1, v, t, s, eoff)
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
def forced_edge(e, e1, v, t, s, eoff):
    """The parent edge (e..e1) of a table of value v that leaves a cell with t tables, all its customers holding
    one: forced (no random number) when one edge holds all t, else drawn in proportion to s."""
    f = e
    while f < e1 and s[eoff[f] + v] == 0:
        f += 1
    if s[eoff[f] + v] == t:
        return f
    r = np.random.random() * t
    while e < e1 and r >= s[eoff[e] + v]:
        r -= s[eoff[e] + v]
        e += 1
    return e


@token_kernel
def undo_path(depth, v, data, pnode, pedge, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Put back what :func:`remove_path` took (same path)."""
    for d in range(depth):
        j = pnode[d]
        cell = off[j] + v
        _count(j, cell, data and d == 0, 1, n, tc, Nn, TC, mx, False)
        e = pedge[d]
        if e >= 0:
            tp[cell] += 1
            TP[j] += 1
            s[eoff[e] + v] += 1
            Se[e] += 1


@numba.njit(cache=True)
def count_state(z, s, topic_inst, word_inst, words, word_side, kind, off, par_ptr, par_node, eoff, n, tc, tp, Nn, TC,
                TP, Se, mx):
    """Fill the zeroed counts from the topics ``z`` and the table attributions ``s`` (see the module docstring);
    ``mx`` = (max customers of a Pitman-Yor cell, max tables of a cell)."""
    for i in range(z.shape[0]):
        j = topic_inst[i]
        n[off[j] + z[i]] += 1
        Nn[j] += 1
        if word_side:
            jw = word_inst[i, z[i]]
            n[off[jw] + words[i]] += 1
            Nn[jw] += 1
    J = off.shape[0] - 1
    for j in range(J):
        for e in range(par_ptr[j], par_ptr[j + 1]):
            q = par_node[e]
            for v in range(eoff[e + 1] - eoff[e]):
                x = s[eoff[e] + v]
                if x:
                    tc[off[q] + v] += x
                    TC[q] += x
                    tp[off[j] + v] += x
                    TP[j] += x
                    Se[e] += x
    for j in range(J):              # the Stirling table serves the Pitman-Yor cells only
        if kind[j] != PYP:
            continue
        for cell in range(off[j], off[j + 1]):
            mx[0] = max(mx[0], n[cell] + tc[cell])
            mx[1] = max(mx[1], tp[cell])


@numba.njit(cache=True)
def mean_state(kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, n, tc, tp,
               Nn, TC, TP, Se, out):
    """The posterior mean of every vector into ``out`` (cells), parents first (thesis (7.12) for any network;
    :func:`inference.pdpnet.sampler.posterior_means`)."""
    J = off.shape[0] - 1
    for j in range(J):
        lo, hi = off[j], off[j + 1]
        C = float(Nn[j] + TC[j])
        if kind[j] == PYP:
            a = avals[a_of[j]]
            b = bvals[b_of[j]]
            T = float(TP[j])
            for cell in range(lo, hi):
                out[cell] = 0.0
            for e in range(par_ptr[j], par_ptr[j + 1]):
                q = par_node[e]
                f = rho_num(par_gamma[e], Se[e], gamma_sum[j]) / rho_den(gamma_sum[j], T)
                oq = off[q]
                for v in range(hi - lo):
                    out[lo + v] += f * out[oq + v]
            if b == np.inf:             # a mixture node: the rho-mixture of its parents' means
                continue
            for cell in range(lo, hi):
                c = float(n[cell] + tc[cell])
                out[cell] = ((c - a * tp[cell]) + (b + a * T) * out[cell]) / (b + C)
        elif dim[j] > 0 and alpha[j] > 0:
            for cell in range(lo, hi):
                out[cell] = (alpha[j] + float(n[cell] + tc[cell])) / (alpha[j] * dim[j] + C)
        else:
            for cell in range(lo, hi):
                out[cell] = 1.0 / dim[j]
