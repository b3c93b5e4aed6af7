"""The default refresh (``--mode auto``, issue 30 item 1): accumulate nightly, a guided pass over the stored batches
once the documents double; as good as a retrain on the union, reading only the batch between guided passes."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from drivers.families.variational.evaluate import evaluate_model
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh import schedule
from drivers.store import model_root, model_store
from inference.errors import UsageError
from jobs import refresh, train
from shared_runs import made_once, run_folder
from test_refresh import args, run, texts, write_batch


def test_the_schedule_runs_a_guided_pass_when_the_documents_reach_growth_times_the_last_full_fit():
    modes = ("accumulate", "online", "batch")
    history = {"documents": 40, "base_documents": 40}
    assert schedule.decide(history, 39, 2.0, True, modes).mode == "accumulate"
    assert schedule.decide(history, 40, 2.0, True, modes).mode == "batch"
    assert schedule.decide(history, 40, 2.0, False, modes).mode == "accumulate"     # no training corpus
    assert schedule.decide(history, 40, 2.0, True, ("accumulate",)).mode == "accumulate"
    assert schedule.decide(history, 1, 1.0, True, modes).mode == "batch"            # growth 1: every time
    after_guided = {"documents": 80, "base_documents": 40, "guided_documents": 80}
    assert schedule.decide(after_guided, 40, 2.0, True, modes).mode == "accumulate"
    assert schedule.recorded_fit(after_guided, "accumulate", 120) == 80
    assert schedule.recorded_fit(after_guided, "batch", 160) == 160
    assert schedule.fitted_documents({"documents": 7}) == 7              # a root refreshed before the schedule
    # revisions replace documents the root has: the union does not grow by them
    assert schedule.decide(history, 40, 2.0, True, modes, revised=40).mode == "accumulate"
    assert schedule.decide(history, 50, 2.0, True, modes, revised=10).mode == "batch"
    assert schedule.decide(history, 50, 2.0, True, modes, revised=11).mode == "accumulate"


@pytest.fixture(scope="module")
def stream(spark_session, tmp_path_factory):
    """One LDA (K=3, V=60) drawn 220 times: a base model of 40 documents, three batches of 40, 60 held out. Made
    once per test run (both pytest-xdist workers read it, tests/shared_runs.py); tests write elsewhere."""
    work = run_folder(tmp_path_factory) / "refresh-auto"
    docs = texts(220, 11, "s")
    parts = [docs[:40], docs[40:80], docs[80:120], docs[120:160]]
    raws = [str(work / f"b{i}.jsonl") for i in range(len(parts))]
    with made_once(work) as make:
        if make:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            for raw, part in zip(raws, parts):
                write_batch(raw, part)
            prepare_corpus(spark_session, raws[0], str(work / "c0"), min_df=1, max_df=1.0, language="none")
            train.train(spark_session, train.parse_request(
                ["--corpus", work / "c0", "--output", work / "m0", "--topics", 3, "--iterations", 20, "--seed", 3]))
            reports = [run(spark_session, "--model", work / "root", "--input", raw, "--iterations", 5,
                           "--guided-iterations", 5, *(["--base", work / "m0"] if i == 0 else []))
                       for i, raw in enumerate(raws[1:])]
            (work / "reports.json").write_text(json.dumps(reports))
    return work, docs, raws, json.loads((work / "reports.json").read_text())


def test_the_default_refresh_reads_the_batch_between_guided_passes(stream):
    work, _, _, reports = stream
    assert [r["mode"] for r in reports] == ["batch", "accumulate", "batch"]   # 80 >= 2x40; 120 < 2x80; 160
    assert all(r["schedule"]["requested"] == "auto" for r in reports)
    root = str(work / "root")
    read = []
    for version in reversed(model_root.chain(root)[:-1]):          # version 0 is the base model
        meta = json.load(open(os.path.join(model_root.version_dir(root, version), "model.json")))
        read.append(meta["data"]["documents"])             # the documents the version's fit read
        assert meta["refresh"]["guided_documents"] == {"batch": meta["refresh"]["documents"],
                                                       "accumulate": 80}[meta["refresh"]["mode"]]
    assert read == [80, 40, 160]           # the accumulate refresh read its batch only, not the 80 before it


def test_the_default_refresh_is_within_5_percent_of_a_retrain_on_the_union(spark_session, stream, tmp_path):
    """Held-out perplexity of the refreshed root against a retrain on the union (evaluated in this process: the
    Spark job's figures, drivers/families/variational/evaluate.py)."""
    work, docs, raws, _ = stream
    vocab = os.path.join(model_store.resolve(str(work / "root")), "vocab.parquet")
    test_raw = write_batch(tmp_path / "test.jsonl", docs[160:])
    prepare_corpus(spark_session, test_raw, str(tmp_path / "test"), vocab=vocab)
    union = tmp_path / "union.jsonl"
    union.write_text("".join(open(r).read() for r in raws))
    prepare_corpus(spark_session, str(union), str(tmp_path / "cu"), vocab=vocab)
    train.train(spark_session, train.parse_request(
        ["--corpus", tmp_path / "cu", "--output", tmp_path / "retrain", "--topics", 3, "--iterations", 20,
         "--seed", 3]))
    retrain = evaluate_model(None, str(tmp_path / "retrain"), str(tmp_path / "test"))["perplexity"]
    refreshed = evaluate_model(None, model_store.resolve(str(work / "root")), str(tmp_path / "test"))["perplexity"]
    assert refreshed <= 1.05 * retrain, (refreshed, retrain)


def test_versions_are_named_by_number_and_base_is_version_0(spark_session, stream, tmp_path):
    work = stream[0]
    root = str(work / "root")
    names = list(reversed(model_root.chain(root)))                  # oldest first: 000000 (the base) .. 000003
    assert [n[:6] for n in names] == ["000000", "000001", "000002", "000003"]
    for typed, name in (("1", names[1]), ("000002", names[2]), ("base", names[0]), ("0", names[0]),
                        ("latest", names[3]), (names[3], names[3])):
        assert model_root.resolve(root, typed) == model_root.version_dir(root, name), typed
    base = model_store.load_model(str(work / "m0"))
    assert np.array_equal(model_store.load_model(root, "base").lambda_, base.lambda_)
    with pytest.raises(UsageError, match="has no version '7'"):
        model_root.resolve(root, "7")
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    back = run(spark_session, "--model", copy, "--rollback", "base")
    assert back["version"] == names[0] and model_root.latest(str(copy)) == names[0]
    assert sorted(os.listdir(copy / model_root.DOC_TOPICS)) == ["version=base"]       # the base's documents only
    again = run(spark_session, "--model", copy, "--input", stream[2][1], "--iterations", 2, "--mode", "accumulate",
                "--reinfer-old")
    assert model_root.chain(str(copy)) == [again["version"], names[0]] and again["version"].startswith("000004")
    rows = pd.read_parquet(os.path.join(model_root.version_dir(str(copy), again["version"]), "doc_topics.parquet"))
    assert again["reinferred"] == 80 and sorted(rows.doc_id) == sorted(d for d, _ in stream[1][:80])  # base + batch


def test_the_drift_report_covers_every_version(stream, tmp_path):
    work = stream[0]
    report = refresh.run(args("--model", work / "root", "--drift-report", tmp_path / "drift"))
    assert len(report["versions"]) == 4 and len(report["steps"]) == 3 and len(report["tracks"]) == 3
    assert all(len(s["hellinger"]) == 3 for s in report["steps"]) and len(report["labels"]) == 3
    saved = json.load(open(tmp_path / "drift" / "drift.json"))
    assert saved["versions"] == report["versions"] and os.path.getsize(tmp_path / "drift" / "drift.png") > 1000
