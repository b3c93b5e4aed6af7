"""A shared Pitman-Yor vector under the multiplicity samplers (issue 28; :mod:`inference.pdpnet.cmgs_owned`): the
document vectors in multiplicity form, the shared vector's table indicators owned by partitions. Under ``exact``
the chain's frequencies of every (z, s) match the enumerated joint (E12) with one partition, and a wrong removal is
rejected; under cmgs and exact the counts stay the recount, the own tables the global ones (one partition) and
0 < t <= c; shapes the hybrid does not run are refused in one line."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inference.errors import UsageError
from inference.pdpnet.cmgs_owned import RIGHT, WRONG_REMOVAL, run_hybrid
from inference.pdpnet.cmgs_run import run_cmgs, stirling_ratios
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.sweep import ratio_tables
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_exact import TINY_HDP
from tests.kernels.test_pdpnet_owned import HDP_PYP
from tests.kernels.test_pdpnet_sampler import _chi_square


def _tables(avals):
    """The shared vector's ratio tables covering ``mx`` (what the engine's OwnedTables keeps)."""
    stack = StirlingStack(np.asarray(avals, np.float64))

    def get(mx):
        stack.ensure(int(mx[0]) + 4, int(mx[1]) + 4)
        return (*ratio_tables(stack.L3), open_exp_table(stack.L3))
    return get


def _start(raw, docs, V, K, sampler, shared_name):
    """The compiled network and CMGS's initial state (one table per occupied cell), the own tables = the counts."""
    lay = CorpusLayout.of(docs, V)
    net = compile_network(parse_network(dict(raw, sampler=sampler)), lay, K, word_side=False)
    z = np.random.default_rng(0).integers(0, K, len(lay.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    run_cmgs(net, lay.seg_ptr[lay.doc_ptr], z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values,
             nwk, nk, 0.6, None, 0, True)
    cnt = rebuild_counts(net, z, s, False)
    shared = (net.kind == KIND_PYP) & (net.family == list(net.spec.order).index(shared_name))
    cnt["own"] = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    return lay, net, z, s, cnt, nwk, nk


def _histogram(docs, sweeps, wrong):
    """Every legal (z, s) of TINY_HDP (document DPs over a shared Pitman-Yor vector over a uniform root) with its
    joint, and the exact hybrid's visits (every 2nd cycle)."""
    V = K = 2
    lay, net, z, s, cnt, nwk, nk = _start(TINY_HDP, docs, V, K, "exact", "mid")
    states = enumerate_states(compile_network(parse_network(dict(TINY_HDP, sampler="exact")), lay, K))
    get = _tables(net.a_values)
    seen = np.zeros((sweeps // 2, len(z) + len(s)), np.int64)
    for it in range(sweeps):
        run_hybrid(net, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.6, None, 5 + it, get, wrong)
        if it % 2 == 0:
            seen[it // 2] = np.concatenate([z, s])
    index = {(zz, sv): r for r, (zz, sv, _) in enumerate(states)}
    rows, counts = np.unique(seen, axis=0, return_counts=True)
    obs = np.zeros(len(states))
    for row, c in zip(rows, counts):
        key = (tuple(int(x) for x in row[:len(z)]), tuple(int(x) for x in row[len(z):]))
        assert key in index, f"the chain visited a state the enumeration calls illegal: {key}"
        obs[index[key]] = c
    return states, obs


def test_exact_hybrid_samples_the_enumerated_joint():
    """Two documents of three tokens (1,602 legal (z, s)), 20,000 cycles, every 2nd kept: chi-square p > 1e-3
    against the normalised (E12); the same run with the documents' removal by t/c (the indicators' probability, wrong
    at a multiplicity cell) is rejected with p < 1e-6."""
    docs = [[[0, 1, 0]], [[1, 0, 1]]]
    states, obs = _histogram(docs, 20000, RIGHT)
    tv, pval = _chi_square(states, obs)
    assert pval > 1e-3, (len(states), tv, pval)
    states, obs = _histogram(docs, 20000, WRONG_REMOVAL)
    assert _chi_square(states, obs)[1] < 1e-6


def test_exact_hybrid_on_two_token_documents_is_within_tv():
    """TINY_HDP's two documents of two tokens (98 legal (z, s)), 40,000 cycles: chi-square p > 1e-3 and total
    variation < 0.05 (as the exact sampler's test); the table count's redraw is taken after a refused removal too
    (skipping it there biased the chain: p 5e-41 on this run)."""
    states, obs = _histogram([[[0, 1]], [[1, 0]]], 40000, RIGHT)
    tv, pval = _chi_square(states, obs)
    assert tv < 0.05 and pval > 1e-3, (tv, pval)


@pytest.mark.parametrize("sampler", ["cmgs", "exact"])
def test_counts_stay_the_recount_and_the_own_tables_the_global(sampler):
    """hdp-pyp's shape (documents DP over a corpus PYP over a Dirichlet root), 12 documents, K = 4, 10 cycles: the
    counts equal a recount of (z, s), the own (c, t) of the shared cells equal the global (one partition),
    0 < t <= c wherever a Pitman-Yor cell has customers, and the topics move."""
    rng = np.random.default_rng(3)
    docs = [[list(rng.integers(0, 9, rng.integers(2, 12)))] for _ in range(12)]
    lay, net, z, s, cnt, nwk, nk = _start(HDP_PYP, docs, 9, 4, sampler, "corpus")
    z0 = z.copy()
    get = _tables(net.a_values)
    shared = cnt["own"][0]
    cells = np.concatenate([np.arange(net.off[x], net.off[x + 1]) for x in np.flatnonzero(shared)])
    for it in range(10):
        run_hybrid(net, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.1, None, 40 + it, get)
        recount = rebuild_counts(net, z, s, False)
        for key in ("n", "tc", "tp", "Nn", "TC", "TP", "Se"):
            np.testing.assert_array_equal(cnt[key], recount[key], err_msg=key)
        np.testing.assert_array_equal(cnt["own"][1][cells], cnt["tc"][cells])
        np.testing.assert_array_equal(cnt["own"][2][cells], cnt["tp"][cells])
        pyp = np.concatenate([np.arange(net.off[x], net.off[x + 1]) for x in np.flatnonzero(net.kind == KIND_PYP)])
        c, t = cnt["n"][pyp] + cnt["tc"][pyp], cnt["tp"][pyp]
        assert np.all(t <= c) and np.all((c == 0) | (t > 0))
    assert (z != z0).any() and (cnt["tp"][cells] < cnt["tc"][cells]).any()


def test_other_shapes_are_refused():
    """A chain of document-level vectors over the shared one (a segment PYP below the document's) is refused in
    one line naming the node, by the engine's spec check and by the kernel's."""
    from drivers.models.pdp_network.shared_pyp import check

    chain = dict(HDP_PYP, nodes=dict(HDP_PYP["nodes"], seg={
        "index": ["segment"], "over": "topic", "pyp": {"a": 0.2, "b": 1.0},
        "parents": [{"node": "theta", "index": ["document"]}]}), topic={"node": "seg", "index": ["segment"]})
    spec = parse_network(dict(chain, sampler="cmgs"))
    with pytest.raises(UsageError, match="node 'corpus'.*hdp-pyp-lda's shape"):
        check(spec, ["base", "corpus"], None)
    check(parse_network(dict(HDP_PYP, sampler="cmgs")), ["base", "corpus"], None)
    with pytest.raises(UsageError, match="node 'seg'"):
        run_hybrid(*_refused_args(chain))


def _refused_args(raw):
    lay, net, z, s, cnt, nwk, nk = _start(raw, [[[0, 1], [1]]], 2, 2, "cmgs", "corpus")
    return net, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.6, None, 0, _tables(net.a_values)


def test_cmgs_topic_draw_is_the_hybrid_joints_ratios():
    """The last token of a state whose cell keeps a table after the decrement (no removal, so no random removal):
    under cmgs its new topic's frequencies over 20,000 seeds equal, within 0.012, p(k) ∝ H's ratio after/before
    summed over cmgs's completions (join x_0's tables when it has some, t unchanged; else open one there, its
    customer joining x_s (H: the joint (6.3) with the topic-word factor over binom(c, t) at x_s) or opening one);
    the same ratios without the binomials (x_s in multiplicity form) are further than 0.03 from them."""
    import copy

    from inference.pdpnet.cmgs_owned import hybrid_sweep
    from inference.pdpnet.kernels import ancestor_lists
    from tests.kernels.test_pdpnet_cmgs import _log_joint

    V, K, beta = 5, 4, 0.5
    docs = [[[0, 1, 2]], [[3, 4, 3]], [[1, 1, 0]], [[2, 2, 4]], [[0, 3, 1, 2]], [[0, 0, 0]]]
    lay = CorpusLayout.of(docs, V)
    net = compile_network(parse_network(dict(HDP_PYP, sampler="cmgs")), lay, K, word_side=False)
    z = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 3, 2, 1, 1, 2, 3, 1, 0, 0, 0], np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    run_cmgs(net, lay.seg_ptr[lay.doc_ptr], z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values,
             nwk, nk, beta, None, 0, True)
    avals, bvals = np.asarray(net.a_values, np.float64), np.asarray(net.b_values, np.float64)
    shared = (net.kind == KIND_PYP) & (net.family == list(net.spec.order).index("corpus"))
    xs = int(np.flatnonzero(shared)[0])
    es = net.eoff[net.par_ptr[xs]]
    s[es + 1:es + 4] += 1                                   # two tables at x_s's cells of topics 1-3: 1 < t < c
    i = len(z) - 1
    x0 = int(net.topic_inst[i])
    e0 = net.eoff[net.par_ptr[x0]]
    cnt = rebuild_counts(net, z, s, False)
    assert cnt["tp"][net.off[x0] + z[i]] < cnt["n"][net.off[x0] + z[i]]       # (the token keeps its table)

    def log_h(zz, ss, binomials):
        c = rebuild_counts(net, zz, ss, False)
        m = np.zeros((V, K), np.int64)
        np.add.at(m, (net.words, zz), 1)
        return _log_joint(net, c, m, avals, bvals, beta) - binomials * sum(
            math.log(math.comb(int(c["tc"][o]), int(c["tp"][o]))) for o in range(net.off[xs], net.off[xs + 1]))

    want = np.zeros((2, K))
    for binomials in (0, 1):
        for k in range(K):
            zz = z.copy()
            zz[i] = k
            if cnt["tp"][net.off[x0] + k] > 0:
                want[binomials, k] = math.exp(log_h(zz, s, binomials))
                continue
            for u in (0, 1):
                ss = s.copy()
                ss[e0 + k] += 1
                ss[es + k] += u
                want[binomials, k] += math.exp(log_h(zz, ss, binomials))
    want /= want.sum(axis=1, keepdims=True)
    anc_ptr, anc = ancestor_lists(net.par_ptr, net.par_node)
    log3, ratio3, cratio3 = stirling_ratios(avals, [False] * len(avals), 4, logs=True)
    RJ, RO, EO = _tables(avals)(np.array([40, 40]))
    got = np.zeros(K)
    for rep in range(20000):
        zc, sc, c = z.copy(), s.copy(), copy.deepcopy(cnt)
        nw, nkk = nwk.copy(), nk.copy()
        hybrid_sweep(i, True, rep, False, RIGHT, net.words, zc, net.topic_inst, anc_ptr, anc, net.kind, net.dim,
                     net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
                     avals, bvals, RJ, RO, EO, log3, ratio3, cratio3, c["n"], c["tc"], c["tp"], c["Nn"], c["TC"],
                     c["TP"], sc, c["Se"], net.eoff, c["mx"], 4, nw, nkk, beta, np.zeros((1, 1)), False, shared,
                     c["tc"].copy(), c["tp"].copy())
        got[zc[i]] += 1
    got /= got.sum()
    assert np.abs(got - want[1]).max() < 0.012, (got, want)
    assert np.abs(want[0] - want[1]).max() > 0.03, want
