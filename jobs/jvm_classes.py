"""The JVM's class archive for local Spark jobs (application class-data sharing, JDK 13+).

A Spark JVM loads, parses and verifies thousands of classes before and during its first jobs: on 2 cores about
half of a small local job's start-up CPU (a session, a Parquet write and read, a Python RDD job: 22-23 CPU s
without the archive, 12.5-15 with it, tests/bench/jvm_start_cpu.py). ``deploy/setup.sh`` records the classes a
real run loads (prepare, train, evaluate on a tiny corpus, :mod:`jobs.record_jvm_classes`) into
``<venv>/spark-topics-jvm-classes.jsa``, and local jobs map it
(:func:`java_options`, added to the driver's options by :func:`jobs.spark.local_defaults` and ``deploy/submit.sh``).

The JVM checks the archive against itself and the class path at start and ignores one that does not match (another
JDK build, another pyspark), silently here (``-Xlog:cds=off``): nothing but start-up time depends on it. A file cut
short would crash the JVM, so an archive is published only whole (written beside, renamed when the recording JVM has
exited cleanly). ``SPARK_TOPICS_JVM_ARCHIVE=off`` leaves it out.
"""
from __future__ import annotations

import os
import sys

ARCHIVE_NAME = "spark-topics-jvm-classes.jsa"
SWITCH = "SPARK_TOPICS_JVM_ARCHIVE"
#: the JVM's messages about an archive it cannot use (another JDK or class path): it then runs without it
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def archive_path() -> str:
    """Where this environment's archive lives: beside its Python (the archive matches its pyspark's jars)."""
    return os.path.join(sys.prefix, ARCHIVE_NAME)


def java_options(path: str | None = None) -> list[str]:
    """The JVM options that map the archive, or none: no archive, switched off, or a path Spark's option
    splitting would cut (a space in it)."""
    path = path or archive_path()
    if os.environ.get(SWITCH, "").lower() in ("off", "0", "false") or " " in path or not os.path.isfile(path):
        return []
    return [f"-XX:SharedArchiveFile={path}", *QUIET]


def fingerprint() -> dict:
    """What the archive depends on: pyspark (its jars are the class path) and the Java runtime."""
    import shutil

    import pyspark

    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    java = os.path.realpath(java) if java else None
    return {"pyspark": pyspark.__version__, "java": java,
            "java_mtime": os.stat(java).st_mtime_ns if java and os.path.exists(java) else None}


def up_to_date(path: str | None = None) -> bool:
    """The archive exists and was recorded with this pyspark and Java (its ``.json`` beside it)."""
    import json

    path = path or archive_path()
    try:
        with open(path + ".json") as f:
            return os.path.isfile(path) and json.load(f) == fingerprint()
    except (OSError, ValueError):
        return False
