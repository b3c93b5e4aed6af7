"""What a model root reads of its base model by the paths stored in its files: the base model's directory (a
refresh's ``refresh.parent.base``) and its document-topic proportions (the ``version=base`` partition of the root's
table, :func:`drivers.store.model_root.sync_doc_topics`).

A refresh stores these paths absolute (or as URIs), with what identifies what they name: the base model's
completion token and its document count. A root (or a model) written before holds them as they were typed,
relative to a working directory nobody recorded: such a path is never read against the current directory (a
rollback rebuilt ``version=base`` from another model) but against the folder holding the root (the model) that
stored it, and what is found there is checked against the root's ledger before it is used. (The refresh's own
reads by stored paths, the training corpus of ``--mode batch``: :mod:`drivers.refresh.sources`.)

A base model's training documents are the rows of its ``doc_topics.parquet`` whose ``heldout`` column is false,
or every row of a table without that column: a Gibbs model trained with ``--heldout-fraction`` adds its held-out
split's rows (``heldout`` true, in ``heldout-*.parquet`` parts), documents it never learned from. The ledgers of
the base, its document count and the root's ``version=base`` partition all read :func:`training_rows`.
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
#: the column a Gibbs model trained with --heldout-fraction adds to its doc_topics (true: a held-out document)
HELDOUT = "heldout"


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


def training_rows(path: str):
    """``(dataset, filter)`` of a doc_topics table: the pyarrow dataset and the expression that keeps its training
    documents' rows (``heldout`` false; None: the table has no such column, every row is one)."""
    import pyarrow.dataset as ds

    filesystem, p = storage.resolve(path)
    dataset = ds.dataset(p, filesystem=filesystem, format="parquet")
    return dataset, (ds.field(HELDOUT) == False) if HELDOUT in dataset.schema.names else None  # noqa: E712


def training_documents(path: str) -> int:
    """The number of training documents in a doc_topics table (:func:`training_rows`)."""
    dataset, keep = training_rows(path)
    return dataset.count_rows(filter=keep)


def copy_training_rows(source: str, target: str) -> None:
    """Copy a doc_topics table to ``target``; one with a ``heldout`` column: its training rows only, without the
    column (part by part, a part left without rows not written), so every partition of a root's table has one row
    per document its version holds and the same columns."""
    dataset, keep = training_rows(source)
    if keep is None:
        storage.copy_tree(source, target)
        return
    storage.makedirs(target)
    columns = [name for name in dataset.schema.names if name != HELDOUT]
    for fragment in dataset.get_fragments():
        table = fragment.to_table(schema=dataset.schema, columns=columns, filter=keep)
        if table.num_rows:
            storage.write_parquet(storage.join(target, fragment.path.rsplit("/", 1)[-1]), table)


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
    elif expected is not None and training_documents(source) != expected:
        problem = f"it holds {training_documents(source)} documents, the root's ledger {expected}"
    if problem:
        log.warning("%s: the document-topic table's version=base is not rebuilt from %s (the base model named by "
                    "%s): %s", root, source, storage.join(oldest_version, "model.json"), problem)
        return None
    return source

