"""DocBlock: the documents of one partition in compressed sparse row form.

A block is the unit the variational mapper and the Gibbs samplers work on: all
documents of a Spark partition, with term ids remapped to a *local* vocabulary
(the distinct terms of the block), so per-partition sufficient statistics are
``U x K`` (U = distinct terms in the block), never dense ``V x K``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class DocBlock:
    doc_ids: np.ndarray        # (D,) object array of str, sorted
    indptr: np.ndarray         # (D+1,) int64: document d owns entries indptr[d]:indptr[d+1]
    local_terms: np.ndarray    # (nnz,) int32 index into ``vocab_ids``
    counts: np.ndarray         # (nnz,) float64 term counts
    vocab_ids: np.ndarray      # (U,) int32 global vocabulary id of each local term, ascending

    @property
    def n_docs(self) -> int:
        return int(self.doc_ids.shape[0])

    @property
    def n_tokens(self) -> float:
        return float(self.counts.sum())

    def doc_lengths(self) -> np.ndarray:
        return np.add.reduceat(self.counts, self.indptr[:-1]) if self.n_docs and self.counts.size \
            else np.zeros(self.n_docs)

    def global_terms(self) -> np.ndarray:
        """Global vocabulary id of every nonzero entry."""
        return self.vocab_ids[self.local_terms]

    @classmethod
    def from_documents(cls, docs) -> "DocBlock":
        """Build from an iterable of ``(doc_id, term_ids, counts)``; documents are sorted by id.

        Sorting makes the block independent of the order Spark delivered the rows in,
        so the same corpus gives the same block on any cluster.
        """
        docs = sorted(docs, key=lambda d: d[0])
        doc_ids = np.array([d[0] for d in docs], dtype=object)
        lengths = np.array([len(d[1]) for d in docs], dtype=np.int64)
        indptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        if len(docs):
            terms = np.concatenate([np.asarray(d[1], dtype=np.int64) for d in docs])
            counts = np.concatenate([np.asarray(d[2], dtype=np.float64) for d in docs])
        else:
            terms = np.zeros(0, dtype=np.int64)
            counts = np.zeros(0, dtype=np.float64)
        vocab_ids, local = np.unique(terms, return_inverse=True)
        return cls(doc_ids=doc_ids, indptr=indptr, local_terms=local.astype(np.int32).ravel(),
                   counts=counts, vocab_ids=vocab_ids.astype(np.int32))
