"""The README's main path on real text: prepare sample_data, train LDA, read the topics back."""
from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import train_args
from jobs import model_store, train
from jobs.prepare import prepare_corpus

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(REPO, "sample_data", "web_chapters.jsonl.gz")


@pytest.fixture(scope="module")
def sample_corpus(spark_session, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sample") / "corpus")
    meta = prepare_corpus(spark_session, SAMPLE, out)
    return out, meta


@pytest.fixture(scope="module")
def sample_model(spark_session, sample_corpus, tmp_path_factory):
    corpus, _ = sample_corpus
    out = tmp_path_factory.mktemp("sample_model") / "model"
    meta = train.train_lda(spark_session, train_args(corpus, out, "--topics", 12, "--iterations", 15,
                                                     "--tol", 0, "--seed", 1, "--optimize-eta"))
    return out, meta


def test_elbo_non_decreasing_on_real_text(sample_model):
    _, meta = sample_model
    elbo = np.array([r["elbo"] for r in meta["elbo_trace"]])
    assert len(elbo) == 15 and np.all(np.isfinite(elbo))
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:])), np.diff(elbo)
    assert elbo[-1] > elbo[0]
    assert meta["eta"] != pytest.approx(1.0 / 12)   # eta was learnt


def test_topics_are_distinct_words_of_the_corpus(sample_model, sample_corpus, capsys):
    out, _ = sample_model
    model = model_store.load_model(str(out))
    tops = model.top_words(10)
    assert len(tops) == 12
    first_words = {words[0][0] for words in tops}
    assert len(first_words) >= 8, tops          # topics are not all the same
    from jobs import topics
    import argparse
    parser = argparse.ArgumentParser()
    topics.add_arguments(parser)
    text = topics.run(parser.parse_args(["--model-dir", str(out), "-n", "5"]))
    assert text.count("\n") == 11 and tops[0][0][0] in text
