"""Distances between discrete distributions (rows of topic-word or topic-proportion matrices). Pure numpy."""
from __future__ import annotations

import numpy as np


def hellinger(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hellinger distance H(p, q) = sqrt(1 - sum_k sqrt(p_k q_k)) between rows (broadcast), in [0, 1]."""
    bc = np.sum(np.sqrt(np.asarray(p) * np.asarray(q)), axis=-1)
    return np.sqrt(np.clip(1.0 - bc, 0.0, None))


def hellinger_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """H(a_i, b_j) for every pair of rows, as one matrix product (1/2 sum (sqrt a - sqrt b)^2 = 1 - sum sqrt(a b)
    for distributions)."""
    sq = 1.0 - np.sqrt(a) @ np.sqrt(b).T
    return np.sqrt(np.clip(sq, 0.0, None))


def matched_hellinger(true_phi: np.ndarray, est_phi: np.ndarray):
    """Best one-to-one matching of estimated to true topics (Hungarian on Hellinger distance).

    Returns ``(distances per true topic (K,), permutation perm with est_phi[perm[k]] ~ true_phi[k])``.
    """
    from scipy.optimize import linear_sum_assignment

    cost = hellinger(true_phi[:, None, :], est_phi[None, :, :])
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(true_phi.shape[0], dtype=np.int64)
    perm[rows] = cols
    return cost[rows, cols][np.argsort(rows)], perm
