"""Generalised Stirling numbers and Pochhammer symbols (inference/gibbs/pdp.py) against exact arithmetic."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from gibbs_helpers import exact_log, exact_stirling
from inference.gibbs.pdp import (StirlingTable, log_poch, log_poch_incr, log_stirling, log_stirling_ratio,
                                 log_stirling_ratio_new_table, log_stirling_table, stirling_table)


def test_unsigned_stirling_first_kind_a0():
    L = log_stirling_table(0.0, 6, 6)
    assert np.array_equal(np.round(np.exp(L[5])), [0, 24, 50, 35, 10, 1])
    assert np.exp(L[0, 0]) == 1.0 and np.all(L[0, 1:] == -np.inf)


@pytest.mark.parametrize("a", [Fraction(0), Fraction(1, 2), Fraction(3, 10), Fraction(9, 10)])
def test_against_exact_recursion(a):
    n_max = 60
    S = exact_stirling(n_max, a)
    L = log_stirling_table(float(a), n_max + 1, n_max + 1)
    for n in range(n_max + 1):
        for m in range(n_max + 1):
            if m > n or (m == 0 and n > 0):
                assert L[n, m] == -np.inf, (n, m)
            else:
                assert S[n][m] > 0
                assert L[n, m] == pytest.approx(exact_log(S[n][m]), rel=1e-12, abs=1e-12), (n, m)


def test_closed_forms():
    for a in (0.0, 0.25, 0.7):
        L = log_stirling_table(a, 40, 40)
        for n in range(1, 40):
            assert L[n, n] == pytest.approx(0.0, abs=1e-12)                       # S^N_N = 1
            assert L[n, 1] == pytest.approx(math.lgamma(n - a) - math.lgamma(1 - a), rel=1e-12, abs=1e-12)


def test_large_values_finite():
    L = log_stirling_table(0.5, 3001, 200)
    assert np.all(np.isfinite(L[3000, 1:200]))
    # S^N_1 = Gamma(N - a) / Gamma(1 - a) even where S itself overflows a double
    assert L[3000, 1] == pytest.approx(math.lgamma(3000 - 0.5) - math.lgamma(0.5), rel=1e-12)


@pytest.mark.parametrize("a", [0.0, 0.2])
def test_growth_equals_big_table(a):
    big = log_stirling_table(a, 300, 120)
    t = StirlingTable(a, rows=5, cols=3)
    for n_max, m_max in [(10, 2), (10, 40), (150, 7), (299, 119)]:
        t.ensure(n_max, m_max)
        r, c = n_max + 1, m_max + 1
        assert t.rows >= r and t.cols >= c
        np.testing.assert_array_equal(t.log[:r, :c], big[:r, :c])
    np.testing.assert_array_equal(t.log[:300, :120], big)
    with np.errstate(invalid="ignore"):
        expected = np.exp(big[1:, :] - big[:-1, :])
    expected[~np.isfinite(big[:-1])] = 0.0
    np.testing.assert_array_equal(t.ratio[:299, :120], expected)
    np.testing.assert_array_equal(t.cratio[:300, :120], StirlingTable(a, 300, 120).cratio)


def test_column_ratio():
    S = exact_stirling(25, Fraction(1, 4))
    t = StirlingTable(0.25, 26, 26)
    for n in range(26):
        for m in range(26):
            if 2 <= m <= n:
                assert t.cratio[n, m] == pytest.approx(float(S[n][m] / S[n][m - 1]), rel=1e-12)
            else:
                assert t.cratio[n, m] == 0.0


def test_lookup_raises_outside_table():
    L = log_stirling_table(0.1, 20, 8)
    assert log_stirling(L, 19, 7) == L[19, 7]
    assert log_stirling(L, 3, 5) == -np.inf            # M > N is a true zero
    with pytest.raises(IndexError):
        log_stirling(L, 20, 3)
    with pytest.raises(IndexError):
        log_stirling(L, 15, 9)
    with pytest.raises(IndexError):
        log_stirling_ratio(L, 19, 2)                    # needs row 20


def test_ratios():
    a = 0.3
    S = exact_stirling(30, Fraction(3, 10))
    L = stirling_table(a).ensure(40, 40).log
    assert stirling_table(a) is stirling_table(0.3)
    for n in range(1, 30):
        for m in range(1, n + 1):
            assert log_stirling_ratio(L, n, m) == pytest.approx(exact_log(S[n + 1][m] / S[n][m]), abs=1e-11)
            assert log_stirling_ratio_new_table(L, n, m) == pytest.approx(
                exact_log(S[n + 1][m + 1] / S[n][m]), abs=1e-11)


@pytest.mark.parametrize("a", [0.0, 1e-9, 0.25, 0.8])
def test_pochhammer(a):
    for b in (0.01, 1.0, 7.5, 300.0):
        for T in (0, 1, 2, 17, 64, 65, 500):
            exact = sum(math.log(b + t * a) for t in range(T))
            assert log_poch_incr(b, a, T) == pytest.approx(exact, rel=1e-11, abs=1e-11)
        for N in (0, 1, 5, 1000):
            assert log_poch(b, N) == pytest.approx(sum(math.log(b + t) for t in range(N)), rel=1e-11, abs=1e-11)
