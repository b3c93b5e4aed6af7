"""Slice sampling of positive hyperparameters (thesis Alg. 3.2; Neal 2003), for concentrations of hierarchical
priors given their log density (extract §2.6, pitfall 17: in log space, with the Jacobian)."""
from __future__ import annotations

import math

import numpy as np


def slice_sample(log_density, x: np.ndarray, rng: np.random.Generator, widths: np.ndarray,
                 iterations: int) -> np.ndarray:
    """Multidimensional slice sampling (Alg. 3.2, Neal 2003): ``iterations`` draws, each under a level
    log u' = log P*(x) + log Uniform(0, 1), from a hyper-rectangle of ``widths`` placed at random around x and
    shrunk towards x on every rejection; returns the last."""
    x = np.asarray(x, dtype=np.float64).copy()
    for _ in range(int(iterations)):
        level = log_density(x) + math.log(rng.random())
        left = x - rng.random(x.shape[0]) * widths
        right = left + widths
        while True:
            proposal = left + rng.random(x.shape[0]) * (right - left)
            if log_density(proposal) > level:
                x = proposal
                break
            below = proposal < x
            left = np.where(below, proposal, left)
            right = np.where(below, right, proposal)
    return x


def sample_concentrations(log_density, values, rng: np.random.Generator, widths=1.0,
                          iterations: int = 5) -> np.ndarray:
    """Positive ``values`` (e.g. concentrations beta, beta_0, alpha) after ``iterations`` slice-sampling draws
    from ``log_density`` (of the values themselves, up to a constant): sampled as l = log(value), whose density is
    P*(e^l) e^l, in a hyper-rectangle of ``widths`` in log space (the thesis gives none: 1, a factor e, by
    default). The thesis alternates 5 such iterations with every Gibbs sweep (§6.1, 7)."""
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if not (np.all(values > 0) and np.all(np.isfinite(values))):
        raise ValueError("concentrations must be positive and finite")
    widths = np.broadcast_to(np.asarray(widths, dtype=np.float64), values.shape)

    def log_density_of_logs(logs):
        v = np.exp(logs)
        if not np.all(np.isfinite(v)) or np.any(v <= 0):
            return -math.inf
        return float(log_density(v)) + float(logs.sum())

    return np.exp(slice_sample(log_density_of_logs, np.log(values), rng, widths, iterations))
