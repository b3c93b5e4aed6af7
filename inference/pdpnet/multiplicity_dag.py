"""The exact multiplicity sampler (:mod:`inference.pdpnet.multiplicity`) at Pitman-Yor vectors with several parents
(issue 28, route (1); ``"sampler": "exact"`` on adatm.json's shape). The state is the multiplicity one of
:mod:`inference.pdpnet.cmgs_dag`: (c, t) per cell and the tables s_e sent up each edge (t = sum_e s_e), the joint
(E12) with C^t_s = t!/prod_e s_e! and rho integrated out.

A leaving customer of (x, k) sat alone with probability S^{c-1}_{t-1}/S^c_t; its table is then one of the t, so its
parent is e's with probability s_e/t (one uniform when two edges hold tables of k), and that table's customer leaves
the parent likewise. The arrival's seating predictive at x is V_x(k)/(b + C) with
V_x(k) = (c - a t) + (b + a T) sum_e rho_e Q_{p_e}(k), rho_e = (gamma_e + S_e)/(sum gamma + T) and Q the parents'
predictives (a root's as in :mod:`.multiplicity`); from x_0 up the customer joins with probability (c - a t)/V,
else opens a table sent up edge e with probability rho_e Q_{p_e}(k) / sum. Then every edge's s_e of the token's cell
is redrawn from the joint's conditional (:func:`inference.pdpnet.cmgs_dag._redraw`) and after each document the
pass-through cells likewise. Every ancestor's row Q is recomputed at every token (O(ancestors K) per token: correct,
not fast; adatm.json keeps the indicators).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.gibbs.common import draw_scan, token_kernel
from inference.pdpnet.cmgs import table_draw_scratch
from inference.pdpnet.cmgs_dag import _move, _redraw
from inference.pdpnet.kernels import DIR, PYP
from inference.pdpnet.multiplicity import root_predictive


@token_kernel
def parents_predictive(x, k, Q, par_ptr, par_node, par_gamma, gamma_sum, TP, Se):
    """sum_e rho_e Q_{p_e}(k) at a Pitman-Yor vector x, rho_e = (gamma_e + S_e) / (sum gamma + T_x)."""
    P = 0.0
    rs = gamma_sum[x] + TP[x]
    for e in range(par_ptr[x], par_ptr[x + 1]):
        P += (par_gamma[e] + Se[e]) / rs * Q[par_node[e], k]
    return P


@token_kernel
def remove_dag(x0, k, kind, off, a_of, par_ptr, par_node, eoff, logS3, n, tc, tp, Nn, TC, TP, s, Se, mver, vs,
               removal):
    """The customer of k at x0 leaves (module docstring; ``removal`` 1: t/c at t >= 2, wrong, for the test)."""
    x = x0
    r = 0
    while kind[x] == PYP:
        o = off[x] + k
        c = n[o] + tc[o]
        if r > 0:
            c += 1
        tt = tp[o]
        if tt < c:
            if tt == 1:
                break
            if removal == 1:
                if np.random.random() >= tt / c:
                    break
            elif np.random.random() >= math.exp(logS3[a_of[x], c - 1, tt - 1] - logS3[a_of[x], c, tt]):
                break
        e = -1
        held = 0
        for f in range(par_ptr[x], par_ptr[x + 1]):
            if s[eoff[f] + k] > 0:
                held += 1
                e = f
        if held > 1:                                  # the table's parent in proportion to s
            u = np.random.random() * tt
            acc = 0.0
            for f in range(par_ptr[x], par_ptr[x + 1]):
                acc += s[eoff[f] + k]
                if u < acc:
                    e = f
                    break
        _move(x, k, e, -1, off, par_node, eoff, tc, tp, TC, TP, s, Se, mver, vs)
        x = par_node[e]
        r += 1
    n[off[x0] + k] -= 1
    Nn[x0] -= 1


@token_kernel
def rows_dag(x0, Q, K, anc_ptr, anc, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, par_gamma,
             gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se):
    """Q[a, k] for every ancestor a of x0 (parents first)."""
    for i in range(anc_ptr[x0], anc_ptr[x0 + 1]):
        a_ = anc[i]
        if a_ == x0:
            continue
        if kind[a_] != PYP:
            for k in range(K):
                Q[a_, k] = root_predictive(a_, k, kind, dim, off, alpha, asum, n, tc, Nn, TC)
            continue
        a = avals[a_of[a_]]
        g = bvals[b_of[a_]] + a * TP[a_]
        den = bvals[b_of[a_]] + Nn[a_] + TC[a_]
        for k in range(K):
            o = off[a_] + k
            P = parents_predictive(a_, k, Q, par_ptr, par_node, par_gamma, gamma_sum, TP, Se)
            Q[a_, k] = (((n[o] + tc[o]) - a * tp[o]) + g * P) / den


@numba.njit(cache=True, error_model="numpy")
def exact_dag_sweep(seed, words, z, topic_inst, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node,
                    par_gamma, gamma_sum, avals, bvals, logS3, ratio3, cratio3, anc_ptr, anc, n, tc, tp, Nn, TC, TP,
                    s, Se, eoff, pass_end, pass_lo, pass_hi, nwk, nk, beta, frozen_phi, frozen, removal):
    """One cycle of the exact multiplicity sampler on a network with multi-parent vectors (module docstring); the
    random numbers from numba's generator seeded by ``seed``."""
    np.random.seed(seed)
    N = words.shape[0]
    K = nk.shape[0]
    J = kind.shape[0]
    vbeta = nwk.shape[0] * beta
    inv = np.empty(K)
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + vbeta)
    Q = np.zeros((J, K))
    p = np.empty(K)
    V = np.empty(K)
    mver = np.zeros(J, np.int64)
    vs = np.zeros(1, np.int64)
    wt = table_draw_scratch(kind, dim, off, n, tc, N)
    path_x = np.empty(J + 1, np.int64)
    path_e = np.empty(J + 1, np.int64)
    ew = np.empty(par_node.shape[0])
    q = 0
    for i in range(N):
        w = words[i]
        jt = topic_inst[i]
        k0 = z[i]
        remove_dag(jt, k0, kind, off, a_of, par_ptr, par_node, eoff, logS3, n, tc, tp, Nn, TC, TP, s, Se, mver, vs,
                   removal)
        if not frozen:
            nwk[w, k0] -= 1
            nk[k0] -= 1
            inv[k0] = 1.0 / (nk[k0] + vbeta)
        rows_dag(jt, Q, K, anc_ptr, anc, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, par_gamma,
                 gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se)
        pyp = kind[jt] == PYP
        total = 0.0
        for k in range(K):
            o = off[jt] + k
            c = n[o] + tc[o]
            if pyp:
                a = avals[a_of[jt]]
                v = (c - a * tp[o]) + (bvals[b_of[jt]] + a * TP[jt]) * parents_predictive(
                    jt, k, Q, par_ptr, par_node, par_gamma, gamma_sum, TP, Se)
            elif kind[jt] == DIR:
                v = alpha[jt] + c
            else:
                v = 1.0 / dim[jt]
            V[k] = v
            p[k] = v * (frozen_phi[w, k] if frozen else (nwk[w, k] + beta) * inv[k])
            total += p[k]
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("exact_dag_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_scan(p, 0, K - 1, total)
        L = 0                                            # the tables this customer opens: (vector, edge) upwards
        x = jt
        while kind[x] == PYP:
            o = off[x] + k
            a = avals[a_of[x]]
            Vx = V[k] if x == jt else Q[x, k] * (bvals[b_of[x]] + Nn[x] + TC[x])
            if np.random.random() * Vx < (n[o] + tc[o]) - a * tp[o]:
                break
            e = par_ptr[x]
            if par_ptr[x + 1] - par_ptr[x] > 1:
                tot = 0.0
                for f in range(par_ptr[x], par_ptr[x + 1]):
                    ew[f] = (par_gamma[f] + Se[f]) * Q[par_node[f], k]
                    tot += ew[f]
                e = par_ptr[x] + draw_scan(ew[par_ptr[x]:par_ptr[x + 1]], 0, par_ptr[x + 1] - par_ptr[x] - 1, tot)
            path_x[L] = x
            path_e[L] = e
            L += 1
            x = par_node[e]
        for lv in range(L):
            _move(path_x[lv], k, path_e[lv], 1, off, par_node, eoff, tc, tp, TC, TP, s, Se, mver, vs)
        z[i] = k
        n[off[jt] + k] += 1
        Nn[jt] += 1
        if not frozen:
            nwk[w, k] += 1
            nk[k] += 1
            inv[k] = 1.0 / (nk[k] + vbeta)
        if pyp:
            _redraw(jt, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
                    avals, bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mver, vs)
        while q < pass_end.shape[0] and pass_end[q] == i + 1:   # the document's pass-through cells
            for x in range(pass_lo[q], pass_hi[q]):
                if kind[x] != PYP:
                    continue
                for kk in range(dim[x]):
                    o = off[x] + kk
                    if n[o] == 0 and tc[o] >= 2:
                        _redraw(x, kk, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, par_gamma,
                                gamma_sum, avals, bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mver,
                                vs)
            q += 1
