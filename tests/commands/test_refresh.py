"""spark-topics refresh (issue 15): versions of a model root from new documents, checked against the update
equations (streaming VB adds the batch's statistics to the old posterior; Hoffman's online step), idempotent
ingestion by id and content hash, vocabulary growth, rollback, pruning, the root's lease."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import sample_lda_corpus
from shared_runs import made_once, run_folder
from spark_jobs import counted_jobs
from drivers.preparation.corpus import prepare_corpus
from drivers.store import lease, model_root, model_store, publish
from inference.errors import DamagedError, RefusedError, UsageError
from jobs import refresh, train
from jobs.spark import add_spark_arguments

SYLLABLES = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "ve", "zo"]
WORDS = [a + b + c for a in SYLLABLES[:4] for b in SYLLABLES for c in ("n", "r")]   # 80 words, letters only
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_batch(path, docs):
    with open(path, "w") as f:
        for doc_id, text in docs:
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    return str(path)


def texts(n_docs, seed, prefix, vocab=60, extra=()):
    """Documents drawn from LDA (K=3) over the first ``vocab`` words, ids ``prefix``<n>; ``extra``: words
    appended to the first documents (new words for the vocabulary)."""
    docs, _ = sample_lda_corpus(n_docs, 3, vocab, 30, 0.3, 0.1, seed)
    out = []
    for i, (_, bag) in enumerate(docs):
        words = [WORDS[t] for t, c in sorted(bag.items()) for _ in range(c)]
        words += [w for j, w in enumerate(extra) if j % max(1, n_docs) <= i % 3 or i < 4]
        out.append((f"{prefix}{i:03d}", " ".join(words)))
    return out


def args(*items):
    parser = argparse.ArgumentParser()
    refresh.add_arguments(parser)
    add_spark_arguments(parser)
    return parser.parse_args([str(i) for i in items])


def run(spark, *items):
    return refresh.refresh_root(spark, refresh.request_from(args(*items)))


@pytest.fixture(scope="module")
def base(spark_session, tmp_path_factory):
    """A model trained on 40 documents (K=3, V<=60): made once per test run (both pytest-xdist workers read it,
    tests/shared_runs.py); tests write elsewhere."""
    root = run_folder(tmp_path_factory) / "refresh"
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            raw = write_batch(root / "b0.jsonl", texts(40, 1, "a"))
            prepare_corpus(spark_session, raw, str(root / "c0"), min_df=1, max_df=1.0, language="none")
            train.train(spark_session, train.parse_request(
                ["--corpus", root / "c0", "--output", root / "m0", "--topics", 3, "--iterations", 15, "--seed", 3]))
    return root


NEW_WORDS = ["zozor", "zozan", "zovez"]


@pytest.fixture(scope="module")
def refreshed(spark_session, base):
    """A root after one accumulate refresh of ``base`` with 20 documents (3 of them new words); tests that refresh
    further work on a copy (:func:`copy_root`)."""
    batch = texts(20, 2, "b", extra=NEW_WORDS)
    root = base / "root"
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)
            raw = write_batch(base / "b1.jsonl", batch)
            with counted_jobs(spark_session) as jobs:
                report = run(spark_session, "--model", root, "--base", base / "m0", "--input", raw, "--iterations",
                             4, "--min-new-df", 3)
            (base / "root.json").write_text(json.dumps(report))
            (base / "root-jobs.txt").write_text("\n".join(jobs))
    return root, batch, json.loads((base / "root.json").read_text())


#: the most Spark jobs the first refresh (auto: accumulate) of 20 documents with 4 EM iterations may run: reading
#: and sorting the batch by the ledger, its unknown words (once: it was twice), the ledger, the corpus' load, the
#: iterations, doc_topics (28 before the unknown words were counted in one action and the batch's ids read with
#: their schema)
REFRESH_JOBS = 24


def test_a_refresh_of_a_small_batch_runs_few_spark_jobs(refreshed):
    """The job count of ``refreshed``'s refresh (recorded when it was made: tests/spark_jobs.py)."""
    jobs = (refreshed[0].parent / "root-jobs.txt").read_text()
    assert 0 < len(jobs.splitlines()) <= REFRESH_JOBS, f"refresh ran {len(jobs.splitlines())} Spark jobs:\n{jobs}"


def copy_root(refreshed, tmp_path):
    shutil.copytree(refreshed[0], tmp_path / "root")
    return tmp_path / "root"


def test_accumulate_adds_the_batch_statistics_to_the_old_posterior(spark_session, base, refreshed):
    """Streaming VB: lambda_new = lambda_old + the batch's expected counts, so sum(lambda_new - lambda_old) is
    the batch's token count; new words enter at eta once their document frequency reaches --min-new-df."""
    root, batch, report = refreshed
    old = model_store.load_model(str(base / "m0"))
    new = model_store.load_model(str(root))
    V0 = old.lambda_.shape[1]
    # the words admitted, counted independently from the raw text
    df = Counter(w for _, text in batch for w in set(text.split()) if w not in set(old.vocab["term"]))
    assert sorted(new.vocab["term"][V0:]) == sorted(w for w, n in df.items() if n >= 3)
    assert set(NEW_WORDS) <= set(new.vocab["term"][V0:])
    assert report["vocabulary"]["added"] == len(new.vocab) - V0 and report["documents"]["new"] == 20
    eta = float(old.meta["eta"])
    delta = new.lambda_ - np.hstack([old.lambda_, np.full((3, len(new.vocab) - V0), eta)])
    tokens = json.loads(open(os.path.join(model_store.resolve(str(root)), "corpus", "corpus.json")).read())["tokens"]
    assert delta.min() > -1e-9 and delta.sum() == pytest.approx(tokens, rel=1e-9)
    meta = new.meta
    assert meta["refresh"]["documents"] == 60 and meta["refresh"]["mode"] == "accumulate"
    assert meta["data"]["corpus"] == os.path.join(model_store.resolve(str(root)), "corpus")   # not the staging one
    assert len(report["drift"]["hellinger"]) == 3 and report["drift"]["identity_matching"]
    version = model_store.resolve(str(root))
    for name in ("refresh.json", "refresh.png", "ledger.parquet", "new_terms.parquet", publish.MARKER):
        assert os.path.exists(os.path.join(version, name)), name
    ledger = model_store.read_parquet(os.path.join(version, "ledger.parquet"))
    assert sorted(ledger[ledger.status == "new"].doc_id) == [d for d, _ in batch]
    assert (ledger.status == "base").sum() == 0 and ledger.doc_id.is_unique          # the base's: version 0's
    base_ledger = model_store.read_parquet(os.path.join(model_root.resolve(str(root), "base"), "ledger.parquet"))
    assert (base_ledger.status == "base").sum() == 40 and meta["refresh"]["parent"]["version"].startswith("000000")
    table = spark_session.read.parquet(str(root / model_root.DOC_TOPICS))   # the table, partitioned by version
    counts = {r["version"]: r["count"] for r in table.groupBy("version").count().collect()}
    assert counts == {"base": 40, report["version"]: 20}


def test_the_same_batch_publishes_nothing_a_changed_text_is_a_revision_and_a_rollback_uningests_it(
        spark_session, refreshed, tmp_path):
    """Ingestion by id and content hash; then the rollback of the version that ingested the revision
    (:func:`rollback_uningests_and_keep_prunes`, on this root: one refresh fewer than a root of its own)."""
    root, batch, first = copy_root(refreshed, tmp_path), refreshed[1], refreshed[2]
    raw = write_batch(tmp_path / "b.jsonl", batch)
    again = run(spark_session, "--model", root, "--input", raw, "--iterations", 2)
    assert again["published"] is False and again["documents"]["duplicate"] == 20
    assert model_root.latest(str(root)) == first["version"] and len(model_root.versions(str(root))) == 2  # + base
    changed = [(batch[0][0], batch[0][1] + " " + batch[1][1])] + batch[1:] + [("c999", batch[2][1])] \
        + [("a000", "kanr kanr")]                     # a base document met again: adopted, not ingested
    third = run(spark_session, "--model", root, "--input", write_batch(tmp_path / "c.jsonl", changed),
                "--iterations", 2, "--inference", "hybrid")                 # the local step may be hybrid
    d = third["documents"]
    assert (d["new"], d["revision"], d["duplicate"], d["adopted"]) == (1, 1, 19, 1)
    assert third["ingested"] == 2 and model_root.chain(str(root))[:2] == [third["version"], first["version"]]
    assert model_store.load_model(str(root)).meta["settings"]["inference"] == "hybrid"
    fourth = run(spark_session, "--model", root, "--input", write_batch(tmp_path / "d.jsonl", changed[-1:]),
                 "--iterations", 2)
    assert fourth["published"] is False and fourth["documents"]["duplicate"] == 1   # its hash was recorded
    rollback_uningests_and_keep_prunes(spark_session, root, first["version"], third["version"], tmp_path)


def test_an_informed_prior_is_applied_to_the_new_words(spark_session, base, refreshed, tmp_path):
    """A seeded topic's patterns match words that join the vocabulary later: zoz* (and ka*) get --prior-high in the
    seeded topic, every other new word --prior-low there (and eta elsewhere); accumulate starts the new columns at that
    prior, so lambda_new - [lambda_old | prior of the new words] is the batch's statistics, summing to its tokens."""
    spec = tmp_path / "seeds.json"
    spec.write_text(json.dumps({"seeded": ["ka*", "zoz*"]}))
    train.train(spark_session, train.parse_request(
        ["--corpus", base / "c0", "--output", tmp_path / "informed", "--topics", 3, "--iterations", 5, "--seed", 3,
         "--prior", spec]))
    old = model_store.load_model(str(tmp_path / "informed"))
    assert os.path.exists(tmp_path / "informed" / model_store.PRIOR_SPEC)
    run(spark_session, "--model", tmp_path / "root", "--base", tmp_path / "informed", "--input",
        base / "b1.jsonl", "--iterations", 2, "--min-new-df", 3)
    new = model_store.load_model(str(tmp_path / "root"))
    version = model_store.resolve(str(tmp_path / "root"))
    V0 = old.lambda_.shape[1]
    terms = new.vocab["term"].astype(str).tolist()
    eta = float(old.meta["eta"])
    expected = np.full((3, len(terms) - V0), eta)
    expected[0] = [10.0 if t.startswith(("ka", "zoz")) else 0.01 for t in terms[V0:]]
    prior = model_store.read_parquet(os.path.join(version, "prior.parquet"))
    seeded = dict(zip(prior.loc[prior.topic == 0, "term"], prior.loc[prior.topic == 0, "eta"]))
    assert seeded["zozor"] == seeded["zozan"] == 10.0 and seeded["zovez"] == 0.01
    assert {eta_ for t, eta_ in seeded.items() if t.startswith("ka")} == {10.0}
    delta = new.lambda_ - np.hstack([old.lambda_, expected])
    tokens = json.loads(open(os.path.join(version, "corpus", "corpus.json")).read())["tokens"]
    assert delta.min() > -1e-9 and delta.sum() == pytest.approx(tokens, rel=1e-9)
    assert os.path.exists(os.path.join(version, model_store.PRIOR_SPEC)) and new.topic_names()[0] == "seeded"


def test_online_step_is_hoffmans_update(spark_session, refreshed, tmp_path):
    """One online EM iteration: lambda = (1 - rho) lambda_old + rho (eta + D/|S| stats), rho = (tau0 + t)^-kappa
    with t = the model's step count + 1; summed over the matrix this is exact arithmetic on the batch's tokens."""
    root = copy_root(refreshed, tmp_path)
    old = model_store.load_model(str(root))
    raw = write_batch(tmp_path / "b.jsonl", texts(10, 5, "e"))
    report = run(spark_session, "--model", root, "--input", raw, "--mode", "online", "--iterations", 1,
                 "--tau0", 4, "--kappa", 0.6, "--min-new-df", 100, "--probe", refreshed[0].parent / "c0")
    new = model_store.load_model(str(root))
    tokens = json.loads(open(os.path.join(model_store.resolve(str(root)), "corpus", "corpus.json")).read())["tokens"]
    rho, eta, scale = (4 + 1) ** -0.6, float(old.meta["eta"]), (60 + 10) / 10
    expected = (1 - rho) * old.lambda_.sum() + rho * (eta * old.lambda_.size + scale * tokens)
    assert new.lambda_.shape == old.lambda_.shape
    assert new.lambda_.sum() == pytest.approx(expected, rel=1e-9)
    assert new.meta["refresh"]["steps"] == 1 and new.meta["refresh"]["documents"] == 70
    assert 1 < report["probe"]["perplexity"] < 60 and report["probe"]["vocabulary"] == \
        len(model_store.load_model(str(refreshed[0].parent / "m0")).vocab)


def rollback_uningests_and_keep_prunes(spark_session, root, v1, v2, tmp_path):
    """Rollback from ``v2`` (LATEST, on top of ``v1``) to ``v1`` un-ingests v2's documents (the document table's
    partition too; recovery re-syncs the table after a kill); names are never reused; --keep prunes the abandoned
    version and older ones, which then cannot be loaded or rolled back to. (Part of the test above: its root.)"""
    b2 = write_batch(tmp_path / "h.jsonl", texts(8, 8, "h"))
    assert model_root.latest(str(root)) == v2 and model_root.chain(str(root))[1] == v1
    back = run(spark_session, "--model", root, "--rollback")
    assert back["version"] == v1 and model_root.latest(str(root)) == v1
    table = root / model_root.DOC_TOPICS
    assert sorted(os.listdir(table)) == sorted(["version=base", f"version={v1}"])   # un-ingested there too
    shutil.rmtree(table / f"version={v1}")                      # as a run killed between LATEST and the copy
    shutil.copytree(table / "version=base", table / "version=999999-20260101T000000Z")
    shutil.copytree(table / "version=base", table / ".version=x.half")
    assert sorted(model_root.recover(str(root))) == [f"{model_root.DOC_TOPICS}/+version={v1}",
                                                     f"{model_root.DOC_TOPICS}/-version=999999-20260101T000000Z"]
    assert sorted(os.listdir(table)) == sorted(["version=base", f"version={v1}"])
    again = run(spark_session, "--model", root, "--input", b2, "--iterations", 2, "--mode", "batch", "--keep", 1)
    assert again["documents"]["new"] == 8 and again["version"] > v2          # names are never reused
    assert model_root.chain(str(root))[:2] == [again["version"], v1]
    assert model_store.load_model(str(root)).meta["data"]["documents"] == 40 + 20 + 8   # batch: the union
    assert not os.path.exists(os.path.join(model_root.version_dir(str(root), v2)))     # abandoned, pruned
    with pytest.raises(RefusedError, match="was pruned"):
        model_store.load_model(str(root), v1[:6])
    with pytest.raises(RefusedError, match="was pruned"):
        run(spark_session, "--model", root, "--rollback", v1)


def test_a_second_refresh_of_a_root_is_refused_and_a_first_one_needs_a_base(spark_session, base, tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    root = tmp_path / "root"
    try:
        os.makedirs(root)
        with open(root / lease.LEASE, "w") as f:
            json.dump({"token": "t", "job": "spark-topics refresh", "host": os.uname().nodename, "pid": live.pid,
                       "started": "2026-11-25T00:00:00Z"}, f)
        with pytest.raises(RefusedError, match=rf"in use by another run: spark-topics refresh .*pid {live.pid}"):
            run(spark_session, "--model", root, "--base", base / "m0", "--input", base / "b0.jsonl")
    finally:
        live.kill()
        live.wait()
    # Gibbs models: tests/commands/test_refresh_gibbs.py and test_refresh_gibbs_steps.py (every one refreshes)
    with pytest.raises(UsageError, match="first refresh needs --base"):
        run(spark_session, "--model", tmp_path / "root3", "--input", base / "b0.jsonl")


class Killed(BaseException):
    """A kill at a publication step, in process (raised past every ``except Exception``)."""


#: jobs of the command line run side by side in one process, which SIGKILLs itself once each job has reached its
#: step (argv[1]: JSON [[step, job's argv], ...]): one Spark application for every kill after a rename
KILL_SIDE_BY_SIDE = """
import json, os, signal, sys, threading
sys.path.insert(0, {repo!r})
jobs = json.loads(sys.argv[1])
steps = {{step for step, _ in jobs}}
reached, arrived = set(), threading.Condition()

def at_step(name):
    if name != threading.current_thread().name:          # a job's thread is named by the step it is killed at
        return
    with arrived:
        reached.add(name)
        print("reached", name, flush=True)
        if reached == steps:
            os.kill(os.getpid(), signal.SIGKILL)
        arrived.notify_all()
        arrived.wait(600)                       # the last job to reach its step kills the process
    raise SystemExit(f"the other jobs did not reach their steps, only {{sorted(reached)}}")

from drivers.store import publish
publish.STEP_HOOK = at_step
from jobs.cli import main
from jobs.spark import get_spark
get_spark("spark-topics kill test", "local[2]", ["spark.sql.shuffle.partitions=4", "spark.ui.enabled=false"])
threads = [threading.Thread(target=main, args=(argv,), name=step) for step, argv in jobs]
for t in threads:
    t.start()
for t in threads:
    t.join()
sys.exit(3)                                     # a job ended before its step
"""


def _jobs_killed_at(jobs):
    """Run ``jobs`` ([(step, argv)]) side by side in one process killed by a SIGKILL once each is at its step:
    (return code, log)."""
    argv = json.dumps([[step, [str(i) for i in items]] for step, items in jobs])
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    run = subprocess.run([sys.executable, "-c", KILL_SIDE_BY_SIDE.format(repo=REPO), argv], env=env, cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    return run.returncode, run.stdout


def test_killed_refreshes_and_trains_leave_a_complete_latest_and_nothing_ingested_twice(spark_session, base,
                                                                                       refreshed, tmp_path,
                                                                                       monkeypatch):
    """Refresh killed during the model write (lambda written, the rest not) and between the version's rename and
    the pointer (the version complete on disk): LATEST stays the previous complete version; the next run
    completes; each document once. Train killed during the model write (the old model stays, the half written
    one is removed by the next run), and right after the new model was swapped in, before the old one was
    cleaned up: the new model is read, and the next run gives the user's file back and removes the old model.
    The kills right after a rename are real SIGKILLs of a process running both jobs (refresh and train side by
    side, killed once both are at their step: one Spark application); the kills in the model write are raised in
    this process (tests/commands/test_publish_whole.py has every step so)."""
    from concurrent.futures import ThreadPoolExecutor

    first = refreshed[2]["version"]
    raw2 = write_batch(tmp_path / "b2.jsonl", texts(10, 10, "m"))
    kills = ("model-written", "version-moved")
    roots = {name: copy_root(refreshed, tmp_path / name) for name in kills}
    common = ("train", "--corpus", base / "c0", "--topics", 3, "--iterations", 1)
    outs = {name: tmp_path / name / "model" for name in ("model-written", "swapped")}
    train.train(spark_session, train.parse_request(common[1:] + ("--output", outs["swapped"])))
    (outs["swapped"] / "notes.txt").write_text("mine")
    shutil.copytree(outs["swapped"], outs["model-written"])
    before = publish.read_marker(str(outs["swapped"]))["token"]
    with ThreadPoolExecutor(1) as pool:
        killed = pool.submit(_jobs_killed_at, [
            ("version-moved", ("refresh", "--model", roots["version-moved"], "--input", raw2, "--iterations", 1)),
            ("swapped", (*common, "--output", outs["swapped"], "--seed", 2))])
        monkeypatch.setattr(publish, "STEP_HOOK", lambda step: _raise(Killed) if step == "model-written" else None)
        with pytest.raises(Killed):
            run(spark_session, "--model", roots["model-written"], "--input", raw2, "--iterations", 1)
        with pytest.raises(Killed):
            train.train(spark_session, train.parse_request(common[1:] + ("--output", outs["model-written"],
                                                                         "--seed", 5)))
        monkeypatch.setattr(publish, "STEP_HOOK", None)
        # killed by the SIGKILL once both were at their steps, not failed for another reason
        code, log = killed.result()
        assert code == -signal.SIGKILL and "reached version-moved" in log and "reached swapped" in log, log[-3000:]
    for name, root in roots.items():
        assert model_root.latest(str(root)) == first, name                 # the pointer did not move
        assert model_store.load_model(str(root)).meta["refresh"]["documents"] == 60
        report = run(spark_session, "--model", root, "--input", raw2, "--iterations", 1)
        latest = model_root.latest(str(root))
        assert report["documents"]["new"] == 10 and latest != first and model_root.chain(str(root))[:2] == [latest, first]
        ledgers = pd.concat([model_store.read_parquet(os.path.join(model_root.version_dir(str(root), v),
                                                                   "ledger.parquet"))
                             for v in model_root.chain(str(root))])
        assert ledgers.doc_id.is_unique and (ledgers.status == "new").sum() == 30, name
        assert [n for n in os.listdir(root / "versions") if n.startswith(".")] == [], name

    out = outs["model-written"]           # killed in the model write: the old model stays
    assert publish.read_marker(str(out))["token"] == before and model_store.load_model(str(out)).meta["seed"] == 0
    out = outs["swapped"]                 # killed right after the exchange (when staged: like refresh's)
    assert publish.read_marker(str(out))["token"] != before and model_store.load_model(str(out)).meta["seed"] == 2
    for name, out in outs.items():
        train.train(spark_session, train.parse_request(common[1:] + ("--output", out, "--seed", 4)))
        assert model_store.load_model(str(out)).meta["seed"] == 4 and (out / "notes.txt").read_text() == "mine"
        assert [n for n in os.listdir(out.parent) if n.startswith(".model")] == [], name


def _raise(kind):
    raise kind()


def test_a_latest_naming_a_missing_version_is_refused_before_anything_is_deleted(spark_session, refreshed, tmp_path):
    """Issue: recovery synced the document-topic table to the (empty) chain before anything checked LATEST, so a
    LATEST naming a missing version deleted the whole table, then refused the root. Now the refusal comes first."""
    root = copy_root(refreshed, tmp_path)
    table = root / model_root.DOC_TOPICS
    before = sorted(os.listdir(table))
    assert len(before) >= 2                                   # version=base and the first version
    (root / model_root.LATEST).write_text("000099-20261125T000000Z\n")
    raw = write_batch(tmp_path / "more.jsonl", texts(5, 90, "z"))
    with pytest.raises(DamagedError, match=r"LATEST names the version 000099-20261125T000000Z, which .* does not "
                                         r"have: the model root is damaged \(nothing was changed\)"):
        run(spark_session, "--model", root, "--input", raw, "--iterations", 1)
    assert sorted(os.listdir(table)) == before
    assert model_root.sync_doc_topics(str(tmp_path / "no-root")) == []   # an empty chain deletes nothing


def test_a_batch_without_a_valid_document_is_refused_its_rejects_kept_and_a_root_is_not_its_base(
        spark_session, base, refreshed, tmp_path):
    """Issue 25: an all-garbage batch was reported as "nothing new", exit 0, its rejected rows kept nowhere; a
    root that is its own base model's directory was accepted (its versions and LATEST written into the model)."""
    root = copy_root(refreshed, tmp_path)
    first = refreshed[2]["version"]
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b'not json\n{"id": "x1", "text": "caf\xe9 au lait"}\n[1, 2]\n')

    def kept():
        return [json.loads(line) for part in (root / refresh.REJECTS_UNPUBLISHED).glob("part-*") for line in open(part)]

    with pytest.raises(UsageError, match=rf"no valid document in .*garbage\.jsonl: all 3 rows were rejected; the 3 "
                                         rf"rejected rows \(.*\) are in .*{refresh.REJECTS_UNPUBLISHED}; nothing was "
                                         rf"published, LATEST stays {first}"):
        run(spark_session, "--model", root, "--input", garbage)
    assert len(kept()) == 3 and {r["reason"] for r in kept()} <= {"malformed", "invalid_encoding"}
    assert model_root.latest(str(root)) == first and len(model_root.versions(str(root))) == 2   # + base
    mixed = write_batch(tmp_path / "mixed.jsonl", refreshed[1][:2])         # two documents ingested before
    with open(mixed, "a") as f:
        f.write("not json\n")
    again = run(spark_session, "--model", root, "--input", mixed)
    assert again["published"] is False and "the 1 rejected rows (1 malformed) are in" in again["message"]
    assert [r["raw"] for r in kept()] == ["not json"]                        # the last such run's
    model = tmp_path / "m0"
    shutil.copytree(base / "m0", model)
    for target, how in ((model, "is"), (model / "root", "lies inside")):
        with pytest.raises(UsageError, match=rf"--model .* {how} the base model directory .*: a model root is a "
                                             rf"directory of its own"):
            run(spark_session, "--model", target, "--base", model, "--input", mixed)
    assert sorted(os.listdir(model)) == sorted(os.listdir(base / "m0"))       # nothing written into it


def _cut_parquet(directory, rows):
    """A Parquet directory replaced by its first ``rows`` rows."""
    frame = pd.read_parquet(directory).head(rows)
    shutil.rmtree(directory)
    os.makedirs(directory)
    frame.to_parquet(os.path.join(directory, "part-0.parquet"))


def test_stored_relative_paths_are_read_beside_the_root_and_checked_against_the_ledger(
        spark_session, base, refreshed, tmp_path, monkeypatch, caplog):
    """Issue 25: a root written with the paths as typed (`refresh --model root --base m0` before they were stored
    absolute) read them against the current directory: `--mode batch` run elsewhere refitted an unrelated corpus
    and a rollback there rebuilt version=base from another model's proportions. Now a relative path is read beside
    the root, and what it leads to is checked against the ledger (the base's documents); new roots store absolute
    paths, the base model's completion token and its corpus' data version."""
    import logging

    from drivers.refresh import sources as refresh_sources

    root = copy_root(refreshed, tmp_path)
    first = model_root.chain(str(root))[-1]                 # version 0: the base model
    version = model_root.version_dir(str(root), first)
    meta = json.loads(open(os.path.join(version, "model.json")).read())
    history = meta["refresh"]
    assert history["parent"]["base"] == str(base / "m0") and history["parent"]["token"] and \
        history["parent"]["documents"] == 40
    assert history["training_corpus"] == str(base / "c0") and history["training_version"]
    history.update(parent={"base": "m0"}, training_corpus="c0")             # as an older spark-topics wrote them
    del history["training_version"]
    with open(os.path.join(version, "model.json"), "w") as f:
        json.dump(meta, f)
    publish.write_marker(version, publish.read_marker(version)["token"])
    latest = model_root.version_dir(str(root), refreshed[2]["version"])    # the refresh's history: LATEST's
    latest_meta = json.loads(open(os.path.join(latest, "model.json")).read())
    latest_meta["refresh"].update(training_corpus="c0")
    del latest_meta["refresh"]["training_version"]
    with open(os.path.join(latest, "model.json"), "w") as f:
        json.dump(latest_meta, f)
    publish.write_marker(latest, publish.read_marker(latest)["token"])
    elsewhere = tmp_path / "elsewhere"                                     # where the job runs: other m0 and c0
    shutil.copytree(base / "m0", elsewhere / "m0")
    _cut_parquet(elsewhere / "m0" / "doc_topics.parquet", 30)
    shutil.copytree(base / "c0", elsewhere / "c0")
    _cut_parquet(elsewhere / "c0" / "docs.parquet", 25)
    corpus_meta = json.loads((elsewhere / "c0" / "corpus.json").read_text())
    (elsewhere / "c0" / "corpus.json").write_text(json.dumps(dict(corpus_meta, documents=25)))
    monkeypatch.chdir(elsewhere)
    table = root / model_root.DOC_TOPICS

    shutil.copytree(base / "m0", tmp_path / "m0")                          # beside the root: the base model
    shutil.rmtree(table / "version=base")                                  # as a run killed between the steps
    assert model_root.sync_doc_topics(str(root)) == ["+version=base"]
    assert len(pd.read_parquet(table / "version=base")) == 40             # not elsewhere/m0's 30
    shutil.rmtree(tmp_path / "m0")
    shutil.copytree(elsewhere / "m0", tmp_path / "m0")                     # another model beside the root
    shutil.rmtree(table / "version=base")
    with caplog.at_level(logging.WARNING, logger="spark_topics.refresh"):
        assert model_root.sync_doc_topics(str(root)) == []
    assert "version=base is not rebuilt" in caplog.text and "it holds 30 documents, the root's ledger 40" in caplog.text

    raw = write_batch(tmp_path / "h.jsonl", texts(8, 8, "h"))
    shutil.copytree(elsewhere / "c0", tmp_path / "c0")                     # another corpus beside the root
    with pytest.raises(RefusedError, match=r"--mode batch: .*/c0 \(the base model's training corpus, 'c0' as stored "
                                         r"by .*\) holds 25 documents, but the root's ledger has 40 training "
                                         r"documents of the base model: not the corpus it was trained on"):
        run(spark_session, "--model", root, "--input", raw, "--mode", "batch", "--iterations", 1)
    shutil.rmtree(tmp_path / "c0")
    shutil.copytree(base / "c0", tmp_path / "c0")                          # the training corpus beside the root
    assert refresh_sources.training_corpus(str(root), version, history) == str(tmp_path / "c0")
    assert refresh_sources.training_history("m0", {"data": {"corpus": "c0", "version": "v"}}) == \
        {"training_corpus": str(elsewhere / "c0"), "training_version": "v"}          # relative to the model's folder
    assert refresh_sources.base_parent("m0", 40)["base"] == str(elsewhere / "m0")


def test_a_small_batch_read_in_process_publishes_what_the_spark_jobs_publish(spark_session, base, tmp_path):
    """A small local batch is read, sorted by the ledger and its new words counted in this process
    (drivers/refresh/batch_in_process.py); with --master the Spark jobs do it. A first refresh (the base model's
    ledger: its documents met again are adopted) and a second (the root's ledger: duplicates, a revision, new
    documents), each batch with rejected rows (no id, no text, a repeated id): the same reports, ledgers, rejects,
    vocabularies and models, bit for bit, with fewer Spark jobs."""
    first = texts(10, 2, "b", extra=NEW_WORDS) + texts(40, 1, "a")[:3]            # 3 base documents met again
    bad = [{"text": "no id here"}, {"id": "b900"}, {"id": "b001", "text": "the same id again"}]
    second = first[:4] + [(first[5][0], first[5][1] + " kalon")] + texts(6, 4, "c")
    raw1, raw2 = tmp_path / "b1.jsonl", tmp_path / "b2.jsonl"
    write_batch(raw1, first)
    with open(raw1, "a") as f:
        f.writelines(json.dumps(row) + "\n" for row in bad)
    write_batch(raw2, second)
    runs = {}
    for engine, extra in (("in-process", []), ("spark", ["--master", "local[2]"])):
        root = tmp_path / engine
        with counted_jobs(spark_session) as jobs:
            reports = [run(spark_session, "--model", root, "--base", base / "m0", "--input", raw1, "--iterations", 1,
                           "--min-new-df", 2, *extra),
                       run(spark_session, "--model", root, "--input", raw2, "--iterations", 1, "--min-new-df", 2,
                           *extra)]
        runs[engine] = root, reports, len(jobs)
    (root_p, reports_p, jobs_p), (root_s, reports_s, jobs_s) = runs["in-process"], runs["spark"]
    assert reports_p[0]["documents"] == {"read": 16, "new": 10, "revision": 0, "duplicate": 0, "adopted": 3,
                                         "rejected": {"duplicate_id": 1, "malformed": 2}}
    assert reports_p[1]["documents"] == {"read": 11, "new": 6, "revision": 1, "duplicate": 4, "adopted": 0,
                                         "rejected": {}}
    for p, s in zip(reports_p, reports_s):
        for key in ("documents", "ingested", "tokens", "vocabulary", "mode", "iterations", "elbo"):
            assert p[key] == s[key], key
    def version(root, n):
        return Path(model_root.version_dir(str(root), model_root.version_name(str(root), n)))

    for n in ("1", "2"):
        vp, vs = version(root_p, n), version(root_s, n)
        ledger_p, ledger_s = (pd.read_parquet(v / "ledger.parquet").sort_values("doc_id", ignore_index=True)
                              for v in (vp, vs))
        assert (ledger_p["version"] == vp.name).all() and (ledger_s["version"] == vs.name).all()
        pd.testing.assert_frame_equal(ledger_p.drop(columns="version"), ledger_s.drop(columns="version"))
        np.testing.assert_array_equal(np.load(vp / "lambda.npy"), np.load(vs / "lambda.npy"))
        pd.testing.assert_frame_equal(pd.read_parquet(vp / "vocab.parquet"), pd.read_parquet(vs / "vocab.parquet"))
    rejects = [sorted((json.loads(line) for f in sorted((version(v, "1") / "rejects").glob("part-*"))
                       for line in f.read_text().splitlines()), key=lambda r: (str(r["id"]), r["raw"]))
               for v in (root_p, root_s)]
    assert rejects[0] == rejects[1] and len(rejects[0]) == 3
    assert set(pd.read_parquet(version(root_p, "1") / "ledger.parquet")["status"]) == {"new", "adopted"}
    assert jobs_p < jobs_s, (jobs_p, jobs_s)
