"""``spark-topics infer``: the E-step with a trained model on prepared corpora and on raw text."""
from __future__ import annotations

import argparse
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import sample_lda_corpus, train_args, write_corpus
from drivers.preparation.corpus import prepare_corpus
from drivers.preparation.text import load_stopwords
from drivers.store import publish
from drivers.store.model_store import load_model
from inference.errors import UsageError
from jobs import infer, train
from jobs.spark import add_spark_arguments

#: letters-only words (the default tokenizer drops digits), none of them an English stop word
WORDS = [w for w in ("".join(p) for p in itertools.product("bdgkmt", "aeiou", "lnrs"))
         if w not in set(load_stopwords("english"))][:60]


def write_jsonl(path, docs):
    with open(path, "w") as f:
        for doc_id, text in docs:
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    return str(path)


def as_text(bag) -> str:
    return " ".join(WORDS[t] for t, c in sorted(bag.items()) for _ in range(c))


@pytest.fixture(scope="module")
def raw_model(spark_session, tmp_path_factory):
    """A K=3 model trained on raw text prepared with min_token_length=3. Made once per run, by whichever
    pytest-xdist worker needs it first (tests/shared_runs.py); tests read it and write elsewhere."""
    from shared_runs import made_once, run_folder

    root = run_folder(tmp_path_factory) / "infer_raw_model"
    docs, _ = sample_lda_corpus(n_docs=300, n_topics=3, vocab_size=len(WORDS), doc_length=40,
                                alpha=0.2, eta=0.05, seed=3)
    corpus_dir, model_dir = str(root / "corpus"), str(root / "model")
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)         # a make that failed half-way
            root.mkdir()
            raw = write_jsonl(root / "train.jsonl", [(d, as_text(bag)) for d, bag in docs])
            prepare_corpus(spark_session, raw, corpus_dir, min_df=1, max_df=1.0, min_token_length=3)
            train.train(spark_session, train_args(corpus_dir, model_dir, "--topics", 3, "--iterations", 15,
                                                  "--tol", 0))
    return model_dir, corpus_dir, docs, root


def infer_args(*argv):
    parser = argparse.ArgumentParser()
    infer.add_arguments(parser)
    add_spark_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def read_topics(path) -> pd.DataFrame:
    return pd.read_parquet(path).set_index("doc_id").sort_index()


def test_infer_on_training_documents_reproduces_training_theta(spark_session, raw_model, tmp_path):
    model_dir, corpus_dir, docs, _ = raw_model
    result = infer.infer_documents(spark_session, model_dir, corpus_dir, str(tmp_path / "out"))
    assert result["documents"] == len(docs) and result["no_known_words"] == 0 and result["unknown_tokens"] == 0
    ours = read_topics(tmp_path / "out" / "doc_topics.parquet")
    trained = read_topics(f"{model_dir}/doc_topics.parquet")
    assert list(ours.index) == list(trained.index)
    difference = np.abs(np.stack(ours["theta"]) - np.stack(trained["theta"]))
    assert difference.mean() < 0.01 and difference.max() < 0.1, (difference.mean(), difference.max())
    np.testing.assert_allclose(np.stack(ours["theta"]).sum(1), 1.0)
    assert (ours["n_tokens"] == 40).all() and not ours["no_known_words"].any()


def test_infer_raw_text_counts_unknown_words(spark_session, raw_model, tmp_path, capsys):
    model_dir, _, docs, root = raw_model
    first_id, first_bag = docs[0]
    raw = write_jsonl(tmp_path / "new.jsonl", [
        ("copy", as_text(first_bag)),                                   # a training document, as text
        ("mixed", as_text(first_bag) + " zyzzyva quux zyzzyva zq"),     # 3 unknown tokens; "zq" is too short
        ("strange", "zyzzyva quux"),                                    # no known word
        ("stop", "the and of"),                                         # only stop words
    ])
    out = tmp_path / "out"
    result = infer.run(infer_args("--model", model_dir, "--input", raw, "--output", out))
    printed = capsys.readouterr().out
    assert "unknown tokens (not in the model's vocabulary, ignored): 3" in printed
    assert "documents with no known words" in printed and result["no_known_words"] == 2
    assert (out / "corpus" / "corpus.json").exists()

    topics = read_topics(out / "doc_topics.parquet")
    assert sorted(topics.index) == ["copy", "mixed", "stop", "strange"]
    assert topics.loc["mixed", "n_unknown"] == 3 and topics.loc["copy", "n_unknown"] == 0
    assert topics.loc["mixed", "n_tokens"] == topics.loc["copy", "n_tokens"] == 40
    np.testing.assert_allclose(topics.loc["mixed", "theta"], topics.loc["copy", "theta"])
    alpha = load_model(model_dir).alpha
    for doc in ("strange", "stop"):
        assert topics.loc[doc, "no_known_words"] and topics.loc[doc, "n_tokens"] == 0
        np.testing.assert_allclose(topics.loc[doc, "theta"], alpha / alpha.sum())
        np.testing.assert_allclose(topics.loc[doc, "gamma"], alpha)
    assert not topics.loc["copy", "no_known_words"]
    # the raw copy of a training document gets the theta of that document in the prepared corpus
    prepared = infer.infer_documents(spark_session, model_dir, f"{root}/corpus", str(tmp_path / "prepared"))
    assert prepared["documents"] == len(docs)
    np.testing.assert_allclose(topics.loc["copy", "theta"],
                               read_topics(tmp_path / "prepared" / "doc_topics.parquet").loc[first_id, "theta"])


def test_raw_text_is_read_as_the_training_corpus_was_wherever_the_model_is(raw_model, tmp_path, monkeypatch):
    """The tokenizer (min_token_length 3 here) and stop words travel in the model directory: a model whose
    model.json names a training corpus that is not there (a relative path, another working directory) reads raw
    text as it was trained, not with prepare's defaults."""
    model_dir, _, docs, _ = raw_model
    moved = tmp_path / "moved"
    shutil.copytree(model_dir, moved)
    meta = json.loads((moved / "model.json").read_text())
    meta["data"]["corpus"] = "corpus"                      # relative: read against whatever the cwd is
    (moved / "model.json").write_text(json.dumps(meta))
    publish.write_marker(str(moved), publish.new_token())  # published so (a model moved and edited by its owner)
    monkeypatch.chdir(tmp_path)
    raw = write_jsonl(tmp_path / "new.jsonl", [("mixed", as_text(docs[0][1]) + " zyzzyva quux zyzzyva zq"),
                                               ("stop", "the and of")])
    infer.run(infer_args("--model", moved, "--input", raw, "--output", tmp_path / "out"))
    topics = read_topics(tmp_path / "out" / "doc_topics.parquet")
    assert topics.loc["mixed", "n_unknown"] == 3 and topics.loc["mixed", "n_tokens"] == 40   # "zq" is too short
    assert topics.loc["stop", "no_known_words"]
    tokenizer = json.loads((moved / "tokenizer.json").read_text())[""]
    assert tokenizer["min_token_length"] == 3 and "the" in (moved / tokenizer["stopwords_file"]).read_text().split()


def test_infer_rejects_a_corpus_with_another_vocabulary(spark_session, raw_model, tmp_path):
    model_dir, _, _, _ = raw_model
    other = write_corpus(spark_session, str(tmp_path / "other"), [("a", {0: 1, 2: 3})], WORDS[::-1])
    with pytest.raises(UsageError, match="does not share the vocabulary.*--vocab"):
        infer.infer_documents(spark_session, model_dir, other, str(tmp_path / "out"))


def test_a_model_whose_tokenizer_names_a_file_outside_it_is_refused(raw_model, tmp_path):
    """tokenizer.json's stopwords_file through ``..`` (its _SUCCESS written again, as whoever hands the model over
    would) made infer read that file as its stop words; now one line, nothing read or written."""
    model_dir, _, docs, _ = raw_model
    moved = tmp_path / "moved"
    shutil.copytree(model_dir, moved)
    (tmp_path / "secret.txt").write_text("SECRET\n")
    tokenizer = json.loads((moved / "tokenizer.json").read_text())
    tokenizer[""]["stopwords_file"] = "../secret.txt"
    (moved / "tokenizer.json").write_text(json.dumps(tokenizer))
    publish.write_marker(str(moved), publish.new_token())
    raw = write_jsonl(tmp_path / "new.jsonl", [("a", as_text(docs[0][1]))])
    with pytest.raises(ValueError, match=r"stopwords_file '../secret.txt' is not a path inside it: refused"):
        infer.run(infer_args("--model", moved, "--input", raw, "--output", tmp_path / "out"))
    assert not (tmp_path / "out" / "corpus" / "stopwords.txt").exists()


def test_an_output_that_is_a_model_a_root_or_a_corpus_is_refused(spark_session, raw_model, tmp_path):
    """Issue: infer --output pointed at the model directory replaced its doc_topics.parquet (exit 0), and every
    job then refused the model as damaged. The model, a root and a corpus are refused before anything is
    written; a folder holding an earlier infer output is still a valid output."""
    from drivers.families import InferRequest

    model_dir, corpus_dir, _, _ = raw_model
    before = {p.name: p.stat().st_mtime_ns for p in Path(model_dir).iterdir()}
    root = tmp_path / "root"
    (root / "versions").mkdir(parents=True)
    for output, what in ((model_dir, "a model directory"), (root, "a model root"), (corpus_dir, "a prepared corpus")):
        with pytest.raises(UsageError, match=f"--output {output} is {what}"):
            infer.infer(spark_session, InferRequest(model_dir, corpus_dir, str(output)))
    assert {p.name: p.stat().st_mtime_ns for p in Path(model_dir).iterdir()} == before
    assert load_model(model_dir) is not None
    infer.refuse_output_that_holds_data(str(tmp_path / "fresh"))
