"""A corpus directory's content read back as plain Python values, for comparing two corpora (the Spark job's and
the in-process one's): every file of the corpus format, rows in their defined order."""
from __future__ import annotations

import glob
import json
import os

import pyarrow.parquet as pq


def _parquet_rows(path: str) -> list[dict]:
    files = sorted(glob.glob(os.path.join(path, "*.parquet")))
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def corpus_content(directory: str) -> dict:
    """``docs`` (input order), ``vocab`` (id order), ``rejects`` (input order), ``segments``/``ordered`` (by
    document id: their order is not part of the format), ``frequent_terms`` (df descending, then term), ``stopwords`` and ``corpus.json``."""
    content = {"docs": _parquet_rows(os.path.join(directory, "docs.parquet")),
               "vocab": sorted(_parquet_rows(os.path.join(directory, "vocab.parquet")), key=lambda r: r["id"])}
    rejects = []
    for part in sorted(glob.glob(os.path.join(directory, "rejects", "part-*"))):
        with open(part, encoding="utf-8") as f:
            rejects += [json.loads(line) for line in f if line.strip()]
    content["rejects"] = rejects
    for name in ("segments", "ordered"):
        path = os.path.join(directory, f"{name}.parquet")
        if os.path.exists(path):
            content[name] = sorted(_parquet_rows(path), key=lambda r: r["doc_id"])
    if os.path.exists(path := os.path.join(directory, "frequent_terms.parquet")):   # in its order: df, then term
        content["frequent_terms"] = _parquet_rows(path)
    with open(os.path.join(directory, "stopwords.txt"), encoding="utf-8") as f:
        content["stopwords"] = f.read()
    with open(os.path.join(directory, "corpus.json"), encoding="utf-8") as f:
        content["corpus.json"] = json.load(f)
    return content
