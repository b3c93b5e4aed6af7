"""Reading a prepared corpus directory (written by ``spark-topics prepare``) into DocBlocks.

Documents go to partitions by a stable hash of their id and are sorted by id
inside a partition, so the blocks, and therefore the model, do not depend on
how Spark happened to read the Parquet files or on the number of cores.
"""
from __future__ import annotations

import logging
import math
import pickle
import time
from dataclasses import dataclass

import pandas as pd

from drivers import storage
from inference.blocks import DocBlock

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

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def num_documents(self) -> int:
        return int(self.meta["documents"])


def check_topics(num_topics: int, vocab_size: int) -> None:
    """Refuse fewer than 2 topics or more topics than vocabulary terms (every trainer)."""
    if num_topics < 2:
        raise SystemExit(f"--topics must be at least 2, got {num_topics}")
    if num_topics > vocab_size:
        raise SystemExit(f"--topics {num_topics} is larger than the vocabulary ({vocab_size} terms): "
                         "use fewer topics or a larger vocabulary")


def default_partitions(num_documents: int, num_tokens: int | None = None) -> int:
    """At least 2; a function of the data only (never of the cluster), so results are reproducible anywhere."""
    if num_tokens:
        return max(2, math.ceil(num_tokens / TOKENS_PER_PARTITION))
    return max(2, math.ceil(num_documents / DOCS_PER_PARTITION))


def read_vocab(spark, path: str) -> pd.DataFrame:
    """The vocabulary (a Spark-written Parquet directory or a single file), read with pyarrow on the driver."""
    import pyarrow.parquet as pq

    filesystem, p = storage.resolve(path)
    vocab = pq.read_table(p, filesystem=filesystem).to_pandas().sort_values("id").reset_index(drop=True)
    if len(vocab) and not (vocab["id"].to_numpy() == range(len(vocab))).all():
        raise ValueError(f"{path}: vocabulary ids must be 0..V-1 without gaps")
    return vocab


def _partition_to_block(batches):
    """mapInArrow function: all Arrow batches of one partition -> one row holding its DocBlock."""
    import pyarrow as pa
    from pyspark import TaskContext

    batches = list(batches)
    table = pa.Table.from_batches(batches) if batches else pa.table(
        {"doc_id": pa.array([], pa.string()), "term_ids": pa.array([], pa.list_(pa.int32())),
         "counts": pa.array([], pa.list_(pa.int32()))})
    block = DocBlock.from_arrow(table)
    yield pa.RecordBatch.from_pydict({"partition": pa.array([TaskContext.get().partitionId()], pa.int32()),
                                      "block": [pickle.dumps(block, protocol=5)]})


def docs_to_blocks(docs_df, num_partitions: int):
    """DataFrame (doc_id, term_ids, counts) -> cached RDD of (partition, DocBlock).

    Documents are hash-partitioned by id (Spark's murmur3, the same on every
    cluster) and reach Python as Arrow batches, converted to CSR without a
    Python loop over documents.
    """
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

    schema = StructType([StructField("partition", IntegerType()), StructField("block", BinaryType())])
    return (docs_df.select("doc_id", "term_ids", "counts")
            .repartition(num_partitions, "doc_id")
            .mapInArrow(_partition_to_block, schema)
            .rdd.map(lambda row: (row[0], pickle.loads(row[1])))
            .setName("corpus blocks")
            .cache())


def open_corpus_meta(spark, directory: str) -> tuple[dict, pd.DataFrame]:
    """``corpus.json`` and the vocabulary of CORPUS_DIR, refusing a missing or empty corpus."""
    meta_path = storage.join(directory, "corpus.json")
    if not storage.exists(meta_path):
        raise SystemExit(f"{directory} is not a prepared corpus (no corpus.json); run `spark-topics prepare` first")
    meta = storage.load_json(meta_path)
    vocab = read_vocab(spark, storage.join(directory, "vocab.parquet"))
    if meta.get("documents", 0) == 0 or len(vocab) == 0:
        raise SystemExit(f"{directory}: the corpus is empty ({meta.get('documents', 0)} documents, "
                         f"{len(vocab)} terms)")
    return meta, vocab


def load_corpus(spark, directory: str, num_partitions: int | None = None) -> Corpus:
    """Open CORPUS_DIR: ``corpus.json``, ``vocab.parquet`` and ``docs.parquet`` as blocks."""
    meta, vocab = open_corpus_meta(spark, directory)
    P = num_partitions or default_partitions(int(meta["documents"]), meta.get("tokens"))
    docs = spark.read.parquet(storage.join(directory, "docs.parquet"))
    started = time.perf_counter()
    spark.sparkContext.setJobDescription(f"load corpus {directory} into {P} document blocks")
    blocks = docs_to_blocks(docs, P)
    n_blocks = blocks.count()  # materialise the cache now, so iteration timings are iterations only
    spark.sparkContext.setJobDescription(None)
    log.info("loaded %s documents into %d blocks in %.1f s", meta["documents"], n_blocks, time.perf_counter() - started)
    return Corpus(directory, meta, vocab, blocks, P)
