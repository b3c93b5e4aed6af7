"""Tests that need something installed outside .venv, which ``deploy/setup.sh test`` installs (Debian's FreeDict
dictionaries, the Airflow environment .venv-airflow). Under a bare ``pytest`` a missing prerequisite skips such
a test; under ``deploy/run-tests.sh`` (``SPARK_TOPICS_FULL_RUN=1``) it fails, naming what is missing, so the
test command never counts as tested what did not run."""
from __future__ import annotations

import os

import pytest

FULL_RUN = os.environ.get("SPARK_TOPICS_FULL_RUN") == "1"


def require(present: bool, what: str) -> None:
    """Go on when ``present``; otherwise skip (a bare pytest) or fail (the full run) with ``what`` is missing."""
    if present:
        return
    message = f"{what} (deploy/setup.sh test installs it)"
    if FULL_RUN:
        pytest.fail(f"missing prerequisite under SPARK_TOPICS_FULL_RUN=1: {message}", pytrace=False)
    pytest.skip(message)
