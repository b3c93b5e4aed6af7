"""deploy/: the spark-submit scripts' exact commands (YARN cluster mode with the packed env, submit.sh in client
and cluster mode), the Airflow DAG (read with ast and run against stand-ins of Airflow's classes;
test_airflow_dagbag.py loads it in Airflow itself), the cron line (parsed, its flock refusing a second run, and
run for real: it publishes a version), and every recipe's job flags through the real parser."""
from __future__ import annotations

import ast
import fcntl
import json
import os
import shlex
import subprocess
import sys
import time
import types

import pytest

from deploy_recipes import (DAG_FILE, DEPLOY, ENV_PYTHON, REPO, cron_invocation, cron_problems,
                            has_job, parse_job, read_crontab, script_examples, split_submit_script)

def run_script(script, *argv, env=None, dist=None):
    """deploy/SCRIPT ARGV with spark-submit named `spark-submit` and dist/ in a temp folder."""
    full = dict(os.environ, SPARK_SUBMIT="spark-submit", PYTHON="/usr/bin/python3-of-the-submit-host",
                SPARK_TOPICS_DIST=str(dist or "/nonexistent/dist"), **(env or {}))
    full.pop("PYSPARK_PYTHON", None)
    return subprocess.run([os.path.join(DEPLOY, script), *argv], env=full, capture_output=True, text=True,
                          timeout=60)


def printed_command(script, *argv, **kw):
    result = run_script(script, "--print-command", *argv, **kw)
    assert result.returncode == 0, result.stderr
    return shlex.split(result.stdout)


def confs(argv):
    return [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]


# ------------------------------------------------------------------------------------------ the code zip
def test_code_zip_is_importable_without_the_project_installed(tmp_path):
    """dist/spark_topics_code.zip (--py-files) holds every module and the stop-word lists, and every package
    in it is a regular one (zipimport finds no namespace package inside a zip: package.sh gives any folder of
    modules without one an ``__init__.py``), imported here by the bare interpreter of the packed env."""
    import zipfile

    result = subprocess.run([os.path.join(DEPLOY, "package.sh")], env=dict(os.environ, PYTHON=sys.executable,
                            SPARK_TOPICS_DIST=str(tmp_path)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    code = tmp_path / "spark_topics_code.zip"
    names = set(zipfile.ZipFile(code).namelist())
    sources = {os.path.relpath(os.path.join(folder, f), REPO)
               for package in ("jobs", "inference", "drivers", "partitioners")
               for folder, dirs, files in os.walk(os.path.join(REPO, package)) if "__pycache__" not in folder
               for f in files if f.endswith((".py", ".txt"))}
    assert sources <= names, sorted(sources - names)[:5]
    packages = {os.path.dirname(n) for n in names if n.endswith(".py")}
    assert {f"{p}/__init__.py" for p in packages} <= names
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    probe = subprocess.run([base, "-I", "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                            "import importlib.util as u; print(u.find_spec('drivers.preparation.text').origin)",
                            str(code)], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and probe.stdout.strip() == f"{code}/drivers/preparation/text.py", probe.stderr


def test_stopword_lists_are_readable_from_the_code_zip(tmp_path):
    subprocess.run([os.path.join(DEPLOY, "package.sh")], env=dict(os.environ, PYTHON=sys.executable,
                   SPARK_TOPICS_DIST=str(tmp_path)), capture_output=True, check=True, timeout=60)
    probe = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
             "sys.path.insert(0, sys.argv[1]); import drivers.preparation.text as t; "
             "assert t.__file__.startswith(sys.argv[1]), t.__file__; print(len(t.load_stopwords('english')))")
    result = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "spark_topics_code.zip")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and int(result.stdout) > 50, result.stderr[-1000:]


# ------------------------------------------------------------------------------------ YARN cluster mode
def test_yarn_cluster_mode_command_exactly(tmp_path):
    dist = tmp_path / "dist"
    argv = printed_command("submit-yarn.sh", "--queue", "batch", "train", "--corpus", "hdfs:///c d",
                           "--output", "hdfs:///m", "--topics", "50", dist=dist)
    assert argv == [
        "spark-submit", "--master", "yarn", "--deploy-mode", "cluster", "--name", "spark-topics-train",
        "--queue", "batch",
        "--archives", f"{dist}/spark_topics_env.tar.gz#environment",
        "--py-files", f"{dist}/spark_topics_code.zip",
        "--conf", f"spark.yarn.appMasterEnv.PYSPARK_PYTHON={ENV_PYTHON}",
        "--conf", f"spark.executorEnv.PYSPARK_PYTHON={ENV_PYTHON}",
        "--conf", "spark.python.unix.domain.socket.enabled=true",
        f"{REPO}/jobs/train.py", "--corpus", "hdfs:///c d", "--output", "hdfs:///m", "--topics", "50"]
    assert not any("spark.pyspark.driver.python" in a for a in argv)
    assert not dist.exists(), "--print-command built something"
    parse_job("train", argv[argv.index(f"{REPO}/jobs/train.py") + 1:])


def test_yarn_script_options_and_refusals(tmp_path):
    argv = printed_command("submit-yarn.sh", "--env-archive", "/shared/env.tgz", "--name", "nightly",
                           "--spark-arg", "--num-executors=8", "topics", "--model-dir", "hdfs:///m")
    assert argv[argv.index("--archives") + 1] == "/shared/env.tgz#environment"
    assert argv[argv.index("--name") + 1] == "nightly"
    assert argv[-4:] == ["--num-executors=8", f"{REPO}/jobs/topics.py", "--model-dir", "hdfs:///m"]
    refused = run_script("submit-yarn.sh", "--print-command", "--spark-arg",
                         "--conf=spark.pyspark.driver.python=/usr/bin/python3", "train")
    assert refused.returncode == 2 and "driver" in refused.stderr
    unknown = run_script("submit-yarn.sh", "--print-command", "fit", "--corpus", "c")
    assert unknown.returncode == 2 and "no jobs/fit.py" in unknown.stderr


# ------------------------------------------------------------------------------------------ submit.sh
def test_submit_client_mode_passes_this_python_to_the_driver_only():
    py = "/usr/bin/python3-of-the-submit-host"
    argv = printed_command("submit.sh", "--master", "spark://h:7077", "train", "--corpus", "c", "--output", "m",
                           "--topics", "3")
    assert argv[:5] == ["spark-submit", "--master", "spark://h:7077",
                        "--py-files", "/nonexistent/dist/spark_topics_code.zip"]
    daemon = ["spark.executorEnv.PYTHONPATH=spark_topics_code.zip", "spark.python.daemon.module=jobs.quiet_daemon"]
    assert confs(argv) == [f"spark.pyspark.driver.python={py}", f"spark.pyspark.python={py}",
                           "spark.python.unix.domain.socket.enabled=true", *daemon]
    env = printed_command("submit.sh", "--master", "spark://h:7077", "--env", "train", "--corpus", "c",
                          "--output", "m", "--topics", "3")
    assert env[env.index("--archives") + 1] == "/nonexistent/dist/spark_topics_env.tar.gz#environment"
    assert confs(env) == [f"spark.pyspark.driver.python={py}", f"spark.pyspark.python={ENV_PYTHON}",
                          "spark.python.unix.domain.socket.enabled=true", *daemon]


def test_submit_in_local_mode_runs_the_quiet_daemon_from_the_code_zip():
    """Issue 24, 3: under spark-submit in local mode (the cron line) the Python daemon is jobs.quiet_daemon,
    importable from the code zip, so retired workers print no BrokenPipeError traceback into the job's log and
    start warm; on a standalone cluster too, from the zip each executor fetches into its folder before its
    first Python task (tests/deploy/test_packed_env.py runs it); other cluster managers keep PySpark's daemon,
    and so does a command whose --spark-arg sets the executors' PYTHONPATH or daemon. The cron test runs this
    for real: a daemon module that did not import would fail its job."""
    local = confs(printed_command("submit.sh", "--master", "local[2]", "evaluate", "--model", "m", "--corpus", "c"))
    assert local[-3:] == ["spark.executorEnv.PYTHONPATH=/nonexistent/dist/spark_topics_code.zip",
                          "spark.python.daemon.module=jobs.quiet_daemon",
                          "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1"]      # jobs/spark.py LOCAL_JIT
    standalone = confs(printed_command("submit.sh", "--master", "spark://h:7077", "evaluate", "--model", "m",
                                       "--corpus", "c"))
    assert standalone[-2:] == ["spark.executorEnv.PYTHONPATH=spark_topics_code.zip",
                               "spark.python.daemon.module=jobs.quiet_daemon"]
    assert not any("extraJavaOptions" in c for c in standalone)
    for command in (("--master", "yarn"), ("--master", "k8s://h:443"),
                    ("--master", "spark://h:7077", "--spark-arg", "--conf=spark.executorEnv.PYTHONPATH=x.zip"),
                    ("--master", "local[2]", "--spark-arg", "--conf=spark.python.daemon.module=pyspark.daemon")):
        ours = confs(printed_command("submit.sh", *command, "evaluate", "--model", "m", "--corpus", "c"))  # not --conf=
        assert not any("daemon.module" in c or "executorEnv" in c for c in ours), command
    # the user's own driver options come after ours and replace them
    mine = printed_command("submit.sh", "--master", "local[2]", "--spark-arg",
                           "--conf=spark.driver.extraJavaOptions=-Xss4m", "evaluate", "--model", "m", "--corpus", "c")
    assert mine.index("--conf=spark.driver.extraJavaOptions=-Xss4m") > mine.index(
        "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1")


@pytest.mark.parametrize("how", [("--deploy-mode", "cluster"), ("--spark-arg", "--deploy-mode=cluster")])
def test_submit_cluster_mode_passes_no_submit_host_python(how):
    argv = printed_command("submit.sh", "--master", "k8s://https://k:6443", *how, "--env", "train",
                           "--corpus", "c", "--output", "m", "--topics", "3")
    assert not any("driver.python" in a for a in argv)
    assert f"spark.pyspark.python={ENV_PYTHON}" in confs(argv)   # the driver's default too
    assert "--deploy-mode" in argv or "--deploy-mode=cluster" in argv
    assert argv[argv.index("--archives") + 1].endswith("#environment")
    plain = printed_command("submit.sh", "--master", "yarn", *how, "train", "--corpus", "c", "--output", "m",
                            "--topics", "3")
    assert confs(plain) == ["spark.python.unix.domain.socket.enabled=true"]


@pytest.mark.parametrize("script,argv", [pytest.param(s, a, id=f"{s}:{' '.join(a[:3])}")
                                         for s, a in script_examples()])
def test_the_scripts_examples_parse(script, argv):
    job, flags = split_submit_script(argv)
    printed = printed_command(script, *argv)
    assert printed[printed.index(f"{REPO}/jobs/{job}.py") + 1:] == flags
    parse_job(job, flags)


# -------------------------------------------------------------------------------------------- Airflow
def _dag_tree():
    with open(DAG_FILE) as f:
        return ast.parse(f.read(), DAG_FILE)


def _calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) == name]


def test_dag_is_airflow_3_style_daily_without_catchup_one_run_at_a_time():
    tree = _dag_tree()
    imports = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("airflow.sdk", "DAG") in imports
    assert ("airflow.providers.apache.spark.operators.spark_submit", "SparkSubmitOperator") in imports
    (dag,) = _calls(tree, "DAG")
    kwargs = {k.arg: k.value for k in dag.keywords}
    assert "schedule_interval" not in kwargs                    # removed in Airflow 3
    assert ast.literal_eval(kwargs["schedule"]) == "@daily"
    assert ast.literal_eval(kwargs["catchup"]) is False
    assert ast.literal_eval(kwargs["max_active_runs"]) == 1
    assert "start_date" in kwargs
    (task,) = _calls(tree, "SparkSubmitOperator")
    assert {k.arg for k in task.keywords} >= {"application", "application_args", "py_files", "archives", "conf"}


def _run_dag_file(monkeypatch, env):
    """Execute the DAG file with stand-ins for airflow.sdk.DAG and SparkSubmitOperator that record their
    arguments; returns (DAG kwargs, [operator kwargs])."""
    recorded = {"dag": None, "tasks": []}

    class DAG:
        def __init__(self, **kwargs):
            recorded["dag"] = kwargs

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class SparkSubmitOperator:
        def __init__(self, **kwargs):
            recorded["tasks"].append(kwargs)

    modules = {name: types.ModuleType(name) for name in (
        "airflow", "airflow.sdk", "airflow.providers", "airflow.providers.apache", "airflow.providers.apache.spark",
        "airflow.providers.apache.spark.operators", "airflow.providers.apache.spark.operators.spark_submit")}
    modules["airflow.sdk"].DAG = DAG
    modules["airflow.providers.apache.spark.operators.spark_submit"].SparkSubmitOperator = SparkSubmitOperator
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    import runpy

    runpy.run_path(DAG_FILE, run_name="spark_topics_refresh_dag")
    return recorded["dag"], recorded["tasks"]


#: SparkSubmitOperator's parameters (apache-airflow-providers-apache-spark 6.3.4) and BaseOperator's we use
OPERATOR_PARAMETERS = {
    "application", "conf", "conn_id", "files", "py_files", "archives", "driver_class_path", "jars", "java_class",
    "packages", "exclude_packages", "repositories", "total_executor_cores", "executor_cores", "executor_memory",
    "driver_memory", "keytab", "principal", "proxy_user", "name", "num_executors", "status_poll_interval",
    "application_args", "env_vars", "verbose", "spark_binary", "properties_file", "yarn_queue", "deploy_mode",
    "use_krb5ccache", "post_submit_commands", "track_driver_via_k8s_api", "yarn_track_via_rm_api",
    "yarn_rm_auth", "reconnect_on_retry", "durable",
    "task_id", "retries", "retry_delay", "execution_timeout", "pool", "queue", "doc_md",
}


def test_dag_submits_refresh_with_the_yarn_recipe(monkeypatch, tmp_path):
    dag, tasks = _run_dag_file(monkeypatch, {"SPARK_TOPICS_HOME": REPO, "SPARK_TOPICS_MODEL": "hdfs:///t/model",
                                             "SPARK_TOPICS_INCOMING": "hdfs:///t/incoming"})
    assert dag["schedule"] == "@daily" and dag["catchup"] is False and dag["max_active_runs"] == 1
    (task,) = tasks
    assert set(task) <= OPERATOR_PARAMETERS, set(task) - OPERATOR_PARAMETERS
    assert task["application"] == f"{REPO}/jobs/refresh.py" and os.path.isfile(task["application"])
    args = parse_job("refresh", task["application_args"])
    assert (args.model, args.input) == ("hdfs:///t/model", "hdfs:///t/incoming")
    # the same recipe as deploy/submit-yarn.sh: archive alias, code zip, the Python settings
    yarn = printed_command("submit-yarn.sh", "refresh", dist=f"{REPO}/dist")
    assert task["deploy_mode"] == "cluster"
    assert task["archives"] == yarn[yarn.index("--archives") + 1]
    assert task["py_files"] == yarn[yarn.index("--py-files") + 1]
    assert [f"{k}={v}" for k, v in task["conf"].items()] == confs(yarn)
    assert not any("driver.python" in k for k in task["conf"])


# ----------------------------------------------------------------------------------------------- cron
def test_cron_line_parses():
    assignments, jobs = read_crontab()
    assert len(jobs) == 1
    when, command = jobs[0]
    assert cron_problems(when, "vixie") == []
    words = shlex.split(command)
    assert words[:5] == ["flock", "-n", "-E", str(BUSY), "$SPARK_TOPICS_LOCK"]
    assert "%" not in command.replace("\\%", ""), "cron turns an unescaped % into a newline"
    used = set(__import__("re").findall(r"\$\{?(\w+)", command))
    assert used <= set(assignments), f"undefined in the crontab: {used - set(assignments)}"
    assert not any("$" in v for v in assignments.values()), "cron does not expand variables in assignments"
    assert os.path.isabs(assignments["SPARK_TOPICS_HOME"]) and os.path.isabs(assignments["PYTHON"])
    assert assignments["PYTHON"].startswith(assignments["SPARK_TOPICS_HOME"])


def test_cron_line_runs_refresh_with_flags_it_accepts():
    job, flags = cron_invocation()
    assert job == "refresh" and has_job(job)
    args = parse_job(job, flags)
    assert args.model == read_crontab()[0]["SPARK_TOPICS_MODEL"]


def cron_environment(tmp_path, **overrides):
    """The crontab's assignments pointed at tmp_path, as cron would pass them to /bin/sh (plus PATH)."""
    assignments, _ = read_crontab()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           **assignments, "SPARK_TOPICS_HOME": REPO, "PYTHON": sys.executable, "SPARK_MASTER": "local[2]",
           "SPARK_TOPICS_MODEL": str(tmp_path / "root"), "SPARK_TOPICS_INCOMING": str(tmp_path / "incoming"),
           "SPARK_TOPICS_LOCK": str(tmp_path / "refresh.lock"), "SPARK_TOPICS_LOG": str(tmp_path / "refresh.log"),
           "SPARK_TOPICS_DIST": str(tmp_path / "dist"), "SPARK_TOPICS_SPARK_LOG_LEVEL": "ERROR",
           "SPARK_LOCAL_IP": "127.0.0.1", **overrides}
    for key in ("JAVA_HOME", "SPARK_SUBMIT_OPTS"):      # the test run's Java and JIT (conftest.TEST_JIT)
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def run_cron_command(env, timeout=300):
    (_, command), = read_crontab()[1]
    start = time.monotonic()
    result = subprocess.run(["/bin/sh", "-c", command], env=env, capture_output=True, text=True, timeout=timeout)
    return result, time.monotonic() - start


BUSY = 75   # flock -E 75: "skipped, the previous run holds the lock" (EX_TEMPFAIL)


def wait_until_locked(path, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
            except BlockingIOError:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nobody took the lock {path}")


def test_cron_run_while_the_lock_is_held_exits_at_once(tmp_path):
    """A second run (the first still holding the lock, here another flock process) exits 75 at once and
    starts nothing: no Spark, no package, no model root."""
    env = cron_environment(tmp_path)
    holder = subprocess.Popen(["flock", "-n", env["SPARK_TOPICS_LOCK"], "sleep", "30"])
    try:
        wait_until_locked(env["SPARK_TOPICS_LOCK"])
        result, seconds = run_cron_command(env, timeout=30)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == BUSY
    assert seconds < 5
    assert not (tmp_path / "root").exists() and not (tmp_path / "dist").exists()
    assert (tmp_path / "refresh.log").read_text() == ""


def _jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cron_line_publishes_a_version_and_a_second_run_meanwhile_is_skipped(tmp_path, sample_model):
    """The crontab's command itself, its paths pointed at a temp folder and spark-submit in local mode
    (flock -> submit.sh -> spark-submit -> jobs/refresh.py), adds a version to a root started in process from the
    session's sample model, logging to the crontab's log; a second run while it holds the lock exits 75 at once."""
    import gzip

    from jobs.cli import main

    with gzip.open(os.path.join(REPO, "sample_data", "web_chapters.jsonl.gz"), "rt") as f:
        rows = [dict(json.loads(next(f)), id=f"new-{i}") for i in range(20)]   # ids the model was not trained on
    first_batch = _jsonl(tmp_path / "first" / "docs.jsonl", rows[:10])
    _jsonl(tmp_path / "incoming" / "docs.jsonl", rows[10:])
    root = tmp_path / "root"
    main(["refresh", "--model", str(root), "--input", str(first_batch), "--base", str(sample_model[0]),
          "--iterations", "3"])
    latest, versions = (root / "LATEST").read_text(), len(os.listdir(root / "versions"))

    env = cron_environment(tmp_path)
    (_, command), = read_crontab()[1]
    first = subprocess.Popen(["/bin/sh", "-c", command], env=env)
    try:
        wait_until_locked(env["SPARK_TOPICS_LOCK"])
        second, seconds = run_cron_command(env, timeout=30)
        first.wait(timeout=600)
    finally:
        first.kill()
        first.wait()
    log = (tmp_path / "refresh.log").read_text()
    assert second.returncode == BUSY and seconds < 5
    assert first.returncode == 0, log[-3000:]
    assert (root / "LATEST").read_text() != latest
    assert len(os.listdir(root / "versions")) == versions + 1
    assert f"published {(root / 'LATEST').read_text().strip()}: 10 documents ingested (10 new" in log, log[-3000:]
    assert (tmp_path / "dist" / "spark_topics_code.zip").exists()   # submit.sh packaged the code
