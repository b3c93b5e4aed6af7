"""A real Spark standalone cluster on loopback (master + 2 workers, pyspark's own ``spark-class``) and the
``deploy/submit.sh`` command the cluster tests run on it. The session fixture lives in conftest.py."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pyspark

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPARK_CLASS = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except OSError:
        return 0


def start_cluster(tmp_path_factory):
    """Start the cluster; yields ``(master url, log directory)`` and stops it afterwards."""
    logs = tmp_path_factory.mktemp("cluster")
    port, ui = free_port(), free_port()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=sys.executable)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    procs = [subprocess.Popen([SPARK_CLASS, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)], env=env,
                              stdout=open(logs / "master.log", "w"), stderr=subprocess.STDOUT)]
    url = f"spark://127.0.0.1:{port}"
    try:
        wait_for(lambda: alive_workers(ui) == 0 and _port_open(port), 90, "the master")
        for i in range(2):
            work = logs / f"worker{i}"
            work.mkdir()
            procs.append(subprocess.Popen(
                [SPARK_CLASS, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--cores", "1", "--memory", "1g", "--work-dir", str(work), "--webui-port", str(free_port())],
                env=env, stdout=open(logs / f"worker{i}.log", "w"), stderr=subprocess.STDOUT))
        wait_for(lambda: alive_workers(ui) == 2, 120, "two workers")
        yield url, logs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def executor_java_options() -> str:
    """The cluster executors' JVM options: the test run's C1-only JIT and the class archive (conftest.TEST_JIT,
    jobs/jvm_classes.py), as the session's and every job's driver get them."""
    from conftest import TEST_JIT
    from jobs.jvm_classes import java_options

    return f"--conf=spark.executor.extraJavaOptions={' '.join([TEST_JIT, *java_options()])}"


def submit_train(url: str, workdir, corpus, output, flags, **popen):
    """``deploy/submit.sh --master URL train ...`` with the project's code shipped to the executors, run in
    ``workdir`` with ``corpus`` and ``output`` relative to it, as a user types them (the executors run in the
    workers' folders: the job resolves them).

    Runs to the end (``subprocess.run``) unless ``popen`` options are given (then a ``Popen``)."""
    env = dict(os.environ, PYTHON=sys.executable, PYSPARK_PYTHON=sys.executable,
               SPARK_TOPICS_DIST=str(workdir / "dist"), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_TOPICS_SPARK_LOG_LEVEL="WARN")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYTHONPATH", None)
    command = [os.path.join(REPO, "deploy", "submit.sh"), "--master", url,
               "--spark-arg", "--conf=spark.cores.max=2", "--spark-arg", "--conf=spark.executor.memory=512m",
               "--spark-arg", executor_java_options(), "train", "--corpus", os.path.relpath(corpus, workdir),
               "--output", os.path.relpath(output, workdir), *map(str, flags)]
    if popen:
        return subprocess.Popen(command, cwd=str(workdir), env=env, **popen)
    return subprocess.run(command, cwd=str(workdir), env=env, capture_output=True, text=True, timeout=420)


def cluster_apps(logs) -> list:
    """The application directories the workers created (one per application and worker)."""
    return [p for w in logs.glob("worker*") if w.is_dir() for p in w.iterdir() if p.name.startswith("app-")]
