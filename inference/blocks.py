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
        """Tokens per document, N_d = sum_v w_dv (0 for an empty document)."""
        return np.diff(np.concatenate([[0.0], np.cumsum(self.counts)])[self.indptr])

    def global_terms(self) -> np.ndarray:
        """Global vocabulary id of every nonzero entry."""
        return self.vocab_ids[self.local_terms]

    @classmethod
    def from_csr(cls, doc_ids, indptr, terms, counts) -> "DocBlock":
        """Build from documents in CSR form (global term ids); documents are sorted by id.

        Sorting makes the block independent of the order Spark delivered the rows in,
        so the same corpus gives the same block on any cluster.
        """
        doc_ids = np.asarray(doc_ids, dtype=object)
        indptr = np.asarray(indptr, dtype=np.int64)
        order = np.argsort(doc_ids, kind="stable")
        lengths = np.diff(indptr)[order]
        new_indptr = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(lengths, out=new_indptr[1:])
        # gather every document's entries in the new order, without a Python loop over documents
        take = np.repeat(indptr[:-1][order] - new_indptr[:-1], lengths) + np.arange(new_indptr[-1])
        terms = np.asarray(terms, dtype=np.int64)[take]
        counts = np.asarray(counts, dtype=np.float64)[take]
        vocab_ids, local = np.unique(terms, return_inverse=True)
        return cls(doc_ids=doc_ids[order], indptr=new_indptr, local_terms=local.astype(np.int32).ravel(),
                   counts=counts, vocab_ids=vocab_ids.astype(np.int32))

    @classmethod
    def from_documents(cls, docs) -> "DocBlock":
        """Build from an iterable of ``(doc_id, term_ids, counts)`` (small inputs and tests)."""
        docs = list(docs)
        indptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum([len(d[1]) for d in docs], out=indptr[1:])
        terms = np.concatenate([np.asarray(d[1], dtype=np.int64) for d in docs] or [np.zeros(0, np.int64)])
        counts = np.concatenate([np.asarray(d[2], dtype=np.float64) for d in docs] or [np.zeros(0)])
        return cls.from_csr([d[0] for d in docs], indptr, terms, counts)

    @classmethod
    def from_arrow(cls, table) -> "DocBlock":
        """Build from an Arrow table with ``doc_id``, ``term_ids`` (list<int>), ``counts`` (list<int>)."""
        import pyarrow as pa

        table = table.combine_chunks()
        ids = table.column("term_ids").combine_chunks() if table.num_rows else pa.array([], pa.list_(pa.int32()))
        cts = table.column("counts").combine_chunks() if table.num_rows else pa.array([], pa.list_(pa.int32()))
        if table.num_rows and ids.offsets.equals(cts.offsets) is False:
            raise ValueError("term_ids and counts differ in length for some document")
        offsets = ids.offsets.to_numpy() if table.num_rows else np.zeros(1, dtype=np.int64)
        return cls.from_csr(table.column("doc_id").to_pylist(), offsets - offsets[0],
                            ids.flatten().to_numpy(), cts.flatten().to_numpy())
