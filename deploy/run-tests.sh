#!/usr/bin/env bash
# One command from a fresh clone: set up the test environment and run the whole test suite
# (unit tests, Spark local-mode tests, and a real standalone cluster on loopback).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
deploy/setup.sh test
exec .venv/bin/python -m pytest "$@"
