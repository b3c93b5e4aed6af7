"""The JVM's class archive for local Spark jobs (application class-data sharing, JDK 13+).

A Spark JVM loads, parses and verifies about 13,000 classes before and during its first jobs: on 2 cores half of a
small local job's start-up CPU (a session, a Parquet write and read, a Python RDD job: 18-19 CPU s without the
archive, 9.1 with it). ``deploy/setup.sh`` records the classes a real run loads (prepare, train, evaluate on a
tiny corpus, :func:`record`) into ``<venv>/spark-topics-jvm-classes.jsa`` (:func:`build`), and local jobs map it
(:func:`java_options`, added to the driver's options by :func:`jobs.spark.local_defaults` and ``deploy/submit.sh``).

The JVM checks the archive against itself and the class path at start and ignores one that does not match (another
JDK build, another pyspark), silently here (``-Xlog:cds=off``): nothing but start-up time depends on it. A file cut
short would crash the JVM, so an archive is published only whole (written beside, renamed when the recording JVM has
exited cleanly). ``SPARK_TOPICS_JVM_ARCHIVE=off`` leaves it out.
"""
from __future__ import annotations

import os
import subprocess
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


def build(path: str | None = None, workdir: str | None = None, timeout: float = 900,
          python: str | None = None) -> str:
    """Record the archive at ``path`` from a run of :func:`record` in a child process (its JVM writes the classes
    it loaded when it exits); replace the old archive only when the child and its JVM ended cleanly."""
    import json
    import tempfile

    path = path or archive_path()
    partial = f"{path}.{os.getpid()}.partial"
    opts = [o for o in os.environ.get("SPARK_SUBMIT_OPTS", "").split() if not o.startswith("-XX:SharedArchiveFile")]
    env = dict(os.environ, SPARK_SUBMIT_OPTS=" ".join([*opts, f"-XX:ArchiveClassesAtExit={partial}", *QUIET]),
               **{SWITCH: "off"})
    try:
        with tempfile.TemporaryDirectory(prefix="spark-topics-jvm-classes-", dir=workdir) as folder:
            run = subprocess.run([python or sys.executable, "-m", "jobs.jvm_classes", "record", folder], env=env,
                                 capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0 or not os.path.isfile(partial) or os.path.getsize(partial) == 0:
            raise RuntimeError(f"recording the JVM's classes failed (exit {run.returncode}): "
                               f"{(run.stderr or run.stdout).strip()[-2000:]}")
        stamp = fingerprint()
        if os.path.exists(path + ".json"):
            os.remove(path + ".json")
        os.replace(partial, path)
        with open(path + ".json", "w") as f:
            json.dump(stamp, f)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return path


def record(folder: str) -> None:
    """A small run of what jobs do on Spark (prepare, train variational and Gibbs, evaluate) in one local session,
    then the JVM's clean exit (it writes the archive then), awaited."""
    import gzip
    import json

    from jobs.cli import main

    sample = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_data",
                          "web_chapters.jsonl.gz")
    docs = os.path.join(folder, "docs.jsonl")
    with gzip.open(sample, "rt", encoding="utf-8") as source, open(docs, "w", encoding="utf-8") as target:
        for _, line in zip(range(40), source):
            row = json.loads(line)
            target.write(json.dumps({"id": row["id"], "text": row["text"][:2000]}) + "\n")
    corpus, spark = os.path.join(folder, "corpus"), ["--master", "local[2]"]
    main(["prepare", "--input", docs, "--output", corpus, *spark])
    for model, flags in (("lda-gibbs", []), ("lda", ["--inference", "variational"])):
        out = os.path.join(folder, model)
        main(["train", "--corpus", corpus, "--output", out, "--model", model, "--topics", "3", "--iterations", "2",
              *flags, *spark])
    main(["evaluate", "--model", out, "--corpus", corpus, *spark])
    _stop_and_wait()


def _stop_and_wait() -> None:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    process = getattr(gateway, "proc", None)
    if process is None:
        raise RuntimeError("no JVM of this process to wait for")
    gateway.shutdown()
    process.stdin.close()                  # the gateway JVM exits when its input ends, writing the archive
    if process.wait(timeout=600) != 0:
        raise RuntimeError(f"the JVM exited with {process.returncode}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(sys.argv[2])
    elif sys.argv[1:2] == ["build"]:
        if "--if-stale" in sys.argv and up_to_date():
            print(f"{archive_path()} is up to date")
        else:
            print(f"wrote {build()}")
    else:
        raise SystemExit("usage: python -m jobs.jvm_classes build [--if-stale]")
