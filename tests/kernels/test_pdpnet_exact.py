"""The networks' exact multiplicity sampler (issue 28, route (1); ``inference/pdpnet/multiplicity.py``): draw for
draw the built-in ``seqlda --sampler exact`` kernel on the same state and random stream; its kept rows against a
recomputation; its moves against ratios of the multiplicity joint ((E12) with C^t_s); its stationary distribution
against enumeration over (z, t) (and a wrong removal probability rejected); lda.json is collapsed LDA."""
from __future__ import annotations

import copy
import json
import math

import numba
import numpy as np
import pytest

from drivers.models.lda_gibbs.model import lda_sweep
from drivers.models.seqlda.kernels import seqlda_init, seqlda_sweep
from inference.errors import UsageError
from inference.gibbs.pdp import stirling_table
from inference.pdpnet.cmgs_run import layout_arrays, multi_parent, run_cmgs, stirling_ratios
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.multiplicity import chain_rows, exact_sweep, remove_token, topic_weights
from inference.pdpnet.multiplicity_dag import exact_dag_sweep
from inference.pdpnet.sampler import rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_cmgs import SHIPPED, _layout, _log_joint, _network_state, _set_table, _spec
from tests.kernels.test_pdpnet_sampler import _chi_square


@pytest.mark.parametrize("seed,K,a", [(0, 3, 0.0), (1, 3, 0.0), (2, 6, 0.0), (3, 3, 0.4)])
def test_seqlda_exact_is_the_built_in_kernel_draw_for_draw(seed, K, a):
    """seqlda.json under exact and ``seqlda_sweep`` (exact, table_sweep on, every b_i = b) from the same (z, t) and
    seed: the same z, t and topic-word counts after every one of 8 sweeps (8 documents, one with an empty segment
    inside its chain)."""
    V, b = 7, 3.0
    raw = _spec("seqlda", sampler="exact", b_seg=b)
    raw["parameters"]["a_seg"] = {"kind": "a", "value": a, "sample": False}
    raw["nodes"]["seg"]["pyp"]["a"] = "a_seg"
    lay = _layout(seed, D=8)
    net = compile_network(parse_network(raw), lay, K, word_side=False)
    D = len(lay.doc_ptr) - 1
    nwk1, nk1 = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    z1, n1, t1 = seqlda_init(lay.doc_ptr, lay.seg_ptr, lay.words, K, nwk1, nk1, seed)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    mcap = int(np.diff(doc_tok).max()) + 1
    tab = stirling_table(a).ensure(int(np.diff(lay.seg_ptr).max()) + mcap + 2, mcap)
    z2 = z1.astype(np.int64)
    s2 = _network_state(net, lay, z2, t1)
    nwk2, nk2 = nwk1.copy(), nk1.copy()
    moved = opened = 0
    for it in range(8):
        seqlda_sweep(lay.doc_ptr, lay.seg_ptr, lay.words, z1, n1, t1, np.full(D, b), nwk1, nk1, np.full(K, 0.1),
                     0.01, a, tab.log, tab.ratio, tab.cratio, mcap, np.zeros((1, 1)), False, True, True, 300 + it)
        cnt = rebuild_counts(net, z2, s2, word_side=False)
        before, tables = z2.copy(), s2.sum()
        run_cmgs(net, doc_tok, z2, s2, cnt, np.array([a]), np.array([b]), nwk2, nk2, 0.01, None, 300 + it, False)
        moved += int(np.sum(before != z2))
        opened += int(s2.sum() != tables)
        assert np.array_equal(z1, z2), it
        assert np.array_equal(s2, _network_state(net, lay, z2, t1)), it
        assert np.array_equal(nwk1, nwk2) and np.array_equal(nk1, nk2), it
    assert moved > 0 and opened > 0 and t1.max() >= 2


def _chain(name, a, b, K, V, D, seed):
    raw = _spec(name, sampler="exact", b_seg=b)
    raw["parameters"]["a_seg"] = {"kind": "a", "value": a, "sample": False}
    raw["nodes"]["seg"]["pyp"]["a"] = "a_seg"
    lay = _layout(seed, D=D, V=V)
    return lay, compile_network(parse_network(raw), lay, K, word_side=False)


@pytest.mark.parametrize("name,a", [("seqlda", 0.0), ("seqlda", 0.3), ("stm", 0.2), ("hdp-lda", 0.0)])
def test_kept_rows_equal_a_recomputation(name, a):
    """The sweep's kept rows give the topic weights of a recomputation from the root at every token (relative
    1e-12) over 10 sweeps of 20 documents with K = 8."""
    K, V = 8, 9
    if name == "hdp-lda":
        lay = _layout(11, D=20, V=V)
        net = compile_network(parse_network(_spec(name, sampler="exact")), lay, K, word_side=False)
    else:
        lay, net = _chain(name, a, 2.0, K, V, 20, 11)
    z = np.random.default_rng(2).integers(0, K, len(lay.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, 0.01, None,
             0, True)
    check = np.zeros(1)
    for it in range(10):
        run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, 0.01,
                 None, 5 + it, False, check)
    cnt = rebuild_counts(net, z, s, False)
    pyp = np.repeat(net.kind, np.diff(net.off)) == KIND_PYP
    c, tp = (cnt["n"] + cnt["tc"])[pyp], cnt["tp"][pyp]
    assert np.all(tp <= c) and np.all((tp > 0) == (c > 0)) and tp.max() >= 2
    assert check[0] < 1e-12, check[0]


# ---- the moves against the multiplicity joint

@numba.njit
def _remove(seed, x0, k, kind, off, a_of, par_ptr, par_node, logS3, n, tc, tp, Nn, TC, TP, s, Se, eoff):
    np.random.seed(seed)
    return remove_token(x0, k, kind, off, a_of, par_ptr, par_node, logS3, n, tc, tp, Nn, TC, TP, s, Se, eoff, 0)


def _weights(D, ad, w, K, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP, nwk, inv,
             beta):
    R = np.zeros((D + 1, K))
    chain_rows(R, 1, D, ad, K, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP)
    p = np.empty(K)
    topic_weights(p, R, D, ad, w, kind, dim, off, alpha, asum, a_of, b_of, avals, bvals, n, tc, tp, Nn, TC, TP,
                  nwk, inv, beta, np.zeros((1, 1)), False)
    return p, R


def _alone(L, a, c, t):
    """The probability that a given one of c customers at t tables sits alone, S^{c-1}_{t-1} / S^c_t."""
    return math.exp(L[c - 1, t - 1] - L[c, t]) if t >= 1 else 0.0


@pytest.mark.parametrize("name,a,b", [("seqlda", 0.0, 2.0), ("seqlda", 0.4, 1.5), ("stm", 0.3, 2.0)])
def test_moves_are_ratios_of_the_multiplicity_joint(name, a, b):
    """Every token of 4 states, after the kernel's removal: the weight of topic k with tables opened at depths
    m..D (the topic weight times the path's join/open probabilities from the kernel's rows) equals, normalised over
    every (k, m), p(state with the token and those tables) / p(state without) times the probability that the
    removal takes exactly those tables back (S^{c-1}_{t-1} / S^c_t per level): detailed balance of the move for the
    multiplicity joint (rtol 1e-9). With the table indicators' t/c in place of the Stirling ratio it fails."""
    K, V, beta = 3, 7, 0.01
    lay, net = _chain(name, a, b, K, V, 3, 7)
    lay_arr = layout_arrays(net, lay.seg_ptr[lay.doc_ptr])
    avals, bvals = net.a_values, net.b_values
    log3, _, _ = stirling_ratios(avals, [False], lay_arr["cmax"] + 2, logs=True)
    L = stirling_table(a).ensure(lay_arr["cmax"] + 4, lay_arr["cmax"] + 4).log
    z = np.random.default_rng(1).integers(0, K, len(lay.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), avals, bvals, nwk, nk, beta, None, 0, True)
    checked = paths = 0
    wrong = 0.0
    for state in range(4):
        run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), avals, bvals, nwk, nk, beta, None, 9 + state,
                 False)
        for i in range(len(z)):
            cnt = rebuild_counts(net, z, s, False)
            s1 = s.copy()
            w, k0, jt = lay.words[i], z[i], net.topic_inst[i]
            _remove(i + 100 * state, jt, k0, net.kind, net.off, net.a_of, net.par_ptr, net.par_node, log3, cnt["n"],
                    cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s1, cnt["Se"], net.eoff)
            wk = nwk.copy()
            wk[w, k0] -= 1
            up = [jt]
            while net.kind[up[-1]] == KIND_PYP:
                up.append(net.par_node[net.par_ptr[up[-1]]])
            ad, D = np.array(up[::-1], np.int64), len(up) - 1
            inv = 1.0 / (wk.sum(axis=0) + V * beta)
            p, R = _weights(D, ad, w, K, net.kind, net.dim, net.off, net.alpha, lay_arr["asum"], net.a_of, net.b_of,
                            avals, bvals, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], wk, inv,
                            beta)
            base = _log_joint(net, cnt, wk, avals, bvals, beta)
            got, want, ind = [], [], []
            for k in range(K):
                def cv(d):
                    o = net.off[ad[d]] + k
                    return cnt["n"][o] + cnt["tc"][o], cnt["tp"][o]
                Vs = {D: p[k] * inv[k] ** -1 / (wk[w, k] + beta)}
                for d in range(1, D):
                    Vs[d] = R[d, k] + (cnt["tp"][net.off[jt] + k] if d == D - 1 else 0)
                for m in range(1, D + 2):               # tables open at depths m..D
                    g = p[k]
                    for d in range(m, D + 1):
                        c, t = cv(d)
                        g *= 1.0 - (c - a * t) / Vs[d]
                    if m - 1 >= 1:
                        c, t = cv(m - 1)
                        g *= (c - a * t) / Vs[m - 1]
                    c2, w2 = copy.deepcopy(cnt), wk.copy()
                    for d in range(m, D + 1):
                        _set_table(net, c2, ad[d], k, 1)
                    c2["n"][net.off[jt] + k] += 1
                    c2["Nn"][jt] += 1
                    w2[w, k] += 1
                    back = back_ind = 1.0                # the removal's probability of taking exactly these back
                    for d in range(D, m - 1, -1):
                        o = net.off[ad[d]] + k
                        c, t = c2["n"][o] + c2["tc"][o], c2["tp"][o]
                        back *= _alone(L, a, c, t)
                        back_ind *= t / c
                    if m - 1 >= 1:
                        o = net.off[ad[m - 1]] + k
                        c, t = c2["n"][o] + c2["tc"][o], c2["tp"][o]
                        back *= 1.0 - _alone(L, a, c, t)
                        back_ind *= 1.0 - t / c
                    lj = _log_joint(net, c2, w2, avals, bvals, beta) - base
                    got.append(g)
                    want.append(math.exp(lj) * back)
                    ind.append(math.exp(lj) * back_ind)
                    paths += g > 0
            got, want, ind = (np.array(v) / np.sum(v) for v in (got, want, ind))
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)
            wrong = max(wrong, float(np.max(np.abs(got - ind))))
            checked += 1
    assert checked == 4 * len(z) and paths > 2 * checked
    assert wrong > 1e-3, wrong                          # the indicators' removal would not balance these moves


# ---- the stationary distribution against enumeration

TINY_SEQ = {     # a chain of Pitman-Yor segments under a document root; a > 0; an empty middle segment
    "parameters": {"b_seg": {"kind": "b", "value": 1.5, "sample": False}},
    "nodes": {
        "doc": {"index": ["document"], "over": "topic", "dirichlet": 0.7},
        "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.4, "b": "b_seg"},
                "parents": [{"node": "seg", "index": ["previous_segment"],
                             "if_missing": {"node": "doc", "index": ["document"]}}]},
        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.6}},
    "topic": {"node": "seg", "index": ["segment"]},
    "word": {"node": "phi", "index": ["topic"]}}

TINY_HDP = {     # document DPs over a corpus-level Pitman-Yor vector over a fixed uniform root: two levels of tables
    "nodes": {
        "top": {"index": ["corpus"], "over": "topic", "uniform": True},
        "mid": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.0},
                "parents": [{"node": "top", "index": ["corpus"]}]},
        "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.2},
                  "parents": [{"node": "mid", "index": ["corpus"]}]},
        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.6}},
    "topic": {"node": "theta", "index": ["document"]},
    "word": {"node": "phi", "index": ["topic"]}}


TINY_ADATM = {   # a two-parent Pitman-Yor segment chain (rho integrated out) under a document root
    "nodes": {
        "doc": {"index": ["document"], "over": "topic", "dirichlet": 0.7},
        "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                "parents": [{"node": "seg", "index": ["previous_segment"], "gamma": 0.8},
                            {"node": "doc", "index": ["document"], "gamma": 1.3}]},
        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.6}},
    "topic": {"node": "seg", "index": ["segment"]},
    "word": {"node": "phi", "index": ["topic"]}}


def _histogram(raw, docs, V, K, sweeps, removal, seed):
    """Every legal (z, s) with its joint (word side included) and the exact sampler's visits (every 2nd cycle)."""
    lay = CorpusLayout.of(docs, V)
    full = compile_network(parse_network(dict(raw, sampler="exact")), lay, K)
    net = compile_network(parse_network(dict(raw, sampler="exact")), lay, K, word_side=False)
    assert np.array_equal(full.eoff, net.eoff) and np.array_equal(full.par_node, net.par_node)
    states = enumerate_states(full)
    beta = float(full.alpha[full.word_inst[0, 0]])
    z = np.zeros(len(lay.words), np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, beta, None,
             0, True)
    cnt = rebuild_counts(net, z, s, False)
    lay_arr = net.cmgs
    log3, ratio3, cratio3 = stirling_ratios(net.a_values, [False] * len(net.a_values), lay_arr["cmax"], logs=True)
    head = (net.words, z, net.topic_inst, net.kind, net.dim, net.off, net.alpha, lay_arr["asum"], net.a_of,
            net.b_of, net.par_ptr, net.par_node)
    counts_ = (cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff,
               lay_arr["pass_end"], lay_arr["pass_lo"], lay_arr["pass_hi"], nwk, nk, beta, np.zeros((1, 1)), False)
    values = (np.asarray(net.a_values, np.float64), np.asarray(net.b_values, np.float64), log3, ratio3, cratio3)
    if multi_parent(net):
        sweep = exact_dag_sweep
        args = head + (net.par_gamma, net.gamma_sum) + values + (lay_arr["anc_ptr"], lay_arr["anc"]) + counts_ + (
            removal,)
    else:
        sweep = exact_sweep
        args = head + values + counts_ + (lay_arr["maxdepth"], removal, np.zeros(0))
    zs = np.zeros((sweeps // 2, len(z)), np.int64)
    ss = np.zeros((sweeps // 2, len(s)), np.int64)
    for it in range(sweeps):
        sweep(seed + it, *args)
        if it % 2 == 0:
            zs[it // 2], ss[it // 2] = z, s
    index = {(zz, sv): r for r, (zz, sv, _) in enumerate(states)}
    rows, counts = np.unique(np.hstack([zs, ss]), axis=0, return_counts=True)
    obs = np.zeros(len(states))
    for row, c in zip(rows, counts):
        key = (tuple(int(x) for x in row[:len(z)]), tuple(int(x) for x in row[len(z):]))
        assert key in index, f"the chain visited a state the enumeration calls illegal: {key}"
        obs[index[key]] = c
    return states, obs


@pytest.mark.parametrize("raw,docs,V,K,rejects", [(TINY_SEQ, [[[0, 1], [], [1]], [[0]]], 2, 2, True),
                                                  (TINY_HDP, [[[0, 1]], [[1, 0]]], 2, 2, False),
                                                  (TINY_ADATM, [[[0, 1], [1], [0]], [[0]]], 2, 2, True)])
def test_stationary_distribution_matches_enumeration(raw, docs, V, K, rejects):
    """The exact sampler's long-run frequencies of every (z, s) (40,000 cycles, every 2nd kept) against the
    normalised multiplicity joint ((E12) with C^t_s) over all legal states: chi-square p > 1e-3 and total variation
    < 0.05; on the chain of segments the same run with the table indicators' removal probability t/c (wrong for
    this joint) is rejected with p < 1e-6 (the HDP's documents are too small to tell: p 0.03)."""
    states, obs = _histogram(raw, docs, V, K, 40000, 0, 5)
    tv, pval = _chi_square(states, obs)
    assert tv < 0.05 and pval > 1e-3, (len(states), tv, pval)
    if rejects:
        states, obs = _histogram(raw, docs, V, K, 40000, 1, 5)
        tv_bad, pval_bad = _chi_square(states, obs)
        assert pval_bad < 1e-6, (tv_bad, pval_bad)


def test_lda_spec_is_collapsed_lda_draw_for_draw():
    """lda.json under exact (a Dirichlet root per document: no tables, no removal draw) makes the collapsed LDA
    kernel's draws from the same z and seed over 6 sweeps."""
    V, K = 8, 3
    rng = np.random.default_rng(4)
    docs = [[list(rng.integers(0, V, rng.integers(2, 9)))] for _ in range(6)]
    lay = CorpusLayout.of(docs, V)
    net = compile_network(parse_network(_spec("lda", sampler="exact")), lay, K, word_side=False)
    z = rng.integers(0, K, len(lay.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, 0.01, None,
             0, True)
    z2, nwk2, nk2 = z.astype(np.int32), nwk.copy(), nk.astype(np.int32)
    alpha = np.full(K, float(net.alpha[net.topic_inst[0]]))
    for it in range(6):
        run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, 0.01,
                 None, 50 + it, False)
        lda_sweep(doc_tok, lay.words.astype(np.int32), z2, nwk2, nk2, alpha, 0.01, np.zeros((1, 1)), False, 50 + it)
        assert np.array_equal(z, z2) and np.array_equal(nwk, nwk2), it
    assert len(set(z.tolist())) > 1


def test_exact_refusals_name_the_node():
    """Under exact a Pitman-Yor word side other than pyp-lda's (pyp-lda-2's chain) is refused in one line naming
    the node; the compiled spec says which
    sampler runs."""
    with pytest.raises(UsageError, match="node 'nu': sampler 'exact' runs a Pitman-Yor word side of pyp-lda's"):
        parse_network(dict(json.loads((SHIPPED / "pyp-lda-2.json").read_text()), sampler="exact"))
    text = compile_network(parse_network(_spec("seqlda", sampler="exact")), _layout(0, D=2), 2).describe()
    assert text.endswith("word ~ phi[topic]; sampler exact")



def test_adatm_under_exact_keeps_its_counts():
    """adatm.json (two-parent segments) under exact, 6 sweeps of 12 documents with K = 5: the kernel's counts equal
    the recount from (z, s), 0 < t <= c at every occupied Pitman-Yor cell, and tables move between the parents."""
    K, V = 5, 9
    lay = _layout(8, D=12, V=V)
    net = compile_network(parse_network(_spec("adatm", sampler="exact")), lay, K, word_side=False)
    z = np.random.default_rng(3).integers(0, K, len(lay.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, 0.01, None,
             0, True)
    cnt = rebuild_counts(net, z, s, False)
    s0 = s.copy()
    for it in range(6):
        run_cmgs(net, doc_tok, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.01, None, 40 + it, False)
    again = rebuild_counts(net, z, s, False)
    for name in ("n", "tc", "tp", "Nn", "TC", "TP", "Se"):
        np.testing.assert_array_equal(cnt[name], again[name], err_msg=name)
    pyp = np.repeat(net.kind, np.diff(net.off)) == KIND_PYP
    c, tp = (cnt["n"] + cnt["tc"])[pyp], cnt["tp"][pyp]
    assert np.all(tp <= c) and np.all((tp > 0) == (c > 0)) and not np.array_equal(s, s0)
    recount = np.zeros((V, K), np.int32)
    np.add.at(recount, (lay.words, z), 1)
    assert np.array_equal(recount, nwk)
