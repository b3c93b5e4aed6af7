"""The Gibbs engine's driver: the loop of synchronisations over a model's count tables (the package's
docstring, :mod:`drivers.engines.gibbs`, describes a synchronisation)."""
from __future__ import annotations

import logging
import time
import uuid
from functools import partial

import numpy as np
from pyspark import StorageLevel

from drivers.engines.checkpoint import Trace, resumed
from drivers.engines.gibbs.checkpoint import DriverCheckpoint
from drivers.engines.gibbs.resident import ResidentSampler, resident_groups, resident_slots
from drivers.engines.gibbs.settings import (GibbsRecord, GibbsResult, GibbsSettings, SyncPlan, hyper_summary)
from drivers.engines.gibbs.sync_hub import HubError
from drivers.engines.gibbs.tables import TableLayout, check_tables, gather_tables, reduce_records
from drivers.engines.gibbs.tasks import output_task, partition_task, stage_task
from inference.errors import RefusedError
from inference.gibbs.model import DRIVER_PARTITION, GibbsModel, task_seed
from partitioners.topic import TopicPartitioner

log = logging.getLogger("spark_topics.train")

#: the partitions' counts of one synchronisation go to the driver (one Spark stage) while they fit in this
DRIVER_SUM_BYTES = 64 << 20
STATE_FORMAT = 2   # layout of the per-partition files (drivers.engines.gibbs.state); another's is refused


class GibbsEngine:
    """Runs a GibbsModel over an RDD of ``(partition, SegmentedBlock)`` with one block per partition."""

    def __init__(self, spark_context, model: GibbsModel, settings: GibbsSettings, checkpoint_dir: str):
        self.sc = spark_context
        self.model = model
        self.settings = settings
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint = DriverCheckpoint(checkpoint_dir, settings)
        self._run = uuid.uuid4().hex   # names this run's items in the Python workers' caches
        self._resident = None          # the ResidentSampler while one runs
        self._handles = None
        self.sync_used = "jobs"
        self.num_partitions = 0
        self.num_tokens = None         # known after the initialisation (or from the checkpoint)

    @property
    def run_id(self) -> str:
        return self._run

    def clear_checkpoint(self) -> None:
        self.checkpoint.clear()

    # ---- one synchronisation
    def _sums_on_driver(self, num_tokens: int | None = None) -> bool:
        """Whether the partitions' sparse counts go to the driver as task results (one stage per
        synchronisation) while their bound (:meth:`TableLayout.cells`: a partition's nonzeros are at most its
        tokens times a table's ``cells_per_token`` and the table's cells; 12 bytes each) fits in
        :data:`DRIVER_SUM_BYTES` (the same model either way)."""
        return 12 * self._layout.cells(self.num_partitions, num_tokens) <= DRIVER_SUM_BYTES

    def _run_job(self, description: str, plan: SyncPlan, values: tuple, partitioner: TopicPartitioner):
        """Partition tasks -> (TopicPartitioner -> reducers, or the driver) -> tables; returns (tables,
        partition records by partition). ``values``: (tables, derived, hyper, directive), broadcast."""
        layout = self._layout
        self.sc.setJobDescription(description + (" -> counts summed on the driver" if self._on_driver else
                                                 f" -> {partitioner!r} -> count-table reducers"))
        bc = self.sc.broadcast(values)
        try:
            mapped = self._handles.mapPartitionsWithIndex(partial(
                partition_task, model=self.model, run=self._run, directory=self.checkpoint_dir, bc_global=bc,
                seed=self.settings.seed, plan=plan, layout=layout))
            if self._on_driver:     # one stage: the reducers' sums, on the driver (exact integers, any order)
                results = list(reduce_records(mapped.collect(), layout))
            else:
                results = (mapped.partitionBy(partitioner.num_reducers, partitioner)
                           .mapPartitions(partial(reduce_records, layout=layout)).collect())
        finally:
            bc.destroy()            # no task of a later job reads it: the state is in files
        self._collected_at = time.time()
        return gather_tables(results, layout, self.num_partitions)

    def _synchronise(self, plan: SyncPlan, values: tuple, partitioner: TopicPartitioner):
        """One synchronisation by the resident sampler, or (none, or it died) by a Spark job: (tables, records,
        wall clock of the start)."""
        wall_began = time.time()
        if self._resident is not None:
            try:
                if self._resident.sent != plan:
                    self._resident.send(plan, *values)
                tables, parts = gather_tables(reduce_records(self._resident.receive(), self._layout),
                                              self._layout, self.num_partitions)
                self._collected_at = time.time()
                return tables, parts, wall_began
            except HubError as exc:     # a task died: the files of iteration first - 1 are complete
                self._lose_resident(plan.iterations[0], exc)
                wall_began = time.time()
        m, sched = self.settings.sweeps_per_sync, self.settings.schedule
        label = f"iteration {plan.last}" if m == 1 else f"iterations {plan.iterations[0]}-{plan.last}"
        tables, parts = self._run_job(f"{self.model.name} {label}/{sched.iterations}: sweep (AD-LDA)", plan, values,
                                      partitioner)
        return tables, parts, wall_began

    def _plan_after(self, t: int) -> SyncPlan:
        """The synchronisation after iteration ``t``: the next ``sweeps_per_sync`` iterations."""
        sched, m = self.settings.schedule, self.settings.sweeps_per_sync
        last = t + m
        return SyncPlan(tuple(range(t + 1, last + 1)), sched.is_sample(last), sched.last_sample(t))

    def _lose_resident(self, first: int, exc: Exception):
        """A resident task died before iteration ``first``: stop the stage, go on with a job per synchronisation
        (the files of iteration ``first - 1`` are complete)."""
        failure = self._resident.failure
        log.warning("resident sampler stopped before iteration %d (%s%s): going on with one Spark job per "
                    "synchronisation (the same model)", first, exc,
                    "" if failure is None else f"; the stage: {str(failure).splitlines()[0][:300]}")
        self._resident.stop(cancel=True)
        self._resident, self.sync_used = None, "resident, then jobs"

    def _start_resident(self, t: int):
        """A :class:`ResidentSampler` for the iterations after ``t`` when the settings allow one (else None: one
        Spark job per synchronisation). With more partitions than the cluster's task slots, each task of the
        barrier stage hosts several partitions (:func:`resident_groups`): the same model, one message pair per
        partition and synchronisation instead of a Spark job."""
        mode, P = self.settings.sync, self.num_partitions
        if mode == "jobs":
            return None
        why, slots = None, 0
        if not self._on_driver:
            why = "the partitions' counts are too large for the driver (they go through the reducers)"
        else:
            slots = resident_slots(self.sc)
            if not slots:
                why = "the cluster's task slots are unknown or change (dynamic allocation)"
        if why is not None:
            if mode == "resident":
                raise RefusedError(f"--sync resident: {why}; use --sync jobs or auto")
            log.info("one Spark job per synchronisation: %s", why)
            return None
        hosted = resident_groups(P, slots) if slots < P else None
        tasks = P if hosted is None else len(hosted)
        description = (f"{self.model.name}: resident sampler, iterations {t + 1}-{self.settings.schedule.iterations}"
                       f" ({P} partitions on {tasks} tasks of one barrier stage; counts summed on the driver)")
        try:
            resident = ResidentSampler(self, self._handles, self._layout, description, hosted)
        except (HubError, OSError) as exc:
            if mode == "resident":
                raise RefusedError(f"--sync resident: the resident sampler did not start ({exc})") from None
            log.warning("resident sampler did not start (%s): one Spark job per synchronisation", exc)
            return None
        log.info("resident sampler: %d tasks of one barrier stage%s, one message pair per partition and "
                 "synchronisation", tasks, "" if hosted is None else f" hosting {P} partitions")
        return resident

    def _log_timeline(self, parts, job_began: float) -> None:
        """Debug: when each partition's task started, how long each of its steps took, when its reducer
        started and ended, when the driver had the results and when it had the counts."""
        now = time.time()
        for r in parts:
            w = r[5]
            if len(w) == 7:
                log.debug("  partition %d: start +%.3f, state %.3f, sweep+stats %.3f, write %.3f, emit %.3f, "
                          "reducer start +%.3f, reduce %.3f, collected +%.3f, counts +%.3f", r[0],
                          w[0] - job_began, w[1] - w[0], w[2] - w[1], w[3] - w[2], w[4] - w[3], w[5] - job_began,
                          w[6] - w[5], self._collected_at - job_began, now - job_began)

    @staticmethod
    def _sum_stats(parts) -> np.ndarray:
        return GibbsEngine.summed_stats([r[1] for r in parts])

    @staticmethod
    def summed_stats(stats: list) -> np.ndarray:
        """partition_stats summed in partition order (shorter vectors zero-padded: an engine extension)."""
        size = max((s.shape[0] for s in stats), default=0)
        total = np.zeros(size)
        for s in stats:
            total[: s.shape[0]] += s
        return total

    # ---- fit
    def fit(self, blocks, num_partitions: int, hyper: dict, resume: bool = False,
            fingerprint: dict | None = None, on_iteration=None) -> GibbsResult:
        s, model = self.settings, self.model
        sched = s.schedule
        K, V = model.num_topics, model.vocab_size
        self.num_partitions = num_partitions
        tables_declared = model.count_tables()
        # the reducers share the dense tables' columns (LDA's nwk: the K topics) and the keyed tables' rows
        span = max([t.columns for t in tables_declared if not t.keyed] +
                   [s.num_reducers or self.sc.defaultParallelism for t in tables_declared if t.keyed])
        partitioner = TopicPartitioner.for_topics(span, s.num_reducers, self.sc.defaultParallelism)
        self._layout = TableLayout(tables_declared, partitioner.num_reducers)
        fingerprint = dict(fingerprint or {}, model=model.name, topics=K, vocab_size=V,
                           partitions=num_partitions, seed=s.seed, schedule=sched.to_json(),
                           sweeps_per_sync=s.sweeps_per_sync, state_format=STATE_FORMAT)

        self._on_driver = self._sums_on_driver()
        if not model.latent:
            return self._fit_counts(blocks, num_partitions, hyper, partitioner, resume, on_iteration)
        restored = self.checkpoint.load(self._layout) if resume else None
        if resumed(restored and restored[0], resume, self.checkpoint_dir, fingerprint):
            meta, tables, summary, directive = restored
            t = int(meta["iteration"])
            hyper = meta["hyper"]
            trace = Trace(GibbsRecord, meta["trace"])
            samples_taken = int(meta["samples"])
            num_docs, self.num_tokens = int(meta["documents"]), int(meta["tokens"])
            self._on_driver = self._sums_on_driver(self.num_tokens)
            last_checkpoint = t
        self._handles = blocks.mapPartitionsWithIndex(partial(
            stage_task, model=model, run=self._run, directory=self.checkpoint_dir)).setName(
            f"{model.name} staged blocks").persist(StorageLevel.MEMORY_ONLY)
        if restored is None:
            self.clear_checkpoint()   # files of an earlier run must not mix with this one's
            t, trace, samples_taken, last_checkpoint, directive = 0, Trace(GibbsRecord), 0, 0, None
            summary = None          # the model's summary of the samples (default: the sum of their K x V)
            began = time.perf_counter()
            tables, parts = self._run_job(f"{model.name}: random initial topics", SyncPlan(()),
                                          (None, None, hyper, None), partitioner)
            num_docs, self.num_tokens = sum(r[2] for r in parts), sum(r[3] for r in parts)
            self._on_driver = self._sums_on_driver(self.num_tokens)
            log.info("%s: K=%d, %d partitions, %d documents, %d tokens; initialised in %.2f s "
                     "(burn-in %d, %d samples at lag %d, %d iterations; counts summed on the %s)", model.name, K,
                     num_partitions, num_docs, self.num_tokens, time.perf_counter() - began, sched.burn_in,
                     sched.samples, sched.lag, sched.iterations,
                     "driver (one stage per iteration)" if self._on_driver else f"reducers ({partitioner!r})")
        derived = model.derive(tables)

        m = s.sweeps_per_sync
        self._resident = self._start_resident(t) if t < sched.iterations else None
        self.sync_used = "resident" if self._resident is not None else "jobs"
        try:
            while t < sched.iterations:
                began = time.perf_counter()
                plan = self._plan_after(t)
                t = plan.last
                used_hyper = hyper
                job_began = time.perf_counter()
                tables, parts, wall_began = self._synchronise(plan, (tables, derived, hyper, directive),
                                                              partitioner)
                job_seconds = time.perf_counter() - job_began
                self._log_timeline(parts, wall_began)
                stats = [r[1] for r in parts] if model.stats_by_partition else self._sum_stats(parts)
                hyper = model.update_hyper(hyper, stats, num_docs, task_seed(s.seed, t, DRIVER_PARTITION, 3))
                if t < sched.iterations:    # between two synchronisations: the model's global step
                    stepped, hyper, directive = model.global_step(tables, hyper, stats,
                                                                  task_seed(s.seed, t, DRIVER_PARTITION, 4))
                    if stepped is not tables:
                        check_tables(self._layout, stepped)
                    tables = stepped
                else:
                    directive = None
                derived = model.derive(tables)
                if self._resident is not None and t < sched.iterations:   # the tasks sweep on while the driver logs
                    try:
                        self._resident.send(self._plan_after(t), tables, derived, hyper, directive)
                    except HubError as exc:
                        self._lose_resident(t + 1, exc)
                if plan.sample:
                    summary = model.summarise_sample(summary, tables, derived, used_hyper)
                    samples_taken += 1
                loglik = model.loglik(tables, derived, hyper)
                seconds = time.perf_counter() - began
                sweep_seconds = sum(r[4] for r in parts)
                record = GibbsRecord(t, seconds, m * self.num_tokens / seconds,
                                     m * self.num_tokens / sweep_seconds if sweep_seconds > 0 else 0.0,
                                     loglik, loglik / max(self.num_tokens, 1), plan.sample, hyper_summary(hyper))
                trace.add(record, sched.iterations, f"log p(w | z) per token {record.loglik_per_token:.4f}"
                          + (f" (sample {samples_taken}/{sched.samples})" if plan.sample else ""))
                log.debug("iteration %d/%d  loglik=%.6e  per_token=%.4f  seconds=%.2f  tokens/s=%.3g  "
                         "sweep_tokens/s/core=%.3g%s%s", t, sched.iterations, loglik, record.loglik_per_token,
                         seconds, record.tokens_per_second, record.sweep_tokens_per_second,
                         "".join(f"  {k}={v:.4g}" for k, v in record.hyper.items()),
                         f"  [sample {samples_taken}/{sched.samples}]" if plan.sample else "")
                if self.checkpoint.is_checkpoint(t):
                    self.checkpoint.save(t, {"fingerprint": fingerprint, "hyper": hyper,
                                             "trace": trace.to_json(), "samples": samples_taken,
                                             "documents": num_docs, "tokens": self.num_tokens},
                                         self._layout, tables, summary, directive,
                                         [r[1] for r in parts] if t == sched.iterations else None)
                    last_checkpoint = t
                self.checkpoint.prune(t, last_checkpoint)
                log.debug("iteration %d: before the job %.3f s, synchronisation %.3f s, driver %.3f s, summed "
                          "sweep %.3f s", t, job_began - began, job_seconds,
                          time.perf_counter() - job_began - job_seconds, sweep_seconds)
                if on_iteration is not None:
                    on_iteration(record)
            if self._resident is not None:
                self._resident.stop()
                self._resident = None
        finally:
            if self._resident is not None:      # an error in the loop: no task may outlive the run
                self._resident.stop(cancel=True)
            self._resident = None
        self.sc.setJobDescription(None)
        if samples_taken == 0:
            raise RuntimeError("no sample was taken (check --burn-in, --lag, --samples)")
        states = self._handles.mapPartitionsWithIndex(partial(
            output_task, model=model, run=self._run, directory=self.checkpoint_dir, iteration=t,
            acc_iteration=sched.last_sample(t))).setName(f"gibbs state {t}")
        topic_word = model.topic_word_of_samples(summary, samples_taken, tables, derived, hyper)
        return GibbsResult(topic_word, hyper, trace.records, t, samples_taken, states, num_partitions,
                           self.num_tokens, num_docs, "driver" if self._on_driver else "reducers", tables,
                           self.sync_used)

    def _fit_counts(self, blocks, num_partitions: int, hyper: dict, partitioner, resume: bool,
                    on_iteration=None) -> GibbsResult:
        """A model without latent variables (``model.latent`` False, a bigram language model): one pass counts its
        tables (the initialisation's job), the driver's global step fits the hyperparameters to them, and that is
        the model (one record, one sample). Nothing is sampled, so there is nothing to resume: ``resume`` runs the
        pass again, which gives the same model."""
        model, s = self.model, self.settings
        if resume:
            log.info("--resume: %s samples nothing, its one counting pass is the run", model.name)
        self.clear_checkpoint()
        self._handles = blocks.mapPartitionsWithIndex(partial(
            stage_task, model=model, run=self._run, directory=self.checkpoint_dir)).setName(
            f"{model.name} staged blocks").persist(StorageLevel.MEMORY_ONLY)
        began = time.perf_counter()
        tables, parts = self._run_job(f"{model.name}: counts (nothing to sample)", SyncPlan(()),
                                      (None, None, hyper, None), partitioner)
        num_docs, self.num_tokens = sum(r[2] for r in parts), sum(r[3] for r in parts)
        counted = time.perf_counter() - began
        stepped, hyper, directive = model.global_step(tables, hyper, self._sum_stats(parts),
                                                      task_seed(s.seed, 1, DRIVER_PARTITION, 4))
        if directive is not None:
            raise RuntimeError(f"{model.name}: a model without latent variables has no state a directive could change")
        if stepped is not tables:
            check_tables(self._layout, stepped)
        tables = stepped
        derived = model.derive(tables)
        summary = model.summarise_sample(None, tables, derived, hyper)
        loglik = model.loglik(tables, derived, hyper)
        seconds = time.perf_counter() - began
        record = GibbsRecord(1, seconds, self.num_tokens / seconds, 0.0, loglik,
                             loglik / max(self.num_tokens, 1), True, hyper_summary(hyper))
        log.info("%s: %d partitions, %d documents, %d tokens counted in %.2f s; fitted in %.2f s  loglik=%.6e  "
                 "per_token=%.4f%s", model.name, num_partitions, num_docs, self.num_tokens, counted,
                 seconds - counted, loglik, record.loglik_per_token,
                 "".join(f"  {k}={v:.4g}" for k, v in record.hyper.items()))
        if on_iteration is not None:
            on_iteration(record)
        self.sc.setJobDescription(None)
        states = self._handles.mapPartitionsWithIndex(partial(
            output_task, model=model, run=self._run, directory=self.checkpoint_dir, iteration=0,
            acc_iteration=None)).setName(f"{model.name} counted state")
        return GibbsResult(model.topic_word_of_samples(summary, 1, tables, derived, hyper), hyper, [record], 1, 1,
                           states, num_partitions, self.num_tokens, num_docs,
                           "driver" if self._on_driver else "reducers", tables, "jobs")

    def release(self) -> None:
        """Unpersist the staged handles (the workers' caches are replaced by the next run)."""
        if self._handles is not None:
            self._handles.unpersist()
            self._handles = None
