"""What a model root reads of its base model by the paths stored in its files: the base model's directory (a
refresh's ``refresh.parent.base``) and its document-topic proportions (the ``version=base`` partition of the root's
table, :func:`drivers.store.model_root.sync_doc_topics`).

A refresh stores these paths absolute (or as URIs), with what identifies what they name: the base model's
completion token and its document count. A root (or a model) written before holds them as they were typed,
relative to a working directory nobody recorded: such a path is never read against the current directory (a
rollback rebuilt ``version=base`` from another model) but against the folder holding the root (the model) that
stored it, and what is found there is checked against the root's ledger before it is used. (The refresh's own
reads by stored paths, the training corpus of ``--mode batch``: :mod:`drivers.refresh.sources`.)
"""
from __future__ import annotations

import logging

from drivers import storage
from drivers.store import publish

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

