"""Documents with several values of a kept column (``list:NAME``, issue 28: an author list) as a parent index: a
document's vector has one parent per value (a multi-parent vector with a varying number of parents), its mixing
weights rho fixed uniform (``"weights": "uniform"``) or Dirichlet(gamma) integrated out; the grammar and its
refusals, the compiled parents, the increment terms against the joint's ratios and the sampler's stationary law
against the enumerated corrected joint (E12)."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network.shared_roots import ColumnValues, SharedRoots, shared_families
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
#: the author-topic model: the document's vector a mixture node (b infinite) of its authors', rho fixed 1/n_d
AUTHOR_MIXTURE = {**AUTHOR_DP, "nodes": {**AUTHOR_DP["nodes"], "doc": {
    "index": ["document"], "over": "topic", "mixture": True, "weights": "uniform",
    "parents": [{"node": "author", "index": ["list:authors"]}]}}}


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


@pytest.mark.parametrize("spec", [AUTHOR_DP, AUTHOR_MIX, AUTHOR_MIXTURE], ids=["uniform", "dirichlet", "mixture"])
def test_increment_terms_are_ratios_of_the_joint(spec):
    """Every token's increment paths (one per author of its document, and up) against the table-indicator joint
    computed directly, rho fixed at 1/n (``prod rho^S``) or integrated out."""
    net = compile_network(parse_network(spec), _layout([[[0, 1, 1]], [[2, 0]], [[1]]], 3, [[0, 1], [1], [0, 2, 1]],
                                                       3), 2)
    assert check_increment_ratios(net, 2) > 100


@pytest.mark.parametrize("spec", [AUTHOR_DP, AUTHOR_MIX, AUTHOR_MIXTURE], ids=["uniform", "dirichlet", "mixture"])
def test_stationary_distribution_with_author_lists_matches_enumeration(spec):
    """Three documents, two of them by two authors: 60,000 cycles of the sampler against the enumeration
    (chi-square p > 1e-3, total variation < 0.05)."""
    net = compile_network(parse_network(spec), _layout([[[0, 1]], [[1]], [[0]]], 2, [[0, 1], [1], [1, 0]], 2), 2)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    counts = _chain_histogram(net, 60000, 2, seed=7)
    assert set(counts) <= set(index) and all(states[index[key]][2] > -np.inf for key in counts)
    obs = np.zeros(len(states))
    for key, c in counts.items():
        obs[index[key]] = c
    tv, pval = _chi_square(states, obs)
    assert tv < 0.05 and pval > 1e-3, (len(states), tv, pval)


def _author_topic_law(net, authors, alpha, beta):
    """Rosen-Zvi et al.'s author-topic model on the tokens of ``net``: every (z, x) (x: the token's author, uniform
    over its document's), theta_a ~ Dir(alpha), phi_k ~ Dir(beta) integrated out, summed to (z, s) with s the
    network's table counts per (document -> author edge, topic). Returns {(z, s): probability}."""
    import itertools
    import math

    from scipy.special import gammaln

    N, K, V = len(net.words), net.K, net.V
    doc = np.repeat(np.arange(len(authors)), np.bincount(net.topic_inst, minlength=net.num_nodes)[
        np.unique(net.topic_inst)])
    A = max(max(a) for a in authors) + 1

    def dirmult(counts, prior):
        return float(sum(gammaln(prior * counts.shape[1]) - gammaln(prior * counts.shape[1] + counts.sum(axis=1))
                         + (gammaln(prior + counts) - gammaln(prior)).sum(axis=1)))
    law = {}
    for z in itertools.product(range(K), repeat=N):
        for x in itertools.product(*(authors[doc[i]] for i in range(N))):
            nak, nkw, s = np.zeros((A, K)), np.zeros((K, V)), np.zeros(int(net.eoff[-1]), np.int64)
            for i, (k, a) in enumerate(zip(z, x)):
                nak[a, k] += 1
                nkw[k, net.words[i]] += 1
                j = net.topic_inst[i]
                e = next(e for e in range(net.par_ptr[j], net.par_ptr[j + 1]) if net.key[net.par_node[e]] == a)
                s[net.eoff[e] + k] += 1
            logp = dirmult(nak, alpha) + dirmult(nkw, beta) - sum(math.log(len(authors[doc[i]])) for i in range(N))
            key = (tuple(z), tuple(int(v) for v in s))
            law[key] = law.get(key, 0.0) + math.exp(logp)
    return law


@pytest.mark.parametrize("b,bound", [(None, 1e-12), (1e6, 1e-4), (1.0, None)])
def test_the_shipped_author_topic_network_is_the_author_topic_model(b, bound):
    """sample_data/networks/author-topic.json (its document node a mixture: b infinite) on three documents, two by
    two authors: the enumerated network law (E12) and Rosen-Zvi's author-topic model's law of (topics, the
    authors' topic counts per document) are equal (total variation under 1e-12: rounding). The same network with
    a DP of b = 1e6 in place of the mixture differs by under 1e-4 (measured 8e-8: the tables shared within a
    document, O(n_d / b)); at b = 1 by more than 0.05 (the document's own DP)."""
    import json
    from pathlib import Path

    raw = json.loads((Path(__file__).resolve().parents[2] / "sample_data/networks/author-topic.json").read_text())
    if b is not None:
        del raw["nodes"]["theta"]["mixture"]
        raw["nodes"]["theta"]["dp"] = {"b": b}
    authors = [[0, 1], [1], [1, 0]]
    net = compile_network(parse_network(raw), _layout([[[0, 1]], [[1]], [[0, 1]]], 2, authors, 2), 2)
    states = [st for st in enumerate_states(net) if st[2] > -np.inf]
    p_net = np.exp(np.array([lp for _, _, lp in states]) - max(lp for _, _, lp in states))
    p_net /= p_net.sum()
    law = _author_topic_law(net, authors, raw["nodes"]["author"]["dirichlet"], raw["nodes"]["phi"]["dirichlet"])
    total = sum(law.values())
    p_at = np.array([law.get((z, s), 0.0) / total for z, s, _ in states])
    assert set(law) <= {(z, s) for z, s, _ in states}
    tv = 0.5 * np.abs(p_net - p_at).sum()
    print(f"b={b}: {len(states)} states, total variation {tv:.2e}")
    assert (tv < bound) if bound is not None else (tv > 0.05), tv


def test_held_out_proportions_read_the_trained_author_roots(tmp_path):
    """A held-out document's topic row after sweeps with the topics fixed: the posterior mean (7.12) of its vector
    over its author's root reads the root's trained tables plus its own, not its own alone: a document by an author
    whose 300 trained tables are all on topic 2, of one word topic 2 hardly emits, still has most of its mass there
    (its own tables alone would give the root's prior and its one table: under 0.15)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivers.models.pdp_network.model import PdpNetwork
    from inference.gibbs.model import SegmentedBlock

    (tmp_path / "docs.parquet").mkdir()
    pq.write_table(pa.table({"doc_id": ["t0", "t1"], "authors": ["a; b", "b"]}),
                   tmp_path / "docs.parquet" / "p.parquet")
    (tmp_path / "spec.json").write_text(json.dumps(AUTHOR_DP))
    model = PdpNetwork(3, 4)
    model._corpus_dir = str(tmp_path)
    hyper = model.initial_hyper(network=str(tmp_path / "spec.json"))
    model._trained_tc = np.zeros((model._shared_roots().rows, 3), np.int64)
    model._trained_tc[0, 1], model._trained_tc[1, 2] = 200, 300       # authors a (topic 1), b (topic 2)
    block = SegmentedBlock.from_segments([("t0", [[0, 2]]), ("t1", [[3]])])
    phi_vk = np.array([[0.3, 0.3, 0.4], [0.3, 0.3, 0.3], [0.2, 0.2, 0.3 - 1e-6], [0.2, 0.2, 1e-6]])   # V x K
    nwk, nk = np.zeros((4, 3), np.int32), np.zeros(3, np.int64)
    state = model.init_state(block, hyper, nwk, nk, 1)
    for it in range(3):
        model.sweep(block, state, hyper, nwk, nk, 2 + it, frozen_phi=phi_vk)
    theta = model.doc_topic(block, state, hyper)
    assert state["z"][2] != 2 and theta[1, 2] > 0.5 and theta[0, 1] > 0.3, theta


def test_a_refresh_batch_grows_a_list_column_and_its_documents_are_kept(tmp_path):
    """A refresh batch's authors (ColumnValues.grown): new names appended sorted, the old documents' codes kept,
    a revised document's replaced; the version's network_document_columns.parquet reads back the same."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from types import SimpleNamespace

    kept = ColumnValues({"authors": ["a", "b"]}, {"authors": {"d0": (0, 1), "d1": (1,)}}, ["authors"])
    (tmp_path / "batch").mkdir()
    pq.write_table(pa.table({"doc_id": ["d1", "n0"], "authors": ["zed; a", '["c", "b"]']}),
                   tmp_path / "batch" / "docs.parquet")
    grown = kept.grown(str(tmp_path / "batch"))
    assert grown.values == {"authors": ["a", "b", "c", "zed"]} and grown.lists == ["authors"]
    assert grown.by_doc["authors"] == {"d0": (0, 1), "d1": (3, 0), "n0": (2, 1)}
    grown.save(str(tmp_path / "v"))
    grown.save_documents(str(tmp_path / "v"))
    again = ColumnValues.kept(SimpleNamespace(directory=str(tmp_path / "v"), meta={}))
    assert (again.values, again.by_doc, again.lists) == (grown.values, grown.by_doc, grown.lists)
