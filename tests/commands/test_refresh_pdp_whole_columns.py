"""spark-topics refresh of a network trained in whole-network mode whose spec indexes a node by a kept column (issue
30, 2; issue 28, 2: :mod:`drivers.models.pdp_network.whole_refresh`): documents DP over their author's vector
by[column:author]. Where the data are the same the continued chain is the uninterrupted one, bit for bit; a batch
by an old author and a new one: the old documents keep their values, the new author enters with the next code, its
vector is created and counted (tests/kernels/test_pdpnet_whole_refresh.py: the old vectors found again by value)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers import registry
from drivers.engines.gibbs import chain, state as gibbs_state
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain
from drivers.models.pdp_network.shared_roots import ColumnValues
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_store, publish
from inference.pdpnet.compile import compile_network
from jobs.evaluate import evaluate_model
from inference.pdpnet.sampler import rebuild_counts
from inference.pdpnet.spec import parse_network
from test_refresh import NEW_WORDS, run, texts
from test_refresh_cluster_authors import write_with_column
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_pdp_whole import SHARED_B

N, M = 2, 2
#: SHARED_B (theta and phi share b_shared: whole-network mode) with theta DP over its author's vector by[author]
BY_AUTHOR = json.loads(json.dumps(SHARED_B))
BY_AUTHOR["nodes"]["by"] = {"index": ["column:author"], "over": "topic", "dp": {"b": 2.0},
                            "parents": [{"node": "root", "index": ["corpus"]}]}
BY_AUTHOR["nodes"]["theta"]["parents"] = [{"node": "by", "index": ["column:author"]}]


@pytest.fixture(scope="module")
def base(spark_session, tmp_path_factory):
    """30 documents by p0-p2, prepared keeping the author; the spec's file; trained N iterations (read only)."""
    folder = tmp_path_factory.mktemp("whole_authors")
    raw = write_with_column(folder / "a.jsonl", texts(30, 1, "a"), [f"p{i % 3}" for i in range(30)], "author")
    prepare_corpus(spark_session, raw, str(folder / "corpus"), min_df=1, max_df=1.0, language="none",
                   keep_columns=("author",))
    (folder / "by-author.json").write_text(json.dumps(BY_AUTHOR))
    train_gibbs(spark_session, "pdp-network", folder / "corpus", folder / "first", N, "--network",
                folder / "by-author.json")
    assert model_store.read_meta(str(folder / "first"))["partitions"] == 1
    return folder


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, base, tmp_path):
    version, whole = str(tmp_path / "continued"), tmp_path / "whole"
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(base / "first")), None,
                  request, version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "pdp-network", base / "corpus", whole, N + M, "--network", base / "by-author.json",
                "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    assert np.array_equal(np.load(f"{version}/topic_word.npy"), np.load(whole / "topic_word.npy"))
    assert ColumnValues.load(version).values == {"author": ["p0", "p1", "p2"]}


def test_a_batch_by_an_old_and_a_new_author(spark_session, base, tmp_path):
    """6 documents by p1 and 6 by a new author: its code is the next one, the old documents keep theirs, the
    version's one partition holds every document, the network compiled on it has the new author's vector with
    the new documents' tables (and only theirs), and the kept tables are the state's counts."""
    raw = write_with_column(tmp_path / "b.jsonl", texts(12, 2, "b", extra=NEW_WORDS),
                            ["p1" if i < 6 else "new0" for i in range(12)], "author")
    root = tmp_path / "root"
    report = run(spark_session, "--model", root, "--base", base / "first", "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(root))
    meta = model_store.read_meta(version)
    kept = ColumnValues.kept(model_store.load_model(version))
    assert kept.values == {"author": ["p0", "p1", "p2", "new0"]} and len(kept.by_doc["author"]) == 42
    assert all(kept.by_doc["author"][f"a{i:03d}"] == i % 3 for i in range(30))
    assert [kept.by_doc["author"][f"b{i:03d}"] for i in range(12)] == [1] * 6 + [3] * 6
    model = make_model(registry.MODELS["pdp-network"], meta["topics"], meta["vocab_size"], registry)
    model.bind_hyper(chain.read_chain_meta(version)["hyper"])
    model._columns = kept
    block = gibbs_state.load_block(chain.chain_dir(version), 0)
    state = gibbs_state.read_state(chain.chain_dir(version), N + M, 0)
    net = compile_network(parse_network(model._raw), model.corpus_layout(block), model.num_topics)
    cnt = rebuild_counts(net, state["z"].astype(np.int64), state["s"])
    by = list(net.spec.order).index("by")
    new = int(np.flatnonzero((net.family == by) & (net.key == 3))[0])
    theta = [j for j in range(net.num_nodes) if net.par_ptr[j + 1] > net.par_ptr[j] and
             net.par_node[net.par_ptr[j]] == new]
    assert len(theta) == 6 and cnt["TC"][new] == sum(cnt["TP"][j] for j in theta) > 0
    p1 = int(np.flatnonzero((net.family == by) & (net.key == 1))[0])
    assert sum(net.par_node[net.par_ptr[j]] == p1 for j in range(net.num_nodes) if net.par_ptr[j + 1] >
               net.par_ptr[j]) == 10 + 6
    scored = evaluate_model(spark_session, version, f"{version}/corpus", seed=1)
    assert 1.0 < scored["perplexity"] < meta["vocab_size"], scored
    tables = chain.load_chain_tables(version, model.count_tables(), N + M)
    assert tables["nwk"].sum() == meta["data"]["tokens"] == len(state["z"])
    assert np.array_equal(np.bincount(block.words * model.num_topics + state["z"], minlength=tables["nwk"].size)
                          .reshape(tables["nwk"].shape), tables["nwk"])
