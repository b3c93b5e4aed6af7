"""The vocabulary of a prepared corpus: term counts per document, document and collection frequencies, the pruned
vocabulary (or a given one, checked), and every document's vector of term ids and counts over it."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from drivers import storage
from drivers.corpora.files import VOCAB
from drivers.preparation.options import PrepareError, PrepareOptions
from drivers.spark_parquet import read_parquet


class PersistedFrames:
    """DataFrames persisted during one run, unpersisted together at the end (a context manager)."""

    def __init__(self):
        self._frames: list[DataFrame] = []

    def add(self, df: DataFrame) -> DataFrame:
        self._frames.append(df.persist())
        return df

    def release(self) -> None:
        for df in reversed(self._frames):
            df.unpersist()
        self._frames.clear()

    def __enter__(self) -> "PersistedFrames":
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def count_terms(tokens: DataFrame) -> DataFrame:
    """``(doc_id, term, tf)``: how often each term occurs in each document."""
    return (tokens.select("doc_id", F.explode("tokens").alias("term"))
            .groupBy("doc_id", "term").agg(F.count("*").cast("int").alias("tf")))


def term_statistics(term_counts: DataFrame) -> DataFrame:
    """``(term, df, cf)``: documents containing each term and its total count."""
    return term_counts.groupBy("term").agg(F.count("*").alias("df"), F.sum("tf").alias("cf"))


def build_vocabulary(stats: DataFrame, n_docs: int, opts: PrepareOptions, cache: PersistedFrames) -> DataFrame:
    """``(term, id, df, cf)`` of the terms that pass ``min_df``/``max_df``/``max_vocab``, from the corpus' term
    statistics (:func:`term_statistics`, shared with :func:`frequent_terms`).

    Fractions are of ``n_docs``; ids run 0..V-1 by ``cf`` descending, then term.
    """
    min_count, max_count = opts.df_bounds(n_docs)
    kept = stats.where((F.col("df") >= min_count) & (F.col("df") <= max_count))
    rank = [F.col("cf").desc(), F.col("term").asc()]
    if opts.max_vocab is not None:
        kept = kept.orderBy(*rank).limit(opts.max_vocab)
    return number_rows(kept, rank, "id", cache).select("term", "id", "df", "cf")


def frequent_terms(stats: DataFrame, n_docs: int, opts: PrepareOptions) -> DataFrame | None:
    """``(term, df)`` of the terms cut for ``df > max_df`` (``frequent_terms.parquet``), df descending then term,
    from the term statistics :func:`build_vocabulary` read; None when ``max_df`` cannot cut any term (no job)."""
    max_count = opts.df_bounds(n_docs)[1]
    if max_count >= n_docs:
        return None
    return (stats.where(F.col("df") > max_count)
            .select("term", F.col("df").cast("long")).coalesce(1).sortWithinPartitions(F.col("df").desc(), "term"))


def load_vocabulary(spark: SparkSession, path: str, term_counts: DataFrame) -> DataFrame:
    """A vocabulary to reuse, with ``df``/``cf`` counted on this corpus (0 when absent).

    ``path`` is a ``vocab.parquet`` or a corpus directory holding one; it
    needs unique ``term``s and unique ``id``s 0..V-1.
    """
    nested = storage.join(path, VOCAB)
    if storage.exists(nested):
        path = nested
    if not storage.exists(path):
        raise PrepareError(f"vocabulary not found: {path}")
    given = read_parquet(spark, path)
    missing = [c for c in ("term", "id") if c not in given.columns]
    if missing:
        raise PrepareError(f"vocabulary {path} lacks column(s) {', '.join(missing)}; "
                           f"it has {', '.join(given.columns)}")
    given = given.select(F.col("term").cast("string"), F.col("id").cast("int"))
    _check_vocabulary(given, path)
    return (given.join(term_statistics(term_counts), "term", "left")
            .select("term", "id", F.coalesce("df", F.lit(0)).cast("long").alias("df"),
                    F.coalesce("cf", F.lit(0)).cast("long").alias("cf")))


def _check_vocabulary(vocab: DataFrame, path: str) -> None:
    """Fail unless terms are unique and non-null and ids are exactly 0..V-1."""
    row = vocab.agg(F.count("*").alias("n"), F.count("term").alias("terms"),
                    F.countDistinct("term").alias("unique_terms"),
                    F.countDistinct("id").alias("unique_ids"),
                    F.min("id").alias("min_id"), F.max("id").alias("max_id")).first()
    if row.n == 0:
        raise PrepareError(f"vocabulary {path} is empty")
    if not (row.terms == row.unique_terms == row.unique_ids == row.n
            and row.min_id == 0 and row.max_id == row.n - 1):
        raise PrepareError(
            f"vocabulary {path} needs unique terms and ids 0..{row.n - 1}: it has {row.n} rows, "
            f"{row.unique_terms} distinct terms, {row.unique_ids} distinct ids from "
            f"{row.min_id} to {row.max_id}")


def number_rows(df: DataFrame, order: list[Column], name: str, cache: PersistedFrames) -> DataFrame:
    """Add ``name`` = 0..n-1 following ``order``, without moving all rows to one partition.

    A distributed ``zipWithIndex``: sort, count the rows of each sorted
    partition on the driver, and add each partition's offset to the row's
    position inside it (the low 33 bits of ``monotonically_increasing_id``).
    """
    ordered = cache.add(df.orderBy(*order)
                        .withColumn("_part", F.spark_partition_id())
                        .withColumn("_pos", F.monotonically_increasing_id()
                                    - F.spark_partition_id().cast("long") * (1 << 33)))
    sizes = sorted((row._part, row["count"]) for row in ordered.groupBy("_part").count().collect())
    offsets, start = [], 0
    for part, size in sizes:
        offsets.append((part, start))
        start += size
    offset_df = df.sparkSession.createDataFrame(offsets, "_part int, _offset long")
    return (ordered.join(F.broadcast(offset_df), "_part")
            .withColumn(name, (F.col("_offset") + F.col("_pos")).cast("int"))
            .drop("_part", "_pos", "_offset"))


def document_vectors(candidates: DataFrame, term_counts: DataFrame, vocab: DataFrame, keep=()) -> DataFrame:
    """One row per candidate document: ``doc_id``, ``order``, ``term_ids``, ``counts``,
    ``n_tokens``, ``n_oov`` and the ``keep`` columns.  An empty document has ``n_tokens == 0`` and empty arrays."""
    in_vocab = F.col("id").isNotNull()
    per_doc = (term_counts.join(vocab.select("term", "id"), "term", "left")
               .groupBy("doc_id")
               .agg(F.sum("tf").alias("n_total"),
                    # collect_list skips the nulls of out-of-vocabulary terms
                    F.array_sort(F.collect_list(F.when(in_vocab, F.struct("id", "tf")))).alias("pairs")))
    pairs = F.coalesce("pairs", F.array().cast("array<struct<id:int,tf:int>>"))
    n_tokens = F.aggregate(pairs, F.lit(0), lambda total, p: total + p["tf"])
    return (candidates.select("doc_id", "order", *keep)
            .join(per_doc, "doc_id", "left")
            .select("doc_id", "order",
                    F.transform(pairs, lambda p: p["id"]).alias("term_ids"),
                    F.transform(pairs, lambda p: p["tf"]).alias("counts"),
                    n_tokens.alias("n_tokens"),
                    (F.coalesce("n_total", F.lit(0)) - n_tokens).cast("int").alias("n_oov"), *keep))
