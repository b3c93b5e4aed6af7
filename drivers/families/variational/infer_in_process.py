"""``infer`` of a small corpus in this process, without Spark: the fold-in E-step of :func:`infer_task` over the
documents in blocks of :data:`BLOCK_DOCUMENTS` (a progress line with the time left every few seconds), and
``doc_topics.parquet`` with the rows and columns the Spark job writes (``tests/commands/test_infer_in_process.py``
compares the two). Every document's gamma is fitted alone (the kernel converges per document), so any blocks give
the numbers of any partitioning."""
from __future__ import annotations

import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq

from drivers.corpora.bow import open_corpus_meta
from drivers.corpora.files import DOCS, REJECTS
from drivers.corpora.in_process import why_not_in_process as corpus_why_not_in_process
from drivers.families.variational.infer import exp_elogbeta
from drivers.progress import ticking
from drivers.store.model_store import require_same_vocabulary
from drivers.store.topic_model import TopicModel
from inference.blocks import DocBlock
from inference.errors import UsageError
from inference.heldout import fold_in
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
    topic_word, _ = exp_elogbeta(model)
    starts = range(0, docs.num_rows, block_documents)
    rows = {}
    for start in ticking(starts, len(starts), "infer: document blocks", log):
        block = DocBlock.from_arrow(docs.slice(start, block_documents))
        fit = fold_in(block, topic_word, model.alpha, options.tol, options.max_iter)
        rows.update((str(doc_id), [gamma, theta]) for doc_id, gamma, theta
                    in zip(block.doc_ids, fit.gamma.tolist(), fit.theta.tolist()))
    sizes = zip(docs.column("doc_id").to_pylist(), docs.column("n_tokens").to_pylist(),
                docs.column("n_oov").to_pylist())
    rows = {str(doc_id): (*rows[str(doc_id)], n_tokens, n_oov, False) for doc_id, n_tokens, n_oov in sizes
            if str(doc_id) in rows}
    alpha = model.alpha.tolist()
    prior_mean = (model.alpha / model.alpha.sum()).tolist()
    for doc_id in _empty_documents(corpus_dir):
        rows.setdefault(doc_id, (alpha, prior_mean, 0, None, True))
    ordered = sorted(rows)
    columns = list(zip(*(rows[d] for d in ordered))) or [[]] * 5
    table = pa.table({
        "doc_id": pa.array(ordered, pa.string()),
        "gamma": pa.array(columns[0], pa.list_(pa.float64())),
        "theta": pa.array(columns[1], pa.list_(pa.float64())),
        "n_tokens": pa.array(columns[2], pa.int64()),
        "n_unknown": pa.array(columns[3], pa.int64()),
        "no_known_words": pa.array(columns[4], pa.bool_()),
    })
    path = os.path.join(output_dir, "doc_topics.parquet")
    os.makedirs(path)
    pq.write_table(table, os.path.join(path, "part-00000.parquet"))
    return {"documents": table.num_rows, "known_tokens": int(sum(columns[2])),
            "unknown_tokens": int(sum(n for n in columns[3] if n is not None)),
            "no_known_words": int(sum(columns[4])), "output": path}


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
