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


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
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
        shift = 1.0 / x + 1.0 / (x + 1.0) + 1.0 / (x + 2.0) + 1.0 / (x + 3.0) + 1.0 / (x + 4.0) + 1.0 / (x + 5.0)
        y = x + 6.0
        r = 1.0 / y
        r2 = r * r
        out[k] = (math.log(y) - 0.5 * r
                  - r2 * ((1.0 / 12.0) - r2 * ((1.0 / 120.0) - r2 * ((1.0 / 252.0)
                          - r2 * ((1.0 / 240.0) - r2 * (1.0 / 132.0)))))
                  - shift - psi_total)
