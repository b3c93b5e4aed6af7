"""``spark-topics prepare``: raw text -> Parquet corpus and vocabulary.

Reads text documents (a directory of ``.txt`` files, JSON lines, CSV or
Parquet), tokenises them with Spark's ``RegexTokenizer``, removes stop words,
builds a pruned vocabulary and writes a bag-of-words corpus.  Everything runs
as DataFrame operations, so the job scales with the cluster.

Output, in ``CORPUS_DIR`` (the contract the trainer reads):

``docs.parquet/``
    ``doc_id`` string, ``term_ids`` array<int> (ascending, unique),
    ``counts`` array<int> (same length, > 0), ``n_tokens`` int (in-vocabulary
    tokens), ``n_oov`` int (tokens left after stop words that are not in the
    vocabulary); rows in input order.
``vocab.parquet/``
    ``term`` string, ``id`` int (0..V-1, by ``cf`` descending then ``term``),
    ``df`` long (documents containing the term), ``cf`` long (occurrences).
``segments.parquet/`` (with ``--segments``)
    ``doc_id``, ``segments`` array<array<int>> (ordered segments, word ids in text
    order), ``segment_index`` array<int>; see :mod:`drivers.preparation.segments`.
``ordered.parquet/`` (with ``--ordered`` and no ``--segments``)
    the same columns, one segment per document: its tokens in text order (with ``--segments`` the segments
    keep that order, and ``corpus.json["ordered"]`` names ``segments.parquet``).
``rejects/``
    JSON lines, one per rejected input row: ``id``, ``reason`` (one of
    :data:`REJECT_REASONS`), ``source``, ``raw`` (at most 1000 characters).
``stopwords.txt``
    the stop words removed (the ``--language`` list and ``--stopwords``), one per line.
``corpus.json``
    counts, options and input path.  ``input_rows == documents + sum(rejected.values())``.
``_SUCCESS``
    the completion marker, written last (:mod:`drivers.store.publish`: every file's size and content hash); a
    corpus written before markers (``corpus.json`` last, no ``_SUCCESS``) is read as it is.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from urllib.parse import urlparse

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from drivers import storage
from drivers.corpora.files import (CORPUS_JSON, DOCS, FAILED_REJECTS, LEGACY_STAGING, REJECT_REASONS, REJECTS,
                                  ORDERED, SEGMENTS, STOPWORDS, VOCAB, is_corpus_file, rejects_schema)
from drivers.failures import is_spark_failure, one_line
from drivers.preparation import segments as segments_mod
from drivers.preparation.text import DEFAULT_TOKEN_PATTERN, stopword_list, tokenize
from drivers.store import publish
from inference.errors import UsageError

log = logging.getLogger("spark_topics.prepare")

FORMAT_VERSION = 1
FORMATS = ("txt", "jsonl", "csv", "parquet")
RAW_MAX_CHARS = 1000


#: File name endings of each format, used to detect it and to filter directories.
EXTENSIONS = {
    "txt": (".txt",),
    "jsonl": (".jsonl", ".jsonl.gz", ".json", ".json.gz"),
    "csv": (".csv", ".csv.gz"),
    "parquet": (".parquet",),
}

#: Let adaptive execution coalesce the shuffle partitions of cached plans: the
#: job caches several shuffled frames, and without this each keeps
#: ``spark.sql.shuffle.partitions`` (200) partitions, i.e. hundreds of tiny tasks.
_SQL_CONF = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}

_CORRUPT = "_corrupt_record"
_REPLACEMENT_CHAR = "\ufffd"
_DETECT_MAX_FILES = 1000
_JSON_SAMPLE_ROWS = 1000

REJECTS_SCHEMA = rejects_schema()


class PrepareError(UsageError):
    """Bad input or options: the message says what is wrong and what to do (the command line shows it after the
    name of the job that prepared the corpus: prepare, infer of raw text, refresh)."""

    names_job = True


@dataclasses.dataclass(frozen=True)
class PrepareOptions:
    """Options of :func:`prepare_corpus`; the ``prepare`` flags map onto them one to one.

    ``min_df`` / ``max_df``: an ``int`` is a number of documents, a ``float``
    in [0, 1] a fraction of the documents that reach tokenising (the input rows
    that were not rejected as malformed, invalid_encoding or duplicate_id).
    A term is kept when ``min_df <= df <= max_df``; then the ``max_vocab``
    terms with the highest ``cf`` (ties: alphabetical) are kept.
    """

    format: str = "auto"
    id_column: str = "id"
    text_column: str = "text"
    language: str = "english"
    stopwords: str | None = None
    min_token_length: int = 2
    token_pattern: str = DEFAULT_TOKEN_PATTERN
    min_df: int | float = 2
    max_df: int | float = 0.5
    max_vocab: int | None = None
    vocab: str | None = None
    partitions: int | None = None
    overwrite: bool = False
    segments: str | None = None   # paragraph | sentence | COLUMN: also write segments.parquet
    ordered: bool = False         # keep every document's tokens in text order (segments.parquet or ordered.parquet)

    def __post_init__(self):
        if self.segments is not None and (not str(self.segments).strip() or self.segments == self.id_column):
            raise PrepareError(f"--segments must be paragraph, sentence or a column other than the id, "
                               f"got {self.segments!r}")
        if self.format not in ("auto",) + FORMATS:
            raise PrepareError(f"unknown format {self.format!r}; "
                               f"choose one of auto, {', '.join(FORMATS)}")
        if self.id_column == self.text_column:
            raise PrepareError(f"--id-column and --text-column are both {self.id_column!r}")
        if self.min_token_length < 1:
            raise PrepareError(f"--min-token-length must be at least 1, got {self.min_token_length}")
        _check_df_threshold("min_df", self.min_df)
        _check_df_threshold("max_df", self.max_df)
        if self.max_vocab is not None and self.max_vocab < 1:
            raise PrepareError(f"--max-vocab must be at least 1, got {self.max_vocab}")
        if self.partitions is not None and self.partitions < 1:
            raise PrepareError(f"--partitions must be at least 1, got {self.partitions}")


# ------------------------------------------------------------------ the pipeline


def prepare_corpus(spark: SparkSession, input_path: str, output_dir: str, **options) -> dict:
    """Turn the documents at ``input_path`` into a corpus in ``output_dir``.

    ``options`` are the fields of :class:`PrepareOptions`.  Returns the
    ``corpus.json`` dictionary.  Raises :class:`PrepareError` for bad input or
    options, and when no document is left (after writing ``rejects/``).

    The corpus is published whole (:mod:`drivers.store.publish`, as ``train`` publishes a model): written into a
    hidden sibling folder, ``corpus.json`` then the ``_SUCCESS`` manifest last, and exchanged with
    ``output_dir`` in one step (the user's other files in it are kept). A typo in a column name, an input that
    yields no document or a run killed at any point leaves an earlier corpus as it was (or the new one
    complete); the next run (or read) puts right what a killed run left beside it.
    """
    opts = PrepareOptions(**options)
    stopwords = _stopwords(opts)
    _check_paths(input_path, output_dir)
    fmt = resolve_format(spark, input_path, opts.format)
    _check_output_dir(output_dir, opts.overwrite)
    with publish.published(output_dir, "spark-topics prepare", is_corpus_file, LEGACY_STAGING) as staging:
        try:
            corpus = _prepare_into(spark, input_path, staging, output_dir, fmt, opts, stopwords)
        except Exception as exc:
            if not is_spark_failure(exc):
                raise
            raise PrepareError(f"cannot read {input_path}: {one_line(exc)}") from None
    log.info("%s", summary_line(corpus, output_dir))
    return corpus


def _prepare_into(spark: SparkSession, input_path: str, staging: str, output_dir: str, fmt: str,
                  opts: PrepareOptions, stopwords: list) -> dict:
    """The pipeline, writing into ``staging``; returns corpus.json's content."""
    log.info("reading %s as %s", input_path, fmt)
    path = _join(staging)

    with _session_conf(spark, _SQL_CONF), PersistedFrames() as cache:
        if segments_mod.is_column_mode(opts.segments):   # the text is the segment column's pieces
            read_opts = dataclasses.replace(opts, text_column=opts.segments)
            rows = cache.add(_flag_duplicates(segments_mod.join_segment_column(
                read_input(spark, input_path, fmt, read_opts))))
        else:
            rows = cache.add(_flag_duplicates(read_input(spark, input_path, fmt, opts)))
        input_rows = rows.count()
        if input_rows == 0:
            raise PrepareError(f"no input rows in {input_path} (read as {fmt})")
        candidates = rows.where(F.col("reason").isNull())
        n_candidates = candidates.count()
        log.debug("%d input rows, %d to tokenise", input_rows, n_candidates)

        tokens = tokenize(candidates.select("doc_id", "text"), "text", "tokens",
                          pattern=opts.token_pattern, min_token_length=opts.min_token_length,
                          stopwords=stopwords)
        term_counts = cache.add(count_terms(tokens))

        if opts.vocab:
            vocab = cache.add(load_vocabulary(spark, opts.vocab, term_counts))
        else:
            vocab = cache.add(build_vocabulary(term_counts, n_candidates, opts, cache))
        docs = cache.add(document_vectors(candidates, term_counts, vocab))

        _write_vocabulary(vocab, path(VOCAB))
        log.debug("wrote %s", path(VOCAB))
        _write_documents(docs, path(DOCS), opts.partitions)
        log.debug("wrote %s", path(DOCS))
        _write_rejects(rows, docs, path(REJECTS))
        log.debug("wrote %s", path(REJECTS))
        storage.write_bytes(path(STOPWORDS), "".join(f"{word}\n" for word in stopwords).encode("utf-8"))
        corpus = _corpus_summary(spark, staging, input_path, input_rows, fmt, opts)
        if opts.segments and corpus["documents"]:
            corpus["segmentation"] = segments_mod.write_segments(
                spark, candidates.select("doc_id", "text"), vocab, path(DOCS), path(SEGMENTS), opts.segments,
                {"pattern": opts.token_pattern, "min_token_length": opts.min_token_length, "stopwords": stopwords})
            log.debug("wrote %s", path(SEGMENTS))
        if opts.ordered and corpus["documents"]:
            corpus["ordered"] = ordered_tokens(spark, candidates.select("doc_id", "text"), vocab, path, opts,
                                               stopwords)

    if corpus["documents"] == 0:
        # the rejects say why: they go where the user looks, beside (never over) an earlier corpus
        has_corpus = storage.exists(storage.join(output_dir, CORPUS_JSON))
        rejects = storage.join(output_dir, FAILED_REJECTS if has_corpus else REJECTS)
        storage.makedirs(output_dir)
        storage.delete(rejects)
        storage.move(path(REJECTS), rejects)
        raise PrepareError(_no_documents_message(corpus, rejects)
                           + (f"; the corpus already in {output_dir} was left as it was" if has_corpus else ""))
    storage.write_bytes(path(CORPUS_JSON), (json.dumps(corpus, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return corpus


def ordered_tokens(spark: SparkSession, candidates: DataFrame, vocab: DataFrame, path, opts: PrepareOptions,
                   stopwords: list) -> dict:
    """``corpus.json["ordered"]``: where every document's tokens are kept in text order, after the stop words
    and the words outside the vocabulary are dropped (models of word order read them; bag-of-words models never
    do). With ``--segments`` they are its segments (``segments.parquet`` keeps text order); otherwise
    ``ordered.parquet`` holds one segment per document, written and checked as segments are."""
    if opts.segments:
        return {"file": SEGMENTS}
    written = segments_mod.write_segments(
        spark, candidates, vocab, path(DOCS), path(ORDERED), segments_mod.WHOLE_TEXT,
        {"pattern": opts.token_pattern, "min_token_length": opts.min_token_length, "stopwords": stopwords})
    log.debug("wrote %s", path(ORDERED))
    return {"file": ORDERED, "documents": written["segments"]}


def read_documents(spark: SparkSession, input_path: str, **options) -> DataFrame:
    """The input's rows as ``prepare`` reads them (``doc_id``, ``text``, ``source``, ``raw``, ``order``,
    ``reason``: null, or why the row is rejected, repeated ids included), without tokenising."""
    opts = PrepareOptions(**options)
    return _flag_duplicates(read_input(spark, input_path, resolve_format(spark, input_path, opts.format), opts))


def document_terms(rows: DataFrame, **options) -> DataFrame:
    """``(doc_id, term)``, once per document and term, of ``rows`` (doc_id, text) tokenised as ``prepare``
    tokenises with ``options``."""
    opts = PrepareOptions(**options)
    tokens = tokenize(rows.select("doc_id", "text"), "text", "tokens", pattern=opts.token_pattern,
                      min_token_length=opts.min_token_length, stopwords=_stopwords(opts))
    return tokens.select("doc_id", F.explode(F.array_distinct("tokens")).alias("term"))


def summary_line(corpus: dict, output_dir: str) -> str:
    """One line with the counts of a ``corpus.json`` dictionary."""
    rejected = " ".join(f"{reason}={n}" for reason, n in corpus["rejected"].items())
    return (f"prepared {corpus['documents']} documents, {corpus['vocab_size']} terms, "
            f"{corpus['tokens']} tokens ({corpus['oov_tokens']} out of vocabulary) from "
            f"{corpus['input_rows']} input rows; rejected: {rejected} -> {output_dir}")


# ------------------------------------------------------------------- the format


def resolve_format(spark: SparkSession, path: str, requested: str = "auto") -> str:
    """The input format: ``requested`` unless it is ``auto``, else told by file extensions.

    A path whose own name ends in a known extension has that format (a
    ``corpus.parquet/`` directory is Parquet); a directory has the format of the
    data files in it (hidden ``_``/``.`` files skipped), which must agree.
    """
    if not storage.exists(path):
        raise PrepareError(f"input path does not exist: {path}")
    if requested != "auto":
        return requested
    fmt = format_of_name(path.rstrip("/"))
    if fmt:
        return fmt
    if not storage.is_dir(path):
        raise PrepareError(f"cannot tell the format of {path} from its extension; "
                           f"pass --format ({', '.join(FORMATS)})")
    found = {format_of_name(name) for name in storage.list_files(path, _DETECT_MAX_FILES)} - {None}
    if len(found) == 1:
        return found.pop()
    if not found:
        raise PrepareError(f"no input files in {path}: expected files ending in "
                           f"{', '.join(e for exts in EXTENSIONS.values() for e in exts)}")
    raise PrepareError(f"{path} mixes formats ({', '.join(sorted(found))}); pass --format")


def format_of_name(name: str) -> str | None:
    """``"a/b.jsonl.gz"`` -> ``"jsonl"``; ``None`` for an unknown extension."""
    lowered = name.lower()
    for fmt, extensions in EXTENSIONS.items():
        if lowered.endswith(extensions):
            return fmt
    return None


# -------------------------------------------------------------------- the input


def read_input(spark: SparkSession, path: str, fmt: str, opts: PrepareOptions) -> DataFrame:
    """Read the input as rows of ``doc_id``, ``text``, ``source``, ``raw``, ``order``, ``reason``.

    ``reason`` is ``malformed`` or ``invalid_encoding`` for rejected rows and
    null otherwise; ``raw`` is the raw record (valid UTF-8) of those rows;
    ``order`` (file, offset, row) sorts rows in input order.
    """
    readers = {"txt": _read_txt, "jsonl": _read_jsonl, "csv": _read_csv, "parquet": _read_parquet}
    return readers[fmt](spark, path, opts)


def _read_txt(spark: SparkSession, path: str, opts: PrepareOptions) -> DataFrame:
    """One document per ``.txt`` file, id = file name without extension, strict UTF-8.

    Spark's file scan skips zero-length files; they are added back from the
    scan's file listing as empty documents so that they show up as rejects.
    """
    files = _file_reader(spark, path, "binaryFile").load(path)
    read = files.select(_file_uri(F.col("_metadata.file_path")).alias("uri"), "content")
    listed = spark.createDataFrame([(uri,) for uri in files.inputFiles()], "uri string")
    skipped = (listed.select(_file_uri(F.col("uri")).alias("uri"))
               .join(read.select("uri"), "uri", "left_anti")
               .withColumn("content", F.lit(bytearray()).cast("binary")))
    source = _decode_uri(F.col("uri"))
    text = F.col("content").cast("string")  # the bytes as they are: validated below
    valid = F.is_valid_utf8(text)
    return read.unionByName(skipped).select(
        F.regexp_extract(source, r"([^/]*?)(\.[^./]*)?$", 1).alias("doc_id"),
        F.when(valid, F.regexp_replace(text, "^\ufeff", "")).alias("text"),
        source.alias("source"),
        F.when(~valid, F.make_valid_utf8(text)).alias("raw"),
        F.struct(F.col("uri").alias("file"), F.lit(0).cast("long").alias("offset"),
                 F.lit(0).cast("long").alias("row")).alias("order"),
        F.when(~valid, F.lit("invalid_encoding")).alias("reason"),
    )


def _read_jsonl(spark: SparkSession, path: str, opts: PrepareOptions) -> DataFrame:
    """JSON lines (blank lines skipped); unparseable lines and lines without id or text are malformed."""
    lines = _file_reader(spark, path, "text").load(path)
    _check_columns(_json_keys(lines), opts, path)
    schema = _string_schema([opts.id_column, opts.text_column])
    parsed = F.from_json("value", schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT})
    df = (lines.select("value", "_metadata")
          .where(F.trim("value") != "")
          .select("value", "_metadata", parsed.alias("record"))
          .select("*", "record.*"))
    return _classify(df, opts, raw=F.col("value"), raw_encoding=F.col("value"))


def _read_csv(spark: SparkSession, path: str, opts: PrepareOptions) -> DataFrame:
    """CSV with a header row (RFC 4180 quoting, fields may span lines)."""
    header = _file_reader(spark, path, "csv", _csv_options()).load(path).columns
    _check_columns(header, opts, path)
    df = (_file_reader(spark, path, "csv", _csv_options()).schema(_string_schema(header))
          .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", _CORRUPT)
          .load(path))
    # An empty text field is an empty document, not a missing one.
    text = F.when(F.col(_CORRUPT).isNull(), F.coalesce(_col(opts.text_column), F.lit("")))
    return _classify(df, opts, text=text)


def _read_parquet(spark: SparkSession, path: str, opts: PrepareOptions) -> DataFrame:
    """Parquet; the id may be of any type (read as a string), the text string or binary."""
    df = spark.read.parquet(path)
    _check_columns(df.columns, opts, path)
    text_type = df.schema[opts.text_column].dataType
    if opts.text_column == opts.segments and isinstance(text_type, T.ArrayType):   # --segments COLUMN
        return _classify(df.withColumn(_CORRUPT, F.lit(None).cast("string")), opts,
                         text=F.to_json(_col(opts.text_column)), replacement_char=False)
    if not isinstance(text_type, (T.StringType, T.BinaryType)):
        raise PrepareError(f"text column {opts.text_column!r} of {path} is "
                           f"{text_type.simpleString()}, expected a string")
    text = _col(opts.text_column).cast("string")
    return _classify(df.withColumn(_CORRUPT, F.lit(None).cast("string")), opts, text=text,
                     raw_encoding=text, replacement_char=False)


def _classify(df: DataFrame, opts: PrepareOptions, *, text: Column | None = None,
              raw: Column | None = None, raw_encoding: Column | None = None,
              replacement_char: bool = True) -> DataFrame:
    """Common columns of the record readers, with malformed and invalid_encoding rows flagged.

    ``raw`` is the raw record (default: Spark's corrupt-record column), kept
    for rejected rows only.  A row is invalid_encoding when ``raw_encoding``
    is not valid UTF-8 or, for text that Spark decoded with replacement
    (``replacement_char``), when its id or text contains U+FFFD.  It is
    malformed when Spark could not parse it or its id or text is missing.
    """
    doc_id = F.trim(_col(opts.id_column).cast("string"))
    text = _col(opts.text_column) if text is None else text
    raw = F.col(_CORRUPT) if raw is None else raw
    bad_encoding = F.lit(False)
    if raw_encoding is not None:
        bad_encoding = raw_encoding.isNotNull() & ~F.is_valid_utf8(raw_encoding)
    if replacement_char:
        has_replacement = (F.contains(doc_id, F.lit(_REPLACEMENT_CHAR))
                           | F.contains(text, F.lit(_REPLACEMENT_CHAR)))
        bad_encoding = bad_encoding | F.coalesce(has_replacement, F.lit(False))
    malformed = F.col(_CORRUPT).isNotNull() | doc_id.isNull() | (doc_id == "") | text.isNull()
    return df.select(
        F.when(doc_id != "", doc_id).alias("doc_id"),
        text.alias("text"),
        _source(),
        F.when(bad_encoding | malformed, F.make_valid_utf8(F.coalesce(raw, text))).alias("raw"),
        _order(),
        F.when(bad_encoding, "invalid_encoding").when(malformed, "malformed").alias("reason"),
    )


def _flag_duplicates(rows: DataFrame) -> DataFrame:
    """Set ``reason`` to ``duplicate_id`` on every valid row but the first of its id.

    Rows already rejected are left alone, each in a window partition of its
    own, so that the null ids of malformed rows do not pile up in one task.
    """
    valid = F.col("reason").isNull()
    same_id = Window.partitionBy(F.when(valid, F.col("doc_id")), F.when(~valid, F.col("order")))
    duplicate = valid & (F.row_number().over(same_id.orderBy("order")) > 1)
    return rows.withColumn("reason", F.when(duplicate, "duplicate_id").otherwise(F.col("reason")))


def _json_keys(lines: DataFrame) -> list[str]:
    """Keys of the JSON objects among the first lines of the input (for the column check)."""
    keys = F.explode(F.json_object_keys("value")).alias("key")
    return sorted(row.key for row in lines.limit(_JSON_SAMPLE_ROWS).select(keys).distinct().collect())


def _check_columns(available: list[str], opts: PrepareOptions, path: str) -> None:
    """Fail when the id or text column is not among the input's columns.

    An empty ``available`` (no parseable record to look at) passes: the rows
    are then reported as malformed.
    """
    missing = [c for c in (opts.id_column, opts.text_column) if c not in available]
    if available and missing:
        raise PrepareError(
            f"column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} not in "
            f"{path}; available columns: {', '.join(available)} "
            f"(choose with --id-column / --text-column)")


def _file_reader(spark: SparkSession, path: str, source: str, options: dict | None = None):
    """A DataFrameReader that, for a directory, reads the format's files in all sub-directories."""
    reader = spark.read.format(source).options(**(options or {}))
    fmt = {"binaryFile": "txt", "text": "jsonl", "json": "jsonl"}.get(source, source)
    if storage.is_dir(path):
        glob = "*.{" + ",".join(e.lstrip(".") for e in EXTENSIONS[fmt]) + "}"
        reader = reader.option("recursiveFileLookup", True).option("pathGlobFilter", glob)
    return reader


def _csv_options() -> dict:
    return {"header": True, "multiLine": True, "escape": '"', "encoding": "UTF-8"}


def _string_schema(columns: list[str]) -> T.StructType:
    """All ``columns`` as strings, plus the corrupt-record column."""
    return T.StructType([T.StructField(c, T.StringType()) for c in columns]
                        + [T.StructField(_CORRUPT, T.StringType())])


def _source() -> Column:
    """The input file of a row read by a file source, as a readable (decoded) URI."""
    return _decode_uri(_file_uri(F.col("_metadata.file_path"))).alias("source")


def _order() -> Column:
    """Input order: file, then split offset, then position (monotonic id) in the split."""
    return F.struct(_file_uri(F.col("_metadata.file_path")).alias("file"),
                    F.col("_metadata.file_block_start").alias("offset"),
                    F.monotonically_increasing_id().alias("row")).alias("order")


def _file_uri(uri: Column) -> Column:
    """One spelling per file: ``file:///a`` (as file listings write it) -> ``file:/a``."""
    return F.regexp_replace(uri, r"^([A-Za-z][A-Za-z0-9+.-]*):///", "$1:/")


def _decode_uri(uri: Column) -> Column:
    """Undo the percent-encoding of a file URI (``a%20b.txt`` -> ``a b.txt``; ``+`` stays)."""
    return F.url_decode(F.regexp_replace(uri, r"\+", "%2B"))


def _col(name: str) -> Column:
    """A top-level column by its exact name (dots and all)."""
    return F.col("`" + name.replace("`", "``") + "`")


# ------------------------------------------------------------------- vocabulary


def count_terms(tokens: DataFrame) -> DataFrame:
    """``(doc_id, term, tf)``: how often each term occurs in each document."""
    return (tokens.select("doc_id", F.explode("tokens").alias("term"))
            .groupBy("doc_id", "term").agg(F.count("*").cast("int").alias("tf")))


def term_statistics(term_counts: DataFrame) -> DataFrame:
    """``(term, df, cf)``: documents containing each term and its total count."""
    return term_counts.groupBy("term").agg(F.count("*").alias("df"), F.sum("tf").alias("cf"))


def build_vocabulary(term_counts: DataFrame, n_docs: int, opts: PrepareOptions,
                     cache: "PersistedFrames") -> DataFrame:
    """``(term, id, df, cf)`` of the terms that pass ``min_df``/``max_df``/``max_vocab``.

    Fractions are of ``n_docs``; ids run 0..V-1 by ``cf`` descending, then term.
    """
    min_count = opts.min_df if isinstance(opts.min_df, int) else opts.min_df * n_docs
    max_count = opts.max_df if isinstance(opts.max_df, int) else opts.max_df * n_docs
    stats = term_statistics(term_counts)
    kept = stats.where((F.col("df") >= min_count) & (F.col("df") <= max_count))
    rank = [F.col("cf").desc(), F.col("term").asc()]
    if opts.max_vocab is not None:
        kept = kept.orderBy(*rank).limit(opts.max_vocab)
    return number_rows(kept, rank, "id", cache).select("term", "id", "df", "cf")


def load_vocabulary(spark: SparkSession, path: str, term_counts: DataFrame) -> DataFrame:
    """A vocabulary to reuse, with ``df``/``cf`` counted on this corpus (0 when absent).

    ``path`` is a ``vocab.parquet`` or a corpus directory holding one; it
    needs unique ``term``s and unique ``id``s 0..V-1.
    """
    nested = _join(path)(VOCAB)
    if storage.exists(nested):
        path = nested
    if not storage.exists(path):
        raise PrepareError(f"vocabulary not found: {path}")
    given = spark.read.parquet(path)
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


def number_rows(df: DataFrame, order: list[Column], name: str, cache: "PersistedFrames") -> DataFrame:
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


# -------------------------------------------------------------------- documents


def document_vectors(candidates: DataFrame, term_counts: DataFrame, vocab: DataFrame) -> DataFrame:
    """One row per candidate document: ``doc_id``, ``order``, ``term_ids``, ``counts``,
    ``n_tokens``, ``n_oov``.  An empty document has ``n_tokens == 0`` and empty arrays."""
    in_vocab = F.col("id").isNotNull()
    per_doc = (term_counts.join(vocab.select("term", "id"), "term", "left")
               .groupBy("doc_id")
               .agg(F.sum("tf").alias("n_total"),
                    # collect_list skips the nulls of out-of-vocabulary terms
                    F.array_sort(F.collect_list(F.when(in_vocab, F.struct("id", "tf")))).alias("pairs")))
    pairs = F.coalesce("pairs", F.array().cast("array<struct<id:int,tf:int>>"))
    n_tokens = F.aggregate(pairs, F.lit(0), lambda total, p: total + p["tf"])
    return (candidates.select("doc_id", "order")
            .join(per_doc, "doc_id", "left")
            .select("doc_id", "order",
                    F.transform(pairs, lambda p: p["id"]).alias("term_ids"),
                    F.transform(pairs, lambda p: p["tf"]).alias("counts"),
                    n_tokens.alias("n_tokens"),
                    (F.coalesce("n_total", F.lit(0)) - n_tokens).cast("int").alias("n_oov")))


# ---------------------------------------------------------------------- writing


def _write_vocabulary(vocab: DataFrame, path: str) -> None:
    (vocab.select("term", F.col("id").cast("int"), F.col("df").cast("long"), F.col("cf").cast("long"))
     .coalesce(1).sortWithinPartitions("id").write.parquet(path))


def _write_documents(docs: DataFrame, path: str, partitions: int | None) -> None:
    """Non-empty documents in input order, in ``partitions`` files when given."""
    kept = docs.where(F.col("n_tokens") > 0)
    if partitions:
        kept = kept.repartitionByRange(partitions, "order").sortWithinPartitions("order")
    else:
        kept = kept.orderBy("order")
    kept.select("doc_id", F.col("term_ids").cast("array<int>"), F.col("counts").cast("array<int>"),
                F.col("n_tokens").cast("int"), F.col("n_oov").cast("int")).write.parquet(path)


def _write_rejects(rows: DataFrame, docs: DataFrame, path: str) -> None:
    """All rejected rows, in input order: read-time, duplicate_id and empty rejects."""
    empty_ids = docs.where(F.col("n_tokens") == 0).select("doc_id")
    empty = (rows.where(F.col("reason").isNull()).join(empty_ids, "doc_id", "left_semi")
             .withColumn("reason", F.lit("empty")))
    rejects = rows.where(F.col("reason").isNotNull()).unionByName(empty)
    (rejects.orderBy("order")
     .select(F.col("doc_id").alias("id"), "reason", "source",
             F.substring(F.coalesce("raw", "text"), 1, RAW_MAX_CHARS).alias("raw"))
     .write.option("ignoreNullFields", False).json(path))


def _corpus_summary(spark: SparkSession, output_dir: str, input_path: str, input_rows: int,
                    fmt: str, opts: PrepareOptions) -> dict:
    """The ``corpus.json`` dictionary, counted from the files just written."""
    path = _join(output_dir)
    docs = spark.read.parquet(path(DOCS)).agg(
        F.count("*").alias("n"), F.sum("n_tokens").alias("tokens"), F.sum("n_oov").alias("oov")).first()
    vocab_size = spark.read.parquet(path(VOCAB)).count()
    counts = dict(spark.read.schema(REJECTS_SCHEMA).json(path(REJECTS))
                  .groupBy("reason").count().collect())
    rejected = {reason: int(counts.pop(reason, 0)) for reason in REJECT_REASONS}
    if counts or input_rows != docs.n + sum(rejected.values()):
        raise RuntimeError(f"internal error: {input_rows} input rows but {docs.n} documents "
                           f"and rejects {rejected} (other: {counts})")
    return {
        "format_version": FORMAT_VERSION,
        "documents": int(docs.n),
        "vocab_size": int(vocab_size),
        "tokens": int(docs.tokens or 0),
        "oov_tokens": int(docs.oov or 0),
        "input_rows": int(input_rows),
        "rejected": rejected,
        "options": {**dataclasses.asdict(opts), "format": fmt},
        "input": _absolute(input_path),
    }


def _no_documents_message(corpus: dict, rejects_path: str) -> str:
    rejected = ", ".join(f"{reason}={n}" for reason, n in corpus["rejected"].items())
    opts = corpus["options"]
    vocab = (f"reused vocabulary {opts['vocab']}" if opts["vocab"] else
             f"min_df={opts['min_df']}, max_df={opts['max_df']}, max_vocab={opts['max_vocab']}")
    return (f"no documents left: all {corpus['input_rows']} input rows were rejected "
            f"({rejected}); vocabulary size {corpus['vocab_size']} ({vocab}); "
            f"the rejected rows are in {rejects_path}")


# ---------------------------------------------------------------------- helpers


def _stopwords(opts: PrepareOptions) -> list[str]:
    try:
        return stopword_list(opts.language, opts.stopwords)
    except ValueError as exc:
        raise PrepareError(str(exc)) from None


def _check_df_threshold(name: str, value) -> None:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PrepareError(f"{flag} must be an integer count or a fraction, got {value!r}")
    if isinstance(value, float) and not 0.0 <= value <= 1.0:
        raise PrepareError(f"{flag} as a fraction must be in [0, 1], got {value}")
    if isinstance(value, int) and value < 0:
        raise PrepareError(f"{flag} must not be negative, got {value}")


def _check_output_dir(output_dir: str, overwrite: bool) -> None:
    """Refuse a non-empty ``output_dir`` unless ``overwrite`` (nothing is removed here: the corpus is published
    whole, :mod:`drivers.store.publish`)."""
    if not storage.exists(output_dir):
        return
    if not storage.is_dir(output_dir):
        raise PrepareError(f"output {output_dir} exists and is not a directory")
    if storage.list_dir(output_dir) and not overwrite:
        raise PrepareError(f"output directory {output_dir} is not empty; pass --overwrite "
                           f"to replace the corpus in it")


def _check_paths(input_path: str, output_dir: str) -> None:
    """Refuse an output that is the input or lies inside it (a later prepare of that input would read the
    corpus back as documents)."""
    source, target = _absolute(input_path).rstrip("/"), _absolute(output_dir).rstrip("/")
    if target == source:
        raise PrepareError(f"--output {output_dir} is the input: write the corpus to another directory")
    if target.startswith(source + "/"):
        raise PrepareError(f"--output {output_dir} lies inside the input {input_path}: a later prepare of that "
                           f"input would read the corpus back as documents; write it elsewhere")


def _join(directory: str):
    """``_join("out")("docs.parquet")`` -> ``"out/docs.parquet"`` (URIs too)."""
    return lambda name: storage.join(directory, name)


def _absolute(path: str) -> str:
    return os.path.abspath(path) if urlparse(path).scheme in ("", "file") and not path.startswith("file:") else path


@contextlib.contextmanager
def _session_conf(spark: SparkSession, conf: dict):
    """Set SQL configuration for the duration of the block, then restore it."""
    previous = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


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
