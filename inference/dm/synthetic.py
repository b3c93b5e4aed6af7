"""Data drawn from a Dirichlet-multinomial with known alpha m (thesis §2.4.1): the tests' and the benchmark's."""
from __future__ import annotations

import numpy as np


def draw_counts(rng: np.random.Generator, alpha_m, lengths) -> np.ndarray:
    """(D, K) int64 counts: group d draws theta_d ~ Dir(alpha m) (2.2), then ``lengths[d]`` observations from it."""
    alpha_m = np.asarray(alpha_m, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    theta = rng.dirichlet(alpha_m, size=lengths.shape[0])
    theta = np.nan_to_num(theta, nan=0.0)
    empty = theta.sum(axis=1) <= 0                   # every component underflowed (tiny alpha m): one item takes all
    theta[empty, rng.choice(alpha_m.shape[0], size=int(empty.sum()), p=alpha_m / alpha_m.sum())] = 1.0
    theta /= theta.sum(axis=1, keepdims=True)
    return rng.multinomial(lengths, theta).astype(np.int64)


def draw_base_measure(rng: np.random.Generator, num_items: int) -> np.ndarray:
    """m ~ Dir(1.0 u) with u uniform: the base measure of the chapter's synthetic data, fixed per K (§2.4.1)."""
    return rng.dirichlet(np.ones(num_items))
