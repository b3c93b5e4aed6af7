"""``infer`` of a small corpus with a Gibbs model in this process, without Spark: the corpus cut into the blocks
Spark makes (the partition of every document by Spark's murmur3 hash of its id,
:mod:`drivers.corpora.spark_partition`; sorted by id inside a block), each block sampled by the task the Spark job
runs (:func:`drivers.families.gibbs.infer.infer_task`, draws seeded by (seed, sweep, partition)) and written as
the same Parquet parts, so the tables are the Spark job's number for number
(``tests/commands/test_conformance.py`` compares the two for every Gibbs model)."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivers import storage
from drivers.corpora.bow import chosen_partitions, empty_docs_table, open_corpus_meta
from drivers.corpora.segmented import _checked_block, _empty_segments_table, corpus_source
from drivers.corpora.spark_partition import partition_of
from drivers.families.gibbs.infer import infer_task, proportion_paths, proportion_tables
from drivers.families.gibbs.models import needs_order, needs_segments
from drivers.families.variational.infer_in_process import MAX_TOKENS, VocabOf
from drivers.store.model_store import require_same_vocabulary
from inference.errors import UsageError
from inference.gibbs.heldout import HeldoutSchedule


def why_not_in_process(corpus_dir: str) -> str | None:
    """None when this process can infer the corpus with a (monolingual) Gibbs model; else why not."""
    if "://" in corpus_dir:
        return "a corpus in a remote store"
    meta, _ = open_corpus_meta(None, corpus_dir)
    if "languages" in meta:
        return "an aligned corpus"
    if int(meta.get("tokens") or 0) > MAX_TOKENS:
        return f"a corpus of {meta['tokens']} tokens (more than {MAX_TOKENS})"
    return None


class _Broadcast:
    """What a task reads of the Spark job's broadcast: ``value``."""

    def __init__(self, value):
        self.value = value


def infer_in_process(trained, corpus_dir: str, output_dir: str, sweeps: int, samples: int, seed: int,
                     partitions: int | None, catalogue) -> dict:
    """As :func:`drivers.families.gibbs.infer.infer_gibbs`, in this process."""
    saved, model = trained
    spec = catalogue.of_meta(saved.meta)
    meta, vocab = open_corpus_meta(None, corpus_dir)
    require_same_vocabulary(saved, VocabOf(corpus_dir, vocab))
    segmented, source = corpus_source(corpus_dir, meta, False, needs_segments(spec), needs_order(spec))
    table = pq.read_table(os.path.join(corpus_dir, source),
                          columns=["doc_id", "segments"] if segmented else ["doc_id", "term_ids", "counts"])
    P = chosen_partitions(partitions, int(meta["documents"]), meta.get("tokens"))
    part_of = np.array([partition_of(d, P) for d in table.column("doc_id").to_pylist()], dtype=np.int64)
    schedule = HeldoutSchedule.default(sweeps, samples)
    bc = _Broadcast((saved.meta["hyper"], np.ascontiguousarray(saved.lambda_.T, dtype=np.float64)))
    paths = proportion_paths(model, output_dir)
    for path in paths:
        if storage.exists(path):
            storage.delete(path)
    empty = _empty_segments_table if segmented else empty_docs_table
    sizes = np.zeros(3, dtype=np.int64)
    for p in range(P):
        rows = table.filter(pa.array(part_of == p))
        block = _checked_block(rows if rows.num_rows else empty(), p, "segments" if segmented else "docs", len(vocab))
        sizes += (block.n_docs, block.n_segments, block.n_tokens)
        for partition, item in infer_task(p, [(p, block)], model, bc, schedule, seed):
            for path, part in zip(paths, proportion_tables(model, partition, item)):
                storage.write_parquet(storage.join(path, f"part-{partition:05d}.parquet"), part)
    if sizes[0] == 0:
        raise UsageError(f"{corpus_dir}: no documents in the all split")
    return {"documents": int(sizes[0]), "segments": int(sizes[1]), "tokens": int(sizes[2]), "sweeps": sweeps,
            "samples": schedule.samples, "seed": seed, "output": storage.join(output_dir, "doc_topics.parquet"),
            "segment_output": storage.join(output_dir, "segment_topics.parquet")}
