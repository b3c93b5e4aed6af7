"""Where the Spark ML stages keep their files: a fit's working directory (removed at exit, or by the next fit after a
kill), paths as Spark and :mod:`drivers.storage` take them, a model directory saved whole with its completion
marker."""
from __future__ import annotations

import logging
import atexit
import os
import socket
import tempfile
import uuid

from drivers import storage
from drivers.store import model_store, topic_model, topics_text
from inference.errors import RefusedError, UsageError

log = logging.getLogger("spark_topics.ml")
#: the part of a model directory that belongs to a run, not to the model (never copied by ``save``)
RUN_FILES = ("_checkpoint", "_lease.json", "_SUCCESS")


def save_model_directory(model: topic_model.TopicModel, target: str, rewrite_vocabulary: bool = False) -> None:
    """``target`` as an ordinary model directory of ``model``: the files of its directory when that still exists
    (everything ``train`` wrote but the run's own files), else the model files from memory (model.json,
    lambda.npy, vocab.parquet, topics.txt); a renamed vocabulary rewrites vocab.parquet and topics.txt; the
    completion marker last."""
    from pyarrow import fs as pafs

    source = model.directory
    storage.makedirs(target)
    if source and storage.exists(storage.join(source, "model.json")) and \
            _absolute(source) != _absolute(target):
        src_fs, src_root = storage.resolve(source)
        dst_fs, dst_root = storage.resolve(target)
        for info in src_fs.get_file_info(pafs.FileSelector(src_root)):
            if info.base_name in RUN_FILES or info.base_name.startswith("."):
                continue
            destination = f"{dst_root.rstrip('/')}/{info.base_name}"
            if info.type == pafs.FileType.Directory:      # copy_files fills a directory, it does not create it
                dst_fs.create_dir(destination, recursive=True)
            pafs.copy_files(info.path, destination, source_filesystem=src_fs, destination_filesystem=dst_fs)
    else:
        model_store.save_model(target, model.meta, model.vocab, model.lambda_)
        rewrite_vocabulary = True
    if rewrite_vocabulary:
        cols = [c for c in ("term", "id", "df", "cf") if c in model.vocab.columns]
        model_store.write_parquet(storage.join(target, "vocab.parquet"), model.vocab[cols])
        topics_text.write_topics_file(target, 10)
    mark_complete(target)


TEMPORARY_DIRECTORIES: set = set()


def remove_quietly(path: str) -> None:
    try:
        storage.delete(path)
    except Exception as exc:  # a best effort: a leftover temporary directory is logged, not fatal
        log.warning("could not remove %s: %s", path, exc)


@atexit.register
def _remove_temporary() -> None:
    for path in sorted(TEMPORARY_DIRECTORIES):
        remove_quietly(path)
    TEMPORARY_DIRECTORIES.clear()


def work_directory(spark, checkpoint_dir: str | None) -> str:
    """A new, unique working directory for one fit (see the ``checkpointDir`` param)."""
    sc = spark.sparkContext
    base = checkpoint_dir
    if base is None and sc.master.startswith("local"):
        base = tempfile.gettempdir()
    if base is None:
        base = sc.getCheckpointDir() if hasattr(sc, "getCheckpointDir") else None
    if base is None:
        raise UsageError(f"SparkTopicsLDA on {sc.master}: set checkpointDir (or sc.setCheckpointDir) to a "
                         f"directory every executor can reach (hdfs://..., s3://..., a shared mount)")
    base = storage_path(base)
    _remove_abandoned(base)
    work = storage.join(base, f"{WORK_PREFIX}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    storage.makedirs(work)
    return work


WORK_PREFIX = "spark-topics-ml-"


def _remove_abandoned(base: str) -> None:
    """Delete the working directories in ``base`` of fits killed before they could (named by host and pid: of this
    host, whose process is gone)."""
    from drivers.store import lease

    for name in storage.list_dir(base):
        host, _, pid = name[len(WORK_PREFIX):].rpartition("-")[0].rpartition("-")
        if name.startswith(WORK_PREFIX) and pid.isdigit() and lease.is_stale({"host": host, "pid": pid}, wait=0):
            log.warning("removing %s, left by a killed fit (pid %s)", storage.join(base, name), pid)
            remove_quietly(storage.join(base, name))


def storage_path(path: str) -> str:
    """A path as :mod:`drivers.storage` takes it (Hadoop's ``file:/x`` is the local ``/x``)."""
    if path.startswith("file:") and not path.startswith("file://"):
        return "/" + path[len("file:"):].lstrip("/")
    return path


def _absolute(path: str) -> str:
    return path.rstrip("/") if "://" in path else os.path.abspath(path)


def mark_complete(directory: str) -> None:
    """The completion marker of a model directory (``_SUCCESS``, :mod:`drivers.store.publish`) where this version of
    spark-topics writes one (model directories are read only when marked complete)."""
    try:
        from drivers.store import publish
    except ImportError:
        return
    publish.write_marker(directory, publish.new_token())


def classic_session(dataset):
    from pyspark.sql.utils import is_remote

    if is_remote() or not hasattr(dataset, "rdd"):
        raise RefusedError("spark-topics' Spark ML stages need classic Spark (the engine runs on RDDs); Spark "
                           "Connect is not supported")
    return dataset.sparkSession
