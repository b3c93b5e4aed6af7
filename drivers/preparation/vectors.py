"""A prepared corpus from a DataFrame column of MLlib vectors of term counts (the Spark ML API's fit): the vectors
converted in the executors (Arrow batches to the rows of docs.parquet, each row's problems found), checked in one
line, written in the corpus format."""
from __future__ import annotations

import logging
import os

import numpy as np
from pyspark.ml.linalg import VectorUDT

from drivers import storage
from drivers.corpora.files import DOCS, NO_STOPWORDS, REJECTS, VOCAB
from drivers.engines.memory import estimator_memory_problem
from drivers.preparation.writer import corpus_record, vocabulary_table, write_corpus_json, write_dataset
from drivers.spark_parquet import read_parquet
from inference.errors import UsageError

log = logging.getLogger("spark_topics.ml")
#: the largest count a prepared corpus holds (``counts`` is array<int>)
MAX_COUNT = 2 ** 31 - 1


def check_vector_column(schema, column: str, who: str) -> None:
    """A one-line UsageError unless ``column`` is a column of MLlib vectors."""
    if column not in schema.fieldNames():
        raise UsageError(f"{who}: featuresCol {column!r} is not a column of the DataFrame "
                         f"({', '.join(schema.fieldNames())})")
    kind = schema[column].dataType
    if not isinstance(kind, VectorUDT):
        raise UsageError(f"{who}: featuresCol {column!r} must hold pyspark.ml.linalg vectors of term counts "
                         f"(VectorUDT, e.g. CountVectorizer output), but it is {kind.simpleString()}"
                         + (" (convert it with pyspark.ml.functions.array_to_vector)"
                            if kind.typeName() == "array" else ""))


def attribute_names(field) -> list | None:
    """The names of a vector column's ML attributes (``ml_attr.attrs``), when every index has one."""
    attr = (field.metadata or {}).get("ml_attr") or {}
    size, names = attr.get("num_attrs"), {}
    for group in (attr.get("attrs") or {}).values():
        for entry in group:
            if "idx" in entry and "name" in entry:
                names[int(entry["idx"])] = str(entry["name"])
    if not names or size is None or sorted(names) != list(range(int(size))):
        return None
    return [names[i] for i in range(int(size))]


def write_corpus(spark, dataset, features: str, corpus_dir: str, id_col: str | None = None,
                 vocabulary: list | None = None, topics: int | None = None) -> dict:
    """The documents of ``dataset[features]`` as a prepared corpus in ``corpus_dir`` (``docs.parquet``,
    ``vocab.parquet``, ``rejects/``, ``corpus.json`` last; the format :mod:`drivers.corpora.files` describes).

    Document ids: ``id_col`` as strings (unique, not null), else a monotonically increasing id. Refused in one
    line: null vectors, vectors of different sizes, values that are not non-negative integer counts, a
    vocabulary of another size, fewer terms than ``topics``. Documents with no words go to ``rejects/`` as ``empty`` (and are counted).
    Returns corpus.json's content.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.types import (ArrayType, BooleanType, IntegerType, StringType, StructField, StructType)

    ids = (dataset[id_col].cast("string") if id_col is not None
           else F.monotonically_increasing_id().cast("string")).alias("doc_id")
    source = dataset.select(ids, dataset[features].alias("features"))
    schema = StructType([StructField("doc_id", StringType()), StructField("term_ids", ArrayType(IntegerType())),
                         StructField("counts", ArrayType(IntegerType())), StructField("n_tokens", IntegerType()),
                         StructField("n_oov", IntegerType()), StructField("size", IntegerType()),
                         StructField("problem", IntegerType()), StructField("is_null", BooleanType())])
    sc = spark.sparkContext
    converted = source.mapInArrow(corpus_batches, schema).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        sc.setJobDescription("SparkTopicsLDA: read the features column")
        stats = converted.agg(
            F.count("*").alias("rows"), F.sum(F.col("is_null").cast("long")).alias("nulls"),
            F.sum(F.when(~F.col("is_null") & (F.col("n_tokens") == 0), 1).otherwise(0)).alias("empty"),
            F.sum(F.when(~F.col("is_null"), F.col("n_tokens").cast("long"))).alias("tokens"),
            F.min(F.when(~F.col("is_null"), F.col("size"))).alias("min_size"),
            F.max(F.when(~F.col("is_null"), F.col("size"))).alias("max_size"),
            F.sum((F.col("problem") > 0).cast("long")).alias("problems"),
            F.min(F.when(F.col("problem") > 0, F.struct("problem", "doc_id"))).alias("example"),
            F.sum(F.col("doc_id").isNull().cast("long")).alias("null_ids"),
            *([F.countDistinct("doc_id").alias("distinct_ids")] if id_col is not None else [])).first()
        _check_documents(stats, features, id_col)
        V = int(stats.max_size)
        if vocabulary is not None and len(vocabulary) != V:
            raise UsageError(f"SparkTopicsLDA: the vocabulary has {len(vocabulary)} terms but the vectors of "
                             f"{features!r} have size {V}")
        if topics is not None and topics > V:
            raise UsageError(f"SparkTopicsLDA: k={topics} is larger than the vocabulary (vectors of size {V} in "
                             f"{features!r}): use fewer topics or a larger vocabulary")
        too_big = estimator_memory_problem(topics or 1, V)
        if too_big:
            raise UsageError(f"SparkTopicsLDA: {too_big}")
        documents = int(stats.rows) - int(stats.empty)
        if documents == 0:
            raise UsageError(f"SparkTopicsLDA: no document of {features!r} has a word ({stats.rows} rows)")
        if stats.empty:
            log.warning("SparkTopicsLDA: %d of %d documents have no words: skipped (listed in the corpus' %s as "
                        "empty)", stats.empty, stats.rows, REJECTS)
        sc.setJobDescription("SparkTopicsLDA: write the prepared corpus")
        storage.makedirs(corpus_dir)
        docs_path = storage.join(corpus_dir, DOCS)
        (converted.where(F.col("n_tokens") > 0)
         .select("doc_id", "term_ids", "counts", "n_tokens", "n_oov").write.parquet(spark_path(docs_path)))
        rejects_path = storage.join(corpus_dir, REJECTS)
        if stats.empty:
            (converted.where(F.col("n_tokens") == 0)
             .select(F.col("doc_id").alias("id"), F.lit("empty").alias("reason"),
                     F.lit(f"DataFrame column {features}").alias("source"), F.lit(None).cast("string").alias("raw"))
             .write.option("ignoreNullFields", False).json(spark_path(rejects_path)))
        else:
            storage.makedirs(rejects_path)
        sc.setJobDescription("SparkTopicsLDA: document and collection frequencies")
        frequencies = (read_parquet(spark, spark_path(docs_path))
                       .select(F.explode(F.arrays_zip("term_ids", "counts")).alias("e"))
                       .groupBy(F.col("e.term_ids").alias("id"))
                       .agg(F.count("*").alias("df"), F.sum(F.col("e.counts").cast("long")).alias("cf"))
                       .collect())
    finally:
        converted.unpersist()
        sc.setJobDescription(None)
    df, cf = np.zeros(V, dtype=np.int64), np.zeros(V, dtype=np.int64)
    for row in frequencies:
        df[row.id], cf[row.id] = row.df, row.cf
    terms = [str(t) for t in vocabulary] if vocabulary is not None else [str(i) for i in range(V)]
    write_dataset(storage.join(corpus_dir, VOCAB), vocabulary_table(terms, df, cf))
    meta = corpus_record(documents, V, stats.tokens or 0, 0, stats.rows, {"empty": stats.empty}, {
        "options": {"format": "dataframe", "language": NO_STOPWORDS, "features_column": features,
                    "id_column": id_col, "vocabulary": "given" if vocabulary is not None else "indices"},
        "input": f"DataFrame column {features}"})
    write_corpus_json(corpus_dir, meta)
    return meta


def _check_documents(stats, features: str, id_col: str | None) -> None:
    where = f"SparkTopicsLDA: featuresCol {features!r}"
    if not stats.rows:
        raise UsageError("SparkTopicsLDA: the DataFrame has no rows")
    if stats.nulls:
        raise UsageError(f"{where} is null in {stats.nulls} of {stats.rows} rows")
    if stats.problems:
        kind, doc = stats.example["problem"], stats.example["doc_id"]
        what = ("values that are not term counts (non-negative integers below 2^31; a TF-IDF or normalised "
                "column cannot be a corpus)" if kind == _NOT_COUNTS else
                "indices that are not ascending within the vector's size")
        raise UsageError(f"{where} has {what} in {stats.problems} rows (e.g. the document "
                         f"{'with ' + id_col + ' ' if id_col else ''}{doc!r})")
    if stats.min_size != stats.max_size:
        raise UsageError(f"{where} holds vectors of different sizes ({stats.min_size} to {stats.max_size}): one "
                         f"vocabulary (vector size) for all documents")
    if stats.max_size < 1:
        raise UsageError(f"{where} holds vectors of size 0")
    if id_col is not None:
        if stats.null_ids:
            raise UsageError(f"SparkTopicsLDA: idCol {id_col!r} is null in {stats.null_ids} rows")
        if stats.distinct_ids != stats.rows:
            raise UsageError(f"SparkTopicsLDA: idCol {id_col!r} is not unique ({stats.distinct_ids} distinct ids "
                             f"in {stats.rows} rows)")


_NOT_COUNTS, _BAD_INDICES = 1, 2


class Vectors:
    """A batch of MLlib vectors (Arrow ``struct<type, size, indices, values>``) in CSR form, zeros kept."""

    def __init__(self, column):
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        n = len(column)
        kind_arr, size_arr, index_arr, value_arr = column.flatten()
        self.n = n
        self.valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        dense = np.asarray(pc.fill_null(kind_arr, 1).to_numpy(zero_copy_only=False)) == 1
        lengths = np.asarray(pc.fill_null(pc.list_value_length(value_arr), 0).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
        lengths[~self.valid] = 0
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.indptr[1:])
        self.values = np.asarray(pc.list_flatten(value_arr.filter(pa.array(self.valid))).to_numpy(
            zero_copy_only=False), dtype=np.float64) if n else np.zeros(0)
        self.row = np.repeat(np.arange(n), lengths)
        self.indices = np.arange(self.indptr[-1], dtype=np.int64) - self.indptr[:-1][self.row]
        sparse_entries = ~dense[self.row]
        if sparse_entries.any():
            sparse_rows = self.valid & ~dense
            flat = pc.list_flatten(index_arr.filter(pa.array(sparse_rows))).to_numpy(zero_copy_only=False)
            self.indices[sparse_entries] = np.asarray(flat, dtype=np.int64)
        sizes = np.asarray(pc.fill_null(size_arr, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
        self.sizes = np.where(dense, lengths, sizes)

    def row_any(self, entries: np.ndarray) -> np.ndarray:
        """(n,) whether any of a row's entries is flagged."""
        return np.bincount(self.row[entries], minlength=self.n) > 0

    def bad_indices(self) -> np.ndarray:
        """(n,) rows whose indices are outside [0, size) or not strictly ascending."""
        outside = (self.indices < 0) | (self.indices >= self.sizes[self.row])
        same_row = self.row[1:] == self.row[:-1]
        unordered = np.zeros(len(self.indices), dtype=bool)
        unordered[1:] = same_row & (np.diff(self.indices) <= 0)
        return self.row_any(outside | unordered)

    def nonzero(self, keep: np.ndarray | None = None):
        """(indptr, indices, values) of the nonzero entries (of rows where ``keep``)."""
        entries = self.values != 0
        if keep is not None:
            entries &= keep[self.row]
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.row[entries], minlength=self.n), out=indptr[1:])
        return indptr, self.indices[entries], self.values[entries]


def corpus_batches(batches):
    """mapInArrow: (doc_id, features) -> the rows of docs.parquet, with each row's size and problems."""
    import pyarrow as pa

    for batch in batches:
        vectors = Vectors(batch.column(1))
        values = vectors.values
        not_counts = ~np.isfinite(values) | (values < 0) | (values > MAX_COUNT) | (values != np.rint(values))
        problem = np.where(vectors.row_any(not_counts), _NOT_COUNTS,
                           np.where(vectors.bad_indices(), _BAD_INDICES, 0)).astype(np.int32)
        problem[~vectors.valid] = 0
        indptr, indices, counts = vectors.nonzero(keep=problem == 0)
        counts = counts.astype(np.int32)
        n_tokens = np.bincount(np.repeat(np.arange(vectors.n), np.diff(indptr)), weights=counts,
                               minlength=vectors.n).astype(np.int64)
        offsets = pa.array(indptr.astype(np.int32))
        yield pa.RecordBatch.from_arrays(
            [batch.column(0).cast(pa.string()),
             pa.ListArray.from_arrays(offsets, pa.array(indices.astype(np.int32))),
             pa.ListArray.from_arrays(offsets, pa.array(counts)),
             pa.array(np.minimum(n_tokens, MAX_COUNT).astype(np.int32)), pa.array(np.zeros(vectors.n, np.int32)),
             pa.array(vectors.sizes.astype(np.int32)), pa.array(problem), pa.array(~vectors.valid)],
            names=["doc_id", "term_ids", "counts", "n_tokens", "n_oov", "size", "problem", "is_null"])


def spark_path(path: str) -> str:
    """A :mod:`drivers.storage` path as Spark takes it (a local path made absolute)."""
    return path if "://" in path else os.path.abspath(path)
