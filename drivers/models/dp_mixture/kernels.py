"""Kernels of the word-based Dirichlet-process mixture (:mod:`drivers.models.dp_mixture.model`, Wallach §4.5).

A document enters every formula through its bag of words: its distinct words and their counts
(:func:`document_bags`). With a cluster's word counts ``N_c`` (V,) and token total ``T_c``, the probability of a
document's words given the cluster, the Dirichlet-multinomial of (5.44) (the document's words added one by one
to the cluster's counts; the product does not depend on their order), is

    log DM(w_d | c) = sum_w [log Gamma(N_cw + n_dw + b) - log Gamma(N_cw + b)]
                      - [log Gamma(T_c + L_d + V b) - log Gamma(T_c + V b)]

(``b``: the per-word prior ``beta``; an empty cluster has N_c = 0, T_c = 0). :func:`dp_sweep` is the cluster step
(5.42)-(5.44) over a partition's documents; :func:`membership_log_weights` the same weights for documents that
stay where they are (outputs, held-out scoring, ``infer``); :func:`slice_sample` the thesis' multidimensional
slice sampler (Alg. 3.2) in log space (:mod:`inference.dm.slice`).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import gammaln

from inference.dm.slice import slice_sample as slice_sample      # Alg. 3.2, shared by every sampled concentration


def document_bags(token_ptr: np.ndarray, words: np.ndarray, vocab_size: int):
    """``(bag_ptr (D+1,), bag_words, bag_counts, lengths (D,))``: every document's distinct words (ascending) and
    their counts; document d owns entries bag_ptr[d]:bag_ptr[d+1]."""
    D = token_ptr.shape[0] - 1
    lengths = np.diff(token_ptr).astype(np.int64)
    doc = np.repeat(np.arange(D, dtype=np.int64), lengths)
    keys, counts = np.unique(doc * int(vocab_size) + words.astype(np.int64), return_counts=True)
    bag_ptr = np.searchsorted(keys // int(vocab_size), np.arange(D + 1, dtype=np.int64)).astype(np.int64)
    return bag_ptr, (keys % int(vocab_size)).astype(np.int64), counts.astype(np.int64), lengths


@numba.njit(inline="always", cache=True)
def _log_rising(n, c, b):
    """log Gamma(n + c + b) - log Gamma(n + b): a product of c terms, summed as logs while few."""
    if c <= 8:
        s = 0.0
        for i in range(c):
            s += math.log(n + b + i)
        return s
    return math.lgamma(n + c + b) - math.lgamma(n + b)


@numba.njit(cache=True)
def log_dm(counts, row, total, bag_words, bag_counts, lo, hi, length, b, vb):
    """log DM(w_d | c) of the document's bag entries lo:hi against row ``row`` of ``counts`` (C x V; row < 0: an
    empty cluster) with token total ``total``."""
    s = 0.0
    for j in range(lo, hi):
        n = counts[row, bag_words[j]] if row >= 0 else 0
        s += _log_rising(n, bag_counts[j], b)
    return s - (math.lgamma(total + length + vb) - math.lgamma(total + vb))


@numba.njit(cache=True)
def _remove(counts, totals, sizes, row, bag_words, bag_counts, lo, hi, length, sign):
    for j in range(lo, hi):
        counts[row, bag_words[j]] += sign * bag_counts[j]
    totals[row] += sign * length
    sizes[row] += sign


@numba.njit(cache=True)
def dp_sweep(bag_ptr, bag_words, bag_counts, lengths, rows, counts, totals, sizes, n_rows, founder, zeta, b,
             uniforms, start, max_clusters):
    """The cluster step (5.42)-(5.44) for documents ``start``.. in order, in place: document d leaves its cluster
    (row ``rows[d]``; -1: it has none yet, the sequential start), every cluster with documents is weighed
    N_c DM(w_d | c) and, while fewer than ``max_clusters`` clusters have documents, a new one zeta DM(w_d | empty);
    d joins the draw (``uniforms[d]``). A new cluster takes row ``n_rows`` (``founder[row] = d``). Returns
    ``(next document, rows used)``: the next document is -1 when all are done, else the document that found no
    free row for a new cluster (the caller grows ``counts``, ``totals``, ``sizes``, ``founder`` and calls again
    from it)."""
    D = bag_ptr.shape[0] - 1
    V = counts.shape[1]
    vb = V * b
    capacity = counts.shape[0]
    logw = np.empty(capacity + 1)
    log_zeta = math.log(zeta)
    live = 0
    for r in range(n_rows):
        if sizes[r] > 0:
            live += 1
    for d in range(start, D):
        if n_rows == capacity:
            return d, n_rows
        lo, hi, length = bag_ptr[d], bag_ptr[d + 1], lengths[d]
        if rows[d] >= 0:
            _remove(counts, totals, sizes, rows[d], bag_words, bag_counts, lo, hi, length, -1)
            if sizes[rows[d]] == 0:
                live -= 1
        best = -np.inf
        for r in range(n_rows):
            if sizes[r] > 0:
                logw[r] = math.log(sizes[r]) + log_dm(counts, r, totals[r], bag_words, bag_counts, lo, hi,
                                                      length, b, vb)
                if logw[r] > best:
                    best = logw[r]
        may_open = live < max_clusters
        if may_open:
            logw[n_rows] = log_zeta + log_dm(counts, -1, 0, bag_words, bag_counts, lo, hi, length, b, vb)
            if logw[n_rows] > best:
                best = logw[n_rows]
        total = 0.0
        for r in range(n_rows):
            if sizes[r] > 0:
                total += math.exp(logw[r] - best)
        if may_open:
            total += math.exp(logw[n_rows] - best)
        u = uniforms[d] * total
        chosen = n_rows
        acc = 0.0
        last = -1
        for r in range(n_rows):
            if sizes[r] > 0:
                last = r
                acc += math.exp(logw[r] - best)
                if u < acc:
                    chosen = r
                    break
        if chosen == n_rows and not may_open:   # rounding at the end of the cumulative sum
            chosen = last
        if chosen == n_rows:
            founder[n_rows] = d
            n_rows += 1
        if sizes[chosen] == 0:
            live += 1
        rows[d] = chosen
        _remove(counts, totals, sizes, chosen, bag_words, bag_counts, lo, hi, length, 1)
    return -1, n_rows


@numba.njit(cache=True)
def membership_log_weights(bag_ptr, bag_words, bag_counts, lengths, own, counts, totals, sizes, zeta, b):
    """(D, C + 1) log weights of every document's cluster (5.42): column c log N_c + log DM(w_d | c) with the
    document taken out of its own cluster first (``own[d]``: its row, -1 when it belongs to none), column C
    log zeta + log DM(w_d | empty); rows of no documents get -inf."""
    D = bag_ptr.shape[0] - 1
    C, V = counts.shape
    vb = V * b
    out = np.full((D, C + 1), -np.inf)
    for d in range(D):
        lo, hi, length = bag_ptr[d], bag_ptr[d + 1], lengths[d]
        r0 = own[d]
        if r0 >= 0:
            _remove(counts, totals, sizes, r0, bag_words, bag_counts, lo, hi, length, -1)
        for r in range(C):
            if sizes[r] > 0:
                out[d, r] = math.log(sizes[r]) + log_dm(counts, r, totals[r], bag_words, bag_counts, lo, hi,
                                                        length, b, vb)
        out[d, C] = math.log(zeta) + log_dm(counts, -1, 0, bag_words, bag_counts, lo, hi, length, b, vb)
        if r0 >= 0:
            _remove(counts, totals, sizes, r0, bag_words, bag_counts, lo, hi, length, 1)
    return out


def log_partition_prior(zeta: float, num_clusters: int, num_docs: int) -> float:
    """log P(c | zeta) up to the terms without zeta (5.29/5.30): C log zeta + log Gamma(zeta) - log Gamma(zeta + D)."""
    return num_clusters * math.log(zeta) + math.lgamma(zeta) - math.lgamma(zeta + num_docs)


def log_words_given_clusters(b: float, vocab_size: int, cell_values: np.ndarray, cell_counts: np.ndarray,
                             total_values: np.ndarray, total_counts: np.ndarray, num_clusters: int) -> float:
    """log P(w | c, b) of the clusters' Dirichlet-multinomials from the histograms of their nonzero word counts
    (value, how many cells) and of their token totals (thesis Alg. 2.3's histogram form of (2.7))."""
    vb = vocab_size * b
    return float(cell_counts @ (gammaln(cell_values + b) - gammaln(b))
                 + num_clusters * gammaln(vb) - total_counts @ gammaln(total_values + vb))
