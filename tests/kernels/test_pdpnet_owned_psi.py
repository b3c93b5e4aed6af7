"""A shared Pitman-Yor topic vector (hca's: documents DP over a corpus-level PYP over a root) beside the two word
sides of session 23 (issue 28): tlm-h2b's bigram side over a Pitman-Yor psi[topic]
(:func:`inference.pdpnet.owned_chain.owned_chain_sweep` with the previous word as the value: one partition = the
in-process network sampler draw for draw; two partitions through the engine's hooks legal at every level) and the
[topic, column:NAME] side over a Dirichlet root per topic (:func:`inference.pdpnet.owned_words.owned_word_sweep`
with the document's value as the context: one engine partition visits the network's enumerated joint; two
partitions legal)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models.pdp_network import shared_pyp, words_bigram_psi, words_chain, words_pyp
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels import test_pdpnet_word_bigram_psi as psi
from tests.kernels.test_pdpnet_owned_chain import TOPIC_SIDE, owned_cycle, two_partitions

V, K = psi.V, psi.K


def with_topic_side(words: dict) -> dict:
    """``words``'s word side under hca's topic side (theta[document] DP over the corpus PYP over a Dirichlet)."""
    return dict(words, nodes=dict(words["nodes"], **json.loads(json.dumps(TOPIC_SIDE))))


@pytest.mark.parametrize("root,a", [("dirichlet", 0.0), ("pyp", 0.3)])
def test_beside_the_bigram_psi_side_one_partition_is_the_network_sampler_draw_for_draw(root, a):
    """phi[topic, previous_word] over psi[topic] over ``root`` beside the shared corpus vector: every cycle's z, both
    sides' counts and the own ones equal the sampler's (the value g of a token's restaurant its previous word)."""
    rng = np.random.default_rng(7)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    spec = parse_network(with_topic_side(psi.h2b_spec(root, a)))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=3)
    topic = compile_network(spec, layout, K, word_side=False)
    words = topic.words.astype(np.int64)
    prev = np.concatenate([[V], words[:-1]])
    prev[np.cumsum([0] + [len(d[0]) for d in docs])[:-1]] = V
    G, L = V + 1, 1 if root == "pyp" else 0
    z = sm.z.copy()
    s = sm.s[:topic.eoff[-1]].copy()
    cnt = rebuild_counts(topic, z, s, word_side=False)
    shared = (topic.kind == KIND_PYP) & (topic.family == list(spec.order).index("corpus"))
    own = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    bn, bt, BN, BT, nloc, tloc, cup, tup = psi._state(net, sm, prev, L, G)
    mine = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    an, bname = topic.a_names.index, topic.b_names.index
    pl = np.array([an("psi.a")] + ([an("nu.a")] if L else []), np.int64)
    bl = np.array([bname("psi.b")] + ([bname("nu.b")] if L else []), np.int64)
    gl = np.ones(L + 1)
    wargs = (nloc, tloc, nloc.sum(axis=0), tloc.sum(axis=0), cup, tup, cup.sum(axis=0), tup.sum(axis=0), *mine[2:],
             pl, bl, gl, gl.copy(), 0.4 if root == "dirichlet" else 0.0, V)
    bottom = ((bn, bt, BN, BT, mine[0], mine[1]), (an("phi.a"), bname("phi.b"), 1.0))
    cells = shared.repeat(np.diff(topic.off))
    moved = 0
    for _ in range(4):
        before = z.copy()
        cnt["mx"][:] = (max(cnt["mx"][0], bn.max(), nloc.max(), cup.max(initial=0)),
                        max(cnt["mx"][1], bt.max(), tloc.max(), tup.max(initial=0)))
        owned_cycle(topic, z, s, cnt, own, wargs, prev * V + words, np.tile(np.arange(V), G),
                    np.repeat(np.arange(G), V), bottom, sm._seed(sm.iteration + 1, 1))
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for name in ("n", "tc", "tp"):
            np.testing.assert_array_equal(cnt[name], getattr(sm, name)[:topic.off[-1]])
        np.testing.assert_array_equal(s, sm.s[:len(s)])
        np.testing.assert_array_equal(own[1][cells], cnt["tc"][cells])
        np.testing.assert_array_equal(own[2][cells], cnt["tp"][cells])
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], psi._state(net, sm, prev, L, G)):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(mine, [bn, bt, nloc, tloc, cup, tup]):
            np.testing.assert_array_equal(got, want)
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any() and (cnt["tp"][cells] < cnt["tc"][cells]).any()


def test_beside_the_bigram_psi_side_two_partitions_through_the_engine_hooks(tmp_path):
    """hca's topic side beside tlm-h2b's side over a Dirichlet root (every a and b of the word side sampled; a
    corpus-level PYP above psi as well would be 9 parameters, the engine's limit is 8) through the engine's hooks
    (no Spark): two partitions, 6 iterations; the bigram cells' customers are the tokens, t <= c at every level of
    both sides, every partition's own within its own customers, the word side's b move."""
    from drivers.models.pdp_network.model import PdpNetwork

    V9 = 9
    rng = np.random.default_rng(5)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V9, rng.integers(2, 12)))]) for i in range(16)]
    spec = with_topic_side(psi.h2b_spec("dirichlet", 0.2))
    for node in ("phi", "psi"):
        law = "pyp" if "pyp" in spec["nodes"][node] else "dp"
        spec["nodes"][node][law] = {k: {"value": v, "sample": True} for k, v in spec["nodes"][node][law].items()}
    (tmp_path / "hca-h2b.json").write_text(json.dumps(spec))
    model = PdpNetwork(K, V9)
    hyper = model.initial_hyper(network=str(tmp_path / "hca-h2b.json"))
    assert words_bigram_psi.is_psi(hyper["word_pyp"]) and hyper["global_families"] == ["tbase", "corpus"]
    start = {n: v for n, v in hyper["b_values"].items() if n.split(".")[0] in ("phi", "psi")}

    def check(new, blocks, states):
        der = model.derive(new)
        n, t = der["bigram_n"], der["bigram_t"]
        assert np.all(t <= n) and np.all(t >= 1) and int(n.sum()) == sum(b.n_tokens for b in blocks)
        assert np.all(new[words_pyp.TABLE] <= der["bigram_troot"]) and words_chain.TABLE not in new
        c, tp = new["network_tc"][1], new["network_tp"][1]      # (rows: tbase, corpus)
        assert np.all(tp <= c) and c.sum() >= 16 and np.array_equal(new["network_tc"][0], tp)
        for blk, st in zip(blocks, states):
            pairs, uidx, pword, vocab = words_bigram_psi.pair_words(model, blk)
            own_bn = words_pyp.own_customers(uidx, st["z"], len(pairs), K)
            assert np.all((0 <= st["word_bt"]) & (st["word_bt"] <= own_bn))
            assert np.all((0 <= st["word_t"]) & (st["word_t"] <= words_bigram_psi._own_psi(pword, st["word_bt"],
                                                                                             len(vocab))))
        assert np.isfinite(model.loglik(new, der, hyper))
        return (t < n).any() and (tp < c).any()
    hyper, new = two_partitions(model, hyper, docs, 6, check)
    assert all(hyper["b_values"][n] != v for n, v in start.items()), (hyper["b_values"], start)
    np.testing.assert_allclose(model.sample_topic_word(new, model.derive(new), hyper).sum(axis=1), 1.0)


def column_root_beside_a_shared_pyp(tmp_path, docs, values, sampled: bool = False, word: str = "column"):
    """(model, hyper, the full network's spec) of hca's topic side (its nodes first: the topic network's nodes and
    edges are the full network's first) beside phi[topic, column:c] (``word`` "topic": phi[topic]) over a Dirichlet
    root per topic."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivers.models.pdp_network.model import PdpNetwork

    raw = psi.column_root_spec() if word == "column" else psi.topic_root_spec()
    nodes = dict(json.loads(json.dumps(TOPIC_SIDE)), **{k: v for k, v in raw["nodes"].items() if k != "theta"})
    if sampled:
        for node in ("phi", "corpus"):
            nodes[node]["pyp"] = {k: {"value": v, "sample": True} for k, v in nodes[node]["pyp"].items()}
    spec = dict(raw, nodes=nodes)
    (tmp_path / "docs.parquet").mkdir()
    pq.write_table(pa.table({"doc_id": [d for d, _ in docs], "c": values}), tmp_path / "docs.parquet" / "p.parquet")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    model = PdpNetwork(K if sampled else 2, 9 if sampled else 2)
    model._corpus_dir = str(tmp_path)
    return model, model.initial_hyper(network=str(tmp_path / "spec.json")), spec


def test_beside_the_column_root_side_one_partition_samples_the_networks_joint(tmp_path):
    """One engine partition (the owned sweep, hca's, with the document's value as the word side's context; the
    shared vector's global rows refreshed from the partition after every sweep, as a synchronisation) visits every
    (z, s) of a tiny network (hca's topic side, phi[topic, column:c] over a Dirichlet root per topic: 112 states)
    with the frequencies of its joint (E12) enumerated: 12,000 sweeps, chi-square p > 1e-3, total variation < 0.06;
    the word side's keyed tables are the recount."""
    import dataclasses

    from inference.gibbs.block import SegmentedBlock
    from inference.gibbs.tables import merge
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    docs = [("d0", [[0, 1]]), ("d1", [[0]]), ("d2", [[1]])]
    model, hyper, raw = column_root_beside_a_shared_pyp(tmp_path, docs, ["x", "y", "x"])
    assert hyper["word_pyp"]["context"] == "c" and hyper["global_families"] == ["tbase", "corpus"]
    block = SegmentedBlock.from_segments(docs)
    state = model.initial_state(block, hyper, 3)

    def summed():
        parts = model.table_counts(block, state, np.unique(block.words, return_inverse=True))
        return {t.name: merge(t, [parts[t.name]]) for t in model.count_tables()}
    tables = summed()
    derived = model.derive(tables)      # (the word side's local copies live in it, moved by the sweeps)
    layout = dataclasses.replace(CorpusLayout.of([d for _, d in docs], 2), columns={"c": (np.array([0, 1, 0]), 3)})
    net = compile_network(parse_network(raw), layout, 2)
    T = len(state["s"])
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    pairs, uidx = model._local_pairs(block)
    obs = np.zeros(len(states))
    topic = model._compiled(block, hyper)
    rows = model._shared_roots().nodes(topic)
    for it in range(12000):
        model.sweep_tables(block, state, hyper, tables, derived, 1000 + it)
        cnt = model._local_counts(topic, block, state)      # (the shared rows of table_counts: a synchronisation)
        for name, (keys, counts) in (("network_tc", shared_pyp.customers(topic, cnt, rows)),
                                     ("network_tp", shared_pyp.own_rows(topic, cnt, rows))):
            tables[name][keys] = counts
        s = np.zeros(int(net.eoff[-1]), np.int64)
        s[:T] = state["s"]
        for i, (u, w) in enumerate(zip(uidx, block.words)):
            for k in range(2):
                s[net.eoff[net.par_ptr[net.word_inst[i, k]]] + w] = state["word_t"][u, k]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in s))]] += 1
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3 and len(states) > 64, (len(states), tv, pval)
    der = model.derive(summed())
    assert int(der["bigram_n"].sum()) == block.n_tokens and np.all(der["bigram_t"] <= der["bigram_n"])


@pytest.mark.parametrize("word", ["column", "topic"])
def test_beside_the_column_root_side_two_partitions_through_the_engine_hooks(tmp_path, word):
    """The same network (K = 3, V = 9, three values; phi's and the corpus vector's a and b sampled; and with
    phi[topic] over a Dirichlet root per topic, the bigram side with one context) through the engine's hooks: two
    partitions, 6 iterations; the keyed cells' customers are the tokens, t <= c on both sides, every partition's
    own indicators within its own customers, the sampled a and b move."""
    rng = np.random.default_rng(11)
    docs = [(f"d{i:02d}", [list(rng.integers(0, 9, rng.integers(2, 12)))]) for i in range(16)]
    model, hyper, _ = column_root_beside_a_shared_pyp(tmp_path, docs, [f"g{i % 3}" for i in range(16)], True, word)
    start = {kind: {n: v for n, v in hyper[kind].items() if n[:6] != "theta."} for kind in ("a_values", "b_values")}

    def check(new, blocks, states):
        der = model.derive(new)
        n, t = der["bigram_n"], der["bigram_t"]
        assert np.all(t <= n) and np.all(t >= 1) and int(n.sum()) == sum(b.n_tokens for b in blocks)
        c, tp = new["network_tc"][1], new["network_tp"][1]      # (rows: tbase, corpus)
        assert np.all(tp <= c) and c.sum() >= 16 and np.array_equal(new["network_tc"][0], tp)
        for blk, st in zip(blocks, states):
            pairs, uidx = model._local_pairs(blk)
            own = words_pyp.own_customers(uidx, st["z"], len(pairs), K)
            assert np.all((0 <= st["word_t"]) & (st["word_t"] <= own))
        assert np.isfinite(model.loglik(new, der, hyper))
        return (t < n).any() and (tp < c).any()
    hyper, new = two_partitions(model, hyper, docs, 6, check)
    for kind, values in start.items():
        assert all(hyper[kind][n] != v for n, v in values.items()), (hyper[kind], values)
    np.testing.assert_allclose(model.sample_topic_word(new, model.derive(new), hyper).sum(axis=1), 1.0)
