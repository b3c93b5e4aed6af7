"""infvoc's online steps in this process (issue 30, session 27): without ``--master`` a small minibatch's step runs
its mappers and reducers here (``engine.step_in_process``), a named master keeps one Spark job per step; train and
refresh give the same model to the bit either way (tos.parquet, doc_topics, alpha with ``--alpha-theta fit``, the
re-seeded topics)."""
from __future__ import annotations

import logging
import os

import numpy as np
import pandas as pd

from drivers.models.infvoc import commands as infinite
from drivers.models.infvoc.engine import IN_PROCESS_TOKENS, steps_in_process
from drivers.models.infvoc.model import InfVocModel
from jobs import refresh as refresh_job, train as train_job
from spark_jobs import counted_jobs
from tests.models.test_infvoc_model import base_corpus, parse, themed, write_docs  # noqa: F401

STEP_JOB = "drivers/models/infvoc/engine.py"
SPARK = "local[2]"         # a master named: a Spark job per step


def train_on(spark, corpus: str, output: str, master: str | None, *extra) -> dict:
    """``train --vocabulary infinite`` (the flags of test_infvoc_model's runs) with ``--master`` ``master``."""
    args = parse(train_job, ["--corpus", corpus, "--output", output, "--topics", "4", "--vocabulary", "infinite",
                             "--minibatch-size", "20", "--reorder-delay", "2", "--truncation", "30",
                             "--alpha-beta", "50", "--seed", "3", "--tau0", "1", "--kappa", "0.6", *extra])
    args.master = master
    return infinite.train(spark, args)


def step_jobs(jobs) -> int:
    """How many of the block's Spark jobs were online steps (their call site is the engine's collect)."""
    return sum(STEP_JOB in name for name in jobs)


def same_model(left: str, right: str) -> None:
    """The two model directories hold the same model, to the bit."""
    for name in ("tos.parquet", "doc_topics.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(os.path.join(left, name)),
                                      pd.read_parquet(os.path.join(right, name)), check_exact=True)
    one, two = InfVocModel.load(left), InfVocModel.load(right)
    np.testing.assert_array_equal(one.alpha, two.alpha)
    assert one.minibatches == two.minibatches and one.documents == two.documents
    assert [list(s.terms) for s in one.sets] == [list(s.terms) for s in two.sets]
    for a, b in zip(one.sets, two.sets):
        for field in ("nu1", "nu2", "rank", "since"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_train_and_refresh_in_process_give_the_spark_steps_model_to_the_bit(spark_session, base_corpus, caplog):
    """4 topics for 2 themes, alpha learned (--alpha-theta fit), starved topics re-seeded (--reseed-below), 2
    passes, 3 partitions over 2 reducers; then a refresh of each: the steps in this process (no --master) and as
    Spark jobs (--master local[2]) publish the same numbers, and only the latter runs a Spark job per step."""
    tmp, corpus = base_corpus
    extra = ["--alpha-theta", "fit", "--reseed-below", "0.5", "--passes", "2", "--partitions", "3", "--reducers", "2"]
    here, there = str(tmp / "steps-here"), str(tmp / "steps-spark")
    with caplog.at_level(logging.INFO, logger="spark_topics.infvoc"), counted_jobs(spark_session) as jobs:
        meta = train_on(spark_session, corpus, here, None, *extra)
    assert step_jobs(jobs) == 0 and meta["minibatches"] == 8
    assert any("online steps in this process" in r.getMessage() for r in caplog.records)
    assert any("re-seeded" in r.getMessage() for r in caplog.records)          # the re-seeding was exercised
    with counted_jobs(spark_session) as jobs:
        train_on(spark_session, corpus, there, SPARK, *extra)
    assert step_jobs(jobs) == 8
    same_model(here, there)
    assert not np.allclose(InfVocModel.load(here).alpha, 0.25)                  # alpha was learned

    batch = write_docs(str(tmp / "steps-batch.jsonl.gz"), themed(np.random.default_rng(7), "s", 40,
                                                                  extra=("vuvuzela", "sport")))
    versions = []
    for root, base, master in ((tmp / "steps-root-here", here, None), (tmp / "steps-root-spark", there, SPARK)):
        args = parse(refresh_job, ["--model", str(root), "--base", base, "--input", batch, "--vocabulary", "infinite",
                                   "--minibatch-size", "20", "--passes", "2", "--partitions", "3"])
        args.master = master
        with counted_jobs(spark_session) as jobs:
            report = infinite.refresh(spark_session, args)
        assert step_jobs(jobs) == (4 if master else 0)
        versions.append(os.path.join(str(root), "versions", report["version"]))
    same_model(*versions)


def test_steps_run_in_process_only_without_a_named_master_on_a_local_session_and_small_minibatches(caplog):
    short = [(f"d{i}", ["w"] * 20) for i in range(1000)]               # 256 a minibatch: 5,120 tokens
    with caplog.at_level(logging.INFO, logger="spark_topics.infvoc"):
        assert steps_in_process(False, "local[*]", short, 256)
    assert "in this process" in caplog.records[0].getMessage()
    assert not steps_in_process(True, "local[2]", short, 256)                 # --master local[2] given: Spark
    assert not steps_in_process(True, "spark://host:7077", short, 256)
    assert not steps_in_process(False, "spark://host:7077", short, 256)      # spark-submit to a cluster
    assert not steps_in_process(False, "yarn", short, 256)
    # the largest minibatch decides: the first of 256 documents holds IN_PROCESS_TOKENS + 1 tokens
    large = [("big", ["w"] * (IN_PROCESS_TOKENS - 255 * 20 + 1))] + short
    assert not steps_in_process(False, "local[*]", large, 256)
    assert steps_in_process(False, "local[*]", [("big", ["w"] * (IN_PROCESS_TOKENS - 255 * 20))] + short, 256)
