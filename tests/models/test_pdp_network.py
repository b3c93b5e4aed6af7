"""pdp-network on the Gibbs engine's model contract (issue 28, 3), without Spark: lda.json is the collapsed LDA
kernel draw for draw, the engine's word table stays the recount of z, refusals of what the engine cannot run."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models.pdp_network.model import PdpNetwork
from inference.errors import UsageError
from inference.gibbs.block import SegmentedBlock
from drivers.models.lda_gibbs.model import lda_sweep


def _block(seed=0, D=6, V=8):
    rng = np.random.default_rng(seed)
    doc_ptr, seg_ptr, words = [0], [0], []
    for _ in range(D):
        for _ in range(rng.integers(1, 4)):
            words += list(rng.integers(0, V, rng.integers(0, 7)))
            seg_ptr.append(len(words))
        doc_ptr.append(len(seg_ptr) - 1)
    return SegmentedBlock(np.array([f"d{i}" for i in range(D)], dtype=object), np.array(doc_ptr, np.int64),
                          np.array(seg_ptr, np.int64), np.array(words, np.int32))


@pytest.mark.parametrize("sampler", ["indicators", "cmgs", "exact"])
def test_lda_spec_on_the_engine_contract_is_the_lda_kernel_draw_for_draw(sampler):
    """lda.json through the model hooks, with any topic-side sampler (a Dirichlet root has no tables: all are
    collapsed LDA), makes the LDA kernel's draws."""
    V, K = 8, 3
    blk = _block()
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network="lda", sampler=sampler)
    assert hyper["network"]["sampler"] == sampler
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = m.init_state(blk, hyper, nwk, nk, 4)
    z, nwk2, nk2 = state["z"].copy(), nwk.copy(), nk.copy()
    alpha = np.full(K, hyper["network"]["nodes"]["theta"]["dirichlet"])
    for it in range(6):
        m.sweep(blk, state, hyper, nwk, nk, 50 + it)
        lda_sweep(blk.token_ptr(), blk.words, z, nwk2, nk2, alpha, hyper["beta"], np.zeros((1, 1)), False, 50 + it)
        assert np.array_equal(state["z"], z) and np.array_equal(nwk, nwk2), it
    assert len(set(z.tolist())) > 1


@pytest.mark.parametrize("name", ["stm", "seqlda", "adatm", "seqlda:exact"])
def test_segmented_specs_keep_the_word_table_and_sample_b(name):
    V, K = 8, 3
    blk = _block(1)
    m = PdpNetwork(K, V)
    network, _, sampler = name.partition(":")
    hyper = m.initial_hyper(network=network, sampler=sampler or None)
    assert hyper["topic_sampler"].startswith(sampler or hyper["network"].get("sampler", "indicators"))
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = m.init_state(blk, hyper, nwk, nk, 2)
    b0 = dict(hyper["b_values"])
    for it in range(10):
        m.sweep(blk, state, hyper, nwk, nk, 10 + it)
        hyper = m.update_hyper(hyper, m.partition_stats(blk, state, hyper, 20 + it), blk.n_docs, 30 + it)
    recount = np.zeros((V, K), np.int32)
    np.add.at(recount, (blk.words, state["z"]), 1)
    assert np.array_equal(recount, nwk) and np.array_equal(nk, recount.sum(axis=0))
    assert hyper["b_values"] != b0
    doc, seg = m.doc_topic(blk, state, hyper), m.segment_topic(blk, state, hyper)
    np.testing.assert_allclose(doc.sum(axis=1), 1.0)
    np.testing.assert_allclose(seg.sum(axis=1), 1.0)
    json.dumps(hyper)


HDP3 = {"nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
                 "mid": {"index": ["corpus"], "over": "topic", "dp": {"b": 2.0},
                         "parents": [{"node": "top", "index": ["corpus"]}]},
                 "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                           "parents": [{"node": "mid", "index": ["corpus"]}]},
                 "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.01}},
        "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


PYP2 = {"nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.1},     # two parents: a Dirichlet
                  "base": {"index": ["topic"], "over": "word", "dirichlet": 0.5},              # root per topic and a
                  "uni": {"index": ["corpus"], "over": "word", "uniform": True},               # corpus PYP (two roots
                  "words": {"index": ["corpus"], "over": "word", "pyp": {"a": 0.5, "b": 5.0},  # run: words_mix)
                            "parents": [{"node": "uni", "index": ["corpus"]}]},
                  "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.5, "b": 10.0},
                          "parents": [{"node": "base", "index": ["topic"]}, {"node": "words", "index": ["corpus"]}]}},
        "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


@pytest.mark.parametrize("name,message", [
    ("hdp3", "node 'mid': a shared Pitman-Yor vector under \"sampler\": \"cmgs\" runs below it document vectors "
             "only"),
    ("pyp2", "node 'words': a parent of the word vector 'phi' with several parents on the Gibbs engine is a "
             "Dirichlet root or uniform vector"),
    ("no-such-spec", "--network no-such-spec: no such file, nor a shipped spec"),
])
def test_what_the_engine_cannot_run_is_refused_in_one_line(name, message, tmp_path):
    specs = {"hdp3": dict(HDP3, sampler="cmgs", topic={"node": "seg", "index": ["segment"]},    # a chain of
                          nodes=dict(HDP3["nodes"], seg={"index": ["segment"], "over": "topic",    # document
                                                         "dp": {"b": 1.0},                         # vectors
                                                         "parents": [{"node": "theta", "index": ["document"]}]})),
             "pyp2": PYP2}
    if name in specs:
        (tmp_path / f"{name}.json").write_text(json.dumps(specs[name]))
        name = str(tmp_path / f"{name}.json")
    with pytest.raises(UsageError) as info:
        PdpNetwork(3, 8).initial_hyper(network=name)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_shared_pitman_yor_vectors_driver_statistics_are_the_whole_networks():
    """hdp-pyp-lda.json through the engine hooks on one partition, after 3 sweeps: the partition's histogram keys
    (the corpus vector left out) plus the driver's (its global (c, t) and T from network_tc/network_tp) are the
    in-process histograms of the whole network; the driver's T of corpus.b is the vector's TP."""
    from drivers.models.pdp_network import shared_pyp
    from inference.gibbs.tables import merge
    from inference.pdpnet import engine_stats
    from inference.pdpnet.sampler import rebuild_counts
    from inference.pdpnet.spec import parse_network

    V, K = 8, 3
    blk = _block(seed=3, D=10)
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network="hdp-pyp-lda")
    state = m.initial_state(blk, hyper, 2)
    local = np.unique(blk.words, return_inverse=True)

    def tables():
        return {t.name: merge(t, [m.table_counts(blk, state, local)[t.name]]) for t in m.count_tables()}
    for it in range(3):
        tabs = tables()
        m.sweep_tables(blk, state, hyper, tabs, m.derive(tabs), 10 + it)
    tabs = tables()
    keys, counts, b_stats = shared_pyp.driver_stats(parse_network(hyper["network"]), m._shared_roots(), tabs, hyper,
                                                    np.random.default_rng(0))
    part = tabs["discount_counts"]
    got = {}
    for k, c in zip(np.concatenate([part.keys, keys]), np.concatenate([np.ravel(part.counts), counts])):
        got[int(k)] = got.get(int(k), 0) + int(c)
    net = m._compiled(blk, hyper)
    cnt = rebuild_counts(net, state["z"].astype(np.int64), state["s"], word_side=False)
    want_keys, want_counts = engine_stats.histogram_contribution(net, cnt)
    assert got == {int(k): int(c) for k, c in zip(want_keys, want_counts[:, 0])} and len(keys) > 0
    corpus = int(np.flatnonzero(net.family == list(net.spec.order).index("corpus"))[0])
    assert b_stats["corpus.b"][0] == cnt["TP"][corpus] > 0


def test_a_shared_vector_with_two_parents_reads_every_partitions_tables_per_edge(tmp_path):
    """A corpus-level Pitman-Yor vector over two roots, two partitions through the engine hooks (no Spark): a
    partition's sweep reads each parent edge's S as the sum over both partitions (table ``network_ts``), its own s
    staying in its state; the tables per edge sum to the vector's tables."""
    from drivers.models.pdp_network import shared_pyp
    from inference.gibbs.tables import merge

    spec = json.loads(json.dumps(HDP3))
    spec["nodes"]["top2"] = {"index": ["corpus"], "over": "topic", "dirichlet": 0.3}
    spec["nodes"]["mid"] = {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 2.0},
                            "parents": [{"node": "top", "index": ["corpus"], "gamma": 1.0},
                                        {"node": "top2", "index": ["corpus"], "gamma": 1.0}]}
    (tmp_path / "two.json").write_text(json.dumps(spec))
    V, K = 8, 3
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network=str(tmp_path / "two.json"))
    blocks = [_block(seed=4 + p, D=8) for p in range(2)]
    states = [m.initial_state(b, hyper, 2 + p) for p, b in enumerate(blocks)]
    locs = [np.unique(b.words, return_inverse=True) for b in blocks]

    def tables():
        parts = [m.table_counts(b, st, loc) for b, st, loc in zip(blocks, states, locs)]
        return {t.name: merge(t, [p[t.name] for p in parts]) for t in m.count_tables()}
    for it in range(3):
        tabs = tables()
        for p, (b, st) in enumerate(zip(blocks, states)):
            m.sweep_tables(b, st, hyper, tabs, m.derive(tabs), 10 * it + p)
    tabs = tables()
    ts, tp = tabs[shared_pyp.EDGES], tabs[shared_pyp.TABLE]
    g = m._shared_roots().families.index("mid")
    np.testing.assert_array_equal(ts[2 * g] + ts[2 * g + 1], tp[g])
    net = m._compiled(blocks[0], hyper)
    own = m._counts(net, blocks[0], states[0], hyper, None)       # (no trained rows: the partition's own)
    glob = m._counts(net, blocks[0], states[0], hyper, tabs["network_tc"], global_tables=tabs)
    j = int(np.flatnonzero(net.family == list(net.spec.order).index("mid"))[0])
    edges = range(net.par_ptr[j], net.par_ptr[j + 1])
    assert [int(glob["Se"][e]) for e in edges] == [int(ts[2 * g + i].sum()) for i in range(2)]
    assert all(own["Se"][e] < glob["Se"][e] for e in edges)


def test_a_refreshs_grown_layout_moves_the_shared_pitman_yor_tables_with_their_customers():
    """A refresh with a new column value (no Spark): ``network_tp`` (and ``network_ts``: c has two parents) move
    row for row with ``network_tc`` (the corpus vector c, after the column family, moves from row 4 to 5)."""
    from drivers.models.pdp_network import shared_pyp
    from drivers.models.pdp_network.shared_roots import ColumnValues, SharedRoots
    from inference.gibbs.tables import KeyedCounts
    from inference.pdpnet.spec import parse_network

    pyp = {"a": 0.3, "b": 2.0}
    raw = {"name": "grow", "nodes": {
        "top": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
        "top2": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
        "g": {"index": ["column:a"], "over": "topic", "pyp": pyp, "parents": [{"node": "top", "index": ["corpus"]}]},
        "c": {"index": ["corpus"], "over": "topic", "pyp": pyp, "parents": [
            {"node": "top", "index": ["corpus"], "gamma": 1.0}, {"node": "top2", "index": ["corpus"], "gamma": 1.0}]},
        "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0}, "parents": [
            {"node": "g", "index": ["column:a"], "gamma": 1.0}, {"node": "c", "index": ["corpus"], "gamma": 1.0}]},
        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.1}},
        "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}
    spec, V, K = parse_network(raw), 8, 3
    families = ["top", "top2", "g", "c"]
    m = PdpNetwork(K, V)
    m._raw, m._word_pyp, m._roots, m._columns = raw, None, None, ColumnValues({"a": ["x", "y", "z"]})
    m._old_roots = old = SharedRoots(spec, families, ColumnValues({"a": ["x", "y"]}))
    m.bind_shared(spec, families)
    moved = m._shared_roots().moved_rows(old, spec)
    assert moved.tolist() == [0, 1, 2, 3, 5, 6]         # top, top2, g's x, y, unseen; c
    rng = np.random.default_rng(0)
    tc = rng.integers(5, 9, (old.rows, K)).astype(np.int32)
    tc[len(moved):] = 0                                 # (rows past the roots' are empty)
    tp = np.maximum(tc - rng.integers(0, 5, tc.shape).astype(np.int32), 0)
    ts = np.zeros((2 * old.rows, K), np.int32)
    ts[0::2], ts[1::2] = tp // 2, tp - tp // 2
    tables = {"nwk": np.zeros((V, K), np.int32), "network_tc": tc, shared_pyp.TABLE: tp, shared_pyp.EDGES: ts,
              "discount_counts": KeyedCounts(np.zeros(0, np.int64), np.zeros((0, 1), np.int32))}
    grown, _ = m.grown_chain(tables, {}, V)
    for name, old_rows, width in (("network_tc", tc, 1), (shared_pyp.TABLE, tp, 1), (shared_pyp.EDGES, ts, 2)):
        rows = (moved[:, None] * width + np.arange(width)).ravel()
        np.testing.assert_array_equal(grown[name][rows], old_rows[:len(rows)], err_msg=name)
        assert grown[name].sum() == old_rows[:len(rows)].sum(), name
    assert np.all(grown[shared_pyp.TABLE] <= grown["network_tc"])


@pytest.mark.parametrize("sampler", ["cmgs", "exact"])
def test_hdp_pyp_lda_under_the_multiplicity_samplers_through_the_hooks(sampler):
    """hdp-pyp-lda.json under cmgs / exact (:mod:`inference.pdpnet.cmgs_owned`) in process (``sweep``: the block's
    own tables are the shared vector's) and through the engine's table hooks on one partition: the word table stays
    the recount, the corpus vector's tables 0 < t <= c where it has customers, and the documents' b moves."""
    from inference.gibbs.tables import merge

    V, K = 8, 3
    blk = _block(seed=5, D=10)
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network="hdp-pyp-lda", sampler=sampler)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = m.init_state(blk, hyper, nwk, nk, 2)
    for it in range(3):
        m.sweep(blk, state, hyper, nwk, nk, 10 + it)
    local = np.unique(blk.words, return_inverse=True)
    for it in range(4):
        tabs = {t.name: merge(t, [m.table_counts(blk, state, local)[t.name]]) for t in m.count_tables()}
        m.sweep_tables(blk, state, hyper, tabs, m.derive(tabs), 20 + it)
        hyper = m.update_hyper(hyper, m.partition_stats(blk, state, hyper, 30 + it), blk.n_docs, 40 + it)
    tabs = {t.name: merge(t, [m.table_counts(blk, state, local)[t.name]]) for t in m.count_tables()}
    recount = np.zeros((V, K), np.int64)
    np.add.at(recount, (blk.words, state["z"]), 1)
    np.testing.assert_array_equal(tabs["nwk"], recount)
    c, t = tabs["network_tc"][1], tabs["network_tp"][1]
    assert np.all(t <= c) and np.all((c == 0) | (t > 0)) and (t < c).any()
    assert hyper["b_values"]["theta.b"] != 1.0         # (corpus.b: the driver's step, the engine case)
