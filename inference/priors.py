"""Topic-word priors eta: the object the reducer asks for eta_k (thesis §3.2.3, §3.3.1).

The engine talks to a prior only through ``row(k)`` and, for priors that can be
learnt, ``optimise``; informed priors (issue 3) plug in here without touching
the engine.
"""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from inference.dirichlet import newton_eta


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


class DirichletPrior:
    """eta_k as a base row plus sparse per-topic overrides (thesis §3.3.1, informed priors).

    The base row holds one value per word (polylingual models: one value per
    language slice, see :meth:`per_language`); ``overrides[k] = (word_ids, values)``
    replaces entries of topic k's row (an informed topic: a high value for its
    seed words, a low one elsewhere). The reducer asks for ``row(k)`` and forms
    lambda_k = eta_k + statistics; the ELBO uses the same rows.
    """

    learnable = False

    def __init__(self, base_row: np.ndarray, overrides: dict | None = None, summary: dict | None = None):
        base_row = np.asarray(base_row, dtype=np.float64)
        if base_row.ndim != 1 or not np.all(np.isfinite(base_row)) or np.any(base_row <= 0):
            raise ValueError("the base prior row must be positive and finite")
        self.base_row = base_row
        self.overrides = {}
        for k, (ids, values) in (overrides or {}).items():
            ids, values = np.asarray(ids, dtype=np.int64), np.asarray(values, dtype=np.float64)
            if ids.shape != values.shape or (ids.size and (ids.min() < 0 or ids.max() >= base_row.size)):
                raise ValueError(f"prior overrides of topic {k}: word ids outside 0..{base_row.size - 1}")
            if not np.all(np.isfinite(values)) or np.any(values <= 0):
                raise ValueError(f"prior values of topic {k} must be positive and finite")
            self.overrides[int(k)] = (ids, values)
        self.summary = summary or {}

    @classmethod
    def per_language(cls, etas, layout) -> "DirichletPrior":
        """Symmetric within each language: eta_l for every word of language l."""
        base = np.empty(layout.vocab_size)
        for value, s in zip(etas, layout.slices()):
            base[s] = value
        return cls(base, summary={"per_language": {l: float(e) for l, e in zip(layout.languages, etas)}})

    def row(self, topic: int) -> np.ndarray:
        out = self.base_row.copy()
        if topic in self.overrides:
            ids, values = self.overrides[topic]
            out[ids] = values
        return out

    def shape_initial_lambda(self, lambda0: np.ndarray) -> np.ndarray:
        """Seed the random lambda^(0) of informed topics with their prior's shape (thesis §3.2.4: "lambda
        is randomly initialized or otherwise seeded"): lambda0_k * eta_k / mean(eta_k), so the first E-step
        already sees seed words as likely under their topic and the total mass of the row is unchanged."""
        out = np.array(lambda0, dtype=np.float64, copy=True)
        for k in self.overrides:
            row = self.row(k)
            out[k] *= row / row.mean()
        return out

    def entries(self):
        """``(topic, word_id, value)`` arrays of every override (the sparse part of the prior)."""
        topics = [np.full(len(ids), k) for k, (ids, _) in sorted(self.overrides.items())]
        ids = [ids for _, (ids, _) in sorted(self.overrides.items())]
        values = [v for _, (_, v) in sorted(self.overrides.items())]
        cat = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)  # noqa: E731
        return cat(topics, np.int32), cat(ids, np.int32), cat(values, np.float64)

    def to_json(self):
        base = np.unique(self.base_row)
        return float(base[0]) if base.size == 1 else self.summary.get("per_language", None)


class EdgePrior:
    """The same prior row for every topic, e.g. the edge priors beta of a prior tree (thesis §5.1); fixed."""

    learnable = False

    def __init__(self, row: np.ndarray, eta: float, link_strength: float):
        row = np.asarray(row, dtype=np.float64)
        if row.ndim != 1 or not np.all(np.isfinite(row)) or np.any(row <= 0):
            raise ValueError("edge priors must be positive and finite")
        self._row, self.eta, self.link_strength = row, float(eta), float(link_strength)

    def row(self, topic: int) -> np.ndarray:
        return self._row

    def to_json(self):
        return self.eta


class MatrixPrior:
    """A full K x V prior, e.g. a refreshed model's previous lambda as the prior of the next batch (streaming
    variational Bayes, Broderick et al. 2013: the posterior after the old documents is the prior of the new ones,
    so lambda_k = lambda_k^(old) + the batch's statistics); fixed."""

    learnable = False

    def __init__(self, matrix: np.ndarray, eta=None):
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim != 2 or not np.all(np.isfinite(matrix)) or np.any(matrix <= 0):
            raise ValueError("a matrix prior must be K x V positive finite numbers")
        self.matrix, self.eta_json = matrix, eta

    def row(self, topic: int) -> np.ndarray:
        return self.matrix[topic]

    def to_json(self):
        return self.eta_json
