"""Reading a prepared corpus directory (written by ``spark-topics prepare``) into DocBlocks.

Documents go to partitions by a stable hash of their id and are sorted by id
inside a partition, so the blocks, and therefore the model, do not depend on
how Spark happened to read the Parquet files or on the number of cores.
"""
from __future__ import annotations

import contextlib
import logging
import math
import pickle
import threading
import time
from dataclasses import dataclass

import pandas as pd

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, DOCS, VOCAB, require_corpus
from drivers.failures import is_spark_failure, one_line
from drivers.spark_parquet import read_parquet
from inference.blocks import DocBlock
from inference.constraints import AT_LEAST_1, TOPICS, check
from inference.errors import DamagedError, UsageError

#: default partition size: about a million tokens (a partition's E-step pass or Gibbs sweep takes ~0.1-0.5 s
#: on one core, so Spark's per-task cost stays small); by documents when a corpus does not record its tokens
TOKENS_PER_PARTITION = 1_000_000
DOCS_PER_PARTITION = 25000

log = logging.getLogger("spark_topics.corpus")


@dataclass
class Corpus:
    directory: str
    meta: dict
    vocab: pd.DataFrame        # term, id (and df, cf when present), sorted by id
    blocks: object             # RDD of (partition, DocBlock), cached
    num_partitions: int
    layout: object = None      # VocabLayout of an aligned (polylingual) corpus, else None
    largest_block_vocab: int | None = None   # the most distinct words of a block (None: not counted yet)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def num_documents(self) -> int:
        return int(self.meta["documents"])


def check_topics(num_topics: int, vocab_size: int) -> None:
    """Refuse fewer than 2 topics or more topics than vocabulary terms (every trainer)."""
    check("--topics", num_topics, TOPICS)
    if num_topics > vocab_size:
        raise UsageError(f"--topics {num_topics} is larger than the vocabulary ({vocab_size} terms): "
                         "use fewer topics or a larger vocabulary")


def chosen_partitions(requested: int | None, num_documents: int, num_tokens: int | None = None) -> int:
    """``requested`` partitions (None: :func:`default_partitions`; below 1: refused)."""
    check("--partitions", requested, AT_LEAST_1)
    return requested or default_partitions(num_documents, num_tokens)


def default_partitions(num_documents: int, num_tokens: int | None = None) -> int:
    """At least 2; a function of the data only (never of the cluster), so results are reproducible anywhere."""
    if num_tokens:
        return max(2, math.ceil(num_tokens / TOKENS_PER_PARTITION))
    return max(2, math.ceil(num_documents / DOCS_PER_PARTITION))


def _block_rows(batches, to_block, empty_table):
    """mapInArrow function: all Arrow batches of one partition -> one row holding its block (pickled)."""
    import pyarrow as pa
    from pyspark import TaskContext

    batches = list(batches)
    partition = TaskContext.get().partitionId()
    table = pa.Table.from_batches(batches) if batches else empty_table()
    block = to_block(table, partition)
    yield pa.RecordBatch.from_pydict({"partition": pa.array([partition], pa.int32()),
                                      "block": [pickle.dumps(block, protocol=5)]})


#: sessions whose adaptive execution :func:`without_adaptive_execution` has turned off: id(session) -> [threads
#: inside, the setting before the first entered]; the first thread in saves the setting, the last out restores it
_ADAPTIVE_OFF: dict[int, list] = {}
_ADAPTIVE_LOCK = threading.Lock()
_ADAPTIVE = "spark.sql.adaptive.enabled"


@contextlib.contextmanager
def without_adaptive_execution(spark, off: bool = True):
    """Plan the DataFrames turned into RDDs in the block without adaptive query execution (``off``): AQE runs a
    plan's shuffle as a Spark job of its own when the RDD is made, to re-plan what follows, which a frame with no
    other shuffle than ``repartition(P, ...)`` does not need (AQE keeps a partition count given); without it the
    shuffle is a stage of the first job that reads the RDD.

    The setting is the session's: threads that plan side by side in one session (a pyspark.ml ``CrossValidator``
    with ``parallelism``) share one switch, counted, so the user's setting comes back when the last one leaves
    (a plan another thread makes meanwhile runs without AQE: the same rows, planned the older way)."""
    if not off:
        yield
        return
    key = id(spark)
    with _ADAPTIVE_LOCK:
        entry = _ADAPTIVE_OFF.get(key)
        if entry is None:
            entry = _ADAPTIVE_OFF[key] = [0, spark.conf.get(_ADAPTIVE, None)]
            spark.conf.set(_ADAPTIVE, "false")
        entry[0] += 1
    try:
        yield
    finally:
        with _ADAPTIVE_LOCK:
            entry[0] -= 1
            if entry[0] == 0:
                del _ADAPTIVE_OFF[key]
                if entry[1] is None:
                    spark.conf.unset(_ADAPTIVE)
                else:
                    spark.conf.set(_ADAPTIVE, entry[1])


def blocks_by_partition(frame, num_partitions: int, to_block, empty_table, name: str, after_load=None,
                        plain: bool = False):
    """DataFrame with a ``doc_id`` column -> cached RDD of ``(partition, block)``, one block per partition.

    Rows are hash-partitioned by ``doc_id`` (Spark's murmur3, the same on every
    cluster) and reach Python as Arrow batches; ``to_block(table, partition)``
    turns a partition's table into its block (without a Python loop over
    documents), ``empty_table()`` stands in for a partition without rows, and
    ``after_load(block)`` (optional) transforms every block as it is read back. ``plain``: the frame has no
    shuffle of its own (a file read, filtered): planned without adaptive execution
    (:func:`without_adaptive_execution`), so the blocks cost one Spark job less.
    """
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

    schema = StructType([StructField("partition", IntegerType()), StructField("block", BinaryType())])
    load = (lambda data: pickle.loads(data)) if after_load is None else \
        (lambda data: after_load(pickle.loads(data)))
    with without_adaptive_execution(frame.sparkSession, plain):
        rows = (frame.repartition(num_partitions, "doc_id")
                .mapInArrow(lambda batches: _block_rows(batches, to_block, empty_table), schema).rdd)
    return rows.map(lambda row: (row[0], load(row[1]))).setName(name).cache()


def materialise_blocks(blocks) -> int:
    """Fill the cache of ``blocks`` (so that iteration timings are iterations only) in one job that also returns the
    most distinct words of a block (what a task's Python memory is sized from,
    :func:`drivers.families.variational.shared.check_python_memory`)."""
    return int(blocks.map(lambda item: len(item[1].vocab_ids)).max())


def empty_docs_table():
    import pyarrow as pa

    return pa.table({"doc_id": pa.array([], pa.string()), "term_ids": pa.array([], pa.list_(pa.int32())),
                     "counts": pa.array([], pa.list_(pa.int32()))})


def docs_block(table, _partition=None) -> DocBlock:
    """A partition's rows (doc_id, term_ids, counts) -> its DocBlock, the documents sorted by id (so the block,
    and every sum over its documents, is the same whatever order Spark's shuffle or a file gave the rows)."""
    return DocBlock.from_arrow(table.sort_by("doc_id"))


def docs_to_blocks(docs_df, num_partitions: int, plain: bool = False):
    """DataFrame (doc_id, term_ids, counts) -> cached RDD of (partition, DocBlock), converted to CSR (``plain``: as
    :func:`blocks_by_partition`)."""
    return blocks_by_partition(docs_df.select("doc_id", "term_ids", "counts"), num_partitions, docs_block,
                               empty_docs_table, "corpus blocks", plain=plain)


@contextlib.contextmanager
def reading(directory: str):
    """A corpus Spark cannot read (a damaged or truncated Parquet file) is refused in one line."""
    try:
        yield
    except Exception as exc:
        if not is_spark_failure(exc):
            raise
        raise DamagedError(f"cannot read the corpus {directory}: {one_line(exc)}; prepare it again") from None


def open_corpus_meta(spark, directory: str) -> tuple[dict, pd.DataFrame]:
    """``corpus.json`` and the vocabulary of CORPUS_DIR, refusing a missing or empty corpus."""
    require_corpus(directory)
    meta = storage.load_json(storage.join(directory, CORPUS_JSON))
    vocab = storage.read_vocab(storage.join(directory, VOCAB))
    if meta.get("vocab_size") is not None and meta["vocab_size"] != len(vocab):
        raise DamagedError(f"{directory}: vocab.parquet has {len(vocab)} terms but corpus.json says "
                           f"{meta['vocab_size']}: the files are not of one corpus; prepare it again")
    if meta.get("documents", 0) == 0 or len(vocab) == 0:
        raise UsageError(f"{directory}: the corpus is empty ({meta.get('documents', 0)} documents, "
                         f"{len(vocab)} terms)")
    return meta, vocab


def load_corpus(spark, directory: str, num_partitions: int | None = None) -> Corpus:
    """Open CORPUS_DIR: ``corpus.json``, ``vocab.parquet`` and ``docs.parquet`` as blocks."""
    meta, vocab = open_corpus_meta(spark, directory)
    P = chosen_partitions(num_partitions, int(meta["documents"]), meta.get("tokens"))
    started = time.perf_counter()
    spark.sparkContext.setJobDescription(f"load corpus {directory} into {P} document blocks")
    with reading(directory):
        blocks = docs_to_blocks(read_parquet(spark, storage.join(directory, DOCS)), P, plain=True)
        largest_vocab = materialise_blocks(blocks)
    spark.sparkContext.setJobDescription(None)
    log.info("loaded %s documents into %d blocks in %.1f s", meta["documents"], P, time.perf_counter() - started)
    return Corpus(directory, meta, vocab, blocks, P, largest_block_vocab=largest_vocab)
