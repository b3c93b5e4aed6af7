"""``prepare`` without Spark, for inputs small enough to read in one process: the same corpus files, byte for byte
in their content (``tests/commands/test_prepare_engines.py`` compares them with the Spark job's), written with
pyarrow in a fraction of a second instead of some thirty Spark jobs.

:func:`prepare_into` writes ``docs.parquet``, ``vocab.parquet``, ``rejects/``, ``stopwords.txt`` and, when asked,
``segments.parquet`` / ``ordered.parquet`` into the staging folder and returns ``corpus.json``'s content; the caller
(:func:`drivers.preparation.corpus.prepare_corpus`) publishes them as it publishes the Spark job's.
"""
from __future__ import annotations

import collections
import json
import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq
import regex

from drivers.corpora.files import DOCS, ORDERED, REJECTS, SEGMENTS, VOCAB
from drivers.progress import ticking
from drivers.preparation import segments as segments_mod
from drivers.preparation.id_hash import in_part
from drivers.preparation.in_process.reading import NeedsSpark, input_files, read_rows
from drivers.preparation.in_process.tokens import Tokenizer
from drivers.preparation.options import PrepareError, PrepareOptions
from drivers.preparation.reading import RAW_MAX_CHARS
from drivers.preparation.writer import (corpus_record, frequent_terms_table, in_directory, options_record,
                                        vocabulary_table, write_dataset, write_frequent_terms, write_stopwords)

log = logging.getLogger("spark_topics.prepare")

#: inputs up to this many bytes are prepared in this process when the choice is automatic
MAX_INPUT_BYTES = 32 << 20


def eligible(input_path: str, output_dir: str, fmt: str, opts: PrepareOptions) -> str | None:
    """None when this process can prepare the input; else why not (the automatic choice then runs Spark)."""
    paths = [input_path, output_dir] + [p for p in (opts.vocab, opts.stopwords) if p]
    if any(regex.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", p) for p in paths):
        return "a path of a remote store"
    if fmt not in ("txt", "jsonl", "parquet"):
        return f"{fmt} input"
    if segments_mod.is_column_mode(opts.segments):
        return "segments given as a column"
    size = sum(os.path.getsize(f) for f in input_files(input_path, None if fmt == "parquet" else fmt))
    if size > MAX_INPUT_BYTES:
        return f"an input of {size >> 20} MiB (more than {MAX_INPUT_BYTES >> 20} MiB)"
    return None


def prepare_into(input_path: str, staging: str, fmt: str, opts: PrepareOptions, stopwords: list) -> dict:
    """Write the corpus files into ``staging``; returns corpus.json's content. Raises :class:`NeedsSpark`
    before writing anything when the input needs the Spark reader."""
    tokenizer = Tokenizer(opts.token_pattern, opts.min_token_length, stopwords)
    rows, kept_types = read_rows(input_path, fmt, opts)
    rows = [row for row in rows if in_part(row.doc_id, opts.holdout)]     # --holdout-fraction: one part
    if not rows:
        raise PrepareError(f"no input rows in {input_path} (read as {fmt})")
    candidates = [row for row in rows if row.reason is None]
    term_counts = [collections.Counter(tokenizer.tokens(row.text))
                   for row in ticking(candidates, len(candidates), "prepare: documents", log)]
    if opts.vocab:
        vocab = _given_vocabulary(opts.vocab, term_counts)
    else:
        frequencies = _frequencies(term_counts)          # (df, cf): counted once, read twice
        vocab = build_vocabulary(frequencies, len(candidates), opts)
    ids = {term: i for i, term in enumerate(vocab["term"])}
    path = in_directory(staging)

    write_dataset(path(VOCAB), vocabulary_table(vocab["term"], vocab["df"], vocab["cf"]))
    docs = [_vector(row, counts, ids) for row, counts in zip(candidates, term_counts)]
    for row, doc in zip(candidates, docs):
        if doc["n_tokens"] == 0:
            row.reason = "empty"
    kept = [doc for doc in docs if doc["n_tokens"] > 0]
    _write_documents(path(DOCS), kept, opts, kept_types)
    write_rejects(path(REJECTS), [row for row in rows if row.reason])
    write_stopwords(staging, stopwords)

    rejected = collections.Counter(row.reason for row in rows if row.reason)
    corpus = corpus_record(len(kept), len(ids), sum(doc["n_tokens"] for doc in kept),
                           sum(doc["n_oov"] for doc in kept), len(rows), rejected,
                           options_record(input_path, fmt, opts))
    if not opts.vocab:                  # the terms cut as too frequent, which no refresh adds back (issue 30)
        corpus["frequent_terms"] = write_frequent_terms(staging, frequent_terms(frequencies[0], len(candidates), opts))
    with_tokens = {doc["doc_id"] for doc in kept}
    texts = [row for row in candidates if row.doc_id in with_tokens]
    if opts.segments and kept:
        corpus["segmentation"] = _write_segments(path(SEGMENTS), texts, ids, opts.segments, tokenizer, kept)
    if opts.ordered and kept:
        corpus["ordered"] = ({"file": SEGMENTS} if opts.segments else {
            "file": ORDERED, "documents": _write_segments(path(ORDERED), texts, ids, segments_mod.WHOLE_TEXT,
                                                          tokenizer, kept)["segments"]})
    return corpus


def build_vocabulary(frequencies: tuple, n_docs: int, opts: PrepareOptions) -> dict:
    """As :func:`drivers.preparation.vocabulary.build_vocabulary`, from the terms' (df, cf) counters
    (:func:`_frequencies`): ``term``, ``df``, ``cf`` lists in id order."""
    df, cf = frequencies
    min_count, max_count = opts.df_bounds(n_docs)
    terms = sorted((term for term in df if min_count <= df[term] <= max_count), key=lambda t: (-cf[t], t))
    if opts.max_vocab is not None:
        terms = terms[:opts.max_vocab]
    return {"term": terms, "df": [df[t] for t in terms], "cf": [cf[t] for t in terms]}


def frequent_terms(df: collections.Counter, n_docs: int, opts: PrepareOptions):
    """As :func:`drivers.preparation.vocabulary.frequent_terms`, from the terms' document frequencies: an Arrow
    table (term, df) of the terms of ``df > max_df``, df descending then term; None when ``max_df`` cuts none."""
    max_count = opts.df_bounds(n_docs)[1]
    if max_count >= n_docs:
        return None
    terms = sorted((term for term in df if df[term] > max_count), key=lambda t: (-df[t], t))
    return frequent_terms_table(terms, [df[t] for t in terms])


def _frequencies(term_counts: list) -> tuple[collections.Counter, collections.Counter]:
    """Every term's document frequency and collection frequency."""
    df, cf = collections.Counter(), collections.Counter()
    for counts in term_counts:
        df.update(counts.keys())
        cf.update(counts)
    return df, cf


def _given_vocabulary(path: str, term_counts: list) -> dict:
    """As :func:`drivers.preparation.vocabulary.load_vocabulary`, checked alike; ``df``/``cf`` of this corpus."""
    nested = os.path.join(path, VOCAB)
    if os.path.exists(nested):
        path = nested
    if not os.path.exists(path):
        raise PrepareError(f"vocabulary not found: {path}")
    table = pq.read_table(path)
    missing = [c for c in ("term", "id") if c not in table.column_names]
    if missing:
        raise PrepareError(f"vocabulary {path} lacks column(s) {', '.join(missing)}; "
                           f"it has {', '.join(table.column_names)}")
    terms = table.column("term").cast(pa.string()).to_pylist()
    ids = table.column("id").cast(pa.int32()).to_pylist()
    n = len(terms)
    if n == 0:
        raise PrepareError(f"vocabulary {path} is empty")
    named = [t for t in terms if t is not None]
    given_ids = [i for i in ids if i is not None]
    if not (len(named) == len(set(named)) == len(set(given_ids)) == n
            and min(given_ids) == 0 and max(given_ids) == n - 1):
        raise PrepareError(
            f"vocabulary {path} needs unique terms and ids 0..{n - 1}: it has {n} rows, "
            f"{len(set(named))} distinct terms, {len(set(given_ids))} distinct ids from "
            f"{min(given_ids, default=None)} to {max(given_ids, default=None)}")
    df, cf = _frequencies(term_counts)
    by_id = sorted(zip(ids, terms))
    return {"term": [t for _, t in by_id], "df": [df[t] for _, t in by_id], "cf": [cf[t] for _, t in by_id]}


def _vector(row, counts: collections.Counter, ids: dict) -> dict:
    pairs = sorted((ids[term], count) for term, count in counts.items() if term in ids)
    n_tokens = sum(count for _, count in pairs)
    return {"doc_id": row.doc_id, "term_ids": [i for i, _ in pairs], "counts": [c for _, c in pairs],
            "n_tokens": n_tokens, "n_oov": sum(counts.values()) - n_tokens, "kept": row.kept}


def _write_documents(directory: str, docs: list, opts: PrepareOptions, kept_types: dict) -> None:
    columns = {
        "doc_id": pa.array([d["doc_id"] for d in docs], pa.string()),
        "term_ids": pa.array([d["term_ids"] for d in docs], pa.list_(pa.int32())),
        "counts": pa.array([d["counts"] for d in docs], pa.list_(pa.int32())),
        "n_tokens": pa.array([d["n_tokens"] for d in docs], pa.int32()),
        "n_oov": pa.array([d["n_oov"] for d in docs], pa.int32()),
    }
    for column in opts.keep_columns:
        columns[column] = pa.array([d["kept"][column] for d in docs], kept_types[column])
    parts = max(1, min(opts.partitions or 1, len(docs)))
    write_dataset(directory, pa.table(columns), parts)


def write_rejects(directory: str, rejects: list) -> None:
    """JSON lines ``id``, ``reason``, ``source``, ``raw`` (the first 1000 characters), in input order."""
    os.makedirs(directory)
    with open(os.path.join(directory, "part-00000.json"), "w", encoding="utf-8") as f:
        for row in rejects:
            raw = row.raw if row.raw is not None else row.text
            f.write(json.dumps({"id": row.doc_id, "reason": row.reason, "source": row.source,
                                "raw": None if raw is None else raw[:RAW_MAX_CHARS]},
                               ensure_ascii=False, separators=(",", ":")) + "\n")
    open(os.path.join(directory, "_SUCCESS"), "wb").close()


def _write_segments(directory: str, rows: list, ids: dict, segments: str, tokenizer: Tokenizer,
                    docs: list) -> dict:
    """As :func:`drivers.preparation.segments.write_segments`: every document's non-blank pieces of text, each
    with its in-vocabulary tokens in text order; pieces without one dropped (their position kept)."""
    split = regex.compile(segments_mod.split_pattern(segments).removeprefix("(?U)"), regex.V0)
    blank = regex.compile(r"\s")
    out = {"doc_id": [], "segments": [], "segment_index": []}
    total = kept = 0
    bag_tokens = {doc["doc_id"]: doc["n_tokens"] for doc in docs}
    for row in rows:
        pieces = [piece for piece in split.split(row.text) if blank.sub("", piece)]
        total += len(pieces)
        words = [[ids[t] for t in tokenizer.tokens(piece) if t in ids] for piece in pieces]
        index = [i for i, w in enumerate(words) if w]
        if sum(len(words[i]) for i in index) != bag_tokens[row.doc_id]:
            raise RuntimeError("internal error: a document whose segments do not hold exactly its bag-of-words "
                               "tokens (a --token-pattern that matches across segment breaks?)")
        out["doc_id"].append(row.doc_id)
        out["segments"].append([words[i] for i in index])
        out["segment_index"].append(index)
        kept += len(index)
    write_dataset(directory, pa.table({"doc_id": pa.array(out["doc_id"], pa.string()),
                                      "segments": pa.array(out["segments"], pa.list_(pa.list_(pa.int32()))),
                                      "segment_index": pa.array(out["segment_index"], pa.list_(pa.int32()))}))
    return {"mode": segments, "column": None, "pattern": segments_mod.split_pattern(segments), "segments": kept,
            "empty_segments_dropped": total - kept, "file": SEGMENTS}


__all__ = ["MAX_INPUT_BYTES", "NeedsSpark", "eligible", "prepare_into"]
