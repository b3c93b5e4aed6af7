"""Refreshing a model of an aligned corpus (``polylda``, ``ptlda``, ``tlda`` trained on aligned tuples): the batch
read as ``prepare --lang-column`` reads it, each language's vocabulary grown as lda's is, the batch prepared as an
aligned corpus (one sub-corpus per language, ``staging/corpus/<lang>/``), and the union of every batch for a
guided pass.

* **Ledger key.** A tuple (one id, one text per language) is one document of ``polylda`` and ``ptlda``: it is new,
  revised (any of its languages' texts changed: the tuple is ingested again) or a duplicate as a whole; its content
  hash is that of its languages' texts in language order. ``tlda`` on aligned tuples keeps each language's
  document apart (``<id>@<lang>``, as its training did), so each is a ledger entry of its own.
* **Vocabulary.** Each language grows as lda's vocabulary does (:func:`drivers.refresh.update.grow_vocabulary`):
  its words outside the language's vocabulary, counted by document over the batches (``pending_terms.parquet``
  with a ``lang`` column), enter at ``--min-new-df``, at most ``--max-new-terms`` per language and refresh; a
  word gets the next local id of its language (global ids of later languages shift: :func:`drivers.corpora.aligned.word_columns` maps a
  version's words to the next one's by (language, word)).
* **Every language in every batch.** A batch lacking a language of the model is refused in one line (its
  sub-corpus would be missing); rows in a language the model does not have are rejected
  (``language_not_in_model``).
"""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from drivers import storage
from drivers.corpora import tokenizer
from drivers.corpora.files import CORPUS_JSON, DOCS
from drivers.preparation.aligned import read_aligned_rows, write_aligned_summary
from drivers.preparation.corpus import prepare_corpus
from drivers.preparation.reading import resolve_format
from drivers.refresh import sources, update as refresh
from drivers.refresh.triage import grown_words, prepared_ids, triage, write_ledger
from drivers.store import model_store
from inference.errors import RefusedError, UsageError

log = logging.getLogger("spark_topics.refresh")

#: the reason of a batch row whose language the model does not have
OTHER_LANGUAGE = "language_not_in_model"
#: tokenizer options every language of an aligned corpus is prepared with alike (prepare --lang-column)
SHARED_OPTIONS = ("min_token_length", "token_pattern")


def language_options(base, language: str) -> dict:
    """``prepare`` options that read ``language``'s text as the model's training corpus read it."""
    return {k: v for k, v in tokenizer.raw_text_options(base.language_view(language)).items() if k != "segments"}


def ingest(spark, request, root, current, base, base_dir, ledger, version, staging, spec=None):
    """As ``jobs.refresh.ingest_batch`` for a model of an aligned corpus: ``(documents, prepared, new_terms,
    pending, vocab, corpus_dir)`` (new_terms, pending and vocab with a ``lang`` column), or the report of a run
    that publishes nothing."""
    from pyspark.sql import functions as F

    if request.probe:
        raise UsageError(f"--probe scores a monolingual model; {root} is polylingual ({base.meta['model']}): drop "
                         f"--probe and score the new version with `spark-topics evaluate` on an aligned test corpus")
    languages = list(base.meta["languages"])
    separate = base.meta.get("documents_per") in ("tuple and language", "language")   # tlda's (variational, Gibbs)
    spark.sparkContext.setJobDescription(f"refresh {root}: read and classify {request.input}")
    fmt = resolve_format(spark, request.input, request.format)
    rows = read_aligned_rows(spark, request.input, fmt, request.id_column, request.text_column, request.lang_column)
    rows = rows.withColumn("reason", F.when(F.col("reason").isNull() & ~F.col("lang").isin(*languages),
                                            F.lit(OTHER_LANGUAGE)).otherwise(F.col("reason")))
    valid = rows.where(F.col("reason").isNull()).withColumn(
        "key", F.concat("doc_id", F.lit("@"), "lang") if separate else F.col("doc_id"))
    units = (valid.groupBy("key").agg(F.array_sort(F.collect_list(F.struct("lang", "text"))).alias("parts"))
             .select(F.col("key").alias("doc_id"),
                     F.concat_ws("\n", F.transform("parts", lambda p: F.concat(p["lang"], F.lit("\t"), p["text"])))
                     .alias("text"), F.lit(None).cast("string").alias("reason"),
                     F.lit(None).cast("string").alias("raw")))
    rejected = rows.where(F.col("reason").isNotNull()).select("doc_id", "text", "reason", "raw")
    classified = refresh.classify(units.unionByName(rejected), ledger).cache()
    try:
        sorted_batch = triage(classified, request, current, version, staging)
        if sorted_batch.report is not None:
            return sorted_batch.report
        keys = sorted_batch.ingested.select(F.col("doc_id").alias("key"))
        batch = valid.join(keys, "key").select(F.col("doc_id").alias("id"), "text", "lang").cache()
        present = {r["lang"] for r in batch.select("lang").distinct().collect()}
        missing = [l for l in languages if l not in present]
        if missing:
            raise RefusedError(f"{request.input}: the batch has no document in {', '.join(missing)}, a language of "
                               f"the model ({', '.join(languages)}): a refresh of a polylingual model needs every "
                               f"language in the batch; add its documents, or retrain")
        input_dir = storage.join(staging, "work-input")
        batch.write.partitionBy("lang").parquet(input_dir)
        batch.unpersist()
        new_terms, pending, vocabs, per_language = [], [], [], {}
        pending_path = storage.join(base_dir, refresh.PENDING_TERMS)
        pending_all = model_store.read_parquet(pending_path) if storage.exists(pending_path) else None
        corpus_dir = storage.join(staging, "corpus")
        for language in languages:
            spark.sparkContext.setJobDescription(f"refresh {root}: the batch's {language} words the model does not know")
            known = base.language_view(language).vocab["term"].astype(str)
            options = language_options(base, language)
            part = spark.read.parquet(storage.join(input_dir, f"lang={language}"))
            waiting = None if pending_all is None or "lang" not in pending_all.columns else \
                pending_all[pending_all["lang"] == language]
            added, still = grown_words(spark, part.select(F.col("id").alias("doc_id"), "text"), known, options,
                                       waiting, request, tokenizer.frequent_terms(base, language))
            new_terms.append(added.assign(lang=language))
            pending.append(still.assign(lang=language))
            vocab = pd.DataFrame({"term": pd.concat([known, added["term"].astype(str)], ignore_index=True)})
            vocab["id"] = np.arange(len(vocab), dtype=np.int64)
            vocabs.append(vocab.assign(lang=language))
            vocab_path = storage.join(staging, f"work-vocab.{language}.parquet")
            model_store.write_parquet(vocab_path, vocab[["term", "id"]])
            spark.sparkContext.setJobDescription(f"refresh {root}: prepare the batch's {language} documents")
            per_language[language] = prepare_corpus(
                spark, storage.join(input_dir, f"lang={language}"), storage.join(corpus_dir, language),
                format="parquet", id_column="id", text_column="text", vocab=vocab_path, overwrite=True, **options)
            storage.delete(vocab_path)
        spark.sparkContext.setJobDescription(None)       # the jobs that follow describe themselves by call site
        prepared = write_aligned_summary(spark, corpus_dir, languages, per_language, request.lang_column,
                                         request.input)
        if separate:                           # tlda's documents: one per tuple and language
            prepared = dict(prepared, documents=sum(int(c["documents"]) for c in per_language.values()))
        kept = None
        for language in languages:
            ids = prepared_ids(spark, storage.join(corpus_dir, language, DOCS)).select(
                F.concat("doc_id", F.lit(f"@{language}")).alias("doc_id") if separate else "doc_id")
            kept = ids if kept is None else kept.unionByName(ids)
        write_ledger(sorted_batch.ingested, kept.distinct(), sorted_batch.adopted, version, staging)
        storage.delete(input_dir)
    finally:
        classified.unpersist()
    vocab = pd.concat(vocabs, ignore_index=True)
    return (sorted_batch.documents, prepared, pd.concat(new_terms, ignore_index=True),
            pd.concat(pending, ignore_index=True), vocab, corpus_dir)


def union_corpus(spark, training: str, chain_dirs: list, batch_dir: str, staging: str, output: str | None = None,
                 ids: list | None = None) -> str:
    """A guided pass over an aligned root: each language's documents ingested so far (the base model's training
    corpus and every committed version's batch) and the batch's, each id's latest text
    (:func:`drivers.refresh.sources.union_corpus` per language), as one aligned corpus (``output``, default
    ``staging/work-union``). ``ids`` (ledger ids: a tuple's, or tlda's ``<id>@<lang>``): only those documents, as
    they were before the batch (revised tuples' old copies)."""
    meta = storage.load_json(storage.join(batch_dir, CORPUS_JSON))
    union = output or storage.join(staging, "work-union")
    per_language = {}
    for language in meta["languages"]:
        mine = None if ids is None else sorted({i[:-len(language) - 1] if i.endswith(f"@{language}") else i
                                                for i in ids})
        part = sources.union_corpus(spark, training, chain_dirs, batch_dir, staging, part=language,
                                    output=storage.join(union, language), ids=mine)
        per_language[language] = storage.load_json(storage.join(part, CORPUS_JSON))
    write_aligned_summary(spark, union, meta["languages"], per_language, meta.get("lang_column", "lang"),
                          "every batch ingested")
    return union
