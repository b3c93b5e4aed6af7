"""A shared Pitman-Yor topic vector under the multiplicity samplers (issue 28; ``"sampler": "cmgs"`` / ``"exact"``
on hdp-pyp-lda.json's shape: document vectors, each over one shared Pitman-Yor vector x_s, on the Gibbs engine).

**A hybrid state.** The document vectors keep the multiplicity form (customers c, tables t per cell, as
:mod:`inference.pdpnet.cmgs`); the shared vector keeps Du's table indicators owned by partitions (c^p, t^p per
cell, :mod:`inference.pdpnet.owned`). Its target is the joint with the indicator factor at the shared cells,
H = (E12) prod_cells prod_p binom(c^p, t^p) / binom(c, t) (with one partition H = E12; its marginal over the
partition split is E12): given the counts, which customers of x_s hold indicators is uniform (exchangeable).

**Moves** (a token i of topic k0 at document vector x_0, x_s its parent):

1. removal at x_0: cmgs drops the token's table only when forced (t = c before the decrement: NOT exact, CMGS's
   own bias); exact drops it with probability S^{c-1}_{t-1} / S^c_t (the conditional of "it sat alone" given
   (c, t), :func:`inference.pdpnet.multiplicity.remove_token`'s). A dropped table's customer leaves x_s by
   :func:`owned.owned_remove`: it held one of its partition's indicators with probability t^p / c^p (the
   conditional given the counts of which customer it is, exact); a move that would leave x_s's cell with customers
   and no table is refused (the identity, as the indicator sampler's);
2. the topic: p(k) ∝ W(k) Phi_kw, with Z_s(k) = Z^+ of k at x_s (the indicator sampler's join + open terms,
   (b, a) of x_s, its parent's Z^+ above: :func:`sweep.topic_zplus_rows`) and g_0 = b_0 + a_0 T_0:
       cmgs:  W(k) = S^{c+1}_t / S^c_t (t > 0: join x_0's tables, t unchanged; (6.6)),  g_0 Z_s(k) (t = 0: open)
       exact: W(k) = (c - a_0 t) + g_0 Z_s(k)                       (the seating predictive, Q_{x_s} = Z_s)
   both are H's ratios after/before summed over the completions each sampler allows (cmgs: join where t > 0);
   exact: join with probability (c - a_0 t) / W(k), else open; an opened table's customer is seated at x_s by
   :func:`owned.owned_add` (join/open by Z^+'s terms: the conditional of its indicator path, exact);
3. the table count of (x_0, k) ((6.7) with the parent in indicator form): first j, how many of x_0's t tables hold
   an indicator at x_s, from its conditional given the partition's counts (hypergeometric: t draws from c^p
   customers, t^p of them holding one); then t from H's conditional with j and x_s's tables fixed (the new
   customers at x_s join tables, the leaving ones hold none):
       p(v) ∝ (b_0|a_0)_{T_0' + v} S^{c}_v  S^{c_s' + v}_{t_s} / (b_s)_{C_s' + v}  binom(v, j) / binom(c_s' + v, t_s),
       v in [max(1, j, t_s - c_s'), c]       (c_s', C_s': x_s's customers without x_0's tables; a Gibbs step of H).
   With one partition E12's own conditional of t (CMGS's (6.7), S^{c_s'+v}_{t_s} at the parent, no j) is exact
   too; the binomials keep every partition's split of x_s's tables (t^p among c^p) at H's conditional. Taken after
   a refused removal too (at k0): skipped there, whether it runs would depend on the removal's random outcome,
   which biased the exact chain (p 5e-41 on the tested case; each move alone was invariant);
4. after the tokens, one customer of every shared cell with own customers is re-seated
   (:func:`owned.owned_reseat`; x_s's cells stand for CMGS's pass-through (6.7) redraws, which would need every
   partition's multiplicities); before them, the race rule (:func:`owned.repair`).

With the exact removal every move leaves H invariant (tested against the enumerated E12 with one partition); cmgs
differs by its removal and its completions (join-only where t > 0), CMGS's pair; its topic draw is tested
against H's ratios over those completions. Networks of another shape (a chain of document vectors, tokens at x_s itself, a
document vector with several parents) are refused (:func:`check_shape`).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.errors import UsageError
from inference.gibbs.common import BIG, draw_scan, rescale_weights, token_kernel
from inference.pdpnet.cmgs import table_draw_scratch
from inference.pdpnet.cmgs_run import stirling_ratios
from inference.pdpnet.kernels import PYP, ancestor_lists
from inference.pdpnet.mult_removal import RIGHT, WRONG_REMOVAL, sat_alone  # noqa: F401 (the switch, as before)
from inference.pdpnet.owned import owned_add, owned_prologue, owned_remove, owned_reseat
from inference.pdpnet.sweep import draw_topic, topic_zplus_rows


def check_shape(net, shared: np.ndarray) -> None:
    """Refuse (one line naming the node) what the hybrid does not run: every token's vector a Pitman-Yor vector
    with one parent, a shared Pitman-Yor vector, and no children."""
    has_child = np.zeros(net.num_nodes, np.bool_)
    has_child[net.par_node] = True
    for x in np.unique(net.topic_inst):
        p = net.par_node[net.par_ptr[x]]
        ok = (net.kind[x] == PYP and not shared[x] and net.par_ptr[x + 1] - net.par_ptr[x] == 1 and shared[p]
              and not has_child[x])
        if not ok:
            name = net.spec.order[int(net.family[x])]
            raise UsageError(f"network spec: node '{name}': sampler '{net.spec.sampler}' with a shared Pitman-Yor "
                             "vector runs document vectors each over one shared Pitman-Yor vector (hdp-pyp-lda's "
                             "shape); use \"sampler\": \"indicators\"")


@token_kernel
def doc_table(x, k, d, off, par_ptr, eoff, tp, TP, s, Se):
    """t of document cell (x, k) += d with its edge's s; the shared parent's customers move by the owned moves."""
    tp[off[x] + k] += d
    TP[x] += d
    e = par_ptr[x]
    s[eoff[e] + k] += d
    Se[e] += d


@token_kernel
def shared_tables_held(t, cp, tp_own):
    """j: how many of a document cell's t tables hold an indicator at the shared cell, given the partition's c^p
    customers there of which t^p hold one (hypergeometric, one uniform per table unless forced)."""
    if tp_own == 0:
        return 0
    if tp_own == cp:
        return t
    j = 0
    for i in range(t):
        if np.random.random() * (cp - i) < tp_own - j:
            j += 1
    return j


@token_kernel
def table_redraw(x, k, xs, wt, off, a_of, b_of, avals, bvals, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se,
                 par_ptr, eoff, own_c, own_t, mx):
    """Move 3 of the module docstring at document cell (x, k) under shared cell (xs, k)."""
    o = off[x] + k
    c = n[o] + tc[o]
    if c == 0:
        return
    t = tp[o]
    os_ = off[xs] + k
    j = shared_tables_held(t, own_c[os_], own_t[os_])
    ts = tp[os_]
    cpr = n[os_] + tc[os_] - t
    lo = max(1, max(j, ts - cpr))
    hi = c
    if hi <= lo:
        return
    q = a_of[x]
    a = avals[q]
    b = bvals[b_of[x]]
    Tr = TP[x] - t
    ps = a_of[xs]
    den = bvals[b_of[xs]] + Nn[xs] + TC[xs] - t
    xv = 1.0
    wt[lo] = 1.0
    total = 1.0
    for v in range(lo + 1, hi + 1):
        cs = cpr + v - 1
        f = (b + a * (Tr + v - 1)) * cratio3[q, c, v] * RJ[ps, cs, ts] / (den + (v - 1))
        f *= v / (v - j)                    # binom(v, j) / binom(v - 1, j): the labelings of x_0's customers
        xv *= f
        if xv > BIG:
            total, xv = rescale_weights(wt, lo, v, total, xv)
        wt[v] = xv
        total += xv
    d = draw_scan(wt, lo, hi, total) - t
    doc_table(x, k, d, off, par_ptr, eoff, tp, TP, s, Se)
    tc[os_] += d
    TC[xs] += d
    own_c[os_] += d
    mx[0] = max(mx[0], n[os_] + tc[os_])


@numba.njit(cache=True, error_model="numpy")
def hybrid_prologue(start, reseed, seed, cdoc, shared, own_c, own_t, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                    par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff,
                    mx, V, nk, beta):
    """The prologue of both hybrid kernels (:func:`hybrid_sweep`, :func:`inference.pdpnet.cmgs_owned_words.
    hybrid_word_sweep`): the table count draws' scratch, then :func:`owned.owned_prologue`'s. Returns (wt, Z,
    terms, Zb, slot, pn, pe, cum, oc, ot, inv, V beta)."""
    wt = table_draw_scratch(kind, dim, off, n, tc, cdoc)
    Z, terms, Zb, slot, pn, pe, cum, oc, ot, inv, vbeta = owned_prologue(
        start, reseed, seed, shared, own_c, own_t, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
        par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, V, nk, beta)
    return wt, Z, terms, Zb, slot, pn, pe, cum, oc, ot, inv, vbeta


@token_kernel
def doc_leave(x0, k0, xs, exact, wrong, wt, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off, a_of, b_of,
              par_ptr, par_node, avals, bvals, logS3, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """Move 1 of the module docstring: the token out of document cell (x_0, k0), its table with it when it sat alone
    (:func:`mult_removal.sat_alone`), that table's customer out of x_s (:func:`owned.owned_remove`). Returns whether
    it was refused (then the identity, and move 3 at k0 taken here)."""
    o = off[x0] + k0
    gone = sat_alone(n[o] + tc[o], tp[o], exact, wrong, logS3, a_of[x0])
    n[o] -= 1
    Nn[x0] -= 1
    if gone:
        doc_table(x0, k0, -1, off, par_ptr, eoff, tp, TP, s, Se)
        _, refused = owned_remove(xs, k0, False, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off,
                                  par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        if refused:                         # the identity move (owned_remove put x_s back); the table count's
            doc_table(x0, k0, 1, off, par_ptr, eoff, tp, TP, s, Se)     # redraw all the same (skipping it there
            n[o] += 1                                                   # would bias it: tested)
            Nn[x0] += 1
            table_redraw(x0, k0, xs, wt, off, a_of, b_of, avals, bvals, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se,
                         par_ptr, eoff, own_c, own_t, mx)
            return True
    return False


@token_kernel
def doc_rows(x0, xs, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
             gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se):
    """(the row of Z_s in ``Zb``, x_0's discount's index, a_0, g_0 = b_0 + a_0 T_0) of move 2."""
    r = topic_zplus_rows(xs, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                         par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
    q0 = a_of[x0]
    a0 = avals[q0]
    return r, q0, a0, bvals[b_of[x0]] + a0 * TP[x0]


@token_kernel
def doc_weight(x0, k, r, exact, q0, a0, g0, Zb, ratio3, off, n, tc, tp):
    """W(k) of move 2 (cmgs: join x_0's tables where t > 0, else open; exact: the seating predictive)."""
    o = off[x0] + k
    c = n[o] + tc[o]
    t = tp[o]
    if exact:
        return (c - a0 * t) + g0 * Zb[r, k]
    if t > 0:
        return ratio3[q0, c, t]
    return g0 * Zb[r, k]


@token_kernel
def doc_arrive(x0, xs, k, r, exact, a0, g0, Z, terms, Zb, slot, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim,
               off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn,
               TC, TP, s, Se, eoff, mx):
    """The token into document cell (x_0, k) (move 2's seating): exact joins with probability (c - a_0 t) / W(k),
    cmgs where t > 0; an opened table's customer seated at x_s by :func:`owned.owned_add`."""
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
        owned_add(xs, k, False, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off, alpha, a_of,
                  b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se,
                  eoff, mx)
    n[o] += 1
    Nn[x0] += 1


@numba.njit(cache=True, error_model="numpy")
def hybrid_sweep(start, reseed, seed, exact, wrong, words, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of,
                 b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, logS3, ratio3, cratio3, n,
                 tc, tp, Nn, TC, TP, s, Se, eoff, mx, cdoc, nwk, nk, beta, frozen_phi, frozen, shared, own_c, own_t):
    """One cycle from position ``start`` (module docstring; ``exact``: the exact removal and predictive, else
    cmgs's): at ``start`` 0 the race rule, then every token, then the shared cells' re-seating. ``RJ, RO, EO``: the
    shared vector's ratio tables (:class:`drivers.models.pdp_network.shared_pyp.OwnedTables`), ``logS3, ratio3,
    cratio3``: the document cells' (:func:`inference.pdpnet.cmgs_run.stirling_ratios`, ``cdoc`` customers at most).
    Returns -1 when done or the position to resume from once ``RJ`` covers max c + cdoc + 3 and max t + 3."""
    N = words.shape[0]
    K = nwk.shape[1]
    wt, Z, terms, Zb, slot, pn, pe, cum, oc, ot, inv, vbeta = hybrid_prologue(
        start, reseed, seed, cdoc, shared, own_c, own_t, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
        par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, nwk.shape[0], nk,
        beta)
    rows = RJ.shape[1] + 1
    cols = RJ.shape[2] + 1
    pos = start
    while pos < N:
        if mx[0] + cdoc + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        pos += 1
        w = words[i]
        x0 = topic_inst[i]
        xs = par_node[par_ptr[x0]]
        k0 = z[i]
        if doc_leave(x0, k0, xs, exact, wrong, wt, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe, kind, off, a_of,
                     b_of, par_ptr, par_node, avals, bvals, logS3, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
            continue
        if not frozen:
            nwk[w, k0] -= 1
            nk[k0] -= 1
            inv[k0] = 1.0 / (nk[k0] + vbeta)
        r, q0, a0, g0 = doc_rows(x0, xs, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                 par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
        total = 0.0
        for k in range(K):
            f = doc_weight(x0, k, r, exact, q0, a0, g0, Zb, ratio3, off, n, tc, tp)
            total += f * (frozen_phi[w, k] if frozen else (nwk[w, k] + beta) * inv[k])
            cum[k] = total
        if not (total > 0.0 and total < np.inf):
            raise FloatingPointError("hybrid_sweep: a token's topic weights sum to NaN, inf or 0")
        k = draw_topic(cum, total, K)
        doc_arrive(x0, xs, k, r, exact, a0, g0, Z, terms, Zb, slot, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind,
                   dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc,
                   tp, Nn, TC, TP, s, Se, eoff, mx)
        z[i] = k
        if not frozen:
            nwk[w, k] += 1
            nk[k] += 1
            inv[k] = 1.0 / (nk[k] + vbeta)
        table_redraw(x0, k, xs, wt, off, a_of, b_of, avals, bvals, cratio3, RJ, n, tc, tp, Nn, TC, TP, s, Se,
                     par_ptr, eoff, own_c, own_t, mx)
    return owned_reseat(pos, N, shared, own_c, own_t, oc, ot, Z, terms, pn, pe, anc_ptr, anc, kind, dim, off, alpha,
                        a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC,
                        TP, s, Se, eoff, mx)


def document_customers(net, shared: np.ndarray) -> int:
    """The most customers a document cell can hold: its vector's tokens (the Stirling tables of the document cells)."""
    tokens = np.bincount(net.topic_inst, minlength=net.num_nodes)
    return int(tokens[~shared].max(initial=1))


def run_hybrid(net, z, s, cnt: dict, avals, bvals, nwk, nk, beta: float, frozen_phi, seed: int, tables,
               wrong: int = RIGHT) -> None:
    """One cycle of :func:`hybrid_sweep` on a partition's counts (``cnt["own"]`` = (shared, own_c, own_t):
    :func:`drivers.models.pdp_network.shared_pyp.substitute`; in process, one partition: the counts themselves);
    ``tables(mx)``: the shared vector's ratio tables (RJ, RO, EO) covering ``mx``. z, s and the counts in place."""
    frozen = frozen_phi is not None
    phi = np.ascontiguousarray(frozen_phi, dtype=np.float64) if frozen else np.zeros((1, 1))

    def sweep(pos, reseed, middle, owned):
        return hybrid_sweep(pos, reseed, int(seed), net.spec.sampler == "exact", int(wrong), net.words, z,
                            net.topic_inst, *middle, nwk, nk, float(beta), phi, frozen, *owned)
    hybrid_cycle(net, s, cnt, avals, bvals, tables, sweep)


def hybrid_cycle(net, s, cnt: dict, avals, bvals, tables, sweep) -> None:
    """The calls of one hybrid cycle (:func:`run_hybrid`, :func:`inference.pdpnet.cmgs_owned_words.
    run_hybrid_words`): ``sweep(pos, reseed, middle, owned)`` (the kernel's call) resumed until it returns -1, the
    shared vector's ratio tables ``tables(mx)`` grown before each call; ``middle`` the kernel's arguments from
    ``anc_ptr`` to ``cdoc`` (the topic side's, the ratio and Stirling tables, the counts), ``owned`` (shared, own_c,
    own_t) (:func:`hybrid_setup`)."""
    shared, own_c, own_t, cdoc, anc_ptr, anc, logs = hybrid_setup(net, cnt, avals)
    topic = (anc_ptr, anc, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
             net.par_gamma, net.gamma_sum, np.asarray(avals, np.float64), np.asarray(bvals, np.float64))
    counts = (cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"], cdoc)
    pos, reseed = 0, True
    while pos >= 0:
        ratios = tables(np.array([int(cnt["mx"][0]) + cdoc, int(cnt["mx"][1])], np.int64))
        pos = sweep(pos, reseed, topic + tuple(ratios) + tuple(logs) + counts, (shared, own_c, own_t))
        reseed = False


def hybrid_setup(net, cnt: dict, avals) -> tuple:
    """(shared, own_c, own_t, cdoc, anc_ptr, anc, (logS3, ratio3, cratio3)) of a hybrid cycle: the own tables, the
    shape checked and the layout kept with the compiled network, the document cells' Stirling tables."""
    shared, own_c, own_t = cnt["own"]
    lay = getattr(net, "hybrid", None)
    if lay is None:
        check_shape(net, shared)
        lay = net.hybrid = (document_customers(net, shared), *ancestor_lists(net.par_ptr, net.par_node))
    sampled = [net.spec.params[nm].sample for nm in net.a_names]
    return (shared, own_c, own_t, *lay, stirling_ratios(avals, sampled, lay[0], logs=True))
