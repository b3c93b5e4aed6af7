"""A Pitman-Yor word vector with several parents mixed by rho on the Gibbs engine (issue 28): phi[topic] ~ PYP(a, b,
sum_e rho_e nu_e) over P >= 2 parents nu_e, each a Dirichlet root or the uniform over words, indexed by the corpus or
by the topic; rho ~ Dirichlet(gamma) integrated out ((gamma_e + S_ke)/(sum gamma + T_k), E9) or fixed (gamma_sum
< 0, :mod:`inference.pdpnet.rho`).

Cells (w, k): customers n_wk (the tokens), tables per parent edge s_ewk (t_wk = sum_e s_ewk); restaurants k: N_k,
T_k, S_ke. A corpus-level parent's customers are its edge's tables summed over topics (r_ew = sum_k s_ewk, R_e); a
per-topic parent's are s_ewk itself (its restaurant S_ke); the uniform reads 1/V (r_ew, R_e kept for every edge). A partition holds the indicators
its customers hold, which table and which edge (``own_s`` (P, U, K), 0 <= sum_e own_s <= own_n).

The moves are the network sampler's (:mod:`inference.pdpnet.kernels`) with its random numbers in its order, so one
partition is :class:`inference.pdpnet.sampler.NetworkSampler` draw for draw (tested):

* **decrement**: the leaving customer held one of its partition's t^p indicators with probability t^p/c^p (a
  number u c^p >= c^p - t^p; forced at t^p = 0 or t^p = c^p), the edge in proportion to own s^p_e (the rest of
  the same number; at t^p = c^p one more number unless one edge holds them all); a removal leaving the cell's
  customers without a table is undone (an identity move);
* **increment** (E14/E15 in table-indicator form): Z^+ = join + sum_e open rho_e nu_e(w) with join = S^{c+1}_t /
  S^c_t (c+1-t)/(c+1) / (b + N_k), open = (b + a T_k)/(b + N_k) S^{c+1}_{t+1} / S^c_t (t+1)/(c+1)
  (:func:`kernels.pyp_terms`'s operations); the token's topic from Z^+_topic(k) Z^+_word(k), then join or the
  edge drawn from the terms (one number);
* no re-seating of the word cells: every one has data customers, which the token steps move.

Several partitions: the AD-LDA staleness, and the race rule (:mod:`drivers.models.pdp_network.words_mix`): a cell
with customers and no table after the merge is read as one table on edge 0 (the lowest), which a partition with
own customers there opens before its next sweep."""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, open_exp_table
from inference.pdpnet.reseat import reseat_cells
from inference.pdpnet.rho import rho_den, rho_num
from inference.pdpnet.sweep import draw_topic, ratio_tables, topic_scratch, topic_zplus_rows

#: a parent edge's kind: a corpus-level Dirichlet root, a Dirichlet root per topic, the uniform
CORPUS_ROOT, TOPIC_ROOT, UNIFORM = 0, 1, 2


@token_kernel
def parent_z(e, u, k, ekind, ealpha, sloc, Sk, rc, RC, V):
    """nu_e(w) of edge e's parent at word u, topic k: (alpha + c)/(alpha V + C) (:func:`kernels.root_term`)."""
    kd = ekind[e]
    if kd == UNIFORM:
        return 1.0 / V
    if kd == CORPUS_ROOT:
        return (ealpha[e] + rc[e, u]) / (ealpha[e] * V + RC[e])
    return (ealpha[e] + sloc[e, u, k]) / (ealpha[e] * V + Sk[e, k])


@token_kernel
def mix_terms(u, k, a, b, p, nloc, sloc, Nk, Tk, Sk, rc, RC, ekind, ealpha, egam, egs, RJ, EO, V, terms):
    """Z^+ of cell (u, k): terms[0] the join, terms[1 + e] edge e's open (:func:`kernels.pyp_terms`)."""
    c = nloc[u, k]
    t = 0
    for e in range(sloc.shape[0]):
        t += sloc[e, u, k]
    C = Nk[k]
    T = Tk[k]
    join = 0.0
    if c > 0:
        join = RJ[p, c, t] / (b + C)
    terms[0] = join
    opn = (b + a * T) / (b + C) * EO[p, c, t] * (t + 1) / (c + 1)
    total = join
    for e in range(sloc.shape[0]):
        x = opn * rho_num(egam[e], Sk[e, k], egs) / rho_den(egs, T) * parent_z(e, u, k, ekind, ealpha, sloc, Sk, rc,
                                                                                RC, V)
        terms[e + 1] = x
        total += x
    return total


@token_kernel
def mix_move(u, k, e, d, nloc, sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, ekind, mx):
    """Add (d = 1) or remove (d = -1) a customer of cell (u, k) that holds a table on edge ``e`` (-1: none)."""
    own_n[u, k] += d
    nloc[u, k] += d
    Nk[k] += d
    mx[0] = max(mx[0], nloc[u, k])
    if e >= 0:
        own_s[e, u, k] += d
        sloc[e, u, k] += d
        Sk[e, k] += d
        Tk[k] += d
        rc[e, u] += d
        RC[e] += d
        t = 0
        for f in range(sloc.shape[0]):
            t += sloc[f, u, k]
        mx[1] = max(mx[1], t)


@token_kernel
def pick_edge(r, u, k, own_s):
    """The edge whose share of the own indicators the number ``r`` (< their sum) falls in."""
    e = 0
    P = own_s.shape[0]
    while e < P - 1 and r >= own_s[e, u, k]:
        r -= own_s[e, u, k]
        e += 1
    return e


@token_kernel
def mix_leave(u, k, nloc, sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, ekind, mx):
    """Remove an own customer of cell (u, k) (``remove_path``'s draws on the own counts); returns the edge of the
    table it held (-1: none), or -2 when the removal left the cell's customers without a table (undone)."""
    c = own_n[u, k]
    t = 0
    for f in range(own_s.shape[0]):
        t += own_s[f, u, k]
    e = -1
    if t > 0 and t < c:
        r = np.random.random() * c
        if r >= c - t:
            e = pick_edge(r - (c - t), u, k, own_s)
    elif t > 0:                         # every own customer holds one: which edge (forced_edge)
        f = 0
        while f < own_s.shape[0] - 1 and own_s[f, u, k] == 0:
            f += 1
        e = f if own_s[f, u, k] == t else pick_edge(np.random.random() * t, u, k, own_s)
    mix_move(u, k, e, -1, nloc, sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, ekind, mx)
    if e >= 0 and nloc[u, k] > 0:
        left = 0
        for f in range(sloc.shape[0]):
            left += sloc[f, u, k]
        if left == 0:
            mix_move(u, k, e, 1, nloc, sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, ekind, mx)
            return -2
    return e


@token_kernel
def seat_mix(terms, total, P):
    """Join (-1) or the edge of a new table, drawn from the terms (``seat_edge``'s number; P >= 2: no forced
    case)."""
    if not (total > 0.0 and total < np.inf):
        raise FloatingPointError("mix_word_sweep: a word cell's seating terms sum to NaN, inf or 0 (illegal tables)")
    r = np.random.random() * total
    if r < terms[0]:
        return -1
    r -= terms[0]
    e = 0
    while e < P - 1 and r >= terms[e + 1]:
        r -= terms[e + 1]
        e += 1
    return e


@numba.njit(cache=True, error_model="numpy")
def mix_word_sweep(start, reseed, seed, uidx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                   par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, nloc,
                   sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, pa, pb, ekind, ealpha, egam, egs, V):
    """One cycle from ``start`` (module docstring): token i's word row ``uidx[i]`` of the partition's cells
    ``nloc`` (U, K), ``sloc`` (P, U, K); restaurants ``Nk``, ``Tk`` (K,), ``Sk`` (P, K); a corpus parent's
    customers ``rc`` (P, U), ``RC`` (P,); edge e's parent kind ``ekind[e]``, its alpha, its gamma ``egam[e]``;
    ``egs`` sum gamma (< 0: fixed rho); phi's discount ``avals[pa]``, concentration ``bvals[pb]``. Then the topic
    side's re-seating. Returns -1 when done or the position to resume from once the Stirling table covers max c + 2
    and max t + 2 (``mx``)."""
    if reseed:
        np.random.seed(seed)
    N = uidx.shape[0]
    K = nloc.shape[1]
    P = sloc.shape[0]
    J = kind.shape[0]
    Z, terms, Zb, slot, pnA, peA, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    wterms = np.zeros(P + 1)
    rows = L3.shape[1]
    cols = L3.shape[2]
    RJ, RO = ratio_tables(L3)
    EO = open_exp_table(L3)
    a = avals[pa]
    b = bvals[pb]
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
        e0 = mix_leave(u, k0, nloc, sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, ekind, mx)
        if ia or e0 == -2:
            undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            if e0 != -2:
                mix_move(u, k0, e0, 1, nloc, sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, ekind, mx)
            pos += 1
            continue
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        total = 0.0
        for kk in range(K):
            zw = mix_terms(u, kk, a, b, pa, nloc, sloc, Nk, Tk, Sk, rc, RC, ekind, ealpha, egam, egs, RJ, EO, V,
                           wterms)
            total += Zb[r, kk] * zw
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("mix_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
        k = draw_topic(cum, total, K)
        for x in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[x]] = Zb[slot[anc[x]], k]
        add_path_r(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        zw = mix_terms(u, k, a, b, pa, nloc, sloc, Nk, Tk, Sk, rc, RC, ekind, ealpha, egam, egs, RJ, EO, V, wterms)
        e = seat_mix(wterms, zw, P)
        mix_move(u, k, e, 1, nloc, sloc, Nk, Tk, Sk, rc, RC, own_n, own_s, ekind, mx)
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
    return -1
