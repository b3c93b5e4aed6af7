"""deploy/submit.sh and submit-yarn.sh from a shell without the project's venv activated: they use .venv's python
(which has pyspark) rather than a python3 on the PATH without it."""
from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from deploy_recipes import DEPLOY, REPO

VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")


@pytest.mark.skipif(not os.path.exists(VENV_PYTHON), reason="no .venv (deploy/setup.sh makes it)")
@pytest.mark.parametrize("script", ["submit.sh", "submit-yarn.sh"])
def test_submit_without_the_venv_activated_uses_the_venvs_python(script, tmp_path):
    bare = tmp_path / "bin"                      # a PATH whose python3 has no pyspark, and no spark-submit
    bare.mkdir()
    (bare / "python3").write_text("#!/bin/sh\necho 'No module named pyspark' >&2\nexit 1\n")
    (bare / "python3").chmod(0o755)
    env = {"PATH": f"{bare}:/usr/bin:/bin", "HOME": str(tmp_path), "SPARK_TOPICS_DIST": str(tmp_path / "dist")}
    result = subprocess.run([os.path.join(DEPLOY, script), "--print-command", "train", "--corpus", "c",
                             "--output", "m", "--topics", "2"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    argv = shlex.split(result.stdout)
    pyspark_bin = subprocess.run([VENV_PYTHON, "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    assert argv[0] == os.path.join(pyspark_bin, "bin", "spark-submit")
    if script == "submit.sh":                    # client mode: the driver runs this python
        assert f"spark.pyspark.driver.python={VENV_PYTHON}" in argv
    with_python = subprocess.run([os.path.join(DEPLOY, script), "--print-command", "train"],
                                 env=dict(env, PYTHON=VENV_PYTHON, SPARK_SUBMIT="spark-submit"),
                                 capture_output=True, text=True, timeout=60)
    assert shlex.split(with_python.stdout)[0] == "spark-submit"          # $SPARK_SUBMIT still wins
