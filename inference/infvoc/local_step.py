"""The hybrid local step of the infinite-vocabulary model over a set of documents given as strings (thesis §7.3.2,
Algorithm 4 lines 1-5). Pure numpy/numba.

theta_d is integrated out and every token's topic is Gibbs-sampled from (7.2),
q(z_dn = k | z_-dn) ∝ (n_dk^-n + alpha_k) exp(word factor), the word factor being (7.3)/(7.4) as
:func:`inference.infvoc.stick.word_log_weights` computes it; ``burn_in`` sweeps, then ``samples`` kept sweeps whose
average is phi (the project's sampler, :func:`inference.hybrid.hybrid_documents`: sparse draws, a SplitMix64
stream per (seed, minibatch, document), so partitions and retries give the same samples).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inference.hybrid import document_seeds, hybrid_documents, sampling_weights
from inference.infvoc.doc_prior import posterior_statistics
from inference.infvoc.stick import word_log_weights
from inference.mapper import doc_topic_counts


@dataclass
class StringBlock:
    """Documents as CSR over a local vocabulary of strings (the infinite model's DocBlock)."""
    doc_ids: np.ndarray       # (D,) object
    indptr: np.ndarray        # (D+1,) int64
    local_terms: np.ndarray   # (nnz,) int32 index into ``terms``
    counts: np.ndarray        # (nnz,) float64
    terms: np.ndarray         # (U,) object: the block's distinct words, sorted

    @property
    def n_docs(self) -> int:
        return int(self.doc_ids.shape[0])

    @classmethod
    def from_documents(cls, documents) -> "StringBlock":
        """``documents``: iterable of (doc_id, list of tokens); documents sorted by id, words by string."""
        documents = sorted(((str(d), list(tokens)) for d, tokens in documents), key=lambda item: item[0])
        terms = np.array(sorted({w for _, tokens in documents for w in tokens}), dtype=object)
        lookup = {w: i for i, w in enumerate(terms)}
        indptr, local, counts = [0], [], []
        for _, tokens in documents:
            ids, n = np.unique(np.fromiter((lookup[w] for w in tokens), dtype=np.int64, count=len(tokens)),
                               return_counts=True)
            local.extend(ids.tolist())
            counts.extend(n.tolist())
            indptr.append(len(local))
        return cls(np.array([d for d, _ in documents], dtype=object), np.array(indptr, dtype=np.int64),
                   np.array(local, dtype=np.int32), np.array(counts, dtype=np.float64), terms)


def sample_block(block: StringBlock, topic_sets, log_base: np.ndarray, alpha: np.ndarray, seed: int,
                 minibatch: int, burn_in: int, samples: int, with_base: bool = True, alpha_statistics: bool = False):
    """``(phi sums (U, K) of the block's words, document-topic counts of the last sample (D, K))``, and with
    ``alpha_statistics`` a third, (D, K): each document's mean_s [Psi(alpha_k + n^(s)_dk)] - Psi(A + N_d) over the
    kept samples (the kernel's ``average_digammas``; :mod:`inference.infvoc.doc_prior`). Those are sampled one
    document at a time (each document's draws depend on its own seed alone: the same samples), so the driver can
    sum them in document order and any partitioning of the documents gives the same sum to the bit."""
    K = len(topic_sets)
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    if block.n_docs == 0 or block.terms.shape[0] == 0:
        empty = np.zeros((block.terms.shape[0], K)), np.zeros((block.n_docs, K))
        return (*empty, np.tile(posterior_statistics(np.zeros((1, 1, K)), alpha), (block.n_docs, 1))) \
            if alpha_statistics else empty
    log_weights = word_log_weights(block.terms, topic_sets, log_base, with_base)
    weights = sampling_weights(np.exp(log_weights - log_weights.max(axis=1, keepdims=True)))
    z = np.zeros(int(block.counts.sum()), dtype=np.int32)
    seeds = document_seeds(block.doc_ids, seed, minibatch)
    if not alpha_statistics:
        sstats, _, _, _ = hybrid_documents(block.indptr, block.local_terms, block.counts, z, weights, alpha,
                                           int(burn_in), int(samples), seeds, True, False)
        return np.asarray(sstats, dtype=np.float64), doc_topic_counts(block, z, K)
    sstats = np.zeros((block.terms.shape[0], K))
    per_document = np.zeros((block.n_docs, K))
    first_token = 0
    for d in range(block.n_docs):
        lo, hi = int(block.indptr[d]), int(block.indptr[d + 1])
        tokens = int(block.counts[lo:hi].sum())
        part, stats, _, _ = hybrid_documents(np.array([0, hi - lo], dtype=np.int64), block.local_terms[lo:hi],
                                             block.counts[lo:hi], z[first_token:first_token + tokens], weights,
                                             alpha, int(burn_in), int(samples), seeds[d:d + 1], True, False, True)
        sstats += part                  # kept-sample counts: integers, exact in any order
        per_document[d] = stats
        first_token += tokens
    return sstats, doc_topic_counts(block, z, K), per_document
