"""The Gibbs engine on Spark: equal to the single-process reference, deterministic across partitions,
lost worker state, retried tasks, masters and a killed-and-resumed run; every registered model runs on it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from spark_jobs import counted_jobs
from standalone import cluster_apps, submit_train
from drivers.engines.gibbs.engine import GibbsEngine
from drivers.engines.gibbs.settings import GibbsSettings, SampleSchedule
from gibbs_corpus import sample_segmented_lda, terms, write_segmented_corpus
from drivers import registry
from drivers.corpora.segmented import load_segmented_corpus
from drivers.families.gibbs import family as gibbs_family
from inference.errors import RefusedError, SparkTopicsError, UsageError
from inference.gibbs.counts import topic_word_estimate
from inference.gibbs.local import run_local, run_local_tables
from inference.gibbs.model import SegmentedBlock
from jobs import train



@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    docs, beta = sample_segmented_lda(n_docs=60, n_segments=3, seg_length=12, n_topics=3, vocab_size=40,
                                      alpha=0.3, eta=0.1, seed=11, segment_alpha=5.0)
    directory = write_segmented_corpus(tmp_path_factory.mktemp("gibbs_small") / "corpus", docs, terms(40),
                                       ordered=True)         # also for a model of word order
    return directory, docs


def _theta(path, columns=("doc_id",)):
    frame = pd.read_parquet(path).sort_values(list(columns))
    return np.stack(frame["theta"].to_numpy())


# --------------------------------------------------------------------------- schedule

def test_sample_schedule():
    s = SampleSchedule.resolve(1000)
    assert (s.burn_in, s.lag, s.samples) == (500, 100, 5)           # the thesis' STM schedule
    assert [t for t in range(1, 1001) if s.is_sample(t)] == [600, 700, 800, 900, 1000]
    s = SampleSchedule.resolve(2000, burn_in=1500, lag=100)
    assert [t for t in range(1, 2001) if s.is_sample(t)] == [1600, 1700, 1800, 1900, 2000]
    s = SampleSchedule.resolve(3)
    assert s.samples == 3 and s.burn_in == 0 and s.lag == 1
    with pytest.raises(ValueError, match="more than --iterations"):
        SampleSchedule.resolve(10, burn_in=8, lag=2, samples=2)


# --------------------------------------------------------------------------- equal to run_local

@pytest.mark.parametrize("segment_level", [True], ids=["LDA_P"])   # LDA_D: test_registered_model_...
def test_single_partition_equals_run_local(spark_session, small_corpus, tmp_path, segment_level):
    """One partition on Spark (with a checkpoint reload in the middle) = run_local, bit for bit."""
    corpus, docs = small_corpus
    extra = ["--segment-level"] if segment_level else []
    meta = train.train(spark_session, train_args(
        corpus, tmp_path / "m", "--model", "lda-gibbs", "--topics", 3, "--iterations", 8, "--burn-in", 7,
        "--lag", 1, "--samples", 1, "--partitions", 1, "--checkpoint-every", 3, "--seed", 5, *extra))

    model = gibbs_family.make_model(registry.model("lda-gibbs"), 3, 40, segment_level=segment_level)
    block = SegmentedBlock.from_segments(docs)
    hypers = {}
    prepared, state, hyper, nwk, nk = run_local(model, block, 8, seed=5,
                                                on_iteration=lambda t, s, h: hypers.__setitem__(t, h))
    assert meta["alpha"] == hyper["alpha"]                      # JSON keeps floats exactly
    np.testing.assert_array_equal(np.load(tmp_path / "m" / "topic_word.npy"),
                                  topic_word_estimate(nwk, nk, hyper["beta"]))
    # proportions of the one sample (iteration 8) use the alpha broadcast for it: after iteration 7's update
    seg = model.segment_topic(prepared, state, hypers[7])
    np.testing.assert_array_equal(_theta(tmp_path / "m" / "segment_topics.parquet", ("doc_id", "segment")), seg)
    if not segment_level:
        np.testing.assert_array_equal(_theta(tmp_path / "m" / "doc_topics.parquet"),
                                      model.doc_topic(prepared, state, hypers[7]))
    else:  # LDA_P: a document's proportions are the token-weighted mean of its segments'
        lengths = np.diff(block.seg_ptr)
        expected = np.add.reduceat(seg * lengths[:, None], block.doc_ptr[:-1], axis=0)
        np.testing.assert_allclose(_theta(tmp_path / "m" / "doc_topics.parquet"),
                                   expected / expected.sum(1, keepdims=True), rtol=1e-12)
    assert meta["samples_taken"] == 1 and len(meta["trace"]) == 8
    assert not (tmp_path / "m" / "_checkpoint").exists()


def test_sweeps_per_sync(spark_session, small_corpus, tmp_path):
    """Two sweeps per synchronisation: with one partition (whose private counts are the global ones) and a
    fixed alpha it is the same chain as run_local; bad multiples are refused."""
    corpus, docs = small_corpus
    meta = train.train(spark_session, train_args(
        corpus, tmp_path / "m", "--model", "lda-gibbs", "--topics", 3, "--iterations", 8, "--burn-in", 6,
        "--lag", 2, "--samples", 1, "--partitions", 1, "--checkpoint-every", 4, "--sweeps-per-sync", 2,
        "--fixed-alpha", "--seed", 5))
    assert [r["iteration"] for r in meta["trace"]] == [2, 4, 6, 8]
    model = gibbs_family.make_model(registry.model("lda-gibbs"), 3, 40)
    _, _, hyper, nwk, nk = run_local(model, SegmentedBlock.from_segments(docs), 8, seed=5,
                                     hyper=model.initial_hyper(optimize_alpha=False))
    np.testing.assert_array_equal(np.load(tmp_path / "m" / "topic_word.npy"),
                                  topic_word_estimate(nwk, nk, hyper["beta"]))
    with pytest.raises(UsageError, match="multiples of 2"):
        train.train(spark_session, train_args(
            corpus, tmp_path / "x", "--model", "lda-gibbs", "--topics", 3, "--iterations", 9,
            "--sweeps-per-sync", 2))


#: the runs the resident sampler is compared on (a sample inside a multi-sweep synchronisation too)
SYNC_FLAGS = ["--topics", 3, "--iterations", 8, "--burn-in", 4, "--lag", 2, "--samples", 2, "--partitions", 2,
              "--seed", 5, "--checkpoint-every", 2, "--sweeps-per-sync", 2]


@pytest.fixture(scope="module")
def lda_gibbs_jobs(spark_session, small_corpus, tmp_path_factory):
    """lda-gibbs on ``SYNC_FLAGS`` with one Spark job per synchronisation: (model.json, directory), the reference
    of two resident runs below."""
    corpus, _ = small_corpus
    out = tmp_path_factory.mktemp("lda_gibbs_jobs") / "jobs"
    return train.train(spark_session, train_args(corpus, out, "--model", "lda-gibbs", *SYNC_FLAGS, "--sync",
                                                 "jobs")), out


def _same_chain(runs, dirs):
    """Topics, proportions, hyperparameters and trace of the runs (name -> model.json), bit for bit."""
    first, *others = runs
    for other in others:
        np.testing.assert_array_equal(np.load(dirs[first] / "topic_word.npy"),
                                      np.load(dirs[other] / "topic_word.npy"))
        np.testing.assert_array_equal(_theta(dirs[first] / "segment_topics.parquet", ("doc_id", "segment")),
                                      _theta(dirs[other] / "segment_topics.parquet", ("doc_id", "segment")))
        assert runs[first]["hyper"] == runs[other]["hyper"]
        assert [r["loglik"] for r in runs[first]["trace"]] == [r["loglik"] for r in runs[other]["trace"]]


@pytest.mark.parametrize("name,extra", [("lda-gibbs", ()), ("lda-gibbs", ("--sampler", "sparse")), ("stm", ())],
                         ids=["lda-gibbs", "lda-gibbs-sparse", "stm"])
def test_resident_and_one_job_per_synchronisation_give_the_same_model(spark_session, small_corpus, lda_gibbs_jobs,
                                                                      tmp_path, name, extra):
    """The resident sampler (one barrier stage, messages to the driver's hub) and one Spark job per
    synchronisation are the same chain: topics, proportions, hyperparameters and trace, bit for bit; a sample
    inside a multi-sweep synchronisation too; LDA's sparse kernel (SparseLDA) on Spark as well."""
    corpus, _ = small_corpus
    flags = ["--model", name, *SYNC_FLAGS, *extra]
    runs, dirs = {}, {}
    for mode in ("resident", "jobs"):
        if (name, extra, mode) == ("lda-gibbs", (), "jobs"):
            runs[mode], dirs[mode] = lda_gibbs_jobs
        else:
            with counted_jobs(spark_session) as jobs:
                runs[mode] = train.train(spark_session, train_args(corpus, tmp_path / mode, *flags, "--sync", mode))
            dirs[mode] = tmp_path / mode
            if mode == "resident":   # the blocks, the start, the stage, the outputs
                assert len(jobs) <= 4, jobs
    assert runs["resident"]["sync"] == "resident" and runs["jobs"]["sync"] == "jobs"
    _same_chain(runs, dirs)


def test_a_dead_resident_task_hands_the_run_to_one_job_per_synchronisation(spark_session, small_corpus,
                                                                           lda_gibbs_jobs, tmp_path, monkeypatch):
    """Partition 1's resident task dies (its Python worker exits) before iteration 5: the driver notices, cancels
    the barrier stage and goes on with a Spark job per synchronisation from the files of iteration 4, ending with
    the model of an undisturbed run."""
    import drivers.engines.gibbs.resident as resident

    corpus, _ = small_corpus
    reference, reference_dir = lda_gibbs_jobs
    marker = tmp_path / "killed-once"
    monkeypatch.setattr(resident, "RESIDENT_TEST_KILL", (5, str(marker)))
    handed = train.train(spark_session, train_args(corpus, tmp_path / "handed", "--model", "lda-gibbs",
                                                   *SYNC_FLAGS, "--sync", "resident"))
    assert marker.exists() and handed["sync"] == "resident, then jobs"
    _same_chain({"reference": reference, "handed": handed},
                {"reference": reference_dir, "handed": tmp_path / "handed"})


def test_more_partitions_than_slots_share_resident_tasks_and_reducers_sum_the_same_counts(spark_session, small_corpus,
                                                                                        tmp_path, monkeypatch):
    """More partitions than task slots (3 on local[2]): the resident stage's tasks host several partitions each
    (one connection per partition), the default (auto) picks it, and the chain is the one of a Spark job per
    synchronisation, bit for bit (before, such a run fell back to a Spark job per synchronisation: 1.7-2.5x
    tomotopy's time per iteration at 2.3M tokens, which the default partitioning splits in 3). The partitions'
    counts summed on the driver (one stage, the default while they fit) or by the topic partitioner's reducers (two
    stages, forced by a zero budget, which also makes the default a Spark job per synchronisation: one run for
    both) are the same chain too."""
    import drivers.engines.gibbs.engine as engine
    from drivers.engines.gibbs.resident import resident_groups

    assert resident_groups(3, 2) == [[0, 2], [1]] and resident_groups(2, 4) == [[0], [1]]
    corpus, _ = small_corpus
    flags = ["--model", "lda-gibbs", "--topics", 3, "--iterations", 6, "--burn-in", 2, "--lag", 2, "--samples", 2,
             "--partitions", 3, "--seed", 7]
    runs = {"auto": train.train(spark_session, train_args(corpus, tmp_path / "auto", *flags))}
    monkeypatch.setattr(engine, "DRIVER_SUM_BYTES", 0)
    runs["reducers"] = train.train(spark_session, train_args(corpus, tmp_path / "reducers", *flags, "--reducers", 2))
    assert runs["auto"]["sync"] == "resident" and runs["reducers"]["sync"] == "jobs"
    assert runs["auto"]["counts_summed_on"] == "driver" and runs["reducers"]["counts_summed_on"] == "reducers"
    np.testing.assert_array_equal(np.load(tmp_path / "auto" / "topic_word.npy"),
                                  np.load(tmp_path / "reducers" / "topic_word.npy"))
    np.testing.assert_array_equal(_theta(tmp_path / "auto" / "doc_topics.parquet"),
                                  _theta(tmp_path / "reducers" / "doc_topics.parquet"))
    assert runs["auto"]["hyper"] == runs["reducers"]["hyper"] and runs["auto"]["alpha"] == runs["reducers"]["alpha"]
    assert [r["loglik"] for r in runs["auto"]["trace"]] == [r["loglik"] for r in runs["reducers"]["trace"]]


def test_training_partitions_are_a_power_of_two(spark_session, small_corpus, monkeypatch):
    """The Gibbs family's default partitions are rounded up to a power of two (3 -> 4: 2.3M tokens then share 2
    cores evenly); given partitions and other readers keep theirs."""
    from pathlib import Path

    from drivers.corpora import bow
    corpus, _ = small_corpus
    tokens = json.loads((Path(corpus) / "corpus.json").read_text())["tokens"]
    monkeypatch.setattr(bow, "TOKENS_PER_PARTITION", int(np.ceil(tokens / 2.5)))    # 3 partitions by default
    sizes = {}
    for key, args in {"default": {}, "sampler": {"power_of_two": True},
                      "given": {"num_partitions": 3, "power_of_two": True}}.items():
        loaded = load_segmented_corpus(spark_session, corpus, **args)
        sizes[key] = loaded.num_partitions
        loaded.blocks.unpersist()
    assert sizes == {"default": 3, "sampler": 4, "given": 3}


def test_group_nonzeros_equal_numpys():
    """The partitions' sparse records (numba, no U x |group| copy) are np.nonzero's of the group's columns."""
    from inference.gibbs.counts import group_nonzeros
    rng = np.random.default_rng(3)
    counts = (rng.random((40, 7)) < 0.3).astype(np.int32) * rng.integers(1, 9, (40, 7), dtype=np.int32)
    row_ids = np.sort(rng.choice(1000, 40, replace=False)).astype(np.int64)
    for topics in ([0, 3, 6], [1, 4], list(range(7)), [5]):
        group = counts[:, topics]
        rows, cols = np.nonzero(group)
        flat, values = group_nonzeros(counts, row_ids, np.asarray(topics, dtype=np.int64),
                                      np.empty(40 * len(topics), dtype=np.int32))
        np.testing.assert_array_equal(flat, row_ids[rows] * len(topics) + cols)
        np.testing.assert_array_equal(values, group[rows, cols])
        assert flat.dtype == np.int32 and values.dtype == np.int32


def test_local_counts_equal_topic_word_counts():
    from inference.gibbs.counts import count_local, local_vocabulary
    from inference.gibbs.counts import topic_word_counts
    rng = np.random.default_rng(0)
    block = SegmentedBlock.from_segments([("a", [rng.integers(0, 50, 30).tolist()]), ("b", [[7, 7, 3]])])
    z = rng.integers(0, 4, block.n_tokens).astype(np.int32)
    vocab_ids, local = local_vocabulary(block.words)
    expected_ids, expected = topic_word_counts(block, z, 4)
    np.testing.assert_array_equal(vocab_ids, expected_ids)
    np.testing.assert_array_equal(count_local(local, z, vocab_ids.shape[0], 4), expected)


# --------------------------------------------------------------------------- lost worker state, retries

def test_lost_worker_state_gives_the_same_model(spark_session, small_corpus, tmp_path):
    """Partitions whose state the Python workers no longer hold (a new executor) read it from the files:
    same model as a run that keeps it, and as one that never keeps it."""
    corpus, _ = small_corpus
    loaded = load_segmented_corpus(spark_session, corpus, 3)
    try:
        results = []
        for lose in ((), (2, 6), tuple(range(8))):
            model = gibbs_family.make_model(registry.model("lda-gibbs"), 3, 40)
            engine = GibbsEngine(spark_session.sparkContext, model,
                                 GibbsSettings(SampleSchedule.resolve(7, 3, 2, 2), seed=1, checkpoint_every=4),
                                 str(tmp_path / f"ckpt{len(lose)}"))

            def on_iteration(record, engine=engine, lose=lose):
                if record.iteration in lose:
                    engine._run = f"{engine._run}+"   # the workers' cached items belong to another run now

            result = engine.fit(loaded.blocks, 3, model.initial_hyper(), on_iteration=on_iteration)
            # what stays: the state of the checkpoints (4, 7) and the sums of the last sample (7)
            assert sorted(os.listdir(tmp_path / f"ckpt{len(lose)}" / "state")) == ["iter-00004", "iter-00007"]
            assert sorted(os.listdir(tmp_path / f"ckpt{len(lose)}" / "samples")) == ["iter-00007"]
            props = dict(result.states.map(lambda pi: (pi[0], pi[1]["acc"]["seg"])).collect())
            results.append((result.topic_word, result.hyper, [r.loglik for r in result.trace], props))
            engine.release()
        for tw, h, ll, props in results[1:]:
            np.testing.assert_array_equal(tw, results[0][0])
            assert h == results[0][1] and ll == results[0][2]
            for p in range(3):
                np.testing.assert_array_equal(props[p], results[0][3][p])
    finally:
        loaded.blocks.unpersist()


def test_retried_task_reproduces_its_result(tmp_path):
    """A partition task run again (a retry, after a failure half-way or a lost shuffle output) reads the
    files of the previous iteration, never its own: same records, same files."""
    from drivers.engines.gibbs import state as gibbs_state
    from drivers.engines.gibbs.settings import SyncPlan
    from drivers.engines.gibbs.tables import TableLayout
    from drivers.engines.gibbs.tasks import partition_task

    class Broadcast:
        def __init__(self, value):
            self.value = value

    rng = np.random.default_rng(4)
    block = SegmentedBlock.from_segments([(f"d{i}", [rng.integers(0, 30, 25).tolist()]) for i in range(20)])
    model = gibbs_family.make_model(registry.model("lda-gibbs"), 4, 30)
    hyper, layout = model.initial_hyper(), TableLayout(model.count_tables(), 2)
    groups = layout.groups[0]
    assert groups == [[0, 2], [1, 3]]
    directory = str(tmp_path / "ckpt")

    handle = gibbs_state.stage("r", 0, model, block, directory)

    def run(plan, nwk=None, nk=None, run_id="r"):
        values = (None, None, hyper, None) if nwk is None else ({"nwk": nwk}, {"nk": nk}, hyper, None)
        records = list(partition_task(0, [handle], model, run_id, directory, Broadcast(values), 7, plan, layout))
        return records[:-1], records[-1][1][1]

    counts, _ = run(SyncPlan(()))
    nwk = np.zeros((30, 4), dtype=np.int32)
    for (group, table), (_, flat, c) in counts:
        assert table == 0
        nwk[:, groups[group]] += np.bincount(flat, c, minlength=60).astype(np.int32).reshape(30, 2)
    plan = SyncPlan((1,), sample=True)
    first, stats = run(plan, nwk, nwk.sum(0))
    written = (tmp_path / "ckpt" / "state" / "iter-00001" / "part-00000.npz").read_bytes()
    item = gibbs_state._CACHE[("r", 0)]
    item["state"]["z"][:] = 0; item["iteration"] = None   # an attempt that failed half-way in this worker
    for run_id in ("r", "r", "other worker"):
        again, stats_again = run(plan, nwk, nwk.sum(0), run_id)
        assert len(again) == len(first) and all(
            a[0] == b[0] and np.array_equal(a[1][1], b[1][1]) and np.array_equal(a[1][2], b[1][2])
            for a, b in zip(first, again))
        np.testing.assert_array_equal(stats_again, stats)
        assert (tmp_path / "ckpt" / "state" / "iter-00001" / "part-00000.npz").read_bytes() == written


# --------------------------------------------------------------------------- masters and resume

@pytest.mark.cluster
def test_killed_on_a_standalone_cluster_then_resumed_locally_equals_uninterrupted(
        standalone_cluster, spark_session, tmp_path_factory, tmp_path):
    """train through deploy/submit.sh on a real standalone cluster (2 workers of 1 core, the code shipped with
    --py-files; 2 partitions, so the resident sampler: the executors' tasks reach the driver's hub),
    SIGKILLed after a sample, resumed on local[2]: the uninterrupted local[2] model, bit for bit. The result
    depends neither on the master nor on the crash (resident = a job per synchronisation: tested above)."""
    url, logs = standalone_cluster
    docs, _ = sample_segmented_lda(n_docs=150, n_segments=4, seg_length=20, n_topics=5, vocab_size=200,
                                   alpha=0.2, eta=0.05, seed=3)
    corpus = write_segmented_corpus(tmp_path_factory.mktemp("gibbs_resume") / "corpus", docs, terms(200))
    common = ["--model", "lda-gibbs", "--topics", 5, "--iterations", 80, "--burn-in", 40, "--lag", 20,
              "--samples", 2, "--partitions", 2, "--checkpoint-every", 2, "--seed", 9]
    reference = tmp_path / "reference"
    assert train.train(spark_session, train_args(corpus, reference, *common))["sync"] == "resident"

    killed = tmp_path / "killed"
    apps_before = set(cluster_apps(logs))
    proc = submit_train(url, tmp_path, corpus, killed, common, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    state = killed / "_checkpoint" / "state.json"
    deadline = time.time() + 300
    while time.time() < deadline:
        if state.exists():
            try:
                if json.loads(state.read_text())["iteration"] >= 62:   # after the first sample (iteration 60)
                    break
            except (ValueError, KeyError):
                pass
        assert proc.poll() is None, proc.stdout.read()[-4000:]
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    output = proc.communicate()[0]
    assert "resident sampler: 2 tasks" in output, output[-4000:]
    done = json.loads(state.read_text())["iteration"]
    assert 62 <= done < 80, "the run must be killed in the middle"
    assert not (killed / "model.json").exists()
    apps = [p for p in cluster_apps(logs) if p not in apps_before]   # the cluster is shared with test_cluster
    assert any(list(p.rglob("spark_topics_code.zip")) for p in apps), "the run did not use the cluster's executors"

    train.train(spark_session, train_args(corpus, killed, *common, "--resume",  # on local[2]
                                                      "--keep-checkpoint"))
    np.testing.assert_array_equal(np.load(reference / "topic_word.npy"), np.load(killed / "topic_word.npy"))
    ref, res = (json.loads((d / "model.json").read_text()) for d in (reference, killed))
    assert ref["hyper"] == res["hyper"]
    assert [r["loglik"] for r in ref["trace"]] == [r["loglik"] for r in res["trace"]]
    np.testing.assert_array_equal(_theta(reference / "segment_topics.parquet", ("doc_id", "segment")),
                                  _theta(killed / "segment_topics.parquet", ("doc_id", "segment")))
    with pytest.raises(RefusedError, match="cannot resume.*seed"):   # a checkpoint of other settings is refused
        train.train(spark_session, train_args(corpus, killed, *common[:-1], 10, "--resume"))


# --------------------------------------------------------------------------- every registered model

@pytest.mark.parametrize("name", [s.name for s in registry.models_of("gibbs")])
def test_registered_model_on_spark_equals_run_local(spark_session, small_corpus, tmp_path, name):
    """Each registered model trains on Spark (one partition) exactly as run_local runs it; rows sum to 1."""
    try:
        registry.model(name).model_class()
    except SparkTopicsError as exc:
        pytest.skip(f"{name} not available yet: {exc}")
    corpus, docs = small_corpus
    meta = train.train(spark_session, train_args(
        corpus, tmp_path / name, "--model", name, "--topics", 3, "--iterations", 4, "--burn-in", 3,
        "--lag", 1, "--samples", 1, "--partitions", 1, "--seed", 2))
    topic_word = np.load(tmp_path / name / "topic_word.npy", allow_pickle=False)
    assert topic_word.shape == (meta["topics"], 40)     # K = 3, or a DP mixture's clusters at the end
    np.testing.assert_allclose(topic_word.sum(axis=1), 1.0, rtol=1e-12)
    model = gibbs_family.make_model(registry.model(name), 3, 40)
    hypers = {}
    orig = SegmentedBlock.from_segments(docs)
    block, state, hyper, tables, derived = run_local_tables(model, orig, 4, seed=2,
                                                            on_iteration=lambda t, s, h: hypers.__setitem__(t, h))
    # the one sample (iteration 4), with the hyperparameters broadcast for it (a model with nothing to sample: its
    # one fit)
    sampled = hypers.get(3, hyper)
    summary = model.summarise_sample(None, tables, derived, sampled)
    np.testing.assert_array_equal(topic_word, model.topic_word_of_samples(summary, 1, tables, derived, hyper))
    if "nwk" in tables:
        np.testing.assert_array_equal(topic_word, topic_word_estimate(tables["nwk"], derived["nk"], hyper["beta"]))
    assert json.dumps(meta["hyper"], sort_keys=True) == json.dumps(hyper, sort_keys=True)
    model.bind_result(SimpleNamespace(tables=tables, hyper=hyper))
    acc = model.accumulate_sample(block, state, sampled, {"samples": np.zeros(1, dtype=np.int64)})
    doc, seg_expected = model.document_proportions({"orig": orig, "block": block, "state": state, "acc": acc})
    seg = _theta(tmp_path / name / "segment_topics.parquet", ("doc_id", "segment"))
    np.testing.assert_array_equal(seg, seg_expected)
    np.testing.assert_array_equal(_theta(tmp_path / name / "doc_topics.parquet"), doc)
    np.testing.assert_allclose(seg.sum(axis=1), 1.0, rtol=1e-9)


# --------------------------------------------------------------------------- bad input

def test_bad_input(spark_session, small_corpus, tmp_path):
    corpus, docs = small_corpus
    plain = write_segmented_corpus(tmp_path / "plain", docs, terms(40), segmented=False)
    if "stm" in registry.MODELS:
        with pytest.raises(UsageError, match="no segments"):
            train.train(spark_session, train_args(plain, tmp_path / "m", "--model", "stm",
                                                              "--topics", 3))
    with pytest.raises(UsageError, match="more than --iterations"):
        train.train(spark_session, train_args(corpus, tmp_path / "m", "--model", "lda-gibbs",
                                                          "--topics", 3, "--iterations", 5, "--burn-in", 4,
                                                          "--samples", 2))
    with pytest.raises(UsageError, match="does not take"):
        train.train(spark_session, train_args(corpus, tmp_path / "m", "--model", "lda-gibbs",
                                                          "--topics", 3, "--lambda-s", 1.0))
    with pytest.raises(UsageError, match="beta must be a positive"):
        train.train(spark_session, train_args(corpus, tmp_path / "m", "--model", "lda-gibbs",
                                                          "--topics", 3, "--beta", -1))
    with pytest.raises(UsageError, match="larger than the vocabulary"):
        train.train(spark_session, train_args(corpus, tmp_path / "m", "--model", "lda-gibbs",
                                                          "--topics", 41))
    with pytest.raises(UsageError, match="--eta only apply to the variational"):
        train.train(spark_session, train_args(corpus, tmp_path / "m", "--model", "lda-gibbs",
                                                          "--topics", 3, "--eta", 0.1))
    with pytest.raises(UsageError, match="segment-level applies"):
        gibbs_family.make_model(registry.model("stm"), 3, 40, registry, segment_level=True)
