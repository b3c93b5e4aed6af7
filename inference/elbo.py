"""Closed-form ELBO terms of LDA that live outside the per-document kernel (thesis eq 3.4-3.6).

The split follows Mr. LDA (thesis §3.2.5 and the extract's note on eq 3.4):
mapper -> per-document terms (``estep.estep_documents``), reducer k -> the terms
of topic k (``topic_terms``), driver -> the alpha terms (``alpha_terms``).
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln


def log_dirichlet_normaliser(mu: np.ndarray) -> float:
    """log Gamma(sum mu) - sum log Gamma(mu_i), eq (3.5)."""
    mu = np.asarray(mu, dtype=np.float64)
    return float(gammaln(mu.sum()) - gammaln(mu).sum())


def dirichlet_expectation(mu: np.ndarray) -> np.ndarray:
    """E_Dir(mu)[log x] row-wise: Psi(mu) - Psi(sum mu)."""
    mu = np.asarray(mu, dtype=np.float64)
    if mu.ndim == 1:
        return digamma(mu) - digamma(mu.sum())
    return digamma(mu) - digamma(mu.sum(axis=1))[:, None]


def neg_entropy(mu: np.ndarray, elog: np.ndarray | None = None) -> float:
    """Phi(mu) = E_Dir(mu)[log Dir(x; mu)], eqs (3.5)-(3.6)."""
    mu = np.asarray(mu, dtype=np.float64)
    if elog is None:
        elog = dirichlet_expectation(mu)
    return log_dirichlet_normaliser(mu) + float(np.dot(mu - 1.0, elog))


def dirichlet_prior_term(prior: np.ndarray, elog: np.ndarray) -> float:
    """E_q[log Dir(x; prior)] with E_q[log x] = ``elog``: the exact prior term of eq (3.4)."""
    return log_dirichlet_normaliser(prior) + float(np.dot(np.asarray(prior) - 1.0, elog))


def topic_terms(lambda_k: np.ndarray, eta_k: np.ndarray, layout=None):
    """Reducer-side ELBO terms of topic k.

    Returns ``(elogbeta_k, prior_term, entropy_term)`` where prior_term =
    E_q[log p(beta_k | eta_k)] and entropy_term = -E_q[log q(beta_k | lambda_k)] = -Phi(lambda_k).
    With a polylingual ``layout`` (:class:`inference.layout.VocabLayout`) beta_k is one
    Dirichlet per language slice and both terms are sums over the slices.
    """
    if layout is None or len(layout.languages) == 1:
        elog = dirichlet_expectation(lambda_k)
        return elog, dirichlet_prior_term(eta_k, elog), -neg_entropy(lambda_k, elog)
    elog = layout.dirichlet_expectation(lambda_k)
    prior_term = sum(dirichlet_prior_term(eta_k[s], elog[s]) for s in layout.slices())
    entropy_term = -sum(neg_entropy(lambda_k[s], elog[s]) for s in layout.slices())
    return elog, prior_term, entropy_term


def alpha_terms(alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> float:
    """Driver-side alpha terms: C [log Gamma(sum alpha) - sum log Gamma(alpha_k)] + sum_k alpha_k S_k.

    With the per-document kernel terms this completes sum_d E_q[log p(theta_d | alpha)]
    (the ``-1`` of (alpha_k - 1) is already folded into the kernel's theta terms).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    return n_docs * log_dirichlet_normaliser(alpha) + float(np.dot(alpha, alpha_stats))
