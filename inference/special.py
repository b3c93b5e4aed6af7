"""Special functions compiled with numba (scipy.special is not callable from nopython code).

``digamma`` follows Bernardo's algorithm AS 103 (recurrence up to x >= 6, then
the asymptotic series), as scikit-learn's ``_online_lda_fast.psi`` does; it is
tested against :func:`scipy.special.digamma`.
"""
from __future__ import annotations

import math

import numba
import numpy as np

EULER = 0.577215664901532860606512090082402431


@numba.njit(cache=True, nogil=True, error_model="numpy")
def digamma(x: float) -> float:
    """Psi(x) = d/dx log Gamma(x) for x > 0."""
    if x <= 1e-6:
        return -EULER - 1.0 / x
    result = 0.0
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    r = 1.0 / x
    result += math.log(x) - 0.5 * r
    r = r * r
    result -= r * ((1.0 / 12.0) - r * ((1.0 / 120.0) - r * ((1.0 / 252.0)
                  - r * ((1.0 / 240.0) - r * (1.0 / 132.0)))))
    return result


@numba.njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _psi_minus_log_shifted(x: float) -> float:
    """Psi(x) - log(x + 6): AS 103's recurrence unrolled to six steps plus its asymptotic series at x + 6.

    No calls and no branches, so a loop of it over an array vectorises (divisions included).
    """
    shift = 1.0 / x + 1.0 / (x + 1.0) + 1.0 / (x + 2.0) + 1.0 / (x + 3.0) + 1.0 / (x + 4.0) + 1.0 / (x + 5.0)
    r = 1.0 / (x + 6.0)
    r2 = r * r
    return (-0.5 * r - r2 * ((1.0 / 12.0) - r2 * ((1.0 / 120.0) - r2 * ((1.0 / 252.0)
            - r2 * ((1.0 / 240.0) - r2 * (1.0 / 132.0)))))
            - shift)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def exp_digamma(x: np.ndarray, scratch: np.ndarray, out: np.ndarray) -> None:
    """out_k = exp(Psi(x_k)) for x_k > 0, as (x_k + 6) exp(Psi(x_k) - log(x_k + 6)).

    The E-step's inner passes only need exp(E[log theta]) up to a common factor
    (the gamma update is invariant to it), so they use this instead of
    :func:`dirichlet_expectation_1d` followed by exp: one vectorised loop and one
    exp per component, no log, no digamma of the sum.
    """
    for k in range(x.shape[0]):
        scratch[k] = _psi_minus_log_shifted(x[k])
    for k in range(x.shape[0]):
        out[k] = (x[k] + 6.0) * math.exp(scratch[k])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def dirichlet_expectation_1d(alpha: np.ndarray, out: np.ndarray) -> None:
    """out_k = E_Dir(alpha)[log x_k] = Psi(alpha_k) - Psi(sum alpha).

    The per-component digamma is the AS 103 scheme with the recurrence unrolled
    to a fixed six steps, Psi(x) = Psi(x + 6) - sum_{i<6} 1/(x + i), so the loop
    over topics has no branches; this is the E-step's hottest call.

    No kernel uses ``fastmath``: reassociation lets LLVM pick a summation order
    that depends on inlining decisions, and a cached kernel then gives other bits
    than a freshly compiled one (e.g. on executors importing a --py-files zip).
    """
    total = 0.0
    for k in range(alpha.shape[0]):
        total += alpha[k]
    psi_total = digamma(total)
    for k in range(alpha.shape[0]):
        x = alpha[k]
        out[k] = math.log(x + 6.0) + _psi_minus_log_shifted(x) - psi_total


@numba.njit(cache=True, nogil=True, error_model="numpy")
def trigamma(x):
    """Psi'(x) for x > 0: recurrence to x >= 10, then the asymptotic series (error < 1e-12)."""
    r = 0.0
    while x < 10.0:
        r += 1.0 / (x * x)
        x += 1.0
    x2 = 1.0 / (x * x)
    return r + 1.0 / x + x2 / 2.0 + (1.0 / x) * x2 * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0)))
