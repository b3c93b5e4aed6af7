"""hca.json under the multiplicity samplers (issue 28; ``"sampler": "cmgs"`` / ``"exact"``): hdp-pyp-lda's topic side
as :mod:`inference.pdpnet.cmgs_owned` (document vectors in multiplicity form over one shared Pitman-Yor vector x_s
whose table indicators partitions own) and pyp-lda's Pitman-Yor word side in multiplicity form as
:mod:`inference.pdpnet.word_mult` (t_wk per word cell, each partition's own t^p <= n^p).

A token's step (topic k0 at document vector x_0, word w): the word side's removal is drawn (cmgs forced at t = c,
exact S^{c-1}_{t-1}/S^c_t; refused with several partitions when the partition cannot take or keep the table), then
the topic side's (:func:`cmgs_owned.doc_leave`, :func:`owned.owned_remove`: refused when x_s would keep customers and
no table); a refusal on either side is the identity. The topic from W(k) F(k), W the hybrid's document factor, F
:func:`word_mult.word_weight`; the topic side's table opened (and seated at x_s) as the hybrid's, the word side's
by :func:`word_mult.word_opens`. Then, at the token's topic (k0 after a refusal), both table counts are redrawn
from their conditionals (:func:`cmgs_owned.table_redraw`, :func:`word_mult.word_table_redraw`), on every path (a
redraw whose running depended on a removal's outcome biased the hybrid's chain). After the tokens, the shared
cells' re-seating (:func:`owned.owned_reseat`). The two sides' augmentations are independent given z, so the
exact chain leaves the product of their joints invariant with one partition (tested against the enumeration).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.pdpnet.cmgs_owned import (doc_arrive, doc_leave, doc_rows, doc_weight, hybrid_cycle, hybrid_prologue,
                                         table_redraw)
from inference.pdpnet.mult_removal import RIGHT, own_removal
from inference.pdpnet.owned import owned_reseat
from inference.pdpnet.sweep import draw_topic
from inference.pdpnet.word_mult import word_arrive, word_factor, word_leave, word_prologue, word_table_redraw


@numba.njit(cache=True, error_model="numpy")
def hybrid_word_sweep(start, reseed, seed, exact, wrong, uidx, pword, pctx, topic_inst, z, anc_ptr, anc, kind, dim,
                      off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO,
                      logS3, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, cdoc, shared, own_c, own_t,
                      Lw, mxw, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_wt, pw, bw, beta0):
    """One cycle from position ``start`` (module docstring; ``exact``: both sides' exact removal and predictive,
    else cmgs's; ``wrong``: the topic side's test switch, :data:`mult_removal.WRONG_REMOVAL`, and the word side's).
    The topic side's arrays as :func:`cmgs_owned.hybrid_sweep`'s, the word side's as
    :func:`word_mult.mult_word_sweep`'s with ``Lw`` (L3 of the word discount alone, ``Lw[0]``) and its own running
    maxima ``mxw`` (the shared vector's ratio tables need not grow with the word cells). Returns -1 when done or the
    position to resume from once ``RJ`` covers max c + cdoc + 3 and max t + 3, ``Lw`` the word cells' likewise."""
    N = uidx.shape[0]
    K = nloc.shape[1]
    wt, Z, terms, Zb, slot, pn, pe, cum, oc, ot, inv, vbeta = hybrid_prologue(
        start, reseed, seed, cdoc, shared, own_c, own_t, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
        par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, troot.shape[0],
        Nc[0], 1.0)
    rows = RJ.shape[1] + 1
    cols = RJ.shape[2] + 1
    ww, SR = word_prologue(Lw, 0, nloc, tloc, N, mxw)
    a = avals[pw]
    b = bvals[bw]
    pos = start
    while pos < N:
        if mx[0] + cdoc + 3 > rows or mx[1] + 3 > cols or mxw[0] + 3 > Lw.shape[1] or mxw[1] + 3 > Lw.shape[2]:
            return pos
        i = pos
        pos += 1
        u = uidx[i]
        w = pword[u]
        cc = pctx[u]
        x0 = topic_inst[i]
        xs = par_node[par_ptr[x0]]
        k0 = z[i]
        gw, refused = own_removal(nloc[u, k0], tloc[u, k0], own_wt[u, k0], own_n[u, k0], exact, wrong, Lw, 0)
        if refused:
            table_redraw(x0, k0, xs, wt, off, a_of, b_of, avals, bvals, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se,
                         par_ptr, eoff, own_c, own_t, mx)
            word_table_redraw(u, cc, w, k0, ww, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_wt, mxw)
            continue                           # (several partitions only: the identity, then both redraws)
        if doc_leave(x0, k0, xs, exact, wrong, wt, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off, a_of,
                     b_of, par_ptr, par_node, avals, bvals, logS3, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
            word_table_redraw(u, cc, w, k0, ww, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_wt, mxw)
            continue                           # (the identity, then both redraws)
        word_leave(u, cc, w, k0, gw, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_wt, mxw)
        r, q0, a0, g0 = doc_rows(x0, xs, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                 par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        total = 0.0
        for kk in range(K):
            f = doc_weight(x0, kk, r, exact, q0, a0, g0, Zb, ratio3, off, n, tc, tp)
            total += f * word_factor(u, cc, w, kk, a, b, beta0, exact, SR, nloc, tloc, Nc, Tc, troot, Troot)
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("hybrid_word_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_topic(cum, total, K)
        doc_arrive(x0, xs, k, r, exact, a0, g0, Z, terms, Zb, slot, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind,
                   dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc,
                   tp, Nn, TC, TP, s, Se, eoff, mx)
        z[i] = k
        word_arrive(u, cc, w, k, a, b, beta0, exact, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_wt, mxw)
        table_redraw(x0, k, xs, wt, off, a_of, b_of, avals, bvals, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se,
                     par_ptr, eoff, own_c, own_t, mx)
        word_table_redraw(u, cc, w, k, ww, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_wt, mxw)
    return owned_reseat(pos, N, shared, own_c, own_t, oc, ot, Z, terms, pn, pe, anc_ptr, anc, kind, dim, off, alpha,
                        a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC,
                        TP, s, Se, eoff, mx)


def run_hybrid_words(net, z, s, cnt: dict, avals, bvals, seed: int, tables, head, tail, word_stack,
                     wrong: int = RIGHT) -> None:
    """One cycle of :func:`hybrid_word_sweep` (as :func:`cmgs_owned.run_hybrid`): ``head``/``tail`` the word side's
    arrays (:class:`drivers.models.pdp_network.word_sides.MultWords`: (uidx, pword, pctx), (nloc, tloc, Nc, Tc,
    troot, Troot, own_n, own_t, pw, bw, beta0, ..)), ``word_stack`` a StirlingStack of the word discount alone
    (grown to cover the word cells). z, s, the counts and the word arrays in place."""
    mxw = np.zeros(2, np.int64)

    def sweep(pos, reseed, middle, owned):
        word_stack.ensure(int(mxw[0]), int(mxw[1]))
        return hybrid_word_sweep(pos, reseed, int(seed), net.spec.sampler == "exact", int(wrong), *head,
                                 net.topic_inst, z, *middle, *owned, word_stack.L3, mxw, *tail[:11])
    hybrid_cycle(net, s, cnt, avals, bvals, tables, sweep)
