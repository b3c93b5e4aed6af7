"""Aligned multilingual corpora (``prepare --lang-column``) as blocks for polylingual LDA (Mimno et al. 2009).

:func:`load_aligned_corpus` concatenates the vocabularies of the languages
(language l owns global ids ``offsets[l]:offsets[l+1]``,
:class:`inference.layout.VocabLayout`) and turns every tuple into one document
whose terms span its languages, so the variational mapper runs unchanged; the
per-language Dirichlets live in the layout. How such a corpus is written:
:mod:`drivers.preparation.aligned`.
"""
from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from drivers import storage
from drivers.corpora.bow import Corpus, chosen_partitions, docs_to_blocks, materialise_blocks, reading
from drivers.corpora.files import CORPUS_JSON, DOCS, VOCAB, require_corpus
from drivers.spark_parquet import read_parquet
from inference.errors import UsageError
from inference.layout import VocabLayout

log = logging.getLogger("spark_topics.corpus")


def is_aligned(corpus_dir: str) -> bool:
    path = storage.join(corpus_dir, CORPUS_JSON)
    return storage.exists(path) and bool(storage.load_json(path).get("aligned"))


def aligned_vocab(corpus_dir: str, languages) -> tuple[pd.DataFrame, VocabLayout]:
    """The concatenated vocabulary (``term``, ``id`` global, ``lang``, ``local_id``) and its layout."""
    frames = [storage.read_vocab(storage.join(storage.join_inside(corpus_dir, lang, "a language"), VOCAB))
              for lang in languages]
    layout = VocabLayout.from_sizes(languages, [len(f) for f in frames])
    parts = []
    for lang, frame, offset in zip(languages, frames, layout.offsets):
        parts.append(pd.DataFrame({"term": frame["term"].to_numpy(), "id": frame["id"].to_numpy() + offset,
                                   "lang": lang, "local_id": frame["id"].to_numpy()}))
    return pd.concat(parts, ignore_index=True), layout


def word_columns(old_vocab: pd.DataFrame, new_vocab: pd.DataFrame) -> np.ndarray:
    """For every word of ``old_vocab`` (by position) its column in ``new_vocab``, matched by (language, word): the
    identity prefix for a monolingual model, shifted blocks for a polylingual one."""
    def keys(vocab):
        langs = vocab["lang"].astype(str) if "lang" in vocab.columns else pd.Series([""] * len(vocab))
        return list(zip(langs.tolist(), vocab["term"].astype(str).tolist()))
    index = {key: i for i, key in enumerate(keys(new_vocab))}
    try:
        return np.array([index[key] for key in keys(old_vocab)], dtype=np.int64)
    except KeyError as missing:
        raise RuntimeError(f"the new version's vocabulary lost the word {missing}: vocabularies only grow") from None


def aligned_documents(spark, directory: str, languages: list | None = None, separate: bool = False):
    """The documents of an aligned CORPUS_DIR over the concatenated vocabulary: ``(frame, vocab, layout, meta)``,
    ``frame`` a DataFrame (``doc_id``, ``term_ids`` global and ascending, ``counts``) with one row per tuple, or
    with ``separate`` one per tuple and language (id ``<tuple id>@<language>``: the languages' documents coupled
    only through the model, e.g. a prior tree); ``meta`` is corpus.json with ``documents`` counting those rows."""
    from pyspark.sql import functions as F

    require_corpus(directory)
    meta = storage.load_json(storage.join(directory, CORPUS_JSON))
    languages = list(languages or meta["languages"])
    unknown = [l for l in languages if l not in meta["languages"]]
    if unknown:
        raise UsageError(f"{directory} has no language(s) {', '.join(unknown)} (it has {', '.join(meta['languages'])})")
    vocab, layout = aligned_vocab(directory, languages)
    docs = None
    for i, (lang, offset) in enumerate(zip(languages, layout.offsets)):
        d = (read_parquet(spark, storage.join(storage.join_inside(directory, lang, "a language"), DOCS))
             .select(F.concat("doc_id", F.lit(f"@{lang}")).alias("doc_id") if separate else "doc_id",
                     F.lit(i).alias("lang_index"),
                     F.transform("term_ids", lambda t: t + F.lit(offset)).alias("term_ids"), "counts"))
        docs = d if docs is None else docs.unionByName(d)
    if separate:
        meta = dict(meta, documents=sum(int(meta.get("per_language", {}).get(l, {}).get("documents", 0))
                                        for l in languages) or int(meta["documents"]) * len(languages))
        return docs.select("doc_id", "term_ids", "counts"), vocab, layout, meta
    # one row per tuple; languages in layout order keep the term ids ascending
    tuples = (docs.groupBy("doc_id")
              .agg(F.array_sort(F.collect_list(F.struct("lang_index", "term_ids", "counts"))).alias("parts"))
              .select("doc_id", F.flatten(F.col("parts.term_ids")).alias("term_ids"),
                      F.flatten(F.col("parts.counts")).alias("counts")))
    return tuples, vocab, layout, meta


def load_aligned_corpus(spark, directory: str, num_partitions: int | None = None,
                        languages: list | None = None, separate: bool = False) -> Corpus:
    """CORPUS_DIR of aligned tuples -> Corpus whose blocks hold one document per tuple (global term ids), or per
    tuple and language with ``separate`` (:func:`aligned_documents`)."""
    tuples, vocab, layout, meta = aligned_documents(spark, directory, languages, separate)
    P = chosen_partitions(num_partitions, int(meta["documents"]), meta.get("tokens"))
    started = time.perf_counter()
    spark.sparkContext.setJobDescription(f"load aligned corpus {directory} into {P} blocks")
    with reading(directory):
        blocks = docs_to_blocks(tuples, P)
        largest_vocab = materialise_blocks(blocks)
    spark.sparkContext.setJobDescription(None)
    log.info("loaded %d aligned %s (%s) into %d blocks in %.1f s", meta["documents"],
             "documents" if separate else "tuples", ", ".join(layout.languages), P, time.perf_counter() - started)
    return Corpus(directory, meta, vocab, blocks, P, layout, largest_vocab)
