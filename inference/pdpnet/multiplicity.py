"""The exact multiplicity sampler (issue 28, route (1) of README "What 2x would take"; ``"sampler": "exact"``): the
built-in ``seqlda --sampler exact`` (thesis (3.6), Alg. 2/5 with a stochastic removal) on a network whose
topic-side Pitman-Yor vectors have one parent each.

State as CMGS (:mod:`inference.pdpnet.cmgs`): per cell customers c = n + t^c and tables t (= s of the one edge).
A token of topic k leaves its vector x_0; it sat alone with probability S^{c-1}_{t-1} / S^c_t (c counting it; 1 at
t = c, 0 at t = 1 < c: no random number then), and then its table goes and the table's customer leaves the parent
in turn, cascading up to a root. Its new topic is drawn from the seating predictive, with x_1, x_2, .. the
ancestors of x_0:

    p(k) ∝ V_{x_0}(k) Phi_kw,   V_x(k) = (c_xk - a_x t_xk) + (b_x + a_x T_x) Q_{parent of x}(k),
    Q_x(k) = V_x(k) / (b_x + C_x) (Pitman-Yor), (alpha + c_xk) / (sum alpha + C_x) (Dirichlet root), 1/dim (uniform)

and from x_0 up the customer joins one of the tables with probability (c - a t) / V, else opens one whose customer
arrives at the parent. Then t at x_0 is redrawn from (6.7) and after each document the pass-through cells
(CMGS's ``table_sweep``, :func:`inference.pdpnet.cmgs.resample_table`). Exactly invariant for the multiplicity
joint ((E12) with C^t_s = 1 at one parent): the removal is the seating arrangement's conditional given (c, t),
the arrival the seating predictive. Kept: the rows V of x_0's ancestors by depth from the root (the one above x_0
without x_0's tables), recomputed from the shallowest depth a table change made stale (the built-in's
``seqlda_chain_rows``; tested draw for draw against it). Several parents: :mod:`inference.pdpnet.multiplicity_dag`.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.gibbs.common import draw_scan, token_kernel
from inference.pdpnet.cmgs import _move_table, resample_table, table_draw_scratch
from inference.pdpnet.kernels import DIR, PYP


@token_kernel
def root_predictive(x, k, kind, dim, off, alpha, asum, n, tc, Nn, TC):
    """Q_x(k) at a root: (alpha + c) / (sum alpha + C) (Dirichlet), 1/dim (uniform)."""
    if kind[x] == DIR:
        o = off[x] + k
        return (alpha[x] + (n[o] + tc[o])) / (asum[x] + Nn[x] + TC[x])
    return 1.0 / dim[x]


@token_kernel
def chain_rows(R, lo, D, ad, K, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP):
    """Rows max(lo, 1)..D-1 of R from the row above: R[d, k] = V_{ad[d]}(k), and at d = D - 1 without the tables
    of x_0 = ad[D] (they change with every token at x_0); ad[0] is the root. A row's topic-free values are read
    once, before its loop over k (the same floats as per k)."""
    o0 = off[ad[D]]
    for d in range(max(lo, 1), D):
        x = ad[d]
        p = ad[d - 1]
        a = avals[a_of[x]]
        g = bvals[b_of[x]] + a * TP[x]
        ox = off[x]
        sub = d == D - 1
        top = d == 1
        pdir = top and kind[p] == DIR
        Rp = R[d - 1]
        den, ap, op, u = 1.0, 0.0, 0, 0.0
        if not top:
            den = bvals[b_of[p]] + Nn[p] + TC[p]
        elif pdir:
            den = asum[p] + Nn[p] + TC[p]
            ap = alpha[p]
            op = off[p]
        else:
            u = 1.0 / dim[p]
        Rd = R[d]
        nx, tcx, tpx = n[ox:ox + K], tc[ox:ox + K], tp[ox:ox + K]      # views: k needs no wraparound
        np_, tcp, tp0 = n[op:op + K], tc[op:op + K], tp[o0:o0 + K]
        for k in range(K):
            if not top:
                P = Rp[k] / den
            elif pdir:
                P = (ap + (np_[k] + tcp[k])) / den
            else:
                P = u
            c = nx[k] + tcx[k]
            if sub:
                c -= tp0[k]
            Rd[k] = (c - a * tpx[k]) + g * P


@token_kernel
def arrival(R, D, k, ad, kind, dim, off, alpha, asum, b_of, bvals, n, tc, tp, Nn, TC):
    """Q_{x_1}(k), the predictive of a customer x_0 sends up (the root's at D = 1)."""
    if D == 1:
        return root_predictive(ad[0], k, kind, dim, off, alpha, asum, n, tc, Nn, TC)
    p = ad[D - 1]
    return (R[D - 1, k] + tp[off[ad[D]] + k]) / (bvals[b_of[p]] + Nn[p] + TC[p])


@token_kernel
def topic_weights(p, R, D, ad, w, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP,
                  nwk, inv, beta, frozen_phi, frozen):
    """p[k] = V_{x_0}(k) Phi_kw (a root x_0: (alpha + c) Phi_kw); the common 1/(b + C) dropped. Returns the sum.
    The arrival's denominator and the topic-free values are read once per token (the same floats as
    :func:`arrival` per k)."""
    x0 = ad[D]
    K = p.shape[0]
    total = 0.0
    o0 = off[x0]
    if kind[x0] == PYP:
        a = avals[a_of[x0]]
        g = bvals[b_of[x0]] + a * TP[x0]
        r = ad[0]
        top = D == 1
        dirr = top and kind[r] == DIR
        Rp = R[D - 1]
        den, ar, orr, u = 1.0, 0.0, 0, 0.0
        if not top:
            pp = ad[D - 1]
            den = bvals[b_of[pp]] + Nn[pp] + TC[pp]
        elif dirr:
            den = asum[r] + Nn[r] + TC[r]
            ar = alpha[r]
            orr = off[r]
        else:
            u = 1.0 / dim[r]
        nx, tcx, tpx = n[o0:o0 + K], tc[o0:o0 + K], tp[o0:o0 + K]      # views: k needs no wraparound
        nr, tcr = n[orr:orr + K], tc[orr:orr + K]
        fw = frozen_phi[w] if frozen else frozen_phi[0]
        nw = nwk[w]
        for k in range(K):
            t = tpx[k]
            if not top:
                P = (Rp[k] + t) / den
            elif dirr:
                P = (ar + (nr[k] + tcr[k])) / den
            else:
                P = u
            v = ((nx[k] + tcx[k]) - a * t) + g * P
            if frozen:
                v *= fw[k]
            else:
                v *= (nw[k] + beta) * inv[k]
            p[k] = v
            total += v
        return total
    for k in range(K):
        o = o0 + k
        if kind[x0] == DIR:
            v = alpha[x0] + (n[o] + tc[o])
        else:
            v = 1.0 / dim[x0]
        if frozen:
            v *= frozen_phi[w, k]
        else:
            v *= (nwk[w, k] + beta) * inv[k]
        p[k] = v
        total += v
    return total


@token_kernel
def open_depth(R, D, k, ad, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP):
    """After topic k is drawn at x_0 = ad[D]: from x_0 up, join with probability (c - a t) / V (one uniform per
    level visited), else open a table; returns m, tables open at depths m..D (m = D + 1: none)."""
    d = D
    while d >= 1:
        x = ad[d]
        o = off[x] + k
        a = avals[a_of[x]]
        c = n[o] + tc[o]
        if d == D:
            V = (c - a * tp[o]) + (bvals[b_of[x]] + a * TP[x]) * arrival(R, D, k, ad, kind, dim, off, alpha, asum,
                                                                          b_of, bvals, n, tc, tp, Nn, TC)
        elif d == D - 1:
            V = R[d, k] + tp[off[ad[D]] + k]
        else:
            V = R[d, k]
        if np.random.random() * V < c - a * tp[o]:
            return d + 1
        d -= 1
    return 1


@token_kernel
def remove_token(x0, k, kind, off, a_of, par_ptr, par_node, logS3, n, tc, tp, Nn, TC, TP, s, Se, eoff, removal):
    """Take a customer of k out of x_0: it sat alone with probability S^{c-1}_{t-1} / S^c_t (``removal`` 1: t/c
    at t >= 2, the table indicators' probability, wrong here: only for the test that the stationary check can
    fail), and then
    its table's customer leaves the parent likewise. Returns the number of tables removed (at depths D, D-1, ..)."""
    x = x0
    r = 0
    while kind[x] == PYP:
        o = off[x] + k
        c = n[o] + tc[o]
        if r > 0:
            c += 1                                   # the customer of the table just removed below
        tt = tp[o]
        if tt < c:
            if tt == 1:
                break
            if removal == 1:
                if np.random.random() >= tt / c:
                    break
            elif np.random.random() >= math.exp(logS3[a_of[x], c - 1, tt - 1] - logS3[a_of[x], c, tt]):
                break
        _move_table(x, k, -1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
        x = par_node[par_ptr[x]]
        r += 1
    n[off[x0] + k] -= 1
    Nn[x0] -= 1
    return r


@numba.njit(cache=True, error_model="numpy")
def exact_sweep(seed, words, z, topic_inst, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals,
                logS3, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff, pass_end, pass_lo, pass_hi, nwk, nk, beta,
                frozen_phi, frozen, maxdepth, removal, check):
    """One cycle of the exact multiplicity sampler over every token (module docstring); the pass-through cells of
    vectors pass_lo[q] .. pass_hi[q] - 1 after token pass_end[q] - 1 (as :func:`inference.pdpnet.cmgs.cmgs_sweep`).
    Random numbers from numba's generator seeded by ``seed`` in the built-in ``seqlda_sweep``'s order (removal,
    topic, path, (6.7)). ``check`` (size 1, else 0): recompute the rows and weights at every token, keep the largest
    relative difference from the kept ones in check[0]."""
    np.random.seed(seed)
    N = words.shape[0]
    K = nk.shape[0]
    vbeta = nwk.shape[0] * beta
    inv = np.empty(K)
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + vbeta)
    ad = np.empty(maxdepth + 1, np.int64)
    up = np.empty(maxdepth + 1, np.int64)
    R = np.zeros((maxdepth + 1, K))
    R2 = np.zeros((maxdepth + 1, K))
    p = np.empty(K)
    p2 = np.empty(K)
    wt = table_draw_scratch(kind, dim, off, n, tc, N)
    cur = -1
    q = 0
    D = 0
    stale = 0
    for i in range(N):
        w = words[i]
        jt = topic_inst[i]
        k0 = z[i]
        if jt != cur and cur >= 0 and kind[jt] == PYP and par_node[par_ptr[jt]] == cur:
            D += 1                                      # the next vector of a chain: one level more, no walk
            ad[D] = jt
            stale = min(stale, D - 2)
            cur = jt
        elif jt != cur:                                 # a new vector: its ancestors by depth, the rows kept
            L = 0
            x = jt
            while True:
                up[L] = x
                L += 1
                if kind[x] != PYP:
                    break
                x = par_node[par_ptr[x]]
            Dn = L - 1
            if cur < 0:
                stale = 0
            else:
                same = 0
                while same <= D and same <= Dn and ad[same] == up[Dn - same]:
                    same += 1
                stale = min(min(stale, same), min(D - 1, Dn - 1))
            for d in range(L):
                ad[d] = up[Dn - d]
            D = Dn
            cur = jt
        r = remove_token(jt, k0, kind, off, a_of, par_ptr, par_node, logS3, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                         removal)
        if r >= 2:
            stale = min(stale, D - r)
        if not frozen:
            nwk[w, k0] -= 1
            nk[k0] -= 1
            inv[k0] = 1.0 / (nk[k0] + vbeta)
        if stale < D:
            chain_rows(R, stale, D, ad, K, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC,
                       TP)
        stale = D
        total = topic_weights(p, R, D, ad, w, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn,
                              TC, TP, nwk, inv, beta, frozen_phi, frozen)
        if check.shape[0] > 0:                          # the kept rows against a recomputation
            chain_rows(R2, 1, D, ad, K, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP)
            topic_weights(p2, R2, D, ad, w, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn,
                          TC, TP, nwk, inv, beta, frozen_phi, frozen)
            for k in range(K):
                check[0] = max(check[0], abs(p[k] - p2[k]) / max(abs(p2[k]), 1e-300))
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("exact_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_scan(p, 0, K - 1, total)
        if kind[jt] == PYP:
            m = open_depth(R, D, k, ad, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP)
            for d in range(m, D + 1):
                _move_table(ad[d], k, 1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
            if m < D:
                stale = m - 1
        z[i] = k
        n[off[jt] + k] += 1
        Nn[jt] += 1
        if not frozen:
            nwk[w, k] += 1
            nk[k] += 1
            inv[k] = 1.0 / (nk[k] + vbeta)
        if kind[jt] == PYP:
            resample_table(jt, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals,
                           ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff)
        while q < pass_end.shape[0] and pass_end[q] == i + 1:   # the document's pass-through cells
            for x in range(pass_lo[q], pass_hi[q]):
                if kind[x] != PYP:
                    continue
                ox = off[x]
                nx, tcx = n[ox:ox + dim[x]], tc[ox:ox + dim[x]]
                for kk in range(dim[x]):
                    if nx[kk] == 0 and tcx[kk] >= 2:
                        resample_table(x, kk, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node,
                                       avals, bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff)
            cur = -1
            q += 1
