"""End-to-end variational LDA on Spark: recovery of known topics, ELBO monotonicity, determinism, resume."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import hellinger_matched, train_args, write_corpus
from spark_jobs import counted_jobs
from drivers.store.model_store import load_model
from inference.errors import UsageError
from jobs import train

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


#: the recovery run's iterations: its topics are within 0.104 of the truth (Hellinger) from iteration 20 on; an
#: off-by-one between a block's words and their topic weights (mapper) leaves them far off
SYNTHETIC_ITERATIONS = 20


@pytest.fixture(scope="module")
def synthetic_model(spark_session, synthetic_lda, tmp_path_factory):
    corpus, beta = synthetic_lda
    out = tmp_path_factory.mktemp("synthetic_model") / "model"
    meta = train.train(spark_session, train_args(corpus, out, "--topics", 4, "--iterations", SYNTHETIC_ITERATIONS,
                                                 "--tol", 0, "--seed", 0))
    return out, meta, beta


def test_recovers_known_topics(synthetic_model):
    out, meta, beta = synthetic_model
    model = load_model(str(out))
    assert model.lambda_.shape == (4, 80)
    distances = hellinger_matched(model.topic_word(), beta)
    assert distances.max() < 0.12, distances
    # alpha was learnt by Newton-Raphson from 1/K towards the generating 0.2
    assert np.all((model.alpha > 0.1) & (model.alpha < 0.3)), model.alpha


def test_elbo_never_decreases_and_model_files(synthetic_model):
    out, meta, _ = synthetic_model
    elbo = np.array([r["elbo"] for r in meta["elbo_trace"]])
    assert len(elbo) == SYNTHETIC_ITERATIONS
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:])), np.diff(elbo)
    lam = np.load(out / "lambda.npy", allow_pickle=False)
    assert lam.shape == (4, 80) and np.all(lam > 0)
    import json
    saved = json.loads((out / "model.json").read_text())
    assert saved["model"] == "lda" and saved["topics"] == 4 and len(saved["alpha"]) == 4
    assert saved["eta"] == pytest.approx(0.25) and saved["seed"] == 0
    assert (out / "elbo.png").stat().st_size > 1000
    assert not (out / "_checkpoint").exists()
    import pandas as pd
    vocab = pd.read_parquet(out / "vocab.parquet")
    assert list(vocab["term"][:3]) == ["w000", "w001", "w002"] and list(vocab["id"][:3]) == [0, 1, 2]
    doc_topics = pd.read_parquet(out / "doc_topics.parquet")
    assert len(doc_topics) == 500
    np.testing.assert_allclose(np.stack(doc_topics["theta"]).sum(1), 1.0)


def test_warm_start_continues_from_a_trained_model(spark_session, synthetic_lda, synthetic_model, tmp_path):
    """The engine's initial-state plug-in: a WarmStart from a trained model's lambda and alpha starts where the
    model ended (its first ELBO is at least the trained run's last, and close to it), far above a random start."""
    from drivers.corpora.bow import load_corpus
    from drivers.engines.variational.engine import VariationalEngine
    from drivers.engines.variational.starts import WarmStart
    from drivers.engines.variational.settings import EMSettings
    from inference.priors import SymmetricPrior

    corpus_dir, _ = synthetic_lda
    out, meta, _ = synthetic_model
    model = load_model(str(out))
    corpus = load_corpus(spark_session, corpus_dir)
    settings = EMSettings(num_topics=4, max_iterations=1, tol=0, seed=0, schedule="fixed", restarts="never")
    prior = SymmetricPrior(meta["eta"], corpus.vocab_size)

    def first_elbo(name, start=None):
        engine = VariationalEngine(spark_session.sparkContext, settings, prior, str(tmp_path / name), start=start)
        return engine.fit(corpus.blocks, corpus.num_partitions, corpus.vocab_size).trace[0].elbo

    try:
        warm = first_elbo("warm", WarmStart(model.lambda_, model.alpha))
        cold = first_elbo("cold")
        final = meta["elbo"]   # the trained run's last ELBO (before its last M-step): the warm start is no worse
        assert final - 1e-4 * abs(final) <= warm < final + 2e-3 * abs(final), (warm, final)
        assert warm > cold + 0.1 * abs(cold), (warm, cold)
        with pytest.raises(ValueError, match="does not fit"):
            first_elbo("bad", WarmStart(model.lambda_[:, :10], model.alpha))
    finally:
        corpus.blocks.unpersist()


def test_guided_start_is_the_cold_start_plus_weight_pseudo_tokens_per_topic():
    """GuidedStart (batch refresh): weight 0 is RandomStart exactly; otherwise topic k gains ``weight`` pseudo-tokens
    spread as its statistics (negative entries clipped, an empty topic nothing), alpha as the cold start's."""
    from drivers.engines.variational.starts import GuidedStart, RandomStart
    from drivers.engines.variational.settings import EMSettings
    from inference.priors import SymmetricPrior

    settings, prior = EMSettings(num_topics=3, seed=5), SymmetricPrior(0.1, 4)
    cold, cold_alpha = RandomStart().initial(settings, 4, prior)
    statistics = np.array([[3.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, -0.5, 1.0, 2.0]])
    same, alpha = GuidedStart(statistics, 0.0).initial(settings, 4, prior)
    np.testing.assert_array_equal(same, cold)
    np.testing.assert_array_equal(alpha, cold_alpha)
    guided, _ = GuidedStart(statistics, 8.0).initial(settings, 4, prior)
    np.testing.assert_allclose(guided - cold, [[6, 2, 0, 0], [0, 0, 0, 0], [2, 0, 2, 4]], rtol=1e-12)
    with pytest.raises(ValueError, match="does not fit"):
        GuidedStart(statistics[:, :3], 1.0).initial(settings, 4, prior)


def test_same_seed_same_model_and_seed_matters(spark_session, synthetic_lda, tmp_path):
    """... and a training is one Spark job per iteration and one more: the corpus' blocks (cached, with the largest
    block vocabulary the memory check needs; AQE plans no job of its own for their shuffle; docs.parquet's schema
    is read on the driver, no job); the last iteration's mappers write doc_topics.parquet (8 jobs before)."""
    corpus, _ = synthetic_lda
    runs = {}
    for name, seed in (("short", 0), ("again", 0), ("other", 1)):
        with counted_jobs(spark_session) as jobs:
            runs[name] = train.train(spark_session, train_args(corpus, tmp_path / name, "--topics", 4,
                                                               "--iterations", 3, "--tol", 0, "--seed", seed))
        assert len(jobs) <= 3 + 1, jobs
    lam = {name: np.load(tmp_path / name / "lambda.npy") for name in runs}
    np.testing.assert_array_equal(lam["short"], lam["again"])
    assert not np.array_equal(lam["other"], lam["short"])
    assert runs["short"]["iterations"] == 3


def run_cli(*args, **popen):
    env = dict(os.environ, PYTHONPATH=REPO, SPARK_TOPICS_SPARK_LOG_LEVEL="ERROR")
    return subprocess.Popen([sys.executable, "-m", "jobs.cli", *map(str, args)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def test_local1_matches_local2_and_resume_after_kill(spark_session, synthetic_lda, tmp_path, caplog):
    """A run on local[1] killed with SIGKILL and resumed on local[2] (this session) ends with the model of an
    uninterrupted local[2] run: neither the cores nor the kill change the numbers."""
    corpus, _ = synthetic_lda
    common = ["--topics", 4, "--iterations", 12, "--tol", 0, "--seed", 3, "--inference", "variational"]
    reference = tmp_path / "reference"
    train.train(spark_session, train_args(corpus, reference, *common))   # local[2], uninterrupted

    killed = tmp_path / "killed"
    proc = run_cli("train", "--corpus", corpus, "--output", killed, *common, "--master", "local[1]",
                   start_new_session=True)
    state = killed / "_checkpoint" / "state.json"
    deadline = time.time() + 180
    import json
    while time.time() < deadline:
        if state.exists():
            try:
                if json.loads(state.read_text())["iteration"] >= 4:
                    break
            except (ValueError, KeyError):
                pass
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = json.loads(state.read_text())["iteration"]
    assert 4 <= done < 12, "the run must be killed in the middle"
    assert not (killed / "model.json").exists()

    with caplog.at_level("INFO", logger="spark_topics"):
        train.train(spark_session, train_args(corpus, killed, *common, "--resume"))
    assert f"after iteration {done}" in caplog.text and "resuming from checkpoint" in caplog.text
    np.testing.assert_array_equal(np.load(reference / "lambda.npy"), np.load(killed / "lambda.npy"))
    ref_meta, res_meta = (json.loads((d / "model.json").read_text()) for d in (reference, killed))
    assert ref_meta["alpha"] == res_meta["alpha"]
    assert [r["elbo"] for r in ref_meta["elbo_trace"]] == [r["elbo"] for r in res_meta["elbo_trace"]]


def test_bad_training_input(spark_session, tmp_path):
    tiny = write_corpus(spark_session, str(tmp_path / "tiny"), [("a", {0: 2, 1: 1}), ("b", {1: 3, 2: 1})],
                        ["x", "y", "z"])
    with pytest.raises(UsageError, match="larger than the vocabulary"):
        train.train(spark_session, train_args(tiny, tmp_path / "m", "--topics", 5))
    with pytest.raises(UsageError, match="not a prepared corpus"):
        train.train(spark_session, train_args(tmp_path / "nowhere", tmp_path / "m", "--topics", 2))
    with pytest.raises(UsageError, match="positive"):
        train.train(spark_session, train_args(tiny, tmp_path / "m", "--topics", 2, "--alpha", -1))
