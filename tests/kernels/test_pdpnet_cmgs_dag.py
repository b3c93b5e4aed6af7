"""CMGS at multi-parent Pitman-Yor vectors (issue 28; :mod:`inference.pdpnet.cmgs_dag`, adatm.json under ``cmgs``):
its topic weights and its per-edge table redraws against the multiplicity joint (E12) computed directly, and the
sweep's counts against a recount."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inference.pdpnet import cmgs_run
from inference.pdpnet.cmgs_dag import edge_weights, row_value, topic_rows, topic_weight
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import reference_log_joint
from tests.kernels.test_pdpnet_sampler import _without_token

SHIPPED = Path(__file__).resolve().parents[2] / "sample_data" / "networks"
K, V, BETA = 3, 5, 0.4
DOCS = [[[0, 1, 1], [2, 1], [4, 0, 1, 3]], [[3, 3], [0, 4, 4], [1], [2, 2, 0]]]


def _net(a):
    raw = json.loads((SHIPPED / "adatm.json").read_text())
    raw["sampler"] = "cmgs"
    seg = raw["nodes"]["seg"]
    seg["pyp"] = {"a": a, "b": 1.7}
    seg["parents"][0]["gamma"], seg["parents"][1]["gamma"] = 0.8, 1.3
    raw["nodes"]["doc"]["dirichlet"] = 0.4
    raw["nodes"]["phi"]["dirichlet"] = BETA
    return compile_network(parse_network(raw), CorpusLayout.of(DOCS, V), K)


def _state(net, sweeps, seed):
    """(z, s, topic-side counts, nwk, nk) after ``sweeps`` CMGS cycles from a random z."""
    z = np.random.default_rng(seed).integers(0, K, len(net.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    cnt = {key: np.zeros_like(v) for key, v in rebuild_counts(net, z, s, word_side=False).items()}  # init counts z
    nwk, nk = np.zeros((V, K), np.int64), np.zeros(K, np.int64)
    ptr = np.cumsum([0] + [sum(len(g) for g in d) for d in DOCS])
    run = (net, ptr, z, s, cnt, net.a_values, net.b_values, nwk, nk, BETA, None)
    cmgs_run.run_cmgs(*run, 0, True)
    for it in range(sweeps):
        cmgs_run.run_cmgs(*run, seed * 100 + it, False)
    return z, s, cnt, nwk, nk


def _args(net, cnt):
    lay = cmgs_run.dag_layout(net, np.array([0, len(net.words)]))
    ratio3, cratio3 = cmgs_run.stirling_ratios(net.a_values, [False] * len(net.a_values), lay["cmax"] + 2)
    return lay["asum"], (ratio3, cratio3), ratio3, lay


def _completions(net, x, k, tp, s):
    """CMGS's ways to seat a new customer of k at x: join if x's cell of k has a table, else a table up each edge
    (recursively while the parent's cell is empty); yields the s after each."""
    if net.kind[x] != KIND_PYP or tp[net.off[x] + k] > 0:
        yield s
        return
    for e in range(net.par_ptr[x], net.par_ptr[x + 1]):
        s2 = s.copy()
        s2[net.eoff[e] + k] += 1
        tp2 = tp.copy()
        tp2[net.off[x] + k] += 1
        yield from _completions(net, int(net.par_node[e]), k, tp2, s2)


@pytest.mark.parametrize("a", [0.0, 0.3])
def test_topic_weights_are_sums_of_joint_ratios(a):
    """Every token of 3 states: after CMGS's removal (forced tables only; the edge of a forced table the one with
    most tables), W(x_0, k) times the word factor equals the sum over CMGS's completions (join an occupied cell;
    a table at every empty cell up each edge) of p(after)/p(rest) of the multiplicity joint, rtol 1e-9; the
    sweep's all-topic rows (``topic_rows``) equal W, rtol 1e-12."""
    net = _net(a)
    checked = 0
    for seed in range(3):
        z, s, cnt, nwk, nk = _state(net, 3 + seed, seed + 1)
        asum, ratios, ratio3, lay = _args(net, cnt)
        for i in range(len(net.words)):
            x0, k0 = int(net.topic_inst[i]), int(z[i])
            c = {key: v.copy() for key, v in cnt.items()}
            s_rest = s.copy()
            c["n"][net.off[x0] + k0] -= 1
            c["Nn"][x0] -= 1
            x = x0
            while net.kind[x] == KIND_PYP and c["tp"][net.off[x] + k0] > c["n"][net.off[x] + k0] + c["tc"][
                    net.off[x] + k0]:
                edges = range(net.par_ptr[x], net.par_ptr[x + 1])
                e = max(edges, key=lambda ee: s_rest[net.eoff[ee] + k0])
                s_rest[net.eoff[e] + k0] -= 1
                c = _recount_without(net, z, s_rest, i)
                x = int(net.par_node[e])
            rest = _without_token(net, i)
            keep = np.arange(len(z)) != i
            lo_rest = reference_log_joint(rest, z[keep], s_rest)
            nwk_r = nwk.copy()
            nwk_r[net.words[i], k0] -= 1
            nk_r = nwk_r.sum(axis=0)
            W = np.zeros(net.num_nodes)
            mark = np.full(net.num_nodes, -1, np.int64)
            stack, lst = np.empty(net.num_nodes + 1, np.int64), np.empty(net.num_nodes + 1, np.int64)
            R, B = np.zeros((net.num_nodes, K)), np.zeros((net.num_nodes, K))
            J = net.num_nodes
            topic_rows(x0, lay["root_of"][x0], R, B, np.ones(J, np.int64), np.zeros(J, np.int64),
                       np.full(J, -1, np.int64), 0, np.ones(1, np.int64), lay["anc_ptr"], lay["anc"], net.kind,
                       net.dim, net.off, net.alpha, asum, net.a_of, net.b_of, net.par_ptr, net.par_node,
                       net.par_gamma, net.gamma_sum, net.a_values, net.b_values, ratio3, c["n"], c["tc"], c["tp"],
                       c["Nn"], c["TC"], c["TP"], c["Se"])
            for k in range(K):
                w = topic_weight(x0, k, W, mark, 10 * i + k, stack, lst, net.kind, net.dim, net.off, net.alpha, asum,
                                 net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
                                 net.a_values, net.b_values, ratio3, c["n"], c["tc"], c["tp"], c["Nn"], c["TC"], c["TP"],
                                 c["Se"])
                assert row_value(x0, k, R, B, lay["root_of"][x0]) == pytest.approx(w, rel=1e-12)   # the sweep's rows
                w *= (nwk_r[net.words[i], k] + BETA) / (nk_r[k] + V * BETA)
                z_new = z.copy()
                z_new[i] = k
                ref = sum(np.exp(reference_log_joint(net, z_new, s2) - lo_rest)
                          for s2 in _completions(net, x0, k, c["tp"], s_rest))
                assert w == pytest.approx(ref, rel=1e-9), (seed, i, k)
                checked += 1
    assert checked == 3 * len(net.words) * K


def _recount_without(net, z, s, i):
    """Topic-side counts of (z, s) with token i left out."""
    cnt = rebuild_counts(net, z, s, word_side=False)
    x0 = int(net.topic_inst[i])
    cnt["n"][net.off[x0] + z[i]] -= 1
    cnt["Nn"][x0] -= 1
    return cnt


@pytest.mark.parametrize("a", [0.0, 0.3])
def test_edge_redraws_are_the_joints_conditionals(a):
    """Every occupied cell of a Pitman-Yor vector and each of its edges, on 3 states: edge_weights over [lo, hi]
    equals p(s_e = v | rest) of the multiplicity joint normalised (rtol 1e-9), and s_e = lo - 1 and hi + 1 are
    illegal (joint 0)."""
    net = _net(a)
    checked = 0
    for seed in range(3):
        z, s, cnt, _, _ = _state(net, 4, seed + 7)
        asum, ratios, ratio3, lay = _args(net, cnt)
        wt = np.zeros(64)
        for x in np.flatnonzero(net.kind == KIND_PYP):
            for k in range(K):
                if cnt["n"][net.off[x] + k] + cnt["tc"][net.off[x] + k] == 0:
                    continue
                for e in range(net.par_ptr[x], net.par_ptr[x + 1]):
                    lo, hi = edge_weights(x, k, e, wt, net.kind, net.dim, net.off, net.alpha, asum, net.a_of,
                                          net.b_of, net.par_node, net.par_gamma, net.gamma_sum, net.a_values,
                                          net.b_values, *ratios, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                                          cnt["TP"], s, cnt["Se"], net.eoff)
                    cur = s[net.eoff[e] + k]
                    assert lo <= cur and (cur <= hi or hi < lo)
                    if hi <= lo:
                        continue
                    ref = []
                    for v in range(lo - 1, hi + 2):
                        s2 = s.copy()
                        s2[net.eoff[e] + k] = v
                        ref.append(reference_log_joint(net, z, s2) if v >= 0 else -np.inf)
                    ref = np.exp(np.array(ref) - max(ref))
                    assert ref[0] == 0.0 and ref[-1] == 0.0
                    np.testing.assert_allclose(wt[:hi - lo + 1] / wt[:hi - lo + 1].sum(), ref[1:-1] / ref.sum(),
                                               rtol=1e-9)
                    checked += 1
    assert checked > 20


def test_the_sweep_keeps_its_counts_and_the_tables_legal():
    """20 CMGS cycles of adatm.json's shape (a = 0.3): the kernels' counts equal a recount of (z, s), the topic-word
    table the recount of z, 0 < t <= c wherever c > 0 (t = 0 elsewhere); some tables go to each kind of parent."""
    net = _net(0.3)
    z, s, cnt, nwk, nk = _state(net, 20, 5)
    again = rebuild_counts(net, z, s, word_side=False)
    for key in ("n", "tc", "tp", "Nn", "TC", "TP", "Se"):
        assert np.array_equal(cnt[key], again[key]), key
    want = np.zeros((V, K), np.int64)
    np.add.at(want, (net.words, z), 1)
    assert np.array_equal(nwk, want) and np.array_equal(nk, want.sum(axis=0))
    pyp = np.repeat(net.kind == KIND_PYP, np.diff(net.off))
    c = (cnt["n"] + cnt["tc"])[pyp]
    t = cnt["tp"][pyp]
    assert np.all(t <= c) and np.all((t > 0) == (c > 0))
    names = [net.spec.order[net.family[p]] for p in net.par_node]
    by = {nm: sum(int(cnt["Se"][e]) for e in range(len(names)) if names[e] == nm) for nm in set(names)}
    assert by["seg"] > 0 and by["doc"] > 0, by


@pytest.mark.parametrize("a", [0.0, 0.3])
def test_kept_rows_change_nothing(a):
    """From the same state and seeds, 6 cycles with the rows kept across tokens (``keep=True``, the sweep's
    default) and recomputed at every token make the same z and s; the kept run recomputes fewer rows."""
    from inference.pdpnet.cmgs_dag import cmgs_dag_sweep
    net = _net(a)
    runs = []
    for keep in (True, False):
        z, s, cnt, nwk, nk = _state(net, 1, 3)
        lay = cmgs_run.dag_layout(net, np.cumsum([0] + [sum(len(g) for g in d) for d in DOCS]))
        ratio3, cratio3 = cmgs_run.stirling_ratios(net.a_values, [False] * len(net.a_values), lay["cmax"])
        rows = 0
        for it in range(6):
            rows += cmgs_dag_sweep(40 + it, net.words, z, net.topic_inst, net.kind, net.dim, net.off, net.alpha,
                                   lay["asum"], net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
                                   net.gamma_sum, net.a_values, net.b_values, ratio3, cratio3, lay["anc_ptr"],
                                   lay["anc"], lay["root_of"], cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                                   cnt["TP"], s, cnt["Se"], net.eoff, lay["pass_end"], lay["pass_lo"],
                                   lay["pass_hi"], nwk, nk, BETA, np.zeros((1, 1)), False, keep)
        runs.append((z, s, rows))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])
    assert (runs[0][2] < runs[1][2]) and (lay["root_of"][net.topic_inst] >= 0).all(), (runs[0][2], runs[1][2])
