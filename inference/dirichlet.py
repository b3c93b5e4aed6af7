"""Every update of a Dirichlet (and PDP concentration) hyperparameter, run by a driver from summed statistics.

* :func:`newton_alpha`, :func:`newton_eta`: the variational models' Newton-Raphson
  for asymmetric alpha and symmetric eta (thesis §3.2.4, below);
* :func:`minka_step`: LDA-Gibbs' fixed-point step for alpha (Minka 2000, eq. 55; thesis §8 "fastfit");
* :func:`alpha_newton_step`: SeqLDA's Newton step for alpha on the first segments' table counts (§6.5),
  with the same O(K) inverse (:func:`newton_direction`);
* :func:`gamma_concentration_step`: the auxiliary-variable draw of the PDP concentration b shared by STM
  and AdaTM (5.8).

The statistics come from the models' kernels (per partition, summed in partition order); nothing here
knows about Spark or the samplers.

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


# --------------------------------------------------------------------------- Gibbs models

#: alpha_k stays in [ALPHA_FLOOR, ALPHA_CEIL] under the Gibbs models' steps (a topic no document uses has S_k = 0)
ALPHA_FLOOR = 1e-6
ALPHA_CEIL = 1e3
ALPHA_MAX_FACTOR = 2.0


def minka_step(alpha: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """One fixed-point step alpha_k <- alpha_k S_k / S_0 (Minka 2000, eq. 55) from
    :func:`drivers.models.lda_gibbs.model.minka_statistics`."""
    K = alpha.shape[0]
    numer, denom = stats[:K], stats[K]
    if not denom > 0:  # no tokens anywhere: nothing to learn from
        return alpha.copy()
    return np.maximum(alpha * numer / denom, ALPHA_FLOOR)


def alpha_newton_step(alpha: np.ndarray, stats: np.ndarray, max_factor: float = ALPHA_MAX_FACTOR) -> np.ndarray:
    """One Newton-Raphson step on alpha (thesis §6.5) with Minka's inverse of diag(q) + z 11^T, from
    :func:`drivers.models.seqlda.kernels.alpha_newton_terms`.

    The step is halved until alpha stays positive (at most 10 times); otherwise (or when a topic has no table in
    any first segment, q_k = 0) Minka's fixed-point step alpha_k <- alpha_k S_k / S_0 is taken. Each component
    then moves by at most a factor ``max_factor`` per cycle and stays in [ALPHA_FLOOR, ALPHA_CEIL]: one step per
    Gibbs cycle follows a moving target, and a state without overdispersion in t_i1 (e.g. the initial t = 1
    everywhere) has its maximum at alpha = infinity, where a full Newton step would leave the chain stuck.
    """
    K = alpha.shape[0]
    num, den = stats[:K], stats[K]
    q, zc = stats[K + 1:2 * K + 1], stats[2 * K + 1]
    if not den > 0:
        return alpha.copy()
    new = None
    if np.all(q < 0) and zc > 0:
        step = newton_direction(num - den, q, zc)
        for _ in range(10):
            cand = alpha - step
            if np.all(cand > 0) and np.all(np.isfinite(cand)):
                new = cand
                break
            step = step / 2
    if new is None:
        new = alpha * num / den
    new = np.clip(new, alpha / max_factor, alpha * max_factor)
    return np.clip(new, ALPHA_FLOOR, ALPHA_CEIL)


def gamma_concentration_step(hyper: dict, stats, enabled: bool, seed: int) -> dict:
    """One driver cycle of the auxiliary-variable b update shared by STM and AdaTM (thesis 5.8).

    ``stats`` = (shape, rate) summed over partitions: sum of the table counts and sum log 1/q;
    b ~ Gamma(shape, rate) (numpy's scale is 1/rate, pitfall 10) once ``b_burn_in`` cycles have run.
    """
    hyper = dict(hyper, cycles=int(hyper.get("cycles", 0)) + 1)
    if enabled and hyper["cycles"] > int(hyper.get("b_burn_in", 0)):
        shape, rate = float(stats[0]), float(stats[1])
        if shape > 0 and rate > 0:
            hyper["b"] = float(np.random.default_rng(seed).gamma(shape, 1.0 / rate))
    return hyper
