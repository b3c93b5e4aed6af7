"""CMGS (Du's collapsed multiplicity Gibbs sampler, thesis Alg. 2; (3.6), (3.12)/(3.17) at multi-parent nodes) on
a network whose topic-side Pitman-Yor vectors may have several parents (issue 28: adatm.json under ``cmgs``).

State: the multiplicities, customers c = n + t^c and tables t per cell, and per parent edge e the tables s_e sent
up it (t = sum_e s_e). The joint is (E12) in multiplicity form: per Pitman-Yor vector (b|a)_T / (b)_C prod_k S^c_t,
the rho term (Dirichlet-multinomial of the S_e, or prod rho_e^S_e for fixed weights) and C^t_s = t! / prod_e s_e!
per value. A token of topic k0 leaves its vector x_0; only forced tables go (t > c after the decrement: a table
of the cell, on edge e with probability s_e / t, cascading up that edge). Its new topic's weight is

    W(x, k) = S^{c+1}_t / S^c_t / den(x)                               (x's cell of k occupied: join, t unchanged)
            = (b_x + a_x T_x) / den(x) sum_e rho_e W(parent_e, k)      (empty: a table opened, sent up edge e)
            = (alpha + c) / den(x) at a Dirichlet root, 1/dim at a uniform vector

(den = b + C, sum alpha + C, 1; rho_e = (gamma_e + S_e)/(sum gamma + T) or gamma_e), each term the ratio of the
joint after/before; times the word factor (the engine's topic-word table). The drawn topic's new tables follow
the empty cells up, an edge drawn in proportion to its term. Then the token's cell redraws, edge by edge, s_e from
its conditional (the multi-parent form of SeqLDA's (6.7); with one parent it is (6.7)), and after each document
the pass-through cells (n = 0, t^c >= 2) of its vectors the same way. With one parent per vector these are the
moves of :mod:`inference.pdpnet.cmgs`, which runs those networks (the built-ins' arithmetic, kept products); this
module recomputes W over the empty cells per topic (O(K x empty levels) per token). NOT exactly invariant, as CMGS.
"""
from __future__ import annotations


import numba
import numpy as np

from inference.gibbs.common import BIG, draw_scan, rescale_weights, token_kernel
from inference.pdpnet.kernels import DIR, PYP
from inference.pdpnet.rho import rho_den, rho_num


@token_kernel
def _den(x, kind, asum, b_of, bvals, Nn, TC):
    if kind[x] == PYP:
        return bvals[b_of[x]] + Nn[x] + TC[x]
    if kind[x] == DIR:
        return asum[x] + Nn[x] + TC[x]
    return 1.0


@token_kernel
def _move(x, k, e, d, off, par_node, eoff, tc, tp, TC, TP, s, Se, mver, vs):
    """d tables of (x, k) on edge e: t, T, s_e, S_e and the parent's customers follow (both rows marked stale)."""
    vs[0] += 1
    mver[x] = vs[0]
    mver[par_node[e]] = vs[0]
    tp[off[x] + k] += d
    TP[x] += d
    s[eoff[e] + k] += d
    Se[e] += d
    p = par_node[e]
    tc[off[p] + k] += d
    TC[p] += d


@numba.njit(cache=True)
def topic_weight(x0, k, W, mark, stamp, stack, lst, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node,
                 par_gamma, gamma_sum, avals, bvals, ratio3, n, tc, tp, Nn, TC, TP, Se):
    """W(x0, k) (module docstring) into ``W`` at x0 and every ancestor the recursion reads (the empty cells of k
    reachable from x0 through empty cells, and the occupied cells or roots where it stops); ``mark``/``stamp``
    tell this call's nodes apart."""
    top = 0
    stack[0] = x0
    mark[x0] = stamp
    cnt = 0
    while top >= 0:
        x = stack[top]
        top -= 1
        o = off[x] + k
        c = n[o] + tc[o]
        if kind[x] == PYP and tp[o] == 0:
            lst[cnt] = x
            cnt += 1
            for e in range(par_ptr[x], par_ptr[x + 1]):
                p = par_node[e]
                if mark[p] != stamp:
                    mark[p] = stamp
                    top += 1
                    stack[top] = p
        elif kind[x] == PYP:
            q = a_of[x]
            W[x] = ratio3[q, c, tp[o]] / _den(x, kind, asum, b_of, bvals, Nn, TC)
        elif kind[x] == DIR:
            W[x] = (alpha[x] + c) / _den(x, kind, asum, b_of, bvals, Nn, TC)
        else:
            W[x] = 1.0 / dim[x]
    for i in range(1, cnt):                      # ascending ids: parents before children
        v = lst[i]
        j = i - 1
        while j >= 0 and lst[j] > v:
            lst[j + 1] = lst[j]
            j -= 1
        lst[j + 1] = v
    for i in range(cnt):
        x = lst[i]
        T = TP[x]
        gs = gamma_sum[x]
        acc = 0.0
        for e in range(par_ptr[x], par_ptr[x + 1]):
            acc += rho_num(par_gamma[e], Se[e], gs) / rho_den(gs, T) * W[par_node[e]]
        W[x] = (bvals[b_of[x]] + avals[a_of[x]] * T) / _den(x, kind, asum, b_of, bvals, Nn, TC) * acc
    return W[x0]


@token_kernel
def row_value(x, k, R, B, root):
    """W(x, k) from the kept rows: R + B D with D = R[root] the predictive row of the vector's one Dirichlet root
    (``root`` < 0: no affine rows, B = 0)."""
    if root < 0 or x == root:
        return R[x, k]
    return R[x, k] + B[x, k] * R[root, k]


@numba.njit(cache=True)
def topic_rows(x0, root, R, B, mver, cver, redo, tok, vs, anc_ptr, anc, kind, dim, off, alpha, asum, a_of, b_of,
               par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, ratio3, n, tc, tp, Nn, TC, TP, Se):
    """W(x, k) = R[x, k] + B[x, k] D[k] (:func:`row_value`) for every topic at x0 and each of its ancestors
    (parents first; the sweep's form of :func:`topic_weight`, equal to it up to rounding: S^{c+1}_t / S^c_t from
    the ratio table). ``root`` >= 0: x0's ancestors have that one Dirichlet root, whose predictive row D = R[root]
    enters the others' rows linearly (B its coefficient), so a change at the root recomputes D alone (AdaTM's
    arrival weights, thesis ch. 7, have the same form). A row is kept from an earlier token unless its vector's
    counts changed since (``mver[x]`` > ``cver[x]``: the versions of the last change and of the row; ``vs[0]``
    the current one) or a parent's row other than D was recomputed for this token (``redo[x]`` = ``tok``).
    Returns the rows recomputed."""
    K = R.shape[1]
    done = 0
    for q in range(anc_ptr[x0], anc_ptr[x0 + 1]):
        x = anc[q]
        need = mver[x] > cver[x]
        e0, e1 = par_ptr[x], par_ptr[x + 1]
        for e in range(e0, e1):
            if redo[par_node[e]] == tok:
                need = True
        if not need:
            continue
        cver[x] = vs[0]
        done += 1
        o = off[x]
        den = _den(x, kind, asum, b_of, bvals, Nn, TC)
        if x != root:
            redo[x] = tok
        if kind[x] == DIR:
            for k in range(K):
                R[x, k] = (alpha[x] + (n[o + k] + tc[o + k])) / den
                B[x, k] = 0.0
        elif kind[x] != PYP:
            for k in range(K):
                R[x, k] = 1.0 / dim[x]
                B[x, k] = 0.0
        else:
            p = a_of[x]
            T = TP[x]
            lead = (bvals[b_of[x]] + avals[p] * T) / den
            gs = gamma_sum[x]
            for k in range(K):
                t = tp[o + k]
                if t > 0:
                    R[x, k] = ratio3[p, n[o + k] + tc[o + k], t] / den
                    B[x, k] = 0.0
                else:
                    acc = 0.0
                    accb = 0.0
                    for e in range(e0, e1):
                        f = rho_num(par_gamma[e], Se[e], gs) / rho_den(gs, T)
                        y = par_node[e]
                        if y == root:
                            accb += f
                        else:
                            acc += f * R[y, k]
                            accb += f * B[y, k]
                    R[x, k] = lead * acc
                    B[x, k] = lead * accb
    return done


@numba.njit(cache=True)
def edge_weights(x, k, e, wt, kind, dim, off, alpha, asum, a_of, b_of, par_node, par_gamma, gamma_sum, avals,
                 bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff):
    """Unnormalised p(s_e = v | rest) of (x, k) into wt[v - lo] for v in [lo, hi]; returns (lo, hi), hi <= lo:
    nothing to draw. The joint's factors in v: (b|a)_T S^c_t t!/s_e! and the rho term at x, the parent's
    S^{c_p}_{t_p}/(b_p)_{C_p} or Dirichlet predictive or dim^-v, as a running product of neighbour ratios
    (``ratio3`` S^{c+1}_t/S^c_t, ``cratio3`` S^c_t/S^c_{t-1}; rescaled before overflow, as :mod:`.cmgs`)."""
    o = off[x] + k
    c = n[o] + tc[o]
    t = tp[o]
    se = s[eoff[e] + k]
    tr = t - se
    p = par_node[e]
    op = off[p] + k
    cpr = n[op] + tc[op] - se
    lo = max(0, 1 - tr) if c > 0 else 0
    hi = c - tr
    if kind[p] == PYP:
        if tp[op] == 0:
            hi = min(hi, 0)
        else:
            lo = max(lo, tp[op] - cpr)
    if hi <= lo:
        return lo, hi
    q = a_of[x]
    a = avals[q]
    b = bvals[b_of[x]]
    Tr = TP[x] - se                              # x's tables without edge e's of this value
    gs = gamma_sum[x]
    ge = par_gamma[e]
    Sr = Se[e] - se
    Cpr = Nn[p] + TC[p] - se
    kp = kind[p]
    xv = 1.0
    wt[0] = 1.0
    total = 1.0
    for v in range(lo, hi):                      # the factor from v to v + 1
        tt = tr + v
        f = (b + a * (Tr + v)) * cratio3[q, c, tt + 1] * (tt + 1.0) / (v + 1.0)
        if gs < 0.0:
            f *= ge
        else:
            f *= (ge + Sr + v) / (gs + Tr + v)
        if kp == PYP:
            f *= ratio3[a_of[p], cpr + v, tp[op]] / (bvals[b_of[p]] + Cpr + v)
        elif kp == DIR:
            f *= (alpha[p] + cpr + v) / (asum[p] + Cpr + v)
        else:
            f /= dim[p]
        xv *= f
        if xv > BIG:
            total, xv = rescale_weights(wt, 0, v + 1 - lo, total, xv)
        wt[v + 1 - lo] = xv
        total += xv
    return lo, hi


@token_kernel
def _redraw(x, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals,
            bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mver, vs):
    """Every edge's s_e of (x, k) redrawn from :func:`edge_weights` in turn (one uniform per edge with two legal
    values or more)."""
    for e in range(par_ptr[x], par_ptr[x + 1]):
        lo, hi = edge_weights(x, k, e, wt, kind, dim, off, alpha, asum, a_of, b_of, par_node, par_gamma, gamma_sum,
                              avals, bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff)
        if hi <= lo:
            continue
        total = 0.0
        for v in range(hi - lo + 1):
            total += wt[v]
        v = lo + draw_scan(wt, 0, hi - lo, total)
        if v != s[eoff[e] + k]:
            _move(x, k, e, v - s[eoff[e] + k], off, par_node, eoff, tc, tp, TC, TP, s, Se, mver, vs)


@numba.njit(cache=True, error_model="numpy")
def cmgs_dag_sweep(seed, words, z, topic_inst, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node,
                   par_gamma, gamma_sum, avals, bvals, ratio3, cratio3, anc_ptr, anc, root_of, n, tc, tp, Nn, TC, TP,
                   s, Se, eoff, pass_end, pass_lo, pass_hi, nwk, nk, beta, frozen_phi, frozen, keep=True):
    """One CMGS cycle over every token (module docstring); after token pass_end[q] - 1 the pass-through cells of
    the Pitman-Yor vectors pass_lo[q] .. pass_hi[q] - 1 are redrawn. ``root_of``: every vector's one Dirichlet
    ancestor, or -1 everywhere (:func:`topic_rows`). ``keep=False``: every row recomputed at every token (for the
    test that the kept rows change nothing). Returns the rows of W recomputed."""
    np.random.seed(seed)
    N = words.shape[0]
    K = nk.shape[0]
    J = kind.shape[0]
    vbeta = nwk.shape[0] * beta
    inv = np.empty(K)
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + vbeta)
    R = np.zeros((J, K))
    B = np.zeros((J, K))
    mver = np.ones(J, np.int64)                  # every row stale at the start
    cver = np.zeros(J, np.int64)
    redo = np.full(J, -1, np.int64)
    vs = np.ones(1, np.int64)
    p = np.empty(K)
    wt = np.empty(ratio3.shape[1] + 2)
    q = 0
    rows = 0
    for i in range(N):
        w = words[i]
        jt = topic_inst[i]
        k0 = z[i]
        n[off[jt] + k0] -= 1
        Nn[jt] -= 1
        vs[0] += 1
        mver[jt] = vs[0]
        x = jt                                   # forced table removals, up the edge of the table that went
        while kind[x] == PYP:
            o = off[x] + k0
            if tp[o] <= n[o] + tc[o]:
                break
            e0, e1 = par_ptr[x], par_ptr[x + 1]
            e = e0
            if e1 - e0 > 1:
                u = np.random.random() * tp[o]
                while e < e1 - 1 and u >= s[eoff[e] + k0]:
                    u -= s[eoff[e] + k0]
                    e += 1
            _move(x, k0, e, -1, off, par_node, eoff, tc, tp, TC, TP, s, Se, mver, vs)
            x = par_node[e]
        if not frozen:
            nwk[w, k0] -= 1
            nk[k0] -= 1
            inv[k0] = 1.0 / (nk[k0] + vbeta)
        root = root_of[jt]
        if not keep:
            for qq in range(anc_ptr[jt], anc_ptr[jt + 1]):
                mver[anc[qq]] = vs[0] + 1
        rows += topic_rows(jt, root, R, B, mver, cver, redo, i, vs, anc_ptr, anc, kind, dim, off, alpha, asum, a_of,
                           b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, ratio3, n, tc, tp, Nn, TC, TP,
                           Se)
        total = 0.0
        for k in range(K):
            g = row_value(jt, k, R, B, root)
            if frozen:
                g *= frozen_phi[w, k]
            else:
                g *= (nwk[w, k] + beta) * inv[k]
            p[k] = g
            total += g
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("cmgs_dag_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_scan(p, 0, K - 1, total)
        x = jt                                   # new tables at the empty cells, an edge drawn by its term
        while kind[x] == PYP and tp[off[x] + k] == 0:
            e0, e1 = par_ptr[x], par_ptr[x + 1]
            e = e0
            if e1 - e0 > 1:
                gs = gamma_sum[x]
                tot = 0.0
                for ee in range(e0, e1):
                    tot += rho_num(par_gamma[ee], Se[ee], gs) / rho_den(gs, TP[x]) * row_value(par_node[ee], k, R, B, root)
                u = np.random.random() * tot
                while e < e1 - 1:
                    u -= rho_num(par_gamma[e], Se[e], gs) / rho_den(gs, TP[x]) * row_value(par_node[e], k, R, B, root)
                    if u < 0.0:
                        break
                    e += 1
            _move(x, k, e, 1, off, par_node, eoff, tc, tp, TC, TP, s, Se, mver, vs)
            x = par_node[e]
        z[i] = k
        n[off[jt] + k] += 1
        Nn[jt] += 1
        vs[0] += 1
        mver[jt] = vs[0]
        if not frozen:
            nwk[w, k] += 1
            nk[k] += 1
            inv[k] = 1.0 / (nk[k] + vbeta)
        if kind[jt] == PYP:
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
    return rows
