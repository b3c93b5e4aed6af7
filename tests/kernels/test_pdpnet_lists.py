"""Documents with several values of a kept column (``list:NAME``, issue 28: an author list) as a parent index: a
document's vector has one parent per value (a multi-parent vector with a varying number of parents), its mixing
weights rho fixed uniform (``"weights": "uniform"``) or Dirichlet(gamma) integrated out; the grammar and its
refusals, the compiled parents, the increment terms against the joint's ratios and the sampler's stationary law
against the enumerated corrected joint (E12)."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_roots import ColumnValues, SharedRoots, shared_families
from inference.errors import UsageError
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_sampler import _chain_histogram, _chi_square, check_increment_ratios

AUTHOR_DP = {"nodes": {"author": {"index": ["list:authors"], "over": "topic", "dirichlet": 0.6},
                       "doc": {"index": ["document"], "over": "topic", "dp": {"b": 1.3}, "weights": "uniform",
                               "parents": [{"node": "author", "index": ["list:authors"]}]},
                       "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.8}},
             "topic": {"node": "doc", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}
#: the same with rho ~ Dirichlet(0.7, ..., 0.7) over the document's authors, integrated out
AUTHOR_MIX = {**AUTHOR_DP, "nodes": {**AUTHOR_DP["nodes"], "doc": {
    "index": ["document"], "over": "topic", "dp": {"b": 1.3},
    "parents": [{"node": "author", "index": ["list:authors"], "gamma": 0.7}]}}}


def _layout(docs, V, authors, size):
    layout = CorpusLayout.of(docs, V)
    ptr = np.r_[0, np.cumsum([len(a) for a in authors])].astype(np.int64)
    layout.columns = {"authors": (ptr, np.array([x for a in authors for x in a], np.int64), size)}
    return layout


def test_a_document_has_one_parent_per_author_with_uniform_or_dirichlet_weights():
    spec = parse_network(AUTHOR_DP)
    assert spec.columns == spec.lists == ["authors"]
    layout = _layout([[[0]], [[1]], [[0, 1]]], 2, [[2, 0], [1], [0, 1, 2]], 4)
    net = compile_network(spec, layout, 2)
    roots = np.flatnonzero(net.family == list(spec.order).index("author"))
    assert net.key[roots].tolist() == [0, 1, 2]                   # one vector per author the documents have
    docs = net.topic_inst[[0, 1, 2]]
    parents = [net.key[net.par_node[net.par_ptr[j]:net.par_ptr[j + 1]]].tolist() for j in docs]
    assert parents == [[2, 0], [1], [0, 1, 2]]
    assert [net.par_gamma[net.par_ptr[j]:net.par_ptr[j + 1]].tolist() for j in docs] == [[0.5, 0.5], [1.0],
                                                                                            [1 / 3] * 3]
    assert net.gamma_sum[docs].tolist() == [-1.0, 1.0, -1.0]       # fixed weights (one parent: rho = 1 anyway)
    mix = compile_network(parse_network(AUTHOR_MIX), layout, 2)
    assert mix.gamma_sum[docs].tolist() == pytest.approx([1.4, 0.7, 2.1])
    rows = SharedRoots(spec, shared_families(spec)[0], ColumnValues({"authors": ["a", "b", "c"]}, None, ["authors"]))
    assert rows.rows == 8 and [r for r, _ in rows.nodes(net)] == [0, 1, 2]      # 3 values + the unseen one


def test_list_columns_are_read_as_lists_and_unseen_authors_take_the_unseen_root(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "c").mkdir()
    pq.write_table(pa.table({"doc_id": ["d0", "d1", "d2"], "authors": ['["b", "a"]', "a; c; a", None]}),
                   tmp_path / "c" / "docs.parquet")
    values = ColumnValues.read(str(tmp_path / "c"), ["authors"], ["authors"])
    assert values.values == {"authors": ["", "a", "b", "c"]}       # no author: the missing value ""
    assert values.by_doc["authors"] == {"d0": (2, 1), "d1": (1, 3), "d2": (0,)}
    (tmp_path / "h").mkdir()
    pq.write_table(pa.table({"doc_id": ["h0"], "authors": [["a", "x", "y"]]}), tmp_path / "h" / "docs.parquet")
    layout = values.with_documents(str(tmp_path / "h")).layout(["h0", "d0", "gone"])
    ptr, codes, size = layout["authors"]
    assert ptr.tolist() == [0, 3, 5, 6] and codes.tolist() == [1, 4, 4, 2, 1, 4] and size == 5


def test_refusals_name_the_node():
    def bad(**doc):
        return {**AUTHOR_DP, "nodes": {**AUTHOR_DP["nodes"], "doc": {**AUTHOR_DP["nodes"]["doc"], **doc}}}

    with pytest.raises(UsageError, match="the topic draw: 'list:authors' holds several values per document"):
        parse_network({**AUTHOR_DP, "nodes": {"phi": AUTHOR_DP["nodes"]["phi"], "doc": {
            "index": ["list:authors"], "over": "topic", "dirichlet": 1.0}}, "topic": {"node": "doc",
                                                                                   "index": ["list:authors"]}})
    with pytest.raises(UsageError, match="node 'doc': 'weights' must be one of dirichlet, uniform"):
        parse_network(bad(weights="mean"))
    with pytest.raises(UsageError, match="node 'doc': 'weights': 'uniform' fixes rho: its parents take no gamma"):
        parse_network(bad(parents=[{"node": "author", "index": ["list:authors"], "gamma": 2.0}]))
    with pytest.raises(UsageError, match="node 'author': a dirichlet root has no parents"):
        parse_network({**AUTHOR_DP, "nodes": {**AUTHOR_DP["nodes"], "author": {
            **AUTHOR_DP["nodes"]["author"], "weights": "uniform"}}})
    with pytest.raises(UsageError, match="node 'doc': sampler 'cmgs' needs one parent per Pitman-Yor vector "
                                         r"\('list:authors' gives one per value\)"):
        parse_network({**AUTHOR_MIX, "sampler": "cmgs"})
    with pytest.raises(UsageError, match="column 'authors' is used both as 'list:authors' and 'column:authors'"):
        parse_network({**AUTHOR_DP, "nodes": {**AUTHOR_DP["nodes"], "top": {
            "index": ["column:authors"], "over": "topic", "dirichlet": 1.0}, "doc": {
            **AUTHOR_DP["nodes"]["doc"], "parents": [{"node": "author", "index": ["list:authors"]},
                                                     {"node": "top", "index": ["column:authors"]}]}}})
    with pytest.raises(UsageError, match="index 'list:authors': the corpus has no such kept column"):
        compile_network(parse_network(AUTHOR_DP), CorpusLayout.of([[[0]]], 2), 2)


@pytest.mark.parametrize("spec", [AUTHOR_DP, AUTHOR_MIX], ids=["uniform", "dirichlet"])
def test_increment_terms_are_ratios_of_the_joint(spec):
    """Every token's increment paths (one per author of its document, and up) against the table-indicator joint
    computed directly, rho fixed at 1/n (``prod rho^S``) or integrated out."""
    net = compile_network(parse_network(spec), _layout([[[0, 1, 1]], [[2, 0]], [[1]]], 3, [[0, 1], [1], [0, 2, 1]],
                                                       3), 2)
    assert check_increment_ratios(net, 2) > 100


@pytest.mark.parametrize("spec", [AUTHOR_DP, AUTHOR_MIX], ids=["uniform", "dirichlet"])
def test_stationary_distribution_with_author_lists_matches_enumeration(spec):
    """Three documents, two of them by two authors: 60,000 cycles of the sampler against the enumeration
    (chi-square p > 1e-3, total variation < 0.05)."""
    net = compile_network(parse_network(spec), _layout([[[0, 1]], [[1]], [[0]]], 2, [[0, 1], [1], [1, 0]], 2), 2)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    counts = _chain_histogram(net, 60000, 2, seed=7)
    assert set(counts) <= set(index)
    obs = np.zeros(len(states))
    for key, c in counts.items():
        obs[index[key]] = c
    tv, pval = _chi_square(states, obs)
    assert tv < 0.05 and pval > 1e-3, (len(states), tv, pval)
