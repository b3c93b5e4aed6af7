"""The E-step's word factor kept finite: log word weights in, each word's weights scaled by their maximum out.

The E-step weighs topic k for word w by W_kw = exp(E_q[log beta_kw]) (LDA), a sum over the word's tree paths
(eq 5.5), or a mean (the hybrid step, eq 5.6). With tiny Dirichlet parameters these underflow: a tree edge with
prior 1e-4 has E_q[log pi] near -1e4, whose exp is 0 in double precision, for every topic. Only the ratios of a
word's weights across topics shape phi, so the engine passes **log** weights and the kernels take

    W'_kw = exp(log W_kw - c_w),   c_w = max_k log W_kw,

whose largest entry is 1 for every word. phi is unchanged; the ELBO's likelihood term sum_n log phinorm_n
(and the hybrid step's sum_n log W) moves by sum_n c_{w_n}, which :func:`document_offsets` gives back.
A word with no finite weight in any topic gets c_w = 0 (its weights stay 0, as before).
"""
from __future__ import annotations

import numpy as np


def scale_by_word_maximum(log_weights: np.ndarray, topic_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``(W', c)``: exp(log W - c) with c the maximum over ``topic_axis`` (1 for a (U, K) block, 0 for a (K, V)
    matrix), and c per word."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    if log_weights.size == 0:
        return np.zeros(log_weights.shape), np.zeros(log_weights.shape[1 - topic_axis])
    scale = log_weights.max(axis=topic_axis)
    scale[~np.isfinite(scale)] = 0.0
    shaped = scale[:, None] if topic_axis == 1 else scale[None, :]
    return np.ascontiguousarray(np.exp(log_weights - shaped)), scale


def document_offsets(indptr: np.ndarray, local_terms: np.ndarray, counts: np.ndarray,
                     local_scale: np.ndarray) -> np.ndarray:
    """(D,) sum over each document's tokens of c_w (``local_scale`` by local term id): what scaling the weights
    took off the document's log-likelihood terms."""
    per_entry = np.asarray(counts, dtype=np.float64) * np.asarray(local_scale)[local_terms]
    doc_of_entry = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return np.bincount(doc_of_entry, weights=per_entry, minlength=len(indptr) - 1)


def check_finite(values: np.ndarray, what: str, name_of=lambda i: f"entry {i}") -> None:
    """Raise ``FloatingPointError``: ``what`` of ``name_of(first non-finite index)`` is its value (a 1-D array)."""
    values = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.argmax(bad))
        raise FloatingPointError(f"{what} of {name_of(i)} is {values[i]} ({int(bad.sum())} non-finite values)")
