"""No traceback on success: the JVM retires idle Python workers (after a minute without Python tasks starting or
ending, and when the session stops) by closing their socket, and PySpark 4's daemon printed each such worker's
BrokenPipeError traceback to the job's stderr; jobs/quiet_daemon.py, which local jobs run, does not."""
from __future__ import annotations

import os
import pathlib
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import pytest


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOISE = ("Traceback", "BrokenPipeError", "Broken pipe")


def retire_an_idle_worker(module: str, folder) -> str:
    """Start ``python -m MODULE pyspark.worker`` as Spark's JVM does for the jobs (Unix domain sockets, worker
    reuse, killWorkerOnFlushFailure), take a worker, then close its socket as the JVM retires an idle worker;
    the daemon's stderr."""
    env = dict(os.environ, SPARK_REUSE_WORKER="1", PYTHON_DAEMON_KILL_WORKER_ON_FLUSH_FAILURE="true",
               PYTHON_UNIX_DOMAIN_ENABLED="true", PYTHON_WORKER_FACTORY_SOCK_DIR=str(folder), PYTHONPATH=REPO)
    daemon = subprocess.Popen([sys.executable, "-m", module, "pyspark.worker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    try:
        (length,) = struct.unpack("!i", daemon.stdout.read(4))
        path = daemon.stdout.read(length).decode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(path)
            pid = struct.unpack("!i", sock.recv(4, socket.MSG_WAITALL))[0]    # the forked worker, idle
            assert pid > 0
        time.sleep(2)                        # the worker reads end-of-file, reports it, exits
    finally:
        daemon.stdin.close()                 # the JVM's way of stopping the daemon
        daemon.wait(timeout=30)
    return daemon.stderr.read().decode(errors="replace")


def test_pyspark_daemon_prints_a_retired_workers_broken_pipe_and_ours_does_not():
    with tempfile.TemporaryDirectory(prefix="st-") as folder:      # a short path: socket paths are limited
        assert "BrokenPipeError" in retire_an_idle_worker("pyspark.daemon", folder)      # what the jobs printed
        assert retire_an_idle_worker("jobs.quiet_daemon", folder) == ""


@pytest.fixture(scope="module")
def evaluate_run(tiny_models, tiny_corpora_of_kind):
    """``evaluate`` of a Gibbs model (the tiny lda-gibbs, tests/shared_runs.py) through the CLI, as a user runs it
    (local[2], its own session and daemon), with temp folders of its own (socket paths must stay short) holding a
    killed job's socket folder: (the finished process, the Python temp folder, the JVM's temp folder)."""
    from drivers import registry

    model, corpus = tiny_models["lda-gibbs"], tiny_corpora_of_kind[registry.BAG_OF_WORDS]
    short = pathlib.Path(tempfile.mkdtemp(prefix="st-", dir="/tmp"))
    java_tmp, python_tmp = short / "j", short / "p"
    java_tmp.mkdir()
    python_tmp.mkdir()
    stale = python_tmp / "spark-topics-sockets-999999999-abc"          # a killed job's (no such pid)
    stale.mkdir()
    (stale / ".left.sock").write_text("")
    env = dict(os.environ, SPARK_TOPICS_SPARK_LOG_LEVEL="WARN", TMPDIR=str(python_tmp),
               JAVA_TOOL_OPTIONS=f"-Djava.io.tmpdir={java_tmp}")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    run = subprocess.run([sys.executable, "-m", "jobs.cli", "evaluate", "--model", model, "--corpus", corpus,
                          "--master", "local[2]", "--conf", "spark.ui.enabled=false"], cwd=short, env=env,
                         capture_output=True, text=True, timeout=900)
    yield run, python_tmp, java_tmp
    shutil.rmtree(short)


def test_a_cli_job_prints_no_traceback_and_leaves_no_socket_files(evaluate_run):
    """One job process for both claims (a Spark application costs 30-45 CPU s):

    ``evaluate`` of a Gibbs model prints its figures and no traceback (a retired worker's BrokenPipeError).

    Every local job used to leave one to three .<uuid>.sock files in the JVM's temp folder; now they go to a
    folder of the job's own, removed at exit, and a killed job's folder is removed by the next job. (The job gets
    temp folders of its own, so other Spark processes on the machine do not disturb the count.)"""
    run, python_tmp, java_tmp = evaluate_run
    assert run.returncode == 0, run.stderr[-3000:]
    assert "held-out perplexity" in run.stdout
    assert not [word for word in NOISE if word in run.stderr], run.stderr[-3000:]
    sockets = [p for p in java_tmp.rglob("*") if p.is_socket()] + [p for p in python_tmp.rglob("*") if p.is_socket()]
    assert sockets == [], sockets
    assert not [p for p in os.listdir(python_tmp) if p.startswith("spark-topics-sockets-")], os.listdir(python_tmp)


def test_a_failed_task_prints_no_java_trace_unless_verbose(spark_session, monkeypatch):
    """A truncated .gz or Parquet input printed Spark's executor error log, a 70-98-frame Java trace, above the
    job's one line naming the file. Jobs run without -v turn Spark's task-failure loggers off in the session they
    create (measured: `prepare` of a truncated .gz prints the one line alone); -v keeps them."""
    import logging

    from jobs import spark as jobs_spark

    log4j = spark_session.sparkContext._jvm.org.apache.logging.log4j
    names = jobs_spark.TASK_FAILURE_LOGGERS

    def levels():
        return {str(log4j.LogManager.getLogger(name).getLevel()) for name in names}

    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)
    monkeypatch.setitem(jobs_spark._LOGGING, "quiet_task_failures", False)
    jobs_spark.setup_logging(verbose=True)
    assert jobs_spark._LOGGING["quiet_task_failures"] is False
    jobs_spark.setup_logging(verbose=False)
    assert jobs_spark._LOGGING["quiet_task_failures"] is True
    before = {name: log4j.LogManager.getLogger(name).getLevel() for name in names}   # pytest-spark's: off
    try:
        for name in names:                       # as in a session of a job: Spark's default levels
            log4j.core.config.Configurator.setLevel(name, log4j.Level.WARN)
        jobs_spark.quiet_task_failures(spark_session.sparkContext)
        assert levels() == {"OFF"}
    finally:
        for name, level in before.items():
            log4j.core.config.Configurator.setLevel(name, level)


def test_a_local_job_runs_the_quiet_daemon_and_a_c1_jit_unless_told_otherwise():
    """The settings a job adds to the local session it starts: the quiet daemon and the JVM's C1-only JIT (a local
    job's CPU about 40% lower, jobs/spark.py LOCAL_JIT); a --conf of the user's for either key wins, and a cluster
    session gets neither."""
    from jobs.jvm_classes import java_options
    from jobs.spark import DAEMON_KEY, DRIVER_JAVA_KEY, LOCAL_JIT, QUIET_DAEMON, local_defaults

    java = " ".join([LOCAL_JIT, *java_options()])       # and the class archive when there is one (test_jvm_classes)
    assert local_defaults("local[2]", set()) == {DAEMON_KEY: QUIET_DAEMON, DRIVER_JAVA_KEY: java}
    assert local_defaults(None, set()) == {DAEMON_KEY: QUIET_DAEMON, DRIVER_JAVA_KEY: java}
    assert local_defaults("local[*]", {DRIVER_JAVA_KEY}) == {DAEMON_KEY: QUIET_DAEMON}
    assert local_defaults("spark://h:7077", set()) == {} and local_defaults("yarn", set()) == {}


def test_the_session_daemon_forks_warm_workers(spark_session):
    """A Python worker of a local session starts warm (jobs/quiet_daemon.py): PySpark from its installed package,
    not compiled from ``pyspark.zip``; the project's modules, pandas and numba imported by the daemon before it
    forked; what the daemon imported frozen out of the garbage collector that PySpark runs after every task."""
    def worker_state(_):
        import gc
        import sys

        import pyspark
        return pyspark.__file__, gc.get_freeze_count(), sorted(
            name for name in ("drivers.engines.variational.local_steps", "inference.mapper", "pandas", "numba")
            if name in sys.modules)

    path, frozen, modules = spark_session.sparkContext.parallelize([0], 1).map(worker_state).collect()[0]
    assert "pyspark.zip" not in path, path
    assert frozen > 10_000, frozen
    assert modules == ["drivers.engines.variational.local_steps", "inference.mapper", "numba", "pandas"]


def test_the_daemon_preloads_every_module_and_prints_nothing():
    """Every module of the project's packages imports in the daemon (none left to the workers), and nothing reaches
    the daemon's stdout, where it tells the JVM its port."""
    run = subprocess.run([sys.executable, "-c", "from jobs.quiet_daemon import preload; failed = preload()\n"
                          "import sys; sys.stderr.write(repr(failed))"],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert run.returncode == 0 and run.stdout == "" and run.stderr.endswith("[]"), (run.stdout, run.stderr[-2000:])
