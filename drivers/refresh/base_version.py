"""The base model as version 0 of its root (``ROOT/versions/000000-<stamp>``), and how a person names versions.

The first refresh of a root publishes the base model it starts from as version 0 before its own version 1: a copy of
the model's files (its document-topic proportions stay the table's ``version=base`` partition), the ledger of its
training documents and, in ``model.json``'s ``refresh`` block, what a refresh from it needs (documents, alpha's
statistics, the training corpus) with ``mode: base`` and the base model's path as ``parent``. So ``--version base``
(or ``0``) reads it, ``refresh --rollback base`` goes back to it, and a refresh of a root rolled back to its base
starts from it as from any version.

Version names: ``000003-20261125T013251Z``, its number ``000003`` or ``3``, ``base`` (= ``0``), ``latest``.
"""
from __future__ import annotations

from drivers import storage
from drivers.refresh import update as refresh
from drivers.store import base_link, model_root, publish

BASE_MODE = "base"
#: base-model files a version 0 does not copy (its proportions are the table's version=base partition)
NOT_COPIED = ("doc_topics.parquet", publish.MARKER, "_checkpoint")


def is_base_version(version_dir: str) -> bool:
    meta_path = storage.join(version_dir, "model.json")
    return storage.exists(meta_path) and (storage.load_json(meta_path).get("refresh") or {}).get("mode") == BASE_MODE


def publish_base_version(root: str, base_dir: str, first_staging: str, first_report: dict) -> str:
    """Before the first version (staged in ``first_staging``, parented on the base model) is published: publish the
    base model as version 0 and make it the first version's parent. Returns version 0's name."""
    stamp = first_report["version"].split("-", 1)[1]
    name = f"000000-{stamp}"
    first_meta_path = storage.join(first_staging, "model.json")
    first_meta = storage.load_json(first_meta_path)
    block = dict(first_meta["refresh"])
    parent = block["parent"]
    staging = model_root.staging_version(root, name, publish.new_token())
    storage.makedirs(staging)
    try:
        for entry in storage.list_dir(base_dir):
            if entry in NOT_COPIED or entry.startswith("."):
                continue
            source, target = storage.join(base_dir, entry), storage.join(staging, entry)
            if storage.is_dir(source):
                storage.copy_tree(source, target)
            else:
                storage.write_bytes(target, storage.read_bytes(source))
        write_base_ledger(base_dir, name, storage.join(staging, refresh.LEDGER))
        base_meta = storage.load_json(storage.join(base_dir, "model.json"))
        stats, documents = refresh.alpha_statistics(storage.join(base_dir, "doc_topics.parquet"))
        base_meta["refresh"] = {
            "parent": parent, "mode": BASE_MODE, "steps": 0, "documents": documents,
            "alpha_statistics": None if stats is None else stats.tolist(),
            "training_corpus": block.get("training_corpus"), "training_version": block.get("training_version"),
            "batch_documents": 0, "new_terms": 0, "base_documents": documents, "guided_documents": documents}
        storage.save_json(storage.join(staging, "model.json"), base_meta)
        publish.write_marker(staging, publish.new_token())
        model_root.publish_version(root, staging, name)
    finally:
        if storage.exists(staging):
            storage.delete(staging)
    first_meta["refresh"]["parent"] = {"version": name}
    storage.save_json(first_meta_path, first_meta)
    first_report["parent"] = {"version": name}
    return name


def write_base_ledger(base_dir: str, version: str, path: str) -> None:
    """Version 0's ledger: the base model's training documents (the ids of its doc_topics.parquet, held-out rows
    left out), status ``base``, text unknown (as :func:`drivers.refresh.update.base_ledger`, without Spark)."""
    import pyarrow as pa

    source = storage.join(base_dir, "doc_topics.parquet")
    ids = pa.array([], pa.string())
    if storage.exists(source):
        dataset, keep = base_link.training_rows(source)
        ids = dataset.to_table(columns=["doc_id"], filter=keep).column(0).cast(pa.string()).combine_chunks()
    n = len(ids)
    table = pa.table({"doc_id": ids, "content_hash": pa.nulls(n, pa.string()),
                      "status": pa.array(["base"] * n, pa.string()), "version": pa.array([version] * n, pa.string())})
    storage.write_parquet(path, table)
