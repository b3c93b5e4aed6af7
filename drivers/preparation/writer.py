"""Writing the corpus format (:mod:`drivers.corpora.files`), one writer for every producer of a corpus (``prepare``
on Spark and in this process, the Spark ML API's corpus of vectors, refresh's union of batches): the vocabulary, the
documents in input order, the rejected rows, the stop words, and corpus.json (its counts observed on the rows the
Spark writes write, in the same jobs, or counted as written in this process)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, FREQUENT_TERMS, REJECT_REASONS, STOPWORDS, rejects_schema
from drivers.preparation.options import PrepareOptions
from drivers.preparation.reading import RAW_MAX_CHARS, absolute_path


FORMAT_VERSION = 1
REJECTS_SCHEMA = rejects_schema()


def write_vocabulary(vocab: DataFrame, path: str) -> int:
    """``vocab.parquet``; returns the number of terms written (observed in the write's own job)."""
    written = Observation("vocabulary written")
    (vocab.select("term", F.col("id").cast("int"), F.col("df").cast("long"), F.col("cf").cast("long"))
     .coalesce(1).sortWithinPartitions("id")
     .observe(written, F.count(F.lit(1)).alias("terms")).write.parquet(path))
    return int(written.get["terms"])


def write_documents(docs: DataFrame, path: str, partitions: int | None, keep=()) -> dict:
    """Non-empty documents in input order, in ``partitions`` files when given, with the ``keep`` columns; returns
    the documents, tokens and out-of-vocabulary tokens written (``n``, ``tokens``, ``oov``: observed in the write's
    own job, on the rows it writes)."""
    kept = docs.where(F.col("n_tokens") > 0)
    if partitions:
        kept = kept.repartitionByRange(partitions, "order").sortWithinPartitions("order")
    else:
        kept = kept.orderBy("order")
    written = Observation("documents written")
    (kept.select("doc_id", F.col("term_ids").cast("array<int>"), F.col("counts").cast("array<int>"),
                 F.col("n_tokens").cast("int"), F.col("n_oov").cast("int"), *keep)
     .observe(written, F.count(F.lit(1)).alias("n"), F.sum("n_tokens").alias("tokens"),
              F.sum("n_oov").alias("oov"))
     .write.parquet(path))
    counts = written.get
    return {name: int(counts[name] or 0) for name in ("n", "tokens", "oov")}


def write_rejects(rows: DataFrame, docs: DataFrame, path: str) -> dict:
    """All rejected rows, in input order: read-time, duplicate_id and empty rejects; returns the rows written per
    reason (observed in the write's own job; a reason outside :data:`REJECT_REASONS` counts under None)."""
    empty_ids = docs.where(F.col("n_tokens") == 0).select("doc_id")
    empty = (rows.where(F.col("reason").isNull()).join(empty_ids, "doc_id", "left_semi")
             .withColumn("reason", F.lit("empty")))
    rejects = rows.where(F.col("reason").isNotNull()).unionByName(empty)
    written = Observation("rejects written")
    per_reason = [F.sum(F.when(F.col("reason") == reason, 1).otherwise(0)).alias(reason) for reason in REJECT_REASONS]
    (rejects.orderBy("order")
     .select(F.col("doc_id").alias("id"), "reason", "source",
             F.substring(F.coalesce("raw", "text"), 1, RAW_MAX_CHARS).alias("raw"))
     .observe(written, F.count(F.lit(1)).alias("rows"), *per_reason)
     .write.option("ignoreNullFields", False).json(path))
    counts = written.get
    rejected = {reason: int(counts[reason] or 0) for reason in REJECT_REASONS}
    other = int(counts["rows"]) - sum(rejected.values())
    return dict(rejected, **({None: other} if other else {}))


def corpus_summary(input_path: str, input_rows: int, vocab_size: int, documents: dict, rejects: dict,
                   fmt: str, opts: PrepareOptions) -> dict:
    """The ``corpus.json`` dictionary from the counts the writes observed (:func:`write_vocabulary`,
    :func:`write_documents`, :func:`write_rejects`), checked against the input rows."""
    rejected = {reason: int(rejects.get(reason, 0)) for reason in REJECT_REASONS}
    other = {reason: n for reason, n in rejects.items() if reason not in REJECT_REASONS}
    if other or input_rows != documents["n"] + sum(rejected.values()):
        raise RuntimeError(f"internal error: {input_rows} input rows but {documents['n']} documents "
                           f"and rejects {rejected} (other: {other})")
    return corpus_record(documents["n"], vocab_size, documents["tokens"], documents["oov"], input_rows, rejected,
                         options_record(input_path, fmt, opts))


def corpus_record(documents: int, vocab_size: int, tokens: int, oov_tokens: int, input_rows: int, rejected: dict,
                  source: dict) -> dict:
    """corpus.json's content: the counts in the format's order (``rejected``: every reason of the format, 0 where
    none), then ``source`` (``options`` and ``input``)."""
    return {
        "format_version": FORMAT_VERSION,
        "documents": int(documents),
        "vocab_size": int(vocab_size),
        "tokens": int(tokens),
        "oov_tokens": int(oov_tokens),
        "input_rows": int(input_rows),
        "rejected": {reason: int(rejected.get(reason, 0)) for reason in REJECT_REASONS},
        **source,
    }


def write_corpus_json(directory: str, corpus: dict) -> None:
    """``corpus.json``: indented UTF-8 JSON and a newline."""
    storage.write_bytes(storage.join(directory, CORPUS_JSON),
                        (json.dumps(corpus, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def write_stopwords(directory: str, words: list) -> None:
    """``stopwords.txt``: the stop words removed, one a line."""
    storage.write_bytes(storage.join(directory, STOPWORDS), "".join(f"{word}\n" for word in words).encode("utf-8"))


def write_frequent_terms(directory: str, frame) -> dict:
    """``frequent_terms.parquet`` (term, df: the terms cut for df > max_df, df descending then term) from a Spark
    DataFrame already in that order, an Arrow table, or None (no term cut: an empty table, written without Spark);
    returns corpus.json's ``frequent_terms`` entry (the file and the number of terms, observed in the write)."""
    import pyarrow as pa

    path = storage.join(directory, FREQUENT_TERMS)
    if isinstance(frame, DataFrame):
        written = Observation("frequent terms written")
        frame.observe(written, F.count(F.lit(1)).alias("terms")).write.parquet(path)
        terms = int(written.get["terms"])
    else:
        table = frame if frame is not None else pa.table({"term": pa.array([], pa.string()),
                                                          "df": pa.array([], pa.int64())})
        write_dataset(path, table)
        terms = table.num_rows
    return {"file": FREQUENT_TERMS, "terms": terms}


def frequent_terms_table(terms: list, df: list):
    """``frequent_terms.parquet``'s rows as an Arrow table (term string, df long)."""
    import pyarrow as pa

    return pa.table({"term": pa.array(terms, pa.string()), "df": pa.array(df, pa.int64())})


def vocabulary_table(terms: list, df, cf):
    """``vocab.parquet``'s rows as an Arrow table (term string, id int 0..V-1, df long, cf long), in id order."""
    import pyarrow as pa

    return pa.table({"term": pa.array(terms, pa.string()), "id": pa.array(np.arange(len(terms)), pa.int32()),
                     "df": pa.array(df, pa.int64()), "cf": pa.array(cf, pa.int64())})


def write_dataset(directory: str, table, parts: int = 1) -> None:
    """An Arrow table as a Parquet dataset folder laid out as Spark writes one (``part-NNNNN.parquet`` files, rows
    in order, and ``_SUCCESS``), on any filesystem, without Spark."""
    storage.makedirs(directory)
    bounds = np.linspace(0, table.num_rows, parts + 1).round().astype(int)
    for part, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        storage.write_parquet(storage.join(directory, f"part-{part:05d}.parquet"), table.slice(start, stop - start))
    storage.write_bytes(storage.join(directory, "_SUCCESS"), b"")


def options_record(input_path: str, fmt: str, opts: PrepareOptions) -> dict:
    """corpus.json's ``options`` (``keep_columns`` and ``holdout`` only when given, so corpus.json is as before)
    and ``input``."""
    return {"options": {**{k: v for k, v in dataclasses.asdict(opts).items()
                           if k not in ("keep_columns", "holdout") or v}, "format": fmt},
            "input": absolute_path(input_path)}


def no_documents_message(corpus: dict, rejects_path: str) -> str:
    rejected = ", ".join(f"{reason}={n}" for reason, n in corpus["rejected"].items())
    opts = corpus["options"]
    vocab = (f"reused vocabulary {opts['vocab']}" if opts["vocab"] else
             f"min_df={opts['min_df']}, max_df={opts['max_df']}, max_vocab={opts['max_vocab']}")
    return (f"no documents left: all {corpus['input_rows']} input rows were rejected "
            f"({rejected}); vocabulary size {corpus['vocab_size']} ({vocab}); "
            f"the rejected rows are in {rejects_path}")


def in_directory(directory: str):
    """``in_directory("out")("docs.parquet")`` -> ``"out/docs.parquet"`` (URIs too)."""
    return lambda name: storage.join(directory, name)
