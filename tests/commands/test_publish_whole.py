"""One publication protocol for every directory a job writes (issue 25, items 4, 5, 13): a corpus (``prepare``)
and ``infer``'s results are published whole, as a model is; a run killed at any step leaves the old directory or
the new one complete, the next read gives the user's files back, the next run removes what the killed one left;
a failed run leaves no empty output; a killed ML fit's working directory is removed by the next fit."""
from __future__ import annotations

import json
import os
import shutil
import socket
import types

import numpy as np
import pandas as pd
import pytest

from drivers.corpora.bow import open_corpus_meta
from drivers.preparation.corpus import prepare_corpus
from drivers.store import lease, publish
from jobs import infer, train
from test_data_safety import DOCS, _write_jsonl, lda_model, tiny  # noqa: F401 (module fixtures)
from conftest import train_args
from inference.errors import DamagedError, UsageError


class Killed(BaseException):
    """A kill at a publication step (raised past every ``except Exception``, as a SIGKILL passes everything)."""


def kill_at(monkeypatch, name):
    def hook(step):
        if step == name:
            raise Killed(step)
    monkeypatch.setattr(publish, "STEP_HOOK", hook)


def hidden(parent, name):
    return sorted(p for p in os.listdir(parent) if p.startswith(f".{name}."))


OWN = {"a.txt", "b.txt"}.__contains__


def _write(directory, files):
    for name, text in files.items():
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)


@pytest.mark.parametrize("step,exchange,marked", [("staged", True, True), ("swapped", True, False),
                                                  ("moved-aside", False, True), ("swapped", False, False)])
def test_a_kill_at_any_step_leaves_the_old_or_the_new_directory_and_the_users_files(tmp_path, monkeypatch, step,
                                                                                    exchange, marked):
    """Each step of a publication, with the kernel's exchange and without it (HDFS: moved aside, then in), over a
    directory published before (marked) and one written before markers: the next read gives the user's file back,
    the next run (which takes the lease first, as every run does) completes or undoes the killed one. Before, a
    run on a store without the exchange, killed between the two renames, lost both directories (its lease had
    created an empty target, so nothing was moved back), and the user's files of an unmarked directory exchanged
    out were deleted with it."""
    out = str(tmp_path / "out")
    if marked:
        with publish.published(out, "test", OWN) as staging:
            _write(staging, {"a.txt": "old", "b.txt": "old"})
    else:
        os.makedirs(out)
        _write(out, {"a.txt": "old", "b.txt": "old"})
    _write(out, {"mine.txt": "the user's"})
    if not exchange:
        monkeypatch.setattr(publish, "_exchange", lambda a, b: False)
    kill_at(monkeypatch, step)
    with pytest.raises(Killed):
        with publish.published(out, "test", OWN) as staging:
            _write(staging, {"a.txt": "new"})
    monkeypatch.setattr(publish, "STEP_HOOK", None)
    moved_in = step == "swapped"
    if os.path.exists(out):                     # (between the two renames the target is missing)
        if marked or moved_in:
            publish.read_consistently(out, lambda d: None, own_file=OWN)      # a reader
        assert open(os.path.join(out, "a.txt")).read() == ("new" if moved_in else "old")
        assert open(os.path.join(out, "mine.txt")).read() == "the user's"
    with publish.published(out, "test", OWN) as staging:                     # the next run
        assert open(os.path.join(out, "a.txt")).read() == ("old" if step == "staged" else "new")
        _write(staging, {"a.txt": "next"})
    assert sorted(os.listdir(out)) == ["_SUCCESS", "a.txt", "mine.txt"] and hidden(tmp_path, "out") == []
    assert open(os.path.join(out, "mine.txt")).read() == "the user's"


def test_a_failed_run_leaves_no_empty_directory_it_created(spark_session, tiny, lda_model, tmp_path):
    """train, infer and refresh hold their output's lease: a directory the lease created is removed again when
    the run failed and left it empty (it was left behind, empty); a directory that was there stays."""
    with lease.hold(str(tmp_path / "kept"), "test"):
        pass
    assert not (tmp_path / "kept").exists()
    (tmp_path / "there").mkdir()
    with pytest.raises(RuntimeError):
        with lease.hold(str(tmp_path / "there"), "test"):
            raise RuntimeError("failed")
    assert (tmp_path / "there").is_dir()
    with pytest.raises(UsageError, match="not a prepared corpus"):
        train.train(spark_session, train_args(tmp_path / "no-corpus", tmp_path / "model", "--topics", 3))
    with pytest.raises(UsageError, match="input path does not exist"):
        infer.infer_documents(spark_session, str(lda_model), str(tmp_path / "no-corpus"), str(tmp_path / "inferred"))
    from test_refresh import run as refresh

    with pytest.raises(UsageError, match="the first refresh needs --base"):
        refresh(spark_session, "--model", tmp_path / "root", "--input", _write_jsonl(tmp_path / "b.jsonl", DOCS))
    assert not (tmp_path / "model").exists() and not (tmp_path / "inferred").exists()
    assert not (tmp_path / "root").exists()
    assert hidden(tmp_path, "model") == [] and hidden(tmp_path, "inferred") == []


def test_the_next_ml_fit_removes_the_working_directories_of_killed_fits(tmp_path):
    from drivers.api.work import work_directory

    host = socket.gethostname()
    killed = tmp_path / f"spark-topics-ml-{host}-999999999-0123456789ab"       # no such process
    live = tmp_path / f"spark-topics-ml-{host}-{os.getpid()}-0123456789ab"
    other_host = tmp_path / "spark-topics-ml-elsewhere-999999999-0123456789ab"
    for folder in (killed, live, other_host):
        folder.mkdir()
        (folder / "docs.parquet").write_text("")
    spark = types.SimpleNamespace(sparkContext=types.SimpleNamespace(master="local[1]"))
    work = work_directory(spark, str(tmp_path))
    assert os.path.basename(work).startswith(f"spark-topics-ml-{host}-{os.getpid()}-")
    assert not killed.exists() and live.exists() and other_host.exists()


def test_a_killed_prepare_overwrite_leaves_a_complete_corpus(spark_session, tiny, tmp_path, monkeypatch):
    """prepare --overwrite killed right after the new corpus was exchanged in: the corpus is the new one,
    complete; the user's file is back at the next read; the next run removes the old corpus. Before, a kill
    during the move-in left a new docs.parquet beside the old vocab.parquet, no corpus.json, the old corpus gone
    and the hidden .NAME.prepare-* folder forever."""
    out = tmp_path / "out"
    shutil.copytree(tiny, out)                                  # a corpus written before markers: 40 documents
    (out / "notes.txt").write_text("mine")
    (tmp_path / ".out.prepare-0123456789ab").mkdir()            # what the old code's killed runs left
    kill_at(monkeypatch, "swapped")
    with pytest.raises(Killed):
        prepare_corpus(spark_session, _write_jsonl(tmp_path / "b.jsonl", DOCS[:4]), str(out), min_df=1,
                       max_df=1.0, overwrite=True)
    monkeypatch.setattr(publish, "STEP_HOOK", None)
    meta, _ = open_corpus_meta(spark_session, str(out))
    assert meta["documents"] == 4 and (out / "notes.txt").read_text() == "mine"
    prepare_corpus(spark_session, _write_jsonl(tmp_path / "c.jsonl", DOCS[:5]), str(out), min_df=1, max_df=1.0,
                   overwrite=True)
    assert json.loads((out / "corpus.json").read_text())["documents"] == 5 and hidden(tmp_path, "out") == []
    assert (out / "notes.txt").read_text() == "mine" and not (out / "_lease.json").exists()


def test_an_incompletely_written_corpus_is_refused_in_one_line(spark_session, tiny, lda_model, tmp_path):
    """What the old prepare left when killed during its move-in (documents and vocabulary, no corpus.json), and a
    published corpus missing a file, are refused when read; a corpus written before markers is read as before."""
    half = tmp_path / "half"
    shutil.copytree(tiny, half)
    (half / "corpus.json").unlink()
    with pytest.raises(DamagedError, match=r"half is not a complete corpus: it has docs\.parquet, vocab\.parquet but "
                                         r"no corpus\.json \(a prepare was interrupted\); prepare it again") as refused:
        open_corpus_meta(spark_session, str(half))
    assert "\n" not in str(refused.value)
    assert infer.is_prepared_corpus(str(half))       # not raw text: infer refuses it as train does
    with pytest.raises(DamagedError, match="half is not a complete corpus"):
        infer.infer_documents(spark_session, str(lda_model), str(half), str(tmp_path / "o"))
    published = tmp_path / "published"
    with publish.publishing(str(published)) as staging:
        shutil.copytree(tiny, staging, dirs_exist_ok=True)
    shutil.rmtree(published / "vocab.parquet")
    with pytest.raises(DamagedError, match=r"published: 1 file\(s\) missing \(vocab\.parquet/"):
        open_corpus_meta(spark_session, str(published))
    assert open_corpus_meta(spark_session, tiny)[0]["documents"] == 40      # no _SUCCESS: as before


def test_a_killed_infer_leaves_the_earlier_results(spark_session, lda_model, tiny, tmp_path, monkeypatch):
    """A re-run of infer into a complete output killed before its results were moved in: the earlier results,
    every row; killed right after: the new ones; the next run gives the user's file back. Before, the re-run
    deleted the old results first and a kill left an empty doc_topics.parquet that pandas reads as 0 rows."""
    out = tmp_path / "out"
    first = infer.infer_documents(spark_session, str(lda_model), tiny, str(out))
    assert first["output"] == os.path.join(str(out), "doc_topics.parquet")
    rows = len(pd.read_parquet(out / "doc_topics.parquet"))
    (out / "notes.txt").write_text("mine")
    for step in ("staged", "swapped"):
        token = publish.read_marker(str(out))["token"]
        kill_at(monkeypatch, step)
        with pytest.raises(Killed):
            infer.infer_documents(spark_session, str(lda_model), tiny, str(out))
        monkeypatch.setattr(publish, "STEP_HOOK", None)
        assert len(pd.read_parquet(out / "doc_topics.parquet")) == rows == 40
        assert (publish.read_marker(str(out))["token"] == token) == (step == "staged")
    infer.infer_documents(spark_session, str(lda_model), tiny, str(out))
    assert (out / "notes.txt").read_text() == "mine" and hidden(tmp_path, "out") == []


def _edit_digit(path, after):
    """One digit after ``after`` in the file changed (the file keeps its size)."""
    text = path.read_text()
    at = next(i for i in range(text.index(after), len(text)) if text[i] in "12345678")
    path.write_text(text[:at] + str(int(text[at]) + 1) + text[at + 1:])


def _swap_rows(path):
    lam = np.load(path)
    np.save(path, lam[[1, 0] + list(range(2, len(lam)))], allow_pickle=False)


@pytest.mark.parametrize("damage,name", [(lambda d: _edit_digit(d / "model.json", '"alpha"'), "model.json"),
                                         (lambda d: _swap_rows(d / "lambda.npy"), "lambda.npy")],
                         ids=["alpha-digit", "rows-swapped"])
def test_a_same_size_edit_is_refused_by_the_content_hash(lda_model, tmp_path, monkeypatch, damage, name):
    """The manifest's sizes passed one digit of alpha changed or two rows of lambda swapped (the model then loaded
    as if intact); its content hashes do not. A file is hashed once per process and version (a model opened
    again reads nothing more); a manifest written before hashes is checked by size, as before."""
    from drivers.store import manifest
    from drivers.store import model_store

    copy = tmp_path / "model"
    shutil.copytree(lda_model, copy)
    hashed = []
    real = manifest.hashlib.blake2b
    monkeypatch.setattr(manifest.hashlib, "blake2b", lambda **kw: hashed.append(1) or real(**kw))
    model_store.load_model(str(copy))
    files = len(publish.read_marker(str(copy))["files"])
    model_store.load_model(str(copy))
    assert len(hashed) == files
    size = os.path.getsize(copy / name)
    damage(copy)
    assert os.path.getsize(copy / name) == size
    with pytest.raises(DamagedError, match=rf"model: 1 file\(s\) changed since it was written \({name}: same size, "
                                         rf"another content hash\), compared with its _SUCCESS manifest") as refused:
        model_store.load_model(str(copy))
    assert "\n" not in str(refused.value)
    marker = publish.read_marker(str(copy))
    del marker[manifest.HASHES]                               # a manifest written before hashes
    (copy / publish.MARKER).write_text(json.dumps(marker))
    model_store.load_model(str(copy))


def test_a_tree_directory_is_published_whole_and_keeps_the_users_files(tmp_path):
    """save_tree deleted TREE_DIR (the user's files in it too) and renamed its new one in: a kill in between left
    no tree. It is published as the other outputs are."""
    from drivers.models.tree.prior_tree import load_tree, save_tree

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "notes.txt").write_text("mine")
    concepts = pd.DataFrame({"concept": [0], "lang_a": ["en"], "word_a": ["son"], "lang_b": ["es"], "word_b": ["hijo"]})
    save_tree(str(tree), concepts, {"languages": ["en", "es"], "report": {"concepts": 1}})
    assert (tree / "notes.txt").read_text() == "mine" and (tree / publish.MARKER).exists()
    assert load_tree(str(tree))[1]["report"]["concepts"] == 1 and hidden(tmp_path, "tree") == []
