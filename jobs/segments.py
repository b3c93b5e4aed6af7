"""Segmented corpora: splitting documents into ordered segments (``prepare --segments``) and loading them.

``prepare --segments paragraph|sentence|COLUMN`` writes, beside the unchanged
``docs.parquet``, ``segments.parquet``: one row per document that has tokens,

    doc_id          string
    segments        array<array<int>>  the word ids of every kept segment, tokens in text order,
                                       segments in layout order
    segment_index   array<int>         the position of each kept segment among all segments of the
                                       document's text (0-based), so a dropped empty segment leaves a gap

Segments left with no in-vocabulary token (a paragraph of stop words, a heading
of numbers) are dropped and counted in ``corpus.json["segmentation"]``. Every
document's segments together are exactly its bag of words in ``docs.parquet``
(checked when the corpus is written).

Loading (:func:`load_segmented_corpus`) gives an RDD of ``(partition,
SegmentedBlock)``: documents go to partitions by Spark's hash of their id (as
``jobs/corpus.py`` does for the variational blocks) and are sorted by id inside
a partition, so the blocks do not depend on the cluster. A corpus prepared
without ``--segments`` loads as one segment per document (enough for LDA at
document level). An optional deterministic held-out split by a hash of the
document id selects the training or the test documents.
"""
from __future__ import annotations

import logging
import math
import pickle
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from drivers import storage
from inference.gibbs.model import SegmentedBlock
from jobs.corpus import default_partitions, open_corpus_meta

log = logging.getLogger("spark_topics.segments")

SEGMENTS = "segments.parquet"
SEGMENT_MODES = ("paragraph", "sentence")

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

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)


# --------------------------------------------------------------------------- splitting (prepare --segments)

#: a blank line (any whitespace between two line breaks, however many) or U+2029 PARAGRAPH SEPARATOR
PARAGRAPH_BREAK = r"\r?\n\s*\n|\u2029"
#: sentence ends: a terminator (Latin, Devanagari danda, Arabic/Urdu, Ethiopic, Armenian, interrobang,
#: ellipsis) and optional closing quotes/brackets, then whitespace; or a CJK full stop/question/exclamation
#: mark with no space needed; or a paragraph break. ``Mr. Smith`` is split too: a rule, not a model.
SENTENCE_BREAK = (PARAGRAPH_BREAK
                  + "|(?<=[.!?\u203d\u2026\u0964\u0965\u061f\u06d4\u1362\u0589])"
                    "[\"'\u201d\u2019\u00bb)\\]]*\\s+"
                  + "|(?<=[\u3002\uff01\uff1f\uff61])[\"'\u201d\u2019\u300d\u300f)\\]]*\\s*")
#: pieces of a segment column are joined with U+2029 into one text (and split there again)
COLUMN_SEPARATOR = "\u2029"


def is_column_mode(segments: str | None) -> bool:
    return bool(segments) and segments not in SEGMENT_MODES


def split_pattern(segments: str) -> str:
    """The Java regex that separates the segments of a text for ``--segments``."""
    if segments == "paragraph":
        return "(?U)" + PARAGRAPH_BREAK       # (?U): \\s is any Unicode white space
    if segments == "sentence":
        return "(?U)" + SENTENCE_BREAK
    return COLUMN_SEPARATOR


def join_segment_column(rows):
    """Column mode: ``text`` holds the segment column (a JSON array of strings, or an array of strings);
    it becomes the segments joined by U+2029. A value that is not a list of strings rejects the row as
    ``malformed``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(rows.schema["text"].dataType, T.ArrayType):
        parsed = F.col("text")
    else:
        parsed = F.from_json(F.col("text"), T.ArrayType(T.StringType()))
    valid = parsed.isNotNull() & (F.size(parsed) > 0) & F.forall(parsed, lambda x: x.isNotNull())
    bad = F.col("reason").isNull() & F.col("text").isNotNull() & ~F.coalesce(valid, F.lit(False))
    return rows.select(
        "doc_id",
        F.when(valid, F.concat_ws(COLUMN_SEPARATOR, F.transform(
            parsed, lambda x: F.regexp_replace(x, COLUMN_SEPARATOR, " ")))).otherwise(
            F.col("text").cast("string")).alias("text"),
        "source",
        F.when(bad, F.coalesce(F.col("raw"), F.col("text").cast("string"))).otherwise(F.col("raw")).alias("raw"),
        "order",
        F.when(bad, F.lit("malformed")).otherwise(F.col("reason")).alias("reason"))


def segment_vectors(candidates, vocab, segments: str, tokenize_options: dict):
    """``(doc_id, segments, segment_index, n_tokens)`` of every document with a token, as a Spark job.

    ``candidates``: ``(doc_id, text)``; ``vocab``: ``(term, id)``; the tokenizer
    options are those of the bag of words, so the segments of a document hold
    exactly its in-vocabulary tokens. Blank pieces of text are not segments;
    segments without an in-vocabulary token are dropped (``segment_index``
    keeps the position among the non-blank pieces).
    """
    from pyspark.sql import functions as F

    from jobs.text import tokenize

    pieces = F.filter(F.split(F.col("text"), split_pattern(segments), -1),
                      lambda x: F.length(F.regexp_replace(x, r"(?U)\s", "")) > 0)
    segs = candidates.select("doc_id", F.posexplode(pieces).alias("segment", "segment_text"))
    tokens = tokenize(segs, "segment_text", "tokens", **tokenize_options)
    words = (tokens.select("doc_id", "segment", F.posexplode("tokens").alias("position", "term"))
             .join(vocab.select("term", "id"), "term")
             .groupBy("doc_id", "segment")
             .agg(F.sort_array(F.collect_list(F.struct("position", "id"))).alias("pairs"))
             .select("doc_id", "segment", F.transform("pairs", lambda p: p["id"]).alias("words")))
    return (words.groupBy("doc_id")
            .agg(F.sort_array(F.collect_list(F.struct("segment", "words"))).alias("segs"))
            .select("doc_id",
                    F.transform("segs", lambda s: s["words"]).cast("array<array<int>>").alias("segments"),
                    F.transform("segs", lambda s: s["segment"]).cast("array<int>").alias("segment_index"),
                    F.aggregate("segs", F.lit(0), lambda acc, s: acc + F.size(s["words"])).alias("n_tokens")),
            segs.select("doc_id").groupBy("doc_id").count())


def write_segments(spark, candidates, vocab, docs_path: str, path: str, segments: str,
                   tokenize_options: dict) -> dict:
    """Write ``segments.parquet`` and return ``corpus.json["segmentation"]``; fails unless every document of
    ``docs.parquet`` has exactly its tokens in its segments."""
    from pyspark.sql import functions as F

    per_doc, pieces = segment_vectors(candidates, vocab, segments, tokenize_options)
    per_doc.select("doc_id", "segments", "segment_index").write.parquet(path)
    written = spark.read.parquet(path)
    docs = spark.read.parquet(docs_path).select("doc_id", F.col("n_tokens").alias("bag_tokens"))
    lengths = written.select("doc_id", F.aggregate("segments", F.lit(0), lambda a, s: a + F.size(s))
                             .alias("seg_tokens"), F.size("segments").alias("kept"))
    check = docs.join(lengths, "doc_id", "full_outer").agg(
        F.sum(F.when(F.coalesce("bag_tokens", F.lit(-1)) != F.coalesce("seg_tokens", F.lit(-2)), 1)
              .otherwise(0)).alias("mismatched"),
        F.sum("kept").alias("kept"), F.sum("seg_tokens").alias("tokens")).first()
    if check.mismatched:
        raise RuntimeError(f"internal error: {check.mismatched} documents whose segments do not hold exactly "
                           f"their bag-of-words tokens (a --token-pattern that matches across segment breaks?)")
    total = pieces.join(docs.select("doc_id"), "doc_id", "left_semi").agg(F.sum("count").alias("n")).first().n
    kept = int(check.kept or 0)
    return {"mode": "column" if is_column_mode(segments) else segments,
            "column": segments if is_column_mode(segments) else None,
            "pattern": split_pattern(segments), "segments": kept,
            "empty_segments_dropped": int(total or 0) - kept,
            "file": SEGMENTS}


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


def _to_block_rows(batches, source: str, vocab_size: int):
    """mapInArrow function: all Arrow batches of one partition -> one row holding its SegmentedBlock."""
    import pyarrow as pa
    from pyspark import TaskContext

    batches = list(batches)
    partition = TaskContext.get().partitionId()
    if batches:
        table = pa.Table.from_batches(batches)
    elif source == "segments":
        table = pa.table({"doc_id": pa.array([], pa.string()),
                          "segments": pa.array([], pa.list_(pa.list_(pa.int32())))})
    else:
        table = pa.table({"doc_id": pa.array([], pa.string()), "term_ids": pa.array([], pa.list_(pa.int32())),
                          "counts": pa.array([], pa.list_(pa.int32()))})
    block = block_from_segments_table(table) if source == "segments" else block_from_docs_table(table)
    if block.n_tokens and (block.words.min() < 0 or block.words.max() >= vocab_size):
        raise ValueError(f"partition {partition}: word id outside the vocabulary 0..{vocab_size - 1}")
    if block.n_docs and np.any(np.diff(block.seg_ptr) == 0):
        raise ValueError(f"partition {partition}: an empty segment (prepare drops them)")
    yield pa.RecordBatch.from_pydict({"partition": pa.array([partition], pa.int32()),
                                      "block": [pickle.dumps(block, protocol=5)]})


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


def _loaded_block(data: bytes, permute_seed: int | None) -> SegmentedBlock:
    block = pickle.loads(data)
    return block if permute_seed is None else permute_block_segments(block, permute_seed)


def heldout_condition(fraction: float):
    """Spark Column: true for the documents of the held-out (test) split, by a salted xxhash64 of the id."""
    from pyspark.sql import functions as F

    bucket = F.pmod(F.xxhash64(F.lit(HELDOUT_SALT), F.col("doc_id")), F.lit(HELDOUT_BUCKETS))
    return bucket < F.lit(int(round(fraction * HELDOUT_BUCKETS)))


def load_segmented_corpus(spark, directory: str, num_partitions: int | None = None,
                          heldout_fraction: float = 0.0, split: str = "all",
                          require_segments: bool = False,
                          permute_seed: int | None = None) -> SegmentedCorpus:
    """Open CORPUS_DIR as a cached RDD of ``(partition, SegmentedBlock)``.

    ``split``: ``"all"`` documents, or with ``heldout_fraction`` > 0 the
    ``"train"`` documents or the ``"test"`` ones (a fixed function of the id).
    ``permute_seed``: randomly permute every document's segments
    (:func:`permute_block_segments`, deterministic per document id).
    """
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

    meta, vocab = open_corpus_meta(spark, directory)
    if split not in ("all", "train", "test"):
        raise ValueError(f"split must be all, train or test, got {split!r}")
    if not 0.0 <= heldout_fraction < 1.0:
        raise SystemExit(f"--heldout-fraction must be in [0, 1), got {heldout_fraction}")
    if split != "all" and heldout_fraction <= 0.0:
        raise ValueError("a train/test split needs heldout_fraction > 0")
    segmented = storage.exists(storage.join(directory, SEGMENTS))
    if require_segments and not segmented:
        raise SystemExit(f"{directory} has no segments: prepare it with `spark-topics prepare --segments "
                         f"paragraph|sentence|COLUMN` (this model needs ordered segments)")
    if segmented:
        frame = spark.read.parquet(storage.join(directory, SEGMENTS)).select("doc_id", "segments")
    else:
        frame = spark.read.parquet(storage.join(directory, "docs.parquet")).select("doc_id", "term_ids", "counts")
    if split != "all":
        test = heldout_condition(heldout_fraction)
        frame = frame.where(test if split == "test" else ~test)
    docs = int(meta["documents"])
    share = 1.0 if split == "all" else heldout_fraction if split == "test" else 1 - heldout_fraction
    tokens = meta.get("tokens")
    P = num_partitions or default_partitions(math.ceil(docs * share), tokens and math.ceil(tokens * share))
    schema = StructType([StructField("partition", IntegerType()), StructField("block", BinaryType())])
    source, V = ("segments" if segmented else "docs"), len(vocab)
    started = time.perf_counter()
    spark.sparkContext.setJobDescription(f"load {'segmented ' if segmented else ''}corpus {directory} "
                                         f"({split}) into {P} blocks")
    blocks = (frame.repartition(P, "doc_id")
              .mapInArrow(lambda batches: _to_block_rows(batches, source, V), schema)
              .rdd.map(lambda row: (row[0], _loaded_block(row[1], permute_seed)))
              .setName(f"segmented blocks {directory} ({split})")
              .cache())
    sizes = blocks.map(lambda pb: (pb[0], pb[1].n_docs, pb[1].n_segments, pb[1].n_tokens)).collect()
    spark.sparkContext.setJobDescription(None)
    if sorted(s[0] for s in sizes) != list(range(P)):
        raise RuntimeError(f"expected one block per partition 0..{P - 1}, got {sorted(s[0] for s in sizes)}")
    n_docs, n_segs, n_tokens = (int(sum(s[i] for s in sizes)) for i in (1, 2, 3))
    if n_docs == 0:
        raise SystemExit(f"{directory}: no documents in the {split} split")
    log.info("loaded %d documents (%s), %d segments, %d tokens into %d blocks in %.1f s%s", n_docs, split,
             n_segs, n_tokens, P, time.perf_counter() - started,
             "" if permute_seed is None else f", segments permuted (seed {permute_seed})")
    return SegmentedCorpus(directory, meta, vocab, blocks, P, segmented, n_docs, n_segs, n_tokens, split)
