"""Record the JVM class archive of local jobs (:mod:`jobs.jvm_classes`): ``python -m jobs.record_jvm_classes
[--if-stale]`` (``deploy/setup.sh``) runs a small prepare/train/evaluate on Spark in a child process whose JVM writes
the classes it loaded when it exits, and publishes the archive whole."""
from __future__ import annotations

import os
import subprocess
import sys

from jobs.jvm_classes import QUIET, SWITCH, archive_path, fingerprint, up_to_date


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
            run = subprocess.run([python or sys.executable, "-m", "jobs.record_jvm_classes", "record", folder], env=env,
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
        main(["train", "--corpus", corpus, "--output", os.path.join(folder, model), "--model", model, "--topics", "3",
              "--iterations", "2", *flags, *spark])
    main(["evaluate", "--model", os.path.join(folder, "lda"), "--corpus", corpus, *spark])
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
    elif "--if-stale" in sys.argv and up_to_date():
        print(f"{archive_path()} is up to date")
    else:
        print(f"wrote {build()}")
