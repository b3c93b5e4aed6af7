"""Topic-word priors eta: the object the reducer asks for eta_k (thesis §3.2.3, §3.3.1).

The engine talks to a prior only through ``row(k)`` and, for priors that can be
learnt, ``optimise``; informed priors (issue 3) plug in here without touching
the engine.
"""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from drivers.newton import newton_eta


class SymmetricPrior:
    """eta_kv = eta for every topic and word; optionally learnt by Newton-Raphson."""

    learnable = True

    def __init__(self, eta: float, vocab_size: int):
        if not np.isfinite(eta) or eta <= 0:
            raise ValueError(f"eta must be a positive finite number, got {eta}")
        self.eta = float(eta)
        self.vocab_size = int(vocab_size)

    def row(self, topic: int) -> np.ndarray:
        return np.full(self.vocab_size, self.eta)

    def optimise(self, elogbeta_sums: np.ndarray) -> "SymmetricPrior":
        """New prior maximising the ELBO given sum_v E[log beta_kv] of every topic."""
        eta = newton_eta(self.eta, float(np.sum(elogbeta_sums)), len(elogbeta_sums), self.vocab_size)
        return SymmetricPrior(eta, self.vocab_size)

    def prior_terms(self, elogbeta_sums: np.ndarray) -> np.ndarray:
        """E_q[log p(beta_k | eta)] per topic, from sum_v E[log beta_kv]."""
        V = self.vocab_size
        return (gammaln(V * self.eta) - V * gammaln(self.eta)) + (self.eta - 1.0) * np.asarray(elogbeta_sums)

    def to_json(self):
        return self.eta
