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


@pytest.mark.parametrize("a", [0.0, 0.3])
@pytest.mark.parametrize("layout", ["seqlda", "adatm"])
def test_chain_concentration_sampler_targets_the_marginal_posterior(a, layout):
    """q ~ Beta then b | q (Gamma for a = 0, slice sampling of (6.12) for a > 0) leaves
    p(b | tables) ∝ (1/b) prod_j (b|a)_{T_j} Gamma(b) / Gamma(b + C_j) invariant (T_j: tables of restaurant j,
    C_j: its words plus the tables sent up by j+1): moments match a grid. SeqLDA: every table is sent up;
    AdaTM: only the t* tables (the s* go to the document)."""
    from scipy.special import gammaln

    from inference.gibbs.model import SegmentedBlock
    from inference.gibbs.pdp import sample_chain_concentrations

    block = SegmentedBlock.from_segments([("x", [[0] * 6, [0] * 9, [0] * 3, [0] * 12])])
    t = np.array([[4, 1], [3, 2], [1, 1], [3, 3]], dtype=np.int32)
    s = np.array([[0, 0], [2, 0], [0, 1], [1, 0]], dtype=np.int32) if layout == "adatm" else np.zeros_like(t)
    if layout == "adatm":
        t[0] = 0                                   # the first segment sends every table to the document
        s[0] = [4, 1]
    tables = t + s
    T = tables.sum(1)
    C = np.diff(block.seg_ptr) + np.append(t.sum(1)[1:], 0)
    grid = np.linspace(1e-3, 60, 60000)
    lp = -np.log(grid) + sum(np.array([sum(math.log(b + i * a) for i in range(Tj)) for b in grid]) for Tj in T) \
        + sum(gammaln(grid) - gammaln(grid + c) for c in C)
    w = np.exp(lp - lp.max())
    w /= w.sum()
    mean, sd = np.sum(w * grid), math.sqrt(np.sum(w * grid ** 2) - np.sum(w * grid) ** 2)
    bdoc = np.array([1.0])
    draws = np.empty(20000)
    for it in range(draws.shape[0]):
        sample_chain_concentrations(block.doc_ptr, block.seg_ptr, tables, t, bdoc, a, it)
        draws[it] = bdoc[0]
    draws = draws[500:]
    assert np.mean(draws) == pytest.approx(mean, rel=0.05)
    assert np.std(draws) == pytest.approx(sd, rel=0.08)

