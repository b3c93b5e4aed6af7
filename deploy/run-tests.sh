#!/usr/bin/env bash
# One command from a fresh clone: set up the test environment and run the whole test suite
# (unit tests, Spark local-mode tests, and a real standalone cluster on loopback).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
deploy/setup.sh test
# tests whose prerequisites setup installs (FreeDict, .venv-airflow) fail here when one is missing, instead of
# skipping as under a bare pytest (tests/prerequisites.py)
export SPARK_TOPICS_FULL_RUN=1
# two pytest processes (one per core, at most SPARK_TOPICS_TEST_WORKERS), each with its own SparkSession; the
# tests that share the standalone cluster, the local[1] application or dist/ run in one of them (tests/conftest.py)
workers="${SPARK_TOPICS_TEST_WORKERS:-$(( $(nproc) < 2 ? $(nproc) : 2 ))}"
if [ "$workers" -gt 1 ]; then
  exec .venv/bin/python -m pytest -n "$workers" --dist loadgroup "$@"
fi
exec .venv/bin/python -m pytest "$@"
