"""A word side indexed by [topic, column:A, column:B] on the Gibbs engine (issue 28, session 25): phi[topic, c, e] a
Pitman-Yor family over phi0[topic], a Dirichlet root per topic, is the bigram side's keyed machinery with the
tuple of a document's values as the context (its code the flat index c |E| + e, :func:`drivers.models.
pdp_network.words_bigram.context_codes`; the keyed tables grow with the (context, word, topic) triples seen, not
with the product of the columns' sizes). One engine partition against the network's enumerated joint, the held-out
factors, the keys' move at refresh, the refusal over a Pitman-Yor phi0."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from inference.errors import UsageError
from inference.gibbs.tables import KeyedCounts
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network

DOCS = [("d0", [[0, 1, 0]]), ("d1", [[0, 1]]), ("d2", [[1]])]
VALUES = {"c": ["x", "y", "x"], "e": ["u", "u", "v"]}      # contexts (x, u), (y, u), (x, v): codes 0, 3, 1


def two_column_spec(phi0=None) -> dict:
    """phi[topic, column:c, column:e] PYP over phi0[topic] (a Dirichlet root per topic unless ``phi0``)."""
    return {"name": "two-columns",
            "nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                      "phi0": phi0 or {"index": ["topic"], "over": "word", "dirichlet": 0.4},
                      "phi": {"index": ["topic", "column:c", "column:e"], "over": "word",
                              "pyp": {"a": 0.3, "b": 1.5}, "parents": [{"node": "phi0", "index": ["topic"]}]}},
            "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic", "column:c", "column:e"]}}


def _model(tmp_path, spec, K, V):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivers.models.pdp_network.model import PdpNetwork

    (tmp_path / "docs.parquet").mkdir()
    pq.write_table(pa.table({"doc_id": [d for d, _ in DOCS], **VALUES}), tmp_path / "docs.parquet" / "p.parquet")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    model = PdpNetwork(K, V)
    model._corpus_dir = str(tmp_path)
    return model, model.initial_hyper(network=str(tmp_path / "spec.json"))


def test_one_engine_partition_samples_the_networks_joint(tmp_path):
    """K = V = 2, three documents with three (c, e) contexts: 20,000 sweeps of one engine partition visit the
    network's (z, t) with the frequencies of its enumerated joint (E12; chi-square p > 1e-3, total variation
    < 0.06); the keyed tables are the recount, every context's held-out factors (an unseen pair's too) a
    distribution over the words."""
    from drivers.models.pdp_network import words_bigram
    from inference.gibbs.block import SegmentedBlock
    from inference.gibbs.tables import merge
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    spec = two_column_spec()
    model, hyper = _model(tmp_path, spec, 2, 2)
    assert hyper["word_pyp"]["context"] == ["c", "e"] and words_bigram.is_bigram(hyper)
    assert [t.rows for t in model.count_tables() if t.name == words_bigram.CUSTOMERS] == [9 * 2 * 2]
    block = SegmentedBlock.from_segments(DOCS)
    state = model.initial_state(block, hyper, 3)
    parts = model.table_counts(block, state, np.unique(block.words, return_inverse=True))
    tables = {t.name: merge(t, [parts[t.name]]) for t in model.count_tables()}
    derived = model.derive(tables)
    layout = dataclasses.replace(CorpusLayout.of([d for _, d in DOCS], 2),
                                 columns={"c": (np.array([0, 1, 0]), 3), "e": (np.array([0, 0, 1]), 3)})
    net = compile_network(parse_network(spec), layout, 2)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    pairs, uidx = model._local_pairs(block)
    keys = [0, 1, 0, 6, 7, 3]                      # g V + w, g = c 3 + e
    assert list(pairs) == sorted(set(keys)) and list(pairs[uidx]) == keys
    obs = np.zeros(len(states))
    for it in range(20000):
        model.sweep_tables(block, state, hyper, tables, derived, 1000 + it)
        s = np.zeros(int(net.eoff[-1]), np.int64)
        for i, (u, w) in enumerate(zip(uidx, block.words)):
            for k in range(2):
                s[net.eoff[net.par_ptr[net.word_inst[i, k]]] + w] = state["word_t"][u, k]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in s))]] += 1
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3 and len(states) > 64, (len(states), tv, pval)
    parts = model.table_counts(block, state, np.unique(block.words, return_inverse=True))
    new = {t.name: merge(t, [parts[t.name]]) for t in model.count_tables()}
    der = model.derive(new)
    assert int(der["bigram_n"].sum()) == block.n_tokens and np.all(der["bigram_t"] <= der["bigram_n"])
    model.bind_result(type("Result", (), {"tables": new, "hyper": hyper})())
    for doc in ("d0", "d1", "d2", "unseen"):     # (x, u), (y, u), (x, v) and (unseen, unseen)
        one = SegmentedBlock.from_segments([(doc, [[0, 1]])])
        np.testing.assert_allclose(model.frozen_rows(one, hyper).sum(axis=0), 1.0, rtol=1e-12)


def test_the_context_codes_move_at_refresh():
    """Codes over (c, e) of sizes (3, 3) -> (4, 5): a kept value keeps its number, each column's unseen value stays
    its last; the keyed tables' keys follow (the vocabulary grown 2 -> 3 too)."""
    from drivers.models.pdp_network.shared_roots import flat_moved
    from drivers.models.pdp_network.words_bigram import rekeyed

    old = np.arange(9)
    want = [c * 5 + e for c in (0, 1, 3) for e in (0, 1, 4)]
    np.testing.assert_array_equal(flat_moved(old, [3, 3], [4, 5]), want)
    cells = [(3, 1, 0), (1, 0, 1), (7, 1, 1)]       # (g, w, k) with V0 = 2, K = 2
    keys = np.array(sorted((g * 2 + w) * 2 + k for g, w, k in cells))
    table = KeyedCounts(keys, np.arange(1, 4, dtype=np.int32)[:, None])
    moved = rekeyed(table, 2, 3, 2, False, lambda g: flat_moved(g, [3, 3], [4, 5]))
    got = sorted((int(key) // 6, int(key) // 2 % 3, int(key) % 2) for key in moved.keys)
    assert got == sorted((want[g], w, k) for g, w, k in cells) and np.all(np.diff(moved.keys) > 0)


def test_over_a_pitman_yor_phi0_is_refused_in_one_line(tmp_path):
    phi0 = {"index": ["topic"], "over": "word", "pyp": {"a": 0.2, "b": 2.0},
            "parents": [{"node": "base", "index": ["corpus"]}]}
    spec = two_column_spec(phi0)
    spec["nodes"]["base"] = {"index": ["corpus"], "over": "word", "uniform": True}
    with pytest.raises(UsageError, match="node 'phi': a word side indexed by \\[topic\\] and several columns"):
        _model(tmp_path, spec, 2, 2)
