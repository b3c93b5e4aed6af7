"""The topic-word counts M_{k,w}: a partition's counts over its local vocabulary, and what the global ones give.

The engine computes a block's distinct words and every token's index among
them once (:func:`local_vocabulary`); after each sweep :func:`count_local`
rebuilds the block's U x K counts from ``z`` in one pass. The result equals
:func:`topic_word_counts` (tested).
"""
from __future__ import annotations

import numba
import numpy as np
from scipy.special import gammaln


def topic_word_counts(block, z: np.ndarray, num_topics: int):
    """A block's contribution to M_{k,w} by a direct count: ``(vocab_ids (U,), counts (U, K) int64)``."""
    vocab_ids, local = np.unique(block.words, return_inverse=True)
    counts = np.zeros((vocab_ids.shape[0], num_topics), dtype=np.int64)
    np.add.at(counts, (local.ravel(), z), 1)
    return vocab_ids.astype(np.int32), counts


def local_vocabulary(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(vocab_ids (U,) int32 ascending, local (N,) int32)`` with ``vocab_ids[local] == words``; O(N + V),
    no sort."""
    if words.size == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    present = np.zeros(int(words.max()) + 1, dtype=bool)
    present[words] = True
    vocab_ids = np.flatnonzero(present).astype(np.int32)
    index = np.zeros(present.shape[0], dtype=np.int32)
    index[vocab_ids] = np.arange(vocab_ids.shape[0], dtype=np.int32)
    return vocab_ids, index[words]


@numba.njit(cache=True)
def count_local(local, z, num_local, num_topics):
    """(U, K) int32: tokens of local word u assigned to topic k."""
    counts = np.zeros((num_local, num_topics), dtype=np.int32)
    for i in range(local.shape[0]):
        counts[local[i], z[i]] += 1
    return counts


@numba.njit(cache=True)
def group_nonzeros(counts, row_ids, topics, flat):
    """The nonzero counts of columns ``topics`` of ``counts`` (U x K) in row-major order: fills ``flat`` (at
    least U x |topics| long) with ``row_ids[u] * |topics| + j`` and returns ``(flat[:n], values (n,) int32)``;
    what ``np.nonzero(counts[:, topics])`` gives, without the U x |topics| copy."""
    U, G = counts.shape[0], topics.shape[0]
    n = 0
    for u in range(U):
        for j in range(G):
            if counts[u, topics[j]] != 0:
                n += 1
    values = np.empty(n, dtype=np.int32)
    n = 0
    for u in range(U):
        base = row_ids[u] * G
        for j in range(G):
            c = counts[u, topics[j]]
            if c != 0:
                flat[n] = base + j
                values[n] = c
                n += 1
    return flat[:n], values


def topic_word_estimate(nwk: np.ndarray, nk: np.ndarray, beta: float) -> np.ndarray:
    """(K x V) posterior-mean phi_kw = (M_kw + beta) / (M_k + V beta) (thesis eq 5.7)."""
    V = nwk.shape[0]
    return ((nwk + beta) / (nk + V * beta)).T


def word_loglik(nwk: np.ndarray, nk: np.ndarray, beta: float) -> float:
    """log p(w | z, beta) = sum_k [log Gamma(V beta) - log Gamma(n_k + V beta) + sum_w log Gamma(n_kw + beta)
    - V log Gamma(beta)] (the Phi factor of eqs 4.2 and 5.2)."""
    V, K = nwk.shape
    histogram = np.bincount(nwk.ravel())          # cells holding each count: one log Gamma per distinct count
    counts = np.flatnonzero(histogram[1:]) + 1
    return float(K * gammaln(V * beta) - gammaln(nk + V * beta).sum()
                 + histogram[counts] @ gammaln(counts + beta) - (V * K - histogram[0]) * gammaln(beta))
