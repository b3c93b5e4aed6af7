"""The thesis' density of the cluster-based topic model's concentrations (Wallach §5.3.2; extract §2.6, §4.3):
the sequential evidence of the current cluster and topic assignments.

The thesis slice-samples the hyperparameters under the evidence P(w | U) at the current assignments, i.e.
P(w | z, U) P(z | c, U) P(c | U) (5.14)/(5.28), where P(z | c, U) (5.16) is the product over every token, in
corpus order, of the predictive (5.7) with the counts of the tokens before it (built from zero under the path
assumption, exactly as the sampler keeps them):

    log P(z | c) = sum_n log(N_t|d + alpha q_c(t)) - sum_d sum_{i < N_d} log(i + alpha),
    q_c(t) = (M_ct + alpha1 b(t)) / (M_c + alpha1),   b(t) = (K_t + alpha0 / T) / (K + alpha0),

N, M, K the counts before token n. Only this factor depends on alpha, alpha1, alpha0. A token whose topic its
document already has contributes log(N_t|d + alpha q), not log N_t|d: the sequential evidence sums both routes
of the predictive, which the probability of the seating the minimal path imputes (one table per distinct topic)
does not, and which pulls alpha up. The author variant's P(a | c) (5.59) is the same kind of product of (5.55).

The order: the partitions' documents in partition order, each block's in its (sorted) order, tokens in the
stored order. Each partition sends its documents' clusters, topics and authors as its ``partition_stats``
(:func:`pack`), the engine hands the driver the list (``stats_by_partition``), and the driver makes one pass
(:func:`topic_arrivals`, :func:`author_arrivals`) that records every token's counts before it; the density of a
value is then a sum over the tokens' count tuples (:class:`SequentialEvidence`). Cost: the partitions' topics
travel to the driver once per synchronisation (8 bytes a token); the pass and every density evaluation are
linear in the tokens (267,000 tokens: 0.02 CPU s and 4 ms).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import gammaln

from drivers.models.cluster_lda.kernels import path_add, seat_add

_SPLIT = 1 << 26        # cluster ids (< 2^61) travel as two floats, each exact below 2^53


def pack(cluster: np.ndarray, token_ptr: np.ndarray, z: np.ndarray, author_ptr: np.ndarray,
         author_ids: np.ndarray) -> np.ndarray:
    """A partition's documents as one float vector: [D, N, A, cluster ids (high, low), lengths, topics, author
    counts, author ids]."""
    cluster = np.asarray(cluster, np.int64)
    return np.concatenate([[cluster.shape[0], z.shape[0], author_ids.shape[0]], cluster // _SPLIT,
                           cluster % _SPLIT, np.diff(token_ptr), z, np.diff(author_ptr), author_ids]
                          ).astype(np.float64)


def unpack(parts) -> tuple:
    """The partitions' packed vectors (in partition order) as one corpus: ``(cluster rows (D,) 0..C-1, token_ptr,
    z, author_ptr, author_ids)`` (rows: the distinct cluster ids in ascending order)."""
    ids, lengths, zs, author_lengths, authors = [], [], [], [], []
    for vector in parts:
        v = np.asarray(vector)
        if v.shape[0] == 0:
            continue
        D, N, A = (int(x) for x in v[:3])
        pos = 3
        chunks = []
        for size in (D, D, D, N, D, A):
            chunks.append(v[pos:pos + size].astype(np.int64))
            pos += size
        if pos != v.shape[0]:
            raise ValueError(f"a partition's documents: {v.shape[0]} values, expected {pos}")
        high, low, lens, z, alens, a = chunks
        ids.append(high * _SPLIT + low)
        lengths.append(lens), zs.append(z), author_lengths.append(alens), authors.append(a)
    if not ids:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(1, np.int64), empty, np.zeros(1, np.int64), empty
    _, rows = np.unique(np.concatenate(ids), return_inverse=True)
    token_ptr = np.r_[0, np.cumsum(np.concatenate(lengths))].astype(np.int64)
    author_ptr = np.r_[0, np.cumsum(np.concatenate(author_lengths))].astype(np.int64)
    return rows.ravel().astype(np.int64), token_ptr, np.concatenate(zs), author_ptr, np.concatenate(authors)


@numba.njit(cache=True)
def topic_arrivals(token_ptr, z, rows, num_rows, num_topics, maximal):
    """Every token's counts before it, documents and tokens in order from empty counts: (N, 4) int64 rows
    [N_t|d, M_ct, M_c, K_t], and (N,) K."""
    N = z.shape[0]
    out = np.empty((N, 4), np.int64)
    total = np.empty(N, np.int64)
    ctk = np.zeros((num_rows, num_topics), np.int64)
    ck = np.zeros(num_rows, np.int64)
    kt = np.zeros(num_topics, np.int64)
    ktot = np.zeros(1, np.int64)
    ndk = np.zeros(num_topics, np.int64)
    for d in range(token_ptr.shape[0] - 1):
        c = rows[d]
        for i in range(token_ptr[d], token_ptr[d + 1]):
            t = z[i]
            out[i, 0], out[i, 1], out[i, 2], out[i, 3] = ndk[t], ctk[c, t], ck[c], kt[t]
            total[i] = ktot[0]
            path_add(c, t, ndk, ctk, ck, kt, ktot, maximal)
        for i in range(token_ptr[d], token_ptr[d + 1]):
            ndk[z[i]] = 0
    return out, total


@numba.njit(cache=True)
def author_arrivals(author_ptr, author_ids, rows, num_rows, num_authors, maximal):
    """Every author token's counts before it (5.55)-(5.57), documents in order: (NA, 4) int64 rows [N_a|c, N_c,
    N_a, N]."""
    out = np.empty((author_ids.shape[0], 4), np.int64)
    cat = np.zeros((num_rows, num_authors), np.int64)
    ca = np.zeros(num_rows, np.int64)
    ka = np.zeros(num_authors, np.int64)
    katot = np.zeros(1, np.int64)
    for d in range(author_ptr.shape[0] - 1):
        c = rows[d]
        for j in range(author_ptr[d], author_ptr[d + 1]):
            a = author_ids[j]
            out[j, 0], out[j, 1], out[j, 2], out[j, 3] = cat[c, a], ca[c], ka[a], katot[0]
            seat_add(c, a, cat, ca, ka, katot, maximal)
    return out


@numba.njit(cache=True)
def _log_topic_terms(tuples, counts, alpha, alpha1, alpha0, num_topics):
    s = 0.0
    for r in range(tuples.shape[0]):
        b = (tuples[r, 3] + alpha0 / num_topics) / (tuples[r, 4] + alpha0)
        q = (tuples[r, 1] + alpha1 * b) / (tuples[r, 2] + alpha1)
        s += counts[r] * math.log(tuples[r, 0] + alpha * q)
    return s


@numba.njit(cache=True)
def _log_author_terms(tuples, counts, eta1, eta0, num_authors):
    s = 0.0
    for r in range(tuples.shape[0]):
        base = (tuples[r, 2] + eta0 / num_authors) / (tuples[r, 3] + eta0)
        s += counts[r] * math.log((tuples[r, 0] + eta1 * base) / (tuples[r, 1] + eta1))
    return s


def _each(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tuples and their multiplicities (one each: a sort for np.unique costs more than the sums it saves)."""
    return np.ascontiguousarray(rows), np.ones(rows.shape[0])


class SequentialEvidence:
    """log P(z | c, alpha, alpha1, alpha0) (5.16) and log P(a | c, eta1, eta0) (5.59) of one state, as functions of
    the concentrations (one pass over the corpus when made, then a sum over the tokens' count tuples)."""

    def __init__(self, parts, num_topics: int, num_authors: int, maximal: bool):
        rows, token_ptr, z, author_ptr, author_ids = unpack(parts)
        num_rows = int(rows.max()) + 1 if rows.shape[0] else 1
        self.num_topics, self.num_authors = int(num_topics), int(num_authors)
        before, total = topic_arrivals(token_ptr, z.astype(np.int64), rows, num_rows, self.num_topics, maximal)
        self.topic_tuples, self.topic_counts = _each(np.hstack([before, total[:, None]]))
        self.lengths, self.length_counts = np.unique(np.diff(token_ptr), return_counts=True)
        self.tokens = int(z.shape[0])
        self.author_tuples, self.author_counts = _each(
            author_arrivals(author_ptr, author_ids, rows, num_rows, max(self.num_authors, 1), maximal))

    def log_topics(self, alpha: float, alpha1: float, alpha0: float) -> float:
        """log P(z | c) (5.16) at these concentrations."""
        normaliser = float(self.length_counts @ (gammaln(alpha + self.lengths) - gammaln(alpha)))
        return _log_topic_terms(self.topic_tuples, self.topic_counts, float(alpha), float(alpha1), float(alpha0),
                                self.num_topics) - normaliser

    def log_authors(self, eta1: float, eta0: float) -> float:
        """log P(a | c) (5.59) at these concentrations."""
        return _log_author_terms(self.author_tuples, self.author_counts, float(eta1), float(eta0),
                                 max(self.num_authors, 1))
