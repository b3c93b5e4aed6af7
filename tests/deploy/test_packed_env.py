"""The packed virtual environment (deploy/package.sh --with-env, venv-pack) on the loopback standalone cluster
(a real Spark standalone cluster, master + 2 workers started with pyspark's own ``spark-class``; its model must
equal local mode's):
deploy/submit.sh --env-archive ships it with --archives ...#environment and the executors' Python workers run
./environment/bin/python from the unpacked archive (client mode: standalone clusters run no Python driver
in cluster mode). The env is built once by deploy/setup.sh test and reused while it is up to date."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import train_args
from deploy_recipes import DEPLOY, ENV_PYTHON, REPO
from jobs import train
from standalone import cluster_apps, executor_java_options

pytestmark = pytest.mark.cluster
ENV_ARCHIVE = os.path.join(REPO, "dist", "spark_topics_env.tar.gz")


@pytest.fixture(scope="session")
def packed_env():
    """dist/spark_topics_env.tar.gz, built here only when missing or stale (about 45 s)."""
    start = time.monotonic()
    result = subprocess.run([os.path.join(DEPLOY, "package.sh"), "--with-env"], capture_output=True, text=True,
                            env=dict(os.environ, PYTHON=sys.executable), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(os.path.join(REPO, "dist", "spark_topics_env.json")) as f:
        stamp = json.load(f)
    return ENV_ARCHIVE, stamp, time.monotonic() - start


class PythonWorkers:
    """The Python processes whose working directory is under ``root`` (the standalone workers' folders), seen
    by polling /proc while a job runs: [(argv, cwd)]."""

    def __init__(self, root):
        self.root, self.seen, self._stop = str(root), {}, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _poll(self):
        while not self._stop.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or pid in self.seen:
                    continue
                try:
                    cwd = os.readlink(f"/proc/{pid}/cwd")
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
                except OSError:
                    continue
                # python -m pyspark.daemon (or pyspark.worker, jobs.quiet_daemon): Spark's Python workers
                if cwd.startswith(self.root) and argv[1:2] == ["-m"] and argv[2:3] and (
                        argv[2].startswith("pyspark.") or argv[2] == "jobs.quiet_daemon"):
                    self.seen[pid] = (argv, cwd)
            time.sleep(0.1)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the executors' command lines from /proc")
def test_train_with_the_packed_env_on_the_standalone_cluster(standalone_cluster, packed_env, synthetic_lda,
                                                             spark_session, tmp_path):
    """Also the cluster's model = the local-mode model, bit for bit (the seed decides, not the master), with
    --corpus and --output relative to the submitting shell's folder (the executors run in the workers' own)."""
    url, logs = standalone_cluster
    archive, stamp, _ = packed_env
    corpus, _ = synthetic_lda
    output = tmp_path / "model"
    env = dict(os.environ, PYTHON=sys.executable, PYSPARK_PYTHON=sys.executable,
               SPARK_TOPICS_DIST=str(tmp_path / "dist"), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_TOPICS_SPARK_LOG_LEVEL="WARN")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYTHONPATH", None)
    # one executor: each executor fetches and unpacks the 230 MB archive (about 10 s of CPU)
    command = [os.path.join(DEPLOY, "submit.sh"), "--master", url, "--env-archive", archive,
               "--spark-arg", "--conf=spark.cores.max=1", "--spark-arg", "--conf=spark.executor.memory=512m",
               "--spark-arg", executor_java_options(), "train", "--corpus", os.path.relpath(corpus, tmp_path),
               "--output", "model", "--topics", "3", "--iterations", "2", "--tol", "0", "--seed", "5",
               "--inference", "variational"]
    apps_before = set(cluster_apps(logs))      # the cluster is shared by every cluster test of the session
    with PythonWorkers(logs) as workers:
        result = subprocess.run(command, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=420)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    meta = json.loads((output / "model.json").read_text())
    assert (output / "lambda.npy").exists() and meta["topics"] == 3
    assert not (output / "_checkpoint").exists() and not [p for p in logs.rglob("model") if p.is_dir()]
    local = tmp_path / "local"
    train.train(spark_session, train_args(corpus, local, "--topics", 3, "--iterations", 2, "--tol", 0, "--seed", 5))
    np.testing.assert_array_equal(np.load(local / "lambda.npy"), np.load(output / "lambda.npy"))
    assert json.loads((local / "model.json").read_text())["alpha"] == meta["alpha"]
    new_apps = [p for p in cluster_apps(logs) if p not in apps_before]
    assert new_apps, "no application ran on the standalone workers"
    # the archive was unpacked as ./environment in the executors' folders ...
    unpacked = [p for d in new_apps for p in d.glob("*/environment/bin/python")]   # app-*/<executor>/
    assert unpacked, f"no environment/bin/python under {new_apps}"
    assert [f for d in new_apps for f in d.rglob("spark_topics_code.zip")], "the code zip was not shipped"
    # ... and the executors' Python workers ran its interpreter, not the PYSPARK_PYTHON of the workers
    ours = [(argv, cwd) for argv, cwd in workers.seen.values() if any(cwd.startswith(str(d)) for d in new_apps)]
    assert ours, "no Python worker of this application was seen"
    assert {argv[0] for argv, _ in ours} == {ENV_PYTHON}, ours
    # ... as jobs/quiet_daemon.py, which their interpreter (no project installed) imported from the code zip the
    # executor fetched into its folder before its first Python task
    assert {argv[2] for argv, _ in ours} == {"jobs.quiet_daemon"}, ours
    # the env holds the project's dependencies and not pyspark (the cluster's Spark provides it)
    assert "pyspark" not in " ".join(stamp["requirements"]) and stamp["requirements"]
