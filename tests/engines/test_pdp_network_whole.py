"""pdp-network's whole-network mode (issue 28, 2): specs the split engine refuses (on the word side: a concentration
shared by the documents' vectors and the word side, also with burst vectors per (topic, document) below it; on the
topic side: more corpus-level topic families than the engine's rows) train on one partition that is the in-process
sampler draw for draw (z, s, the sampled discounts and concentrations), the word side's keyed table published only
where the held-out path reads it, a run interrupted and resumed is the uninterrupted chain, the same seed gives the
same model, and a spec the split engine runs still runs split."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.engines.gibbs.settings import SampleSchedule
from drivers.models.pdp_network import whole_heldout, whole_words
from drivers.models.pdp_network.whole_network import (WHOLE, NetworkModel, check_memory, split_refusal, spec_of,
                                                       state_bytes)
from engine_runs import Interrupted, assert_same_runs, fit_and_recount
from inference.errors import RefusedError
from inference.gibbs.block import task_seed
from inference.gibbs.model import SegmentedBlock
from inference.pdpnet.sampler import NetworkSampler
from inference.pdpnet.spec import parse_network

V, K, ITERATIONS, SEED = 12, 3, 6, 7
#: the word side refused: theta and phi share the concentration b_shared
WORD = {"name": "shared-b", "parameters": {"b_shared": {"value": 5.0, "sample": True}},
        "nodes": {"root": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
                  "theta": {"index": ["document"], "over": "topic", "dp": {"b": "b_shared"},
                            "parents": [{"node": "root", "index": ["corpus"]}]},
                  "base": {"index": ["corpus"], "over": "word", "uniform": True},
                  "phi": {"index": ["topic"], "over": "word", "parents": [{"node": "base", "index": ["corpus"]}],
                          "pyp": {"a": {"value": 0.3, "sample": True}, "b": "b_shared"}}},
        "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def deep_spec() -> dict:
    """The topic side refused: documents DP over a chain of eight corpus-level Pitman-Yor vectors over a root (nine
    shared families, the engine's network_tc has eight), under cmgs."""
    nodes, parent = {"base": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0}}, "base"
    for i in range(1, 9):
        nodes[f"c{i}"] = {"index": ["corpus"], "over": "topic", "parents": [{"node": parent, "index": ["corpus"]}],
                          "pyp": {"a": {"value": 0.2, "sample": i % 4 == 0}, "b": 3.0}}
        parent = f"c{i}"
    nodes["theta"] = {"index": ["document"], "over": "topic", "dp": {"b": {"value": 1.0, "sample": True}},
                      "parents": [{"node": parent, "index": ["corpus"]}]}
    nodes["phi"] = {"index": ["topic"], "over": "word", "dirichlet": 0.1}
    return {"name": "deep", "sampler": "cmgs", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic"]}}


#: the word side's spec with burst vectors per (topic, document) over phi (the held-out path reads the whole_words
#: table: whole_words.needs_predictive), refused as WORD is
BURST = dict(WORD, nodes=dict(WORD["nodes"], burst={"index": ["topic", "document"], "over": "word",
                                                   "pyp": {"a": 0.3, "b": 1.5},
                                                   "parents": [{"node": "phi", "index": ["topic"]}]}),
             word={"node": "burst", "index": ["topic", "document"]})
SPECS = {"word": WORD, "topic": deep_spec(), "burst": BURST}
REFUSALS = {"word": "node 'theta' shares a discount or concentration with the word side's 'phi' (not on the Gibbs",
            "topic": "node 'c8': more than 8 shared topic families (base, c1, c2, c3, c4, c5, c6, c7, c8; the split",
            "burst": "node 'theta' shares a discount or concentration with the word side's 'phi' (not on the Gibbs"}


def test_the_split_engine_refuses_both_specs_and_runs_stm_split():
    for which, spec in SPECS.items():
        assert REFUSALS[which] in split_refusal(parse_network(spec))
        assert NetworkModel.corpus_partitions({"network": spec}) == 1
    assert split_refusal(spec_of({"network": "stm"})) is None
    assert NetworkModel.corpus_partitions({"network": "hdp-pyp-lda"}) is None


@pytest.fixture(scope="module")
def one_block(spark_session):
    rng = np.random.default_rng(4)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V, rng.integers(3, 9))) for _ in range(rng.integers(1, 4))])
            for i in range(24)]
    block = SegmentedBlock.from_segments(docs)
    rdd = spark_session.sparkContext.parallelize([(0, block)], 1).cache()
    yield block, rdd
    rdd.unpersist()


def _fit(spark_session, rdd, directory, path, resume=False, stop_after=None, sync="jobs"):
    model = NetworkModel(K, V)
    return fit_and_recount(spark_session, model, rdd, 1, directory, SampleSchedule.resolve(ITERATIONS, 4, 1, 1),
                           SEED, sync, model.initial_hyper(network=path), resume, stop_after)


@pytest.mark.parametrize("which", ["word", "topic", "burst"])
def test_one_partition_is_the_in_process_sampler_draw_for_draw_and_resumes(spark_session, one_block, tmp_path,
                                                                          caplog, which):
    block, rdd = one_block
    path = tmp_path / f"{which}.json"
    path.write_text(json.dumps(SPECS[which]))
    with caplog.at_level("WARNING", logger="spark_topics.train"):
        result, recount = _fit(spark_session, rdd, tmp_path / "run", str(path))
    assert any(REFUSALS[which] in r.message and "runs on one partition (whole-network mode" in r.message
               for r in caplog.records)
    assert result.hyper[WHOLE].startswith("network spec: ")
    (_, item), = result.states.collect()
    model = NetworkModel(K, V)
    model.initial_hyper(network=str(path))
    net = model.whole_net(block, result.hyper["network"])
    sampler = NetworkSampler(net, seed=task_seed(SEED, 0, 0))     # the engine's seed of the initialisation
    for t in range(1, ITERATIONS + 1):
        sampler.sweep()
        sampler.sample_hyper()
        if t == 5:          # the run's one sample: its topics are the word side's posterior means then
            topics = model.topics_of(net, {k: getattr(sampler, k) for k in ("n", "tc", "tp", "Nn", "TC", "TP", "Se")},
                                     sampler.avals, sampler.bvals)
    state = item["state"]
    np.testing.assert_array_equal(state["z"], sampler.z)
    np.testing.assert_array_equal(state["s"], sampler.s)
    assert [result.hyper["a_values"][n] for n in net.a_names] == list(sampler.avals)
    assert [result.hyper["b_values"][n] for n in net.b_names if np.isfinite(sampler.bvals[net.b_names.index(n)])] \
        == [b for b in sampler.bvals if np.isfinite(b)]
    assert any(sampler.avals != net.a_values) and any(sampler.bvals != net.b_values)      # they moved
    sampler.check()
    # the tables the engine summed are the final state's
    counts = {"n": sampler.n, "tc": sampler.tc, "tp": sampler.tp}
    for name, (keys, rows) in whole_heldout.shared_contribution(net, counts, sampler.s).items():
        table = result.tables[name]
        live = rows.any(axis=1)
        np.testing.assert_array_equal(table.keys, keys[live][np.argsort(keys[live])])
        np.testing.assert_array_equal(table.counts, rows[live][np.argsort(keys[live])])
        assert table.equals(recount[name])
    # the word side's keyed table only where the held-out path reads it (burst vectors: not the posterior means)
    assert (whole_words.TABLE in result.tables) == (which == "burst") == whole_words.needs_predictive(net.spec)
    if which == "burst":
        keys, rows = whole_words.contribution(net, counts, sampler.s)
        np.testing.assert_array_equal(result.tables[whole_words.TABLE].keys, np.sort(keys))
        np.testing.assert_array_equal(result.tables[whole_words.TABLE].counts, rows[np.argsort(keys)])
        assert result.tables[whole_words.TABLE].equals(recount[whole_words.TABLE])
    np.testing.assert_allclose(result.topic_word, topics, rtol=1e-12)
    # an interrupted run resumed (the resident sampler) is the uninterrupted chain; the same seed, the same model
    with pytest.raises(Interrupted):
        _fit(spark_session, rdd, tmp_path / "cut", str(path), stop_after=3)
    assert_same_runs((result, recount), _fit(spark_session, rdd, tmp_path / "cut", str(path), resume=True,
                                             sync="resident"))


def test_a_spec_the_split_engine_runs_is_unchanged(spark_session, one_block, tmp_path):
    """hdp-pyp-lda.json through the registry's model is the split model's chain (no whole-network mode)."""
    from drivers.models.pdp_network.model import PdpNetwork

    _, rdd = one_block
    runs = []
    for cls in (NetworkModel, PdpNetwork):
        model = cls(K, V)
        runs.append(fit_and_recount(spark_session, model, rdd, 1, tmp_path / cls.__name__,
                                    SampleSchedule.resolve(3, 2, 1, 1), SEED, "jobs",
                                    model.initial_hyper(network="hdp-pyp-lda")))
    assert WHOLE not in runs[0][0].hyper and "network_tp" in runs[0][0].tables
    assert_same_runs(*runs)


def test_a_state_one_task_cannot_hold_is_refused_up_front(spark_session):
    spec = parse_network(WORD)
    small, large = (state_bytes(spec, 20, V, 1000, 1000, 50_000, {}) for V in (1_000, 10_000_000))
    assert large - small > 2 * 8 * 20 * (10_000_000 - 1_000) * 4      # V cells per word vector: n, tc, tp, s
    check_memory(small)
    with pytest.raises(RefusedError, match="whole-network mode: its one partition needs about .* of Python memory"):
        check_memory(1 << 60)


def test_the_in_process_histograms_keep_more_than_eight_parameters_apart(one_block):
    """The deep spec has nine discounts and nine concentrations (the engine's histogram keys hold eight: theta.a,
    the ninth, would read as a vector's T of c1.a): the in-process step's keys (radix nine) decode to what went in."""
    from inference.pdpnet import engine_stats
    from inference.pdpnet.compile import KIND_PYP

    block, _ = one_block
    model = NetworkModel(K, V)
    model._raw = SPECS["topic"]
    net = model.whole_net(block, SPECS["topic"])
    sampler = NetworkSampler(net, seed=3)
    assert len(net.a_names) == len(net.b_names) == 9
    counts = {k: getattr(sampler, k) for k in ("n", "tc", "tp", "Nn", "TC", "TP")}
    keys, _ = engine_stats.histogram_contribution(net, counts, None, 9)
    part, p, q, x, _ = engine_stats.decode(keys, 9)
    assert set(part) == {0, 1}
    live = np.flatnonzero((net.kind == KIND_PYP) & (sampler.Nn + sampler.TC > 0))
    assert set(zip(p[part == 1], q[part == 1], x[part == 1])) == set(zip(net.a_of[live], net.b_of[live],
                                                                          sampler.TP[live]))
    assert 8 in set(p[part == 0])                     # theta.a's cells, apart from the vectors' T
    part, p, q, x, _ = engine_stats.decode(engine_stats.histogram_contribution(net, counts)[0])   # radix eight:
    assert set(zip(p[part == 1], q[part == 1], x[part == 1])) != set(zip(net.a_of[live], net.b_of[live],  # theta's
                                                                          sampler.TP[live]))    # cells read as T's


def test_held_out_documents_start_from_the_trained_shared_vectors(one_block):
    """A test block's network (the topics frozen: no word side) finds the shared vectors by (family, key): its state
    starts with their trained customers, tables and parent edges' s, its own documents empty."""
    from inference.gibbs.tables import CountTable, merge

    block, _ = one_block
    model = NetworkModel(K, V)
    model._raw = SPECS["topic"]
    net = model.whole_net(block, SPECS["topic"])
    sampler = NetworkSampler(net, seed=3)
    for _ in range(3):
        sampler.sweep()
    contribution = whole_heldout.shared_contribution(net, {"n": sampler.n, "tc": sampler.tc, "tp": sampler.tp},
                                                     sampler.s)
    model._trained_whole = whole_heldout.trained_of_tables({name: merge(CountTable(name, whole_heldout.ROWS, K,
                                                                                   "keyed"), [contribution[name]])
                                                             for name in contribution})
    rng = np.random.default_rng(9)
    test = SegmentedBlock.from_segments([(f"t{i}", [list(rng.integers(0, V, 5))]) for i in range(4)])
    held = model._compiled(test, {"network": SPECS["topic"]})
    s, extra, idx, c_tr, t_tr = whole_heldout.trained_start(model._trained_whole, held)
    shared = np.flatnonzero(whole_heldout.shared_nodes(net))
    assert len(idx) == len(shared) == 9
    np.testing.assert_array_equal(c_tr, (sampler.n + sampler.tc)[net.off[shared][:, None] + np.arange(K)])
    np.testing.assert_array_equal(t_tr, sampler.tp[net.off[shared][:, None] + np.arange(K)])
    cnt = whole_heldout.counts(held, {"z": np.zeros(0, np.int32), "s": s, whole_heldout.HELD: extra})
    np.testing.assert_array_equal((cnt["n"] + cnt["tc"])[idx], c_tr)
    np.testing.assert_array_equal(cnt["tp"][idx], t_tr)
    own = np.setdiff1d(np.arange(held.num_nodes), np.flatnonzero(whole_heldout.shared_nodes(held)))
    assert len(own) == 4 and not (cnt["Nn"] + cnt["TC"])[own].any()     # the test documents' vectors: empty
