"""What a refresh reads from outside its model root, by paths stored in its files: the base model's training corpus
(``refresh --mode batch`` refits it; the base model's document-topic proportions, the ``version=base`` partition of
the root's table, are the store's: :mod:`drivers.store.base_link`).

A refresh stores these paths absolute (or as URIs), with what identifies what they name: the base model's
completion token, its document count, its training corpus' data version. A root (or a model) written before
holds them as they were typed, relative to a working directory nobody recorded: such a path is never read
against the current directory (a refresh run elsewhere refitted an unrelated corpus, a rollback rebuilt
``version=base`` from another model) but against the folder holding the root (the model) that stored it, where
``refresh --model ROOT --base MODEL`` typed in one folder finds it, and what is found there is checked against the
root's ledger before it is used.
"""
from __future__ import annotations

import os

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, DOCS, VOCAB, data_version
from drivers.preparation.writer import write_corpus_json
from drivers.spark_parquet import read_parquet
from drivers.store import publish
from drivers.store.base_link import base_documents, stored_path
from inference.errors import RefusedError, UsageError


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


def training_corpus(root: str, oldest_version: str | None, history: dict) -> str:
    """The base model's training corpus for a batch refit, checked against its recorded data version (or, for a
    root that recorded none, the ledger's count of the base model's documents); a one-line refusal otherwise."""

    path = stored_path(history.get("training_corpus"), root)
    batch_only = "use --mode accumulate or online"
    if not path or not storage.exists(storage.join(path, CORPUS_JSON)) or not (
            storage.exists(storage.join(path, DOCS)) or storage.load_json(storage.join(path, CORPUS_JSON)).get("aligned")):
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


def union_corpus(spark, training: str, chain_dirs: list, batch_dir: str, staging: str, part: str = "",
                 output: str | None = None, ids: list | None = None) -> str:
    """batch mode: every document ingested so far (the base model's ``training`` corpus, checked by
    :func:`training_corpus`, and each committed version's batch) and the batch as one corpus
    (``output``, default ``staging/work-union``), each id's latest text; ``part``: one language's sub-corpus of
    aligned corpora (:func:`drivers.refresh.aligned_batches.union_corpus`). ``ids``: only those documents, as
    they were before the batch (revised documents' old copies; the batch's vocabulary and options)."""
    from pyspark.sql import Observation, Window, functions as F

    inner = [part] if part else []
    training, batch_dir = storage.join(training, *inner), storage.join(batch_dir, *inner)
    sources = [storage.join(training, DOCS)] + [storage.join(d, "corpus", *inner, DOCS) for d in reversed(chain_dirs)] \
        + ([storage.join(batch_dir, DOCS)] if ids is None else [])
    frames = [read_parquet(spark, p).withColumn("_order", F.lit(i)) for i, p in enumerate(sources)
              if storage.exists(p)]
    docs = frames[0]
    for frame in frames[1:]:
        docs = docs.unionByName(frame, allowMissingColumns=True)
    if ids is not None:
        docs = docs.where(F.col("doc_id").cast("string").isin(list(ids)))
    newest = Window.partitionBy("doc_id").orderBy(F.col("_order").desc())
    docs = docs.withColumn("_n", F.row_number().over(newest)).where("_n = 1").drop("_n")
    union = output or storage.join(staging, "work-union")
    written = Observation("union written")      # the totals observed by the write's own job, not read back
    docs.drop("_order").observe(written, F.count(F.lit(1)).alias("n"), F.sum("n_tokens").alias("tokens")) \
        .write.parquet(storage.join(union, DOCS))
    storage.copy_tree(storage.join(batch_dir, VOCAB), storage.join(union, VOCAB))   # the writer's files, as they are
    meta = storage.load_json(storage.join(batch_dir, CORPUS_JSON))
    totals = written.get
    meta.update(documents=int(totals["n"] or 0), tokens=int(totals["tokens"] or 0))
    ordered = (meta.get("ordered") or {}).get("file")
    if ordered:                  # the tokens in text order (prepare --ordered), each document's from its source
        texts = [storage.join(os.path.dirname(p.rstrip("/")), ordered) for p in sources]
        if all(storage.exists(t) for t, p in zip(texts, sources) if storage.exists(p)):
            frames = [read_parquet(spark, t).withColumn("_order", F.lit(i)) for i, t in enumerate(texts)
                      if storage.exists(t)]
            rows = frames[0]
            for frame in frames[1:]:
                rows = rows.unionByName(frame, allowMissingColumns=True)
            rows.join(docs.select("doc_id", "_order"), ["doc_id", "_order"], "left_semi").drop("_order") \
                .write.parquet(storage.join(union, ordered))
            meta["ordered"] = dict(meta["ordered"], documents=int(totals["n"]))
        else:
            meta.pop("ordered")
    write_corpus_json(union, meta)
    return union
