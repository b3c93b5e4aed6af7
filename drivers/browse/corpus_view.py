"""What the browser reads from a model's training corpus, with pyarrow on the driver (no Spark): document lengths,
snippets of chosen documents, and the document co-occurrence counts of the topics' top words (NPMI coherence).

A corpus is read batch by batch and only in the columns asked for, so its size is bounded by the disk, not the
memory. A corpus that has moved or was deleted leaves the page without lengths, snippets and coherence (a warning
says so); the model alone still gives every other part."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from drivers import storage
from drivers.corpora.files import DOCS, ORDERED, SEGMENTS

log = logging.getLogger("spark_topics.browse")

#: words shown of a document without its text
SNIPPET_WORDS = 30
#: a text column ``prepare`` may keep in ``docs.parquet`` (shown as the snippet when present)
TEXT_COLUMNS = ("text",)


def _dataset(path: str):
    import pyarrow.dataset as ds

    filesystem, p = storage.resolve(path)
    return ds.dataset(p, filesystem=filesystem, format="parquet")


def corpus_directory(meta: dict, language: str | None = None) -> str | None:
    """The training corpus named in ``model.json`` (a language's sub-corpus for an aligned one), when it is still
    there; None (and a warning) otherwise."""
    corpus = (meta.get("data") or {}).get("corpus")
    if not corpus:
        return None
    if language:
        corpus = storage.join(corpus, language)
    if not storage.exists(storage.join(corpus, DOCS)):
        log.warning("the training corpus %s is not there: the page has no snippets, document lengths or coherence",
                    corpus)
        return None
    return corpus


def document_lengths(corpus: str) -> pd.Series:
    """Tokens per document (``n_tokens``), indexed by ``doc_id``."""
    table = _dataset(storage.join(corpus, DOCS)).to_table(columns=["doc_id", "n_tokens"])
    frame = table.to_pandas()
    return frame.groupby("doc_id")["n_tokens"].sum()


def snippets(corpus: str, doc_ids: list, terms: np.ndarray, n_words: int = SNIPPET_WORDS) -> dict:
    """``doc_id -> text``: the document's kept text when the corpus has a text column; else its first ``n_words``
    words in text order (a segmented or ordered corpus); else its words by count, most frequent first (a bag of
    words has no order), marked with a leading ``[bag]``."""
    import pyarrow.dataset as ds

    if not doc_ids:
        return {}
    wanted = ds.field("doc_id").isin(list(doc_ids))
    docs = _dataset(storage.join(corpus, DOCS))
    text = next((c for c in TEXT_COLUMNS if c in docs.schema.names), None)
    if text is not None:
        frame = docs.to_table(filter=wanted, columns=["doc_id", text]).to_pandas()
        return {d: _shorten(str(t)) for d, t in zip(frame["doc_id"], frame[text])}
    for name in (SEGMENTS, ORDERED):
        path = storage.join(corpus, name)
        if storage.exists(path):
            frame = _dataset(path).to_table(filter=wanted, columns=["doc_id", "segments"]).to_pandas()
            out = {}
            for doc_id, segments in zip(frame["doc_id"], frame["segments"]):
                ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in segments]) if len(segments) else \
                    np.empty(0, dtype=np.int64)
                words = " ".join(terms[ids[:n_words]])
                out[doc_id] = words + (" ..." if len(ids) > n_words else "")
            return out
    frame = docs.to_table(filter=wanted, columns=["doc_id", "term_ids", "counts"]).to_pandas()
    out = {}
    for doc_id, ids, counts in zip(frame["doc_id"], frame["term_ids"], frame["counts"]):
        order = np.argsort(-np.asarray(counts), kind="stable")[:n_words]
        ids = np.asarray(ids, dtype=np.int64)[order]
        out[doc_id] = "[bag] " + " ".join(terms[ids])
    return out


def _shorten(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def cooccurrence(corpus: str, word_ids: np.ndarray, batch_rows: int = 65536) -> tuple[np.ndarray, int]:
    """Documents containing each pair of ``word_ids`` (W x W, the diagonal: each word's document frequency) over
    every document of the corpus, and the number of documents: X'X of the documents' 0/1 indicators of those
    words, batch by batch (scipy sparse)."""
    from scipy import sparse

    word_ids = np.asarray(word_ids, dtype=np.int64)
    lookup = np.full(int(word_ids.max()) + 2 if len(word_ids) else 1, -1, dtype=np.int64)
    lookup[word_ids] = np.arange(len(word_ids))
    counts = np.zeros((len(word_ids), len(word_ids)), dtype=np.int64)
    n_docs = 0
    for batch in _dataset(storage.join(corpus, DOCS)).to_batches(columns=["term_ids"], batch_size=batch_rows):
        ids = batch.column(0)
        n_docs += len(ids)
        flat = np.asarray(ids.flatten().to_numpy(zero_copy_only=False), dtype=np.int64)
        offsets = np.asarray(ids.offsets.to_numpy(), dtype=np.int64)
        rows = np.repeat(np.arange(len(ids)), np.diff(offsets))
        flat = np.where(flat < len(lookup) - 1, flat, len(lookup) - 1)
        cols = lookup[flat]
        keep = cols >= 0
        x = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=np.int64), (rows[keep], cols[keep])),
                              shape=(len(ids), len(word_ids)))
        x.data[:] = 1                      # a word counted once per document (duplicates summed by csr)
        counts += (x.T @ x).toarray()
    return counts, n_docs


def npmi_per_topic(top_words: np.ndarray, corpus: str) -> list[float]:
    """Document-level NPMI of each topic's top words (rows of model word ids) over the corpus: the mean over pairs
    of :func:`inference.heldout.npmi`, as ``evaluate`` scores it."""
    from inference.heldout import npmi

    top_words = np.asarray(top_words, dtype=np.int64)
    word_ids = np.unique(top_words)
    counts, n_docs = cooccurrence(corpus, word_ids)
    if n_docs == 0:
        return [float("nan")] * len(top_words)
    index = np.searchsorted(word_ids, top_words)
    df = np.diag(counts)
    i, j = np.triu_indices(top_words.shape[1], k=1)
    return [float(np.mean(npmi(counts[row[i], row[j]], df[row[i]], df[row[j]], n_docs))) if len(i) else float("nan")
            for row in index]
