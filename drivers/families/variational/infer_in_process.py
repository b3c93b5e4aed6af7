"""``infer`` of a small corpus in this process, without Spark: the Spark tasks' own table
(:func:`drivers.families.variational.infer.doc_topics_table`) over the documents in blocks of
:data:`BLOCK_DOCUMENTS` (a progress line with the time left every few seconds), so ``doc_topics.parquet`` has the
rows and columns the Spark job writes (``tests/commands/test_infer_in_process.py``
compares the two). Every document's gamma is fitted alone (the kernel converges per document), so any blocks give
the numbers of any partitioning."""
from __future__ import annotations

import logging
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from drivers.corpora.bow import open_corpus_meta
from drivers.corpora.files import DOCS, REJECTS
from drivers.corpora.in_process import why_not_in_process as corpus_why_not_in_process
from drivers.families.variational.infer import doc_topics_table, exp_elogbeta, table_counts
from drivers.progress import ticking
from drivers.store.model_store import require_same_vocabulary
from drivers.store.topic_model import TopicModel
from inference.errors import UsageError
from inference.mapper import EStepSettings

log = logging.getLogger("spark_topics.infer")

#: documents folded in at a time (between two looks at the clock for the progress line)
BLOCK_DOCUMENTS = 2000


def why_not_in_process(model: TopicModel, corpus_dir: str, lang: str | None) -> str | None:
    """None when this process can infer the corpus; else why not."""
    if model.languages and lang is None:
        return "an aligned corpus of a polylingual model"
    return corpus_why_not_in_process(corpus_dir)


def infer_in_process(model: TopicModel, corpus_dir: str, output_dir: str, options: EStepSettings | None = None,
                     lang: str | None = None, block_documents: int = BLOCK_DOCUMENTS) -> dict:
    """As :func:`drivers.families.variational.infer.infer_documents`, in this process."""
    options = options or EStepSettings()
    if model.languages:
        if lang is None:
            raise UsageError("an aligned corpus of a polylingual model is inferred on Spark")
        model = model.language_view(lang)
    elif lang is not None:
        raise UsageError(f"--lang applies to polylingual models; {model.directory} is monolingual")
    meta, vocab = open_corpus_meta(None, corpus_dir)
    require_same_vocabulary(model, VocabOf(corpus_dir, vocab))
    docs = pq.read_table(os.path.join(corpus_dir, DOCS), columns=["doc_id", "term_ids", "counts", "n_tokens",
                                                                  "n_oov"])
    docs = pa.table({"doc_id": pc.cast(docs.column("doc_id"), pa.string()),
                     "lang_index": pa.array(np.zeros(docs.num_rows, np.int32)),
                     "term_ids": pc.cast(docs.column("term_ids"), pa.list_(pa.int32())),
                     "counts": pc.cast(docs.column("counts"), pa.list_(pa.int32())),
                     "n_tokens": pc.cast(docs.column("n_tokens"), pa.int64()),
                     "n_unknown": pc.cast(docs.column("n_oov"), pa.int64()),
                     "empty": pa.array(np.zeros(docs.num_rows, bool))})
    params = exp_elogbeta(model)[0], model.alpha
    starts = range(0, docs.num_rows, block_documents)
    tables = [doc_topics_table(docs.slice(start, block_documents), *params, options)
              for start in ticking(starts, len(starts), "infer: document blocks", log)]
    fitted = set(docs.column("doc_id").to_pylist())
    rejected = [doc_id for doc_id in _empty_documents(corpus_dir) if doc_id not in fitted]
    if rejected or not tables:
        none = pa.nulls(len(rejected))
        tables.append(doc_topics_table(pa.table({
            "doc_id": pa.array(rejected, pa.string()), "lang_index": none.cast(pa.int32()),
            "term_ids": none.cast(pa.list_(pa.int32())), "counts": none.cast(pa.list_(pa.int32())),
            "n_tokens": none.cast(pa.int64()), "n_unknown": none.cast(pa.int64()),
            "empty": pa.array([True] * len(rejected))}), *params, options))
    table = pa.concat_tables(tables).sort_by("doc_id")
    path = os.path.join(output_dir, "doc_topics.parquet")
    os.makedirs(path)
    pq.write_table(table, os.path.join(path, "part-00000.parquet"))
    return {**table_counts(table), "output": path}


class VocabOf:
    """The two attributes :func:`require_same_vocabulary` reads of a corpus."""

    def __init__(self, directory: str, vocab):
        self.directory, self.vocab = directory, vocab


def _empty_documents(corpus_dir: str) -> list[str]:
    """Ids of the documents ``prepare`` rejected as ``empty`` (no known word)."""
    import json

    folder = os.path.join(corpus_dir, REJECTS)
    ids = []
    if os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            if name.startswith("part-"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    ids += [r["id"] for r in map(json.loads, filter(str.strip, f)) if r.get("reason") == "empty"]
    return ids
