"""A topic-side vector shared by documents indexed by previous_word on the Gibbs engine (issue 28, session 24):
theta[previous_word] draws every token's topic (the token's previous word the shared vector's index, as a kept
column's value is a document's), a Dirichlet root (its V + 1 rows of ``network_tc``, the start context last:
:mod:`drivers.models.pdp_network.shared_roots`) or a DP over a corpus-level root (owned tables,
:mod:`inference.pdpnet.owned`). One engine partition, the shared rows refreshed after every sweep (a
synchronisation), visits the (z, s) of a tiny network with the frequencies of its enumerated joint (E12); two
partitions through the engine's hooks keep the rows the recount; refresh moves them to a grown
vocabulary (session 25)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models.pdp_network import shared_pyp
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import merge
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network

PHI = {"index": ["topic"], "over": "word", "dirichlet": 0.5}


def transition_spec(law: str) -> dict:
    """theta[previous_word] (a Dirichlet root, or a DP over a corpus-level Dirichlet root) draws the topics;
    phi[topic] Dirichlet."""
    theta = {"index": ["previous_word"], "over": "topic", "dirichlet": 0.6} if law == "dirichlet" else \
        {"index": ["previous_word"], "over": "topic", "dp": {"b": 1.2}, "parents": [{"node": "top",
                                                                                   "index": ["corpus"]}]}
    nodes = {"theta": theta, "phi": PHI}
    if law == "dp":
        nodes = {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.7}, **nodes}
    return {"name": f"transition-{law}", "nodes": nodes, "topic": {"node": "theta", "index": ["previous_word"]},
            "word": {"node": "phi", "index": ["topic"]}}


def _model(tmp_path, spec: dict, K: int, V: int):
    from drivers.models.pdp_network.model import PdpNetwork

    (tmp_path / "spec.json").write_text(json.dumps(spec))
    model = PdpNetwork(K, V)
    return model, model.initial_hyper(network=str(tmp_path / "spec.json"))


def _summed(model, blocks, states) -> dict:
    parts = [model.table_counts(b, st, np.unique(b.words, return_inverse=True)) for b, st in zip(blocks, states)]
    return {t.name: merge(t, [p[t.name] for p in parts]) for t in model.count_tables()}


@pytest.mark.parametrize("law", ["dirichlet", "dp"])
def test_one_engine_partition_samples_the_networks_joint(tmp_path, law):
    """5 tokens, V = K = 2 (theta[0], theta[1] and the start's theta[2]): 8,000 sweeps (6,000 with the DP), chi-square
    p > 1e-3, total variation < 0.06; the theta rows of ``network_tc`` are the (previous word, topic) counts."""
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    docs = [("d0", [[0, 1]]), ("d1", [[1, 0]]), ("d2", [[1]])]
    spec = transition_spec(law)
    model, hyper = _model(tmp_path, spec, 2, 2)
    assert hyper["global_families"] == (["theta"] if law == "dirichlet" else ["top", "theta"])
    block = SegmentedBlock.from_segments(docs)
    state = model.initial_state(block, hyper, 3)
    tables = _summed(model, [block], [state])
    derived = model.derive(tables)
    net = compile_network(parse_network(spec), CorpusLayout.of([d for _, d in docs], 2), 2)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    topic = model._compiled(block, hyper)
    rows = model._shared_roots().nodes(topic)
    assert sorted(r for r, _ in rows) == ([0, 1, 2] if law == "dirichlet" else [0, 1, 2, 3])    # (top: row 0)
    obs = np.zeros(len(states))
    for it in range(8000 if law == "dirichlet" else 6000):
        model.sweep_tables(block, state, hyper, tables, derived, 500 + it)
        cnt = model._local_counts(topic, block, state)
        keys, counts = shared_pyp.customers(topic, cnt, rows)
        tables["network_tc"][keys] = counts
        if law == "dp":
            keys, counts = shared_pyp.own_rows(topic, cnt, rows)
            tables["network_tp"][keys] = counts
        tables["nwk"][:] = _summed(model, [block], [state])["nwk"]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in state["s"]))]] += 1
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3 and len(states) >= 32, (len(states), tv, pval)
    prev = np.array([2, 0, 2, 1, 2])
    want = np.zeros((3, 2), np.int64)
    np.add.at(want, (prev, state["z"]), 1)
    first = 0 if law == "dirichlet" else 1                         # (theta's rows after top's)
    np.testing.assert_array_equal(_summed(model, [block], [state])["network_tc"][first:first + 3], want)


def test_two_partitions_keep_the_rows_the_recount_and_refresh_moves_them(tmp_path):
    """The DP over a corpus root, K = 3, V = 9, 16 documents in two partitions through the engine's hooks for 5
    iterations: theta's rows of ``network_tc`` (its customers: every partition's tokens by previous word and
    topic) are the recount, t <= c at every row, top's customers theta's tables, z moves. Refresh (session 25)
    with the vocabulary grown to 11: an old word's rows stay, the start row moves from 1 + 9 to 1 + 11, the new
    words' rows are zero, and the grown model's recount of the same states is the moved tables (what the
    continued chain reads)."""
    from tests.kernels.test_pdpnet_owned_chain import two_partitions

    rng = np.random.default_rng(3)
    docs = [(f"d{i:02d}", [list(rng.integers(0, 9, rng.integers(2, 10)))]) for i in range(16)]
    model, hyper = _model(tmp_path, transition_spec("dp"), 3, 9)
    last = {}

    def check(new, blocks, states):
        last.update(blocks=blocks, states=states)
        want = np.zeros((10, 3), np.int64)
        for blk, st in zip(blocks, states):
            words, ptr = blk.words, blk.token_ptr()
            prev = np.full(len(words), 9)
            for d in range(blk.n_docs):
                prev[ptr[d] + 1:ptr[d + 1]] = words[ptr[d]:ptr[d + 1] - 1]
            np.add.at(want, (prev, st["z"]), 1)
        c, t = new["network_tc"][1:11], new["network_tp"][1:11]     # (rows: top, then theta[0..9])
        np.testing.assert_array_equal(c, want)
        assert np.all(t <= c) and np.array_equal(new["network_tc"][0], t.sum(axis=0))     # (t = 0 < c: the race)
        return (t < c).any()
    hyper, new = two_partitions(model, hyper, docs, 5, check)
    grown, _ = _model(tmp_path, transition_spec("dp"), 3, 11)
    grown.bind_hyper(hyper)
    grown._old_roots = model._shared_roots()          # (continued_chain's, from the kept model)
    moved, _ = grown.grown_chain(new, hyper, 9)
    recount = _summed(grown, last["blocks"], last["states"])
    for name in ("network_tc", "network_tp"):
        old, got = np.asarray(new[name]), np.asarray(moved[name])
        np.testing.assert_array_equal(got[:10], old[:10])            # top, theta[0..8]
        assert not got[10:12].any() and old[10].any()                # the new words 9, 10
        np.testing.assert_array_equal(got[12], old[10])              # the start context
        assert not got[13:].any()
        np.testing.assert_array_equal(got, recount[name])


def test_the_proportions_of_token_ranges():
    """transition_rows: (n_rk + m_rk) / (N_r + 1) by hand, an empty range uniform, rows summing to 1."""
    from drivers.models.pdp_network.model import transition_rows

    means = np.array([[0.5, 0.5], [0.2, 0.8], [1.0, 0.0], [0.4, 0.6]])
    got = transition_rows([0, 3, 3, 4], [0, 1, 1, 0], means)
    want = np.array([[(1 + 1.7 / 3) / 4, (2 + 1.3 / 3) / 4], [0.5, 0.5], [(1 + 0.4) / 2, 0.6 / 2]])
    np.testing.assert_allclose(got, want)


def test_a_documents_proportions_are_its_counts_with_its_tokens_predictive(tmp_path):
    """The Dirichlet theta[previous_word] (alpha 0.6), K = 2, V = 3, one partition after 5 synchronised sweeps:
    doc_topic is (n_dk + m_dk) / (N_d + 1), m_d the mean over the document's tokens of (c_{w'k} + 0.6) / (C_w' +
    1.2) read from the recount of (previous word, topic); segment_topic the same per segment (one each here);
    two documents with the same words in another order get other rows (before session 25 every document's row
    was theta[start]'s)."""
    docs = [("d0", [[0, 1, 2, 2]]), ("d1", [[2, 2, 1, 0]]), ("d2", [[1, 0]]), ("d3", [[0, 0, 1]])]
    model, hyper = _model(tmp_path, transition_spec("dirichlet"), 2, 3)
    block = SegmentedBlock.from_segments(docs)
    state = model.initial_state(block, hyper, 3)
    for it in range(5):
        tables = _summed(model, [block], [state])
        model.sweep_tables(block, state, hyper, tables, model.derive(tables), 40 + it)
    prev = np.array([3, 0, 1, 2, 3, 2, 2, 1, 3, 1, 3, 0, 0])
    c = np.zeros((4, 2))
    np.add.at(c, (prev, state["z"]), 1.0)
    mean_of = (c + 0.6) / (c.sum(axis=1, keepdims=True) + 1.2)
    ptr = block.token_ptr()
    want = np.zeros((4, 2))
    for d in range(4):
        n = np.bincount(state["z"][ptr[d]:ptr[d + 1]], minlength=2)
        want[d] = (n + mean_of[prev[ptr[d]:ptr[d + 1]]].mean(axis=0)) / (ptr[d + 1] - ptr[d] + 1)
    got = model.doc_topic(block, state, hyper)
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(model.segment_topic(block, state, hyper), want)
    assert np.abs(got - got[0]).max() > 0.05


def test_the_dp_networks_proportions_sum_to_one(tmp_path):
    """theta[previous_word] DP over a corpus root, two partitions' worth of tables through the engine's hooks: every
    row of doc_topic sums to 1 (the shared vectors' rows a sweep left carry their parent edges' S with their
    tables, so rho sums to 1: with the own S beside the global T it did not, 0.998 on Spark)."""
    from tests.kernels.test_pdpnet_owned_chain import two_partitions

    rng = np.random.default_rng(5)
    docs = [(f"d{i:02d}", [list(rng.integers(0, 6, rng.integers(2, 9)))]) for i in range(12)]
    model, hyper = _model(tmp_path, transition_spec("dp"), 3, 6)
    last = {}

    def check(new, blocks, states):
        last.update(blocks=blocks, states=states)
        return (np.asarray(new["network_tp"]) < np.asarray(new["network_tc"])).any()
    hyper, _ = two_partitions(model, hyper, docs, 4, check)
    for blk, st in zip(last["blocks"], last["states"]):
        np.testing.assert_allclose(model.doc_topic(blk, st, hyper).sum(axis=1), 1.0)
