"""Du's collapsed multiplicity Gibbs sampler (CMGS; thesis Alg. 2/5, (3.6); SeqLDA's (6.4)-(6.7)) on a network
whose topic-side Pitman-Yor vectors have one parent each (issue 28, ``"sampler": "cmgs"``).

State: the multiplicities (customers c = n + t^c and tables t per cell; for a one-parent vector t = s of its edge).
A token of topic k leaves its vector x_0 and only forced tables go (t > c after the decrement, cascading up). Its
new topic's weight, with x_0, x_1, .. its ancestors and m_k the number of levels empty for k above and at x_0:

    m_k = 0:  S^{c+1}_t / S^c_t at x_0                                      ((6.6): join x_0's tables)
    m_k > 0:  O(x_0) prod_{i=1..m_k-1} O(x_i) Term(x_{m_k}, k)               ((6.4)/(6.5): open at x_0..x_{m_k-1})

O(x) = (b_x + a_x T_x) / den(parent of x), den = b + C (Pitman-Yor), sum alpha + C (Dirichlet root), 1 (uniform);
Term = S^{c+1}_t / S^c_t (an occupied Pitman-Yor vector), alpha + c (a root), 1/dim (uniform); times the word
factor (the engine's topic-word table); the common 1/(b + C) of x_0 dropped. Then t at x_0 is redrawn from (6.7)
on its support; after each document the pass-through cells (n = 0, t^c >= 2) are redrawn too (the built-in's
``table_sweep``). Along a vector the products P[m] = prod_{i=1..m-1} O(x_i) and every topic's factor are kept and
refreshed only when a table above x_0 changed: O(K + levels changed) per token, the built-in SeqLDA kernel's
arithmetic operation for operation (tested draw for draw). NOT exactly invariant for the joint (3.6): the removal
never drops a table the token might have sat at alone (thesis; z-marginal TV 0.05-0.19 on enumerable chains).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import BIG, draw_scan, rescale_weights, token_kernel
from inference.pdpnet.kernels import DIR, PYP


@numba.njit(cache=True)
def table_draw_scratch(kind, dim, off, n, tc, N):
    """The weights' scratch of a table-count draw (6.7): one more than the largest Pitman-Yor cell's customers c
    (or the tokens N, which a sweep can add to a cell), plus one."""
    cmax = 1
    for x in range(kind.shape[0]):
        if kind[x] == PYP:
            for k in range(dim[x]):
                cmax = max(cmax, n[off[x] + k] + tc[off[x] + k])
    return np.empty(max(cmax, N) + 2)


@token_kernel
def _den(p, kind, asum, b_of, bvals, Nn, TC):
    """The denominator of vector p's predictive: b + C (Pitman-Yor), sum alpha + C (root), 1 (uniform)."""
    if kind[p] == PYP:
        return bvals[b_of[p]] + Nn[p] + TC[p]
    if kind[p] == DIR:
        return asum[p] + Nn[p] + TC[p]
    return 1.0


@token_kernel
def _open_factor(x, kind, asum, a_of, b_of, par_ptr, par_node, avals, bvals, Nn, TC, TP):
    """O(x) = (b_x + a_x T_x) / den(parent of x) (the built-in's G_j)."""
    return (bvals[b_of[x]] + avals[a_of[x]] * TP[x]) / _den(par_node[par_ptr[x]], kind, asum, b_of, bvals, Nn, TC)


@token_kernel
def _term(x, k, kind, dim, off, alpha, a_of, ratio3, n, tc, tp):
    """Topic k's factor at the first occupied level x: S^{c+1}_t / S^c_t, alpha + c (root) or 1/dim."""
    o = off[x] + k
    if kind[x] == PYP:
        return ratio3[a_of[x], n[o] + tc[o], tp[o]]
    if kind[x] == DIR:
        return alpha[x] + (n[o] + tc[o])
    return 1.0 / dim[x]


@token_kernel
def _empty_levels(k, lev, L, kind, off, tp):
    """m_k: the number of levels from x_0 up whose Pitman-Yor cell of k has no table (a root ends the walk)."""
    m = 0
    while m < L - 1 and kind[lev[m]] == PYP and tp[off[lev[m]] + k] == 0:
        m += 1
    return m


@token_kernel
def _factor(k, m, P, lev, kind, dim, off, alpha, a_of, ratio3, n, tc, tp):
    """F_k = P[m_k] Term(x_{m_k}, k) (m_k = 0: the join ratio at x_0)."""
    if m[k] == 0:
        return _term(lev[0], k, kind, dim, off, alpha, a_of, ratio3, n, tc, tp)
    return P[m[k]] * _term(lev[m[k]], k, kind, dim, off, alpha, a_of, ratio3, n, tc, tp)


@token_kernel
def _move_table(x, k, d, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se):
    """t of (x, k) += d: its edge's s, the parent's customers t^c."""
    tp[off[x] + k] += d
    TP[x] += d
    e = par_ptr[x]
    s[eoff[e] + k] += d
    Se[e] += d
    p = par_node[e]
    tc[off[p] + k] += d
    TC[p] += d


@token_kernel
def table_weights(x, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals, ratio3,
                  cratio3, n, tc, tp, Nn, TC, TP):
    """Unnormalised (6.7) of t of (x, k) into wt[lo..hi] on its support [max(1, t_p - c_p'), c] (c_p' the
    parent's customers without x's tables); returns (lo, hi, sum), hi <= lo: nothing to draw. The factors in v:
    (b|a)_{T'+v} S^c_v times, at a Pitman-Yor parent, S^{c_p'+v}_{t_p} / (b_p)_{C_p'+v}, at a root
    Gamma(alpha + c_p' + v) / Gamma(sum alpha + C_p' + v), at a uniform parent dim^-v; a running product of
    neighbour ratios, rescaled before overflow (the built-in's ``seqlda_table_weights``)."""
    o = off[x] + k
    c = n[o] + tc[o]
    p = par_node[par_ptr[x]]
    op = off[p] + k
    t = tp[o]
    cpr = n[op] + tc[op] - t
    lo = 1
    if kind[p] == PYP:
        lo = max(1, tp[op] - cpr)
    hi = c
    if hi <= lo:
        return lo, hi, 0.0
    q = a_of[x]
    a = avals[q]
    b = bvals[b_of[x]]
    Tr = TP[x] - t
    Cpr = TC[p] - t
    xv = 1.0
    wt[lo] = 1.0
    total = 1.0
    kp = kind[p]                                  # the parent's terms, loop-invariant (the same floats)
    ap = a_of[p] if kp == PYP else 0
    tpp = tp[op]
    bn = bvals[b_of[p]] + Nn[p] if kp == PYP else 0.0
    ac = alpha[p] + cpr
    an = asum[p]
    cn = Nn[p] + Cpr - 1
    ud = float(dim[p])
    cr = cratio3[q, c]                            # row views: v needs no wraparound
    rp = ratio3[ap]
    for v in range(lo + 1, hi + 1):
        f = (b + a * (Tr + v - 1)) * cr[v]
        if kp == PYP:
            f *= rp[cpr + v - 1, tpp] / (bn + (Cpr + v - 1))
        elif kp == DIR:
            f *= (ac + v - 1) / (an + (cn + v))
        else:
            f /= ud
        xv *= f
        if xv > BIG:
            total, xv = rescale_weights(wt, lo, v, total, xv)
        wt[v] = xv
        total += xv
    return lo, hi, total


@token_kernel
def resample_table(x, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals, ratio3,
                   cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff):
    """Redraw t of (x, k) from (6.7) (:func:`table_weights`): one uniform draw when the support has two values or
    more, none otherwise; the parent's customers follow."""
    if n[off[x] + k] + tc[off[x] + k] == 0:
        return
    lo, hi, total = table_weights(x, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals,
                                  bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP)
    if hi <= lo:
        return
    v = draw_scan(wt, lo, hi, total)
    _move_table(x, k, v - tp[off[x] + k], off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)


@token_kernel
def _refresh(K, m, P, F, lev, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals, ratio3, n,
             tc, tp, Nn, TC, TP):
    """P[1..max m] and every topic's factor F_k from m (the built-in's ``seqlda_cmgs_kept_weights`` when
    ``above``)."""
    mm = 0
    for k in range(K):
        mm = max(mm, m[k])
    P[1] = 1.0
    qq = 1.0
    for lv in range(1, mm):
        qq *= _open_factor(lev[lv], kind, asum, a_of, b_of, par_ptr, par_node, avals, bvals, Nn, TC, TP)
        P[lv + 1] = qq
    for k in range(K):
        F[k] = _factor(k, m, P, lev, kind, dim, off, alpha, a_of, ratio3, n, tc, tp)


@numba.njit(cache=True, error_model="numpy")
def _check_kept(check, K, m, F, m2, P2, F2, lev, L, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node,
                avals, bvals, ratio3, n, tc, tp, Nn, TC, TP):
    """:func:`cmgs_sweep`'s self-check at a token (not inlined: the sweep's loop stays small): m and every F
    recomputed into m2/P2/F2; check[0] = inf if an m differs, else the largest relative difference of F."""
    for k in range(K):
        m2[k] = _empty_levels(k, lev, L, kind, off, tp)
        if m2[k] != m[k]:
            check[0] = np.inf
    _refresh(K, m2, P2, F2, lev, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals,
             ratio3, n, tc, tp, Nn, TC, TP)
    for k in range(K):
        check[0] = max(check[0], abs(F[k] - F2[k]) / max(abs(F2[k]), 1e-300))


@numba.njit(cache=True)
def cmgs_init(z, topic_inst, words, kind, off, par_ptr, par_node, eoff, n, tc, tp, Nn, TC, TP, s, Se, nwk, nk,
              frozen):
    """Count every token of z (and into the engine's topic-word table), then one table wherever a Pitman-Yor
    cell has customers, children first (thesis Alg. 5, step 2)."""
    for i in range(z.shape[0]):
        jt = topic_inst[i]
        n[off[jt] + z[i]] += 1
        Nn[jt] += 1
        if not frozen:
            nwk[words[i], z[i]] += 1
            nk[z[i]] += 1
    for x in range(kind.shape[0] - 1, -1, -1):
        if kind[x] != PYP:
            continue
        for k in range(off[x + 1] - off[x]):
            o = off[x] + k
            if n[o] + tc[o] > 0 and tp[o] == 0:
                _move_table(x, k, 1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)


@numba.njit(cache=True, error_model="numpy")
def cmgs_sweep(seed, words, z, topic_inst, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals,
               ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff, pass_end, pass_lo, pass_hi, nwk, nk, beta,
               frozen_phi, frozen, maxdepth, check):
    """One CMGS cycle over every token (module docstring); after token pass_end[q] - 1 the pass-through cells of
    the Pitman-Yor vectors pass_lo[q] .. pass_hi[q] - 1 (n = 0, t^c >= 2) are redrawn by (6.7). The topic draw
    and every (6.7) draw take one uniform each from numba's generator seeded by ``seed`` (the built-in SeqLDA
    kernel's order). ``check`` (size 1, else 0): recompute m and the topic factors at every token and keep the
    largest relative difference from the kept ones in check[0] (inf: an m differed; 0.0: they are exact)."""
    np.random.seed(seed)
    N = words.shape[0]
    K = nk.shape[0]
    vbeta = nwk.shape[0] * beta
    inv = np.empty(K)
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + vbeta)
    lev = np.empty(maxdepth + 1, np.int64)
    m = np.zeros(K, np.int64)
    P = np.ones(maxdepth + 1)
    F = np.empty(K)
    p = np.empty(K)
    wt = table_draw_scratch(kind, dim, off, n, tc, N)
    cur = -1
    q = 0
    L = 0
    stale = False
    m2 = np.zeros(K, np.int64)
    P2 = np.ones(maxdepth + 1)
    F2 = np.empty(K)
    for i in range(N):
        w = words[i]
        jt = topic_inst[i]
        k0 = z[i]
        full = stale
        stale = False
        if jt != cur:                                       # a new vector: its levels, m_k, everything kept
            chained = cur >= 0 and kind[jt] == PYP and par_node[par_ptr[jt]] == cur
            if chained:                                     # the next vector of a chain: one level more, no walk
                for lv in range(L, 0, -1):
                    lev[lv] = lev[lv - 1]
                lev[0] = jt
                L += 1
            else:
                L = 0
                x = jt
                while True:
                    lev[L] = x
                    L += 1
                    if kind[x] != PYP:
                        break
                    x = par_node[par_ptr[x]]
            for k in range(K):
                if chained:
                    m[k] = 0 if tp[off[jt] + k] > 0 else m[k] + 1
                else:
                    m[k] = _empty_levels(k, lev, L, kind, off, tp)
            cur = jt
            full = True
        o0 = off[jt]
        n[o0 + k0] -= 1
        Nn[jt] -= 1
        x = jt                                              # forced table removals, cascading up
        up = 0
        while kind[x] == PYP:
            o = off[x] + k0
            if tp[o] <= n[o] + tc[o]:
                break
            _move_table(x, k0, -1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
            x = par_node[par_ptr[x]]
            up += 1
        if up >= 2:
            full = True
        if up >= 1:
            m[k0] = _empty_levels(k0, lev, L, kind, off, tp)
        if not frozen:
            nwk[w, k0] -= 1
            nk[k0] -= 1
            inv[k0] = 1.0 / (nk[k0] + vbeta)
        if full:
            _refresh(K, m, P, F, lev, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals,
                     ratio3, n, tc, tp, Nn, TC, TP)
        else:
            F[k0] = _factor(k0, m, P, lev, kind, dim, off, alpha, a_of, ratio3, n, tc, tp)
        if check.shape[0] > 0:                              # the kept m and F against a recomputation
            _check_kept(check, K, m, F, m2, P2, F2, lev, L, kind, dim, off, alpha, asum, a_of, b_of, par_ptr,
                        par_node, avals, bvals, ratio3, n, tc, tp, Nn, TC, TP)
        gj = 0.0
        if kind[jt] == PYP:
            gj = _open_factor(jt, kind, asum, a_of, b_of, par_ptr, par_node, avals, bvals, Nn, TC, TP)
        total = 0.0
        fw = frozen_phi[w] if frozen else frozen_phi[0]     # row views: k needs no wraparound
        nw = nwk[w]
        for k in range(K):
            if frozen:
                g = F[k] * fw[k]
            else:
                g = F[k] * ((nw[k] + beta) * inv[k])
            if m[k] > 0:
                g *= gj
            p[k] = g
            total += g
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("cmgs_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_scan(p, 0, K - 1, total)
        for lv in range(m[k]):                              # new tables at x_0 .. x_{m_k - 1}
            _move_table(lev[lv], k, 1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
        stale = m[k] >= 2                                   # a table above x_0: P and every F next token
        m[k] = 0
        z[i] = k
        n[o0 + k] += 1
        Nn[jt] += 1
        if not frozen:
            nwk[w, k] += 1
            nk[k] += 1
            inv[k] = 1.0 / (nk[k] + vbeta)
        if kind[jt] == PYP:
            resample_table(jt, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals,
                           ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff)
        F[k] = _factor(k, m, P, lev, kind, dim, off, alpha, a_of, ratio3, n, tc, tp)
        while q < pass_end.shape[0] and pass_end[q] == i + 1:   # the document's pass-through cells
            for x in range(pass_lo[q], pass_hi[q]):
                if kind[x] != PYP:
                    continue
                for kk in range(dim[x]):
                    o = off[x] + kk
                    if n[o] == 0 and tc[o] >= 2:
                        resample_table(x, kk, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node,
                                       avals, bvals, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff)
            cur = -1
            q += 1
