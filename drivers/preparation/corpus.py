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
``frequent_terms.parquet/`` (when the vocabulary is built, not given)
    ``term`` string, ``df`` long: the terms cut for ``df > max_df``, df descending then term; models trained on
    the corpus keep them, and no refresh adds them as new words (issue 30).
``corpus.json``
    counts, options and input path.  ``input_rows == documents + sum(rejected.values())``.
``_SUCCESS``
    the completion marker, written last (:mod:`drivers.store.publish`: every file's size and content hash); a
    corpus written before markers (``corpus.json`` last, no ``_SUCCESS``) is read as it is.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from drivers import storage
from drivers.corpora.files import (CORPUS_JSON, DOCS, FAILED_REJECTS, LEGACY_STAGING, REJECTS, ORDERED, SEGMENTS, VOCAB,
                                   is_corpus_file)
from drivers.failures import is_spark_failure, one_line
from drivers.spark_progress import watching
from drivers.preparation import segments as segments_mod
from drivers.preparation.in_process import corpus as in_process_corpus
from drivers.preparation.holdout import rows_of_part
from drivers.preparation.options import PrepareError, PrepareOptions
from drivers.preparation.reading import absolute_path, flag_duplicates, read_input, resolve_format
from drivers.preparation.text import stopword_list, tokenize
from drivers.preparation.vocabulary import (PersistedFrames, build_vocabulary, count_terms, document_vectors,
                                          frequent_terms, load_vocabulary, term_statistics)
from drivers.preparation.writer import (corpus_summary, no_documents_message, write_corpus_json, write_documents,
                                        write_frequent_terms, write_rejects, write_stopwords, write_vocabulary)
from drivers.preparation.writer import in_directory
from drivers.store import publish


log = logging.getLogger("spark_topics.prepare")
#: Let adaptive execution coalesce the shuffle partitions of cached plans: the
#: job caches several shuffled frames, and without this each keeps
#: ``spark.sql.shuffle.partitions`` (200) partitions, i.e. hundreds of tiny tasks.
_SQL_CONF = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}
#: where ``prepare`` runs: ``auto`` chooses this process for small local inputs (:mod:`drivers.preparation.in_process`)
ENGINES = ("auto", "spark", "in-process")


# ------------------------------------------------------------------ the pipeline


def prepare_corpus(spark, input_path: str, output_dir: str, engine: str = "auto", **options) -> dict:
    """Turn the documents at ``input_path`` into a corpus in ``output_dir``.

    ``spark`` is a SparkSession, or a function that makes one when first needed (a small input is prepared
    without ever starting Spark). ``engine``: ``spark``; ``in-process`` (:mod:`drivers.preparation.in_process`:
    the same files, for a local input of at most 32 MiB in txt, JSON lines or Parquet; refused otherwise with the
    reason); ``auto`` (in this process where it can, else Spark). ``options`` are the fields of
    :class:`PrepareOptions`. Returns the ``corpus.json`` dictionary. Raises :class:`PrepareError` for bad input
    or options, and when no document is left (after writing ``rejects/``).

    The corpus is published whole (:mod:`drivers.store.publish`, as ``train`` publishes a model): written into a
    hidden sibling folder, ``corpus.json`` then the ``_SUCCESS`` manifest last, and exchanged with
    ``output_dir`` in one step (the user's other files in it are kept). A typo in a column name, an input that
    yields no document or a run killed at any point leaves an earlier corpus as it was (or the new one
    complete); the next run (or read) puts right what a killed run left beside it.
    """
    if engine not in ENGINES:
        raise PrepareError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    opts = PrepareOptions(**options)
    stopwords = stopwords_of(opts)
    _check_paths(input_path, output_dir)
    fmt = resolve_format(None, input_path, opts.format)
    _check_output_dir(output_dir, opts.overwrite)
    in_process = engine != "spark" and in_process_corpus.eligible(input_path, output_dir, fmt, opts)
    if engine == "in-process" and in_process:
        raise PrepareError(f"cannot prepare {input_path} without Spark: {in_process}")
    with publish.published(output_dir, "spark-topics prepare", is_corpus_file, LEGACY_STAGING) as staging:
        corpus = None
        if in_process is None:
            try:
                corpus = in_process_corpus.prepare_into(input_path, staging, fmt, opts, stopwords)
                log.info("prepared in this process (no Spark job)")
            except in_process_corpus.NeedsSpark as reason:
                if engine == "in-process":
                    raise PrepareError(f"cannot prepare {input_path} without Spark: {reason}") from None
                log.info("preparing with Spark: the input has %s", reason)
                _empty(staging)
        if corpus is None:
            session = spark() if callable(spark) else spark
            try:
                with watching(session, "prepare"):
                    corpus = _prepare_into(session, input_path, staging, fmt, opts, stopwords)
            except Exception as exc:
                if not is_spark_failure(exc):
                    raise
                raise PrepareError(f"cannot read {input_path}: {one_line(exc)}") from None
        _finish(corpus, staging, output_dir)
    log.info("%s", summary_line(corpus, output_dir))
    return corpus


def _finish(corpus: dict, staging: str, output_dir: str) -> None:
    """Write corpus.json into ``staging``; with no document left, put the rejects where the user looks, beside
    (never over) an earlier corpus, and raise :class:`PrepareError` saying why."""
    path = in_directory(staging)
    if corpus["documents"] == 0:
        has_corpus = storage.exists(storage.join(output_dir, CORPUS_JSON))
        rejects = storage.join(output_dir, FAILED_REJECTS if has_corpus else REJECTS)
        storage.makedirs(output_dir)
        storage.delete(rejects)
        storage.move(path(REJECTS), rejects)
        raise PrepareError(no_documents_message(corpus, rejects)
                           + (f"; the corpus already in {output_dir} was left as it was" if has_corpus else ""))
    write_corpus_json(staging, corpus)


def _empty(staging: str) -> None:
    for name in storage.list_dir(staging):
        storage.delete(storage.join(staging, name))


def _prepare_into(spark: SparkSession, input_path: str, staging: str, fmt: str,
                  opts: PrepareOptions, stopwords: list) -> dict:
    """The Spark job, writing into ``staging``; returns corpus.json's content."""
    log.info("reading %s as %s", input_path, fmt)
    path = in_directory(staging)

    with _session_conf(spark, _SQL_CONF), PersistedFrames() as cache:
        if segments_mod.is_column_mode(opts.segments):   # the text is the segment column's pieces
            read_opts = dataclasses.replace(opts, text_column=opts.segments)
            rows = cache.add(flag_duplicates(segments_mod.join_segment_column(
                rows_of_part(read_input(spark, input_path, fmt, read_opts), opts.holdout))))
        else:
            rows = cache.add(flag_duplicates(rows_of_part(read_input(spark, input_path, fmt, opts), opts.holdout)))
        counted = rows.agg(F.count(F.lit(1)).alias("rows"), F.count_if(F.col("reason").isNull()).alias("valid")) \
            .first()                    # one job: the input rows and those to tokenise
        input_rows, n_candidates = int(counted["rows"]), int(counted["valid"])
        if input_rows == 0:
            raise PrepareError(f"no input rows in {input_path} (read as {fmt})")
        candidates = rows.where(F.col("reason").isNull())
        log.debug("%d input rows, %d to tokenise", input_rows, n_candidates)

        tokens = tokenize(candidates.select("doc_id", "text"), "text", "tokens",
                          pattern=opts.token_pattern, min_token_length=opts.min_token_length,
                          stopwords=stopwords)
        term_counts = cache.add(count_terms(tokens))

        if opts.vocab:
            vocab = cache.add(load_vocabulary(spark, opts.vocab, term_counts))
        else:
            stats = cache.add(term_statistics(term_counts))      # (term, df, cf): counted once, read twice
            vocab = cache.add(build_vocabulary(stats, n_candidates, opts, cache))
        docs = cache.add(document_vectors(candidates, term_counts, vocab, opts.keep_columns))

        vocab_size = write_vocabulary(vocab, path(VOCAB))
        log.debug("wrote %s", path(VOCAB))
        documents = write_documents(docs, path(DOCS), opts.partitions, opts.keep_columns)
        log.debug("wrote %s", path(DOCS))
        rejects = write_rejects(rows, docs, path(REJECTS))
        log.debug("wrote %s", path(REJECTS))
        write_stopwords(staging, stopwords)
        corpus = corpus_summary(input_path, input_rows, vocab_size, documents, rejects, fmt, opts)
        if not opts.vocab:              # the terms cut as too frequent, which no refresh adds back (issue 30)
            corpus["frequent_terms"] = write_frequent_terms(staging, frequent_terms(stats, n_candidates, opts))
        if opts.segments and corpus["documents"]:
            corpus["segmentation"] = segments_mod.write_segments(
                spark, candidates.select("doc_id", "text"), vocab, path(DOCS), path(SEGMENTS), opts.segments,
                {"pattern": opts.token_pattern, "min_token_length": opts.min_token_length, "stopwords": stopwords})
            log.debug("wrote %s", path(SEGMENTS))
        if opts.ordered and corpus["documents"]:
            corpus["ordered"] = ordered_tokens(spark, candidates.select("doc_id", "text"), vocab, path, opts,
                                               stopwords)
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


def document_terms(rows: DataFrame, **options) -> DataFrame:
    """``(doc_id, term)``, once per document and term, of ``rows`` (doc_id, text) tokenised as ``prepare``
    tokenises with ``options``."""
    opts = PrepareOptions(**options)
    tokens = tokenize(rows.select("doc_id", "text"), "text", "tokens", pattern=opts.token_pattern,
                      min_token_length=opts.min_token_length, stopwords=stopwords_of(opts))
    return tokens.select("doc_id", F.explode(F.array_distinct("tokens")).alias("term"))


def summary_line(corpus: dict, output_dir: str) -> str:
    """One line with the counts of a ``corpus.json`` dictionary."""
    rejected = " ".join(f"{reason}={n}" for reason, n in corpus["rejected"].items())
    return (f"prepared {corpus['documents']} documents, {corpus['vocab_size']} terms, "
            f"{corpus['tokens']} tokens ({corpus['oov_tokens']} out of vocabulary) from "
            f"{corpus['input_rows']} input rows; rejected: {rejected} -> {output_dir}")


# ---------------------------------------------------------------------- helpers


def stopwords_of(opts: PrepareOptions) -> list[str]:
    try:
        return stopword_list(opts.language, opts.stopwords)
    except ValueError as exc:
        raise PrepareError(str(exc)) from None


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
    source, target = absolute_path(input_path).rstrip("/"), absolute_path(output_dir).rstrip("/")
    if target == source:
        raise PrepareError(f"--output {output_dir} is the input: write the corpus to another directory")
    if target.startswith(source + "/"):
        raise PrepareError(f"--output {output_dir} lies inside the input {input_path}: a later prepare of that "
                           f"input would read the corpus back as documents; write it elsewhere")


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
