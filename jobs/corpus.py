"""Reading a prepared corpus directory (written by ``spark-topics prepare``) into DocBlocks.

Documents go to partitions by a stable hash of their id and are sorted by id
inside a partition, so the blocks, and therefore the model, do not depend on
how Spark happened to read the Parquet files or on the number of cores.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import pandas as pd

from drivers import storage
from inference.blocks import DocBlock

DOCS_PER_PARTITION = 25000


@dataclass
class Corpus:
    directory: str
    meta: dict
    vocab: pd.DataFrame        # term, id (and df, cf when present), sorted by id
    blocks: object             # RDD of (partition, DocBlock), cached
    num_partitions: int

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def num_documents(self) -> int:
        return int(self.meta["documents"])


def stable_partition(doc_id: str, num_partitions: int) -> int:
    return zlib.crc32(str(doc_id).encode("utf-8")) % num_partitions


def default_partitions(num_documents: int) -> int:
    return max(2, math.ceil(num_documents / DOCS_PER_PARTITION))


def read_vocab(spark, path: str) -> pd.DataFrame:
    vocab = spark.read.parquet(path).toPandas().sort_values("id").reset_index(drop=True)
    if len(vocab) and not (vocab["id"].to_numpy() == range(len(vocab))).all():
        raise ValueError(f"{path}: vocabulary ids must be 0..V-1 without gaps")
    return vocab


def docs_to_blocks(docs_df, num_partitions: int):
    """DataFrame (doc_id, term_ids, counts) -> cached RDD of (partition, DocBlock)."""
    def to_block(partition, rows):
        yield partition, DocBlock.from_documents((doc_id, ids, cts) for _, (doc_id, ids, cts) in rows)

    return (docs_df.select("doc_id", "term_ids", "counts").rdd
            .map(lambda r: (stable_partition(r[0], num_partitions), (r[0], r[1], r[2])))
            .partitionBy(num_partitions, lambda p: p)
            .mapPartitionsWithIndex(to_block, preservesPartitioning=True)
            .setName("corpus blocks")
            .cache())


def load_corpus(spark, directory: str, num_partitions: int | None = None) -> Corpus:
    """Open CORPUS_DIR: ``corpus.json``, ``vocab.parquet`` and ``docs.parquet`` as blocks."""
    meta_path = storage.join(directory, "corpus.json")
    if not storage.exists(meta_path):
        raise SystemExit(f"{directory} is not a prepared corpus (no corpus.json); run `spark-topics prepare` first")
    meta = storage.load_json(meta_path)
    vocab = read_vocab(spark, storage.join(directory, "vocab.parquet"))
    if meta.get("documents", 0) == 0 or len(vocab) == 0:
        raise SystemExit(f"{directory}: the corpus is empty ({meta.get('documents', 0)} documents, "
                         f"{len(vocab)} terms)")
    P = num_partitions or default_partitions(int(meta["documents"]))
    docs = spark.read.parquet(storage.join(directory, "docs.parquet"))
    return Corpus(directory, meta, vocab, docs_to_blocks(docs, P), P)
