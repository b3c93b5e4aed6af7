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
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from drivers import storage
from drivers.engines.checkpoint import check_fingerprint
from drivers.engines.variational.checkpoint import Checkpointer
from drivers.engines.variational.topic_store import TopicFiles
from inference.constraints import AT_LEAST_0, AT_LEAST_1, validate
from inference.dirichlet import newton_alpha
from inference.elbo import alpha_terms
from inference.errors import DamagedError
from inference.layout import VocabLayout
from inference.mapper import RECORD_ENTRIES, TOTALS, EStepSettings, doc_topic_counts, hybrid_block, map_block
from inference.reducer import BatchUpdate, reduce_topics, sum_in_partition_order, topic_weights
from inference.word_weights import check_finite
from partitioners.topic import STATISTICS_KEY, TopicPartitioner

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


# --------------------------------------------------------------------------- plug-ins

class EStep:
    """The default local step: the variational E-step of Alg. 1 (:func:`inference.mapper.map_block`), warm-started
    from the partition's gamma of the previous iteration, with the E-step schedule of :meth:`EMSettings.estep_at`."""

    name = "E-step"
    mean_weights = False     # the mappers get E_q[log beta] (eq 3.4)

    def __init__(self, settings: EMSettings):
        self.settings = settings

    def plan(self, iteration: int, trace: list) -> EStepSettings:
        """The driver's plan of one iteration (shipped to the tasks)."""
        return self.settings.estep_at(iteration, trace)

    def run(self, partition: int, block, state, log_weights: np.ndarray, alpha: np.ndarray, plan: EStepSettings,
            topic_groups):
        """``(new state, topic records, statistics vector)`` of one partition (no Spark); ``log_weights`` are
        the (U, K) E_q[log beta] of the block's vocabulary."""
        return map_block(partition, block, state, log_weights, alpha, plan, topic_groups)

    objective_name = "elbo"

    def objective(self, doc_terms: float, alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> float:
        """The documents' part of the iteration's objective: the per-document ELBO terms and the alpha terms
        (eq 3.4); the engine adds the topics' prior and entropy terms."""
        return doc_terms + alpha_terms(alpha, alpha_stats, n_docs)

    def gamma(self, block, state, alpha: np.ndarray) -> np.ndarray:
        """(D, K) variational Dirichlet parameters of the block's documents from the partition's state."""
        return state


@dataclass(frozen=True)
class HybridPlan:
    iteration: int
    seed: int
    burn_in: int
    samples: int
    average_digammas: bool = False    # the alpha statistics from the samples' mean of Psi (else Psi of the mean)


class HybridStep:
    """The hybrid variational-MCMC local step (thesis §4.2, :func:`inference.mapper.hybrid_block`): theta
    marginalised, each document's topic assignments Gibbs-sampled given E_q[log beta] (4.9), ``burn_in`` sweeps
    then ``samples`` kept sweeps averaged into sparse statistics (4.10); the partition's state is every token's
    topic (the next iteration's warm start). Draws are seeded by (seed, iteration, document)."""

    name = "hybrid sampling"
    objective_name = "log_joint"

    def __init__(self, seed: int, burn_in: int = 5, samples: int = 5, mean_weights: bool = False,
                 alpha_warmup: int | None = None):
        validate({"hybrid_burn_in": burn_in, "hybrid_samples": samples, "hybrid_alpha_warmup": alpha_warmup},
                 {"hybrid_burn_in": AT_LEAST_0, "hybrid_samples": AT_LEAST_1,
                  "hybrid_alpha_warmup": AT_LEAST_0})    # (the flag's -1 arrives as None)
        self.seed, self.burn_in, self.samples = int(seed), int(burn_in), int(samples)
        #: EM iterations whose alpha statistics use Psi of the kept samples' mean counts (a smoothing that helps
        #: while the topics form) before the samples' mean of Psi (unbiased: no upward drift of alpha); None:
        #: the mean counts throughout
        self.alpha_warmup = alpha_warmup
        #: the word factor of (4.9): exp(E_q[log beta_kw]) (the thesis), or E_q[beta_kw] (a collapsed sampler's
        #: (n_kw + eta) / (n_k + V eta) with the counts of the last iteration)
        self.mean_weights = bool(mean_weights)

    def plan(self, iteration: int, trace: list) -> HybridPlan:
        average = self.alpha_warmup is not None and iteration > self.alpha_warmup
        return HybridPlan(iteration, self.seed, self.burn_in, self.samples, average)

    def run(self, partition: int, block, state, log_weights: np.ndarray, alpha: np.ndarray, plan: HybridPlan,
            topic_groups):
        return hybrid_block(partition, block, state, log_weights, alpha, plan.seed, plan.iteration, plan.burn_in,
                            plan.samples, topic_groups, average_digammas=plan.average_digammas)

    def objective(self, doc_terms: float, alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> float:
        """The kept samples' mean log p(z_d | alpha) + sum_n E_q[log beta_{z_dn w_dn}] summed over documents (the
        unnormalised log of (4.8)): a sampled quantity, so it wanders by its noise once EM has converged."""
        return doc_terms

    def gamma(self, block, state, alpha: np.ndarray) -> np.ndarray:
        """alpha + the document-topic counts of the last sample (q(theta_d) given the state)."""
        return alpha[None, :] + doc_topic_counts(block, state, alpha.shape[0])


class RandomStart:
    """lambda^(0) ~ Gamma(100, 1/100) entrywise from the run's seed (shaped by an informed prior), alpha^(0) from
    the settings (default 1/K)."""

    def initial(self, settings: EMSettings, vocab_size: int, prior) -> tuple[np.ndarray, np.ndarray]:
        K = settings.num_topics
        lambda_ = initial_lambda(K, vocab_size, settings.seed)
        if hasattr(prior, "shape_initial_lambda"):
            lambda_ = prior.shape_initial_lambda(lambda_)
        return lambda_, initial_alpha(settings.alpha, K)


class WarmStart:
    """lambda^(0) and alpha^(0) given, e.g. a trained model's (``TopicModel.lambda_``, ``TopicModel.alpha``): the
    start of a refresh on new documents."""

    def __init__(self, lambda_: np.ndarray, alpha: np.ndarray):
        self.lambda_ = np.array(lambda_, dtype=np.float64, copy=True)
        self.alpha = np.array(alpha, dtype=np.float64, copy=True)

    def initial(self, settings: EMSettings, vocab_size: int, prior) -> tuple[np.ndarray, np.ndarray]:
        if self.lambda_.shape != (settings.num_topics, vocab_size) or self.alpha.shape != (settings.num_topics,):
            raise ValueError(f"a warm start of lambda {self.lambda_.shape} and alpha {self.alpha.shape} does not fit "
                             f"K={settings.num_topics}, V={vocab_size}")
        return self.lambda_.copy(), self.alpha.copy()


class GuidedStart:
    """A cold start guided by earlier topics: lambda^(0)_k = RandomStart's lambda^(0)_k + ``weight`` * the
    topic-word distribution of ``statistics[k]`` (a trained model's lambda_k - eta_k), alpha^(0) from the settings.

    Each earlier topic enters as ``weight`` pseudo-tokens on top of the near-flat Gamma(100, 1/100) start, so EM
    re-forms the topics over all the data (as from a cold start) while topic k grows from topic k. Measured on
    three corpus orders (tests/bench/bench_refresh.py): from the trained lambda itself (:class:`WarmStart`) EM stays
    in that model's optimum, 8-12% behind a cold retrain in held-out perplexity; from this start with weight 100
    it matches or beats a 50-iteration cold retrain within 10 iterations, every topic matched to its predecessor."""

    def __init__(self, statistics: np.ndarray, weight: float):
        statistics = np.clip(np.asarray(statistics, dtype=np.float64), 0.0, None)
        totals = statistics.sum(axis=1, keepdims=True)
        self.guide = float(weight) * np.divide(statistics, totals, out=np.zeros_like(statistics), where=totals > 0)

    def initial(self, settings: EMSettings, vocab_size: int, prior) -> tuple[np.ndarray, np.ndarray]:
        if self.guide.shape != (settings.num_topics, vocab_size):
            raise ValueError(f"a guide of {self.guide.shape} does not fit K={settings.num_topics}, V={vocab_size}")
        lambda_, alpha = RandomStart().initial(settings, vocab_size, prior)
        return lambda_ + self.guide, alpha


class NewtonAlpha:
    """The M-step of alpha: Newton-Raphson on the documents' sum of E_q[log theta_d] (thesis §3.2.4); with
    ``previous_stats`` / ``previous_docs`` on those sums plus the documents of earlier batches (a refresh that
    accumulates)."""

    def __init__(self, previous_stats=None, previous_docs: float = 0.0):
        self.previous_stats = None if previous_stats is None else np.asarray(previous_stats, dtype=np.float64)
        self.previous_docs = float(previous_docs)

    def __call__(self, iteration: int, alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> np.ndarray:
        if self.previous_stats is None:
            return newton_alpha(alpha, alpha_stats, n_docs)
        return newton_alpha(alpha, alpha_stats + self.previous_stats, n_docs + self.previous_docs)


class OnlineAlpha:
    """Online alpha (as gensim and MLlib): alpha <- (1 - rho_t) alpha + rho_t alpha_hat, alpha_hat the batch's
    Newton-Raphson optimum, with the step size of the topic update (``update.at(t).rho``)."""

    def __init__(self, update):
        self.update = update

    def __call__(self, iteration: int, alpha: np.ndarray, alpha_stats: np.ndarray, n_docs: float) -> np.ndarray:
        rho = self.update.at(iteration).rho
        return (1.0 - rho) * alpha + rho * newton_alpha(alpha, alpha_stats, n_docs)


def initial_alpha(alpha, K: int) -> np.ndarray:
    if alpha is None:
        return np.full(K, 1.0 / K)
    out = np.full(K, float(alpha)) if np.isscalar(alpha) else np.asarray(alpha, dtype=np.float64)
    if out.shape != (K,) or not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ValueError(f"alpha must be a positive scalar or {K} positive values")
    return out


def initial_lambda(num_topics: int, vocab_size: int, seed: int) -> np.ndarray:
    """lambda^(0) ~ Gamma(100, 1/100) entrywise, from the driver's seeded generator."""
    return np.random.default_rng(seed).gamma(100.0, 0.01, size=(num_topics, vocab_size))


# --------------------------------------------------------------------------- the tasks

def collect_checked(job, when: str) -> list:
    """``job.collect()``; a task that raised ``FloatingPointError`` (a non-finite value, named where it appeared:
    :func:`inference.word_weights.check_finite`) fails the run at once with ``when`` and the task's message."""
    try:
        return job.collect()
    except FloatingPointError as exc:
        raise FloatingPointError(f"{when}: {exc}") from None
    except Exception as exc:
        raised = [line.strip() for line in str(exc).splitlines() if line.strip().startswith("FloatingPointError: ")]
        if raised:
            raise FloatingPointError(f"{when}: {raised[-1].removeprefix('FloatingPointError: ')}") from None
        raise


def _mapper_task(partition, blocks, local_step, plan, bc_alpha, topics_in: TopicFiles, state_in, state_out,
                 topic_groups):
    """Spark task: the local step over one partition (Alg. 1 with in-mapper combining)."""
    alpha = bc_alpha.value
    for block_partition, block in blocks:
        if block_partition != partition:
            raise RuntimeError(f"block of partition {block_partition} arrived in partition {partition}")
        state = storage.load_npy(Checkpointer.gamma_file(state_in, partition)) if state_in else None
        new_state, records, statistics = local_step.run(partition, block, state,
                                                        topics_in.log_word_weights(block.vocab_ids), alpha, plan,
                                                        topic_groups)
        storage.save_npy(Checkpointer.gamma_file(state_out, partition), new_state)
        for first_topic, record in records:
            yield (first_topic, partition), record
        yield (STATISTICS_KEY, partition), (partition, statistics)


def _reducer_task(reducer, records, bc_structure, update, num_statistics, topics_in: TopicFiles,
                  topics_out: TopicFiles, mean_weights=False):
    """Spark task: reducer ``reducer`` (Alg. 3): lambda and the mappers' weights of the topics the
    TopicPartitioner routes here, written to the iteration's topic files; the driver gets each topic's
    :class:`TopicTerms` and (reducer 0) the partitions' statistics vectors summed in partition order."""
    prior, layout = bc_structure.value
    statistics = []

    def topic_records():   # the shuffle sorted by (first topic, partition): the statistics vectors come first
        for (first_topic, _), value in records:
            if first_topic == STATISTICS_KEY:
                statistics.append(value)
            else:
                yield value

    topics = topics_out.topic_groups[reducer]
    previous = topics_in.lambda_row_reader() if update.needs_previous or layout.needs_previous else None
    lambda_rows, weight_columns = None, None
    for i, u in enumerate(reduce_topics(topics, topic_records(), prior.row, layout, update, previous,
                                        mean_weights)):
        if i == 0 and statistics:
            yield STATISTICS_KEY, sum_in_partition_order(statistics, num_statistics)
        if lambda_rows is None:
            lambda_rows = np.empty((len(topics), u.lambda_row.shape[0]))
            weight_columns = np.empty((u.log_weight_row.shape[0], len(topics)))
        lambda_rows[i], weight_columns[:, i] = u.lambda_row, u.log_weight_row
        yield u.terms()
    topics_out.write(reducer, lambda_rows, weight_columns)


def write_start(files: TopicFiles, lambda_: np.ndarray, prior, layout, mean_weights: bool = False):
    """The start's topic files (iteration 0), written by the driver as the reducers would; returns the topics'
    prior and entropy terms of the ELBO (K each)."""
    prior_terms, entropy_terms = np.empty(files.num_topics), np.empty(files.num_topics)
    for reducer, topics in enumerate(files.topic_groups):
        weight_columns = np.empty((layout.vocab_size, len(topics)))
        for i, k in enumerate(topics):
            u = topic_weights(k, lambda_[k], prior.row(k), layout, mean_weights)
            weight_columns[:, i], prior_terms[k], entropy_terms[k] = u.log_weight_row, u.prior_term, u.entropy_term
        files.write(reducer, lambda_[topics], weight_columns)
    return prior_terms, entropy_terms


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
            fingerprint: dict | None = None, on_iteration=None) -> FitResult:
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

        restored = self.checkpointer.load() if resume else None
        if restored is not None:
            state = restored
            check_fingerprint(state.get("fingerprint", {}), fingerprint)
            start = state["iteration"]
            alpha = np.array(state["alpha"], dtype=np.float64)
            if state.get("eta") is not None and getattr(self.prior, "learnable", False):
                self.prior = type(self.prior)(state["eta"], V)
            trace = [IterationRecord(**r) for r in state["trace"]]
            converged = bool(state.get("converged", False))
            topics_in = files_of(start, state["reducers"])
            prior_terms = np.array(state["prior_terms"], dtype=np.float64)
            entropy_terms = np.array(state["entropy_terms"], dtype=np.float64)
            if not topics_in.complete():
                raise DamagedError(f"cannot resume: the topic files of iteration {start} are missing from "
                                   f"{self.checkpointer.directory}. Remove the checkpoint directory or drop --resume.")
            log.info("resuming from checkpoint %s after iteration %d", self.checkpointer.directory, start)
        else:
            if resume:
                log.warning("--resume: no checkpoint in %s, starting from scratch", self.checkpointer.directory)
            start, trace, converged = 0, [], False
            lambda_, alpha = self.start.initial(s, layout.parameter_size, self.prior)
            topics_in = files_of(0, partitioner.num_reducers)
            prior_terms, entropy_terms = write_start(topics_in, lambda_, self.prior, layout, mean_weights)
            del lambda_

        t = start
        while t < s.max_iterations and not converged:
            t += 1
            began = time.perf_counter()
            self.sc.setJobDescription(f"LDA iteration {t}/{s.max_iterations}: "
                                      f"{self.local_step.name} -> {partitioner!r} -> lambda reducers")
            estep = self.local_step.plan(t, trace)
            bc_alpha = self.sc.broadcast(alpha)
            bc_structure = self.sc.broadcast((self.prior, layout))
            state_in = self.checkpointer.gamma_dir(t - 1) if t > 1 else None
            topics_out = files_of(t, partitioner.num_reducers)
            update = self.update.at(t) if hasattr(self.update, "at") else self.update
            job = (blocks
                   .mapPartitionsWithIndex(partial(_mapper_task, local_step=self.local_step, plan=estep,
                                                   bc_alpha=bc_alpha, topics_in=topics_in, state_in=state_in,
                                                   state_out=self.checkpointer.gamma_dir(t),
                                                   topic_groups=record_groups))
                   .repartitionAndSortWithinPartitions(partitioner.num_reducers, partitioner)
                   .mapPartitionsWithIndex(partial(_reducer_task, bc_structure=bc_structure, update=update,
                                                   num_statistics=K + len(TOTALS), topics_in=topics_in,
                                                   topics_out=topics_out, mean_weights=mean_weights)))
            results = collect_checked(job, f"iteration {t}/{s.max_iterations}")
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

            previous = trace[-1].elbo if trace else None
            rel = None if previous is None else (elbo - previous) / abs(previous)
            record = IterationRecord(t, float(elbo), time.perf_counter() - began,
                                     float(inner / max(n_docs, 1)),
                                     float(restarts_kept / restarts_tried) if restarts_tried else 0.0, float(alpha.sum()),
                                     float(self.prior.eta) if hasattr(self.prior, "eta") else None,
                                     None if rel is None else float(rel),
                                     float(estep.tol) if hasattr(estep, "tol") else None)
            trace.append(record)
            converged = bool(rel is not None and s.tol > 0 and abs(rel) < s.tol)
            log.info("iteration %d/%d  %s=%.6e  change=%s  seconds=%.2f  tokens/s=%.3g  mean_inner=%.1f%s%s  "
                     "alpha_sum=%.4g", t, s.max_iterations, self.local_step.objective_name, elbo,
                     "-" if rel is None else f"{rel:.3e}", record.seconds, tokens / record.seconds,
                     record.mean_inner_iterations, "" if record.estep_tol is None else f"  estep_tol={estep.tol:.1e}",
                     f"  restarts_kept={record.restart_fraction:.1%} of {int(restarts_tried)}" if restarts_tried else "",
                     record.alpha_sum)
            self.checkpointer.save(t, {
                "fingerprint": fingerprint, "alpha": alpha.tolist(), "eta": self.prior.to_json(),
                "trace": [r.__dict__ for r in trace], "converged": converged,
                "reducers": topics_in.num_reducers, "prior_terms": prior_terms.tolist(),
                "entropy_terms": entropy_terms.tolist()})
            log.debug("iteration %d: Spark job %.3f s, driver %.3f s", t, job_seconds,
                      time.perf_counter() - began - job_seconds)
            if on_iteration is not None:
                on_iteration(record)
        self.sc.setJobDescription(None)
        if converged:
            log.info("converged after %d iterations (|relative ELBO change| < %g)", t, s.tol)
        return FitResult(topics_in.lambda_matrix(), alpha, self.prior, trace, t, converged,
                         self.checkpointer.gamma_dir(t), num_partitions)

    def _topic_files(self, iteration: int, num_reducers: int, num_topics: int) -> TopicFiles:
        return TopicFiles(self.checkpointer.topics_dir(iteration), num_topics, num_reducers)
