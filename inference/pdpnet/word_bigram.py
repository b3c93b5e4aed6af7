"""Bigram-topic word vectors on the Gibbs engine (issue 28; Wallach §3.4, Table 3.3): the network sweep whose word
draw is phi[topic, previous_word] ~ PYP(a, b, psi_k) (a DP when a = 0) over one word vector psi_k per topic, a
Dirichlet(beta0) root (or the fixed uniform 1/V), the topic-based language model as a network; and pyp-lda's
word side (:mod:`inference.pdpnet.word_pyp`) as its special case: every word its own pair, one context per topic,
one root column shared by the topics (:func:`drivers.models.pdp_network.words_pyp.local_arrays`).

Global state (summed over partitions): the customers n_{(k,w'),w} and the table indicators t_{(k,w'),w}, keyed by
(w' V + w) K + k (:mod:`drivers.models.pdp_network.words_bigram`; V^2 K is never allocated), the contexts' totals N_{k,w'},
T_{k,w'} and the roots' customers t_{kw} = sum_{w'} t_{(k,w'),w}, T_k. A partition sweeps local copies over the
pairs (w', w) its tokens use: ``nloc``/``tloc`` (U x K, its pairs' global cells), ``Nc``/``Tc`` (C x K, its
contexts' global totals), ``troot`` (V x K), ``Troot`` (K,). The moves and the ownership of the indicators are
pyp-lda's (:mod:`inference.pdpnet.word_pyp`: the same :func:`word_terms`, :func:`opens` and :func:`_leave`),
with the cell of a token the pair (its previous word, its word) and the restaurant the context (topic, previous
word): join = S^{c+1}_t/S^c_t (c+1-t)/(c+1) / (b + N_{k,w'}), open = (b + a T_{k,w'})/(b + N_{k,w'})
S^{c+1}_{t+1}/S^c_t (t+1)/(c+1) psi_k(w), psi_k(w) = (beta0 + t_kw)/(V beta0 + T_k). With one partition this is the
network sampler; with several the AD-LDA staleness and the race rule of word_pyp (a cell read as t = 1 when its
last tables left in two partitions at once; the partition's repair is done when the local copies are built).
"""
from __future__ import annotations

import numpy as np
import numba

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, open_exp_table
from inference.pdpnet.reseat import reseat_cells
from inference.pdpnet.sweep import draw_topic, ratio_tables, topic_scratch, topic_zplus_rows
from inference.pdpnet.word_pyp import _leave, opens, word_terms


@token_kernel
def root_weight(w, k, troot, Troot, beta0, V):
    """psi_k(w): (beta0 + t_kw) / (V beta0 + T_k), or 1/V for the uniform root (beta0 <= 0); a root shared by
    the topics (pyp-lda's nu) is one column."""
    if beta0 <= 0.0:
        return 1.0 / V
    r = k if troot.shape[1] > 1 else 0
    return (beta0 + troot[w, r]) / (V * beta0 + Troot[r])


@numba.njit(cache=True)
def bigram_zplus(u, w, c, nloc, tloc, Nc, Tc, troot, Troot, a, b, beta0, p, L3):
    """(K,) Z^+ of pair ``u`` (word w, context c) at every topic's vector phi[k, w'] (join + open; tests)."""
    RJ, RO = ratio_tables(L3)
    K = nloc.shape[1]
    out = np.empty(K)
    for k in range(K):
        nu = root_weight(w, k, troot, Troot, beta0, troot.shape[0])
        j, o = word_terms(nloc[u, k], tloc[u, k], Nc[c, k], Tc[c, k], a, b, nu, RJ[p], RO[p])
        out[k] = j + o
    return out


@token_kernel
def _move(u, c, w, k, d, opened, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx):
    own_n[u, k] += d
    nloc[u, k] += d
    Nc[c, k] += d
    if nloc[u, k] > mx[0]:
        mx[0] = nloc[u, k]
    if opened:
        own_t[u, k] += d
        tloc[u, k] += d
        Tc[c, k] += d
        r = k if troot.shape[1] > 1 else 0
        troot[w, r] += d
        Troot[r] += d
        if tloc[u, k] > mx[1]:
            mx[1] = tloc[u, k]


@numba.njit(cache=True, error_model="numpy")
def bigram_word_sweep(start, reseed, seed, uidx, pword, pctx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                      a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP,
                      s, Se, eoff, mx, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, pw, bw, beta0):
    """One cycle from position ``start`` (tokens, the topic side's re-seating, then the own word cells'): the topic
    side is the network's (:mod:`inference.pdpnet.sweep`), the word side the module docstring's (token i's pair
    ``uidx[i]``, its word ``pword[u]``, its context ``pctx[u]``). Returns -1 when done or the position to resume
    from once the Stirling table covers max c + 2 and max t + 2 (``mx``, both sides)."""
    return bigram_cycle(start, reseed, seed, uidx, pword, pctx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                        a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP,
                        s, Se, eoff, mx, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, pw, bw, beta0, False)


@numba.njit(cache=True, error_model="numpy")
def burst_word_sweep(start, reseed, seed, uidx, pword, pctx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                     a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP,
                     s, Se, eoff, mx, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, pw, bw, beta0):
    """:func:`bigram_word_sweep` (the same arguments, moves and draws) for contexts whose pairs are contiguous and
    whose tokens come context by context (the burst side: the document the context, pairs sorted by (d, w)): when
    a token starts a new context, that context's cell rows are read once in order first (a sequential read the
    memory prefetches, instead of a cache miss per row at its first token: 37 -> 27 ms per sweep of 113,420 WEB
    tokens; read only, so the chain is the same)."""
    return bigram_cycle(start, reseed, seed, uidx, pword, pctx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                        a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP,
                        s, Se, eoff, mx, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, pw, bw, beta0, True)


@numba.njit(cache=True, error_model="numpy")
def bigram_cycle(start, reseed, seed, uidx, pword, pctx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of,
                 b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                 mx, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, pw, bw, beta0, touch):
    """:func:`bigram_word_sweep`'s cycle; ``touch``: :func:`burst_word_sweep`'s read of a new context's rows."""
    if reseed:
        np.random.seed(seed)
    N = uidx.shape[0]
    K = nloc.shape[1]
    V = troot.shape[0]
    J = kind.shape[0]
    Z, terms, Zb, slot, pnA, peA, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    rows = L3.shape[1]
    cols = L3.shape[2]
    RJ, RO = ratio_tables(L3)
    EO = open_exp_table(L3)
    RJw = RJ[pw]
    ROw = RO[pw]
    a = avals[pw]
    b = bvals[bw]
    ctx_ptr = np.zeros(pctx.max() + 2 if touch and pctx.shape[0] else 1, np.int64)   # (touch: contexts' pair runs)
    if touch:
        for v in range(pctx.shape[0]):
            ctx_ptr[pctx[v] + 1] = v + 1
        for v in range(1, ctx_ptr.shape[0]):
            ctx_ptr[v] = max(ctx_ptr[v], ctx_ptr[v - 1])
    cur = -1
    sink = 0
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        u = uidx[i]
        w = pword[u]
        c = pctx[u]
        if touch and c != cur:                # (read only: no count or draw changes)
            cur = c
            for v in range(ctx_ptr[c], ctx_ptr[c + 1]):
                for kk in range(K):
                    sink += nloc[v, kk] + tloc[v, kk] + own_n[v, kk] + own_t[v, kk]
        jt = topic_inst[i]
        k0 = z[i]
        da, ia = remove_path(jt, k0, True, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se,
                             eoff, mx)
        held = _leave(u, u, k0, own_n, own_t, nloc, tloc)
        if ia or held < 0:
            undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            pos += 1
            continue
        _move(u, c, w, k0, -1, held == 1, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx)
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        total = 0.0
        for kk in range(K):
            nu = root_weight(w, kk, troot, Troot, beta0, V)
            jn, op = word_terms(nloc[u, kk], tloc[u, kk], Nc[c, kk], Tc[c, kk], a, b, nu, RJw, ROw)
            total += Zb[r, kk] * (jn + op)
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("bigram_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal "
                                     "tables)")
        k = draw_topic(cum, total, K)
        for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[q]] = Zb[slot[anc[q]], k]
        add_path_r(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        nu = root_weight(w, k, troot, Troot, beta0, V)
        jn, op = word_terms(nloc[u, k], tloc[u, k], Nc[c, k], Tc[c, k], a, b, nu, RJw, ROw)
        _move(u, c, w, k, 1, opens(jn, op), nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx)
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
        pos = N + ncell
    U = own_n.shape[0]
    first = pos - N - ncell
    for u in range(first // K, U):            # the cells (u, k) in order u K + k, from ``first``
        w = pword[u]
        c = pctx[u]
        for k in range(first % K if u == first // K else 0, K):
            for _ in range(own_n[u, k]):      # every own customer of the cell once
                if mx[0] + 3 > rows or mx[1] + 3 > cols:
                    return N + ncell + u * K + k
                held = _leave(u, u, k, own_n, own_t, nloc, tloc)
                if held < 0:
                    continue
                _move(u, c, w, k, -1, held == 1, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx)
                nu = root_weight(w, k, troot, Troot, beta0, V)
                jn, op = word_terms(nloc[u, k], tloc[u, k], Nc[c, k], Tc[c, k], a, b, nu, RJw, ROw)
                _move(u, c, w, k, 1, opens(jn, op), nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t, mx)
    if sink < 0:                              # (sink read: the touch is not optimised away)
        raise FloatingPointError("bigram_cycle: negative cell counts")
    return -1
