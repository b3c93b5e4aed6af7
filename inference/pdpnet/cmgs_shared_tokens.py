"""Tokens drawn from a shared Pitman-Yor topic vector under the multiplicity samplers (issue 28; ``"sampler":
"cmgs"`` / ``"exact"``): every token's topic from one corpus-level (or kept-column) Pitman-Yor vector x_s over one
Dirichlet root or the uniform, the Gibbs engine's Dirichlet word table beside it.

x_s's cells are pyp-lda's word cells turned to topics (:mod:`inference.pdpnet.word_mult`): customers c = the tokens
(the partition's own n, the others' in t^c), tables t in multiplicity form, each partition's own t^p <= n^p (its s
on x_s's edge: the engine's ``network_tp`` sums them), the root's customers x_s's tables. A token of topic k0 leaves
(removal forced at t = c under cmgs, S^{c-1}_{t-1}/S^c_t under exact; with several partitions refused when the
partition cannot take or keep the table), its topic is drawn from F(k) Phi_kw (:func:`word_mult.word_weight` with
x_s's C, T and the root's predictive), a table opened (:func:`word_mult.word_opens`), and t of the token's cell
redrawn from its conditional (:func:`word_mult.own_table_draw`; after a refusal too, at k0). Before the first
token the race rule: a cell with customers and no table (two partitions removed its last ones) reads one table,
opened by a partition with customers there. With one partition the exact chain leaves (E12) invariant (tested
against the enumeration).
"""
from __future__ import annotations

import numba
import numpy as np

from inference.errors import UsageError
from inference.pdpnet.cmgs import _move_table
from inference.pdpnet.kernels import DIR, PYP
from inference.pdpnet.mult_removal import RIGHT, own_removal
from inference.pdpnet.sweep import draw_topic
from inference.pdpnet.word_mult import own_table_draw, stirling_steps, word_opens, word_weight


def tokens_at_shared(net, shared: np.ndarray) -> bool:
    """Whether every token's vector is a shared Pitman-Yor vector with one parent, a Dirichlet root or the
    uniform, and no vector below it (this module's shape); a shared vector with tokens in another shape is refused
    in one line naming it."""
    xs = np.unique(net.topic_inst)
    if not shared[xs].all():
        return False
    has_child = np.zeros(net.num_nodes, np.bool_)
    has_child[net.par_node] = True
    for x in xs:
        p = net.par_node[net.par_ptr[x]]
        if net.kind[x] != PYP or net.par_ptr[x + 1] - net.par_ptr[x] != 1 or net.kind[p] == PYP or has_child[x]:
            name = net.spec.order[int(net.family[x])]
            raise UsageError(f"network spec: node '{name}': sampler '{net.spec.sampler}' with tokens drawn from a "
                             "shared Pitman-Yor vector runs it over one Dirichlet root or uniform vector, nothing "
                             "below it; use \"sampler\": \"indicators\"")
    return True


@numba.njit(cache=True, error_model="numpy")
def shared_token_sweep(start, reseed, seed, exact, wrong, words, z, topic_inst, kind, dim, off, alpha, a_of, b_of,
                       par_ptr, par_node, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, own_t, nwk, nk,
                       beta, frozen_phi, frozen):
    """One cycle from position ``start`` (module docstring; ``own_t``: the partition's own tables per cell, n its
    own tokens). Returns -1 when done or the position to resume from once ``L3`` covers max c + 3, max t + 3."""
    if reseed:
        np.random.seed(seed)
    N = words.shape[0]
    K = nk.shape[0]
    rows = L3.shape[1]
    cols = L3.shape[2]
    vbeta = nwk.shape[0] * beta
    cum = np.empty(K)
    cmax = 1
    for x in range(kind.shape[0]):
        if kind[x] == PYP:
            for k in range(dim[x]):
                cmax = max(cmax, n[off[x] + k] + tc[off[x] + k])
                mx[0] = max(mx[0], n[off[x] + k] + tc[off[x] + k])
                if start == 0 and tp[off[x] + k] == 0 and n[off[x] + k] + tc[off[x] + k] > 0:    # the race rule
                    if n[off[x] + k] > 0:
                        _move_table(x, k, 1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
                        own_t[off[x] + k] += 1
                    else:
                        tp[off[x] + k] += 1
                        TP[x] += 1
                mx[1] = max(mx[1], tp[off[x] + k])
    wt = np.empty(cmax + N + 2)
    SRs = stirling_steps(L3)
    pos = start
    while pos < N:
        if mx[0] + 3 > rows or mx[1] + 3 > cols:
            return pos
        i = pos
        pos += 1
        w = words[i]
        xs = topic_inst[i]
        r = par_node[par_ptr[xs]]
        SR = SRs[a_of[xs]]
        a = avals[a_of[xs]]
        b = bvals[b_of[xs]]
        root = kind[r] == DIR
        k = z[i]
        o = off[xs] + k
        gone, refused = own_removal(n[o] + tc[o], tp[o], own_t[o], n[o], exact, wrong, L3, a_of[xs])
        if not refused:
            n[o] -= 1
            Nn[xs] -= 1
            if gone:
                _move_table(xs, k, -1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
                own_t[o] -= 1
            if not frozen:
                nwk[w, k] -= 1
                nk[k] -= 1
            C = Nn[xs] + TC[xs]
            total = 0.0
            for kk in range(K):
                ok = off[xs] + kk
                nu = (alpha[r] + (n[off[r] + kk] + tc[off[r] + kk])) / (alpha[r] * dim[r] + Nn[r] + TC[r]) \
                    if root else 1.0 / dim[r]
                f = word_weight(n[ok] + tc[ok], tp[ok], C, TP[xs], a, b, nu, exact, SR)
                total += f * (frozen_phi[w, kk] if frozen else (nwk[w, kk] + beta) / (nk[kk] + vbeta))
                cum[kk] = total
            if not (total > 0.0 and total < np.inf):
                raise FloatingPointError("shared_token_sweep: a token's topic weights sum to NaN, inf or 0")
            k = draw_topic(cum, total, K)
            o = off[xs] + k
            nu = (alpha[r] + (n[off[r] + k] + tc[off[r] + k])) / (alpha[r] * dim[r] + Nn[r] + TC[r]) \
                if root else 1.0 / dim[r]
            if word_opens(n[o] + tc[o], tp[o], TP[xs], a, b, nu, exact):
                _move_table(xs, k, 1, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
                own_t[o] += 1
            n[o] += 1
            Nn[xs] += 1
            mx[0] = max(mx[0], n[o] + tc[o])
            mx[1] = max(mx[1], tp[o])
            if not frozen:
                nwk[w, k] += 1
                nk[k] += 1
            z[i] = k
        oroot = off[r] + k
        d, _, _ = own_table_draw(wt, n[o] + tc[o], tp[o], own_t[o], n[o], TP[xs],
                                 (n[oroot] + tc[oroot]) if root else 0, (Nn[r] + TC[r]) if root else 0, dim[r],
                                 alpha[r] if root else 0.0, a, b, SR, mx)
        if d != 0:
            _move_table(xs, k, d, off, par_ptr, par_node, eoff, tc, tp, TC, TP, s, Se)
            own_t[o] += d
            mx[1] = max(mx[1], tp[o])
    return -1


def run_shared_tokens(net, z, s, cnt: dict, avals, bvals, nwk, nk, beta: float, frozen_phi, seed: int, stack,
                      wrong: int = RIGHT) -> None:
    """One cycle of :func:`shared_token_sweep` on a partition's counts (``cnt["own"]``'s own tables; ``stack``: a
    StirlingStack of the network's discounts, grown here). z, s and the counts in place."""
    own_t = cnt["own"][2]
    frozen = frozen_phi is not None
    phi = np.ascontiguousarray(frozen_phi, dtype=np.float64) if frozen else np.zeros((1, 1))
    pos, reseed = 0, True
    while pos >= 0:
        stack.ensure(int(cnt["mx"][0]), int(cnt["mx"][1]))
        pos = shared_token_sweep(pos, reseed, int(seed), net.spec.sampler == "exact", int(wrong), net.words, z,
                                 net.topic_inst, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of,
                                 net.par_ptr, net.par_node, np.asarray(avals, np.float64),
                                 np.asarray(bvals, np.float64), stack.L3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"],
                                 cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"], own_t, nwk, nk, float(beta),
                                 phi, frozen)
        reseed = False
