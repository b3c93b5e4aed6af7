"""Nothing lost, nothing silently wrong (issue 16): the user's files survive, a model directory holds one model,
damaged model files and zero counts are refused in one line, jobs leave no socket files behind."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from conftest import train_args
from drivers.corpora.bow import load_corpus
from drivers.store import model_store, publish, topics_text
from jobs import train
from partitioners.topic import TopicPartitioner
from tiny_corpora import FAMILY_FLAGS, tiny_segmented
from inference.errors import DamagedError, RefusedError, UsageError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_segmented(tmp_path_factory.mktemp("safety") / "corpus")


@pytest.fixture(scope="module")
def lda_model(tiny_models):
    """The run's tiny lda model (the tests damage copies of it)."""
    return tiny_models["lda"]


def _train(spark, corpus, out, model, *extra):
    family = "variational" if model in ("lda", "polylda") else "gibbs"
    return train.train(spark, train_args(corpus, out, "--model", model, *FAMILY_FLAGS[family], *extra))


@pytest.mark.parametrize("model,extra", [("lda", ()), ("lda-gibbs", ("--keep-checkpoint",)), ("lda-gibbs", ())])
def test_checkpoint_dir_keeps_the_users_files(spark_session, tiny, tmp_path, model, extra):
    """--checkpoint-dir DIR: the run keeps its checkpoint in a subfolder of its own and deletes only that."""
    mine = tmp_path / "dir" / "notes.txt"
    mine.parent.mkdir()
    mine.write_text("the user's own file")
    (tmp_path / "dir" / "results").mkdir()
    _train(spark_session, tiny, tmp_path / "m", model, "--checkpoint-dir", tmp_path / "dir", *extra)
    assert mine.read_text() == "the user's own file" and (tmp_path / "dir" / "results").is_dir()
    ours = [p for p in os.listdir(tmp_path / "dir") if p.startswith("spark-topics-checkpoint-")]
    assert len(ours) == (1 if extra else 0), ours


def test_a_model_directory_holds_one_model(spark_session, tiny, lda_model, tmp_path):
    """A Gibbs model trained where an LDA model was (and back) is the new model, not the old one's files."""
    out = tmp_path / "m"
    shutil.copytree(lda_model, out)                  # an lda model as train wrote it
    (out / "mine.txt").write_text("kept")
    _train(spark_session, tiny, out, "lda-gibbs")
    assert not (out / "lambda.npy").exists() and not (out / "elbo.png").exists()
    loaded = model_store.load_model(str(out))
    np.testing.assert_array_equal(loaded.lambda_, np.load(out / "topic_word.npy"))
    assert (out / "topics.txt").read_text() == topics_text.format_model_topics(loaded, 10) + "\n"
    _train(spark_session, tiny, out, "lda")
    assert not any((out / name).exists() for name in ("segment_topics.parquet", "loglik.png", "chain"))
    loaded = model_store.load_model(str(out))
    assert loaded.meta["model"] == "lda" and (out / "mine.txt").read_text() == "kept"
    np.testing.assert_array_equal(np.load(out / "topic_word.npy"), loaded.topic_word())  # the common file, lda's


def _damaged(lda_model, tmp_path, damage, remark=True) -> str:
    """A copy of the model with ``damage`` done to it; ``remark``: its completion marker written again after the
    damage (a directory published that way: only the model checks can catch it)."""
    copy = tmp_path / "damaged"
    shutil.copytree(lda_model, copy)
    damage(copy)
    if remark and (copy / publish.MARKER).exists():
        publish.write_marker(str(copy), publish.read_marker(str(copy))["token"])
    return str(copy)


def _edit_json(path, **changes):
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


def _set_lambda(directory, edit):
    lam = np.load(directory / "lambda.npy")
    np.save(directory / "lambda.npy", edit(lam), allow_pickle=False)


@pytest.mark.parametrize("damage,message", [
    (lambda d: _set_lambda(d, lambda l: np.where(np.arange(l.size).reshape(l.shape) == 7, np.nan, l)),
     r"lambda\.npy holds 1 NaN or infinite values"),
    (lambda d: _set_lambda(d, lambda l: -l), r"lambda\.npy holds 90 non-positive values"),
    (lambda d: _set_lambda(d, lambda l: l[:, :20]), r"lambda\.npy is 3x20, but model\.json has 3 topics and the "
                                                   r"vocabulary 30 terms"),
    (lambda d: _edit_json(d / "model.json", topics=4), r"lambda\.npy is 3x30, but model\.json has 4 topics"),
    (lambda d: _edit_json(d / "model.json", alpha=[0.1, 0.2]), r"alpha is not 3 positive numbers"),
    (lambda d: (d / "model.json").write_text((d / "model.json").read_text()[:50]), r"model\.json is not valid JSON"),
    (lambda d: (d / "lambda.npy").unlink(), r"has no lambda\.npy"),
    (lambda d: (d / "vocab.parquet").unlink(), r"has no vocab\.parquet"),
    (lambda d: (d / "lambda.npy").write_bytes(b"\x93NUMPY broken"), r"lambda\.npy cannot be read"),
    (lambda d: (d / "lambda.npy").write_bytes((d / "lambda.npy").read_bytes().replace(b"}", b" ", 1)),
     r"lambda\.npy cannot be read \(ValueError: not a \.npy array: its header is broken \(TokenError"),
    (lambda d: (d / publish.MARKER).unlink(), r"has no _SUCCESS marker: it was not completely written"),
    (lambda d: (d / "doc_topics.parquet").rename(d / "elsewhere"),
     r"file\(s\) missing \(doc_topics\.parquet/.*compared with its _SUCCESS manifest"),
    (lambda d: (d / "lambda.npy").write_bytes((d / "lambda.npy").read_bytes()[:-8]),
     r"1 file\(s\) changed since it was written \(lambda\.npy\)"),
], ids=["nan", "negative", "narrow", "topics", "alpha", "truncated-json", "missing", "no-vocab", "garbled",
        "broken-header", "no-marker", "file-gone", "truncated"])
def test_damaged_model_files_are_refused_in_one_line(lda_model, tmp_path, damage, message):
    from jobs import topics

    directory = _damaged(lda_model, tmp_path, damage, remark="marker" not in message and "manifest" not in message
                         and "since it was written" not in message)
    with pytest.raises(DamagedError, match=message) as refused:
        model_store.load_model(directory)
    assert "\n" not in str(refused.value)
    import argparse
    with pytest.raises(DamagedError, match=message):   # the jobs open models through it
        topics.run(argparse.Namespace(model_dir=directory, top_words=3, weights=False))


def test_zero_partitions_and_reducers_are_refused(spark_session, tiny, capsys):
    for flag in ("--partitions", "--reducers"):
        with pytest.raises(SystemExit):
            train_args(tiny, "out", "--topics", 3, flag, 0)
        assert "expected a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(UsageError, match="--partitions must be at least 1, got 0"):
        load_corpus(spark_session, tiny, 0)
    with pytest.raises(UsageError, match="--reducers must be at least 1, got 0"):
        TopicPartitioner.for_topics(3, 0, 2)


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


DOCS = [{"id": f"d{i}", "text": f"apples pears plums figs {'dates ' * i}kiwis"} for i in range(6)]


def test_prepare_overwrite_keeps_the_old_corpus_until_the_new_one_is_complete(spark_session, tmp_path):
    from drivers.preparation.corpus import prepare_corpus
    from drivers.preparation.options import PrepareError

    out = tmp_path / "out"
    raw = _write_jsonl(tmp_path / "docs.jsonl", DOCS)
    first = prepare_corpus(spark_session, raw, str(out), min_df=1, max_df=1.0)
    before = {name: (out / name).stat().st_mtime_ns for name in ("corpus.json", "docs.parquet", "vocab.parquet")}
    with pytest.raises(PrepareError, match="text_colum"):          # a column-name typo
        prepare_corpus(spark_session, raw, str(out), text_column="text_colum", overwrite=True)
    empty = _write_jsonl(tmp_path / "stop.jsonl", [{"id": "a", "text": "the and of"}])
    with pytest.raises(PrepareError, match="no documents left.*rejects.failed-run.*left as it was"):
        prepare_corpus(spark_session, empty, str(out), min_df=1, max_df=1.0, overwrite=True)
    assert {name: (out / name).stat().st_mtime_ns for name in before} == before
    assert json.loads((out / "corpus.json").read_text()) == first
    assert [r["id"] for r in map(json.loads, open(next((out / "rejects.failed-run").glob("part-*"))))] == ["a"]
    assert not [p for p in os.listdir(tmp_path) if ".prepare-" in p]          # no staging folder left


def test_prepare_refuses_an_output_inside_its_input_and_reads_an_input_inside_its_output(spark_session, tmp_path):
    from drivers.preparation.corpus import prepare_corpus
    from drivers.preparation.options import PrepareError

    folder = tmp_path / "texts"
    folder.mkdir()
    _write_jsonl(folder / "docs.jsonl", DOCS)
    with pytest.raises(PrepareError, match="lies inside the input"):
        prepare_corpus(spark_session, str(folder), str(folder / "corpus"))
    with pytest.raises(PrepareError, match="is the input"):
        prepare_corpus(spark_session, str(folder), str(folder), overwrite=True)
    out = tmp_path / "out"
    prepare_corpus(spark_session, str(folder / "docs.jsonl"), str(out), min_df=1, max_df=1.0)
    inside = _write_jsonl(out / "new.jsonl", DOCS[:3])                 # the new input sits in the output folder
    corpus = prepare_corpus(spark_session, inside, str(out), min_df=1, max_df=1.0, overwrite=True)
    assert corpus["documents"] == 3 and (out / "new.jsonl").exists()


def _one_line_exit(argv, match):
    """``spark-topics ARGV`` (in this process) fails with one line that matches, and a non-zero status."""
    from jobs.cli import main

    with pytest.raises(SystemExit, match=match) as failed:
        main([str(a) for a in argv])
    message = str(failed.value.code)
    assert "\n" not in message and "Traceback" not in message, message
    return message


def test_foreseeable_failures_are_one_line_messages(spark_session, tiny, tmp_path):
    import gzip

    from drivers.models.lda.informed_prior import PriorError, read_prior
    from tiny_corpora import tiny_aligned

    whole = gzip.compress("".join(json.dumps(d) + "\n" for d in DOCS * 50).encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[:len(whole) // 2])               # a truncated download
    _one_line_exit(["prepare", "--input", tmp_path / "cut.jsonl.gz", "--output", tmp_path / "p"],
                   r"spark-topics prepare: cannot read .*cut\.jsonl\.gz: .*")

    flipped = tmp_path / "flipped"
    shutil.copytree(tiny, flipped)
    part = next((flipped / "docs.parquet").glob("part-*.parquet"))
    data = bytearray(part.read_bytes())
    data[len(data) // 3:len(data) // 3 + 64] = bytes(64)                         # damaged bytes in the middle
    part.write_bytes(bytes(data))
    _one_line_exit(["train", "--corpus", flipped, "--output", tmp_path / "m1", "--topics", 3, "--iterations", 1],
                   r"cannot read the corpus .*flipped: .*; prepare it again")

    truncated = tmp_path / "truncated"
    shutil.copytree(tiny, truncated)
    part = next((truncated / "docs.parquet").glob("part-*.parquet"))
    part.write_bytes(part.read_bytes()[:len(part.read_bytes()) // 2])
    _one_line_exit(["train", "--corpus", truncated, "--output", tmp_path / "m0", "--topics", 3, "--iterations", 1],
                   r"cannot read the corpus .*truncated: .*; prepare it again")

    swapped = tmp_path / "swapped"
    shutil.copytree(tiny, swapped)
    shutil.rmtree(swapped / "vocab.parquet")
    shutil.copytree(tiny_segmented(tmp_path / "other") + "/vocab.parquet", swapped / "vocab.parquet")
    meta = json.loads((swapped / "corpus.json").read_text())
    meta["vocab_size"] = 29
    (swapped / "corpus.json").write_text(json.dumps(meta))
    _one_line_exit(["train", "--corpus", swapped, "--output", tmp_path / "m2", "--topics", 3],
                   r"vocab\.parquet has 30 terms but corpus\.json says 29: the files are not of one corpus")

    (tmp_path / "prior.txt").write_bytes("anger: h\xe9te\n".encode("latin-1"))
    with pytest.raises(PriorError, match=r"prior\.txt is not UTF-8 text"):
        read_prior(str(tmp_path / "prior.txt"))

    aligned = tiny_aligned(tmp_path / "aligned")
    _train(spark_session, aligned, tmp_path / "poly", "polylda")
    raw = _write_jsonl(tmp_path / "new.jsonl", DOCS[:2])
    _one_line_exit(["infer", "--model", tmp_path / "poly", "--input", raw, "--output", tmp_path / "i", "--lang", "xx"],
                   r"--lang xx: .*poly has no language 'xx' \(its languages: en, es\)")


def test_driver_memory_is_sized_from_the_model_or_the_run_is_refused_up_front():
    """The model decides spark.driver.memory: chosen for a local run, refused in one line when set too small, when
    a running session or spark-submit gave too little, or when the machine cannot hold it (K=500 on a 35k-word
    vocabulary used to die with java.lang.OutOfMemoryError at the default 1g). The variational engine's driver
    no longer holds K x V (the topic files): its need does not grow with K and fits Spark's default."""
    from drivers import registry
    from drivers.engines.memory import BASE_BYTES, driver_memory_conf, parse_size

    variational = registry.family("variational")
    assert variational.driver_bytes(1000, 35_000) == variational.driver_bytes(50, 35_000)
    assert driver_memory_conf(BASE_BYTES + variational.driver_bytes(1000, 35_000), None, can_set=True,
                              machine=24 << 30) == "1g"
    needed = BASE_BYTES + registry.family("gibbs").driver_bytes(500, 35_000)
    assert parse_size(driver_memory_conf(needed, None, can_set=True, machine=24 << 30)) >= needed > 1 << 30
    assert driver_memory_conf(BASE_BYTES, None, can_set=True, machine=24 << 30) == "1g"
    assert driver_memory_conf(needed, "8g", can_set=True, machine=24 << 30) is None
    with pytest.raises(RefusedError, match=r"spark.driver.memory=1g is too small .* --conf spark.driver.memory=\d+m"):
        driver_memory_conf(needed, "1g", can_set=False, machine=24 << 30)
    with pytest.raises(RefusedError, match=r"more than Spark's default 1g: pass --driver-memory"):
        driver_memory_conf(needed, None, can_set=False, machine=24 << 30)
    huge = BASE_BYTES + registry.family("gibbs").driver_bytes(5000, 2_000_000)
    with pytest.raises(RefusedError, match=r"more than this machine can give .*--max-vocab"):
        driver_memory_conf(huge, None, can_set=True, machine=24 << 30)
    assert parse_size("1.5g") == 3 << 29 and parse_size("512m") == 512 << 20


def test_python_memory_of_the_tasks_is_sized_from_the_model_or_the_run_is_refused():
    """A task's Python memory follows the larger of a mapper's U x K and a reducer's K/R x V: a run whose tasks
    cannot fit this machine (local) or the executor's spark.executor.pyspark.memory (a cluster) is refused in one
    line that says what to set."""
    from drivers.engines.memory import PYTHON_BASE_BYTES, parse_size, python_memory_check, variational_task_bytes

    small = variational_task_bytes(50, 25_000, 20_000, 2)
    assert small == PYTHON_BASE_BYTES + 4 * 8 * 20_000 * 50
    assert variational_task_bytes(1000, 25_000, 1_000, 2) == PYTHON_BASE_BYTES + 4 * 8 * 500 * 25_000
    assert "per task" in python_memory_check(small, "local[2]", {}, 2, machine=24 << 30)
    huge = variational_task_bytes(20_000, 200_000, 150_000, 2)
    with pytest.raises(RefusedError, match=r"more than this machine has .* more partitions"):
        python_memory_check(huge, "local[2]", {}, 2, machine=24 << 30)
    conf = {"spark.executor.cores": "4", "spark.executor.pyspark.memory": "1g"}
    with pytest.raises(RefusedError, match=r"spark.executor.pyspark.memory=1g is too small: .* set --conf "
                                         r"spark.executor.pyspark.memory=\d+m"):
        python_memory_check(small, "spark://host:7077", conf, 2)
    assert parse_size("1g") >= small
    assert "spark.executor.memoryOverhead" in python_memory_check(small, "yarn", {}, 2)


def test_infer_and_evaluate_size_the_driver_from_the_model(tmp_path):
    """The fold-in broadcasts the model's K x V weights once: a local infer/evaluate chooses spark.driver.memory
    from model.json (K = 1000, V = 25k died with java.lang.OutOfMemoryError at the default 1g)."""
    import json

    from drivers.engines.memory import parse_size
    from jobs.spark import fold_in_conf

    (tmp_path / "model.json").write_text(json.dumps({"model": "lda", "topics": 1000, "vocab_size": 25_000}))
    conf = fold_in_conf([str(tmp_path)], ["spark.ui.enabled=false"], None)
    chosen = dict(item.split("=", 1) for item in conf)["spark.driver.memory"]
    assert parse_size(chosen) >= 4 * 8 * 1000 * 25_000
    assert fold_in_conf([str(tmp_path / "missing")], [], None) == ["spark.driver.memory=1g"]   # the base need


def test_train_refuses_a_model_the_running_session_cannot_hold(spark_session, tiny, tmp_path, monkeypatch):
    """The test session has spark.driver.memory=2g: a model that needs more is refused before any Spark job."""
    from drivers import registry

    monkeypatch.setattr(registry.family("variational").__class__, "driver_bytes", lambda self, *args: 4 << 30)
    _one_line_exit(["train", "--corpus", tiny, "--output", tmp_path / "m", "--topics", 3],
                   r"spark.driver.memory=2g is too small for this model")
    assert not (tmp_path / "m").exists()
