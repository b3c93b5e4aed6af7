"""A real Spark standalone cluster (master + 2 workers on loopback, started with pyspark's own
``spark-class``) runs ``train`` through the deploy recipe (deploy/submit.sh: the project's code shipped
with --py-files) and produces the same model as local mode."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pyspark
import pytest

from conftest import train_args
from jobs import train

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPARK_CLASS = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")

pytestmark = pytest.mark.cluster


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


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
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


def test_train_on_standalone_cluster_matches_local(standalone_cluster, spark_session, synthetic_lda, tmp_path):
    url, logs = standalone_cluster
    corpus, _ = synthetic_lda
    flags = ["--topics", 4, "--iterations", 6, "--tol", 0, "--seed", 11]
    local = tmp_path / "local"
    train.train_lda(spark_session, train_args(corpus, local, *flags))

    cluster = tmp_path / "cluster"
    env = dict(os.environ, PYTHON=sys.executable, PYSPARK_PYTHON=sys.executable,
               SPARK_TOPICS_DIST=str(tmp_path / "dist"), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_TOPICS_SPARK_LOG_LEVEL="WARN")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [os.path.join(REPO, "deploy", "submit.sh"), "--master", url,
         "--spark-arg", "--conf=spark.cores.max=2", "--spark-arg", "--conf=spark.executor.memory=512m",
         "train", "--corpus", str(corpus), "--output", str(cluster), *map(str, flags)],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=420)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert (tmp_path / "dist" / "spark_topics_code.zip").exists()
    # the job really ran on the cluster's executors, not in local mode
    app_dirs = [p for w in logs.glob("worker*") if w.is_dir() for p in w.iterdir() if p.name.startswith("app-")]
    assert app_dirs, "no application ran on the standalone workers"
    shipped = [f for d in app_dirs for f in d.rglob("spark_topics_code.zip")]
    assert shipped, "the project's code was not shipped to the executors"
    np.testing.assert_array_equal(np.load(local / "lambda.npy"), np.load(cluster / "lambda.npy"))
    local_meta = json.loads((local / "model.json").read_text())
    cluster_meta = json.loads((cluster / "model.json").read_text())
    assert local_meta["alpha"] == cluster_meta["alpha"]
    assert shutil.which("java") or os.environ.get("JAVA_HOME")
