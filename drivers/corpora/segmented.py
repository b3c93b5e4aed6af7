"""Segmented corpora as blocks: ``segments.parquet`` (or ``docs.parquet``) -> ``(partition, SegmentedBlock)``.

:func:`load_segmented_corpus` gives an RDD of ``(partition, SegmentedBlock)``:
documents go to partitions by Spark's hash of their id (as
:mod:`drivers.corpora.bow` does for the variational blocks) and are sorted by id inside
a partition, so the blocks do not depend on the cluster. A corpus prepared
without ``--segments`` loads as one segment per document (enough for LDA at
document level). An optional deterministic held-out split by a hash of the
document id selects the training or the test documents. How segments are cut:
:mod:`drivers.preparation.segments`.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from drivers import storage
from drivers.corpora.bow import blocks_by_partition, chosen_partitions, empty_docs_table, open_corpus_meta, reading
from drivers.corpora.files import DOCS, SEGMENTS, keeps_text_order
from drivers.spark_parquet import read_parquet
from inference.constraints import UNIT_LEFT, check
from inference.errors import UsageError
from inference.gibbs.model import SegmentedBlock

log = logging.getLogger("spark_topics.segments")

#: salt of the held-out hash, so the split is not correlated with Spark's partitioning hash
HELDOUT_SALT = "spark-topics-heldout"
HELDOUT_BUCKETS = 1_000_000


@dataclass
class SegmentedCorpus:
    directory: str
    meta: dict
    vocab: pd.DataFrame
    blocks: object            # RDD of (partition, SegmentedBlock), cached
    num_partitions: int
    segmented: bool           # False: the corpus has no segments.parquet (one segment per document)
    num_documents: int        # documents in the blocks (after the held-out split)
    num_segments: int
    num_tokens: int
    split: str                # "all", "train" or "test"
    layout: object = None     # an aligned corpus: the languages' VocabLayout over the concatenated vocabulary

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)


# --------------------------------------------------------------------------- Arrow -> SegmentedBlock

def block_from_segments_table(table) -> SegmentedBlock:
    """Arrow table ``doc_id``, ``segments`` (list<list<int>>) -> a block sorted by id, without Python loops."""
    import pyarrow as pa

    if table.num_rows == 0:
        return SegmentedBlock(np.zeros(0, dtype=object), np.zeros(1, np.int64), np.zeros(1, np.int64),
                              np.zeros(0, np.int32))
    table = table.sort_by("doc_id").combine_chunks()
    segments = table.column("segments").combine_chunks()
    if segments.null_count:
        raise ValueError("segments.parquet: a document has null segments")
    outer = segments.offsets.to_numpy().astype(np.int64)
    inner = segments.flatten()
    if inner.null_count:
        raise ValueError("segments.parquet: a segment is null")
    inner_offsets = inner.offsets.to_numpy().astype(np.int64)
    words = inner.flatten()
    if words.null_count:
        raise ValueError("segments.parquet: a word id is null")
    words = words.cast(pa.int32()).to_numpy(zero_copy_only=False)
    doc_ptr = outer - outer[0]
    seg_ptr = inner_offsets - inner_offsets[0]
    return SegmentedBlock(np.array(table.column("doc_id").to_pylist(), dtype=object), doc_ptr, seg_ptr,
                          np.ascontiguousarray(words, dtype=np.int32))


def block_from_docs_table(table) -> SegmentedBlock:
    """Arrow table ``doc_id``, ``term_ids``, ``counts`` (a bag-of-words corpus) -> one segment per document."""
    if table.num_rows == 0:
        return block_from_segments_table(table)
    table = table.sort_by("doc_id").combine_chunks()
    ids, counts = table.column("term_ids").combine_chunks(), table.column("counts").combine_chunks()
    terms = ids.flatten().to_numpy(zero_copy_only=False).astype(np.int32)
    reps = counts.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    if terms.shape != reps.shape or np.any(reps < 0):
        raise ValueError("docs.parquet: term_ids and counts differ in length, or a count is negative")
    offsets = ids.offsets.to_numpy().astype(np.int64)
    ends = np.concatenate([[0], np.cumsum(reps)])[offsets - offsets[0]]
    D = table.num_rows
    return SegmentedBlock(np.array(table.column("doc_id").to_pylist(), dtype=object),
                          np.arange(D + 1, dtype=np.int64), ends.astype(np.int64), np.repeat(terms, reps))


def _empty_segments_table():
    import pyarrow as pa

    return pa.table({"doc_id": pa.array([], pa.string()),
                     "segments": pa.array([], pa.list_(pa.list_(pa.int32())))})


def _checked_block(table, partition: int, source: str, vocab_size: int) -> SegmentedBlock:
    """A partition's Arrow table -> its SegmentedBlock, refusing word ids outside the vocabulary and empty
    segments."""
    block = block_from_segments_table(table) if source == "segments" else block_from_docs_table(table)
    if block.n_tokens and (block.words.min() < 0 or block.words.max() >= vocab_size):
        raise ValueError(f"partition {partition}: word id outside the vocabulary 0..{vocab_size - 1}")
    if block.n_docs and np.any(np.diff(block.seg_ptr) == 0):
        raise ValueError(f"partition {partition}: an empty segment (prepare drops them)")
    return block


def permute_block_segments(block: SegmentedBlock, seed: int) -> SegmentedBlock:
    """Randomly permute the segment order of every document of ``block`` (the thesis' PTrTe setting).

    Document ``d``'s permutation is drawn from ``document_seed(seed, doc_id)``
    (BLAKE2b of the seed and the id), so it is the same on any cluster, in any
    partition and in the training and the test split. Every document keeps its
    multiset of segments (each segment's tokens in their order); only the order
    of its segments changes.
    """
    from inference.heldout import document_seed

    if block.n_docs == 0:
        return block
    counts = np.diff(block.doc_ptr)
    order = np.empty(block.n_segments, dtype=np.int64)
    for d, doc_id in enumerate(block.doc_ids):
        start, n = int(block.doc_ptr[d]), int(counts[d])
        rng = np.random.default_rng(document_seed(seed, str(doc_id)))
        order[start:start + n] = start + rng.permutation(n)
    lengths = np.diff(block.seg_ptr)[order]
    seg_ptr = np.zeros(block.n_segments + 1, dtype=np.int64)
    np.cumsum(lengths, out=seg_ptr[1:])
    # token index of every token of the new layout: segment order[s]'s tokens, in their order
    starts = block.seg_ptr[:-1][order]
    gather = np.repeat(starts - seg_ptr[:-1], lengths) + np.arange(seg_ptr[-1], dtype=np.int64)
    return SegmentedBlock(block.doc_ids, block.doc_ptr.copy(), seg_ptr,
                          np.ascontiguousarray(block.words[gather], dtype=np.int32))


def heldout_condition(fraction: float, tuple_of_language: bool = False):
    """Spark Column: true for the documents of the held-out (test) split, by a salted xxhash64 of the id (with
    ``tuple_of_language``, of the tuple id before ``@<language>``, so a tuple's languages fall together)."""
    from pyspark.sql import functions as F

    key = F.regexp_replace("doc_id", "@[^@]*$", "") if tuple_of_language else F.col("doc_id")
    bucket = F.pmod(F.xxhash64(F.lit(HELDOUT_SALT), key), F.lit(HELDOUT_BUCKETS))
    return bucket < F.lit(int(round(fraction * HELDOUT_BUCKETS)))


def corpus_source(directory: str, meta: dict, aligned: bool, require_segments: bool,
                  ordered: bool) -> tuple[bool, str]:
    """(whether the documents load as segments, the file they load from: ``segments.parquet``, the ordered
    tokens' file, else ``docs.parquet``), refusing a corpus without what the model needs."""
    segmented = not aligned and storage.exists(storage.join(directory, SEGMENTS))
    source_file = SEGMENTS if segmented else DOCS
    if ordered:
        if aligned or not keeps_text_order(meta):
            raise UsageError(f"{directory} keeps no word order: prepare it with `spark-topics prepare --ordered` "
                             f"(this model needs every document's tokens in text order)")
        segmented, source_file = True, meta["ordered"]["file"]
    if require_segments and not segmented:
        raise UsageError(f"{directory} has no segments: prepare it with `spark-topics prepare --segments "
                         f"paragraph|sentence|COLUMN` (this model needs ordered segments)")
    return segmented, source_file


def load_segmented_corpus(spark, directory: str, num_partitions: int | None = None,
                          heldout_fraction: float = 0.0, split: str = "all",
                          require_segments: bool = False,
                          permute_seed: int | None = None,
                          separate_languages: bool = False,
                          power_of_two: bool = False, ordered: bool = False) -> SegmentedCorpus:
    """Open CORPUS_DIR as a cached RDD of ``(partition, SegmentedBlock)``.

    ``power_of_two``: without ``num_partitions``, round the default number of partitions up to a power of two
    (the Gibbs engine's samplers: 2.3M tokens give 4 partitions, not 3, so they share 2, 4, 8... cores evenly;
    still a function of the data only).

    ``split``: ``"all"`` documents, or with ``heldout_fraction`` > 0 the
    ``"train"`` documents or the ``"test"`` ones (a fixed function of the id).
    ``ordered``: a model of word order: the tokens in text order (``prepare --ordered``: its segments, or one
    segment per document), refused for a corpus prepared without them; other models never read them.
    ``permute_seed``: randomly permute every document's segments
    (:func:`permute_block_segments`, deterministic per document id).
    An aligned corpus (``prepare --lang-column``) loads one document per tuple over the languages' concatenated
    vocabulary, or one per tuple and language with ``separate_languages``
    (:func:`drivers.corpora.aligned.aligned_documents`); the held-out split keeps a tuple's languages together.
    """
    from drivers.corpora.aligned import aligned_documents, is_aligned

    layout = aligned_frame = None
    if is_aligned(directory):
        if require_segments:
            raise UsageError(f"{directory} is an aligned corpus (no segments): this model needs ordered segments")
        aligned_frame, vocab, layout, meta = aligned_documents(spark, directory, separate=separate_languages)
    else:
        meta, vocab = open_corpus_meta(spark, directory)
    if split not in ("all", "train", "test"):
        raise ValueError(f"split must be all, train or test, got {split!r}")
    check("--heldout-fraction", heldout_fraction, UNIT_LEFT)
    if split != "all" and heldout_fraction <= 0.0:
        raise ValueError("a train/test split needs heldout_fraction > 0")
    segmented, source_file = corpus_source(directory, meta, layout is not None, require_segments, ordered)
    docs = int(meta["documents"])
    share = 1.0 if split == "all" else heldout_fraction if split == "test" else 1 - heldout_fraction
    tokens = meta.get("tokens")
    P = chosen_partitions(num_partitions, math.ceil(docs * share), tokens and math.ceil(tokens * share))
    if power_of_two and num_partitions is None:
        P = 1 << (P - 1).bit_length()
    source, V = ("segments" if segmented else "docs"), len(vocab)
    started = time.perf_counter()
    spark.sparkContext.setJobDescription(f"load {'segmented ' if segmented else ''}corpus {directory} "
                                         f"({split}) into {P} blocks")
    permute = None if permute_seed is None else (lambda block: permute_block_segments(block, permute_seed))
    with reading(directory):
        if segmented:
            frame = read_parquet(spark, storage.join(directory, source_file)).select("doc_id", "segments")
        elif aligned_frame is not None:
            frame = aligned_frame
        else:
            frame = read_parquet(spark, storage.join(directory, DOCS)).select("doc_id", "term_ids", "counts")
        if split != "all":
            test = heldout_condition(heldout_fraction, tuple_of_language=separate_languages and layout is not None)
            frame = frame.where(test if split == "test" else ~test)
        blocks = blocks_by_partition(
            frame, P, lambda table, partition: _checked_block(table, partition, source, V),
            _empty_segments_table if segmented else empty_docs_table, f"segmented blocks {directory} ({split})",
            after_load=permute, plain=aligned_frame is None)
        sizes = blocks.map(lambda pb: (pb[0], pb[1].n_docs, pb[1].n_segments, pb[1].n_tokens)).collect()
    spark.sparkContext.setJobDescription(None)
    if sorted(s[0] for s in sizes) != list(range(P)):
        raise RuntimeError(f"expected one block per partition 0..{P - 1}, got {sorted(s[0] for s in sizes)}")
    n_docs, n_segs, n_tokens = (int(sum(s[i] for s in sizes)) for i in (1, 2, 3))
    if n_docs == 0:
        raise UsageError(f"{directory}: no documents in the {split} split")
    log.info("loaded %d documents (%s), %d segments, %d tokens into %d blocks in %.1f s%s", n_docs, split,
             n_segs, n_tokens, P, time.perf_counter() - started,
             "" if permute_seed is None else f", segments permuted (seed {permute_seed})")
    return SegmentedCorpus(directory, meta, vocab, blocks, P, segmented, n_docs, n_segs, n_tokens, split, layout)
