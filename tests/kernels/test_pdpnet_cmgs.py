"""The networks' CMGS mode (issue 28, ``inference/pdpnet/cmgs.py``): draw for draw the built-in SeqLDA CMGS kernel
(thesis Alg. 5) on the same state and random stream; its topic conditionals (6.4)-(6.6) and table conditional
(6.7) against ratios of the multiplicity joint (6.3) computed directly; the one-line refusals."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numba
import numpy as np
import pytest

from drivers.models.seqlda.kernels import seqlda_init, seqlda_sweep
from inference.errors import UsageError
from inference.gibbs.pdp import stirling_table
from inference.pdpnet.cmgs import _empty_levels, _factor, _open_factor, table_weights
from inference.pdpnet.cmgs_run import layout_arrays, run_cmgs, stirling_ratios
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import rebuild_counts
from inference.pdpnet.spec import parse_network

SHIPPED = Path(__file__).resolve().parents[2] / "sample_data" / "networks"


def _spec(name, sampler="cmgs", **params):
    raw = json.loads((SHIPPED / f"{name}.json").read_text())
    raw["sampler"] = sampler
    for k, v in params.items():
        raw["parameters"][k]["value"] = v
    return raw


def _layout(seed, D=5, V=7, empty_middle=True):
    rng = np.random.default_rng(seed)
    docs = []
    for d in range(D):
        segs = [list(rng.integers(0, V, rng.integers(1, 6))) for _ in range(rng.integers(1, 5))]
        if empty_middle and d == 1 and len(segs) >= 3:
            segs[1] = []                       # an empty segment inside the chain (a pass-through vector)
        docs.append(segs)
    return CorpusLayout.of(docs, V)


def _network_state(net, lay, z, t):
    """s of the compiled SeqLDA network from the built-in's per-segment table counts t (one edge per segment)."""
    s = np.zeros(int(net.eoff[-1]), np.int64)
    seg = net.spec.order.index("seg")
    for x in np.flatnonzero(net.family == seg):
        e = net.par_ptr[x]
        s[net.eoff[e]:net.eoff[e + 1]] = t[net.key[x]]
    return s


@pytest.mark.parametrize("seed,K", [(0, 3), (1, 3), (2, 3), (3, 6)])
def test_seqlda_cmgs_is_the_built_in_kernel_draw_for_draw(seed, K):
    """seqlda.json under cmgs and ``seqlda_sweep`` (CMGS, table_sweep on, b_i = b for every document) from the
    same (z, t) and seed: the same z, t and topic-word counts after every one of 8 sweeps."""
    V, b, a = 7, 3.0, 0.0
    lay = _layout(seed, D=8)
    net = compile_network(parse_network(_spec("seqlda", b_seg=b)), lay, K, word_side=False)
    D = len(lay.doc_ptr) - 1
    nwk1, nk1 = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    z1, n1, t1 = seqlda_init(lay.doc_ptr, lay.seg_ptr, lay.words, K, nwk1, nk1, seed)
    alpha = np.full(K, 0.1)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    mcap = int(np.diff(doc_tok).max())
    tab = stirling_table(a).ensure(int(np.diff(lay.seg_ptr).max()) + mcap + 2, mcap)
    z2 = z1.astype(np.int64)
    s2 = _network_state(net, lay, z2, t1)
    nwk2, nk2 = nwk1.copy(), nk1.copy()
    moved = 0
    for it in range(8):
        seqlda_sweep(lay.doc_ptr, lay.seg_ptr, lay.words, z1, n1, t1, np.full(D, b), nwk1, nk1, alpha, 0.01, a,
                     tab.log, tab.ratio, tab.cratio, mcap, np.zeros((1, 1)), False, True, False, 100 + it)
        cnt = rebuild_counts(net, z2, s2, word_side=False)
        before = z2.copy()
        run_cmgs(net, doc_tok, z2, s2, cnt, np.array([a]), np.array([b]), nwk2, nk2, 0.01, None, 100 + it, False)
        moved += int(np.sum(before != z2))
        assert np.array_equal(z1, z2), it
        assert np.array_equal(s2, _network_state(net, lay, z2, t1)), it
        assert np.array_equal(nwk1, nwk2) and np.array_equal(nk1, nk2), it
    assert moved > 0 and t1.max() >= 2          # the chain moved and some cell holds several tables


@pytest.mark.parametrize("name,a", [("seqlda", 0.0), ("seqlda", 0.3), ("stm", 0.2)])
def test_kept_factors_equal_a_recomputation(name, a):
    """The sweep's kept m_k, P and topic factors equal their recomputation at every token (relative 1e-12) over
    10 sweeps of 20 documents with K = 8 (topics often empty up the chain: tables opened above x_0). Fails when a
    table opened above x_0 does not refresh them (the code before this test)."""
    K, V = 8, 9
    raw = _spec(name, b_seg=2.0)
    raw["parameters"]["a_seg"] = {"kind": "a", "value": a, "sample": False}
    raw["nodes"]["seg"]["pyp"]["a"] = "a_seg"
    lay = _layout(11, D=20, V=V)
    net = compile_network(parse_network(raw), lay, K, word_side=False)
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
    assert check[0] < 1e-12, check[0]


@pytest.mark.parametrize("seed,K", [(4, 3), (5, 6)])
def test_stm_cmgs_is_the_built_in_kernel_draw_for_draw(seed, K):
    """stm.json under cmgs and the built-in ``stm_sweep`` (CMGS, thesis Alg. 4) from the same (z, t) and seed: the
    same z, t and topic-word counts after every one of 8 sweeps (segments are leaves: no pass-through cell)."""
    from drivers.models.stm import stm_init, stm_sweep

    V, b, a = 7, 3.0, 0.0
    lay = _layout(seed, D=8)
    net = compile_network(parse_network(_spec("stm", b_seg=b)), lay, K, word_side=False)
    nwk1, nk1 = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    mcap = int(np.diff(lay.seg_ptr).max())
    z1, n1, t1 = stm_init(lay.doc_ptr, lay.seg_ptr, lay.words, K, mcap, nwk1, nk1, seed)
    tab = stirling_table(a).ensure(mcap + 2, mcap)
    z2 = z1.astype(np.int64)
    s2 = _network_state(net, lay, z2, t1)
    nwk2, nk2 = nwk1.copy(), nk1.copy()
    moved = 0
    for it in range(8):
        stm_sweep(lay.doc_ptr, lay.seg_ptr, lay.words, z1, n1, t1, nwk1, nk1, np.full(K, 0.1), 0.01, a, b, tab.log,
                  tab.ratio, tab.cratio, mcap, np.zeros((1, 1)), False, False, 200 + it)
        before = z2.copy()
        run_cmgs(net, lay.seg_ptr[lay.doc_ptr], z2, s2, rebuild_counts(net, z2, s2, word_side=False),
                 np.array([a]), np.array([b]), nwk2, nk2, 0.01, None, 200 + it, False)
        moved += int(np.sum(before != z2))
        assert np.array_equal(z1, z2), it
        assert np.array_equal(s2, _network_state(net, lay, z2, t1)), it
        assert np.array_equal(nwk1, nwk2) and np.array_equal(nk1, nk2), it
    assert moved > 0 and t1.max() >= 2


# ---- conditionals against the joint (6.3)

def _log_joint(net, cnt, nwk, avals, bvals, beta):
    """log of (6.3) for the network in multiplicities: Pitman-Yor vectors (b|a)_T / (b)_C prod_k S^c_t, roots
    Beta(alpha + c) / Beta(alpha), the topic-word Dirichlet-multinomials (beta)."""
    out = 0.0
    n, tc, tp = cnt["n"], cnt["tc"], cnt["tp"]
    for x in range(net.num_nodes):
        o0, o1 = net.off[x], net.off[x + 1]
        c = n[o0:o1] + tc[o0:o1]
        if net.kind[x] == KIND_DIRICHLET:
            al = net.alpha[x]
            out += sum(math.lgamma(al + v) - math.lgamma(al) for v in c) - (
                math.lgamma(al * len(c) + c.sum()) - math.lgamma(al * len(c)))
        elif net.kind[x] == KIND_PYP:
            a, b = avals[net.a_of[x]], bvals[net.b_of[x]]
            T, C = int(tp[o0:o1].sum()), int(c.sum())
            out += sum(math.log(b + a * i) for i in range(T)) - sum(math.log(b + i) for i in range(C))
            L = stirling_table(a).ensure(C + 2, C + 2).log
            out += sum(L[ci, ti] for ci, ti in zip(c, tp[o0:o1]) if ci > 0)
    V, K = nwk.shape
    for k in range(K):
        out += sum(math.lgamma(beta + v) - math.lgamma(beta) for v in nwk[:, k]) - (
            math.lgamma(V * beta + nwk[:, k].sum()) - math.lgamma(V * beta))
    return out


@numba.njit
def _weights(jt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals, ratio3, n, tc, tp, Nn,
             TC, TP, maxdepth):
    """The sweep's topic factors from scratch for a token of vector jt (counts without it): F_k times O(x_0)
    when k opens tables, and m_k (the word factor is the test's)."""
    K = dim[jt]
    lev = np.empty(maxdepth + 1, np.int64)
    L = 0
    x = jt
    while True:
        lev[L] = x
        L += 1
        if kind[x] != 1:
            break
        x = par_node[par_ptr[x]]
    m = np.zeros(K, np.int64)
    for k in range(K):
        m[k] = _empty_levels(k, lev, L, kind, off, tp)
    P = np.ones(maxdepth + 1)
    q = 1.0
    for lv in range(1, L):
        q *= _open_factor(lev[lv], kind, asum, a_of, b_of, par_ptr, par_node, avals, bvals, Nn, TC, TP)
        P[lv + 1] = q
    out = np.empty(K)
    for k in range(K):
        out[k] = _factor(k, m, P, lev, kind, dim, off, alpha, a_of, ratio3, n, tc, tp)
        if m[k] > 0:
            out[k] *= _open_factor(jt, kind, asum, a_of, b_of, par_ptr, par_node, avals, bvals, Nn, TC, TP)
    return out, m, lev


@numba.njit
def _table_weights(x, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals, ratio3,
                   cratio3, n, tc, tp, Nn, TC, TP):
    return table_weights(x, k, wt, kind, dim, off, alpha, asum, a_of, b_of, par_ptr, par_node, avals, bvals,
                         ratio3, cratio3, n, tc, tp, Nn, TC, TP)


def _set_table(net, cnt, x, k, d):
    o, p = net.off[x] + k, net.par_node[net.par_ptr[x]]
    cnt["tp"][o] += d
    cnt["TP"][x] += d
    cnt["tc"][net.off[p] + k] += d
    cnt["TC"][p] += d


@pytest.mark.parametrize("name,a,b", [("seqlda", 0.0, 2.0), ("seqlda", 0.4, 1.5), ("stm", 0.3, 2.0)])
def test_conditionals_are_ratios_of_the_joint(name, a, b):
    """Every token of 4 states (the chain run a few sweeps): the kernels' topic weights (6.4)-(6.6) times the
    word factor equal p(z_i = k, tables opened at the empty levels | rest) from (6.3), and the (6.7) weights of
    t at the token's vector p(t = v | rest), normalised (rtol 1e-9)."""
    K, V, beta = 3, 7, 0.01
    raw = _spec(name, b_seg=b)
    raw["parameters"]["a_seg"] = {"kind": "a", "value": a, "sample": False}
    raw["nodes"]["seg"]["pyp"]["a"] = "a_seg"
    lay = _layout(7, D=3, empty_middle=False)
    net = compile_network(parse_network(raw), lay, K, word_side=False)
    lay_arr = layout_arrays(net, lay.seg_ptr[lay.doc_ptr])
    avals, bvals = net.a_values, net.b_values
    ratio3, cratio3 = stirling_ratios(avals, [False], lay_arr["cmax"] + 2)
    z = np.random.default_rng(1).integers(0, K, len(lay.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    run_cmgs(net, lay.seg_ptr[lay.doc_ptr], z, s, rebuild_counts(net, z, s, False), avals, bvals, nwk, nk, beta,
             None, 0, True)
    checked = tables = 0
    for state in range(4):
        cnt = rebuild_counts(net, z, s, False)
        run_cmgs(net, lay.seg_ptr[lay.doc_ptr], z, s, cnt, avals, bvals, nwk, nk, beta, None, 9 + state, False)
        for i in range(len(z)):
            cnt = rebuild_counts(net, z, s, False)
            w, k0, jt = lay.words[i], z[i], net.topic_inst[i]
            wk = nwk.copy()
            # the forced removal
            cnt["n"][net.off[jt] + k0] -= 1
            cnt["Nn"][jt] -= 1
            wk[w, k0] -= 1
            x = jt
            while net.kind[x] == KIND_PYP and cnt["tp"][net.off[x] + k0] > cnt["n"][net.off[x] + k0] + \
                    cnt["tc"][net.off[x] + k0]:
                _set_table(net, cnt, x, k0, -1)
                x = net.par_node[net.par_ptr[x]]
            f, m, lev = _weights(jt, net.kind, net.dim, net.off, net.alpha, lay_arr["asum"], net.a_of, net.b_of,
                                 net.par_ptr, net.par_node, avals, bvals, ratio3, cnt["n"], cnt["tc"], cnt["tp"],
                                 cnt["Nn"], cnt["TC"], cnt["TP"], lay_arr["maxdepth"])
            got = f * (wk[w] + beta) / (wk.sum(axis=0) + V * beta)
            want = []
            for k in range(K):
                c2, w2 = copy.deepcopy(cnt), wk.copy()
                for lv in range(m[k]):
                    _set_table(net, c2, lev[lv], k, 1)
                c2["n"][net.off[jt] + k] += 1
                c2["Nn"][jt] += 1
                w2[w, k] += 1
                want.append(_log_joint(net, c2, w2, avals, bvals, beta))
            want = np.exp(np.array(want) - max(want))
            np.testing.assert_allclose(got / got.sum(), want / want.sum(), rtol=1e-9)
            checked += 1
            # (6.7) at the token's vector, its topic as drawn
            c2, w2 = copy.deepcopy(cnt), wk.copy()
            k = k0
            for lv in range(m[k]):
                _set_table(net, c2, lev[lv], k, 1)
            c2["n"][net.off[jt] + k] += 1
            c2["Nn"][jt] += 1
            w2[w, k] += 1
            wt = np.zeros(200)
            lo, hi, _ = _table_weights(jt, k, wt, net.kind, net.dim, net.off, net.alpha, lay_arr["asum"], net.a_of,
                                       net.b_of, net.par_ptr, net.par_node, avals, bvals, ratio3, cratio3, c2["n"],
                                       c2["tc"], c2["tp"], c2["Nn"], c2["TC"], c2["TP"])
            if hi <= lo:
                continue
            t0 = c2["tp"][net.off[jt] + k]
            jl = []
            for v in range(lo, hi + 1):
                c3 = copy.deepcopy(c2)
                _set_table(net, c3, jt, k, v - t0)
                jl.append(_log_joint(net, c3, w2, avals, bvals, beta))
            jl = np.exp(np.array(jl) - max(jl))
            np.testing.assert_allclose(wt[lo:hi + 1] / wt[lo:hi + 1].sum(), jl / jl.sum(), rtol=1e-9)
            tables += 1
    assert checked == 4 * len(z) and tables > 10


def test_cmgs_refusals_name_the_node():
    """A Pitman-Yor word side other than pyp-lda's (pyp-lda-2's chain) is refused under cmgs in one line naming
    the node; an unknown sampler too; a vector
    with two parents (adatm.json) is not since session 22 (:mod:`inference.pdpnet.cmgs_dag`); the compiled shipped
    seqlda.json says it runs cmgs."""
    parse_network(_spec("adatm"))
    with pytest.raises(UsageError, match="node 'nu': sampler 'cmgs' runs a Pitman-Yor word side of pyp-lda's"):
        parse_network(dict(json.loads((SHIPPED / "pyp-lda-2.json").read_text()), sampler="cmgs"))
    with pytest.raises(UsageError, match="sampler must be one of indicators, cmgs"):
        parse_network(_spec("stm", sampler="gibbs"))
    parse_network(_spec("adatm", sampler="indicators"))
    lay = _layout(0, D=2)
    text = compile_network(parse_network(json.loads((SHIPPED / "seqlda.json").read_text())), lay, 2).describe()
    assert text.endswith("word ~ phi[topic]; sampler cmgs (not exactly invariant)")
