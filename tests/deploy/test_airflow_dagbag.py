"""The Airflow DAG loaded by Airflow itself (DagBag: no import errors, the schedule and run limits as Airflow
reads them) and the spark-submit command its SparkSubmitOperator would run, built by the provider's own hook,
against deploy/submit-yarn.sh's. Airflow lives in its own environment, never in .venv (its Spark provider
installs pyspark-client): .venv-airflow, built by deploy/setup.sh test from deploy/airflow/requirements.txt, or
the python $SPARK_TOPICS_AIRFLOW_PYTHON names. Skipped without it under a bare pytest; under deploy/run-tests.sh
(and so in CI) a missing environment fails."""
from __future__ import annotations

import json
import os
import shlex
import subprocess

from deploy_recipes import DAG_FILE, DEPLOY, REPO
from prerequisites import require

AIRFLOW_PYTHON = os.environ.get("SPARK_TOPICS_AIRFLOW_PYTHON", os.path.join(REPO, ".venv-airflow", "bin", "python"))
RUFF = os.path.join(os.path.dirname(AIRFLOW_PYTHON), "ruff")


def require_airflow(tool=AIRFLOW_PYTHON):
    require(os.path.exists(tool), f"{os.path.basename(tool)} of the Airflow environment ({tool})")

PROBE = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
out = {"import_errors": {k: str(v)[-2000:] for k, v in bag.import_errors.items()}, "dag_ids": sorted(bag.dag_ids)}
dag = bag.dags.get("spark_topics_refresh")
if dag is not None:
    task = dag.get_task("refresh")
    out.update(schedule=dag.schedule, timetable=type(dag.timetable).__name__, catchup=dag.catchup,
               max_active_runs=dag.max_active_runs, operator=type(task).__name__,
               spark_submit=task._get_hook()._build_spark_submit_command(task.application))
print("RESULT " + json.dumps(out))
"""


def options_and_application(argv):
    """spark-submit argv -> ({(option, value)}, [application, args...])."""
    pairs, i = set(), 1
    while argv[i].startswith("--"):
        pairs.add((argv[i], argv[i + 1]))
        i += 2
    return pairs, argv[i:]


def test_dagbag_loads_the_dag_and_its_command_is_the_yarn_recipes(tmp_path):
    require_airflow()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "AIRFLOW_HOME": str(tmp_path / "airflow"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "SPARK_TOPICS_HOME": REPO,
           "SPARK_TOPICS_MODEL": "hdfs:///t/model", "SPARK_TOPICS_INCOMING": "hdfs:///t/incoming",
           "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "yarn",
                                                     "extra": {"deploy-mode": "cluster"}})}
    result = subprocess.run([AIRFLOW_PYTHON, "-c", PROBE, DAG_FILE], env=env, capture_output=True, text=True,
                            timeout=180)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    loaded = json.loads(lines[-1][len("RESULT "):])
    assert loaded["import_errors"] == {}
    assert loaded["dag_ids"] == ["spark_topics_refresh"]
    assert (loaded["schedule"], loaded["catchup"], loaded["max_active_runs"]) == ("@daily", False, 1)
    assert loaded["operator"] == "SparkSubmitOperator"

    yarn = subprocess.run([os.path.join(DEPLOY, "submit-yarn.sh"), "--print-command", "refresh", "--model-dir",
                           "hdfs:///t/model", "--input", "hdfs:///t/incoming", "--keep", "30"],
                          env=dict(os.environ, SPARK_SUBMIT="spark-submit", SPARK_TOPICS_DIST=f"{REPO}/dist"),
                          capture_output=True, text=True, timeout=60)
    assert yarn.returncode == 0, yarn.stderr
    assert options_and_application(loaded["spark_submit"]) == options_and_application(shlex.split(yarn.stdout))


def test_ruff_airflow_rules_pass_and_catch_a_removed_argument(tmp_path):
    """ruff --select AIR (Airflow 3 removals and moves, as Airflow's best practices recommend) finds nothing in
    the DAG, and finds schedule_interval (removed in Airflow 3) in a copy that uses it."""
    require_airflow(RUFF)
    def codes(path):
        result = subprocess.run([RUFF, "check", "--no-cache", "--preview", "--select", "AIR", "--output-format",
                                 "json", str(path)], capture_output=True, text=True, timeout=60)
        return [d["code"] for d in json.loads(result.stdout)]

    assert codes(DAG_FILE) == []
    with open(DAG_FILE) as f:
        old_style = f.read().replace('schedule="@daily"', 'schedule_interval="@daily"')
    (tmp_path / "dag.py").write_text(old_style)
    assert codes(tmp_path / "dag.py") == ["AIR301"]
