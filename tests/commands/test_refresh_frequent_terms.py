"""The words ``prepare`` cut from the base corpus as too frequent (df > --max-df) stay out of every refresh (issue
30): the model carries them (``frequent_terms.parquet``) and a refresh's vocabulary growth never admits them, in
the batch read in this process and by Spark jobs, from the base and from a version (which carries the list)."""
from __future__ import annotations

import os
from types import SimpleNamespace

import pandas as pd
import pyarrow.parquet as pq

from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.triage import grown_words
from drivers.store import model_root
from jobs import train
from test_refresh import run, texts, write_batch

FREQUENT = ["bpo", "patch"]      # in every document of the base and of the batches


def with_words(docs, words):
    return [(doc_id, f"{text} {' '.join(words)}") for doc_id, text in docs]


def test_the_words_the_base_cut_as_too_frequent_never_enter_a_refreshed_vocabulary(spark_session, tmp_path):
    raw = write_batch(tmp_path / "b0.jsonl", with_words(texts(30, 1, "a"), FREQUENT))
    corpus = prepare_corpus(spark_session, raw, str(tmp_path / "c0"), min_df=1, max_df=0.5, language="none")
    cut = pq.read_table(tmp_path / "c0" / "frequent_terms.parquet").to_pandas()
    assert set(FREQUENT) <= set(cut["term"]) and corpus["frequent_terms"]["terms"] == len(cut)
    assert (cut.loc[cut["term"].isin(FREQUENT), "df"] == 30).all()
    train.train(spark_session, train.parse_request(["--corpus", tmp_path / "c0", "--output", tmp_path / "m0",
                                                    "--topics", 3, "--iterations", 2, "--seed", 3]))
    assert pd.read_parquet(tmp_path / "m0" / "frequent_terms.parquet")["term"].tolist() == cut["term"].tolist()

    root = tmp_path / "root"
    for n, (prefix, new) in enumerate((("b", "zozor"), ("c", "zovez")), start=1):
        # the batch: the frequent words and a new word in every document; the second refresh starts from version 1
        batch = write_batch(tmp_path / f"{prefix}.jsonl", with_words(texts(12, n + 1, prefix), FREQUENT + [new]))
        report = run(spark_session, "--model", root, *(["--base", tmp_path / "m0"] if n == 1 else []),
                     "--input", batch, "--iterations", 1, "--min-new-df", 2)
        version = model_root.version_dir(str(root), report["version"])
        vocab = set(pd.read_parquet(os.path.join(version, "vocab.parquet"))["term"])
        pending = set(pd.read_parquet(os.path.join(version, "pending_terms.parquet"))["term"])
        assert new in vocab and new in report["vocabulary"]["new_terms"]
        assert not (set(cut["term"]) & (vocab | pending | set(report["vocabulary"]["new_terms"]))), n
        assert os.path.exists(os.path.join(version, "frequent_terms.parquet"))      # carried to the next refresh

    # a batch counted by Spark jobs (a large one; an aligned corpus' languages): the same words left out
    rows = spark_session.createDataFrame(with_words(texts(6, 4, "d"), FREQUENT + ["zovez"]), "doc_id string, text string")
    request = SimpleNamespace(min_new_df=2, max_new_terms=10)
    added, pending = grown_words(spark_session, rows, [], {"language": "none"}, None, request, cut["term"].tolist())
    assert "zovez" in set(added["term"]) and not set(cut["term"]) & (set(added["term"]) | set(pending["term"]))
