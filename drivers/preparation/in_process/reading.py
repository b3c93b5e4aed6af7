"""Reading raw input in this process, row for row as the Spark reader (:mod:`drivers.preparation.reading`) does:
the same ids, texts, sources, input order and reject reasons, for ``.txt`` files, JSON lines and Parquet.

What this reader cannot promise to read as Spark would (a JSON line Python's parser refuses, where Spark's is more
lenient; a nested JSON value; a Parquet id that is not a string or an integer; partitioned Parquet folders) raises
:class:`NeedsSpark`: nothing has been written then, and the automatic choice runs the Spark job instead.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import os
import zlib

import pyarrow as pa
import pyarrow.parquet as pq

from drivers.preparation.options import PrepareError, PrepareOptions
from drivers.preparation.reading import EXTENSIONS, check_columns

REPLACEMENT_CHAR = "\ufffd"
JSON_SAMPLE_ROWS = 1000      # as the Spark reader: the column check looks at the keys of the first lines


class NeedsSpark(Exception):
    """The input has something only the Spark reader reads as ``prepare`` specifies; the message says what."""


@dataclasses.dataclass
class InputRow:
    """One input row as the Spark reader gives it: ``reason`` is None for a row that reaches tokenising."""

    doc_id: str | None
    text: str | None
    source: str
    raw: str | None
    order: tuple
    reason: str | None
    kept: dict = dataclasses.field(default_factory=dict)


def read_rows(path: str, fmt: str, opts: PrepareOptions) -> tuple[list[InputRow], dict]:
    """The input's rows in input order, duplicates of an earlier valid id flagged ``duplicate_id``, and the
    Arrow type of every kept column."""
    readers = {"txt": _read_txt, "jsonl": _read_jsonl, "parquet": _read_parquet}
    if fmt not in readers:
        raise NeedsSpark(f"{fmt} input")
    try:
        rows, kept_types = readers[fmt](path, opts)
    except (OSError, EOFError, zlib.error, pa.ArrowException) as exc:   # a cut .gz, a damaged Parquet file
        raise PrepareError(f"cannot read {path}: {type(exc).__name__}: {exc}") from None
    seen = set()
    for row in rows:
        if row.reason is None:
            if row.doc_id in seen:
                row.reason = "duplicate_id"
            seen.add(row.doc_id)
    return rows, kept_types


def input_files(path: str, fmt: str | None) -> list[str]:
    """The files a Spark file source reads at ``path``: the path itself, or every file of the format under the
    directory (hidden ``_``/``.`` names skipped, in sub-directories too), in path order."""
    if not os.path.isdir(path):
        return [os.path.abspath(path)]
    found = []
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        found += [os.path.join(folder, name) for name in files
                  if not name.startswith(("_", ".")) and (fmt is None or name.endswith(EXTENSIONS[fmt]))]
    return sorted(os.path.abspath(f) for f in found)


def valid_utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def made_valid(data: bytes) -> str:
    """Invalid UTF-8 sequences replaced by U+FFFD, as Spark's ``make_valid_utf8``."""
    return data.decode("utf-8", errors="replace")


def _source(file: str) -> str:
    return "file:" + file


def _read_txt(path: str, opts: PrepareOptions) -> tuple[list[InputRow], dict]:
    if opts.keep_columns:
        raise PrepareError(f"--keep-columns: {path} is read as text files, which have no columns")
    rows = []
    for file in input_files(path, "txt"):
        with open(file, "rb") as f:
            content = f.read()
        text = valid_utf8(content)
        name = os.path.basename(file)
        doc_id = name[:name.rindex(".")] if "." in name else name
        rows.append(InputRow(doc_id=doc_id, text=None if text is None else text.removeprefix("\ufeff"),
                             source=_source(file), raw=made_valid(content) if text is None else None,
                             order=(file, 0), reason=None if text is not None else "invalid_encoding"))
    return rows, {}


def _lines(file: str) -> list[bytes]:
    opener = gzip.open if file.endswith(".gz") else open
    with opener(file, "rb") as f:
        return f.read().splitlines()


def _read_jsonl(path: str, opts: PrepareOptions) -> tuple[list[InputRow], dict]:
    """JSON lines as Spark's ``from_json`` reads them into string fields; blank lines are not rows."""
    files = input_files(path, "jsonl")
    lines = [(file, i, line) for file in files for i, line in enumerate(_lines(file))]
    check_columns(_json_keys(line for _, _, line in lines[:JSON_SAMPLE_ROWS]), opts, path)
    rows = []
    for file, i, line in lines:
        value = made_valid(line)
        if value.strip(" ") == "":
            continue
        record = _json_record(value)
        if isinstance(record, dict):
            fields = {c: _json_string(record.get(c)) for c in (opts.id_column, opts.text_column, *opts.keep_columns)}
        else:
            fields = dict.fromkeys((opts.id_column, opts.text_column, *opts.keep_columns))
        rows.append(_classify(fields, opts, source=_source(file), order=(file, i), raw=value,
                              bad_encoding=valid_utf8(line) is None, corrupt=not isinstance(record, dict)))
    return rows, {c: pa.string() for c in opts.keep_columns}


def _json_record(value: str):
    """The parsed line, or None where Spark also finds no record (valid JSON that is not an object)."""
    try:
        return json.loads(value, parse_int=str, parse_float=_needs_spark, parse_constant=_needs_spark)
    except json.JSONDecodeError:
        raise NeedsSpark("a JSON line Python's parser refuses (Spark's is more lenient)") from None


def _needs_spark(text):
    raise NeedsSpark(f"a JSON number {text} (Spark writes fractions its own way)")


def _json_string(value):
    """A JSON value read into a string field as Spark does: strings as they are, integers as written."""
    if value is None or isinstance(value, str):
        return value
    raise NeedsSpark("a JSON value that is not a string or an integer")


def _json_keys(lines) -> list[str]:
    keys = set()
    for line in lines:
        try:
            record = json.loads(made_valid(line))
        except ValueError:
            continue
        if isinstance(record, dict):
            keys.update(record)
    return sorted(keys)


def _read_parquet(path: str, opts: PrepareOptions) -> tuple[list[InputRow], dict]:
    if os.path.isdir(path) and any(os.path.isdir(os.path.join(folder, d)) and not d.startswith(("_", "."))
                                   for folder, dirs, _ in os.walk(path) for d in dirs):
        raise NeedsSpark("a partitioned Parquet folder")
    files = input_files(path, None)
    schema = pq.read_schema(files[0]) if files else pa.schema([])
    check_columns(list(schema.names), opts, path)
    rows = []
    for file in files:
        table = pq.read_table(file)
        ids, texts = table.column(opts.id_column), table.column(opts.text_column)
        if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type) or pa.types.is_integer(ids.type)):
            raise NeedsSpark(f"an id column of type {ids.type}")
        if not any(check(texts.type) for check in (pa.types.is_string, pa.types.is_large_string,
                                                   pa.types.is_binary, pa.types.is_large_binary)):
            raise PrepareError(f"text column {opts.text_column!r} of {path} is {texts.type}, expected a string")
        kept = {c: table.column(c).to_pylist() for c in opts.keep_columns}
        for i, (doc_id, text) in enumerate(zip(ids.to_pylist(), texts.to_pylist())):
            bad_encoding = False
            if isinstance(text, bytes):
                decoded = valid_utf8(text)
                bad_encoding, text = decoded is None, made_valid(text) if decoded is None else decoded
            fields = {opts.id_column: None if doc_id is None else str(doc_id), opts.text_column: text,
                      **{c: kept[c][i] for c in opts.keep_columns}}
            rows.append(_classify(fields, opts, source=_source(file), order=(file, i), raw=None,
                                  bad_encoding=bad_encoding, corrupt=False, replacement_char=False))
    return rows, {c: schema.field(c).type for c in opts.keep_columns}


def _classify(fields: dict, opts: PrepareOptions, *, source: str, order: tuple, raw: str | None,
              bad_encoding: bool, corrupt: bool, replacement_char: bool = True) -> InputRow:
    """As :func:`drivers.preparation.reading._classify`: invalid_encoding before malformed; ``raw`` kept for
    rejected rows only."""
    doc_id = fields[opts.id_column]
    doc_id = None if doc_id is None else doc_id.strip(" ")
    text = fields[opts.text_column]
    if replacement_char:
        bad_encoding = bad_encoding or REPLACEMENT_CHAR in (doc_id or "") or REPLACEMENT_CHAR in (text or "")
    malformed = corrupt or not doc_id or text is None
    reason = "invalid_encoding" if bad_encoding else "malformed" if malformed else None
    return InputRow(doc_id=doc_id or None, text=text, source=source,
                    raw=(raw if raw is not None else text) if reason else None, order=order, reason=reason,
                    kept={c: fields[c] for c in opts.keep_columns})
