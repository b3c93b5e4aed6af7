"""The variational EM engine on Spark: mapper -> TopicPartitioner -> reducer -> driver (thesis Fig. 3.1).

One iteration is one Spark job:

1. the driver broadcasts alpha; each mapper reads the log word weights of its own
   partition's vocabulary (E_q[log beta], U x K) from the files the reducers
   wrote in the previous iteration (:mod:`drivers.engines.variational.topic_store`, Mr. LDA's
   distributed cache);
2. ``mapPartitionsWithIndex`` runs the local step over each partition's
   :class:`DocBlock` with the partition's state of the previous iteration (a
   file the same partition wrote, also the checkpoint), writes its new state and
   emits the partition's combined statistics keyed by topic (sparse when that is
   smaller), and its statistics vector under the reserved key;
3. ``repartitionAndSortWithinPartitions(R, TopicPartitioner)`` routes them to R
   reducers, sorted by (topic, partition) (:func:`inference.reducer.reduce_topics`),
   which add them up one record at a time in partition order, form lambda_k by the
   update rule and the mappers' weights, write both for their topics, and send the
   driver each topic's ELBO terms;
4. the driver runs Newton-Raphson for alpha (and optionally eta), assembles the
   ELBO (eq 3.4), logs a progress line, checkpoints and tests convergence.

No K x V matrix passes through the driver during the iterations: it writes the
start's topic files (iteration 0) and reads lambda once, at the end.

Plug-in points (constructor arguments, defaults in brackets):

* ``local_step``: what a mapper does with a partition [:class:`EStep`, the E-step
  of Alg. 1 warm-started from the partition's gamma]; it plans each iteration
  on the driver (``plan``) and runs on the executors (``run``);
* the topic-word structure: ``prior`` (``row(k)``, and for learnt priors
  ``optimise``) and ``layout`` (E_q[log beta], E_q[beta] and a topic's ELBO
  terms, :class:`inference.layout.VocabLayout`) [a symmetric Dirichlet over the
  vocabulary];
* ``update``: the global update rule the reducers apply
  [:class:`inference.reducer.BatchUpdate`; a rule with ``needs_previous`` gets
  the previous lambda of the reducer's topics from the previous iteration's files];
* ``start``: the initial lambda and alpha [:class:`RandomStart`; :class:`WarmStart`
  from a trained model, for refresh; :class:`GuidedStart`, a cold start guided by a trained model's topics];
* ``alpha_rule``: alpha's M-step [:class:`NewtonAlpha`; with earlier batches' sums for a refresh that
  accumulates; :class:`OnlineAlpha`].

The E-step is deterministic and every sum runs in partition order, so a seed
gives the same model on any master, with any number of reducers, after task
retries, and after ``--resume``.
"""
from __future__ import annotations

import logging
import time
from functools import partial

import numpy as np

from drivers.engines.checkpoint import Trace, resumed
from drivers.engines.variational.checkpoint import Checkpointer
from drivers.engines.variational.local_steps import EStep
from drivers.engines.variational.settings import EMSettings, FitResult, IterationRecord
from drivers.engines.variational.starts import NewtonAlpha, RandomStart, write_start
from drivers.engines.variational.tasks import mapper_task, reducer_task, collect_checked
from drivers.engines.variational.topic_store import TopicFiles
from inference.errors import DamagedError
from inference.layout import VocabLayout
from inference.mapper import RECORD_ENTRIES, TOTALS
from inference.reducer import BatchUpdate
from inference.word_weights import check_finite
from partitioners.topic import STATISTICS_KEY, TopicPartitioner


log = logging.getLogger("spark_topics.train")
#: the objective's name in the progress line: hybrid inference's is the kept samples' mean log joint, not an ELBO
OBJECTIVES = {"elbo": "ELBO", "log_joint": "mean log joint of the samples"}


# --------------------------------------------------------------------------- plug-ins


# --------------------------------------------------------------------------- the tasks


class VariationalEngine:
    """Runs variational EM for LDA-family models over an RDD of ``(partition, DocBlock)``."""

    def __init__(self, spark_context, settings: EMSettings, prior, checkpoint_dir: str, layout=None,
                 local_step=None, update=None, start=None, alpha_rule=None):
        self.sc = spark_context
        self.settings = settings
        self.prior = prior
        self.layout = layout  # VocabLayout of a polylingual model (None: one Dirichlet per topic over V)
        self.local_step = local_step or EStep(settings)
        self.update = update or BatchUpdate()
        self.start = start or RandomStart()
        self.alpha_rule = alpha_rule or NewtonAlpha()
        self.checkpointer = Checkpointer(checkpoint_dir)

    def fit(self, blocks, num_partitions: int, vocab_size: int, resume: bool = False,
            fingerprint: dict | None = None, on_iteration=None, final_outputs=None) -> FitResult:
        """``final_outputs(partition, block, state)``: run by the mappers of iteration ``max_iterations`` after
        they write their state (the run's outputs written by the last iteration's job instead of a job of their
        own; ``FitResult.outputs_written`` says whether it ran: not when EM converged earlier or a resumed run
        had no iteration left)."""
        s = self.settings
        K, V = s.num_topics, vocab_size
        layout = self.layout or VocabLayout.monolingual(V)
        partitioner = TopicPartitioner.for_topics(K, s.num_reducers, self.sc.defaultParallelism)
        fingerprint = dict(fingerprint or {}, topics=K, vocab_size=V, partitions=num_partitions, seed=s.seed)

        mean_weights = getattr(self.local_step, "mean_weights", False)
        # a mapper's records: each reducer's topics in runs whose statistics fit RECORD_ENTRIES for any block
        # (a block has at most V words), the same runs in every partition, so a topic's statistics reach its
        # reducer in partition order after the shuffle's sort
        record_groups = partitioner.topic_groups(max_size=max(1, RECORD_ENTRIES // max(V, 1)))
        files_of = partial(self._topic_files, num_topics=K)

        state = self.checkpointer.load() if resume else None
        if resumed(state, resume, self.checkpointer.directory, fingerprint):
            start = state["iteration"]
            alpha = np.array(state["alpha"], dtype=np.float64)
            if state.get("eta") is not None and getattr(self.prior, "learnable", False):
                self.prior = type(self.prior)(state["eta"], V)
            trace = Trace(IterationRecord, state["trace"])
            converged = bool(state.get("converged", False))
            topics_in = files_of(start, state["reducers"])
            prior_terms = np.array(state["prior_terms"], dtype=np.float64)
            entropy_terms = np.array(state["entropy_terms"], dtype=np.float64)
            if not topics_in.complete():
                raise DamagedError(f"cannot resume: the topic files of iteration {start} are missing from "
                                   f"{self.checkpointer.directory}. Remove the checkpoint directory or drop --resume.")
        else:
            start, trace, converged = 0, Trace(IterationRecord), False
            lambda_, alpha = self.start.initial(s, layout.parameter_size, self.prior)
            topics_in = files_of(0, partitioner.num_reducers)
            prior_terms, entropy_terms = write_start(topics_in, lambda_, self.prior, layout, mean_weights)
            del lambda_

        t, outputs_written = start, False
        while t < s.max_iterations and not converged:
            t += 1
            outputs_now = final_outputs if t == s.max_iterations else None
            began = time.perf_counter()
            self.sc.setJobDescription(f"LDA iteration {t}/{s.max_iterations}: "
                                      f"{self.local_step.name} -> {partitioner!r} -> lambda reducers")
            estep = self.local_step.plan(t, trace.records)
            bc_alpha = self.sc.broadcast(alpha)
            bc_structure = self.sc.broadcast((self.prior, layout))
            state_in = self.checkpointer.gamma_dir(t - 1) if t > 1 else None
            topics_out = files_of(t, partitioner.num_reducers)
            update = self.update.at(t) if hasattr(self.update, "at") else self.update
            job = (blocks
                   .mapPartitionsWithIndex(partial(mapper_task, local_step=self.local_step, plan=estep,
                                                   bc_alpha=bc_alpha, topics_in=topics_in, state_in=state_in,
                                                   state_out=self.checkpointer.gamma_dir(t),
                                                   topic_groups=record_groups, final_outputs=outputs_now))
                   .repartitionAndSortWithinPartitions(partitioner.num_reducers, partitioner)
                   .mapPartitionsWithIndex(partial(reducer_task, bc_structure=bc_structure, update=update,
                                                   num_statistics=K + len(TOTALS), topics_in=topics_in,
                                                   topics_out=topics_out, mean_weights=mean_weights)))
            results = collect_checked(job, f"iteration {t}/{s.max_iterations}")
            outputs_written = outputs_now is not None
            job_seconds = time.perf_counter() - began
            bc_alpha.destroy()
            bc_structure.destroy()

            totals = next(r[1] for r in results if isinstance(r, tuple) and r[0] == STATISTICS_KEY)
            terms = sorted((r for r in results if not isinstance(r, tuple)), key=lambda u: u.topic)
            if [u.topic for u in terms] != list(range(K)):
                raise RuntimeError(f"reducers returned {len(terms)} topics, expected {K}")
            alpha_stats = totals[:K]
            doc_elbo, n_docs, inner, tokens, restarts_kept, restarts_tried = totals[K:]

            # ELBO (eq 3.4) at the point of this E-step: lambda_t, alpha_t and the new phi, gamma.
            elbo = self.local_step.objective(doc_elbo, alpha, alpha_stats, n_docs) + prior_terms.sum() \
                + entropy_terms.sum()

            if not np.isfinite(elbo):
                raise FloatingPointError(f"iteration {t}/{s.max_iterations}: the {self.local_step.objective_name} "
                                         f"is {elbo}")

            # M-step: lambda from the reducers (in the topic files), then alpha (and eta) by Newton-Raphson.
            topics_in = topics_out
            prior_terms = np.array([u.prior_term for u in terms])
            entropy_terms = np.array([u.entropy_term for u in terms])
            if s.optimize_alpha:
                alpha = self.alpha_rule(t, alpha, alpha_stats, n_docs)
                check_finite(alpha, f"iteration {t}/{s.max_iterations}: alpha", lambda k: f"topic {k}")
            if s.optimize_eta and getattr(self.prior, "learnable", False) and not layout.is_polylingual:
                elog_sums = np.array([u.elogbeta_sum for u in terms])
                self.prior = self.prior.optimise(elog_sums)
                prior_terms = self.prior.prior_terms(elog_sums)

            previous = trace.records[-1].elbo if trace.records else None
            rel = None if previous is None else (elbo - previous) / abs(previous)
            record = IterationRecord(t, float(elbo), time.perf_counter() - began,
                                     float(inner / max(n_docs, 1)),
                                     float(restarts_kept / restarts_tried) if restarts_tried else 0.0, float(alpha.sum()),
                                     float(self.prior.eta) if hasattr(self.prior, "eta") else None,
                                     None if rel is None else float(rel),
                                     float(estep.tol) if hasattr(estep, "tol") else None)
            trace.add(record, s.max_iterations,
                      f"{OBJECTIVES.get(self.local_step.objective_name, 'objective')} {elbo:.6e}")
            converged = bool(rel is not None and s.tol > 0 and abs(rel) < s.tol)
            log.debug("iteration %d/%d  %s=%.6e  change=%s  seconds=%.2f  tokens/s=%.3g  mean_inner=%.1f%s%s  "
                     "alpha_sum=%.4g", t, s.max_iterations, self.local_step.objective_name, elbo,
                     "-" if rel is None else f"{rel:.3e}", record.seconds, tokens / record.seconds,
                     record.mean_inner_iterations, "" if record.estep_tol is None else f"  estep_tol={estep.tol:.1e}",
                     f"  restarts_kept={record.restart_fraction:.1%} of {int(restarts_tried)}" if restarts_tried else "",
                     record.alpha_sum)
            self.checkpointer.save(t, {
                "fingerprint": fingerprint, "alpha": alpha.tolist(), "eta": self.prior.to_json(),
                "trace": trace.to_json(), "converged": converged,
                "reducers": topics_in.num_reducers, "prior_terms": prior_terms.tolist(),
                "entropy_terms": entropy_terms.tolist()})
            log.debug("iteration %d: Spark job %.3f s, driver %.3f s", t, job_seconds,
                      time.perf_counter() - began - job_seconds)
            if on_iteration is not None:
                on_iteration(record)
        self.sc.setJobDescription(None)
        if converged:
            log.info("converged after %d iterations (|relative ELBO change| < %g)", t, s.tol)
        return FitResult(topics_in.lambda_matrix(), alpha, self.prior, trace.records, t, converged,
                         self.checkpointer.gamma_dir(t), num_partitions, outputs_written)

    def _topic_files(self, iteration: int, num_reducers: int, num_topics: int) -> TopicFiles:
        return TopicFiles(self.checkpointer.topics_dir(iteration), num_topics, num_reducers)
