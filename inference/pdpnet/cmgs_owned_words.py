"""hca.json under the multiplicity samplers (issue 28; ``"sampler": "cmgs"`` / ``"exact"``): hdp-pyp-lda's topic side
as :mod:`inference.pdpnet.cmgs_owned` (document vectors in multiplicity form over one shared Pitman-Yor vector x_s
whose table indicators partitions own) and pyp-lda's Pitman-Yor word side in multiplicity form as
:mod:`inference.pdpnet.word_mult` (t_wk per word cell, each partition's own t^p <= n^p).

A token's step (topic k0 at document vector x_0, word w): the word side's removal is drawn (cmgs forced at t = c,
exact S^{c-1}_{t-1}/S^c_t; refused with several partitions when the partition cannot take or keep the table), then
the topic side's (:func:`cmgs_owned.sat_alone`, :func:`owned.owned_remove`: refused when x_s would keep customers and
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

from inference.pdpnet.cmgs import table_draw_scratch
from inference.pdpnet.cmgs_owned import RIGHT, doc_table, hybrid_setup, sat_alone, table_redraw
from inference.pdpnet.owned import owned_add, owned_prologue, owned_remove, owned_reseat
from inference.pdpnet.sweep import draw_topic, topic_zplus_rows
from inference.pdpnet.word_bigram import root_weight
from inference.pdpnet.word_mult import (_tables, stirling_steps, word_opens, word_sat_alone, word_table_redraw,
                                        word_weight)


@numba.njit(cache=True, error_model="numpy")
def hybrid_word_sweep(start, reseed, seed, exact, wrong, uidx, pword, pctx, topic_inst, z, anc_ptr, anc, kind, dim,
                      off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO,
                      logS3, ratio3, cratio3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, cdoc, shared, own_c, own_t,
                      Lw, mxw, nloc, tloc, Nc, Tc, troot, Troot, own_n, own_wt, pw, bw, beta0):
    """One cycle from position ``start`` (module docstring; ``exact``: both sides' exact removal and predictive,
    else cmgs's; ``wrong``: the topic side's test switch, :data:`cmgs_owned.WRONG_REMOVAL`, and the word side's).
    The topic side's arrays as :func:`cmgs_owned.hybrid_sweep`'s, the word side's as
    :func:`word_mult.mult_word_sweep`'s with ``Lw`` (L3 of the word discount alone, ``Lw[0]``) and its own running
    maxima ``mxw`` (the shared vector's ratio tables need not grow with the word cells). Returns -1 when done or the
    position to resume from once ``RJ`` covers max c + cdoc + 3 and max t + 3, ``Lw`` the word cells' likewise."""
    N = uidx.shape[0]
    K = nloc.shape[1]
    V = troot.shape[0]
    wt = table_draw_scratch(kind, dim, off, n, tc, cdoc)
    Z, terms, Zb, slot, pn, pe, cum, oc, ot, inv, vbeta = owned_prologue(
        start, reseed, seed, shared, own_c, own_t, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
        par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, V, Nc[0], 1.0)
    rows = RJ.shape[1] + 1
    cols = RJ.shape[2] + 1
    Lp = Lw[0]
    SR = stirling_steps(Lw)[0]
    a = avals[pw]
    b = bvals[bw]
    cmax = 1
    for u in range(nloc.shape[0]):
        for k in range(K):
            cmax = max(cmax, nloc[u, k])
    ww = np.empty(cmax + N + 2)
    mxw[0] = max(mxw[0], cmax)
    for u in range(tloc.shape[0]):
        for k in range(K):
            mxw[1] = max(mxw[1], tloc[u, k])
    pos = start
    while pos < N:
        if mx[0] + cdoc + 3 > rows or mx[1] + 3 > cols or mxw[0] + 3 > Lp.shape[0] or mxw[1] + 3 > Lp.shape[1]:
            return pos
        i = pos
        pos += 1
        u = uidx[i]
        w = pword[u]
        cc = pctx[u]
        x0 = topic_inst[i]
        xs = par_node[par_ptr[x0]]
        k0 = z[i]
        k = k0
        gw = word_sat_alone(nloc[u, k0], tloc[u, k0], exact, wrong, Lp)
        if (gw and own_wt[u, k0] == 0) or (not gw and own_wt[u, k0] == own_n[u, k0]):
            table_redraw(x0, k0, xs, wt, off, a_of, b_of, avals, bvals, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se,
                         par_ptr, eoff, own_c, own_t, mx)
            word_table_redraw(u, cc, w, k0, ww, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_wt, mxw)
            continue                           # (several partitions only: the identity, then both redraws)
        gone = sat_alone(x0, k0, exact, wrong, off, a_of, logS3, n, tc, tp)
        n[off[x0] + k0] -= 1
        Nn[x0] -= 1
        if gone:
            doc_table(x0, k0, -1, off, par_ptr, eoff, tp, TP, s, Se)
            _, refused = owned_remove(xs, k0, False, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off,
                                      par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            if refused:                        # the identity (owned_remove put x_s back), then both redraws
                doc_table(x0, k0, 1, off, par_ptr, eoff, tp, TP, s, Se)
                n[off[x0] + k0] += 1
                Nn[x0] += 1
                table_redraw(x0, k0, xs, wt, off, a_of, b_of, avals, bvals, cratio3, RJ, n, tc, tp, Nn, TC, TP, s,
                             Se, par_ptr, eoff, own_c, own_t, mx)
                word_table_redraw(u, cc, w, k0, ww, a, b, beta0, SR, nloc, tloc, Tc, troot, Troot, own_n, own_wt,
                                  mxw)
                continue
        own_n[u, k0] -= 1
        nloc[u, k0] -= 1
        Nc[cc, k0] -= 1
        if gw:
            _tables(u, cc, w, k0, -1, tloc, Tc, troot, Troot, own_wt, mxw)
        r = topic_zplus_rows(xs, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                             par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        q0 = a_of[x0]
        a0 = avals[q0]
        g0 = bvals[b_of[x0]] + a0 * TP[x0]
        total = 0.0
        for kk in range(K):
            o = off[x0] + kk
            c = n[o] + tc[o]
            t = tp[o]
            if exact:
                f = (c - a0 * t) + g0 * Zb[r, kk]
            elif t > 0:
                f = ratio3[q0, c, t]
            else:
                f = g0 * Zb[r, kk]
            nu = root_weight(w, kk, troot, Troot, beta0, V)
            total += f * word_weight(nloc[u, kk], tloc[u, kk], Nc[cc, kk], Tc[cc, kk], a, b, nu, exact, SR)
            cum[kk] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("hybrid_word_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_topic(cum, total, K)
        o = off[x0] + k
        stay = n[o] + tc[o] - a0 * tp[o]
        if exact:
            opens = stay <= 0.0 or np.random.random() * (stay + g0 * Zb[r, k]) >= stay
        else:
            opens = tp[o] == 0
        if opens:
            for q in range(anc_ptr[xs], anc_ptr[xs + 1]):
                Z[anc[q]] = Zb[slot[anc[q]], k]
            doc_table(x0, k, 1, off, par_ptr, eoff, tp, TP, s, Se)
            owned_add(xs, k, False, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha,
                      a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC,
                      TP, s, Se, eoff, mx)
        n[o] += 1
        Nn[x0] += 1
        z[i] = k
        nu = root_weight(w, k, troot, Troot, beta0, V)
        if word_opens(nloc[u, k], tloc[u, k], Tc[cc, k], a, b, nu, exact):
            _tables(u, cc, w, k, 1, tloc, Tc, troot, Troot, own_wt, mxw)
        own_n[u, k] += 1
        nloc[u, k] += 1
        Nc[cc, k] += 1
        if nloc[u, k] > mxw[0]:
            mxw[0] = nloc[u, k]
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
    shared, own_c, own_t, cdoc, anc_ptr, anc, logs = hybrid_setup(net, cnt, avals)
    mxw = np.zeros(2, np.int64)
    pos, reseed = 0, True
    while pos >= 0:
        ratios = tables(np.array([int(cnt["mx"][0]) + cdoc, int(cnt["mx"][1])], np.int64))
        word_stack.ensure(int(mxw[0]), int(mxw[1]))
        pos = hybrid_word_sweep(pos, reseed, int(seed), net.spec.sampler == "exact", int(wrong), *head,
                                net.topic_inst, z, anc_ptr, anc, net.kind, net.dim, net.off, net.alpha, net.a_of,
                                net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
                                np.asarray(avals, np.float64), np.asarray(bvals, np.float64), *ratios, *logs,
                                cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"],
                                net.eoff, cnt["mx"], cdoc, shared, own_c, own_t, word_stack.L3, mxw, *tail[:11])
        reseed = False
