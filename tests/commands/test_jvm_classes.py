"""The JVM class archive of local jobs (jobs/jvm_classes.py): used when present and whole, left out otherwise, and
mapped by the test run's own JVM (deploy/setup.sh records it)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from jobs import jvm_classes, record_jvm_classes
from jobs.spark import DRIVER_JAVA_KEY, LOCAL_JIT, local_defaults
from prerequisites import require

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_options_name_the_archive_only_when_it_can_be_used(tmp_path, monkeypatch):
    archive = tmp_path / "classes.jsa"
    assert jvm_classes.java_options(str(archive)) == []                       # none recorded
    archive.write_bytes(b"x")
    assert jvm_classes.java_options(str(archive)) == [f"-XX:SharedArchiveFile={archive}", *jvm_classes.QUIET]
    spaced = tmp_path / "a b.jsa"
    spaced.write_bytes(b"x")
    assert jvm_classes.java_options(str(spaced)) == []                        # Spark splits options at spaces
    monkeypatch.setenv(jvm_classes.SWITCH, "off")
    assert jvm_classes.java_options(str(archive)) == []
    monkeypatch.delenv(jvm_classes.SWITCH)
    # a local job's driver options: C1 and the archive of this environment when there is one
    assert local_defaults("local[2]", set())[DRIVER_JAVA_KEY] == " ".join([LOCAL_JIT, *jvm_classes.java_options()])


@pytest.mark.parametrize("child", ["false", "true"])
def test_a_failed_recording_keeps_the_old_archive_and_leaves_no_partial_file(tmp_path, child):
    """A recording that fails (exit 1) or ends without the JVM writing its archive (exit 0) replaces nothing."""
    archive = tmp_path / "classes.jsa"
    archive.write_bytes(b"the old archive")
    with pytest.raises(RuntimeError, match="recording the JVM's classes failed"):
        record_jvm_classes.build(str(archive), workdir=str(tmp_path), python=f"/bin/{child}")
    assert archive.read_bytes() == b"the old archive"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classes.jsa"]      # no partial file, no work folder


def test_submit_sh_maps_the_archive_beside_its_python(tmp_path):
    """deploy/submit.sh in local mode: the archive beside the Python it runs (PYTHON's prefix) in the driver's
    options, after C1; none when there is no archive there."""
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    python = prefix / "bin" / "python"
    python.symlink_to(sys.executable)

    def driver_options():
        env = dict(os.environ, SPARK_SUBMIT="spark-submit", PYTHON=str(python), SPARK_TOPICS_DIST=str(tmp_path))
        env.pop("PYSPARK_PYTHON", None)
        run = subprocess.run([os.path.join(REPO, "deploy", "submit.sh"), "--print-command", "--master", "local[2]",
                              "topics", "--model", "m"], env=env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        argv = shlex.split(run.stdout)
        return [argv[i + 1] for i, a in enumerate(argv) if a == "--conf" and argv[i + 1].startswith(DRIVER_JAVA_KEY)]

    assert driver_options() == [f"{DRIVER_JAVA_KEY}={LOCAL_JIT}"]
    (prefix / jvm_classes.ARCHIVE_NAME).write_bytes(b"x")
    assert driver_options() == [f"{DRIVER_JAVA_KEY}={LOCAL_JIT} -XX:SharedArchiveFile="
                                f"{prefix / jvm_classes.ARCHIVE_NAME} -Xlog:cds=off -Xlog:cds+dynamic=off"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the JVM's memory map from /proc")
def test_the_test_runs_jvm_maps_the_recorded_archive(spark_session):
    """deploy/setup.sh recorded the archive for this environment, and the session's JVM (started with the
    options tests/conftest.py adds) mapped it: the JVM accepted it, it did not fall back to loading every class."""
    path = jvm_classes.archive_path()
    require(jvm_classes.up_to_date(path), f"an up-to-date JVM class archive at {path}")
    pid = spark_session.sparkContext._gateway.proc.pid
    with open(f"/proc/{pid}/maps") as f:                  # the kernel names a mapped file by its real path
        assert os.path.realpath(path) in f.read(), f"the session's JVM (pid {pid}) did not map {path}"
