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
exec .venv/bin/python -m pytest "$@"
