"""Left-to-right evaluation of a network with a bigram-topic word side (issue 28; tlm.json: phi[topic,
previous_word] ~ PYP(a, b, psi_k), psi_k ~ Dirichlet(beta0) or uniform), each particle carrying its document's
own earlier tokens in the word side's counts as ``--model tlm``'s left-to-right does (Wallach et al. 2009, Alg. 3;
:func:`drivers.models.tlm.kernels.left_to_right_document`). Pure numba.

The trained state is frozen and comes first: in a cell (k, w', w) its customers n0 sit at t0 tables (race-legal);
the contexts' N, T and the roots' customers t_kw likewise. A particle's document customers are seated after them
by the Chinese restaurant (given the trained arrangement the later customers are exchangeable, and every
probability below depends on the counts only): a document customer sits with the trained tables as a group
(weight n0 + m0 - a t0, m0 the document's customers there) or at one of the tables the document opened (its
size - a), or opens one (b + a T_{k,w'}) psi_k(w), whose customer goes to the root psi_k. The particle keeps every
token's table (the trained group or its own table's id). Token n (pair (w', w)):

    1. (``resample``) one sweep over the earlier tokens m < n: m leaves its table (a table it leaves empty closes,
       its root customer leaves), then (z_m, its table) is drawn from
           Z^+_topic(k) [(n - a t) + (b + a T_{k,w'}) psi_k(w)] / (b + N_{k,w'})
       and the table as in 3 (the topic side's exact moves as :func:`inference.pdpnet.left_to_right.
       network_particles`; the word side's exact: the leaving customer is the last of an exchangeable sequence);
    2. p_n = sum_k P_jt(k) f_n(k): P the topic side's sequential predictive, f_n(k) the word side's
           f_n(k) = [(n - a t) + (b + a T_{k,w'}) psi_k(w)] / (b + N_{k,w'}),
           psi_k(w) = (beta0 + t_kw) / (V beta0 + T_k)        (uniform root: 1 / V)
       over the trained plus the particle's own counts;
    3. z_n ~ P_jt(k) f_n(k), seated by the same sequential process on both sides (word side: the trained group,
       an own table or a new one, weights above).

Why not the engine's table indicators for the document's customers (a leaving customer held one of the
document's indicators with probability t^d / n^d, the trained ones frozen): conditioned on the trained customers'
indicators, that joint is not the restaurant's continued from the trained counts (a = 0, n0 = 2, t0 = 1, one
document customer: opens with odds b psi : 2 in the restaurant, 3 b psi : 2 under the indicators), and the
particles' products were biased by 1-2% on the test's document.

Each particle's product is unbiased for p(w | the trained state) (tests/kernels/test_pdpnet_bigram_left_to_right.py:
against the sequential process enumerated on a tiny document).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.doc_restaurant import doc_add, doc_remove, doc_rows
from inference.pdpnet.left_to_right import predictive_rows, trained_cells
from inference.pdpnet.sweep import draw_topic, topic_scratch


@token_kernel
def _factor(u, c, w, k, a, b, beta0, V, nloc, tloc, Nc, Tc, troot, Troot):
    """f(k): the restaurant's predictive of word w at cell (pair u, topic k) of context c (module docstring)."""
    return ((nloc[u, k] - a * tloc[u, k]) + (b + a * Tc[c, k]) * _psi(w, k, troot, Troot, beta0, V)) / (b + Nc[c, k])


@numba.njit(cache=True)
def _seat(i, u, c, w, k, a, b, beta0, V, nloc0, tloc0, nloc, tloc, Nc, Tc, troot, Troot, tab, size, cell, at0):
    """Seat token i at cell (u, k): with the trained group, at an own table or at a new one (module docstring);
    forced (no random number) when there is nothing to join."""
    K = nloc.shape[1]
    join = nloc[u, k] - a * tloc[u, k]
    x = 0.0
    if join > 0.0:
        x = np.random.random() * (join + (b + a * Tc[c, k]) * _psi(w, k, troot, Troot, beta0, V))
    nloc[u, k] += 1
    Nc[c, k] += 1
    if join <= 0.0 or x >= join:
        j = 0
        while size[j] > 0:
            j += 1
        size[j], cell[j], tab[i] = 1, u * K + k, j
        tloc[u, k] += 1
        Tc[c, k] += 1
        troot[w, k] += 1
        Troot[k] += 1
        return
    group = nloc0[u, k] + at0[u, k] - a * tloc0[u, k]
    if x < group:
        tab[i] = -1
        at0[u, k] += 1
        return
    x -= group
    last = -1
    for j in range(size.shape[0]):
        if size[j] > 0 and cell[j] == u * K + k:
            last = j
            if x < size[j] - a:
                break
            x -= size[j] - a
    if last < 0:                       # rounding at a group weight of ~0: the trained group
        tab[i] = -1
        at0[u, k] += 1
        return
    size[last] += 1
    tab[i] = last


@numba.njit(cache=True)
def _unseat(i, u, c, w, k, nloc, tloc, Nc, Tc, troot, Troot, tab, size, at0):
    """Token i leaves its table (an own table it leaves empty closes: its root customer leaves)."""
    nloc[u, k] -= 1
    Nc[c, k] -= 1
    j = tab[i]
    if j < 0:
        at0[u, k] -= 1
        return
    size[j] -= 1
    if size[j] == 0:
        tloc[u, k] -= 1
        Tc[c, k] -= 1
        troot[w, k] -= 1
        Troot[k] -= 1


@token_kernel
def _psi(w, k, troot, Troot, beta0, V):
    """psi_k(w) of the document's word row ``w`` of ``troot`` (the roots' customers of the document's words)."""
    if beta0 <= 0.0:
        return 1.0 / V
    return (beta0 + troot[w, k]) / (V * beta0 + Troot[k])


@numba.njit(cache=True, error_model="numpy")
def bigram_particles(seeds, resample, uidx, pword, pctx, nloc0, tloc0, Nc0, Tc0, troot0, Troot0, V, pw, bw, beta0,
                     topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                     gamma_sum, avals, bvals, RJ, RO, EO, n0, tc0, tp0, Nn0, TC0, TP0, s0, Se0, eoff, shared, own_c0,
                     own_t0):
    """(R, N) p_n^(r) of a document's N tokens for every particle r (module docstring). Word side: token i's pair
    ``uidx[i]`` among the document's U distinct pairs, a pair's word row ``pword[u]`` of ``troot0`` (the
    document's distinct words' t_kw) and context row ``pctx[u]`` of ``Nc0``/``Tc0``; ``nloc0``/``tloc0`` (U, K)
    the trained cells; ``pw``/``bw`` the side's discount and concentration among ``avals``/``bvals``. Topic side
    and ``RJ, RO, EO`` (the topic side's Stirling ratios, covering the document's own vectors: N + 3) as
    :func:`inference.pdpnet.left_to_right.network_particles`."""
    N = uidx.shape[0]
    K = nloc0.shape[1]
    U = nloc0.shape[0]
    R = seeds.shape[0]
    J = kind.shape[0]
    Z, terms, Zb, slot, pn, pe, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    mx = np.zeros(2, np.int64)
    z = np.zeros(N, np.int64)
    pt = np.empty(J + 1, np.int64)
    c0, t0 = trained_cells(shared, off, n0, tc0, tp0, own_c0, own_t0)
    tsize = np.zeros(N * maxanc + 1, np.int64)
    tcell = np.zeros(N * maxanc + 1, np.int64)
    tedge = np.zeros(N * maxanc + 1, np.int64)
    hi = np.zeros(1, np.int64)
    out = np.empty((R, N))
    rows, cols = RJ.shape[1] + 1, RJ.shape[2] + 1
    a, b = avals[pw], bvals[bw]
    tab = np.zeros(N, np.int64)
    size = np.zeros(N, np.int64)
    cell = np.zeros(N, np.int64)
    for r in range(R):
        np.random.seed(seeds[r])
        n, tc, tp, Nn, TC, TP = n0.copy(), tc0.copy(), tp0.copy(), Nn0.copy(), TC0.copy(), TP0.copy()
        s, Se = s0.copy(), Se0.copy()
        grp = np.zeros_like(c0)
        tsize[:] = 0
        hi[0] = 0
        nloc, tloc, Nc, Tc = nloc0.copy(), tloc0.copy(), Nc0.copy(), Tc0.copy()
        troot, Troot = troot0.copy(), Troot0.copy()
        at0 = np.zeros((U, K), np.int64)
        size[:] = 0
        for i in range(N):
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                raise ValueError("bigram_particles: the Stirling table must cover the document's tokens + 3")
            if resample:
                for m in range(i):
                    u, jt, k0 = uidx[m], topic_inst[m], z[m]
                    w, c = pword[u], pctx[u]
                    _, refused = doc_remove(jt, k0, True, shared, c0, grp, tsize, tcell, tedge, hi, pn, pe, pt,
                                            kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    if refused:                 # the topic side's rule: the move is not made
                        continue
                    _unseat(m, u, c, w, k0, nloc, tloc, Nc, Tc, troot, Troot, tab, size, at0)
                    row = doc_rows(jt, K, Zb, slot, shared, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                   par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
                    total = 0.0
                    for k in range(K):
                        total += Zb[row, k] * _factor(u, c, w, k, a, b, beta0, V, nloc, tloc, Nc, Tc, troot, Troot)
                        cum[k] = total
                    k = draw_topic(cum, total, K)
                    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                        Z[anc[q]] = Zb[slot[anc[q]], k]
                    doc_add(jt, k, True, False, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim,
                            off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n,
                            tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    _seat(m, u, c, w, k, a, b, beta0, V, nloc0, tloc0, nloc, tloc, Nc, Tc, troot, Troot, tab, size,
                          cell, at0)
                    z[m] = k
            u, jt = uidx[i], topic_inst[i]
            w, c = pword[u], pctx[u]
            row = predictive_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                  par_node, par_gamma, gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se)
            total = 0.0
            for k in range(K):
                total += Zb[row, k] * _factor(u, c, w, k, a, b, beta0, V, nloc, tloc, Nc, Tc, troot, Troot)
                cum[k] = total
            if not (total > 0.0 and total < np.inf):
                raise FloatingPointError("bigram_particles: a token's predictive is 0, NaN or inf")
            out[r, i] = total
            k = draw_topic(cum, total, K)
            for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                Z[anc[q]] = Zb[slot[anc[q]], k]
            doc_add(jt, k, True, True, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim, off, alpha,
                    a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP,
                    s, Se, eoff, mx)
            _seat(i, u, c, w, k, a, b, beta0, V, nloc0, tloc0, nloc, tloc, Nc, Tc, troot, Troot, tab, size, cell,
                  at0)
            z[i] = k
    return out
