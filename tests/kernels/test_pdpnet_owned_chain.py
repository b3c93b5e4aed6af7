"""A shared Pitman-Yor topic vector beside a chain of Pitman-Yor word vectors (issue 28, hca's full structure,
``hca-2.json``; :mod:`inference.pdpnet.owned_chain`): with one partition (own = global) the sweep is the in-process
network sampler's, draw for draw, both sides' state after every cycle (depths 2 and 3, Dirichlet and uniform
roots; and beside the [topic, column:NAME] side over phi0[topic] over the uniform, a Dirichlet root or a
corpus-level PYP); over two "partitions" (the other's counts of the corpus vector fixed between synchronisations)
every own indicator stays within its own customers on both sides, and through the engine's hooks beside the
column side."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from drivers.models.pdp_network import words_chain, words_pyp
from inference.pdpnet import kernels
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.owned_chain import owned_chain_sweep
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.sweep import ratio_tables
from tests.kernels import test_pdpnet_word_column as column
from tests.kernels.test_pdpnet_word_chain import K, V, _word_state, chain_spec

#: hdp-pyp-lda's topic side: documents DP over a corpus-level PYP over a Dirichlet root
TOPIC_SIDE = {"tbase": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
              "corpus": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                         "parents": [{"node": "tbase", "index": ["corpus"]}]},
              "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                        "parents": [{"node": "corpus", "index": ["corpus"]}]}}
NO_BOTTOM = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def hca_spec(depth: int, beta0: float) -> dict:
    spec = chain_spec(depth, beta0)
    return dict(spec, name=f"hca-{depth}", nodes=dict(spec["nodes"], **TOPIC_SIDE))


def owned_cycle(topic, z, s, cnt, own, wargs, pidx, pword, pval, bottom, seed):
    """One cycle of :func:`owned_chain_sweep` (``own``: (shared, own_c, own_t); ``bottom``: the bottom level's
    six arrays and (pb, bb, gb), or None for a chain), the ratio tables grown as the driver's."""
    anc_ptr, anc = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    K_ = wargs[0].shape[1]
    if bottom is None:
        empty = np.zeros((0, K_), np.int64)
        bottom = ((empty, empty, np.zeros((1, K_), np.int64), np.zeros((1, K_), np.int64), empty.copy(),
                   empty.copy()), (-1, -1, 1.0))
    pos, reseed = 0, True
    while pos >= 0:
        stack = StirlingStack(topic.a_values)
        stack.ensure(cnt["mx"][0] + 8, cnt["mx"][1] + 8)
        pos = owned_chain_sweep(
            pos, reseed, seed, pidx, pword, pval, z, topic.topic_inst, anc_ptr, anc, topic.kind, topic.dim, topic.off,
            topic.alpha, topic.a_of, topic.b_of, topic.par_ptr, topic.par_node, topic.par_gamma, topic.gamma_sum,
            topic.a_values, topic.b_values, *ratio_tables(stack.L3), open_exp_table(stack.L3), cnt["n"], cnt["tc"],
            cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"], topic.eoff, cnt["mx"], *own, *bottom[0],
            *wargs[:12], *bottom[1], *wargs[12:])
        reseed = False


def _chain_state(docs, depth, beta0):
    """(the in-process sampler, the topic network, z, s, counts, own, local arrays, kernel arguments)."""
    spec = parse_network(hca_spec(depth, beta0))
    net = compile_network(spec, CorpusLayout.of(docs, V), K)
    sm = NetworkSampler(net, seed=2)
    topic = compile_network(spec, CorpusLayout.of(docs, V), K, word_side=False)
    z = sm.z.copy()
    s = sm.s[:topic.eoff[-1]].copy()                # (the topic network's nodes and edges come first)
    cnt = rebuild_counts(topic, z, s, word_side=False)
    shared = (topic.kind == KIND_PYP) & (topic.family == list(spec.order).index("corpus"))
    own = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    n, t, cup, tup = (x.astype(np.int64) for x in _word_state(net, sm, depth))
    loc = words_chain.local_arrays(np.arange(V), topic.words, n.copy(), t.copy(), tup.copy(), n, t, tup,
                                 dict(nk=n.sum(axis=0), **words_chain.derived({"nwk": n, words_pyp.TABLE: t,
                                                                            words_chain.TABLE: tup})))
    wargs = words_chain.kernel_args(loc, words_pyp.word_side(spec), topic.a_names, topic.b_names, V)
    return sm, net, topic, z, s, cnt, own, loc, wargs


@pytest.mark.parametrize("depth,beta0", [(2, 0.3), (2, 0.0), (3, 0.0)], ids=["2-dirichlet", "2-uniform", "3-uniform"])
def test_one_partition_is_the_network_sampler_draw_for_draw(depth, beta0):
    rng = np.random.default_rng(5)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(8)]
    sm, net, topic, z, s, cnt, own, loc, wargs = _chain_state(docs, depth, beta0)
    J = topic.off[-1]
    moved = 0
    for _ in range(4):
        before = z.copy()
        cnt["mx"][:] = max(cnt["mx"][0], loc["nloc"].max(), loc["cup"].max()), max(cnt["mx"][1], loc["tloc"].max(),
                                                                                 loc["tup"].max())
        owned_cycle(topic, z, s, cnt, own, wargs, topic.words, *NO_BOTTOM, None, sm._seed(sm.iteration + 1, 1))
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for name in ("n", "tc", "tp"):
            np.testing.assert_array_equal(cnt[name], getattr(sm, name)[:J])
        np.testing.assert_array_equal(s, sm.s[:len(s)])
        np.testing.assert_array_equal(own[1][own[0].repeat(np.diff(topic.off))], cnt["tc"][own[0].repeat(
            np.diff(topic.off))])
        n2, t2, cup2, tup2 = _word_state(net, sm, depth)
        for got, want in ((loc["nloc"], n2), (loc["tloc"], t2), (loc["cup"], cup2), (loc["tup"], tup2),
                          (loc["own_t"], t2), (loc["own_c"], cup2), (loc["own_up"], tup2)):
            np.testing.assert_array_equal(got, want)
    cells = own[0].repeat(np.diff(topic.off))
    assert moved > 10 and (tup2 < cup2).any() and (t2 < n2).any()
    assert (cnt["tp"][cells] < cnt["tc"][cells]).any()          # the shared vector seats several tables at a cell


def test_two_partitions_own_their_indicators_on_both_sides():
    """Two halves of a corpus, each swept with the other's (c, t) of the corpus vector added (fixed; the word
    cells each half's own): every own t within its own customers on both sides, the sums t <= c."""
    rng = np.random.default_rng(7)
    docs = [[list(rng.integers(0, V, rng.integers(2, 9)))] for _ in range(16)]
    parts = [list(_chain_state(docs[p::2], 2, 0.3))[2:] for p in range(2)]
    for it in range(3):
        owns = [(p[4][1].copy(), p[4][2].copy()) for p in parts]
        for me in range(2):
            topic, z, s, cnt, own, loc, wargs = parts[me]
            j = int(np.flatnonzero(own[0])[0])
            cells = slice(topic.off[j], topic.off[j + 1])
            other = parts[1 - me]
            ocells = slice(other[0].off[j], other[0].off[j + 1])
            cnt["tc"][cells] = owns[me][0][cells] + owns[1 - me][0][ocells]
            cnt["tp"][cells] = owns[me][1][cells] + owns[1 - me][1][ocells]
            cnt["TC"][j], cnt["TP"][j] = cnt["tc"][cells].sum(), cnt["tp"][cells].sum()
            cnt["Se"][topic.par_ptr[j]] = cnt["TP"][j]
            cnt["mx"][:] = max(cnt["tc"].max(), loc["nloc"].max(), loc["cup"].max()), max(
                cnt["tp"].max(), loc["tloc"].max(), loc["tup"].max())
            own = (own[0], owns[me][0].copy(), owns[me][1].copy())
            owned_cycle(topic, z, s, cnt, own, wargs, topic.words, *NO_BOTTOM, None, 50 + 10 * it + me)
            assert np.all((0 <= own[2][cells]) & (own[2][cells] <= own[1][cells]))
            assert np.all(cnt["tp"] <= cnt["tc"] + cnt["n"])
            assert np.all((0 <= loc["own_t"]) & (loc["own_t"] <= loc["own_n"]) & (loc["tloc"] <= loc["nloc"]))
            assert np.all((0 <= loc["own_up"]) & (loc["own_up"] <= loc["own_c"]) & (loc["tup"] <= loc["cup"]))
            fresh = rebuild_counts(topic, z, s, word_side=False)
            parts[me] = [topic, z, s, fresh, (own[0], fresh["tc"].copy(), fresh["tp"].copy()), loc, wargs]
    assert all(p[2].sum() > 0 for p in parts)


@pytest.mark.parametrize("root", ["uniform", "dirichlet", "pyp"])
def test_beside_the_column_side_one_partition_is_the_network_sampler_draw_for_draw(root):
    """phi[topic, column:c] over phi0[topic] over ``root`` (:func:`test_pdpnet_word_column.dtm_spec`) beside the
    shared corpus vector: every cycle's z, both sides' counts and the own ones equal the sampler's."""
    rng = np.random.default_rng(5)
    G = column.G
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    gdoc = np.arange(10) % G
    layout = dataclasses.replace(CorpusLayout.of(docs, V), columns={"c": (gdoc, G)})
    raw = column.dtm_spec(root)
    spec = parse_network(dict(raw, nodes=dict(raw["nodes"], **TOPIC_SIDE)))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=2)
    topic = compile_network(spec, layout, K, word_side=False)
    tokdoc = np.repeat(np.arange(10), [len(d[0]) for d in docs])
    L = 1 if root == "pyp" else 0
    z = sm.z.copy()
    s = sm.s[:topic.eoff[-1]].copy()
    cnt = rebuild_counts(topic, z, s, word_side=False)
    shared = (topic.kind == KIND_PYP) & (topic.family == list(spec.order).index("corpus"))
    own = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    bn, bt, BN, BT, nloc, tloc, cup, tup = column._state(net, sm, gdoc, tokdoc, L)
    mine = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    a, b = topic.a_names.index, topic.b_names.index
    pl = np.array([a("phi0.a")] + ([a("nu.a")] if L else []), np.int64)
    bl = np.array([b("phi0.b")] + ([b("nu.b")] if L else []), np.int64)
    gl = np.ones(L + 1)
    wargs = (nloc, tloc, nloc.sum(axis=0), tloc.sum(axis=0), cup, tup, cup.sum(axis=0), tup.sum(axis=0), *mine[2:],
             pl, bl, gl, gl.copy(), 0.4 if root == "dirichlet" else 0.0, V)
    bottom = ((bn, bt, BN, BT, mine[0], mine[1]), (a("phi.a"), b("phi.b"), 1.0))
    pidx = gdoc[tokdoc] * V + topic.words
    cells = shared.repeat(np.diff(topic.off))
    moved = 0
    for _ in range(4):
        before = z.copy()
        cnt["mx"][:] = (max(cnt["mx"][0], bn.max(), nloc.max(), cup.max(initial=0)),
                        max(cnt["mx"][1], bt.max(), tloc.max(), tup.max(initial=0)))
        owned_cycle(topic, z, s, cnt, own, wargs, pidx, np.tile(np.arange(V), G), np.repeat(np.arange(G), V),
                    bottom, sm._seed(sm.iteration + 1, 1))
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for name in ("n", "tc", "tp"):
            np.testing.assert_array_equal(cnt[name], getattr(sm, name)[:topic.off[-1]])
        np.testing.assert_array_equal(own[1][cells], cnt["tc"][cells])
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], column._state(net, sm, gdoc, tokdoc, L)):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(mine, [bn, bt, nloc, tloc, cup, tup]):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(wargs[3], tloc.sum(axis=0))
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any() and (cnt["tp"][cells] < cnt["tc"][cells]).any()


def test_beside_the_column_side_two_partitions_through_the_engine_hooks(tmp_path):
    """``dtm_spec("uniform")`` with hca's topic side (every a and b sampled) through the engine's hooks (no Spark): two
    partitions sweeping private copies of the summed tables for 6 iterations; t <= c at every level of both sides
    (the corpus vector's customers the documents' tables), every partition's own within its own customers, every a
    and b of the driver's global step moves (theta's DP b is the engine's update_hyper step)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivers.models.pdp_network import words_column
    from drivers.models.pdp_network.model import PdpNetwork

    rng = np.random.default_rng(7)
    docs = [(f"d{i:02d}", [list(rng.integers(0, 9, rng.integers(2, 12)))]) for i in range(16)]
    (tmp_path / "docs.parquet").mkdir()
    pq.write_table(pa.table({"doc_id": [d for d, _ in docs], "c": [f"g{i % 3}" for i in range(16)]}),
                   tmp_path / "docs.parquet" / "part-0.parquet")
    spec = column.dtm_spec("uniform")         # (over a corpus PYP: 9 parameters, the engine's limit is 8)
    spec["nodes"].update(json.loads(json.dumps(TOPIC_SIDE)))
    for node in ("phi", "phi0", "corpus"):
        spec["nodes"][node]["pyp"] = {k: {"value": v, "sample": True} for k, v in spec["nodes"][node]["pyp"].items()}
    spec["nodes"]["theta"]["dp"] = {"b": {"value": 1.0, "sample": True}}
    (tmp_path / "hca-dtm.json").write_text(json.dumps(spec))
    model = PdpNetwork(K, 9)
    model._corpus_dir = str(tmp_path)
    hyper = model.initial_hyper(network=str(tmp_path / "hca-dtm.json"))
    start = {k: dict(hyper[k]) for k in ("a_values", "b_values")}

    def check(new, blocks, states):
        bn, bt = new[words_column.CUSTOMERS], new[words_column.TABLES]
        np.testing.assert_array_equal(bn.reshape(4, 9, K).sum(axis=0), new["nwk"])     # G = 3 values + unseen
        assert np.all(bt <= bn) and np.all(new[words_pyp.TABLE] <= bt.reshape(4, 9, K).sum(axis=0))
        c, t = new["network_tc"][1], new["network_tp"][1]      # (rows: tbase, corpus)
        assert np.all(t <= c) and c.sum() >= 16 and np.array_equal(new["network_tc"][0], t)
        for blk, st in zip(blocks, states):
            pairs, pidx, pword, _, _ = words_column.local_pairs(model, blk, hyper["word_pyp"])
            own_bn = words_pyp.own_customers(pidx, st["z"], len(pairs), K)
            assert np.all((0 <= st["word_bt"]) & (st["word_bt"] <= own_bn))
        return (bt < bn).any() and (t < c).any()
    hyper, new = two_partitions(model, hyper, docs, 6, check)
    for kind in ("a_values", "b_values"):
        assert all(hyper[kind][n] != v for n, v in start[kind].items() if n[:6] != "theta."), hyper[kind]
    assert np.isfinite(model.loglik(new, model.derive(new), hyper))


@pytest.mark.parametrize("root", ["dirichlet", "pyp"])
def test_beside_a_level_per_topic_one_partition_is_the_network_sampler_draw_for_draw(root):
    """phi[topic] over phi1[topic] over ``root`` (a chain with a level per topic: the column side with one value,
    :func:`test_pdpnet_word_bigram_psi.topic_chain_spec`) beside the shared corpus vector: every cycle's z, both
    sides' counts and the own ones equal the sampler's."""
    from tests.kernels import test_pdpnet_word_bigram_psi as psi
    V, K = psi.V, psi.K

    rng = np.random.default_rng(7)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    raw = psi.topic_chain_spec(root)
    spec = parse_network(dict(raw, nodes=dict(raw["nodes"], **TOPIC_SIDE)))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=3)
    topic = compile_network(spec, layout, K, word_side=False)
    L = 1 if root == "pyp" else 0
    value = np.zeros(len(topic.words), np.int64)
    z = sm.z.copy()
    s = sm.s[:topic.eoff[-1]].copy()
    cnt = rebuild_counts(topic, z, s, word_side=False)
    shared = (topic.kind == KIND_PYP) & (topic.family == list(spec.order).index("corpus"))
    own = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    bn, bt, BN, BT, nloc, tloc, cup, tup = psi._state(net, sm, value, L, 1)
    mine = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    a, b = topic.a_names.index, topic.b_names.index
    pl = np.array([a("psi.a")] + ([a("nu.a")] if L else []), np.int64)
    bl = np.array([b("psi.b")] + ([b("nu.b")] if L else []), np.int64)
    gl = np.ones(L + 1)
    wargs = (nloc, tloc, nloc.sum(axis=0), tloc.sum(axis=0), cup, tup, cup.sum(axis=0), tup.sum(axis=0), *mine[2:],
             pl, bl, gl, gl.copy(), 0.4 if root == "dirichlet" else 0.0, V)
    bottom = ((bn, bt, BN, BT, mine[0], mine[1]), (a("phi.a"), b("phi.b"), 1.0))
    cells = shared.repeat(np.diff(topic.off))
    moved = 0
    for _ in range(4):
        before = z.copy()
        cnt["mx"][:] = (max(cnt["mx"][0], bn.max(), nloc.max(), cup.max(initial=0)),
                        max(cnt["mx"][1], bt.max(), tloc.max(), tup.max(initial=0)))
        owned_cycle(topic, z, s, cnt, own, wargs, topic.words.astype(np.int64), np.arange(V), np.zeros(V, np.int64),
                    bottom, sm._seed(sm.iteration + 1, 1))
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for name in ("n", "tc", "tp"):
            np.testing.assert_array_equal(cnt[name], getattr(sm, name)[:topic.off[-1]])
        np.testing.assert_array_equal(own[1][cells], cnt["tc"][cells])
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], psi._state(net, sm, value, L, 1)):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(mine, [bn, bt, nloc, tloc, cup, tup]):
            np.testing.assert_array_equal(got, want)
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any() and (cnt["tp"][cells] < cnt["tc"][cells]).any()


def test_beside_a_level_per_topic_two_partitions_through_the_engine_hooks(tmp_path):
    """hca's topic side beside a chain with a level per topic (phi[topic] over phi1[topic] over a Dirichlet root)
    through the engine's hooks (no Spark): two partitions, 5 iterations; the bottom tables' customers are the
    tokens, t <= c at every level of both sides, every partition's own within its own customers."""
    import json

    from drivers.models.pdp_network import words_column
    from drivers.models.pdp_network.model import PdpNetwork
    from tests.kernels import test_pdpnet_word_bigram_psi as psi

    rng = np.random.default_rng(9)
    docs = [(f"d{i:02d}", [list(rng.integers(0, 9, rng.integers(2, 12)))]) for i in range(16)]
    spec = psi.topic_chain_spec("dirichlet")
    spec["nodes"].update(json.loads(json.dumps(TOPIC_SIDE)))
    (tmp_path / "hca-topic-chain.json").write_text(json.dumps(spec))
    model = PdpNetwork(K, 9)
    hyper = model.initial_hyper(network=str(tmp_path / "hca-topic-chain.json"))

    def check(new, blocks, states):
        bn, bt = new[words_column.CUSTOMERS], new[words_column.TABLES]
        np.testing.assert_array_equal(bn.reshape(-1, 9, K).sum(axis=0), new["nwk"])
        assert np.all(bt <= bn) and np.all(new[words_pyp.TABLE] <= bt.reshape(-1, 9, K).sum(axis=0))
        c, t = new["network_tc"][1], new["network_tp"][1]
        assert np.all(t <= c) and c.sum() >= 16 and np.array_equal(new["network_tc"][0], t)
        return (bt < bn).any() and (t < c).any()
    two_partitions(model, hyper, docs, 5, check)


def two_partitions(model, hyper, docs, iterations: int, check) -> tuple:
    """Two partitions (every other document) sweeping private copies of the summed tables through the engine's
    hooks; ``check(summed tables, blocks, states)`` after every iteration (True once tables are below customers
    somewhere), then the driver's global step. Returns the last hyperparameters and summed tables; asserts that z
    moved and the last check held."""
    from inference.gibbs.block import SegmentedBlock
    from inference.gibbs.tables import merge

    blocks = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    states = [model.initial_state(blk, hyper, 5 + p) for p, blk in enumerate(blocks)]

    def summed():
        parts = [model.table_counts(blk, st, np.unique(blk.words, return_inverse=True))
                 for blk, st in zip(blocks, states)]
        return {tb.name: merge(tb, [c[tb.name] for c in parts]) for tb in model.count_tables()}
    moved, below = 0, False
    for it in range(iterations):
        tables = summed()
        before = [st["z"].copy() for st in states]
        for p, (blk, st) in enumerate(zip(blocks, states)):
            own = {name: (np.array(tab, copy=True) if isinstance(tab, np.ndarray) else tab)      # (keyed: read
                   for name, tab in tables.items()}                                              # only)
            model.sweep_tables(blk, st, hyper, own, model.derive(own), 100 * it + p)
        moved += sum(int((b0 != st["z"]).sum()) for b0, st in zip(before, states))
        new = summed()
        below = check(new, blocks, states)
        hyper = model.global_step(new, hyper, model.partition_stats(blocks[0], states[0], hyper, it), it)[1]
    assert moved > 20 and below
    return hyper, new
