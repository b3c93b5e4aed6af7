"""``--alpha-theta fit`` of ``train``/``refresh --vocabulary infinite`` on Spark (issue 30, session 27): alpha^theta
learned online and saved, kept by a refresh, the same for any number of partitions; ``fixed`` (the default) is
the model of before."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from drivers.models.infvoc import commands as infinite
from drivers.models.infvoc.model import InfVocModel
from drivers.preparation.corpus import prepare_corpus
from jobs import refresh as refresh_job, train as train_job
from tests.models.test_infvoc_model import COOKING, SPORT, parse, write_docs

COMMON = ["release", "fixed", "update", "version"]


def shared_and_themed(rng, prefix: str, n: int) -> list:
    """Documents of a theme (sport or cooking) that all also use a few common words."""
    return [(f"{prefix}{i:04d}", list(rng.choice(SPORT if i % 2 == 0 else COOKING, 10)) + list(rng.choice(COMMON, 8)))
            for i in range(n)]


@pytest.fixture(scope="module")
def common_corpus(spark_session, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("alpha_theta")
    raw = write_docs(str(tmp / "base.jsonl.gz"), shared_and_themed(np.random.default_rng(0), "a", 80))
    corpus = str(tmp / "corpus")
    prepare_corpus(spark_session, raw, corpus, max_df=1.0)
    return tmp, corpus


def train(spark, corpus, output, *extra):
    args = parse(train_job, ["--corpus", corpus, "--output", output, "--topics", "3", "--vocabulary", "infinite",
                             "--minibatch-size", "20", "--reorder-delay", "2", "--truncation", "30",
                             "--alpha-beta", "50", "--seed", "3", "--tau0", "1", "--kappa", "0.6", "--passes", "3",
                             *extra])
    return infinite.train(spark, args)


def test_fit_learns_alpha_per_topic_and_a_refresh_keeps_learning_it(spark_session, common_corpus):
    """(Whether it recovers a known alpha: tests/kernels/test_infvoc_doc_prior.py.)"""
    tmp, corpus = common_corpus
    model_dir = str(tmp / "fit")
    meta = train(spark_session, corpus, model_dir, "--alpha-theta", "fit")
    model = InfVocModel.load(model_dir)
    assert meta["settings"]["alpha_theta"] == model.settings.alpha_theta == "fit"
    alpha = model.alpha
    assert np.all(np.abs(alpha - 1.0 / 3) > 0.05) and len(set(alpha.tolist())) == 3, alpha    # learned, per topic
    batch = write_docs(str(tmp / "batch.jsonl.gz"), shared_and_themed(np.random.default_rng(1), "b", 40))
    root = str(tmp / "root")
    report = infinite.refresh(spark_session, parse(refresh_job, ["--model", root, "--base", model_dir, "--input",
                                                                 batch, "--vocabulary", "infinite",
                                                                 "--minibatch-size", "20", "--passes", "1"]))
    refreshed = InfVocModel.load(os.path.join(root, "versions", report["version"]))
    assert refreshed.settings.alpha_theta == "fit" and not np.array_equal(refreshed.alpha, alpha)
    frozen = infinite.refresh(spark_session, parse(refresh_job, ["--model", root, "--input", batch, "--vocabulary",
                                                                 "infinite", "--minibatch-size", "20", "--passes",
                                                                 "1", "--alpha-theta", "fixed"]))
    kept = InfVocModel.load(os.path.join(root, "versions", frozen["version"]))
    assert kept.settings.alpha_theta == "fixed"
    np.testing.assert_array_equal(kept.alpha, refreshed.alpha)      # fixed: the model's alpha, not 1/K again


def test_fit_gives_the_same_alpha_for_any_number_of_partitions(spark_session, common_corpus):
    tmp, corpus = common_corpus
    train(spark_session, corpus, str(tmp / "p1"), "--alpha-theta", "fit", "--partitions", "1")
    train(spark_session, corpus, str(tmp / "p3"), "--alpha-theta", "fit", "--partitions", "3", "--reducers", "2")
    one, three = (InfVocModel.load(str(tmp / d)) for d in ("p1", "p3"))
    np.testing.assert_allclose(one.alpha, three.alpha, rtol=1e-12)
    pd.testing.assert_frame_equal(*(pd.read_parquet(str(tmp / d / "tos.parquet")) for d in ("p1", "p3")))


def test_fixed_is_the_default_keeps_one_over_k_and_an_old_model_loads_as_fixed(spark_session, common_corpus):
    tmp, corpus = common_corpus
    train(spark_session, corpus, str(tmp / "default"))
    train(spark_session, corpus, str(tmp / "fixed"), "--alpha-theta", "fixed")
    default, fixed = (InfVocModel.load(str(tmp / d)) for d in ("default", "fixed"))
    assert default.settings.alpha_theta == "fixed"
    np.testing.assert_array_equal(default.alpha, np.full(3, 1.0 / 3))
    pd.testing.assert_frame_equal(*(pd.read_parquet(str(tmp / d / "tos.parquet")) for d in ("default", "fixed")))
    path = str(tmp / "default" / "model.json")
    meta = json.load(open(path))
    del meta["settings"]["alpha_theta"]                             # a model.json of before session 27
    json.dump(meta, open(path, "w"))
    assert InfVocModel.load(str(tmp / "default")).settings.alpha_theta == "fixed"
