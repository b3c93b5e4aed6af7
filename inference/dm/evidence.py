"""The log evidence of a Dirichlet-multinomial from its histograms (Alg. 2.3) and the gamma hyperprior (§2.5).

(2.76)/(2.79): log P(D | alpha m) = sum_k sum_n C_k(n) [lnGamma(n + alpha m_k) - lnGamma(alpha m_k)]
                                   - sum_n C_.(n) [lnGamma(n + alpha) - lnGamma(alpha)],

the inner differences as running sums of logs (2.80). The gamma hyperprior (2.70) on each alpha m_k, in the basis
l_k = log(alpha m_k) (2.71)-(2.72), adds sum_k [c log(alpha m_k / s) - alpha m_k / s - lnGamma(c)].
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from inference.dm.histograms import CountHistograms
from inference.dm.sums import JUMP, LOGGAMMA, recurrence_sums


@dataclass(frozen=True)
class GammaPrior:
    """Gamma(shape c, scale s) on every alpha m_k (2.70), taken in log(alpha m_k) (2.72); c -> 0 with s c = 1 is
    the improper noninformative limit."""
    shape: float
    scale: float

    def __post_init__(self):
        if not (self.shape >= 0 and self.scale > 0 and math.isfinite(self.shape) and math.isfinite(self.scale)):
            raise ValueError(f"a gamma hyperprior needs shape >= 0 and scale > 0, got {self.shape}, {self.scale}")

    def log_density(self, alpha_m) -> float:
        """sum_k log P(l_k | s, c) (2.72), l_k = log(alpha m_k)."""
        x = np.asarray(alpha_m, dtype=np.float64) / self.scale
        return float(np.sum(self.shape * np.log(x) - x) - x.size * math.lgamma(self.shape)) if self.shape > 0 \
            else float(-np.sum(x))


def log_evidence(hist: CountHistograms, alpha_m) -> float:
    """Natural-log evidence (2.7) by Alg. 2.3; O(max count + sum_k max_d N_{k|d}) at most, independent of D."""
    alpha_m = np.asarray(alpha_m, dtype=np.float64)
    if alpha_m.shape != (hist.num_items,):
        raise ValueError(f"alpha m must have {hist.num_items} values, got {alpha_m.shape}")
    ptr, n, c = hist.item_histograms()
    lengths, freqs = hist.length_histogram()
    items = recurrence_sums(LOGGAMMA, ptr, n, c.astype(np.float64), alpha_m, JUMP).sum()
    groups = recurrence_sums(LOGGAMMA, np.array([0, lengths.shape[0]], np.int64), lengths,
                             freqs.astype(np.float64), np.array([alpha_m.sum()]), JUMP)[0]
    return float(items - groups)


def log_posterior(hist: CountHistograms, alpha_m, prior: GammaPrior | None) -> float:
    """log P(D | alpha m) + log P(log alpha m | s, c) (2.69), up to a constant; the evidence alone without a prior."""
    value = log_evidence(hist, alpha_m)
    return value if prior is None else value + prior.log_density(alpha_m)
