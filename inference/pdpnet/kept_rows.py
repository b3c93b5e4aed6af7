"""The Z^+ rows of a token's topic vector and its ancestors kept from token to token (issue 28, 1).

A token's topic conditional needs Z^+_jt(k) for every k (001_003 extract E14/E15, table-indicator form), and
Z^+_jt reads the rows of all of jt's ancestors: for a segment chain (seqlda.json, adatm.json) O(J K) per token.
Here the rows of the ancestors are kept while the tokens of a segment (and of the next segments of the same
document) are visited, and recomputed only from the highest ancestor whose counts a path changed, as the
hand-written SeqLDA/AdaTM kernels keep their chain rows (``stale``).

Each kept row is split as Z^+_x(k) = ZA[r, k] + ZB[r, k] zr[k], zr the predictive of one Dirichlet root ``rf``
(a Dirichlet parent of the token's vector: a document's vector; without one, ZA alone), because Z^+ of a
Pitman-Yor vector is affine in its parents' Z^+ (join + sum_e open_e Z^+_parent(e)). A path that ends in ``rf``
changes only zr (O(K), recomputed every token), not the rows below it (AdaTM's segments all have the document
as a parent). Ancestors are in ascending ids, parents first; a path goes to strictly smaller ids, so its last
node is its highest one. The path of the drawn topic reads the kept rows of the parents it reaches.

Also kept per slot (session 18, the same arithmetic): the Stirling factor rows JR/OR of every Pitman-Yor
ancestor (:func:`raw_rows`; a path refreshes the cells it changes, :func:`raw_cell`; ``rawok`` slots are
current), so a row recomputed because an ancestor changed is a contiguous multiply-add, and the rows' topic-free
factors SC (:func:`pyp_scalars`), from which the drawn topic's path takes its terms without a division.
"""
from __future__ import annotations

import numpy as np

from inference.gibbs.common import token_kernel, word_factor
from inference.pdpnet.kernels import DIR, PYP, UNI
from inference.pdpnet.kernels import _count, seat_at_node
from inference.pdpnet.rho import rho_den, rho_num


@token_kernel
def enter_vector(jt, cur, fresh, rf, kept_node, slot, anc_ptr, anc, kind, par_ptr, par_node):
    """Make the slots hold the ancestors of ``jt`` (``cur``: the vector they held). Returns (fresh, rf, same):
    the number of leading slots whose rows are still current (the common prefix with the kept ones, at most
    ``fresh``; 0 when the factored root changes), the new factored root (-1: none): the first Dirichlet parent
    of ``jt`` (a root that is no parent of jt is reached through a Pitman-Yor ancestor, whose row a path to the
    root makes stale anyway, so it is a plain row there and the rows need no ZB), and the length of the common
    prefix (the slots whose Stirling factor rows :func:`raw_rows` stay current)."""
    if jt == cur:
        return fresh, rf, anc_ptr[jt + 1] - anc_ptr[jt]
    rf_new = -1
    for e in range(par_ptr[jt], par_ptr[jt + 1]):
        if kind[par_node[e]] == DIR:
            rf_new = par_node[e]
            break
    if rf_new != rf:
        fresh = 0
    depth = anc_ptr[jt + 1] - anc_ptr[jt]
    same = enter_ancestors(jt, kept_node, slot, anc_ptr, anc)
    if same < depth:
        fresh = min(fresh, same)
    return min(fresh, depth - 1), rf_new, same


@token_kernel
def enter_ancestors(j, rnode, rslot, anc_ptr, anc):
    """Put the ancestors of j (itself last) into the slots; returns the length of the common prefix with the
    slots' previous nodes (their kept Z^+ stays valid)."""
    same = -1
    r = 0
    for q in range(anc_ptr[j], anc_ptr[j + 1]):
        x = anc[q]
        if same < 0 and rnode[r] != x:
            same = r
        rnode[r] = x
        rslot[x] = r
        r += 1
    return r if same < 0 else same


@token_kernel
def raw_rows(lo, hi, K, JR, OR, kept_node, kind, off, a_of, RJ, RO, n, tc, tp):
    """``JR[r, k]`` = RJ[a, c, t] and ``OR[r, k]`` = RO[a, c, t] of cell (kept_node[r], k) for the Pitman-Yor
    slots r in lo..hi - 1: a row's Stirling factors, read from contiguous rows when the row is recomputed because
    an ancestor changed (:func:`raw_cell` keeps them current as paths change cells)."""
    for r in range(lo, hi):
        x = kept_node[r]
        if kind[x] != PYP:
            continue
        o = off[x]
        Jp = RJ[a_of[x]]
        Op = RO[a_of[x]]
        JRr = JR[r]
        ORr = OR[r]
        for k in range(K):
            c = n[o + k] + tc[o + k]
            t = tp[o + k]
            JRr[k] = Jp[c, t]
            ORr[k] = Op[c, t]


@token_kernel
def raw_cell(x, v, rawok, JR, OR, kept_node, slot, kind, off, a_of, RJ, RO, n, tc, tp):
    """Refresh the factors of cell (x, v) in :func:`raw_rows`' rows after a path changed its counts, when x is a
    Pitman-Yor vector held in a slot below ``rawok`` (the slots whose factor rows are current)."""
    r = slot[x]
    if kind[x] == PYP and r < rawok and kept_node[r] == x:
        cell = off[x] + v
        c = n[cell] + tc[cell]
        t = tp[cell]
        JR[r, v] = RJ[a_of[x], c, t]
        OR[r, v] = RO[a_of[x], c, t]


@token_kernel
def stale_from(fresh, last, prev, rf, kept_node, slot):
    """``fresh`` after a path whose last node is ``last`` and the one before it ``prev`` (-1: none) changed
    counts: the rows from the highest changed node's slot on are stale (the factored root's changes live in zr)."""
    x = last
    if x == rf:
        x = prev
    if x < 0:
        return fresh
    r = slot[x]
    if r < kept_node.shape[0] and kept_node[r] == x and r < fresh:
        return r
    return fresh


@token_kernel
def parent_value(q, rf, zk, ZA, ZB, sq, k):
    """A parent q's value of topic k in a row: the document's predictive ``zk`` where q is the document's vector
    ``rf``, else its kept Z^+ (``ZA`` at its slot ``sq``; affine in ``zk`` through ``ZB`` when the row has a
    document's vector)."""
    if q == rf:
        return zk
    if rf < 0:
        return ZA[sq, k]
    return ZA[sq, k] + ZB[sq, k] * zk


@token_kernel
def kept_topic_row(jt, K, fresh, rf, ZA, ZB, zr, SC, row, JR, OR, kept_node, slot, anc_ptr, kind, dim, off, alpha,
                   a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP,
                   Se, word, w, nwk, inv, beta, frozen_phi, frozen, cum, fast):
    """Rows ``fresh``..last - 1 of ZA/ZB (the ancestors, with the formulas of
    :func:`inference.pdpnet.kernels.node_terms` and the ratio tables of :func:`inference.pdpnet.sweep.ratio_tables`),
    then in one loop over k the factored root's predictive ``zr`` and the row of ``jt`` itself into ``row`` (its
    parents' Z^+ = ZA + ZB zr); with ``word`` also times the engine's word factor, cumulated into ``cum``.
    Returns the sum of the weights (``word``; else 0.0); every slot before jt's is then current. The Pitman-Yor
    rows' topic-free factors go into ``SC`` first (:func:`pyp_scalars`: their divisions do not wait on each other),
    where :func:`add_path_kept` reads them. ``fast``: jt's row by :func:`chain_row` / :func:`chain_doc_row` when
    its parents are one of those shapes (the engine's word table; the same arithmetic, tested against this loop)."""
    last = anc_ptr[jt + 1] - anc_ptr[jt] - 1
    for r in range(fresh, last + 1):
        x = kept_node[r]
        if kind[x] == PYP:
            pyp_scalars(x, SC[r], a_of, b_of, par_ptr, par_gamma, gamma_sum, avals, bvals, Nn, TC, TP, Se)
    for r in range(fresh, last):
        x = kept_node[r]
        A = ZA[r]
        B = ZB[r]
        o = off[x]
        kd = kind[x]
        if x == rf:
            for k in range(K):
                A[k] = 0.0
                B[k] = 1.0
        elif kd == DIR:
            ax = alpha[x]
            iden = 1.0 / (ax * dim[x] + (Nn[x] + TC[x]))
            for k in range(K):
                A[k] = (ax + (n[o + k] + tc[o + k])) * iden
                B[k] = 0.0
        elif kd == UNI:
            u = 1.0 / dim[x]
            for k in range(K):
                A[k] = u
                B[k] = 0.0
        else:
            pyp_affine_row(x, K, A, B, JR[r], OR[r], SC[r], slot, ZA, ZB, rf, par_ptr, par_node)
    zo, za, ziden = 0, 0.0, 0.0
    if rf >= 0:
        zo = off[rf]
        za = alpha[rf]
        ziden = 1.0 / (za * dim[rf] + (Nn[rf] + TC[rf]))
    g = SC[last]                            # 1/(b + C), then the edges' factors, as in pyp_affine_row
    ibc = g[0]
    e0, e1 = par_ptr[jt], par_ptr[jt + 1]
    q0 = par_node[e0]
    s0 = slot[q0]
    JRj = JR[last]
    ORj = OR[last]
    if fast and word and not frozen:
        if e1 - e0 == 1 and rf < 0:
            return chain_row(K, w, JRj, ORj, ibc, g[1], ZA[s0], row, cum, nwk, inv, beta)
        if e1 - e0 == 2 and rf >= 0 and q0 != rf and par_node[e0 + 1] == rf:
            return chain_doc_row(K, w, JRj, ORj, ibc, g[1], g[2], ZA[s0], ZB[s0], zr, n, tc, off[rf], alpha[rf],
                                 ziden, row, cum, nwk, inv, beta)
    total = 0.0
    for k in range(K):
        zk = 0.0
        if rf >= 0:
            zk = (za + (n[zo + k] + tc[zo + k])) * ziden
            zr[k] = zk
        opn = ORj[k]
        x = JRj[k] * ibc + g[1] * opn * parent_value(q0, rf, zk, ZA, ZB, s0, k)
        for e in range(e0 + 1, e1):
            q = par_node[e]
            x += g[1 + e - e0] * opn * parent_value(q, rf, zk, ZA, ZB, slot[q], k)
        row[k] = x
        if word:
            total += x * word_factor(nwk, inv, w, k, beta, frozen_phi, frozen)
            cum[k] = total
    return total


@token_kernel
def chain_row(K, w, JRj, ORj, ibc, f, P, row, cum, nwk, inv, beta):
    """:func:`kept_topic_row`'s last loop for a vector with one Pitman-Yor parent (seqlda.json's segments after
    the first), its row ``P``, times the engine's word factor."""
    total = 0.0
    for k in range(K):
        x = JRj[k] * ibc + f * ORj[k] * P[k]
        row[k] = x
        total += x * ((nwk[w, k] + beta) * inv[k])
        cum[k] = total
    return total


@token_kernel
def chain_doc_row(K, w, JRj, ORj, ibc, f0, f1, PA, PB, zr, n, tc, zo, za, ziden, row, cum, nwk, inv, beta):
    """:func:`kept_topic_row`'s last loop for a vector over a Pitman-Yor parent (its row PA + PB zr) and then
    the factored Dirichlet root (adatm.json's segments after the first), times the engine's word factor."""
    total = 0.0
    for k in range(K):
        zk = (za + (n[zo + k] + tc[zo + k])) * ziden
        zr[k] = zk
        opn = ORj[k]
        x = JRj[k] * ibc + f0 * opn * (PA[k] + PB[k] * zk)
        x += f1 * opn * zk
        row[k] = x
        total += x * ((nwk[w, k] + beta) * inv[k])
        cum[k] = total
    return total


@token_kernel
def pyp_factors(x, a_of, b_of, avals, bvals, Nn, TC, TP):
    """A Pitman-Yor vector's topic-free factors: 1/(b + C), (b + a T)/(b + C) and T."""
    p = a_of[x]
    a = avals[p]
    b = bvals[b_of[x]]
    T = TP[x]
    bc = b + (Nn[x] + TC[x])
    if b == np.inf:                     # a mixture node: 1/(b + C) = 0, (b + a T)/(b + C) = 1
        return 0.0, 1.0, T
    return 1.0 / bc, (b + a * T) / bc, T


@token_kernel
def pyp_scalars(x, sc, a_of, b_of, par_ptr, par_gamma, gamma_sum, avals, bvals, Nn, TC, TP, Se):
    """A Pitman-Yor vector's topic-free factors into ``sc``: 1/(b + C), then per parent edge
    f_e = (b + a T)/(b + C) (gamma_e + S_e)/(sum gamma + T)."""
    ibc, lead, T = pyp_factors(x, a_of, b_of, avals, bvals, Nn, TC, TP)
    sc[0] = ibc
    gs = gamma_sum[x]
    e0 = par_ptr[x]
    for e in range(e0, par_ptr[x + 1]):
        sc[1 + e - e0] = lead * rho_num(par_gamma[e], Se[e], gs) / rho_den(gs, T)


@token_kernel
def pyp_affine_row(x, K, A, B, JRr, ORr, sc, slot, ZA, ZB, rf, par_ptr, par_node):
    """A Pitman-Yor vector's row: A = join/(b + C) + sum_e f_e open ZA_parent, B = sum_e f_e open ZB_parent
    (a parent that is the factored root: ZA 0, ZB 1), its factors ``sc`` (:func:`pyp_scalars`); join and open
    are the vector's factor rows ``JRr``/``ORr`` (:func:`raw_rows`)."""
    ibc = sc[0]
    e0, e1 = par_ptr[x], par_ptr[x + 1]
    if e1 - e0 == 1:                        # one parent: one loop
        q = par_node[e0]
        f = sc[1]
        if q == rf:
            for k in range(K):
                A[k] = JRr[k] * ibc
                B[k] = f * ORr[k]
        elif rf < 0:
            PA = ZA[slot[q]]
            for k in range(K):
                A[k] = JRr[k] * ibc + f * ORr[k] * PA[k]
        else:
            PA = ZA[slot[q]]
            PB = ZB[slot[q]]
            for k in range(K):
                fg = f * ORr[k]
                A[k] = JRr[k] * ibc + fg * PA[k]
                B[k] = fg * PB[k]
        return
    for k in range(K):
        A[k] = JRr[k] * ibc
        B[k] = 0.0
    for e in range(e0, e1):
        q = par_node[e]
        f = sc[1 + e - e0]
        if q == rf:
            for k in range(K):
                B[k] += f * ORr[k]
        else:
            PA = ZA[slot[q]]
            PB = ZB[slot[q]]
            for k in range(K):
                fg = f * ORr[k]
                A[k] += fg * PA[k]
                B[k] += fg * PB[k]


@token_kernel
def add_path_kept(jt, k, ZA, ZB, zr, rf, slot, JR, OR, SC, rawok, kept_node, terms, kind, off, a_of, par_ptr,
                  par_node, RJ, RO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """:func:`inference.pdpnet.ratio_path.add_path_r` of the token's cell (jt, k) with the terms of each node
    the path reaches read from what :func:`kept_topic_row` left (its counts have not changed since): join =
    JR ibc, open_e = f_e OR Z^+_parent(e), the parents' Z^+ from the kept rows (the terms whose sum is the
    node's kept row; no division on the path). Each changed cell's factors are refreshed (:func:`raw_cell`).
    Returns (the node before the path's last, its last node)."""
    prev = -1
    j = jt
    data = True
    zk = zr[k]
    while True:
        cell = off[j] + k
        if kind[j] != PYP:
            _count(j, cell, data, 1, n, tc, Nn, TC, mx, False)
            return prev, j
        nxt = seat_kept(j, k, cell, data, zk, ZA, ZB, rf, slot, JR, OR, SC, terms, par_ptr, par_node, n, tc, tp,
                        Nn, TC, TP, s, Se, eoff, mx)
        raw_cell(j, k, rawok, JR, OR, kept_node, slot, kind, off, a_of, RJ, RO, n, tc, tp)
        if nxt < 0:
            return prev, j
        prev = j
        j = nxt
        data = False


@token_kernel
def seat_kept(j, k, cell, data, zk, ZA, ZB, rf, slot, JR, OR, SC, terms, par_ptr, par_node, n, tc, tp, Nn, TC, TP,
              s, Se, eoff, mx):
    """One node of :func:`add_path_kept`: its terms from the kept rows, then the seating draw."""
    r = slot[j]
    sc = SC[r]
    total = 0.0
    if n[cell] + tc[cell] > 0:
        total = JR[r, k] * sc[0]
    terms[0] = total
    opn = OR[r, k]
    m = 1
    for e in range(par_ptr[j], par_ptr[j + 1]):
        q = par_node[e]
        x = sc[m] * opn * parent_value(q, rf, zk, ZA, ZB, slot[q], k)
        terms[m] = x
        total += x
        m += 1
    return seat_at_node(j, k, cell, data, terms, total, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)


@token_kernel
def max_row_drift(dev, row, ref, K):
    """max(dev, max_k |row_k - ref_k| / |ref_k|): the sweep's self-check of the kept rows."""
    for k in range(K):
        if row[k] != ref[k]:
            dev = max(dev, abs(row[k] - ref[k]) / max(abs(ref[k]), 1e-300))
    return dev

