"""Pitman-Yor topic-word vectors on the Gibbs engine (issue 28, pyp-lda): the network sweep whose word side is
phi_k ~ PYP(a, b, nu) for every topic k over one corpus-level word vector nu (a Dirichlet(beta0) root or the fixed
uniform 1/V), with the table counts split by partition.

Global state (the engine's dense V x K tables, summed over partitions): the customers n_wk (``nwk``) and the
table indicators t_wk (``word_tables``); derived: N_k, T_k = sum_w t_wk, the root's customers t_w = sum_k t_wk
and their total. **Indicator ownership**: a table indicator (table-indicator form, Du thesis §3.6) is held by a
customer, so by that customer's partition: a partition keeps its customers n^p_wk (from z) and the indicators
they hold t^p_wk (state ``word_t``, U x K over the block's distinct words; 0 <= t^p <= n^p), and t_wk = sum_p
t^p_wk. A partition's customers may sit at tables whose indicator another partition holds. The moves (001_003
extract §2.4-2.6, as :mod:`inference.pdpnet.kernels`):

* **decrement**: the leaving customer held one of its partition's indicators with probability t^p/n^p (the
  indicators are exchangeable among the partition's customers); a move that would leave the cell's other
  customers without a table (t_wk = 1 < n_wk) is refused (the token stays: an identity move);
* **increment** of word w at topic k: join = S^{c+1}_t / S^c_t (c+1-t)/(c+1) / (b + N_k) and open =
  (b + a T_k)/(b + N_k) S^{c+1}_{t+1} / S^c_t (t+1)/(c+1) nu_w with c = n_wk, t = t_wk (global), nu_w =
  (beta0 + t_w)/(V beta0 + sum t) (:func:`word_zplus`); the token's topic is drawn from Z^+_topic(k) (join +
  open), then open or join;
* **re-seating**: every own customer of every cell leaves and comes back once per cycle (redraws whether it holds
  an indicator; O(1) each against the token step's O(K), so t_wk of a frequent word reaches its equilibrium in a
  few cycles, not one table per cycle as with one customer per cell).

With one partition this is the network sampler exactly (its conditionals are the joint's). With several it is
the AD-LDA approximation the engine uses for every global count: a partition sees the others' counts as of the
last synchronisation. The one consequence for the constraints: two partitions may remove a cell's last
indicators in the same sweep (t_wk = 0 < n_wk after the merge); every partition with customers there then opens
one table for them before its next sweep (the repair at the start of :func:`pyp_word_sweep`), and the driver's
steps and every other partition read such a cell as t_wk = 1 (:func:`drivers.models.pdp_words.legal`). A
partition must not read it as t = 0: S^c_0 = 0 for c > 0 makes the cell's join and open terms NaN, and a NaN
sum of weights drew topic 0 for every token of the word (on the WEB chapters with two partitions one topic took
55% of the tokens and the perplexity was 10% worse than one partition's); a weight sum that is not finite and
positive now raises.
"""
from __future__ import annotations

import numpy as np
import numba

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, open_exp_table
from inference.pdpnet.reseat import reseat_cells
from inference.pdpnet.sweep import draw_topic, graph_widths, ratio_tables, topic_zplus_rows


@token_kernel
def base_weight(w, tw, Tsum, beta0, V):
    """nu_w: (beta0 + t_w) / (V beta0 + sum t), or 1/V for the uniform root (beta0 <= 0)."""
    if beta0 <= 0.0:
        return 1.0 / V
    return (beta0 + tw[w]) / (V * beta0 + Tsum)


@token_kernel
def word_terms(c, t, C, T, a, b, nu, RJp, ROp):
    """(join, open) of one word cell (module docstring)."""
    inv = 1.0 / (b + C)
    return RJp[c, t] * inv, (b + a * T) * ROp[c, t] * nu * inv


@numba.njit(cache=True)
def word_zplus(w, nwk, twk, nk, tk, tw, Tsum, a, b, beta0, p, L3):
    """(K,) Z^+ of word w at every topic's vector (join + open), from the Stirling table ``L3`` (tests)."""
    RJ, RO = ratio_tables(L3)
    K = nwk.shape[1]
    nu = base_weight(w, tw, Tsum, beta0, nwk.shape[0])
    out = np.empty(K)
    for k in range(K):
        j, o = word_terms(nwk[w, k], twk[w, k], nk[k], tk[k], a, b, nu, RJ[p], RO[p])
        out[k] = j + o
    return out


@token_kernel
def opens(jn, op):
    """Whether a customer arriving at a word cell with terms (join, open) opens a table; forced (no random
    number, issue 28) when there is no table to join."""
    return jn == 0.0 or np.random.random() * (jn + op) >= jn


@token_kernel
def _move(w, u, k, d, opened, nwk, twk, nk, tk, tw, Tsum, own_n, own_t, mx):
    own_n[u, k] += d
    nwk[w, k] += d
    nk[k] += d
    if nwk[w, k] > mx[0]:
        mx[0] = nwk[w, k]
    if opened:
        own_t[u, k] += d
        twk[w, k] += d
        tk[k] += d
        tw[w] += d
        Tsum[0] += d
        if twk[w, k] > mx[1]:
            mx[1] = twk[w, k]


@token_kernel
def _leave(w, u, k, own_n, own_t, nwk, twk):
    """Draw whether a leaving own customer of cell (u, k) held a table indicator (its partition's t^p of its
    n^p): 1 yes, 0 no, -1 when that leaves the cell's other customers without a table (refused). Forced (no
    random number, issue 28) when every own customer or none holds an indicator."""
    t = own_t[u, k]
    if t == own_n[u, k] or (t > 0 and np.random.random() * own_n[u, k] < t):
        if twk[w, k] == 1 and nwk[w, k] > 1:
            return -1
        return 1
    return 0


@numba.njit(cache=True, error_model="numpy")
def pyp_word_sweep(start, reseed, seed, words, uidx, vocab, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of,
                   b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se,
                   eoff, mx, nwk, twk, nk, tk, tw, Tsum, own_n, own_t, pw, bw, beta0):
    """One cycle from position ``start`` (tokens, then the topic side's re-seating, then the word cells'): the
    topic side is the network's (:mod:`inference.pdpnet.sweep`), the word side the module docstring's (discount
    ``avals[pw]``, concentration ``bvals[bw]``; token i's word is ``vocab[uidx[i]]``, the partition's own cells
    ``own_n``/``own_t`` are U x K over ``vocab``). Returns -1 when done or the position to resume from once the
    Stirling table covers max c + 2 and max t + 2 (``mx``, over both sides)."""
    if reseed:
        np.random.seed(seed)
    N = words.shape[0]
    K = nwk.shape[1]
    V = nwk.shape[0]
    J = kind.shape[0]
    maxpar, maxanc = graph_widths(par_ptr, anc_ptr, J)
    Z = np.zeros(J)
    terms = np.zeros(maxpar)
    Zb = np.zeros((maxanc, K))
    slot = np.zeros(J, np.int64)
    pnA = np.empty(J + 1, np.int64)
    peA = np.empty(J + 1, np.int64)
    cum = np.empty(K)
    rows = L3.shape[1]
    cols = L3.shape[2]
    RJ, RO = ratio_tables(L3)
    EO = open_exp_table(L3)
    RJw = RJ[pw]
    ROw = RO[pw]
    a = avals[pw]
    b = bvals[bw]
    if start == 0:                  # cells whose last tables left in two partitions at once (n > 0, t = 0)
        for u in range(own_n.shape[0]):
            for k in range(K):
                w = vocab[u]
                if nwk[w, k] > 0 and twk[w, k] == 0:
                    if own_n[u, k] > 0:     # this partition's customers open one (the repair)
                        own_t[u, k] += 1
                    twk[w, k] += 1          # and every partition reads the cell as t = 1 (pdp_words.legal)
                    tk[k] += 1
                    tw[w] += 1
                    Tsum[0] += 1
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        w = words[i]
        u = uidx[i]
        jt = topic_inst[i]
        k0 = z[i]
        da, ia = remove_path(jt, k0, True, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se,
                             eoff, mx)
        held = _leave(w, u, k0, own_n, own_t, nwk, twk)
        if ia or held < 0:
            undo_path(da, k0, True, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            pos += 1
            continue
        _move(w, u, k0, -1, held == 1, nwk, twk, nk, tk, tw, Tsum, own_n, own_t, mx)
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        nu = base_weight(w, tw, Tsum[0], beta0, V)
        total = 0.0
        for kk in range(K):
            jn, op = word_terms(nwk[w, kk], twk[w, kk], nk[kk], tk[kk], a, b, nu, RJw, ROw)
            total += Zb[r, kk] * (jn + op)
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("pyp_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
        k = draw_topic(cum, total, K)
        for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[q]] = Zb[slot[anc[q]], k]
        add_path_r(jt, k, True, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                   gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        jn, op = word_terms(nwk[w, k], twk[w, k], nk[k], tk[k], a, b, nu, RJw, ROw)
        _move(w, u, k, 1, opens(jn, op), nwk, twk, nk, tk, tw, Tsum, own_n, own_t, mx)
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
    for cell in range(first, U * K):
        u = cell // K
        k = cell % K
        w = vocab[u]
        for _ in range(own_n[u, k]):          # every own customer of the cell once
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                return N + ncell + cell
            held = _leave(w, u, k, own_n, own_t, nwk, twk)
            if held < 0:
                continue
            _move(w, u, k, -1, held == 1, nwk, twk, nk, tk, tw, Tsum, own_n, own_t, mx)
            nu = base_weight(w, tw, Tsum[0], beta0, V)
            jn, op = word_terms(nwk[w, k], twk[w, k], nk[k], tk[k], a, b, nu, RJw, ROw)
            _move(w, u, k, 1, opens(jn, op), nwk, twk, nk, tk, tw, Tsum, own_n, own_t, mx)
    return -1
