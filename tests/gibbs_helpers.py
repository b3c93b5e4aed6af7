"""Reference computations shared by the Gibbs model tests (STM, SeqLDA, PDP): exact Stirling numbers, stationary
total variation."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def exact_stirling(n_max, a):
    """S^N_{M,a} for N <= n_max, M <= n_max + 1 by the recursion (3.4) in exact arithmetic (a an int or Fraction)."""
    S = [[Fraction(0)] * (n_max + 2) for _ in range(n_max + 1)]
    S[0][0] = Fraction(1)
    for n in range(n_max):
        for m in range(1, n + 2):
            S[n + 1][m] = S[n][m - 1] + (n - m * a) * S[n][m]
    return S


def exact_log(x: Fraction) -> float:
    """log of a positive Fraction without float overflow."""
    return math.log(x.numerator) - math.log(x.denominator)


def exact_log_stirling(n_max, a: Fraction):
    """(n_max + 2) x (n_max + 2) array of log S^N_{M,a} from the exact recursion (3.4) (-inf where S = 0)."""
    S = exact_stirling(n_max + 1, a)
    out = np.full((n_max + 2, n_max + 2), -np.inf)
    for n in range(n_max + 2):
        for m in range(n_max + 2):
            if S[n][m] > 0:
                out[n, m] = exact_log(S[n][m])
    return out


def stationary_tvs(index, p, counts, n_tokens):
    """(z-marginal TV, joint TV) between visit ``counts`` and the exact posterior ``p`` over the states of ``index``
    (keys: the n_tokens topics, then the table counts)."""
    _, inv = np.unique(np.array([hash(k[:n_tokens]) for k in index]), return_inverse=True)
    emp = counts / counts.sum()
    return 0.5 * np.abs(np.bincount(inv, weights=p) - np.bincount(inv, weights=emp)).sum(), 0.5 * np.abs(p - emp).sum()
