"""The bigram side with psi[topic] a Pitman-Yor (or DP) vector over a corpus-level root (issue 28; Wallach's
hierarchical prior 2b, Table 3.3: phi_{w't} ~ Dir(beta m_t), m_t ~ Dir(beta1 m), m ~ Dir(beta0 u), as a network):
one partition of the engine's sweep (:func:`inference.pdpnet.word_column.column_word_sweep` with the restaurant's
value g the previous word, its pairs (w', w)) is the in-process network sampler's, draw for draw, over a Dirichlet
root, the uniform and a corpus-level PYP (a chain above psi). The same kernel with one value (G = 1) is a chain of
word vectors with a level per topic, phi[topic] over phi1[topic] over a root or corpus-level chain: draw for draw
likewise."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_column import column_word_sweep

V, K = 6, 3


def h2b_spec(root: str, a: float = 0.0) -> dict:
    """theta[document] Dirichlet; phi[topic, previous_word] DP (a = 0) or PYP over psi[topic] DP over ``root``: a
    Dirichlet (h2b), the uniform, or a corpus-level PYP over the uniform."""
    bottom = {"pyp": {"a": a, "b": 1.5}} if a > 0 else {"dp": {"b": 1.5}}
    nodes = {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
             "m": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if root == "dirichlet"
                                                            else {"uniform": True})},
             "psi": {"index": ["topic"], "over": "word", "dp": {"b": 2.0},
                     "parents": [{"node": "nu" if root == "pyp" else "m", "index": ["corpus"]}]},
             "phi": {"index": ["topic", "previous_word"], "over": "word", **bottom,
                     "parents": [{"node": "psi", "index": ["topic"]}]}}
    if root == "pyp":
        nodes["nu"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.2, "b": 3.0},
                       "parents": [{"node": "m", "index": ["corpus"]}]}
    return {"name": "tlm-h2b", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic", "previous_word"]}}


def topic_chain_spec(root: str) -> dict:
    """theta[document] Dirichlet; phi[topic] PYP over phi1[topic] PYP over ``root`` (a Dirichlet, or a corpus-level
    PYP over the uniform): a chain of word vectors with a level per topic."""
    nodes = {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
             "m": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if root == "dirichlet"
                                                            else {"uniform": True})},
             "psi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.3, "b": 2.0},
                     "parents": [{"node": "nu" if root == "pyp" else "m", "index": ["corpus"]}]},
             "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.4, "b": 1.5},
                     "parents": [{"node": "psi", "index": ["topic"]}]}}
    if root == "pyp":
        nodes["nu"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.2, "b": 3.0},
                       "parents": [{"node": "m", "index": ["corpus"]}]}
    return {"name": "topic-chain", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic"]}}


def _vec(net, name, key):
    js = np.flatnonzero(net.family == net.spec.order.index(name))
    return int(js[net.key[js] == key][0])


def _state(net, sm, prev, L, G=V + 1):
    """The kernel's arrays (pairs (g, w) for every g in 0..G-1, w in 0..V-1; g the token's ``prev``) from the
    in-process sampler's counts."""
    bn, bt = np.zeros((G * V, K), np.int64), np.zeros((G * V, K), np.int64)
    BN, BT = np.zeros((G, K), np.int64), np.zeros((G, K), np.int64)
    for i in range(len(net.words)):
        for k in range(K):
            j, g = int(net.word_inst[i, k]), int(prev[i])
            bn[g * V:(g + 1) * V, k] = sm.n[net.off[j]:net.off[j + 1]]
            bt[g * V:(g + 1) * V, k] = sm.tp[net.off[j]:net.off[j + 1]]
            BN[g, k], BT[g, k] = sm.Nn[j], sm.TP[j]
    psi = [_vec(net, "psi", k) for k in range(K)]
    nloc = np.stack([sm.tc[net.off[j]:net.off[j + 1]] for j in psi], axis=1)
    tloc = np.stack([sm.tp[net.off[j]:net.off[j + 1]] for j in psi], axis=1)
    cup, tup = np.zeros((V, L), np.int64), np.zeros((V, L), np.int64)
    if L:
        j = _vec(net, "nu", 0)
        cup[:, 0], tup[:, 0] = sm.tc[net.off[j]:net.off[j + 1]], sm.tp[net.off[j]:net.off[j + 1]]
    return [bn, bt, BN, BT, nloc, tloc, cup, tup]


@pytest.mark.parametrize("root,a", [("dirichlet", 0.0), ("uniform", 0.3), ("pyp", 0.0)])
def test_one_partition_is_the_network_sampler_draw_for_draw(root, a):
    run_against_the_network_sampler(h2b_spec(root, a), root, bigram=True)


@pytest.mark.parametrize("root", ["dirichlet", "pyp"])
def test_a_level_per_topic_is_the_column_kernel_with_one_value(root):
    """phi[topic] over phi1[topic] over a root or corpus chain: the same kernel, every token's value 0 (G = 1)."""
    run_against_the_network_sampler(topic_chain_spec(root), root, bigram=False)


def run_against_the_network_sampler(spec_json: dict, root: str, bigram: bool) -> None:
    rng = np.random.default_rng(11)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    spec = parse_network(spec_json)
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=4)
    topic = compile_network(spec, layout, K, word_side=False)
    words = topic.words
    starts = np.cumsum([0] + [len(d[0]) for d in docs])[:-1]
    prev = np.concatenate([[V], words[:-1]])
    prev[starts] = V
    G = V + 1
    if not bigram:
        prev[:], G = 0, 1
    L = 1 if root == "pyp" else 0
    z = sm.z.copy()
    cnt = rebuild_counts(topic, z, np.zeros(int(topic.eoff[-1]), np.int64), word_side=False)
    anc_ptr, anc = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    bn, bt, BN, BT, nloc, tloc, cup, tup = _state(net, sm, prev, L, G)
    own = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    pidx = prev * V + words
    pword, pval = np.tile(np.arange(V), G), np.repeat(np.arange(G), V)
    an, bname = topic.a_names.index, topic.b_names.index
    pl = np.array([an("psi.a")] + ([an("nu.a")] if L else []), np.int64)
    bl = np.array([bname("psi.b")] + ([bname("nu.b")] if L else []), np.int64)
    gl = np.ones(L + 1)
    beta0 = 0.4 if root == "dirichlet" else 0.0
    stack = StirlingStack(topic.a_values)
    Nk, Tk, Cup, Tup = nloc.sum(axis=0), tloc.sum(axis=0), cup.sum(axis=0), tup.sum(axis=0)
    moved = 0
    for _ in range(4):
        seed = sm._seed(sm.iteration + 1, 1)
        before = z.copy()
        cnt["mx"][:] = max(bn.max(), nloc.max(), cup.max(initial=0)), max(bt.max(), tloc.max(), tup.max(initial=0))
        pos, reseed = 0, True
        while pos >= 0:
            stack.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = column_word_sweep(
                pos, reseed, seed, pidx, pword, pval, z, topic.topic_inst, anc_ptr, anc, topic.kind, topic.dim,
                topic.off, topic.alpha, topic.a_of, topic.b_of, topic.par_ptr, topic.par_node, topic.par_gamma,
                topic.gamma_sum, topic.a_values, topic.b_values, stack.L3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"],
                cnt["TC"], cnt["TP"], np.zeros(0, np.int64), cnt["Se"], topic.eoff, cnt["mx"], bn, bt, BN, BT,
                own[0], own[1], nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own[2], own[3], own[4], own[5],
                an("phi.a"), bname("phi.b"), 1.0, pl, bl, gl, gl.copy(), beta0, V)
            reseed = False
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], _state(net, sm, prev, L, G)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(Tk, tloc.sum(axis=0))
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any()


def test_two_partitions_sum_to_the_recount_and_every_level_stays_legal(tmp_path):
    """Through the engine's hooks (no Spark): two partitions sweeping private copies of the summed tables (two
    sweeps per synchronisation) for 8 iterations over a tlm-h2b network with a corpus-level PYP above psi; the
    summed keyed tables are the partitions' states, 0 <= t^p <= c^p and t <= c at every level (psi's customers the
    bigram cells' tables), every level's b moves, the topics and every context's held-out predictive sum to 1."""

    from drivers.models.pdp_network import words_bigram_psi, words_chain, words_pyp
    from inference.gibbs.block import SegmentedBlock
    from pdp_hooks import Partitions, spec_model

    V9 = 9
    rng = np.random.default_rng(7)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V9, rng.integers(2, 12)))]) for i in range(16)]
    spec = h2b_spec("pyp", 0.2)
    for node in ("phi", "psi", "nu"):
        law = "pyp" if "pyp" in spec["nodes"][node] else "dp"
        spec["nodes"][node][law] = {k: {"value": v, "sample": True} for k, v in spec["nodes"][node][law].items()}
    model, hyper = spec_model(tmp_path, spec, K, V9, "h2b.json")
    assert words_bigram_psi.is_psi(hyper["word_pyp"])
    run = Partitions(model, hyper, docs)
    blocks = run.blocks
    start = dict(hyper["b_values"])
    moved = 0
    for it in range(8):
        changed, new = run.sweep(it, sweeps=2)
        moved += changed
        der = model.derive(new)
        n, t = der["bigram_n"], der["bigram_t"]
        assert np.all(t <= n) and np.all(t >= 1) and int(n.sum()) == sum(b.n_tokens for b in blocks)
        t0, tnu = new[words_pyp.TABLE], new[words_chain.TABLE][:, 0]
        assert np.all(t0 <= der["bigram_troot"]) and np.all(tnu <= t0.sum(axis=1))
        for blk, st in zip(blocks, run.states):
            pairs, uidx, pword, vocab = words_bigram_psi.pair_words(model, blk)
            own_bn = words_pyp.own_customers(uidx, st["z"], len(pairs), K)
            own0 = np.zeros((len(vocab), K), np.int64)
            np.add.at(own0, pword, st["word_bt"])
            assert np.all((0 <= st["word_bt"]) & (st["word_bt"] <= own_bn))
            assert np.all((0 <= st["word_t"]) & (st["word_t"] <= own0))
            assert np.all((0 <= st["word_up"][:, 0]) & (st["word_up"][:, 0] <= st["word_t"].sum(axis=1)))
        hyper = run.step(new, it)
        assert np.isfinite(model.loglik(new, der, hyper))
    assert moved > 20 and (t < n).any()
    assert all(hyper["b_values"][name] != value for name, value in start.items()), (hyper["b_values"], start)
    np.testing.assert_allclose(run.trained(new).sum(axis=1), 1.0)
    # held out with psi frozen at its trained predictive: every context's word factors a distribution
    for prev in range(V9 + 1):
        doc = [(f"p{w}", [[w]] if prev == V9 else [[prev, w]]) for w in range(V9)]
        rows = model.frozen_rows(SegmentedBlock.from_segments(doc), hyper)[(0 if prev == V9 else 1)::(1 if prev == V9
                                                                                                      else 2)]
        np.testing.assert_allclose(rows.sum(axis=0), 1.0, rtol=1e-12)


def test_a_level_per_topic_on_the_engine_two_partitions(tmp_path):
    """phi[topic] over phi1[topic] over a corpus-level PYP (the column side with one value, G = 1) through the
    engine's hooks: two partitions, 6 iterations; the summed tables are the states', t <= c at every level, b moves,
    the topics sum to 1, a held-out document's rows are distributions."""

    from drivers.models.pdp_network import words_column, words_pyp
    from inference.gibbs.block import SegmentedBlock
    from pdp_hooks import Partitions, spec_model

    V9 = 9
    rng = np.random.default_rng(3)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V9, rng.integers(2, 12)))]) for i in range(16)]
    spec = topic_chain_spec("pyp")
    for node in ("phi", "psi", "nu"):
        spec["nodes"][node]["pyp"] = {k: {"value": v, "sample": True} for k, v in spec["nodes"][node]["pyp"].items()}
    model, hyper = spec_model(tmp_path, spec, K, V9, "chain.json")
    assert hyper["word_pyp"]["column"] == words_pyp.ONE_VALUE
    run = Partitions(model, hyper, docs)
    start = dict(hyper["b_values"])
    for it in range(6):
        new = run.sweep(it)[1]
        bn, bt = new[words_column.CUSTOMERS], new[words_column.TABLES]
        np.testing.assert_array_equal(bn, new["nwk"])               # one value: the bottom cells are (w, k)
        assert np.all(bt <= bn) and np.all(new[words_pyp.TABLE] <= bt)
        assert np.all(new["word_chain"][:, 0] <= new[words_pyp.TABLE].sum(axis=1))
        hyper = run.step(new, it)
    assert all(hyper["b_values"][name] != value for name, value in start.items())
    phi1 = run.trained(new)
    np.testing.assert_allclose(phi1.sum(axis=1), 1.0)
    full = model.column_rows(SegmentedBlock.from_segments([("d00", [list(range(V9))])]), hyper, phi1.T)
    np.testing.assert_allclose(full.sum(axis=0), 1.0)


def test_more_than_one_level_per_topic_is_a_stack_and_a_column_over_two_is_refused():
    """phi[topic] over psi[topic] over psi2[topic] over m runs since session 25 (a stack of bottom levels,
    :mod:`drivers.models.pdp_network.words_stack`); a [topic, column] family over two levels per topic is refused
    in one line."""
    from drivers.models.pdp_network import words_pyp
    from inference.errors import UsageError

    spec = topic_chain_spec("dirichlet")        # phi[topic] over psi[topic] over psi2[topic] over m
    spec["nodes"]["psi2"] = dict(spec["nodes"]["psi"], pyp={"a": 0.1, "b": 4.0})
    spec["nodes"]["psi"]["parents"] = [{"node": "psi2", "index": ["topic"]}]
    side = words_pyp.word_side(parse_network(spec))
    assert side["column"] == words_pyp.ONE_VALUE and side["bottom"][2] == "phi" and side["middle"][0][2] == "psi"
    spec["nodes"]["phi"]["index"] = spec["word"]["index"] = ["topic", "column:c"]
    with pytest.raises(UsageError, match="node 'psi': a word vector per topic under 'phi' on the Gibbs engine has "
                                         "one corpus-level parent") as info:
        words_pyp.word_side(parse_network(spec))
    assert "\n" not in str(info.value)
    assert words_pyp.word_side(parse_network(topic_chain_spec("dirichlet")))["column"] == words_pyp.ONE_VALUE


def column_root_spec(beta0: float = 0.4) -> dict:
    """phi[topic, column:c] PYP over phi0[topic] a Dirichlet root per topic (the differential topic models' phi0 as
    a Dirichlet): the bigram side with the document's value as the context."""
    return {"name": "dtm-dirichlet",
            "nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                      "phi0": {"index": ["topic"], "over": "word", "dirichlet": beta0},
                      "phi": {"index": ["topic", "column:c"], "over": "word", "pyp": {"a": 0.3, "b": 1.5},
                              "parents": [{"node": "phi0", "index": ["topic"]}]}},
            "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic", "column:c"]}}


def topic_root_spec(beta0: float = 0.4) -> dict:
    """phi[topic] PYP over phi0[topic] a Dirichlet root per topic: the bigram side with one context."""
    raw = column_root_spec(beta0)
    phi = dict(raw["nodes"]["phi"], index=["topic"])
    return dict(raw, name="pyp-topic-root", nodes=dict(raw["nodes"], phi=phi), word={"node": "phi", "index": ["topic"]})


def _column_model(tmp_path, docs, values, spec):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivers.models.pdp_network.model import PdpNetwork

    (tmp_path / "docs.parquet").mkdir()
    pq.write_table(pa.table({"doc_id": [d for d, _ in docs], "c": values}), tmp_path / "docs.parquet" / "p.parquet")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return str(tmp_path / "spec.json"), PdpNetwork


@pytest.mark.parametrize("word", ["column", "topic"])
def test_a_column_side_over_a_dirichlet_root_per_topic_samples_the_networks_joint(tmp_path, word):
    """One engine partition (the bigram side's hooks with the value as the context; phi[topic]: one context) visits
    every (z, t) of a tiny [topic, column] (or [topic]) network over a Dirichlet root per topic with the frequencies
    of its joint (E12) enumerated (as test_pdpnet_word_bigram's tlm case: 20,000 sweeps, chi-square p > 1e-3, total
    variation < 0.06); its keyed tables are the recount and its held-out factors a distribution per value (refresh:
    tests/commands/test_refresh_pdp_dtm.py)."""
    from drivers.models.pdp_network import words_bigram, words_pyp
    from inference.gibbs.block import SegmentedBlock
    from inference.gibbs.tables import merge
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    V2, K2 = 2, 2
    docs = [("d0", [[0, 1, 0]]), ("d1", [[0, 1]]), ("d2", [[1]])]
    values = ["x", "y", "x"]
    spec = column_root_spec() if word == "column" else topic_root_spec()
    path, PdpNetwork = _column_model(tmp_path, docs, values, spec)
    model = PdpNetwork(K2, V2)
    model._corpus_dir = str(tmp_path)
    hyper = model.initial_hyper(network=path)
    assert hyper["word_pyp"]["context"] == ("c" if word == "column" else words_pyp.ONE_VALUE)
    assert words_bigram.is_bigram(hyper)
    block = SegmentedBlock.from_segments(docs)
    state = model.initial_state(block, hyper, 3)
    parts = model.table_counts(block, state, np.unique(block.words, return_inverse=True))
    tables = {t.name: merge(t, [parts[t.name]]) for t in model.count_tables()}
    derived = model.derive(tables)
    layout = dataclasses.replace(CorpusLayout.of([d for _, d in docs], V2), columns={"c": (np.array([0, 1, 0]), 3)})
    net = compile_network(parse_network(spec), layout, K2)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    pairs, uidx = model._local_pairs(block)
    keys = [0, 1, 0, 2, 3, 1] if word == "column" else [0, 1, 0, 0, 1, 1]   # g V + w, g the value's code (or 0)
    assert list(pairs) == sorted(set(keys)) and list(pairs[uidx]) == keys
    obs = np.zeros(len(states))
    for it in range(20000):
        model.sweep_tables(block, state, hyper, tables, derived, 1000 + it)
        s = np.zeros(int(net.eoff[-1]), np.int64)
        for i, (u, w) in enumerate(zip(uidx, block.words)):
            for k in range(K2):
                s[net.eoff[net.par_ptr[net.word_inst[i, k]]] + w] = state["word_t"][u, k]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in s))]] += 1
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3 and len(states) > 64, (len(states), tv, pval)
    parts = model.table_counts(block, state, np.unique(block.words, return_inverse=True))
    new = {t.name: merge(t, [parts[t.name]]) for t in model.count_tables()}
    der = model.derive(new)
    assert int(der["bigram_n"].sum()) == block.n_tokens and np.all(der["bigram_t"] <= der["bigram_n"])
    model.bind_result(type("Result", (), {"tables": new, "hyper": hyper})())
    for doc in ("d0", "d1"):        # values x and y: a value's word factors sum to 1 over the words
        one = SegmentedBlock.from_segments([(doc, [[0, 1]])])
        np.testing.assert_allclose(model.frozen_rows(one, hyper).sum(axis=0), 1.0, rtol=1e-12)
