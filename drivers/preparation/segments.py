"""Splitting documents into ordered segments (``prepare --segments``).

``prepare --segments paragraph|sentence|COLUMN`` writes, beside the unchanged
``docs.parquet``, ``segments.parquet``: one row per document that has tokens,

    doc_id          string
    segments        array<array<int>>  the word ids of every kept segment, tokens in text order,
                                       segments in layout order
    segment_index   array<int>         the position of each kept segment among all segments of the
                                       document's text (0-based), so a dropped empty segment leaves a gap

Segments left with no in-vocabulary token (a paragraph of stop words, a heading
of numbers) are dropped and counted in ``corpus.json["segmentation"]``. Every
document's segments together are exactly its bag of words in ``docs.parquet``
(checked when the corpus is written). Reading them back into blocks:
:mod:`drivers.corpora.segmented`.
"""
from __future__ import annotations

from drivers.corpora.files import SEGMENTS
from drivers.spark_parquet import read_parquet

SEGMENT_MODES = ("paragraph", "sentence")
#: ``prepare --ordered`` without ``--segments``: the whole text is one segment (``ordered.parquet``)
WHOLE_TEXT = "whole text"

#: a blank line (any whitespace between two line breaks, however many) or U+2029 PARAGRAPH SEPARATOR
PARAGRAPH_BREAK = r"\r?\n\s*\n|\u2029"
#: sentence ends: a terminator (Latin, Devanagari danda, Arabic/Urdu, Ethiopic, Armenian, interrobang,
#: ellipsis) and optional closing quotes/brackets, then whitespace; or a CJK full stop/question/exclamation
#: mark with no space needed; or a paragraph break. ``Mr. Smith`` is split too: a rule, not a model.
SENTENCE_BREAK = (PARAGRAPH_BREAK
                  + "|(?<=[.!?\u203d\u2026\u0964\u0965\u061f\u06d4\u1362\u0589])"
                    "[\"'\u201d\u2019\u00bb)\\]]*\\s+"
                  + "|(?<=[\u3002\uff01\uff1f\uff61])[\"'\u201d\u2019\u300d\u300f)\\]]*\\s*")
#: pieces of a segment column are joined with U+2029 into one text (and split there again)
COLUMN_SEPARATOR = "\u2029"


def is_column_mode(segments: str | None) -> bool:
    return bool(segments) and segments not in SEGMENT_MODES and segments != WHOLE_TEXT


def split_pattern(segments: str) -> str:
    """The Java regex that separates the segments of a text for ``--segments``."""
    if segments == "paragraph":
        return "(?U)" + PARAGRAPH_BREAK       # (?U): \\s is any Unicode white space
    if segments == "sentence":
        return "(?U)" + SENTENCE_BREAK
    if segments == WHOLE_TEXT:
        return "(?!)"                         # matches nowhere: one piece
    return COLUMN_SEPARATOR


def join_segment_column(rows):
    """Column mode: ``text`` holds the segment column (a JSON array of strings, or an array of strings);
    it becomes the segments joined by U+2029. A value that is not a list of strings rejects the row as
    ``malformed``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(rows.schema["text"].dataType, T.ArrayType):
        parsed = F.col("text")
    else:
        parsed = F.from_json(F.col("text"), T.ArrayType(T.StringType()))
    valid = parsed.isNotNull() & (F.size(parsed) > 0) & F.forall(parsed, lambda x: x.isNotNull())
    bad = F.col("reason").isNull() & F.col("text").isNotNull() & ~F.coalesce(valid, F.lit(False))
    return rows.select(
        "doc_id",
        F.when(valid, F.concat_ws(COLUMN_SEPARATOR, F.transform(
            parsed, lambda x: F.regexp_replace(x, COLUMN_SEPARATOR, " ")))).otherwise(
            F.col("text").cast("string")).alias("text"),
        "source",
        F.when(bad, F.coalesce(F.col("raw"), F.col("text").cast("string"))).otherwise(F.col("raw")).alias("raw"),
        "order",
        F.when(bad, F.lit("malformed")).otherwise(F.col("reason")).alias("reason"))


def segment_vectors(candidates, vocab, segments: str, tokenize_options: dict):
    """``(doc_id, segments, segment_index, n_tokens)`` of every document with a token, as a Spark job.

    ``candidates``: ``(doc_id, text)``; ``vocab``: ``(term, id)``; the tokenizer
    options are those of the bag of words, so the segments of a document hold
    exactly its in-vocabulary tokens. Blank pieces of text are not segments;
    segments without an in-vocabulary token are dropped (``segment_index``
    keeps the position among the non-blank pieces).
    """
    from pyspark.sql import functions as F

    from drivers.preparation.text import tokenize

    pieces = F.filter(F.split(F.col("text"), split_pattern(segments), -1),
                      lambda x: F.length(F.regexp_replace(x, r"(?U)\s", "")) > 0)
    segs = candidates.select("doc_id", F.posexplode(pieces).alias("segment", "segment_text"))
    tokens = tokenize(segs, "segment_text", "tokens", **tokenize_options)
    words = (tokens.select("doc_id", "segment", F.posexplode("tokens").alias("position", "term"))
             .join(vocab.select("term", "id"), "term")
             .groupBy("doc_id", "segment")
             .agg(F.sort_array(F.collect_list(F.struct("position", "id"))).alias("pairs"))
             .select("doc_id", "segment", F.transform("pairs", lambda p: p["id"]).alias("words")))
    return (words.groupBy("doc_id")
            .agg(F.sort_array(F.collect_list(F.struct("segment", "words"))).alias("segs"))
            .select("doc_id",
                    F.transform("segs", lambda s: s["words"]).cast("array<array<int>>").alias("segments"),
                    F.transform("segs", lambda s: s["segment"]).cast("array<int>").alias("segment_index"),
                    F.aggregate("segs", F.lit(0), lambda acc, s: acc + F.size(s["words"])).alias("n_tokens")),
            segs.select("doc_id").groupBy("doc_id").count())


def write_segments(spark, candidates, vocab, docs_path: str, path: str, segments: str,
                   tokenize_options: dict) -> dict:
    """Write ``segments.parquet`` and return ``corpus.json["segmentation"]``; fails unless every document of
    ``docs.parquet`` has exactly its tokens in its segments."""
    from pyspark.sql import functions as F

    per_doc, pieces = segment_vectors(candidates, vocab, segments, tokenize_options)
    per_doc.select("doc_id", "segments", "segment_index").write.parquet(path)
    written = read_parquet(spark, path)
    docs = read_parquet(spark, docs_path).select("doc_id", F.col("n_tokens").alias("bag_tokens"))
    lengths = written.select("doc_id", F.aggregate("segments", F.lit(0), lambda a, s: a + F.size(s))
                             .alias("seg_tokens"), F.size("segments").alias("kept"))
    check = docs.join(lengths, "doc_id", "full_outer").agg(
        F.sum(F.when(F.coalesce("bag_tokens", F.lit(-1)) != F.coalesce("seg_tokens", F.lit(-2)), 1)
              .otherwise(0)).alias("mismatched"),
        F.sum("kept").alias("kept"), F.sum("seg_tokens").alias("tokens")).first()
    if check.mismatched:
        raise RuntimeError(f"internal error: {check.mismatched} documents whose segments do not hold exactly "
                           f"their bag-of-words tokens (a --token-pattern that matches across segment breaks?)")
    total = pieces.join(docs.select("doc_id"), "doc_id", "left_semi").agg(F.sum("count").alias("n")).first().n
    kept = int(check.kept or 0)
    return {"mode": "column" if is_column_mode(segments) else segments,
            "column": segments if is_column_mode(segments) else None,
            "pattern": split_pattern(segments), "segments": kept,
            "empty_segments_dropped": int(total or 0) - kept,
            "file": SEGMENTS}
