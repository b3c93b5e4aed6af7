"""What a model root reads from outside itself, by paths stored in its files: the base model's training corpus
(``refresh --mode batch`` refits it) and the base model's document-topic proportions (the ``version=base``
partition of the root's table, :func:`drivers.store.model_root.sync_doc_topics`).

A refresh stores these paths absolute (or as URIs), with what identifies what they name: the base model's
completion token, its document count, its training corpus' data version. A root (or a model) written before
holds them as they were typed, relative to a working directory nobody recorded: such a path is never read
against the current directory (a refresh run elsewhere refitted an unrelated corpus, a rollback rebuilt
``version=base`` from another model) but against the folder holding the root (the model) that stored it, where
``refresh --model ROOT --base MODEL`` typed in one folder finds it, and what is found there is checked against the
root's ledger before it is used.
"""
from __future__ import annotations

import logging
import os

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, DOCS, VOCAB, data_version
from drivers.store import publish
from inference.errors import RefusedError, UsageError

log = logging.getLogger("spark_topics.refresh")

LEDGER = "ledger.parquet"
DOC_TOPICS_FILE = "doc_topics.parquet"
#: ledger statuses of the base model's training documents (``adopted``: met again in a batch)
BASE_STATUSES = ("base", "adopted")


def stored_path(value, anchor: str) -> str | None:
    """A path read from a file of ``anchor`` (a root or a model directory): an absolute path or a URI as it is, a
    relative one (written before paths were stored absolute) joined to the folder that holds ``anchor``."""
    if not isinstance(value, str) or not value.strip():
        return None
    if storage.absolute(value) == value:
        return value
    return storage.join(storage.absolute(anchor).rstrip("/").rsplit("/", 1)[0] or "/", value)


def check_root_and_base(root: str, base_dir: str) -> None:
    """Refuse a root that is its base model's directory, lies inside it or holds it: the root's versions,
    ledger and lease would be written into the model (or the model read as one of the root's files)."""
    a, b = (p.rstrip("/") if storage.is_uri(p) else os.path.realpath(p) for p in (root, base_dir))
    if a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/"):
        how = "is" if a == b else "lies inside" if a.startswith(b.rstrip("/") + "/") else "holds"
        raise UsageError(f"--model {root} {how} the base model directory {base_dir}: a model root is a directory "
                         f"of its own (its versions, ledger and lease would be written into the model); give "
                         f"another --model")


def base_parent(base_dir: str, documents: int) -> dict:
    """The first version's ``refresh.parent``: the base model by absolute path, its completion token and its
    document count (what :func:`base_doc_topics` checks before copying its proportions)."""
    marker = publish.read_marker(base_dir) or {}
    return {"base": storage.absolute(base_dir), "token": marker.get("token"), "documents": int(documents)}


def training_history(base_dir: str, base_meta: dict) -> dict:
    """The first refresh's record of the base model's training corpus: its absolute path (a relative one read
    against the folder holding the base model) and data version."""
    data = base_meta.get("data") or {}
    return {"training_corpus": stored_path(data.get("corpus"), base_dir), "training_version": data.get("version")}


def base_documents(oldest_version: str) -> int | None:
    """The base model's training documents as the root's first version recorded them in its ledger."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    path = storage.join(oldest_version, LEDGER)
    if not storage.exists(path):
        return None
    filesystem, p = storage.resolve(path)
    status = ds.dataset(p, filesystem=filesystem, format="parquet").to_table(columns=["status"]).column(0)
    return int(pc.sum(pc.is_in(status, value_set=pa.array(BASE_STATUSES))).as_py() or 0)


def _rows(path: str) -> int:
    import pyarrow.dataset as ds

    filesystem, p = storage.resolve(path)
    return ds.dataset(p, filesystem=filesystem, format="parquet").count_rows()


def base_doc_topics(root: str, oldest_version: str) -> str | None:
    """The base model's ``doc_topics.parquet`` for the table's ``version=base`` partition, or None: the oldest
    version names no base, the file is gone, or what its stored path leads to is not that base model (another
    completion token, number of topics or of documents than the root recorded; logged)."""
    meta = storage.load_json(storage.join(oldest_version, "model.json"))
    parent = (meta.get("refresh") or {}).get("parent") or {}
    base = stored_path(parent.get("base"), root)
    source = storage.join(base, DOC_TOPICS_FILE) if base else None
    if source is None or not storage.exists(source):
        return None
    problem = None
    token = (publish.read_marker(base) or {}).get("token")
    base_meta_path = storage.join(base, "model.json")
    topics = storage.load_json(base_meta_path).get("topics") if storage.exists(base_meta_path) else None
    expected = parent.get("documents")
    expected = base_documents(oldest_version) if expected is None else expected
    if parent.get("token") and token != parent["token"]:
        problem = "its completion token is not the one the root recorded: another model"
    elif topics != meta.get("topics"):
        problem = f"it has {topics} topics, the root {meta.get('topics')}"
    elif expected is not None and _rows(source) != expected:
        problem = f"it holds {_rows(source)} documents, the root's ledger {expected}"
    if problem:
        log.warning("%s: the document-topic table's version=base is not rebuilt from %s (the base model named by "
                    "%s): %s", root, source, storage.join(oldest_version, "model.json"), problem)
        return None
    return source


def training_corpus(root: str, oldest_version: str | None, history: dict) -> str:
    """The base model's training corpus for a batch refit, checked against its recorded data version (or, for a
    root that recorded none, the ledger's count of the base model's documents); a one-line refusal otherwise."""

    path = stored_path(history.get("training_corpus"), root)
    batch_only = "use --mode accumulate or online"
    if not path or not storage.exists(storage.join(path, DOCS)) or not storage.exists(storage.join(path, CORPUS_JSON)):
        raise RefusedError(f"--mode batch refits every document ingested, but the base model's training corpus "
                           f"{path or history.get('training_corpus')!r} is not there any more; {batch_only}")
    meta = storage.load_json(storage.join(path, CORPUS_JSON))
    recorded = history.get("training_version")
    if recorded is not None and data_version(meta) != recorded:
        raise RefusedError(f"--mode batch: {path} is not the corpus the base model was trained on (its corpus.json "
                           f"changed since: data version {data_version(meta)}, recorded {recorded}); {batch_only}")
    expected = base_documents(oldest_version) if recorded is None and oldest_version else None
    if expected is not None and meta.get("documents") != expected:
        raise RefusedError(f"--mode batch: {path} (the base model's training corpus, "
                           f"{history.get('training_corpus')!r} as stored by {root}) holds {meta.get('documents')} "
                           f"documents, but the root's ledger has {expected} training documents of the base model: "
                           f"not the corpus it was trained on; {batch_only}")
    return path


def union_corpus(spark, training: str, chain_dirs: list, batch_dir: str, staging: str) -> str:
    """batch mode: every document ingested so far (the base model's ``training`` corpus, checked by
    :func:`training_corpus`, and each committed version's batch) and the batch as one corpus
    (``staging/work-union``), each id's latest text."""
    from pyspark.sql import Window, functions as F

    sources = [storage.join(training, DOCS)] + [storage.join(d, "corpus", DOCS) for d in reversed(chain_dirs)] \
        + [storage.join(batch_dir, DOCS)]
    frames = [spark.read.parquet(p).withColumn("_order", F.lit(i)) for i, p in enumerate(sources)
              if storage.exists(p)]
    docs = frames[0]
    for frame in frames[1:]:
        docs = docs.unionByName(frame, allowMissingColumns=True)
    newest = Window.partitionBy("doc_id").orderBy(F.col("_order").desc())
    docs = docs.withColumn("_n", F.row_number().over(newest)).where("_n = 1").drop("_n", "_order")
    union = storage.join(staging, "work-union")
    docs.write.parquet(storage.join(union, DOCS))
    spark.read.parquet(storage.join(batch_dir, VOCAB)).coalesce(1).write.parquet(storage.join(union, VOCAB))
    meta = storage.load_json(storage.join(batch_dir, CORPUS_JSON))
    totals = spark.read.parquet(storage.join(union, DOCS)).agg(F.count("*").alias("n"),
                                                                F.sum("n_tokens").alias("tokens")).first()
    meta.update(documents=int(totals["n"]), tokens=int(totals["tokens"] or 0))
    storage.save_json(storage.join(union, CORPUS_JSON), meta)
    return union
