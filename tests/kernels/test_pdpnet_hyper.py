"""The network's hyperparameter steps (issue 28, 2; :mod:`inference.pdpnet.engine_stats`, the Gibbs engine's driver
steps and the in-process sampler's) leave their target conditionals invariant: b by auxiliary variables (Gamma
when every a = 0, a slice step on the summed histograms otherwise), a by a slice step on the histograms; KS tests
of long chains against the numerically integrated target."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from inference.gibbs.pdp import log_stirling_table
from inference.pdpnet import engine_stats


def sample_concentration(b, avec, T, C, seed):
    """The b step as the in-process sampler and the engine take it: q_j ~ Beta(b, C_j), then Gamma (every a = 0)
    or the slice step on the (a_j, T_j) histogram."""
    rng = np.random.default_rng(seed)
    sum_log = float(-np.log(np.maximum(rng.beta(b, C), 1e-300)).sum())
    if not avec.any():
        return min(max(rng.gamma(T.sum(), 1.0 / sum_log), 1e-3), 1e6)
    avals, p = np.unique(avec, return_inverse=True)
    keys, counts = np.unique(engine_stats.hist_keys(1, p, np.zeros_like(p), T, np.zeros_like(T)), return_counts=True)
    return engine_stats.sample_concentration(b, 0, keys, counts[:, None], avals, sum_log, rng)


def sample_discount(a, c, t, bvec, Tvec, rng):
    """The a step on the histograms of the cells (c, t) and of the vectors' (b_q, T_j)."""
    q = np.arange(len(bvec))
    keys = np.concatenate([engine_stats.hist_keys(0, np.zeros_like(c), np.zeros_like(c), c, t),
                           engine_stats.hist_keys(1, np.zeros_like(q), q, Tvec, np.zeros_like(q))])
    keys, counts = np.unique(keys, return_counts=True)
    return engine_stats.sample_discount(a, keys, counts[:, None], 0, bvec, rng)


def _log_poch(b, a, T):
    return sum(math.log(b + m * a) for m in range(T))


def _ks_against_grid(samples, grid, logf):
    dens = np.exp(logf - logf.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]
    return stats.kstest(samples, lambda x: np.interp(x, grid, cdf)).pvalue


@pytest.mark.parametrize("avec", [np.zeros(4), np.array([0.0, 0.3, 0.3, 0.6])])
def test_concentration_chain_targets_its_conditional(avec):
    """b's chain (q_j ~ Beta(b, C_j), then b | q) has the stationary law (1/b) prod_j (b|a_j)_{T_j} Gamma(b) /
    Gamma(b + C_j); KS p > 1e-3 on 4,000 draws (every 5th of 20,000), and the wrong target (no 1/b) is rejected."""
    T = np.array([3, 1, 5, 2], np.int64)
    C = np.array([10, 4, 30, 6], np.int64)
    b, draws = 1.0, []
    for it in range(20000):
        b = sample_concentration(b, avec, T, C, 1000 + it)
        if it % 5 == 0:
            draws.append(b)
    x = np.log(np.array(draws))
    grid = np.linspace(-8, 8, 4001)
    bs = np.exp(grid)

    def logf(prior_power):
        return np.array([sum(_log_poch(bb, a, t) + gammaln(bb) - gammaln(bb + c) for a, t, c in zip(avec, T, C))
                         + prior_power * math.log(bb) for bb in bs]) + grid   # density of log b
    assert _ks_against_grid(x, grid, logf(-1.0)) > 1e-3
    assert _ks_against_grid(x, grid, logf(0.0)) < 1e-6


def test_discount_chain_targets_its_conditional():
    """a's slice sampler has the stationary law prod_j (b_j|a)_{T_j} prod S^{c}_{t,a} on [0, 1) (uniform prior)."""
    c = np.array([5, 3, 8, 2, 6])
    t = np.array([2, 1, 4, 1, 3])
    bvec, Tvec = np.array([1.5, 0.7]), np.array([5, 6])
    rng = np.random.default_rng(7)
    a, draws = 0.5, []
    for it in range(6000):
        a = sample_discount(a, c, t, bvec, Tvec, rng)
        if it % 3 == 0:
            draws.append(a)
    grid = np.linspace(0.0, 0.999, 1000)
    logf = np.array([log_stirling_table(g, 9, 9)[c, t].sum() + sum(_log_poch(b, g, T) for b, T in zip(bvec, Tvec))
                     for g in grid])
    assert _ks_against_grid(np.array(draws), grid, logf) > 1e-3
    assert _ks_against_grid(np.array(draws), grid, np.zeros_like(grid)) < 1e-6
