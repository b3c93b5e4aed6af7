"""The files of a prepared corpus directory: written by ``spark-topics prepare``, read by every job."""
from __future__ import annotations

import hashlib
import json

from inference.errors import DamagedError, UsageError

DOCS = "docs.parquet"          # doc_id, term_ids, counts, n_tokens, n_oov
VOCAB = "vocab.parquet"        # term, id (0..V-1), df, cf
REJECTS = "rejects"            # JSON lines: id, reason, source, raw
CORPUS_JSON = "corpus.json"    # counts and options (the corpus is complete once _SUCCESS is written, last)
SEGMENTS = "segments.parquet"  # with --segments: doc_id, segments, segment_index
ORDERED = "ordered.parquet"    # with --ordered (no --segments): the same columns, one segment per document
STOPWORDS = "stopwords.txt"    # the stop words removed, one per line (the language's list and --stopwords)
#: with a vocabulary built (not given): term, df of the terms cut for df > --max-df, df descending then term; a
#: model trained on the corpus keeps them and no refresh adds them as new words (issue 30)
FREQUENT_TERMS = "frequent_terms.parquet"
OUTPUTS = (DOCS, VOCAB, REJECTS, CORPUS_JSON, SEGMENTS, ORDERED, STOPWORDS, FREQUENT_TERMS)
#: where the rejects of a run that left no document go when the output already holds a corpus
FAILED_REJECTS = "rejects.failed-run"
#: an aligned corpus (``prepare --lang-column``): its held-out part and the split it is prepared from
ALIGNED_OUTPUTS = ("heldout", "_split", "_split_heldout")
#: the hidden sibling an older ``prepare`` wrote into (``.NAME.prepare-<hex>``): a leftover of a killed run
LEGACY_STAGING = (".prepare-",)

#: ``--language`` value that uses no shipped stop-word list
NO_STOPWORDS = "none"

#: the reject reasons ``prepare`` writes
REJECT_REASONS = ("malformed", "invalid_encoding", "duplicate_id", "empty")
#: columns of ``rejects/`` (all strings)
REJECT_COLUMNS = ("id", "reason", "source", "raw")


def is_corpus_file(name: str) -> bool:
    """Whether a top-level name of a corpus directory is written by ``prepare`` (not the user's): a corpus
    written before markers lists no files (:mod:`drivers.store.publish`)."""
    return name in OUTPUTS or name == FAILED_REJECTS or name in ALIGNED_OUTPUTS


def looks_like_corpus(directory: str) -> bool:
    """``directory`` holds a corpus, complete or not (its ``corpus.json``, marker, documents or vocabulary)."""
    from drivers import storage
    from drivers.store import publish

    return any(storage.exists(storage.join(directory, name)) for name in (CORPUS_JSON, publish.MARKER, DOCS, VOCAB))


def require_corpus(directory: str) -> None:
    """Refuse in one line a corpus that is not completely written: one published whole (``_SUCCESS``,
    :mod:`drivers.store.publish`) is checked against its manifest (files and sizes) and gets back the user's files a
    killed ``prepare`` left beside it; one written before markers (``corpus.json`` last) is read as it is."""
    from drivers import storage
    from drivers.store import publish

    if storage.exists(storage.join(directory, publish.MARKER)):
        publish.require_complete(directory, check_hashes=False)
        publish.give_back(directory, is_corpus_file)
    elif not storage.exists(storage.join(directory, CORPUS_JSON)):
        found = [name for name in (DOCS, VOCAB) if storage.exists(storage.join(directory, name))]
        if found:
            raise DamagedError(f"{directory} is not a complete corpus: it has {', '.join(found)} but no {CORPUS_JSON} "
                               f"(a prepare was interrupted); prepare it again")
        raise UsageError(f"{directory} is not a prepared corpus (no {CORPUS_JSON}); run `spark-topics prepare` first")


def rejects_schema():
    """The Spark schema of ``rejects/``."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(name, T.StringType()) for name in REJECT_COLUMNS])


def keeps_text_order(corpus_meta: dict) -> bool:
    """Whether the corpus keeps every document's tokens in text order (``prepare --ordered``: corpus.json's
    ``ordered.file``)."""
    return bool((corpus_meta.get("ordered") or {}).get("file"))


def data_version(corpus_meta: dict) -> str:
    """Content hash of the corpus manifest: changes whenever the prepared corpus does."""
    return hashlib.sha256(json.dumps(corpus_meta, sort_keys=True).encode()).hexdigest()[:16]
