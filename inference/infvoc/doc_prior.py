"""The document-topic prior alpha^theta of the infinite-vocabulary model learned online (issue 30, session 27).
Pure numpy/scipy.

``OnlineSettings.alpha_theta``: ``fixed`` keeps alpha^theta = 1/K (the thesis); ``fit`` moves it after every
minibatch as online LDA moves its alpha (Hoffman, Blei & Bach 2010; gensim's ``alpha='auto'``), so a topic of
words every document uses can take a large alpha_k and leave the others to the words that set documents apart
(Wallach, Mimno & McCallum 2009):

* the mappers' statistics (the hybrid kernel's ``average_digammas``, :func:`inference.hybrid.hybrid_documents`):
  S_k = sum_{d in S} mean_s [Psi(alpha_k + n^(s)_dk)] - Psi(A + N_d), the kept samples' estimate of
  sum_d E[log theta_dk] under the posterior Dir(alpha + n_d), and |S| the minibatch's documents;
* the minibatch's optimum alpha_hat maximises the alpha part of the ELBO (eqs 3.1-3.3,
  :func:`inference.dirichlet.newton_alpha`) with the statistics scaled to one corpus of D documents, (D/|S|) S and
  C = D, D as (7.6) takes it (the optimum does not depend on that scale; it is kept for the record);
* the step: alpha <- (1 - eps_i) alpha + eps_i alpha_hat, eps_i the minibatch's step of (7.6)-(7.8), each
  alpha_k at least :data:`ALPHA_FLOOR`.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma

from inference.dirichlet import newton_alpha

#: ``OnlineSettings.alpha_theta``: kept at 1/K (fixed, the default) or learned online (fit)
ALPHA_THETA = ("fixed", "fit")
#: the smallest alpha_k a step leaves (a topic no document uses has S_k -> -inf as alpha_k -> 0)
ALPHA_FLOOR = 1e-3


def posterior_statistics(samples_counts: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """S_k = sum_d mean_s [Psi(alpha_k + n^(s)_dk) - Psi(A + N_d)] of ``samples_counts`` (S, D, K), each kept
    sample's document-topic counts: E[log theta_dk] of Dir(alpha + n_d) averaged over the samples (the direct
    form of the kernel's statistics)."""
    counts = np.asarray(samples_counts, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    totals = counts.sum(axis=2, keepdims=True)
    values = digamma(alpha[None, None, :] + counts) - digamma(alpha.sum() + totals)
    return values.mean(axis=0).sum(axis=0)


def minibatch_optimum(alpha: np.ndarray, statistics: np.ndarray, documents: int, corpus_size: float) -> np.ndarray:
    """alpha_hat: the Newton optimum of the minibatch's objective as one corpus of ``corpus_size`` documents,
    started from ``alpha``; ``alpha`` itself when the minibatch has no document."""
    alpha = np.asarray(alpha, dtype=np.float64)
    if documents <= 0:
        return alpha.copy()
    scale = float(corpus_size) / float(documents)
    return newton_alpha(np.maximum(alpha, ALPHA_FLOOR), np.asarray(statistics, dtype=np.float64) * scale,
                        float(corpus_size))


def online_step(alpha: np.ndarray, statistics: np.ndarray, documents: int, corpus_size: float,
                eps: float) -> np.ndarray:
    """alpha after one minibatch: (1 - eps) alpha + eps alpha_hat, floored at :data:`ALPHA_FLOOR` (unchanged
    after a minibatch of no document)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    if documents <= 0:
        return alpha.copy()
    target = minibatch_optimum(alpha, statistics, documents, corpus_size)
    if not np.all(np.isfinite(target)):
        raise ValueError(f"alpha^theta's minibatch optimum is not finite: {target}")
    return np.maximum((1.0 - eps) * alpha + eps * target, ALPHA_FLOOR)
