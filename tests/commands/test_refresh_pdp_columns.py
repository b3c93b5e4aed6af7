"""spark-topics refresh of a pdp-network indexed by a kept column (issue 28, 1; issue 30, 2): the chain continues,
the old documents keep their values, a batch's documents bring theirs (the input's column carried into the batch's
corpus) and values never seen get the next numbers, their roots new rows of ``network_tc``
(drivers/models/pdp_network/shared_roots.py); where the data are the same the continued chain is the uninterrupted one."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain
from drivers.models.pdp_network.shared_roots import ColumnValues, SharedRoots
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_store, publish
from inference.pdpnet.spec import parse_network
from test_refresh import run, texts
from test_refresh_cluster_authors import write_with_column
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_gibbs_steps import summed_state_tables

N, M = 2, 2
GROUP_HDP = {"name": "group-hdp",
             "nodes": {"group": {"index": ["column:group"], "over": "topic", "dirichlet": 0.5},
                       "theta": {"index": ["document"], "over": "topic", "dp": {"b": {"value": 1.0, "sample": True}},
                                 "parents": [{"node": "group", "index": ["column:group"]}]},
                       "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
             "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def _write(path, docs, groups):
    return write_with_column(path, docs, groups, "group")


@pytest.fixture(scope="module")
def base(spark_session, tmp_path_factory):
    """24 documents in groups g0-g2, prepared keeping the group; the network trained N iterations (read only)."""
    folder = tmp_path_factory.mktemp("pdp_columns")
    raw = _write(folder / "a.jsonl", texts(24, 1, "a"), [f"g{i % 3}" for i in range(24)])
    prepare_corpus(spark_session, raw, str(folder / "corpus"), min_df=1, max_df=1.0, language="none",
                   keep_columns=("group",), segments="paragraph")
    (folder / "spec.json").write_text(json.dumps(GROUP_HDP))
    train_gibbs(spark_session, "pdp-network", folder / "corpus", folder / "first", N, "--network", folder / "spec.json")
    return folder


def continued_and_whole(spark_session, base, tmp_path) -> tuple:
    """``base``'s first run continued M iterations with no new document, and a run of N+M iterations on the same
    corpus and spec: (the version, the whole run's folder), their chains' arrays asserted equal."""
    version, whole = str(tmp_path / "continued"), tmp_path / "whole"
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(base / "first")), None,
                  request, version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "pdp-network", base / "corpus", whole, N + M, "--network", base / "spec.json",
                "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    return version, whole, continued


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, base, tmp_path):
    """No new document: the version equals a run of N+M iterations (states, network_tc, b, topic_word)."""
    version, whole, _ = continued_and_whole(spark_session, base, tmp_path)
    assert np.array_equal(np.load(os.path.join(version, "topic_word.npy")), np.load(whole / "topic_word.npy"))
    assert np.array_equal(np.load(os.path.join(version, "network_tc.npy")), np.load(whole / "network_tc.npy"))
    assert model_store.read_meta(version)["hyper"] == model_store.read_meta(str(whole))["hyper"]
    assert ColumnValues.load(version).values == ColumnValues.load(str(whole)).values == {"group": ["g0", "g1", "g2"]}


def _kept_tables(version: str):
    """(the version's values, its chain's tables, the tables summed from its partitions' states)."""
    meta, kept_meta = model_store.read_meta(version), chain.read_chain_meta(version)
    model = make_model(registry.MODELS["pdp-network"], meta["topics"], meta["vocab_size"], registry)
    model.bind_hyper(kept_meta["hyper"])
    model._columns = ColumnValues.kept(model_store.load_model(version))
    t, partitions = meta["iterations"], meta["partitions"]
    return (model._columns, chain.load_chain_tables(version, model.count_tables(), t),
            summed_state_tables(model, chain.chain_dir(version), t, partitions))


def test_new_values_get_new_rows_and_the_old_documents_keep_theirs(spark_session, base, tmp_path):
    """A batch of 9 documents, of an old group and two new ones: the new values get the next numbers (sorted),
    network_tc gets their rows (the unseen value's row stays last and empty) and equals the summed states' tables;
    every document's value is kept in the version and a second refresh starts from it (a new value again)."""
    groups = ["g1", "new_b", "new_a"] * 3
    raw = _write(tmp_path / "b.jsonl", texts(9, 2, "b"), groups)
    root = tmp_path / "root"
    report = run(spark_session, "--model", root, "--base", base / "first", "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 9
    version = model_store.resolve(str(root))
    values, kept, counted = _kept_tables(version)
    assert values.values == {"group": ["g0", "g1", "g2", "new_a", "new_b"]} == ColumnValues.load(version).values
    assert len(values.by_doc["group"]) == 33 and values.by_doc["group"]["a004"] == 1
    assert [values.by_doc["group"][f"b{i:03d}"] for i in range(3)] == [1, 4, 3]
    for table, value in counted.items():
        assert np.array_equal(np.asarray(value.counts if hasattr(value, "counts") else value),
                              np.asarray(kept[table].counts if hasattr(kept[table], "counts") else kept[table])), table
    tc = kept["network_tc"]
    assert all(tc[v].sum() > 0 for v in range(5)) and not tc[5:].any()
    saved = np.load(os.path.join(version, "network_tc.npy"))
    assert saved.shape == tc.shape and not saved[5:].any()

    raw2 = _write(tmp_path / "c.jsonl", texts(4, 3, "c"), ["zed", "new_a", "zed", "g0"])
    report = run(spark_session, "--model", root, "--input", raw2, "--iterations", 1)
    assert report["documents"]["new"] == 4
    values, kept, counted = _kept_tables(model_store.resolve(str(root)))
    assert values.values["group"] == ["g0", "g1", "g2", "new_a", "new_b", "zed"] and len(values.by_doc["group"]) == 37
    assert values.by_doc["group"]["b001"] == 4 and values.by_doc["group"]["c000"] == 5
    assert np.array_equal(counted["network_tc"], kept["network_tc"]) and kept["network_tc"][5].sum() > 0
    assert not kept["network_tc"][6:].any()


def test_the_roots_rows_move_to_the_grown_layout():
    """Two column families (one indexed by two columns) and a corpus root: every old row moves to the row of the
    same values (the unseen value's to the new unseen value's) in the grown layout."""
    raw = {"name": "two", "nodes": {
        "top": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
        "ab": {"index": ["column:a", "column:b"], "over": "topic", "dirichlet": 1.0},
        "b": {"index": ["column:b"], "over": "topic", "dirichlet": 1.0},
        "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                  "parents": [{"node": "top", "index": ["corpus"]}, {"node": "ab", "index": ["column:a", "column:b"]},
                              {"node": "b", "index": ["column:b"]}]},
        "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.1}},
        "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}
    spec = parse_network(raw)
    families = ["top", "ab", "b"]
    old = SharedRoots(spec, families, ColumnValues({"a": ["x", "y"], "b": ["p"]}))
    new = SharedRoots(spec, families, ColumnValues({"a": ["x", "y", "z"], "b": ["p", "q"]}))
    moved = new.moved_rows(old, spec)
    assert old.base == [0, 1, 7] and new.base == [0, 1, 13]
    # old ab rows (a, b) flat a*2 + b over a in {x, y, unseen}, b in {p, unseen}; new flat a*3 + b
    assert moved.tolist() == [0, 1 + 0, 1 + 2, 1 + 3, 1 + 5, 1 + 9, 1 + 11, 13 + 0, 13 + 2]
