"""Pieces shared by the structured Gibbs models (STM, SeqLDA, AdaTM): numba helpers, hyperparameter parsing, sizes.

Kernel helpers (all ``@numba.njit(cache=True)``; the small per-token ones ``inline="always"``), and
:data:`token_kernel`, the decorator of the models' own per-token helpers:

* :func:`random_segment_topics`: uniform random topics for one segment's tokens (thesis §11.1), counted into
  the segment's topic counts and ``nwk``/``nk``;
* :func:`move_word`: add or remove one token of topic k in the topic-word counts M_{k,w} and keep
  1 / (M_k + V beta) current; :func:`word_factor` reads (M_kw + beta) / (M_k + V beta) through it;
* :func:`customers`: the customers n_jk + t_j+1,k of restaurant j on a segment chain (SeqLDA (6.3),
  AdaTM (7.2)), whose next restaurant's tables are its proxy customers (initialisation and estimates);
* :func:`draw_cumulative`, :func:`draw_linear`, :func:`draw_log`: one draw from unnormalised weights
  (:func:`draw_scan`, their inlined scan, for per-token loops that should not pay a call);
* :func:`rescale_weights`: the overflow guard of the table-count conditionals ((5.4), (6.7)) kept as running
  products of neighbour ratios;
* :func:`max_doc_segments`: the largest number of segments in a document.

Python side: :func:`parse_hyper` / :func:`check_cmgs_hyper` (the ``initial_hyper`` overrides of the collapsed
multiplicity samplers), :func:`check_pdp`, :func:`positive_vector`, :func:`frozen_args`, :func:`longest_span`,
:func:`dirichlet_mean` (the posterior mean of a document's topic proportions from its table counts).

Every helper performs the same floating-point operations in the same order as the code it replaced and draws
the same random numbers, so sampling results are bit-identical for a given seed.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.constraints import StrOptions
from inference.options import ModelOption

BIG = 1e250  # rescaling threshold of the running products in the table-count conditionals

# The models' per-token helpers are compiled without numba's reference-counting runtime (``_nrt=False``: they
# allocate nothing, and the incref/decref pair numba otherwise puts around every array argument of a call or an
# inlined helper cost more than a token's arithmetic) and inlined by LLVM (``forceinline``). They and the kernels
# that call them use the "numpy" error model: no zero-division branch on every float division (same arithmetic
# and results).
token_kernel = numba.njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)


# ----------------------------------------------------------------------------------------------------------------
# kernel helpers

@numba.njit(inline="always", cache=True)
def word_factor(nwk, inv, w, k, beta, frozen_phi, frozen):
    """(M_kw + beta) / (M_k + V beta) with inv[k] = 1 / (M_k + V beta) kept by the sweep (the value of
    :func:`inference.gibbs.model.word_weight` without a division), or phi_kw when the topics are frozen."""
    if frozen:
        return frozen_phi[w, k]
    return (nwk[w, k] + beta) * inv[k]


@numba.njit(cache=True)
def inverse_topic_totals(nk, vbeta):
    """(K,) 1 / (M_k + V beta), the array :func:`word_factor` and :func:`move_word` keep current."""
    K = nk.shape[0]
    inv = np.empty(K)
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + vbeta)
    return inv


@numba.njit(inline="always", cache=True)
def move_word(nwk, nk, inv, w, k, delta, vbeta, frozen):
    """M_kw += delta, M_k += delta and inv[k] = 1 / (M_k + V beta); nothing when the topics are frozen."""
    if not frozen:
        nwk[w, k] += delta
        nk[k] += delta
        inv[k] = 1.0 / (nk[k] + vbeta)


@numba.njit(inline="always", cache=True)
def random_segment_topics(i0, i1, words, K, z, n_s, nwk, nk):
    """z ~ Uniform{0..K-1} for tokens i0..i1-1 of one segment (thesis §11.1), counted into ``n_s`` (the
    segment's K topic counts) and ``nwk``/``nk``."""
    for i in range(i0, i1):
        k = np.random.randint(0, K)
        z[i] = k
        n_s[k] += 1
        nwk[words[i], k] += 1
        nk[k] += 1


@numba.njit(inline="always", cache=True)
def customers(n, t, j, k, end):
    """n_jk + t_j+1,k: restaurant j's own customers of topic k plus the tables of the next restaurant of its chain
    (its proxy customers); ``end`` is one past the chain's last restaurant. Used outside the per-token kernels:
    inside them (SeqLDA's weights, removal and table steps) the same three lines written out measured 5-50% faster
    per sweep than this helper, so they stay written out there."""
    c = n[j, k]
    if j + 1 < end:
        c += t[j + 1, k]
    return c


@numba.njit(inline="always", cache=True)
def draw_scan(wt, lo, hi, total):
    """One draw from p(v) ∝ wt[v], v in [lo, hi], with ``total`` = sum of those weights (one uniform draw,
    also when lo == hi)."""
    u = np.random.random() * total
    acc = 0.0
    for v in range(lo, hi):
        acc += wt[v]
        if u < acc:
            return v
    return hi


@numba.njit(cache=True)
def draw_cumulative(p, total, K):
    """One topic from p(k) ∝ p[k], k < K, with ``total`` = sum_k p[k] (always one uniform draw)."""
    return draw_scan(p, 0, K - 1, total)


@numba.njit(cache=True)
def draw_linear(wt, lo, hi, total):
    """One draw from p(v) ∝ wt[v], v in [lo, hi], with ``total`` = sum of those weights (no draw when lo == hi)."""
    if lo == hi:
        return lo
    return draw_scan(wt, lo, hi, total)


@numba.njit(cache=True)
def draw_log(lw, lo, hi):
    """One draw from p(v) ∝ exp(lw[v]), v in [lo, hi] (``lw`` is overwritten by the weights)."""
    if lo == hi:
        return lo
    m = lw[lo]
    for v in range(lo + 1, hi + 1):
        if lw[v] > m:
            m = lw[v]
    total = 0.0
    for v in range(lo, hi + 1):
        lw[v] = math.exp(lw[v] - m)
        total += lw[v]
    return draw_scan(lw, lo, hi, total)


@numba.njit(cache=True)
def rescale_weights(wt, lo, v, total, x):
    """Overflow guard of a running product of weights wt[lo..v-1] (sum ``total``) about to take ``x`` as wt[v],
    called when x > BIG: everything is divided by BIG. Returns (total, x). (The test stays in the caller's loop,
    so the common path has no call.)"""
    for u in range(lo, v):
        wt[u] /= BIG
    return total / BIG, x / BIG


@numba.njit(cache=True)
def max_doc_segments(doc_ptr):
    """The largest number of segments in a document (at least 1)."""
    jmax = 1
    for d in range(doc_ptr.shape[0] - 1):
        jmax = max(jmax, doc_ptr[d + 1] - doc_ptr[d])
    return jmax


# ----------------------------------------------------------------------------------------------------------------
# Python side: hyperparameters, sizes, estimates

def positive_vector(value, K, name) -> list:
    """``value`` (a number or K numbers) as K positive floats."""
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (K,)).copy()
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be a positive number or {K} positive numbers")
    return arr.tolist()


def check_pdp(a: float, b: float) -> None:
    """PDP(a, b) parameters of the segment restaurants: 0 <= a < 1, b > 0."""
    if not 0.0 <= a < 1.0:
        raise ValueError(f"discount a must be in [0, 1), got {a}")
    if not (np.isfinite(b) and b > 0):
        raise ValueError(f"concentration b must be > 0, got {b}")


def parse_hyper(overrides: dict, spec) -> dict:
    """``initial_hyper`` of a collapsed multiplicity sampler: ``spec`` is ``(key, default, convert)`` in output
    order; overrides that are ``None`` take the default, unknown keys (engine-level extras) pass through
    untouched after ``cycles = 0``."""
    o = {k: v for k, v in overrides.items() if v is not None}
    hyper = {key: convert(o.pop(key, default)) for key, default, convert in spec}
    hyper["cycles"] = 0
    hyper.update(o)
    return hyper


#: how the table counts of stm's and seqlda's Pitman-Yor nodes are sampled (their ``--sampler``)
TABLE_SAMPLERS = ("cmgs", "exact")
TABLE_SAMPLER = ModelOption(
    "sampler", "how table counts are sampled: cmgs (default: the collapsed multiplicity sampler of Du's thesis, "
    "fast; it pulls the concentration b down) or exact (tables removed one at a time up the chain: slower, "
    "invariant; README: seqlda.json)", str, metavar="cmgs|exact", constraint=StrOptions(TABLE_SAMPLERS))


def check_cmgs_hyper(hyper: dict) -> None:
    """beta > 0, PDP(a, b) valid, m_max >= 1, sampler "cmgs" or "exact"."""
    if not (np.isfinite(hyper["beta"]) and hyper["beta"] > 0):
        raise ValueError(f"beta must be > 0, got {hyper['beta']}")
    check_pdp(hyper["a"], hyper["b"])
    if hyper["m_max"] < 1:
        raise ValueError("m_max must be >= 1")
    if hyper["sampler"] not in TABLE_SAMPLERS:
        raise ValueError(f"sampler must be 'cmgs' or 'exact', got {hyper['sampler']!r}")


def frozen_args(frozen_phi, dummy=None):
    """(phi, frozen) for a kernel: the frozen V x K topics as contiguous float64, or a 1 x 1 placeholder."""
    if frozen_phi is not None:
        return np.ascontiguousarray(frozen_phi, dtype=np.float64), True
    return (np.zeros((1, 1)) if dummy is None else dummy), False


def longest_span(ptr: np.ndarray, empty: int = 1) -> int:
    """max_i ptr[i+1] - ptr[i] (e.g. the longest segment from ``seg_ptr``), ``empty`` when there is none."""
    lengths = np.diff(ptr)
    return int(lengths.max()) if lengths.size else empty


def dirichlet_mean(counts: np.ndarray, alpha) -> np.ndarray:
    """Row-wise posterior mean (alpha_k + c_ik) / sum_k (alpha_k + c_ik) ((5.5), (6.8): c = table counts)."""
    theta = counts + np.asarray(alpha, dtype=np.float64)
    return theta / theta.sum(axis=1, keepdims=True)
