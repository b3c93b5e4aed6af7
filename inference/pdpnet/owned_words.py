"""Shared Pitman-Yor topic vectors beside a Pitman-Yor word side on the Gibbs engine (issue 28; hca's structure:
documents over a corpus-level PYP over a root, PYP topic-word vectors over a corpus-level word vector): two
structures whose table indicators are owned by partitions, in one sweep.

The topic side is :func:`inference.pdpnet.owned.owned_sweep`'s (the shared vectors' cells hold the global (c, t),
the partition's own in ``own_c``/``own_t``: :func:`owned_remove`, :func:`owned_add`, the race rule
:func:`repair`, :func:`owned_reseat`); the word side is :func:`inference.pdpnet.word_bigram.bigram_word_sweep`'s
(local copies of the global word cells, its own indicators ``word_t``; :func:`word_terms`, :func:`_leave`,
:func:`opens`; pyp-lda's side is its special case). The two sides touch different cells, so their moves are the
two sweeps' moves unchanged, in the order of ``bigram_word_sweep``: a token's topic-side decrement, its word
cell's, the draw of z from Z^+_topic(k) (join + open)_word(k), the two increments; then the topic side's
re-seating, then every own word customer's. With one partition (own = global) this is ``bigram_word_sweep``,
the network sampler, draw for draw (tested).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.pdpnet.owned import owned_add, owned_remove, owned_reseat, owned_undo, repair
from inference.pdpnet.sweep import draw_topic, topic_scratch, topic_zplus_rows
from inference.pdpnet.word_bigram import _move, root_weight
from inference.pdpnet.word_pyp import _leave, opens, word_terms


@numba.njit(cache=True, error_model="numpy")
def owned_word_sweep(start, reseed, seed, uidx, pword, pctx, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                     a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, n, tc, tp, Nn, TC,
                     TP, s, Se, eoff, mx, shared, own_c, own_t, nloc, tloc, Nc, Tc, troot, Troot, own_n, word_t, pw,
                     bw, beta0):
    """One cycle from position ``start`` (module docstring; the word side's arguments are ``bigram_word_sweep``'s,
    the topic side's ``owned_sweep``'s, ``RJ, RO, EO`` the ratio tables covering both sides). Returns -1 when done
    or the position to resume from (tokens, N + topic cell, N + cells + word cell) once the tables cover max c + 2
    and max t + 2 (``mx``, both sides)."""
    if reseed:
        np.random.seed(seed)
    N = uidx.shape[0]
    K = nloc.shape[1]
    V = troot.shape[0]
    J = kind.shape[0]
    Z, terms, Zb, slot, pn, pe, cum, _, _ = topic_scratch(par_ptr, anc_ptr, J, K)
    oc = np.zeros(J, np.int64)
    ot = np.zeros(J, np.int64)
    rows = RJ.shape[1] + 1
    cols = RJ.shape[2] + 1
    RJw = RJ[pw]
    ROw = RO[pw]
    a = avals[pw]
    b = bvals[bw]
    if start == 0:
        repair(shared, own_c, own_t, oc, ot, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
               par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        u = uidx[i]
        w = pword[u]
        c = pctx[u]
        jt = topic_inst[i]
        k0 = z[i]
        pos += 1
        depth, refused = owned_remove(jt, k0, True, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off,
                                      par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        held = _leave(u, u, k0, own_n, word_t, nloc, tloc)    # (drawn when refused too: bigram_word_sweep's order)
        if refused:
            continue
        if held < 0:
            owned_undo(jt, k0, depth, True, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, off, n, tc, tp, Nn,
                       TC, TP, s, Se, eoff, mx)
            continue
        _move(u, c, w, k0, -1, held == 1, nloc, tloc, Nc, Tc, troot, Troot, own_n, word_t, mx)
        r = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        total = 0.0
        for kk in range(K):
            nu = root_weight(w, kk, troot, Troot, beta0, V)
            jn, op = word_terms(nloc[u, kk], tloc[u, kk], Nc[c, kk], Tc[c, kk], a, b, nu, RJw, ROw)
            total += Zb[r, kk] * (jn + op)
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("owned_word_sweep: a token's topic weights sum to NaN, inf or 0 (illegal tables)")
        k = draw_topic(cum, total, K)
        for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
            Z[anc[q]] = Zb[slot[anc[q]], k]
        owned_add(jt, k, True, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha, a_of,
                  b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se,
                  eoff, mx)
        nu = root_weight(w, k, troot, Troot, beta0, V)
        jn, op = word_terms(nloc[u, k], tloc[u, k], Nc[c, k], Tc[c, k], a, b, nu, RJw, ROw)
        _move(u, c, w, k, 1, opens(jn, op), nloc, tloc, Nc, Tc, troot, Troot, own_n, word_t, mx)
        z[i] = k
    ncell = off[J]
    if pos < N + ncell:
        back = owned_reseat(pos, N, shared, own_c, own_t, oc, ot, Z, terms, pn, pe, anc_ptr, anc, kind, dim, off,
                            alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc,
                            tp, Nn, TC, TP, s, Se, eoff, mx)
        if back >= 0:
            return back
        pos = N + ncell
    U = own_n.shape[0]
    for cell in range(pos - N - ncell, U * K):
        u = cell // K
        k = cell % K
        w = pword[u]
        c = pctx[u]
        for _ in range(own_n[u, k]):          # every own customer of the cell once
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                return N + ncell + cell
            held = _leave(u, u, k, own_n, word_t, nloc, tloc)
            if held < 0:
                continue
            _move(u, c, w, k, -1, held == 1, nloc, tloc, Nc, Tc, troot, Troot, own_n, word_t, mx)
            nu = root_weight(w, k, troot, Troot, beta0, V)
            jn, op = word_terms(nloc[u, k], tloc[u, k], Nc[c, k], Tc[c, k], a, b, nu, RJw, ROw)
            _move(u, c, w, k, 1, opens(jn, op), nloc, tloc, Nc, Tc, troot, Troot, own_n, word_t, mx)
    return -1
