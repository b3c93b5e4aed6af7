"""``prepare --keep-columns``: input columns copied into docs.parquet as they are (refused in one line when the
input lacks one), and the author variant of cluster-lda (``train --author-column``) reading them."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from headless_browser import Browser, chromium
from prerequisites import require
from drivers.store.model_store import load_model
from drivers.preparation.corpus import prepare_corpus
from drivers.preparation.options import PrepareError
from jobs import train

WORDS = [["river", "boat", "water", "fish", "shore"], ["star", "moon", "night", "light", "sky"]]


@pytest.fixture(scope="module")
def corpus(spark_session, tmp_path_factory):
    """20 documents of two vocabularies; the first vocabulary's written by a and b, the second's by c and d."""
    root = tmp_path_factory.mktemp("keep")
    rng = np.random.default_rng(0)
    rows = []
    for d in range(20):
        group = d % 2
        text = " ".join(rng.choice(WORDS[group], 12).tolist())
        rows.append({"id": f"doc{d:02d}", "text": text, "authors": ["a", "b"] if group == 0 else ["c", "d"],
                     "year": 2000 + d})
    (root / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = root / "corpus"
    prepare_corpus(spark_session, str(root / "in.jsonl"), str(out), keep_columns=("authors", "year"), min_df=1,
                   max_df=1.0)
    return root, out, rows


def test_kept_columns_are_in_docs_parquet_as_given(corpus):
    """From JSON lines a kept column is its JSON text."""
    _, out, rows = corpus
    docs = pd.read_parquet(out / "docs.parquet").sort_values("doc_id")
    assert [json.loads(a) for a in docs["authors"]] == [r["authors"] for r in rows]
    assert docs["year"].tolist() == [str(r["year"]) for r in rows]
    assert {"term_ids", "counts", "n_tokens", "n_oov"} <= set(docs.columns)


def test_a_missing_or_reserved_column_is_refused_in_one_line(spark_session, corpus, tmp_path):
    root, _, _ = corpus
    with pytest.raises(PrepareError, match=r"'editor' not in .*--keep-columns"):
        prepare_corpus(spark_session, str(root / "in.jsonl"), str(tmp_path / "c"), keep_columns=("editor",))
    with pytest.raises(PrepareError, match="--keep-columns names input columns other than"):
        prepare_corpus(spark_session, str(root / "in.jsonl"), str(tmp_path / "c"), keep_columns=("n_tokens",))


def test_cluster_lda_reads_the_authors_of_a_kept_column(spark_session, corpus, tmp_path):
    """train --author-column: the authors' names beside the model, their counts per cluster, model.json."""
    _, out, _ = corpus
    model_dir = tmp_path / "model"
    meta = train.train(spark_session, train_args(out, model_dir, "--model", "cluster-lda", "--topics", 2,
                                                 "--iterations", 4, "--seed", 1, "--author-column", "authors"))
    assert meta["author_column"] == "authors" and meta["authors"] == 4
    assert json.loads((model_dir / "authors.json").read_text())["names"] == ["a", "b", "c", "d"]
    counts = np.load(model_dir / "cluster_authors.npy")
    assert counts.shape == (meta["clusters"], 4) and counts.sum() == 40      # 20 documents x 2 authors
    assert load_model(str(model_dir)).meta["authors"] == 4
    assert_carried(model_dir / "doc_topics.parquet", out)            # Spark's parts (with Hadoop's .crc files)
    with pytest.raises(Exception, match="has no column 'editors'"):
        train.train(spark_session, train_args(out, tmp_path / "m2", "--model", "cluster-lda", "--topics", 2,
                                               "--iterations", 2, "--author-column", "editors"))


def assert_carried(doc_topics, corpus_dir):
    """doc_topics holds the kept columns, each row its document's values (rows otherwise as written)."""
    docs = pd.read_parquet(corpus_dir / "docs.parquet").set_index("doc_id")
    table = pd.read_parquet(doc_topics)
    assert {"authors", "year"} <= set(table.columns) and len(table) == 20
    for _, row in table.iterrows():
        assert (row["authors"], row["year"]) == tuple(docs.loc[row["doc_id"], ["authors", "year"]])


def test_kept_columns_are_carried_into_doc_topics_by_train_and_infer(spark_session, corpus, tmp_path):
    """Issue 29, 3: train and infer of a corpus with kept columns write them into doc_topics.parquet beside each
    document's proportions (the model directory still checks whole: the columns are added before _SUCCESS)."""
    from jobs.infer import infer_documents

    _, out, _ = corpus
    model_dir = tmp_path / "lda"
    train.train(spark_session, train_args(out, model_dir, "--topics", 2, "--iterations", 2, "--seed", 1))
    assert_carried(model_dir / "doc_topics.parquet", out)
    assert load_model(str(model_dir)).num_topics == 2
    infer_documents(spark_session, str(model_dir), str(out), str(tmp_path / "inferred"))
    assert_carried(tmp_path / "inferred" / "doc_topics.parquet", out)
    assert load_model(str(model_dir)).meta["kept_columns"] == ["authors", "year"]

    # the browser page: each topic's share over each kept column (mean proportion of the documents of a value)
    from drivers.browse.build import build

    build(str(model_dir), str(tmp_path / "site"))
    table = pd.read_parquet(model_dir / "doc_topics.parquet")
    theta = np.stack(table["theta"].to_numpy())
    script = (tmp_path / "site" / "data" / "topics" / "0.js").read_text()
    record = json.loads(script[len("SPARK_TOPICS_TOPIC("):script.rindex(");")])
    by_year = record["metadata"]["year"]
    assert by_year["values"] == sorted(table["year"].unique()) and by_year["documents"] == [1] * 20
    for value, share in zip(by_year["values"], by_year["share"]):
        assert share == pytest.approx(theta[(table["year"] == value).to_numpy(), 0].mean(), abs=1e-5)
    by_authors = record["metadata"]["authors"]
    assert by_authors["documents"] == [10, 10] and len(by_authors["share"]) == 2
    require(chromium() is not None, "Debian's chromium (headless browser)")
    with Browser() as b:                                      # the page draws them
        b.open("file://" + str(tmp_path / "site" / "index.html") + "#topic-0")
        b.wait_for("document.querySelectorAll('#topic-0 h3[data-metadata=\"year\"] + svg.flow rect').length == 20")
        b.pump(0.2)
        assert b.errors() == []
