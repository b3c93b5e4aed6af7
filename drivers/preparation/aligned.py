"""Aligned multilingual corpora for polylingual LDA (Mimno et al. 2009): prepare.

``spark-topics prepare --input PATH --lang-column lang --output CORPUS_DIR``: rows
sharing an id in different languages form one *tuple*. The input (JSON lines, CSV
or Parquet) is split by language and every language is prepared as an ordinary
corpus in ``CORPUS_DIR/<lang>/`` (its own vocabulary, its own stop-word list,
the same pruning options), so a language's sub-corpus also trains a monolingual
model as it is. ``CORPUS_DIR/corpus.json`` describes the aligned corpus::

    {"aligned": true, "languages": ["en", "es"], "documents": <tuples>,
     "vocab_sizes": {...}, "tuples": {"complete": n, "missing": {"es": m, ...}},
     "per_language": {"en": <that corpus.json>, ...}, "rejected": {...}, ...}

Rows without a language, and rows Spark cannot parse, are written to
``CORPUS_DIR/rejects/`` with their reason; tuples lacking some languages are
kept and counted.

Loading (:func:`drivers.corpora.aligned.load_aligned_corpus`) concatenates the vocabularies (language l
owns global ids ``offsets[l]:offsets[l+1]``, :class:`inference.layout.VocabLayout`)
and turns every tuple into one document whose terms span its languages, so the
variational mapper runs unchanged; the per-language Dirichlets live in the layout.
"""
from __future__ import annotations

import logging

from drivers import storage
from drivers.corpora.files import LEGACY_STAGING, is_corpus_file
from drivers.preparation.writer import write_corpus_json
from drivers.spark_parquet import read_parquet
from drivers.store import publish

log = logging.getLogger("spark_topics.prepare")

#: ISO 639-1 codes -> the stop-word lists shipped in drivers/preparation/stopwords/
STOPWORD_LANGUAGES = {"da": "danish", "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french",
                      "de": "german", "hu": "hungarian", "it": "italian", "no": "norwegian", "nb": "norwegian",
                      "pt": "portuguese", "ru": "russian", "es": "spanish", "sv": "swedish", "tr": "turkish"}
SPLIT_DIR = "_split"
SPLIT_REASONS = ("malformed", "missing_language", "invalid_encoding")


def stopword_language(code: str) -> str:
    from drivers.preparation.text import NO_STOPWORDS, available_languages

    if code in STOPWORD_LANGUAGES:
        return STOPWORD_LANGUAGES[code]
    if code in available_languages():
        return code
    log.warning("no stop-word list for language %r: its words are kept (pass a list with --stopwords)", code)
    return NO_STOPWORDS


def read_aligned_rows(spark, path: str, fmt: str, id_column: str, text_column: str, lang_column: str):
    """The input as (doc_id, text, lang, reason) with malformed rows flagged (not dropped)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from drivers.preparation.options import PrepareError

    columns = [id_column, text_column, lang_column]
    if fmt == "parquet":
        df = read_parquet(spark, path)
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise PrepareError(f"{path} lacks column(s) {', '.join(missing)}; it has {', '.join(df.columns)}")
        df = df.withColumn("_corrupt_record", F.lit(None).cast("string"))
    elif fmt in ("jsonl", "csv"):
        schema = T.StructType([T.StructField(c, T.StringType()) for c in columns]
                              + [T.StructField("_corrupt_record", T.StringType())])
        reader = spark.read.schema(schema).option("mode", "PERMISSIVE")
        df = (reader.json(path) if fmt == "jsonl"
              else reader.option("header", True).option("multiLine", True).option("escape", '"').csv(path))
        if fmt == "csv":
            header = spark.read.option("header", True).csv(path).columns
            missing = [c for c in columns if c not in header]
            if missing:
                raise PrepareError(f"{path} lacks column(s) {', '.join(missing)}; it has {', '.join(header)}")
    else:
        raise PrepareError(f"aligned input must be JSON lines, CSV or Parquet (with a {lang_column!r} column), "
                           f"not {fmt}")
    doc_id = F.trim(F.col(id_column).cast("string"))
    text = F.col(text_column).cast("string")
    lang = F.lower(F.trim(F.col(lang_column).cast("string")))
    malformed = F.col("_corrupt_record").isNotNull() | doc_id.isNull() | (doc_id == "") | text.isNull()
    reason = (F.when(malformed, "malformed")
              .when(lang.isNull() | (lang == ""), "missing_language")
              .when(F.contains(text, F.lit("\ufffd")) | F.contains(doc_id, F.lit("\ufffd")), "invalid_encoding"))
    return df.select(doc_id.alias("doc_id"), text.alias("text"), lang.alias("lang"), reason.alias("reason"),
                     F.coalesce(F.col("_corrupt_record"), F.to_json(F.struct(*[F.col(c) for c in columns])))
                     .alias("raw"))


def prepare_aligned(spark, input_path: str, output_dir: str, lang_column: str = "lang",
                    holdout_fraction: float = 0.0, **options) -> dict:
    """Prepare an aligned corpus: one sub-corpus per language plus the tuple counts.

    ``holdout_fraction`` > 0 moves that fraction of the tuples (chosen by a hash of
    the id, so the split is the same everywhere) into ``CORPUS_DIR/heldout/``, an
    aligned corpus prepared with the training vocabularies (for ``evaluate``).
    ``options["vocab"]`` may name a polylingual model directory (``vocab.<L>.parquet``)
    or an aligned corpus (``<L>/vocab.parquet``) whose vocabularies are reused.
    """
    from drivers.preparation.reading import resolve_format
    from drivers.preparation.options import PrepareError

    fmt = resolve_format(spark, input_path, options.get("format", "auto"))
    if storage.exists(output_dir) and storage.list_dir(output_dir) and not options.get("overwrite"):
        raise PrepareError(f"output directory {output_dir} is not empty; pass --overwrite to replace it")
    if not 0.0 <= holdout_fraction < 1.0:
        raise PrepareError(f"--holdout-fraction must be in [0, 1), got {holdout_fraction}")
    with publish.published(output_dir, "spark-topics prepare", is_corpus_file, LEGACY_STAGING) as staging:
        return _prepare_aligned_into(spark, input_path, staging, output_dir, fmt, lang_column, holdout_fraction,
                                     options)


def _prepare_aligned_into(spark, input_path: str, staging: str, output_dir: str, fmt: str, lang_column: str,
                          holdout_fraction: float, options: dict) -> dict:
    """The aligned corpus written into ``staging`` (published at ``output_dir`` when complete)."""
    from pyspark.sql import functions as F

    from drivers.preparation.options import PrepareError

    id_column, text_column = options.get("id_column", "id"), options.get("text_column", "text")
    rows = read_aligned_rows(spark, input_path, fmt, id_column, text_column, lang_column).cache()
    try:
        # one job: the rows by reject reason, the valid ones by language
        groups = rows.groupBy("reason", F.when(F.col("reason").isNull(), F.col("lang")).alias("lang")).count() \
            .collect()
        input_rows = sum(int(g["count"]) for g in groups)
        if input_rows == 0:
            raise PrepareError(f"no input rows in {input_path}")
        languages = sorted(g["lang"] for g in groups if g["reason"] is None and g["lang"] is not None)
        split_rejected = {g["reason"]: int(g["count"]) for g in groups if g["reason"] is not None}
        if not languages:
            raise PrepareError(f"no row of {input_path} has a language in column {lang_column!r}")
        vocab_of = _vocabularies(options.pop("vocab", None), languages)
        rejects = rows.where(F.col("reason").isNotNull())
        rejects.select(F.col("doc_id").alias("id"), "reason", F.col("lang"),
                       F.substring("raw", 1, 1000).alias("raw")) \
            .write.mode("overwrite").option("ignoreNullFields", False).json(storage.join(staging, "rejects"))
        valid = rows.where(F.col("reason").isNull()).select("doc_id", "text", "lang")
        heldout = (F.pmod(F.xxhash64("doc_id"), F.lit(1_000_000)) < F.lit(int(round(holdout_fraction * 1_000_000))))
        valid.where(~heldout).write.mode("overwrite").partitionBy("lang").parquet(storage.join(staging, SPLIT_DIR))
        if holdout_fraction > 0:
            valid.where(heldout).write.mode("overwrite").partitionBy("lang") \
                .parquet(storage.join(staging, SPLIT_DIR + "_heldout"))
    finally:
        rows.unpersist()

    base = {k: v for k, v in options.items() if k not in ("format", "id_column", "text_column", "language")}
    stop_words = {lang: (options.get("language") if options.get("language") not in (None, "english")
                         else stopword_language(lang)) for lang in languages}
    per_language = _prepare_languages(spark, storage.join(staging, SPLIT_DIR), staging, languages,
                                      base, stop_words, vocab_of)
    rejected = {r: int(split_rejected.get(r, 0)) for r in SPLIT_REASONS}
    corpus = write_aligned_summary(spark, staging, languages, per_language, lang_column, input_path,
                            input_rows=int(input_rows), rejected=rejected)
    if holdout_fraction > 0:
        test_dir = storage.join(staging, "heldout")
        split = storage.join(staging, SPLIT_DIR + "_heldout")
        present = [l for l in languages if storage.exists(storage.join(split, f"lang={l}"))]
        train_vocab = {l: storage.join(staging, l, "vocab.parquet") for l in present}
        test = _prepare_languages(spark, split, test_dir, present, base, stop_words, train_vocab)
        corpus["heldout"] = write_aligned_summary(spark, test_dir, present, test, lang_column, input_path,
                                           holdout_of=output_dir)["documents"]
        write_corpus_json(staging, corpus)
        storage.delete(split)
    return corpus


def _vocabularies(vocab: str | None, languages) -> dict:
    """language -> vocabulary to reuse (``--vocab`` naming a polylingual model or an aligned corpus)."""
    if not vocab:
        return {}
    from drivers.preparation.options import PrepareError

    found = {}
    for lang in languages:
        for candidate in (storage.join(vocab, f"vocab.{lang}.parquet"), storage.join(vocab, lang, "vocab.parquet")):
            if storage.exists(candidate):
                found[lang] = candidate
                break
        else:
            raise PrepareError(f"--vocab {vocab}: no vocabulary for language {lang!r} "
                               f"(looked for vocab.{lang}.parquet and {lang}/vocab.parquet)")
    return found


def _prepare_languages(spark, split_dir: str, output_dir: str, languages, base: dict, stop_words: dict,
                       vocab_of: dict) -> dict:
    from drivers.preparation.corpus import prepare_corpus

    per_language = {}
    for lang in languages:
        opts = dict(base, format="parquet", id_column="doc_id", text_column="text", overwrite=True,
                    language=stop_words[lang], vocab=vocab_of.get(lang))
        log.info("preparing language %s (stop words: %s)", lang, opts["language"])
        per_language[lang] = prepare_corpus(spark, storage.join(split_dir, f"lang={lang}"),
                                            storage.join(output_dir, lang), **opts)
    storage.delete(split_dir)
    return per_language


def write_aligned_summary(spark, output_dir: str, languages, per_language: dict, lang_column: str, input_path: str,
                   input_rows: int | None = None, rejected: dict | None = None, holdout_of: str | None = None) -> dict:
    """Count the tuples of the prepared languages and write the aligned ``corpus.json``."""
    from pyspark.sql import functions as F

    docs = None
    for lang in languages:
        d = read_parquet(spark, storage.join(output_dir, lang, "docs.parquet")).select("doc_id", F.lit(lang).alias("lang"))
        docs = d if docs is None else docs.unionByName(d)
    per_tuple = docs.groupBy("doc_id").agg(F.collect_set("lang").alias("langs"))
    counted = per_tuple.agg(F.count(F.lit(1)).alias("tuples"),
                            F.count_if(F.size("langs") == len(languages)).alias("complete"),
                            *[F.count_if(~F.array_contains("langs", lang)).alias(f"missing_{i}")
                              for i, lang in enumerate(languages)]).first()     # one aggregation, one job
    n_tuples, complete = counted["tuples"], counted["complete"]
    missing = {lang: counted[f"missing_{i}"] for i, lang in enumerate(languages)}
    corpus = {
        "format_version": 1, "aligned": True, "languages": list(languages), "lang_column": lang_column,
        "documents": int(n_tuples),
        "tokens": int(sum(c["tokens"] for c in per_language.values())),
        "vocab_size": int(sum(c["vocab_size"] for c in per_language.values())),
        "vocab_sizes": {l: int(c["vocab_size"]) for l, c in per_language.items()},
        "tuples": {"complete": int(complete), "missing": {l: int(n) for l, n in missing.items()}},
        "input_rows": int(input_rows if input_rows is not None
                          else sum(c["input_rows"] for c in per_language.values())),
        "rejected": rejected or {r: 0 for r in SPLIT_REASONS},
        "per_language": per_language, "input": input_path,
    }
    if holdout_of:
        corpus["heldout_of"] = holdout_of
    write_corpus_json(output_dir, corpus)
    return corpus


def summary_line(corpus: dict, output_dir: str) -> str:
    langs = ", ".join(f"{l}: {c['documents']} docs/{c['vocab_size']} terms" for l, c in corpus["per_language"].items())
    missing = " ".join(f"{l}={n}" for l, n in corpus["tuples"]["missing"].items())
    rejected = " ".join(f"{r}={n}" for r, n in corpus["rejected"].items())
    return (f"prepared {corpus['documents']} aligned tuples ({corpus['tuples']['complete']} complete; missing "
            f"{missing}) in {len(corpus['languages'])} languages ({langs}) from {corpus['input_rows']} input rows; "
            f"rejected before tokenising: {rejected}; per-language rejects in {output_dir}/<lang>/rejects -> {output_dir}")
