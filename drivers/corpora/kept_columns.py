"""The columns ``prepare --keep-columns`` copied into a corpus' ``docs.parquet`` (a document's date, authors, ...),
carried on into the ``doc_topics.parquet`` that ``train`` and ``infer`` write for that corpus, so a user groups
topic proportions by them without a join. Added part by part, each row keeping its place; a document the corpus
does not list gets nulls; a kept column named as a column of ``doc_topics`` is left out (with a warning)."""
from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, DOCS

log = logging.getLogger("spark_topics.corpus")

#: a part's row index while it is joined (not a name prepare lets a kept column have: it starts with "_")
ROW = "__row"


def kept_columns(corpus_dir: str) -> list[str]:
    """The columns ``prepare --keep-columns`` kept in ``corpus_dir`` ([] for a corpus without them, or an aligned
    one: each language's documents are their own table)."""
    path = storage.join(corpus_dir, CORPUS_JSON)
    if not storage.exists(path):
        return []
    meta = storage.load_json(path)
    if "languages" in meta:
        return []
    return list((meta.get("options") or {}).get("keep_columns") or ())


def carry_into(doc_topics: str, corpus_dir: str) -> list[str]:
    """Add ``corpus_dir``'s kept columns to every part of the ``doc_topics`` table (a folder of Parquet parts, or
    one file), matched by ``doc_id``; returns the columns added."""
    names = kept_columns(corpus_dir)
    if not names or not storage.exists(doc_topics):
        return []
    filesystem, path = storage.resolve(doc_topics)
    table = ds.dataset(path, filesystem=filesystem, format="parquet")
    clash = [n for n in names if n in table.schema.names]
    if clash:
        log.warning("--keep-columns %s: doc_topics has columns of those names; left out", ", ".join(clash))
    names = [n for n in names if n not in clash]
    if not names:
        return []
    docs_fs, docs_path = storage.resolve(storage.join(corpus_dir, DOCS))
    kept = ds.dataset(docs_path, filesystem=docs_fs, format="parquet").to_table(columns=["doc_id", *names])
    kept = kept.set_column(0, "doc_id", pc.cast(kept.column("doc_id"), pa.string()))
    for fragment in table.get_fragments():
        part = fragment.to_table()
        rows = pa.table({"doc_id": pc.cast(part.column("doc_id"), pa.string()),
                         ROW: pa.array(np.arange(part.num_rows, dtype=np.int64))})     # (Arrow joins no lists)
        joined = rows.join(kept, "doc_id", join_type="left outer").sort_by(ROW)
        out = part
        for name in names:
            out = out.append_column(name, joined.column(name))
        name = fragment.path.rsplit("/", 1)[-1]
        target = storage.join(doc_topics, name) if storage.is_dir(doc_topics) else doc_topics
        storage.write_parquet(target, out)
        checksum = storage.join(target.rsplit("/", 1)[0], f".{name}.crc")     # Hadoop's, of the part Spark wrote
        if storage.exists(checksum):
            storage.delete(checksum)
    return names
