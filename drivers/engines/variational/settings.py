"""The variational engine's settings and results: the EM schedule and tolerances (``EMSettings``), one
iteration's record, what a fit returns."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from inference.mapper import EStepSettings


@dataclass
class EMSettings:
    num_topics: int
    max_iterations: int = 20
    tol: float = 1e-5                 # stop when |relative ELBO change| < tol (0 disables)
    estep: EStepSettings = field(default_factory=EStepSettings)
    alpha: float | list | None = None  # initial alpha (default 1/K)
    optimize_alpha: bool = True
    optimize_eta: bool = False
    seed: int = 0
    num_reducers: int | None = None
    restarts: str = "auto"            # auto | always | never: cold-start refits in the E-step
    restart_iterations: int = 2       # auto: refit every document up to this iteration ...
    restart_stride: int = 4           # ... then a rotating quarter of them per iteration ...
    restart_min_fraction: float = 0.005  # ... while at least this fraction of the refits is kept
    schedule: str = "auto"            # auto | fixed: E-step effort follows the EM progress (see estep_at)
    first_max_iter: int = 5           # auto: passes of the first E-step, from random topics
    loose_tol_factor: float = 10.0    # auto: the E-step tolerance starts at this multiple of estep.tol

    def estep_at(self, iteration: int, trace: list) -> EStepSettings:
        """E-step settings of an iteration: how hard to fit each document, and which ones to refit cold.

        ``schedule="auto"`` (inexact EM: every partial E-step still raises the ELBO):

        * iteration 1 fits documents to random topics, which carries little
          information, so it runs at most ``first_max_iter`` passes;
        * the per-document tolerance is |relative ELBO change| of the previous
          iteration, clipped to [tol, loose_tol_factor * tol]: loose while EM makes
          large steps, the requested ``estep.tol`` once it converges;
        * restarts (``restarts="auto"``): iteration 2 refits every document from the
          cold start and compares it with the warm start itself (not a warm fit:
          the warm start comes from the rough first E-step); later iterations fit
          warm and refit a rotating ``1/restart_stride`` of the documents cold while
          at least ``restart_min_fraction`` of those refits are kept.
        """
        estep = self.estep
        last = trace[-1] if trace else None
        if self.schedule == "auto":
            loose = estep.tol * self.loose_tol_factor
            change = None if last is None or last.relative_change is None else abs(last.relative_change)
            tol = loose if change is None else min(loose, max(estep.tol, change))
            estep = replace(estep, tol=tol,
                            max_iter=min(estep.max_iter, self.first_max_iter) if iteration == 1 else estep.max_iter)
        if self.restarts in ("always", "never"):
            return replace(estep, restart=self.restarts == "always", restart_stride=1, restart_offset=0)
        if iteration <= self.restart_iterations:
            first_refit = iteration == 2 and self.schedule == "auto"
            return replace(estep, restart=True, restart_stride=1, restart_offset=0,
                           warm_max_iter=0 if first_refit else -1)
        if last is not None and last.restart_fraction >= self.restart_min_fraction:
            return replace(estep, restart=True, restart_stride=self.restart_stride,
                           restart_offset=iteration % self.restart_stride)
        return replace(estep, restart=False)


@dataclass
class IterationRecord:
    iteration: int
    elbo: float
    seconds: float
    mean_inner_iterations: float
    restart_fraction: float
    alpha_sum: float
    eta: float | None
    relative_change: float | None
    estep_tol: float | None = None   # the per-document tolerance this iteration's E-step used


@dataclass
class FitResult:
    lambda_: np.ndarray
    alpha: np.ndarray
    prior: object
    trace: list
    iterations: int
    converged: bool
    gamma_dir: str
    num_partitions: int
    #: the ``final_outputs`` of :meth:`VariationalEngine.fit` were written by the last iteration's mappers
    outputs_written: bool = False

    def meta(self) -> dict:
        """What model.json records of the run, the same for ``train`` and ``refresh``."""
        trace = [r.__dict__ for r in self.trace]
        return {"alpha": self.alpha.tolist(), "iterations": self.iterations, "converged": self.converged,
                "elbo": trace[-1]["elbo"] if trace else None, "elbo_trace": trace,
                "partitions": self.num_partitions}
