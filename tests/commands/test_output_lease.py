"""One run per output directory (drivers/store/lease.py): a live holder is named and refused, a killed run's lease is
taken over, racing processes get exactly one lease, and train and infer hold it while they run."""
from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import train_args
from drivers.store import lease
from inference.errors import DamagedError, RefusedError
from jobs import train


def write_lease(directory, pid, job="spark-topics train --model lda", host=None):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, lease.LEASE), "w") as f:
        json.dump({"token": "t", "job": job, "host": host or socket.gethostname(), "pid": pid,
                   "started": "2026-11-24T00:00:00Z"}, f)


def test_a_live_holder_is_refused_by_name_and_a_killed_ones_lease_taken_over(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_lease(tmp_path / "out", live.pid)
        with pytest.raises(RefusedError, match=rf"in use by another run: spark-topics train --model lda started "
                                             rf".* \(pid {live.pid}\)\. .*delete .*_lease.json"):
            lease.acquire(str(tmp_path / "out"), "second")
    finally:
        live.kill()
        live.wait()
    write_lease(tmp_path / "out", live.pid)          # its process is gone now: a killed run's lease
    holder = lease.acquire(str(tmp_path / "out"), "second")
    assert json.loads((tmp_path / "out" / lease.LEASE).read_text())["token"] == holder["token"]
    assert [n for n in os.listdir(tmp_path / "out") if "stale" in n] == []
    lease.release(str(tmp_path / "out"), holder)
    assert not (tmp_path / "out" / lease.LEASE).exists()
    write_lease(tmp_path / "other", 1, host="another-host")   # another host: never presumed dead
    with pytest.raises(RefusedError, match="another-host"):
        lease.acquire(str(tmp_path / "other"), "second")


def _race(directory, barrier, results, done):
    barrier.wait()
    try:
        holder = lease.acquire(directory, f"run {os.getpid()}")
        results.put(holder["token"])
    except RefusedError:
        results.put(None)
    done.wait(60)                 # a run lives on after taking its lease (a dead one's lease is stale)


@pytest.mark.parametrize("left", ["stale", "empty"])
def test_racing_processes_get_exactly_one_lease(tmp_path, left):
    """Six runs find a lease left by a killed run (its process gone, or killed between create and write: an old
    empty file) at once: exactly one takes it over."""
    context = multiprocessing.get_context("fork")
    barrier, results, done = context.Barrier(6), context.Queue(), context.Event()
    write_lease(tmp_path / "out", 2 ** 22 + 17)      # a stale lease (no such process) that all of them find
    if left == "empty":
        path = tmp_path / "out" / lease.LEASE
        path.write_bytes(b"")
        os.utime(path, (time.time() - 60, time.time() - 60))
    procs = [context.Process(target=_race, args=(str(tmp_path / "out"), barrier, results, done)) for _ in range(6)]
    for p in procs:
        p.start()
    tokens = [results.get(timeout=30) for _ in procs]
    done.set()
    for p in procs:
        p.join()
    winners = [t for t in tokens if t]
    assert len(winners) == 1
    assert json.loads((tmp_path / "out" / lease.LEASE).read_text())["token"] == winners[0]


def test_train_holds_the_lease_and_releases_it(spark_session, synthetic_lda, tmp_path):
    corpus, _ = synthetic_lda
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_lease(tmp_path / "m", live.pid)
        with pytest.raises(RefusedError, match="in use by another run"):
            train.train(spark_session, train_args(corpus, tmp_path / "m", "--topics", 3, "--iterations", 2))
        assert not (tmp_path / "m" / "model.json").exists()
    finally:
        live.kill()
        live.wait()
    os.remove(tmp_path / "m" / lease.LEASE)
    train.train(spark_session, train_args(corpus, tmp_path / "m", "--topics", 3, "--iterations", 2))
    assert (tmp_path / "m" / "model.json").exists() and not (tmp_path / "m" / lease.LEASE).exists()
    # infer holds its output's lease too
    from drivers.families import InferRequest
    from jobs import infer

    write_lease(tmp_path / "inferred", 2 ** 22 + 17, host="another-host")
    with pytest.raises(RefusedError, match="in use by another run"):
        infer.infer(spark_session, InferRequest(str(tmp_path / "m"), str(corpus), str(tmp_path / "inferred")))
    os.remove(tmp_path / "inferred" / lease.LEASE)
    assert infer.infer(spark_session, InferRequest(str(tmp_path / "m"), str(corpus),
                                                   str(tmp_path / "inferred")))["documents"] > 0
    assert not (tmp_path / "inferred" / lease.LEASE).exists()


def test_a_lease_on_a_hadoop_store_is_created_exclusively_through_the_jvm(spark_session, tmp_path):
    """Stores named by a URI: Hadoop's createFile(path).overwrite(false) on the driver's JVM (atomic on HDFS, ABFS,
    GCS; S3A adds the conditional PUT when it offers one). Exercised here on Hadoop's local filesystem; a scheme
    Hadoop does not know falls back to the advisory lease."""
    uri = f"file://{tmp_path}/root/{lease.LEASE}"
    os.makedirs(tmp_path / "root")
    assert lease.create_exclusive_hadoop(uri, b'{"token": "a"}', spark_session.sparkContext) is True
    assert lease.create_exclusive_hadoop(uri, b'{"token": "b"}', spark_session.sparkContext) is False
    assert json.loads((tmp_path / "root" / lease.LEASE).read_text()) == {"token": "a"}
    assert lease.create_exclusive_hadoop("nosuchfs://bucket/x/_lease.json", b"{}", spark_session.sparkContext) is None
    held = lease.acquire(f"file://{tmp_path}/other", "spark-topics refresh")   # file:// URIs: O_EXCL locally
    with pytest.raises(RefusedError, match="in use by another run"):
        lease.acquire(f"file://{tmp_path}/other", "spark-topics refresh")
    lease.release(f"file://{tmp_path}/other", held)
    assert not (tmp_path / "other" / lease.LEASE).exists()


@pytest.mark.parametrize("content, problem", [(None, "a directory"), (b"\x00\xff garbage", "not JSON"),
                                              (b"[1, 2]", "not a lease record"), (b'{"job": "x"}', "not a lease record")])
def test_a_lease_file_that_is_no_lease_is_named_for_what_it_is(tmp_path, content, problem):
    """Was: "a run started ? on ? (pid ?)"."""
    out = tmp_path / "out"
    out.mkdir()
    if content is None:
        (out / lease.LEASE).mkdir()
    else:
        (out / lease.LEASE).write_bytes(content)
    with pytest.raises(DamagedError, match=rf"_lease.json is not a lease \({problem}\): if no run is using .*out, "
                                         rf"delete it"):
        lease.acquire(str(out), "second")


def test_an_empty_lease_is_waited_for_then_taken_over(tmp_path, monkeypatch):
    """A run killed between the exclusive create and the write leaves an empty lease: it was never taken over.
    An old one is taken at once; a fresh one (its writer may be between the two) after EMPTY_LEASE_SECONDS."""
    out = tmp_path / "out"
    out.mkdir()
    path = out / lease.LEASE
    path.write_bytes(b"")
    os.utime(path, (time.time() - 60, time.time() - 60))
    holder = lease.acquire(str(out), "second")
    assert json.loads(path.read_text())["token"] == holder["token"]
    lease.release(str(out), holder)
    monkeypatch.setattr(lease, "EMPTY_LEASE_SECONDS", 0.5)
    path.write_bytes(b"")
    started = time.monotonic()
    holder = lease.acquire(str(out), "third")
    assert time.monotonic() - started >= 0.3
    assert json.loads(path.read_text())["token"] == holder["token"]
    assert sorted(os.listdir(out)) == [lease.LEASE]         # no guard, nothing moved aside left behind


def test_a_lease_written_after_it_was_found_empty_is_not_taken(tmp_path):
    """The takeover re-reads the lease under its guard: a lease found empty and old whose record was written
    meanwhile (a slow run, not a killed one) stays, and the guard is gone."""
    out = tmp_path / "out"
    path = out / lease.LEASE
    write_lease(out, os.getpid(), job="slow run")
    assert lease._remove_under_guard(str(path), {"token": "m"}, lambda: lease._is_old_empty(str(path)))
    assert json.loads(path.read_text())["job"] == "slow run"
    path.write_bytes(b"")
    os.utime(path, (time.time() - 60, time.time() - 60))
    assert lease._remove_under_guard(str(path), {"token": "m"}, lambda: lease._is_old_empty(str(path)))
    assert sorted(os.listdir(out)) == []
