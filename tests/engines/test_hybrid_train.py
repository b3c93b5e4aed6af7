"""Hybrid variational-MCMC LDA on Spark (train --inference hybrid): recovery of known topics, determinism across
masters and partitionings, resume, polylingual and informed-prior models in hybrid mode."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import HYBRID, HYBRID_SYNTHETIC, hellinger_matched, train_args
from drivers.store.model_store import load_model
from jobs import train


@pytest.fixture(scope="module")
def hybrid_model(spark_session, synthetic_lda, tmp_path_factory):
    """The hybrid model on ``synthetic_lda``, trained once per run: the determinism test runs on the worker of the
    local[1] application, the others wherever their module goes (tests/shared_runs.py)."""
    from shared_runs import made_once, run_folder

    corpus, beta = synthetic_lda
    out = run_folder(tmp_path_factory) / "hybrid_synthetic"
    with made_once(out) as make:
        if make:
            train.train(spark_session, train_args(corpus, out, *HYBRID_SYNTHETIC))
    return out, json.loads((out / "model.json").read_text()), beta


def test_hybrid_recovers_known_topics(hybrid_model):
    out, meta, beta = hybrid_model
    model = load_model(str(out))
    assert hellinger_matched(model.topic_word(), beta).max() < 0.12
    assert np.all((model.alpha > 0.1) & (model.alpha < 0.35)), model.alpha     # towards the generating 0.2
    trace = [r["elbo"] for r in meta["elbo_trace"]]                           # the sampled log joint
    assert trace[-1] > trace[0] and meta["settings"]["inference"] == "hybrid"
    theta = np.stack(__import__("pandas").read_parquet(out / "doc_topics.parquet")["theta"])
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)


def test_hybrid_is_deterministic_across_masters_partitions_and_resume(spark_session, synthetic_lda, hybrid_model,
                                                                      local1_models, tmp_path):
    corpus, _ = synthetic_lda
    out, _, _ = hybrid_model
    common = list(HYBRID_SYNTHETIC)
    reference = np.load(out / "lambda.npy")
    # local[1] in another Spark application (shared with the conformance suite): the same model bit for bit
    np.testing.assert_array_equal(np.load(local1_models / "hybrid" / "lambda.npy"), reference)
    # three partitions: every document is sampled as before (seeds follow documents); only the order of sums differs
    train.train(spark_session, train_args(corpus, tmp_path / "p3", *common, "--partitions", 3))
    np.testing.assert_allclose(np.load(tmp_path / "p3" / "lambda.npy"), reference, rtol=1e-9)
    # stopped after 8 iterations and resumed: the uninterrupted model
    half = [str(c) for c in common]
    half[half.index("--iterations") + 1] = "8"
    train.train(spark_session, train_args(corpus, tmp_path / "resumed", *half, "--keep-checkpoint"))
    train.train(spark_session, train_args(corpus, tmp_path / "resumed", *common, "--resume"))
    np.testing.assert_array_equal(np.load(tmp_path / "resumed" / "lambda.npy"), reference)
    meta = json.loads((tmp_path / "resumed" / "model.json").read_text())
    assert len(meta["elbo_trace"]) == 15


def test_hybrid_polylingual_and_informed_prior(spark_session, tmp_path):
    from tiny_corpora import tiny_aligned, tiny_segmented

    aligned = tiny_aligned(tmp_path / "aligned")
    meta = train.train(spark_session, train_args(aligned, tmp_path / "poly", "--model", "polylda", "--topics", 3,
                                                 "--iterations", 4, "--tol", 0, *HYBRID))
    model = load_model(str(tmp_path / "poly"))
    assert model.languages == ["en", "es"] and meta["settings"]["inference"] == "hybrid"
    np.testing.assert_allclose(model.topic_word().sum(axis=1), 2.0)          # a distribution per language
    segmented = tiny_segmented(tmp_path / "mono")
    (tmp_path / "prior.txt").write_text("seeded: w0001 w0002\n")
    meta = train.train(spark_session, train_args(segmented, tmp_path / "seeded", "--topics", 3, "--iterations", 4,
                                                 "--tol", 0, "--prior", tmp_path / "prior.txt", *HYBRID,
                                                 "--hybrid-weights", "digamma"))
    assert meta["topic_names"][0] == "seeded" and meta["settings"]["hybrid_weights"] == "digamma"
