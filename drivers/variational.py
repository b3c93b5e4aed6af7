"""The variational EM engine on Spark: mapper -> TopicPartitioner -> reducer -> driver (thesis Fig. 3.1).

One iteration is one Spark job:

1. the driver broadcasts exp(E[log beta]) (V x K, from the reducers) and alpha;
2. ``mapPartitionsWithIndex`` runs the mapper (:func:`inference.mapper.map_block`)
   over each partition's :class:`DocBlock`, warm-started from the gamma the same
   partition wrote in the previous iteration, writes its new gamma (the
   checkpoint) and emits the partition's combined statistics keyed by topic;
3. ``partitionBy(R, TopicPartitioner)`` routes them to R reducers
   (:func:`inference.reducer.reduce_partition`), which form lambda_k, its
   normaliser and the topic ELBO terms;
4. the driver collects K rows, runs Newton-Raphson for alpha (and optionally
   eta), assembles the ELBO (eq 3.4), logs a progress line, checkpoints and
   tests convergence.

The E-step is deterministic and every sum runs in partition order, so a seed
gives the same model on any master, after task retries, and after ``--resume``.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from drivers import storage
from drivers.checkpoint import Checkpointer, check_fingerprint
from inference.dirichlet import newton_alpha
from inference.elbo import alpha_terms, topic_terms
from inference.mapper import ALPHA_KEY, TOTALS, EStepSettings, map_block
from inference.reducer import reduce_partition
from partitioners.topic import TopicPartitioner

log = logging.getLogger("spark_topics.train")


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


def _mapper_task(partition, blocks, bc_params, settings, gamma_in, gamma_out, topic_groups):
    """Spark task: the mapper over one partition (Alg. 1 with in-mapper combining)."""
    exp_elogbeta, alpha = bc_params.value
    for block_partition, block in blocks:
        if block_partition != partition:
            raise RuntimeError(f"block of partition {block_partition} arrived in partition {partition}")
        gamma = storage.load_npy(Checkpointer.gamma_file(gamma_in, partition)) if gamma_in else None
        new_gamma, records = map_block(partition, block, gamma, exp_elogbeta, alpha, settings, topic_groups)
        storage.save_npy(Checkpointer.gamma_file(gamma_out, partition), new_gamma)
        yield from records


def _reducer_task(records, bc_prior, num_topics):
    """Spark task: the reducer for the topics the TopicPartitioner routed here (Alg. 3)."""
    prior, layout = bc_prior.value
    return reduce_partition(records, prior.row, num_topics + len(TOTALS), layout)


def initial_lambda(num_topics: int, vocab_size: int, seed: int) -> np.ndarray:
    """lambda^(0) ~ Gamma(100, 1/100) entrywise, from the driver's seeded generator."""
    return np.random.default_rng(seed).gamma(100.0, 0.01, size=(num_topics, vocab_size))


def topic_parameters(lambda_: np.ndarray, prior, layout=None):
    """exp E[log beta] (V x K) and per-topic ELBO terms, computed as a reducer would."""
    K = lambda_.shape[0]
    eb = np.empty_like(lambda_)
    prior_t, entropy_t, elog_sums = np.empty(K), np.empty(K), np.empty(K)
    for k in range(K):
        elog, prior_t[k], entropy_t[k] = topic_terms(lambda_[k], prior.row(k), layout)
        eb[k] = np.exp(elog)
        elog_sums[k] = elog.sum()
    return np.ascontiguousarray(eb.T), prior_t, entropy_t, elog_sums


class VariationalEngine:
    """Runs variational EM for LDA-family models over an RDD of ``(partition, DocBlock)``."""

    def __init__(self, spark_context, settings: EMSettings, prior, checkpoint_dir: str, layout=None):
        self.sc = spark_context
        self.settings = settings
        self.prior = prior
        self.layout = layout  # VocabLayout of a polylingual model (None: one Dirichlet per topic)
        self.checkpointer = Checkpointer(checkpoint_dir)

    def fit(self, blocks, num_partitions: int, vocab_size: int, resume: bool = False,
            fingerprint: dict | None = None, on_iteration=None) -> FitResult:
        s = self.settings
        K, V = s.num_topics, vocab_size
        R = s.num_reducers or TopicPartitioner.default_reducers(K, self.sc.defaultParallelism)
        partitioner = TopicPartitioner(K, R)
        fingerprint = dict(fingerprint or {}, topics=K, vocab_size=V, partitions=num_partitions, seed=s.seed)

        restored = self.checkpointer.load() if resume else None
        if restored is not None:
            state, lambda_ = restored
            check_fingerprint(state.get("fingerprint", {}), fingerprint)
            start = state["iteration"]
            alpha = np.array(state["alpha"], dtype=np.float64)
            if state.get("eta") is not None and getattr(self.prior, "learnable", False):
                self.prior = type(self.prior)(state["eta"], V)
            trace = [IterationRecord(**r) for r in state["trace"]]
            converged = bool(state.get("converged", False))
            log.info("resuming from checkpoint %s after iteration %d", self.checkpointer.directory, start)
        else:
            if resume:
                log.warning("--resume: no checkpoint in %s, starting from scratch", self.checkpointer.directory)
            start, trace, converged = 0, [], False
            alpha = self._initial_alpha(K)
            lambda_ = initial_lambda(K, V, s.seed)
            if hasattr(self.prior, "shape_initial_lambda"):
                lambda_ = self.prior.shape_initial_lambda(lambda_)
        exp_elogbeta, prior_terms, entropy_terms, _ = topic_parameters(lambda_, self.prior, self.layout)

        t = start
        while t < s.max_iterations and not converged:
            t += 1
            began = time.perf_counter()
            self.sc.setJobDescription(f"LDA iteration {t}/{s.max_iterations}: "
                                      f"E-step -> {partitioner!r} -> lambda reducers")
            estep = s.estep_at(t, trace)
            bc_params = self.sc.broadcast((exp_elogbeta, alpha))
            bc_prior = self.sc.broadcast((self.prior, self.layout))
            gamma_in = self.checkpointer.gamma_dir(t - 1) if t > 1 else None
            results = (blocks
                       .mapPartitionsWithIndex(partial(_mapper_task, bc_params=bc_params, settings=estep,
                                                       gamma_in=gamma_in,
                                                       gamma_out=self.checkpointer.gamma_dir(t),
                                                       topic_groups=partitioner.topic_groups()))
                       .partitionBy(partitioner.num_reducers, partitioner)
                       .mapPartitions(partial(_reducer_task, bc_prior=bc_prior, num_topics=K))
                       .collect())
            job_seconds = time.perf_counter() - began
            bc_params.destroy()
            bc_prior.destroy()

            totals = next(r[1] for r in results if isinstance(r, tuple) and r[0] == ALPHA_KEY)
            updates = sorted((r for r in results if not isinstance(r, tuple)), key=lambda u: u.topic)
            if len(updates) != K:
                raise RuntimeError(f"reducers returned {len(updates)} topics, expected {K}")
            alpha_stats = totals[:K]
            doc_elbo, n_docs, inner, _tokens, restarts_kept, restarts_tried = totals[K:]

            # ELBO (eq 3.4) at the point of this E-step: lambda_t, alpha_t and the new phi, gamma.
            elbo = doc_elbo + alpha_terms(alpha, alpha_stats, n_docs) + prior_terms.sum() + entropy_terms.sum()

            # M-step: lambda from the reducers, then alpha (and eta) by Newton-Raphson on the driver.
            lambda_ = np.stack([u.lambda_row for u in updates])
            exp_elogbeta = np.ascontiguousarray(np.stack([u.exp_elogbeta_row for u in updates]).T)
            prior_terms = np.array([u.prior_term for u in updates])
            entropy_terms = np.array([u.entropy_term for u in updates])
            if s.optimize_alpha:
                alpha = newton_alpha(alpha, alpha_stats, n_docs)
            if s.optimize_eta and getattr(self.prior, "learnable", False) and self.layout is None:
                elog_sums = np.array([u.elogbeta_sum for u in updates])
                self.prior = self.prior.optimise(elog_sums)
                prior_terms = self.prior.prior_terms(elog_sums)

            previous = trace[-1].elbo if trace else None
            rel = None if previous is None else (elbo - previous) / abs(previous)
            record = IterationRecord(t, float(elbo), time.perf_counter() - began,
                                     float(inner / max(n_docs, 1)),
                                     float(restarts_kept / restarts_tried) if restarts_tried else 0.0, float(alpha.sum()),
                                     float(self.prior.eta) if hasattr(self.prior, "eta") else None,
                                     None if rel is None else float(rel), float(estep.tol))
            trace.append(record)
            converged = bool(rel is not None and s.tol > 0 and abs(rel) < s.tol)
            log.info("iteration %d/%d  elbo=%.6e  change=%s  seconds=%.2f  mean_inner=%.1f  estep_tol=%.1e%s  "
                     "alpha_sum=%.4g", t, s.max_iterations, elbo, "-" if rel is None else f"{rel:.3e}", record.seconds,
                     record.mean_inner_iterations, estep.tol,
                     f"  restarts_kept={record.restart_fraction:.1%} of {int(restarts_tried)}" if restarts_tried else "",
                     record.alpha_sum)
            self.checkpointer.save(t, {
                "fingerprint": fingerprint, "alpha": alpha.tolist(), "eta": self.prior.to_json(),
                "trace": [r.__dict__ for r in trace], "converged": converged}, lambda_)
            log.debug("iteration %d: Spark job %.3f s, driver %.3f s", t, job_seconds,
                      time.perf_counter() - began - job_seconds)
            if on_iteration is not None:
                on_iteration(record)
        self.sc.setJobDescription(None)
        if converged:
            log.info("converged after %d iterations (|relative ELBO change| < %g)", t, s.tol)
        return FitResult(lambda_, alpha, self.prior, trace, t, converged,
                         self.checkpointer.gamma_dir(t), num_partitions)

    def _initial_alpha(self, K: int) -> np.ndarray:
        a = self.settings.alpha
        if a is None:
            return np.full(K, 1.0 / K)
        alpha = np.full(K, float(a)) if np.isscalar(a) else np.asarray(a, dtype=np.float64)
        if alpha.shape != (K,) or not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
            raise ValueError(f"alpha must be a positive scalar or {K} positive values")
        return alpha
