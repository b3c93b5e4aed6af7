"""A real Spark standalone cluster (master + 2 workers on loopback, started with pyspark's own
``spark-class``) runs ``train`` through the deploy recipe (deploy/submit.sh: the project's code shipped
with --py-files) and produces the same model as local mode."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from conftest import train_args
from jobs import train
from standalone import cluster_apps, submit_train

pytestmark = pytest.mark.cluster


def test_train_on_standalone_cluster_matches_local(standalone_cluster, spark_session, synthetic_lda, tmp_path):
    url, logs = standalone_cluster
    corpus, _ = synthetic_lda
    flags = ["--topics", 4, "--iterations", 6, "--tol", 0, "--seed", 11]
    local = tmp_path / "local"
    train.train(spark_session, train_args(corpus, local, *flags))

    cluster = tmp_path / "cluster"
    apps_before = set(cluster_apps(logs))   # the cluster is shared by every cluster test of the session
    result = submit_train(url, tmp_path, corpus, cluster, flags)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert (tmp_path / "dist" / "spark_topics_code.zip").exists()
    # the job really ran on the cluster's executors, not in local mode
    app_dirs = [p for p in cluster_apps(logs) if p not in apps_before]
    assert app_dirs, "no application ran on the standalone workers"
    shipped = [f for d in app_dirs for f in d.rglob("spark_topics_code.zip")]
    assert shipped, "the project's code was not shipped to the executors"
    np.testing.assert_array_equal(np.load(local / "lambda.npy"), np.load(cluster / "lambda.npy"))
    local_meta = json.loads((local / "model.json").read_text())
    cluster_meta = json.loads((cluster / "model.json").read_text())
    assert local_meta["alpha"] == cluster_meta["alpha"]
    assert shutil.which("java") or os.environ.get("JAVA_HOME")
