"""Driver hyperparameter updates against scipy.optimize on the same objective."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, special

from inference.dirichlet import (alpha_gradient, alpha_objective, eta_objective, newton_alpha,
                            newton_direction, newton_eta)


def make_alpha_stats(true_alpha, n_docs, seed):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(true_alpha, size=n_docs)
    return np.log(np.clip(theta, 1e-300, None)).sum(axis=0)


@pytest.mark.parametrize("true_alpha", [np.array([0.1, 0.5, 2.0, 0.05]), np.full(6, 0.3)])
def test_newton_alpha_matches_scipy(true_alpha):
    stats = make_alpha_stats(true_alpha, 2000, seed=1)
    ours = newton_alpha(np.full(true_alpha.size, 1.0), stats, 2000)
    res = optimize.minimize(lambda la: -alpha_objective(np.exp(la), stats, 2000), np.zeros(true_alpha.size),
                            jac=lambda la: -alpha_gradient(np.exp(la), stats, 2000) * np.exp(la),
                            method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    np.testing.assert_allclose(ours, np.exp(res.x), rtol=1e-5)
    assert alpha_objective(ours, stats, 2000) >= -res.fun - 1e-8
    np.testing.assert_allclose(alpha_gradient(ours, stats, 2000), 0, atol=1e-6)


def test_gradient_matches_finite_differences():
    stats = make_alpha_stats(np.array([0.2, 0.7, 1.5]), 50, seed=2)
    a = np.array([0.3, 0.9, 1.1])
    approx = optimize.approx_fprime(a, lambda x: alpha_objective(x, stats, 50), 1e-7)
    np.testing.assert_allclose(alpha_gradient(a, stats, 50), approx, rtol=1e-5)


def test_linear_time_inverse_equals_dense_solve():
    rng = np.random.default_rng(4)
    a = rng.uniform(0.05, 3, size=7)
    g = rng.normal(size=7)
    C = 100.0
    q = -C * special.polygamma(1, a)
    c = C * special.polygamma(1, a.sum())
    H = np.diag(q) + c  # eq (3.2) with the sign of the true Hessian
    np.testing.assert_allclose(newton_direction(g, q, c), np.linalg.solve(H, g), rtol=1e-10)


def test_newton_alpha_stays_positive_from_bad_start():
    # tiny documents' statistics push a plain Newton step out of the positive orthant
    stats = make_alpha_stats(np.array([0.01, 0.02, 5.0]), 300, seed=3)
    alpha = newton_alpha(np.array([10.0, 10.0, 10.0]), stats, 300)
    assert np.all(alpha > 0) and np.all(np.isfinite(alpha))
    assert alpha_objective(alpha, stats, 300) > alpha_objective(np.full(3, 10.0), stats, 300)


def test_newton_eta_matches_scipy():
    rng = np.random.default_rng(5)
    K, V = 8, 200
    lam = rng.gamma(0.3, 3.0, size=(K, V)) + 0.01
    elog_sum = float((special.digamma(lam) - special.digamma(lam.sum(1, keepdims=True))).sum())
    ours = newton_eta(1.0, elog_sum, K, V)
    res = optimize.minimize_scalar(lambda le: -eta_objective(np.exp(le), elog_sum, K, V),
                                   bounds=(-15, 5), method="bounded", options={"xatol": 1e-12})
    assert ours == pytest.approx(np.exp(res.x), rel=1e-5)
