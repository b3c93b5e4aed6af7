"""Vectors indexed by a kept column (``column:NAME``, issue 28, 1): the grammar, the compiled instances (documents
with the same value share one vector), the refusals, and the sampler's stationary law on a tiny network with a
column-indexed root against the enumerated corrected joint (E12)."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network.shared_roots import ColumnValues, SharedRoots, shared_families
from inference.errors import UsageError
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_sampler import _chain_histogram, _chi_square

AUTHOR_HDP = {"nodes": {"auth": {"index": ["column:author"], "over": "topic", "dirichlet": 0.6},
                        "doc": {"index": ["document"], "over": "topic", "dp": {"b": 1.3},
                                "parents": [{"node": "auth", "index": ["column:author"]}]},
                        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.8}},
              "topic": {"node": "doc", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def _layout(docs, V, authors, size):
    layout = CorpusLayout.of(docs, V)
    layout.columns = {"author": (np.asarray(authors, np.int64), size)}
    return layout


def test_documents_with_the_same_value_share_one_vector():
    spec = parse_network(AUTHOR_HDP)
    assert spec.columns == ["author"]
    net = compile_network(spec, _layout([[[0]], [[1]], [[0, 1]], [[1]]], 2, [2, 0, 2, 1], 3), 2)
    auth = list(spec.order).index("auth")
    roots = np.flatnonzero(net.family == auth)
    assert net.key[roots].tolist() == [0, 1, 2]            # the values the documents have, numbered
    parent_of_doc = net.par_node[net.par_ptr[net.topic_inst[[0, 1, 2, 4]]]]
    assert net.key[parent_of_doc].tolist() == [2, 0, 2, 1]
    rows = SharedRoots(spec, shared_families(spec)[0], ColumnValues({"author": ["a", "b"]}))
    assert rows.rows == 8 and [r for r, _ in rows.nodes(net)] == [0, 1, 2]     # 2 values + the unseen one


def test_refusals_name_the_index():
    with pytest.raises(UsageError, match="unknown index 'column:' "):
        parse_network(dict(AUTHOR_HDP, nodes=dict(AUTHOR_HDP["nodes"], auth=dict(AUTHOR_HDP["nodes"]["auth"],
                                                                                index=["column:"]))))
    with pytest.raises(UsageError, match="index 'column:author': the corpus has no such kept column"):
        compile_network(parse_network(AUTHOR_HDP), CorpusLayout.of([[[0]]], 2), 2)
    with pytest.raises(UsageError, match="column 'author' needs one value in 0..1 per document"):
        compile_network(parse_network(AUTHOR_HDP), _layout([[[0]], [[1]]], 2, [0, 2], 2), 2)
    shared_pyp = {**AUTHOR_HDP, "nodes": {**AUTHOR_HDP["nodes"], "auth": {
        "index": ["column:author"], "over": "topic", "dp": {"b": 1.0},
        "parents": [{"node": "top", "index": ["corpus"]}]},
        "top": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0}}}
    assert shared_families(parse_network(shared_pyp)) == (["top", "auth"], [])   # a shared DP: on the engine too


def test_stationary_distribution_with_a_column_root_matches_enumeration():
    """Three documents, two of one author: 60,000 cycles of the sampler against the enumeration (chi-square p >
    1e-3, total variation < 0.05)."""
    net = compile_network(parse_network(AUTHOR_HDP), _layout([[[0, 1]], [[1]], [[0]]], 2, [0, 0, 1], 2), 2)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    counts = _chain_histogram(net, 60000, 2, seed=5)
    assert set(counts) <= set(index)
    obs = np.zeros(len(states))
    for key, c in counts.items():
        obs[index[key]] = c
    tv, pval = _chi_square(states, obs)
    assert tv < 0.05 and pval > 1e-3, (len(states), tv, pval)
