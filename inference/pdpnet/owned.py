"""Pitman-Yor topic vectors shared by documents on the Gibbs engine (issue 28): a corpus-level (or kept-column)
PYP whose customers are the tables documents of every partition send up, its own table counts split by partition
as the Pitman-Yor word side's are (:mod:`inference.pdpnet.word_pyp`).

**Ownership.** A table indicator is held by a customer, so by that customer's partition. At a shared vector x a
partition holds its customers c^p_xk (its documents' tables there: the t^c its own s gives) and the indicators they
hold t^p_xk (its own s on x's parent edges), 0 <= t^p <= c^p (its tokens n_xk among c^p when tokens are drawn
from x itself: they stay the kernels' n, every other partition's customers their t^c); the global counts
c = sum_p c^p, t = sum_p t^p are the engine's tables ``network_tc``/``network_tp`` (with several parents the S_e of
every edge from ``network_ts``: a leaving table's parent is drawn from the own s), and a partition's sweep reads
them with its own moves seen at once (the others' at the next synchronisation: the AD-LDA approximation of every
global count). The kernels' count
arrays hold the global (c, t) at the shared cells (so every Z^+ term is the sampler's, unchanged), the partition's
own in ``own_c``/``own_t`` (cells; read at shared vectors only, ``shared[j]``):

* **decrement** (:func:`owned_remove`): :func:`kernels.remove_path` on the own counts (the leaving customer held
  one of its partition's indicators with probability t^p/c^p, exchangeable among its customers), the others'
  added back after; a move that leaves a cell with customers but no table (global t = 0 < c) is refused (undone,
  the identity move of the sampler);
* **increment** (:func:`owned_add`): :func:`ratio_path.add_path_r` on the global counts (join/open terms of the
  global c, t, C, T); what it added at a shared cell is the partition's own;
* **race** (:func:`repair`): two partitions may remove a cell's last indicators in the same sweep (t = 0 < c after
  the merge); before its next sweep a partition with customers there opens one table for them (its customer sent
  up the one parent edge, seated there by the sampler's increment), and every partition reads the cell as t >= 1
  (:func:`drivers.models.pdp_network.shared_pyp.legal`).

With one partition (others = 0) the moves are :func:`inference.pdpnet.sweep.network_sweep`'s, draw for draw.
"""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import PYP, remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, eval_zplus_r
from inference.pdpnet.rho import rho_num
from inference.pdpnet.sweep import draw_topic, topic_scratch, topic_zplus_rows


@token_kernel
def swap_own(j, v, into, shared, anc_ptr, anc, off, tc, tp, own_c, own_t, oc, ot):
    """``into``: the shared ancestors' cells of value v hold the partition's own (c, t) (the others' kept per vector
    in ``oc``/``ot``); else back: own <- the cells, the cells <- own + others."""
    for q in range(anc_ptr[j], anc_ptr[j + 1]):
        x = anc[q]
        if shared[x]:
            cell = off[x] + v
            if into:
                oc[x] = tc[cell] - own_c[cell]
                ot[x] = tp[cell] - own_t[cell]
                tc[cell] = own_c[cell]
                tp[cell] = own_t[cell]
            else:
                own_c[cell] = tc[cell]
                own_t[cell] = tp[cell]
                tc[cell] += oc[x]
                tp[cell] += ot[x]


@token_kernel
def owned_remove(j, v, data, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off, par_ptr, par_node, n,
                 tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Decrement cell (j, v) (module docstring); returns (path length, refused: then nothing changed)."""
    swap_own(j, v, True, shared, anc_ptr, anc, off, tc, tp, own_c, own_t, oc, ot)
    depth, _ = remove_path(j, v, data, pn, pe, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    swap_own(j, v, False, shared, anc_ptr, anc, off, tc, tp, own_c, own_t, oc, ot)
    illegal = False
    for d in range(depth):
        if pe[d] >= 0:
            cell = off[pn[d]] + v
            if tp[cell] == 0 and n[cell] + tc[cell] > 0:
                illegal = True
    if illegal:
        owned_undo(j, v, depth, data, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, off, n, tc, tp, Nn, TC,
                   TP, s, Se, eoff, mx)
    return depth, illegal


@token_kernel
def owned_undo(j, v, depth, data, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, off, n, tc, tp, Nn, TC, TP, s,
               Se, eoff, mx):
    """Put back what :func:`owned_remove` took (same path ``pn``/``pe``, the own counts with it)."""
    swap_own(j, v, True, shared, anc_ptr, anc, off, tc, tp, own_c, own_t, oc, ot)
    undo_path(depth, v, data, pn, pe, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    swap_own(j, v, False, shared, anc_ptr, anc, off, tc, tp, own_c, own_t, oc, ot)


@token_kernel
def owned_add(j, v, data, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
              par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Increment cell (j, v) by :func:`add_path_r` on the global counts (``Z``: Z^+ of v at j's ancestors); what
    it added at shared cells becomes the partition's own."""
    for q in range(anc_ptr[j], anc_ptr[j + 1]):
        x = anc[q]
        if shared[x]:
            oc[x] = tc[off[x] + v]
            ot[x] = tp[off[x] + v]
    add_path_r(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
               avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    for q in range(anc_ptr[j], anc_ptr[j + 1]):
        x = anc[q]
        if shared[x]:
            own_c[off[x] + v] += tc[off[x] + v] - oc[x]
            own_t[off[x] + v] += tp[off[x] + v] - ot[x]


@token_kernel
def repair(shared, own_c, own_t, oc, ot, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
           par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """The race rule (module docstring) at every shared Pitman-Yor cell with customers and no table: a partition
    with customers there opens one table (sent up its parent edge, drawn by :func:`draw_parent` when several;
    seated at the parent by the increment); the others read it as one table."""
    J = kind.shape[0]
    for x in range(J):
        if not shared[x] or kind[x] != PYP:
            continue
        for v in range(off[x + 1] - off[x]):
            cell = off[x] + v
            if tp[cell] > 0 or n[cell] + tc[cell] == 0:
                continue
            tp[cell] += 1
            TP[x] += 1
            mx[1] = max(mx[1], tp[cell])
            if own_c[cell] + n[cell] == 0:     # (n: its own tokens, when tokens are drawn from x itself)
                continue
            own_t[cell] += 1
            e = par_ptr[x]
            if par_ptr[x + 1] - e > 1:
                e = draw_parent(x, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                                par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
            q = par_node[e]
            s[eoff[e] + v] += 1
            Se[e] += 1
            eval_zplus_r(q, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                         par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
            owned_add(q, v, False, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha, a_of,
                      b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s,
                      Se, eoff, mx)


@token_kernel
def draw_parent(x, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se):
    """The parent edge of a table opened at cell (x, v) of a vector with several parents, drawn by its open terms
    (gamma_e + S_e) Z^+_parent(v) (rho integrated out, E9; fixed weights: gamma_e; :func:`kernels.pyp_terms`);
    two passes (``terms``, the Z^+ recursion's scratch, holds no sums)."""
    total = 0.0
    for e in range(par_ptr[x], par_ptr[x + 1]):
        total += rho_num(par_gamma[e], Se[e], gamma_sum[x]) * eval_zplus_r(
            par_node[e], v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
            gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
    u = np.random.random() * total
    for e in range(par_ptr[x], par_ptr[x + 1] - 1):
        u -= rho_num(par_gamma[e], Se[e], gamma_sum[x]) * eval_zplus_r(
            par_node[e], v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
            gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
        if u < 0.0:
            return e
    return par_ptr[x + 1] - 1


@numba.njit(cache=True, error_model="numpy")
def owned_prologue(start, reseed, seed, shared, own_c, own_t, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                   par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                   mx, V, nk, beta):
    """The prologue :func:`owned_sweep` and :func:`inference.pdpnet.cmgs_owned.hybrid_sweep` share: the generator
    seeded (``reseed``), the topic side's scratch (:func:`topic_scratch`), the others' counts per vector (oc, ot),
    the word factor's 1/(n_k + V beta) per topic, and at ``start`` 0 the race rule (:func:`repair`). Returns (Z,
    terms, Zb, slot, pn, pe, cum, oc, ot, inv, V beta)."""
    if reseed:
        np.random.seed(seed)
    K = nk.shape[0]
    J = kind.shape[0]
    Z, terms, Zb, slot, pn, pe, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    oc = np.zeros(J, np.int64)
    ot = np.zeros(J, np.int64)
    vbeta = V * beta
    inv = np.empty(K)
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + vbeta)
    if start == 0:
        repair(shared, own_c, own_t, oc, ot, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
               par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    return Z, terms, Zb, slot, pn, pe, cum, oc, ot, inv, vbeta


@numba.njit(cache=True, error_model="numpy")
def owned_sweep(start, reseed, seed, words, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, nwk,
                nk, beta, frozen_phi, frozen, shared, own_c, own_t):
    """One cycle from position ``start`` of a network with shared Pitman-Yor topic vectors and the engine's word
    table (the word factor (nwk + beta)/(nk + V beta), or ``frozen_phi`` with ``frozen``): at ``start`` 0 the
    race rule, then every token (:func:`owned_remove`, Z^+ rows of :func:`topic_zplus_rows`, :func:`owned_add`),
    then the re-seating of :func:`inference.pdpnet.reseat.reseat_cells` (same cells, same order; at a shared
    vector only a cell with own customers). ``RJ, RO, EO``: the ratio tables of :func:`ratio_tables` and
    :func:`open_exp_table` (kept by the caller while the discounts stay: a shared vector's cells make them large).
    Returns -1 when done or the position to resume from once the tables cover max c + 2 and max t + 2 (``mx``)."""
    N = words.shape[0]
    K = nwk.shape[1]
    Z, terms, Zb, slot, pn, pe, cum, oc, ot, inv, vbeta = owned_prologue(
        start, reseed, seed, shared, own_c, own_t, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
        par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, nwk.shape[0], nk, beta)
    rows = RJ.shape[1] + 1
    cols = RJ.shape[2] + 1
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        w = words[i]
        jt = topic_inst[i]
        k0 = z[i]
        pos += 1
        _, refused = owned_remove(jt, k0, True, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off,
                                  par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        if refused:
            continue
        if not frozen:
            nwk[w, k0] -= 1
            nk[k0] -= 1
            inv[k0] = 1.0 / (nk[k0] + vbeta)
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        total = 0.0
        for k in range(K):
            total += Zb[r, k] * (frozen_phi[w, k] if frozen else (nwk[w, k] + beta) * inv[k])
            cum[k] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("owned_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_topic(cum, total, K)
        for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[q]] = Zb[slot[anc[q]], k]
        owned_add(jt, k, True, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha, a_of,
                  b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se,
                  eoff, mx)
        if not frozen:
            nwk[w, k] += 1
            nk[k] += 1
            inv[k] = 1.0 / (nk[k] + vbeta)
        z[i] = k
    return owned_reseat(pos, N, shared, own_c, own_t, oc, ot, Z, terms, pn, pe, anc_ptr, anc, kind, dim, off, alpha,
                        a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC,
                        TP, s, Se, eoff, mx)


@token_kernel
def owned_reseat(pos, N, shared, own_c, own_t, oc, ot, Z, terms, pn, pe, anc_ptr, anc, kind, dim, off, alpha, a_of,
                 b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se,
                 eoff, mx):
    """The re-seating of :func:`inference.pdpnet.reseat.reseat_cells` from position ``pos`` (N + cell; same cells,
    same order) by :func:`owned_remove` / :func:`owned_add`; at a shared vector only a cell with own customers.
    Returns -1 when done or the position to resume from (``mx`` past the ratio tables ``RJ``)."""
    J = kind.shape[0]
    rows = RJ.shape[1] + 1
    cols = RJ.shape[2] + 1
    for j in range(J):
        if kind[j] != PYP or TC[j] == 0:
            continue
        one = 1 if par_ptr[j + 1] - par_ptr[j] == 1 else 0
        for cell in range(max(pos - N, off[j]), off[j + 1]):
            if n[cell] > 0 or tc[cell] <= one or (shared[j] and own_c[cell] == 0):
                continue
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                return N + cell
            v = cell - off[j]
            _, refused = owned_remove(j, v, False, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off,
                                      par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            if refused:
                continue
            eval_zplus_r(j, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                         par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
            owned_add(j, v, False, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha, a_of,
                      b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s,
                      Se, eoff, mx)
    return -1
