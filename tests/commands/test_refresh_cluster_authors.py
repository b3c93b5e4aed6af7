"""spark-topics refresh of cluster-lda's author variant (--author-column, Wallach 5.4; issue 30, item 2): the chain
continues, the old documents keep their authors, a batch's documents bring theirs (the input's column carried into
the batch's corpus) and authors never seen before enter with the next ids (drivers/models/cluster_lda/
authors.py); the batch's kept columns are read with its rows (in process, or with Spark under --master) and carried
into the version's doc_topics as train carries them."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import recounted_tables, refresh_chain
from drivers.models.cluster_lda.authors import kept_authors
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_store, publish
from test_refresh import NEW_WORDS, run, texts
from test_refresh_gibbs import chain_arrays, train_gibbs

N, M = 2, 2


def write_with_column(path, docs, values, column="authors"):
    """JSON lines of ``docs`` ((id, text) pairs), each with its value of ``column``."""
    with open(path, "w") as f:
        for (doc_id, text), value in zip(docs, values):
            f.write(json.dumps({"id": doc_id, "text": text, column: value}) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def base(spark_session, tmp_path_factory):
    """30 documents with two authors each (p0-p3, q0-q2), prepared keeping the authors; cluster-lda
    --author-column trained N iterations (read only)."""
    folder = tmp_path_factory.mktemp("cluster_authors")
    docs = texts(30, 1, "a")
    raw = write_with_column(folder / "a.jsonl", docs, [[f"p{i % 4}", f"q{i % 3}"] for i in range(30)])
    prepare_corpus(spark_session, raw, str(folder / "corpus"), min_df=1, max_df=1.0, language="none",
                   keep_columns=("authors",))
    train_gibbs(spark_session, "cluster-lda", folder / "corpus", folder / "first", N, "--author-column", "authors")
    return folder


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, base, tmp_path):
    """No new document: the version equals a run of N+M iterations (states, tables with the author columns,
    hyperparameters, topic_word), the authors as trained."""
    version, whole = str(tmp_path / "continued"), tmp_path / "whole"
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["cluster-lda"], model_store.load_model(str(base / "first")), None,
                  request, version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "cluster-lda", base / "corpus", whole, N + M, "--author-column", "authors",
                "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    assert np.array_equal(np.load(os.path.join(version, "topic_word.npy")), np.load(whole / "topic_word.npy"))
    assert model_store.read_meta(version)["hyper"] == model_store.read_meta(str(whole))["hyper"]
    names = [json.load(open(os.path.join(d, "authors.json")))["names"] for d in (version, whole)]
    assert names[0] == names[1] == ["p0", "p1", "p2", "p3", "q0", "q1", "q2"]


def test_new_documents_bring_their_authors_and_new_authors_enter(spark_session, base, tmp_path):
    """12 new documents by an old author and two new ones: the new authors get the next ids, every document's
    authors are kept in the version (the old ones' as trained), the clusters' rows grow by the new authors'
    columns and the tables are the states' counts under those authors (the new authors' tokens counted once per
    document). A second refresh starts from the version's own document_authors."""
    batch = texts(12, 2, "b", extra=NEW_WORDS)
    raw = write_with_column(tmp_path / "b.jsonl", batch, [["p1", f"new{i % 2}"] for i in range(12)])
    root = tmp_path / "root"
    report = run(spark_session, "--model", root, "--base", base / "first", "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(root))
    authors = kept_authors(model_store.load_model(version))
    assert authors.names == ["p0", "p1", "p2", "p3", "q0", "q1", "q2", "new0", "new1"]
    assert len(authors.by_doc) == 42
    assert [authors.names[a] for a in authors.by_doc["a004"]] == ["p0", "q1"]
    assert [authors.names[a] for a in authors.by_doc["b003"]] == ["p1", "new1"]
    doc_topics = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))      # the kept column, as train's
    assert len(doc_topics) == 12 and json.loads(doc_topics.set_index("doc_id").authors["b003"]) == ["p1", "new1"]
    meta = model_store.read_meta(version)
    P, Q = meta["chain"]["old_partitions"], meta["chain"]["new_partitions"]
    spec = registry.MODELS["cluster-lda"]
    model = make_model(spec, meta["topics"], meta["vocab_size"], registry, path=meta.get("path"),
                       author_column="authors")
    model.set_authors(authors)
    kept = chain.load_chain_tables(version, model.count_tables(), N + M)
    counted = recounted_tables(model, chain.chain_dir(version), N + M, P + Q)
    assert counted["clusters"].equals(kept["clusters"]) and np.array_equal(counted["nwk"], kept["nwk"])
    T = meta["topics"]
    assert kept["clusters"].counts.shape[1] == 1 + T + 9
    assert kept["clusters"].counts[:, 1 + T + 7:].sum(axis=0).tolist() == [6, 6]      # new0, new1: 6 documents each
    # the second brings 6 new documents and revises b003 (another text, other authors): its old copy leaves the
    # chain, with its tokens and its share of its cluster's documents, topics and authors (issue 30, item 2)
    second = texts(6, 3, "c") + [("b003", texts(1, 4, "r")[0][1])]
    raw2 = write_with_column(tmp_path / "c.jsonl", second, [["new0", "zed"] for _ in range(6)] + [["q0", "zed"]])
    report = run(spark_session, "--model", root, "--input", raw2, "--iterations", 1, "--master", "local[2]")
    assert (report["documents"]["new"], report["documents"]["revision"]) == (6, 1)
    version = model_store.resolve(str(root))
    again = kept_authors(model_store.load_model(version))
    assert again.names == authors.names + ["zed"] and len(again.by_doc) == 48
    assert [again.names[a] for a in again.by_doc["b003"]] == ["q0", "zed"]      # read by Spark (--master)
    doc_topics = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))
    assert len(doc_topics) == 7 and json.loads(doc_topics.set_index("doc_id").authors["b003"]) == ["q0", "zed"]
    meta = model_store.read_meta(version)
    partitions, t = meta["partitions"], meta["iterations"]
    model = make_model(spec, T, meta["vocab_size"], registry, path=meta.get("path"), author_column="authors")
    model.set_authors(again)
    kept = chain.load_chain_tables(version, model.count_tables(), t)
    counted = recounted_tables(model, chain.chain_dir(version), t, partitions)
    assert counted["clusters"].equals(kept["clusters"]) and np.array_equal(counted["nwk"], kept["nwk"])
    arrays = chain_arrays(version)
    ids = np.concatenate([arrays[f"blocks/part-{p:05d}.npz:doc_ids"] for p in range(partitions)])
    assert len(ids) == len(set(ids)) == 48 == kept["clusters"].counts[:, 0].sum() == meta["refresh"]["documents"]
    assert kept["nwk"].sum() == sum(len(arrays[f"blocks/part-{p:05d}.npz:words"]) for p in range(partitions))
