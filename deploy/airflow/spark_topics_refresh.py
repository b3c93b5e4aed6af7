"""Airflow 3 DAG: ``spark-topics refresh`` once a day on YARN (cluster mode, the packed environment).

Install: Airflow 3 with ``apache-airflow-providers-apache-spark`` (its own environment, never the project's
``.venv``: the provider installs ``pyspark-client``), a Spark client and the cluster's ``HADOOP_CONF_DIR`` on
the workers; copy this file into the DAGs folder. The ``spark_default`` connection names the cluster, e.g.
``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}'``.
Environment of the Airflow workers (defaults below):

* ``SPARK_TOPICS_HOME``: a checkout of spark-topics with ``dist/`` built by ``deploy/package.sh --with-env``
  (the code zip and the packed env shipped to YARN, the same recipe as ``deploy/submit-yarn.sh``);
* ``SPARK_TOPICS_MODEL``: the model root (``versions/<version>/``, ``LATEST``); the first refresh of a new
  root is run by hand with ``--base MODEL_DIR``;
* ``SPARK_TOPICS_INCOMING``: the folder new documents are dropped into; documents already ingested (same id,
  same text) are skipped, so old files may stay.

``max_active_runs=1`` keeps runs of this DAG from overlapping (``catchup=False``: a paused DAG does not
replay missed days; a refresh reads whatever is new). The model root's lease (taken by ``refresh`` itself)
is what protects the root against any other writer.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG

HOME = os.environ.get("SPARK_TOPICS_HOME", "/opt/spark-topics")
MODEL_ROOT = os.environ.get("SPARK_TOPICS_MODEL", "hdfs:///spark-topics/model")
INCOMING = os.environ.get("SPARK_TOPICS_INCOMING", "hdfs:///spark-topics/incoming")
ENV_PYTHON = "./environment/bin/python"   # inside the unpacked --archives ...#environment

with DAG(
    dag_id="spark_topics_refresh",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["spark-topics"],
    doc_md=__doc__,
):
    SparkSubmitOperator(
        task_id="refresh",
        conn_id="spark_default",
        name="spark-topics-refresh",
        deploy_mode="cluster",
        application=f"{HOME}/jobs/refresh.py",
        py_files=f"{HOME}/dist/spark_topics_code.zip",
        archives=f"{HOME}/dist/spark_topics_env.tar.gz#environment",
        conf={
            "spark.yarn.appMasterEnv.PYSPARK_PYTHON": ENV_PYTHON,
            "spark.executorEnv.PYSPARK_PYTHON": ENV_PYTHON,
            "spark.python.unix.domain.socket.enabled": "true",
        },
        application_args=["--model-dir", MODEL_ROOT, "--input", INCOMING, "--keep", "30"],
        retries=0,
    )
