"""Reading raw input as prepare does: the format (txt files, JSON lines, CSV, Parquet; detected from the names), one
row per input document with its id, text, source and raw form, and why a row is rejected (malformed, invalid
encoding, a repeated id)."""
from __future__ import annotations

import os
from urllib.parse import urlparse

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from drivers import storage
from drivers.preparation.options import FORMATS, PrepareError, PrepareOptions
from drivers.spark_parquet import read_parquet


RAW_MAX_CHARS = 1000
#: File name endings of each format, used to detect it and to filter directories.
EXTENSIONS = {
    "txt": (".txt",),
    "jsonl": (".jsonl", ".jsonl.gz", ".json", ".json.gz"),
    "csv": (".csv", ".csv.gz"),
    "parquet": (".parquet",),
}


_CORRUPT = "_corrupt_record"
_REPLACEMENT_CHAR = "\ufffd"
_DETECT_MAX_FILES = 1000
_JSON_SAMPLE_ROWS = 1000


def read_documents(spark: SparkSession, input_path: str, **options) -> DataFrame:
    """The input's rows as ``prepare`` reads them (``doc_id``, ``text``, ``source``, ``raw``, ``order``,
    ``reason``: null, or why the row is rejected, repeated ids included), without tokenising."""
    opts = PrepareOptions(**options)
    return flag_duplicates(read_input(spark, input_path, resolve_format(spark, input_path, opts.format), opts))


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
    if opts.keep_columns:
        raise PrepareError(f"--keep-columns: {path} is read as text files, which have no columns")
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
    check_columns(_json_keys(lines), opts, path)
    schema = _string_schema([opts.id_column, opts.text_column, *opts.keep_columns])    # kept: their JSON text
    parsed = F.from_json("value", schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT})
    df = (lines.select("value", "_metadata")
          .where(F.trim("value") != "")
          .select("value", "_metadata", parsed.alias("record"))
          .select("*", "record.*"))
    return _classify(df, opts, raw=F.col("value"), raw_encoding=F.col("value"))


def _read_csv(spark: SparkSession, path: str, opts: PrepareOptions) -> DataFrame:
    """CSV with a header row (RFC 4180 quoting, fields may span lines)."""
    header = _file_reader(spark, path, "csv", _csv_options()).load(path).columns
    check_columns(header, opts, path)
    df = (_file_reader(spark, path, "csv", _csv_options()).schema(_string_schema(header))
          .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", _CORRUPT)
          .load(path))
    # An empty text field is an empty document, not a missing one.
    text = F.when(F.col(_CORRUPT).isNull(), F.coalesce(_col(opts.text_column), F.lit("")))
    return _classify(df, opts, text=text)


def _read_parquet(spark: SparkSession, path: str, opts: PrepareOptions) -> DataFrame:
    """Parquet; the id may be of any type (read as a string), the text string or binary."""
    df = read_parquet(spark, path)
    check_columns(df.columns, opts, path)
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
        *[_col(c).alias(c) for c in opts.keep_columns],
    )


def flag_duplicates(rows: DataFrame) -> DataFrame:
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


def check_columns(available: list[str], opts: PrepareOptions, path: str) -> None:
    """Fail when the id or text column is not among the input's columns.

    An empty ``available`` (no parseable record to look at) passes: the rows
    are then reported as malformed.
    """
    missing = [c for c in (opts.id_column, opts.text_column, *opts.keep_columns) if c not in available]
    if available and missing:
        raise PrepareError(
            f"column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} not in "
            f"{path}; available columns: {', '.join(available)} "
            f"(choose with --id-column / --text-column / --keep-columns)")


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


def absolute_path(path: str) -> str:
    return os.path.abspath(path) if urlparse(path).scheme in ("", "file") and not path.startswith("file:") else path
