"""A Pitman-Yor word side under the multiplicity samplers (issue 28; ``"sampler": "cmgs"`` / ``"exact"`` on
pyp-lda.json's shape: phi_k ~ PYP(a, b, nu) per topic over one corpus-level word vector nu, a Dirichlet(beta0) root
or the uniform 1/V; the topic side Dirichlet vectors, whose moves are the network sampler's).

**State**: the word cells in multiplicity form, customers c = n_wk and tables t = t_wk (no indicators), the
topics' N_k, T_k, the root's customers t_w = sum_k t_wk and their sum; the joint is the word side's part of (E12),

    H = prod_k (b|a)_{T_k} / (b)_{N_k}  prod_wk S^{c_wk}_{t_wk, a}  DM(t_w; beta0)     (C^t_s = 1: one parent),

and with several partitions each keeps its own tables t^p <= n^p of its own customers (t = sum_p t^p, the
indicator side's ownership, :mod:`inference.pdpnet.word_pyp`), the others' read as of the last synchronisation.

**Moves** (token i of word w, topic k0; Du's thesis Alg. 2 / (3.6) on the word side, as
:mod:`inference.pdpnet.multiplicity` on the topic side):

1. removal: cmgs drops the token's table only when forced (t = c, CMGS's bias); exact with probability
   S^{c-1}_{t-1} / S^c_t (the seating arrangement's conditional that it sat alone; no random number at t = c or
   t = 1 < c). With several partitions a removal that takes a table the partition does not hold (t^p = 0) or keeps
   one it cannot (t^p = n^p) is refused (the identity; never with one partition);
2. the topic: p(k) ∝ Z^+_topic(k) F(k), with nu_w = (beta0 + t_w)/(V beta0 + sum t) (or 1/V):
       cmgs:  F(k) = S^{c+1}_t / S^c_t / (b + N_k) (t > 0: join, t unchanged; (6.6)),
              (b + a T_k) nu_w / (b + N_k) (t = 0: open)
       exact: F(k) = ((c - a t) + (b + a T_k) nu_w) / (b + N_k)            (the seating predictive)
   (H's ratios after/before summed over the completions each allows); exact then opens a table with probability
   (b + a T_k) nu_w / ((c - a t) + (b + a T_k) nu_w), its customer arriving at the root;
3. t of the token's cell (w, k) from H's conditional ((6.7) on the word side; after a refused removal too, at k0):
       p(v) ∝ (b|a)_{T_k' + v} S^c_v Gamma(beta0 + t_w' + v) / Gamma(V beta0 + T' + v)  [V^{-v}: uniform root]
                 binom(n^p, v^p) / binom(c, v),        v = t^o + v^p,  v^p in [max(0, 1 - t^o), n^p]
   (primes: without the cell's t; t^o the others' tables; the binomials keep the split of t among partitions,
   1 with one partition).

With one partition the exact moves leave H invariant (tested against the enumerated joint); cmgs differs by its
removal and join-only completions. Move 3 reads the weights outwards from the current t until they fall 1e-30
below the largest (a cell's t is concentrated far below its c: the full support would cost O(c) per token); its
part beyond the Stirling table's columns waits for the table to grow (a Gibbs step on a fixed part of the support).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.gibbs.common import BIG, draw_scan, token_kernel
from inference.pdpnet.kernels import remove_path, undo_path
from inference.pdpnet.mult_removal import RIGHT, WRONG_REMOVAL, own_removal  # noqa: F401 (the switch, as before)
from inference.pdpnet.ratio_path import add_path_r
from inference.pdpnet.sweep import draw_topic, topic_scratch, topic_zplus_rows
from inference.pdpnet.word_bigram import root_weight

@numba.njit(cache=True)
def stirling_steps(L3):
    """``SR[p, 0, c, t]`` = S^{c+1}_t / S^c_t and ``SR[p, 1, c, t]`` = S^c_{t+1} / S^c_t for every stored
    1 <= t <= c (0 elsewhere) of the log Stirling table ``L3[p]``: the neighbour ratios moves 2 and 3 read (one exp
    each per kernel call, not per token)."""
    P, R, M = L3.shape
    SR = np.zeros((P, 2, R - 1, M - 1))
    for p in range(P):
        for c in range(1, R - 1):
            for t in range(1, min(c + 1, M - 1)):
                SR[p, 0, c, t] = math.exp(L3[p, c + 1, t] - L3[p, c, t])
                if t + 1 <= c:
                    SR[p, 1, c, t] = math.exp(L3[p, c, t + 1] - L3[p, c, t])
    return SR


@token_kernel
def word_weight(c, t, N, T, a, b, nu, exact, SR):
    """F(k) of move 2 (module docstring) for a cell with c customers, t tables, its topic's N, T (``SR``:
    :func:`stirling_steps` of the discount)."""
    inv = 1.0 / (b + N)
    if exact:
        return ((c - a * t) + (b + a * T) * nu) * inv
    if t > 0:
        return SR[0, c, t] * inv
    return (b + a * T) * nu * inv


@numba.njit(cache=True)
def word_prologue(L3, q, nloc, tloc, N, mx):
    """(the table count draws' scratch, :func:`stirling_steps` of the discount ``q``'s ``L3[q]``) of a sweep over
    ``N`` tokens; ``mx`` raised to the cells' largest c and t as given (the Stirling table must cover them)."""
    cmax = 1
    for u in range(nloc.shape[0]):
        for k in range(nloc.shape[1]):
            cmax = max(cmax, nloc[u, k])
    mx[0] = max(mx[0], cmax)
    for u in range(tloc.shape[0]):
        for k in range(tloc.shape[1]):
            mx[1] = max(mx[1], tloc[u, k])
    return np.empty(cmax + N + 2), stirling_steps(L3[q:q + 1])[0]


@token_kernel
def word_factor(u, cc, w, k, a, b, beta0, exact, SR, nloc, tloc, Nc, Tc, troot, Troot):
    """F(k) of move 2 at word cell (u, k) of context ``cc`` (:func:`word_weight` with the root's predictive)."""
    nu = root_weight(w, k, troot, Troot, beta0, troot.shape[0])
    return word_weight(nloc[u, k], tloc[u, k], Nc[cc, k], Tc[cc, k], a, b, nu, exact, SR)


@token_kernel
def word_leave(u, cc, w, k, gone, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx):
    """The leaving token out of word cell (u, k) (its table with it when ``gone``)."""
    own_n[u, k] -= 1
    nloc[u, k] -= 1
    Nc[cc, k] -= 1
    if gone:
        _tables(u, cc, w, k, -1, tloc, Tc, troot, Troot, own_t, mx)


@token_kernel
def word_arrive(u, cc, w, k, a, b, beta0, exact, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx):
    """The arriving token into word cell (u, k): a table opened (:func:`word_opens`), its customer counted."""
    nu = root_weight(w, k, troot, Troot, beta0, troot.shape[0])
    if word_opens(nloc[u, k], tloc[u, k], Tc[cc, k], a, b, nu, exact):
        _tables(u, cc, w, k, 1, tloc, Tc, troot, Troot, own_t, mx)
    own_n[u, k] += 1
    nloc[u, k] += 1
    Nc[cc, k] += 1
    if nloc[u, k] > mx[0]:
        mx[0] = nloc[u, k]


@token_kernel
def word_opens(c, t, T, a, b, nu, exact):
    """Whether the arriving token opens a table: cmgs at t = 0 only; exact with the predictive's open share (no
    random number when there is no table to join)."""
    if not exact:
        return t == 0
    stay = c - a * t
    return stay <= 0.0 or np.random.random() * (stay + (b + a * T) * nu) >= stay


@token_kernel
def _tables(u, cc, w, k, d, tloc, Tc, troot, Troot, own_t, mx):
    """t of cell (u, k) += d (the partition's own, its context's T and the root's customers with it)."""
    own_t[u, k] += d
    tloc[u, k] += d
    Tc[cc, k] += d
    r = k if troot.shape[1] > 1 else 0
    troot[w, r] += d
    Troot[r] += d
    if tloc[u, k] > mx[1]:
        mx[1] = tloc[u, k]


@token_kernel
def _step(v, to, c, Tr, twr, Tsr, npp, split, a, b, beta0, V, SR):
    """p(v^p = v) / p(v^p = v - 1) of move 3 (global tables g = t^o + v - 1 before the step)."""
    g = to + v - 1
    f = (b + a * (Tr + g)) * SR[1, c, g]
    if beta0 > 0.0:
        f *= (beta0 + twr + g) / (V * beta0 + Tsr + g)
    else:
        f /= V
    if split:                                # binom(n^p, v^p) / binom(c, t^o + v^p), stepwise
        f *= (npp - v + 1) / v * (g + 1) / (c - g)
    return f


@token_kernel
def word_table_redraw(u, cc, w, k, wt, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_t, mx):
    """Move 3 of the module docstring at cell (u, k) (:func:`own_table_draw`). Returns the window (lo, hi) of
    ``wt``."""
    r = k if troot.shape[1] > 1 else 0
    d, dn, up = own_table_draw(wt, nloc[u, k], tloc[u, k], own_t[u, k], own_n[u, k], Tc[cc, k], troot[w, r],
                               Troot[r], troot.shape[0], beta0, a, b, SR, mx)
    if d != 0:
        _tables(u, cc, w, k, d, tloc, Tc, troot, Troot, own_t, mx)
    return dn, up


@token_kernel
def own_table_draw(wt, c, t, mine, npp, T, tw, Tsum, V, beta0, a, b, SR, mx):
    """Move 3 of the module docstring on a cell with c customers, t tables (``mine`` the partition's of its ``npp``
    customers), its restaurant's T, its root cell's customers ``tw`` of ``Tsum`` (a Dirichlet(beta0) root over V
    values, or the uniform at beta0 <= 0): its weights from the current v^p outwards (running products of the
    neighbour ratios, rescaled before overflow) until they fall 1e-30 below the largest and keep falling (the rest
    of the support is below double precision's reach), then one uniform; on the support's part the Stirling table
    covers (``mx[1]`` raised past it: the caller grows the table; a Gibbs step on a fixed part holding the current
    value is one too). Returns (the change of t, the window of ``wt``)."""
    if c == 0:
        return 0, 0, -1
    to = t - mine
    lo = max(0, 1 - to)
    hi = min(npp, SR.shape[2] - 1 - to)
    if hi < npp:
        mx[1] = max(mx[1], SR.shape[2] + 1)
    if hi <= lo:
        return 0, lo, hi
    Tr = T - t
    twr = tw - t
    Tsr = Tsum - t
    split = npp < c
    top = 1.0
    x = 1.0
    wt[mine] = 1.0
    up = mine
    for v in range(mine + 1, hi + 1):
        f = _step(v, to, c, Tr, twr, Tsr, npp, split, a, b, beta0, V, SR)
        x *= f
        if x > BIG:
            for q in range(mine, v):
                wt[q] /= BIG
            x /= BIG
            top /= BIG
        wt[v] = x
        up = v
        top = max(top, x)
        if f < 1.0 and x < top * 1e-30:
            break
    x = wt[mine]
    dn = mine
    for v in range(mine, lo, -1):
        f = _step(v, to, c, Tr, twr, Tsr, npp, split, a, b, beta0, V, SR)
        x /= f
        if x > BIG:
            for q in range(v, up + 1):
                wt[q] /= BIG
            x /= BIG
            top /= BIG
        wt[v - 1] = x
        dn = v - 1
        top = max(top, x)
        if f > 1.0 and x < top * 1e-30:
            break
    total = 0.0
    for v in range(dn, up + 1):
        total += wt[v]
    return draw_scan(wt, dn, up, total) - mine, dn, up


@numba.njit(cache=True, error_model="numpy")
def mult_word_sweep(start, reseed, seed, uidx, pword, pctx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                    a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s,
                    Se, eoff, mx, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, pw, bw, beta0, exact, wrong):
    """One cycle from position ``start`` over every token (module docstring; ``exact``: the exact removal and
    predictive, else cmgs's); the topic side's moves are the network sampler's (Dirichlet vectors only: no
    re-seating, no Stirling lookups). Arguments as :func:`inference.pdpnet.word_bigram.bigram_word_sweep`'s (one
    context). Returns -1 when done or the position to resume from once ``L3`` covers max c + 3 and max t + 3
    (``mx``; raised by move 3 when its support reached past the table)."""
    if reseed:
        np.random.seed(seed)
    N = uidx.shape[0]
    K = nloc.shape[1]
    J = kind.shape[0]
    Z, terms, Zb, slot, pnA, peA, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    rows = L3.shape[1]
    cols = L3.shape[2]
    wt, SR = word_prologue(L3, pw, nloc, tloc, N, mx)
    RJ = np.zeros((1, 1, 1))                   # (the topic side has no Pitman-Yor vector: never read)
    a = avals[pw]
    b = bvals[bw]
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        pos += 1
        u = uidx[i]
        w = pword[u]
        cc = pctx[u]
        jt = topic_inst[i]
        k0 = z[i]
        gone, refused = own_removal(nloc[u, k0], tloc[u, k0], own_t[u, k0], own_n[u, k0], exact, wrong, L3, pw)
        if refused:
            word_table_redraw(u, cc, w, k0, wt, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_t, mx)
            continue                           # (several partitions only: the identity, then move 3)
        da, ia = remove_path(jt, k0, True, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se,
                             eoff, mx)
        if ia:
            undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            continue
        word_leave(u, cc, w, k0, gone, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx)
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RJ, n, tc, tp, Nn, TC, TP, Se)
        total = 0.0
        for kk in range(K):
            total += Zb[r, kk] * word_factor(u, cc, w, kk, a, b, beta0, exact, SR, nloc, tloc, Nc, Tc, troot, Troot)
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("mult_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
        k = draw_topic(cum, total, K)
        for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[q]] = Zb[slot[anc[q]], k]
        add_path_r(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, RJ, RJ, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        word_arrive(u, cc, w, k, a, b, beta0, exact, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx)
        z[i] = k
        word_table_redraw(u, cc, w, k, wt, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_t, mx)
    return -1
