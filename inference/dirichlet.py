"""Newton-Raphson for the Dirichlet hyperparameters, run by the driver (thesis §3.2.4).

``newton_alpha`` maximises the alpha part of the ELBO,

    f(alpha) = C [log Gamma(sum_k alpha_k) - sum_k log Gamma(alpha_k)] + sum_k (alpha_k - 1) S_k,

with S_k = sum_d Psi(gamma_dk) - Psi(sum_l gamma_dl) (the gamma-tokens of eq 3.3).
Gradient eq (3.3); Hessian eq (3.2) is diag(q) + c 1 1^T with q_k = -C Psi'(alpha_k)
and c = C Psi'(sum alpha) (the thesis prints the negated Hessian), so the Newton
step is inverted in O(K) with the Sherman-Morrison form (Minka 2000):

    (H^-1 g)_k = (g_k - b) / q_k,   b = sum_j (g_j / q_j) / (1/c + sum_j 1/q_j).

Every step is guarded: it is halved until alpha stays in the positive orthant
and f does not decrease.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln, polygamma


def alpha_objective(alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> float:
    alpha = np.asarray(alpha, dtype=np.float64)
    return float(n_docs * (gammaln(alpha.sum()) - gammaln(alpha).sum()) + np.dot(alpha - 1.0, alpha_stats))


def alpha_gradient(alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> np.ndarray:
    """Eq (3.3)."""
    return n_docs * (digamma(alpha.sum()) - digamma(alpha)) + alpha_stats


def newton_direction(gradient: np.ndarray, q: np.ndarray, c: float) -> np.ndarray:
    """H^-1 g for H = diag(q) + c 1 1^T in O(K) (Minka 2000, §3.2 of the thesis)."""
    b = np.sum(gradient / q) / (1.0 / c + np.sum(1.0 / q))
    return (gradient - b) / q


def _guarded_step(x, step, objective, current):
    """Halve ``step`` until x - step is positive and the objective does not decrease."""
    scale = 1.0
    for _ in range(60):
        candidate = x - scale * step
        if np.all(candidate > 0) and np.all(np.isfinite(candidate)):
            value = objective(candidate)
            if value >= current - 1e-12 * abs(current):
                return candidate, value
        scale *= 0.5
    return x, current


def newton_alpha(alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float,
                 max_iter: int = 100, tol: float = 1e-10) -> np.ndarray:
    """Asymmetric alpha maximising f(alpha) (eqs 3.1-3.3), started from ``alpha``."""
    alpha = np.array(alpha, dtype=np.float64, copy=True)
    alpha_stats = np.asarray(alpha_stats, dtype=np.float64)
    if n_docs <= 0:
        return alpha
    objective = lambda a: alpha_objective(a, alpha_stats, n_docs)  # noqa: E731
    current = objective(alpha)
    for _ in range(max_iter):
        g = alpha_gradient(alpha, alpha_stats, n_docs)
        q = -n_docs * polygamma(1, alpha)
        c = n_docs * float(polygamma(1, alpha.sum()))
        step = newton_direction(g, q, c)
        new_alpha, new_value = _guarded_step(alpha, step, objective, current)
        converged = np.max(np.abs(new_alpha - alpha) / alpha) < tol
        alpha, current = new_alpha, new_value
        if converged:
            break
    return alpha


def eta_objective(eta: float, elogbeta_sum: float, n_topics: int, vocab_size: int) -> float:
    """Symmetric-eta part of the ELBO: K [log Gamma(V eta) - V log Gamma(eta)] + (eta - 1) sum_kv E[log beta_kv]."""
    return float(n_topics * (gammaln(vocab_size * eta) - vocab_size * gammaln(eta)) + (eta - 1.0) * elogbeta_sum)


def newton_eta(eta: float, elogbeta_sum: float, n_topics: int, vocab_size: int,
               max_iter: int = 100, tol: float = 1e-10) -> float:
    """Symmetric topic-word prior eta maximising ``eta_objective`` (1-D guarded Newton)."""
    K, V = n_topics, vocab_size
    x = np.array([float(eta)])
    objective = lambda e: eta_objective(float(e[0]), elogbeta_sum, K, V)  # noqa: E731
    current = objective(x)
    for _ in range(max_iter):
        e = x[0]
        g = K * V * (digamma(V * e) - digamma(e)) + elogbeta_sum
        h = K * V * (V * polygamma(1, V * e) - polygamma(1, e))
        new_x, new_value = _guarded_step(x, np.array([g / h]), objective, current)
        converged = abs(new_x[0] - x[0]) / x[0] < tol
        x, current = new_x, new_value
        if converged:
            break
    return float(x[0])
