"""A small prepared corpus loaded in this process, without Spark, into the blocks Spark makes: every document in
the partition ``repartition(P, "doc_id")`` gives it (:mod:`drivers.corpora.spark_partition`), the same number of
partitions (:func:`drivers.corpora.bow.chosen_partitions`), segmented blocks sorted by id as
:func:`drivers.corpora.segmented.load_segmented_corpus` sorts them. Work seeded by partition (the Gibbs held-out
sampler, infer) therefore draws what the Spark job draws."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivers.corpora.bow import Corpus, chosen_partitions, docs_block, empty_docs_table, open_corpus_meta
from drivers.corpora.files import DOCS
from drivers.corpora.segmented import SegmentedCorpus, _checked_block, _empty_segments_table, corpus_source
from drivers.corpora.spark_partition import partition_of
from inference.errors import UsageError

#: corpora up to this many tokens are worked on in this process when the choice is automatic
MAX_TOKENS = 2_000_000


class Shared:
    """What a task reads of a Spark broadcast (``value``), for the same task run in this process."""

    def __init__(self, value):
        self.value = value


def why_not_in_process(corpus_dir: str) -> str | None:
    """None when this process can load the corpus (local, not aligned, small); else why not, in a few words."""
    if "://" in corpus_dir:
        return "a corpus in a remote store"
    meta, _ = open_corpus_meta(None, corpus_dir)
    if "languages" in meta:
        return "an aligned corpus"
    if int(meta.get("tokens") or 0) > MAX_TOKENS:
        return f"a corpus of {meta['tokens']} tokens (more than {MAX_TOKENS})"
    return None


def _partitioned(table, num_partitions: int):
    """(partition, rows of ``table`` in it) for every partition 0..P-1."""
    part_of = np.array([partition_of(d, num_partitions) for d in table.column("doc_id").to_pylist()], dtype=np.int64)
    for p in range(num_partitions):
        yield p, table.filter(pa.array(part_of == p))


def load_segmented_corpus(corpus_dir: str, partitions: int | None = None, require_segments: bool = False,
                          ordered: bool = False) -> SegmentedCorpus:
    """The whole corpus as :func:`drivers.corpora.segmented.load_segmented_corpus` loads it (split ``all``,
    segments not permuted), its ``blocks`` a list of ``(partition, SegmentedBlock)``."""
    meta, vocab = open_corpus_meta(None, corpus_dir)
    segmented, source = corpus_source(corpus_dir, meta, False, require_segments, ordered)
    table = pq.read_table(os.path.join(corpus_dir, source),
                          columns=["doc_id", "segments"] if segmented else ["doc_id", "term_ids", "counts"])
    P = chosen_partitions(partitions, int(meta["documents"]), meta.get("tokens"))
    empty, kind = (_empty_segments_table, "segments") if segmented else (empty_docs_table, "docs")
    blocks = [(p, _checked_block(rows if rows.num_rows else empty(), p, kind, len(vocab)))
              for p, rows in _partitioned(table, P)]
    sizes = [sum(getattr(block, n) for _, block in blocks) for n in ("n_docs", "n_segments", "n_tokens")]
    if sizes[0] == 0:
        raise UsageError(f"{corpus_dir}: no documents in the all split")
    return SegmentedCorpus(corpus_dir, meta, vocab, blocks, P, segmented, *map(int, sizes), "all")


def load_corpus(corpus_dir: str, partitions: int | None = None) -> Corpus:
    """The corpus as :func:`drivers.corpora.bow.load_corpus` loads it, its ``blocks`` a list of ``(partition,
    DocBlock)``: the Spark job's blocks (the same documents in each, sorted by id)."""
    meta, vocab = open_corpus_meta(None, corpus_dir)
    table = pq.read_table(os.path.join(corpus_dir, DOCS), columns=["doc_id", "term_ids", "counts"])
    P = chosen_partitions(partitions, int(meta["documents"]), meta.get("tokens"))
    return Corpus(corpus_dir, meta, vocab, [(p, docs_block(rows if rows.num_rows else empty_docs_table()))
                                            for p, rows in _partitioned(table, P)], P)


def opened(spark, corpus_dir: str, partitions: int | None = None) -> Corpus:
    """The corpus as blocks: on Spark (:func:`drivers.corpora.bow.load_corpus`), or with ``spark`` None in this
    process (:func:`load_corpus`), the same blocks either way."""
    from drivers.corpora import bow

    return load_corpus(corpus_dir, partitions) if spark is None else bow.load_corpus(spark, corpus_dir, partitions)


def release(blocks) -> None:
    """Unpersist an RDD of blocks (a list of them, loaded in this process, needs nothing)."""
    if not isinstance(blocks, list):
        blocks.unpersist()
