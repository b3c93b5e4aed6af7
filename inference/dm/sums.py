"""Sums over count histograms, by the recurrences of thesis §2.3.5 and §2.6 (extract §1.6, §1.9).

Every estimator needs, for a parameter z and a histogram C(n) (one item's, or the group lengths'), one of

    digamma differences  z sum_n C(n) [Psi(n + z) - Psi(z)]       = sum_n C(n) sum_{f=1}^n z / (f - 1 + z)   (2.57)
    trigamma differences   sum_n C(n) [Psi'(n + z) - Psi'(z)]     = -sum_n C(n) sum_{f=1}^n 1 / (f - 1 + z)^2
    log-gamma differences  sum_n C(n) [lnGamma(n + z) - lnGamma(z)] = sum_n C(n) sum_{f=1}^n log(f - 1 + z) (2.78)

The inner sums are running sums over n (2.59, 2.80): one new term per n, no special function ("Exact"). Where two
successive distinct counts are :data:`JUMP` or more apart (counts of thousands), the running sum jumps with the
closed form instead (one digamma, trigamma or lgamma), so the cost per item is at most JUMP times its number of
distinct counts, whatever the counts. The digamma sum is kept multiplied by z (each term z / (f - 1 + z) <= 1), so it
stays finite as z -> 0, where it tends to sum_n C(n).

A histogram set is CSR: group j owns ``n[ptr[j]:ptr[j+1]]`` (ascending) and their frequencies ``c``; ``z[j]`` is
its parameter. The kernels return one sum per group. The same kernels read one entry per context (frequency 1,
unaggregated): the estimators as the thesis timed Minka's and MacKay & Peto's methods (``estimate_contexts``).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.special import digamma, trigamma

#: a gap between successive counts from which the running sum jumps by the closed form
JUMP = 32

DIGAMMA, TRIGAMMA, LOGGAMMA = 0, 1, 2


@numba.njit(cache=True)
def _term(kind, f, z):
    x = f - 1.0 + z
    if kind == DIGAMMA:
        return z / x
    if kind == TRIGAMMA:
        return -1.0 / (x * x)
    return math.log(x)


@numba.njit(cache=True)
def _at(kind, z):
    """The closed form's value at z: Psi(z), Psi'(z) or lnGamma(z)."""
    if kind == DIGAMMA:
        return digamma(z)
    if kind == TRIGAMMA:
        return trigamma(z)
    return math.lgamma(z)


@numba.njit(cache=True)
def _closed(kind, n, z, at_z):
    """The running sum up to n in closed form (``at_z``: :func:`_at` of z)."""
    if kind == DIGAMMA:
        return z * (digamma(n + z) - at_z)
    if kind == TRIGAMMA:
        return trigamma(n + z) - at_z
    return math.lgamma(n + z) - at_z


@numba.njit(cache=True)
def recurrence_sums(kind, ptr, n, c, z, jump):
    """(J,) per group j: sum_i c_i * sum_{f=1}^{n_i} term(f, z_j) over its entries. ``jump`` > 0: the running sum,
    jumping by the closed form over gaps of ``jump`` or more; ``jump`` = 0: the closed form at every entry (one
    special function per entry, in any order: Minka's fixed point (2.13), (2.54)); ``jump`` < 0: the running sum
    only. Otherwise a group's entries must be in ascending order."""
    J = ptr.shape[0] - 1
    out = np.zeros(J)
    for j in range(J):
        zj = z[j]
        at_z = _at(kind, zj) if jump >= 0 else 0.0
        run = 0.0
        prev = 0
        total = 0.0
        for i in range(ptr[j], ptr[j + 1]):
            m = n[i]
            if jump == 0 or (jump > 0 and m - prev >= jump):
                run = _closed(kind, m, zj, at_z)
            else:
                for f in range(prev + 1, m + 1):
                    run += _term(kind, f, zj)
            prev = m
            total += c[i] * run
        out[j] = total
    return out


APPROXIMATE, LEAVE_ONE_OUT = 0, 1


@numba.njit(cache=True)
def entry_sums(kind, ptr, n, c, z):
    """(J,) per group j, z_j sum_n C_j(n) t(n, z_j), one term per entry, with t the approximation of the digamma
    difference 1/z + log((n + z - 1/2) / (z + 1/2)) (2.60, as the "Apprx." update (2.61) uses it) or the
    leave-one-out term n / (n - 1 + z) (2.28)."""
    J = ptr.shape[0] - 1
    out = np.zeros(J)
    for j in range(J):
        zj = z[j]
        total = 0.0
        for i in range(ptr[j], ptr[j + 1]):
            if kind == APPROXIMATE:
                total += c[i] * (1.0 + zj * math.log((n[i] + zj - 0.5) / (zj + 0.5)))
            else:
                total += c[i] * (n[i] * zj / (n[i] - 1.0 + zj))
        out[j] = total
    return out


@numba.njit(cache=True)
def mackay_peto_statistics(ptr, n, c, reuse):
    """(V, G, H) per group: V = sum_n C(n) (2.41), G = sum_n C(n) sum_{f=2}^n 1/(f-1) (2.46) and
    H = sum_n C(n) sum_{f=2}^n 1/(f-1)^2 (2.47); the same as summing N_fk, the groups with f or more
    observations, over f (2.62-2.65). They depend on the data only: computed once. ``reuse``: the inner sums
    run on from one count to the next (histograms, "MP+H"); otherwise every entry sums from f = 2 (MacKay & Peto
    without histograms, one entry per context)."""
    J = ptr.shape[0] - 1
    V = np.zeros(J)
    G = np.zeros(J)
    H = np.zeros(J)
    for j in range(J):
        g = 0.0
        h = 0.0
        prev = 1
        for i in range(ptr[j], ptr[j + 1]):
            if not reuse:
                g = 0.0
                h = 0.0
                prev = 1
            for f in range(prev + 1, n[i] + 1):
                g += 1.0 / (f - 1.0)
                h += 1.0 / ((f - 1.0) * (f - 1.0))
            prev = max(prev, n[i])
            V[j] += c[i]
            G[j] += c[i] * g
            H[j] += c[i] * h
    return V, G, H


@numba.njit(cache=True)
def mackay_peto_k(lengths, freqs, alpha):
    """K(alpha) = sum_n C_.(n) [log((n + alpha) / alpha) + n / (2 alpha (n + alpha))] (2.36-2.37)."""
    total = 0.0
    for i in range(lengths.shape[0]):
        m = lengths[i]
        total += freqs[i] * (math.log((m + alpha) / alpha) + m / (2.0 * alpha * (m + alpha)))
    return total
