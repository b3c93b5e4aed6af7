"""The Gibbs engine on Spark: per-partition samplers (AD-LDA) -> TopicPartitioner -> reducers -> driver.

Any :class:`inference.gibbs.model.GibbsModel` runs on it; per iteration it
performs exactly the steps of :func:`inference.gibbs.local.run_local`, with one
partition per block, in one Spark job of one or two stages:

1. the driver broadcasts the global topic-word counts ``nwk`` (V x K int32),
   ``nk`` and the hyperparameters;
2. one Python task per partition (``mapPartitionsWithIndex`` over a cached RDD
   of small handles: each block is staged once, to a file and the Python
   worker's memory, so an iteration ships no corpus data) takes the
   partition's block and its state of the previous iteration (kept by the
   Python worker that wrote it, else read from its files:
   :mod:`drivers.gibbs_state`), runs ``model.sweep`` on a private copy of the
   counts (AD-LDA, Newman et al. 2009), then ``local_hyper_update`` and
   ``partition_stats``, seeded by ``task_seed(seed, iteration, partition,
   purpose)``, writes the new state to files of this iteration, and emits its
   nonzero counts of (w, z) per topic group (sparse: flat indices and int32
   counts), keyed by the group's first topic, and its statistics under the
   reserved key;
3. ``partitionBy(R, TopicPartitioner)`` (the same partitioner as the
   variational jobs) routes them to R reducers that sum them into dense
   V x |group| int32 columns; the partition records pass through reducer 0.
   While the counts of all partitions fit in a task result
   (:data:`DRIVER_SUM_BYTES`), the driver sums them instead (the same
   reduce function, exact integers): one stage per synchronisation, which
   saves Spark's shuffle stage (~0.1-0.2 s) every iteration;
4. the driver rebuilds ``nwk``/``nk`` from the reducers (exact integer sums,
   so independent of partition order), sums ``partition_stats`` in partition
   order, calls ``model.update_hyper``, logs a line and, on sample
   iterations, adds the topic-word point estimate to the running average.

With ``sweeps_per_sync`` = m > 1 every partition runs m sweeps (iterations
t+1..t+m, each seeded by its own iteration number) on its private counts
before the next synchronisation, which amortises the per-job cost of Spark;
hyperparameters are then updated once per synchronisation.

Samples: after ``burn_in`` iterations, every ``lag``-th iteration is a sample
(``samples`` of them, thesis §11.1); the topic-word matrix and each
partition's document and segment topic proportions are averaged over them (the
tasks add a sample's proportions to the sums of the previous one and write
them to files of the sample's iteration).

State and checkpoints: every task writes its partition's state after each
iteration under a name of that iteration (``.npz``, no pickle), so a retried
task never reads what it wrote and reproduces its result; no RDD lineage grows
and no broadcast outlives its job. Every ``checkpoint_every`` iterations and at
the end the driver writes ``nwk``, the topic-word sum and ``state.json``
(last, atomically); the state files of the last KEEP_CHECKPOINTS checkpoints
stay, other iterations' go once no task needs them. ``resume`` continues from
the last checkpoint and ends with the model an uninterrupted run gives. Every
draw is a function of (seed, iteration, partition) and every sum runs in a
fixed order, so a seed gives the same model on any master and after task
retries.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from functools import partial

import numpy as np
from pyspark import StorageLevel

from drivers import gibbs_state, storage
from drivers.checkpoint import check_fingerprint
from drivers.gibbs_state import check_state
from drivers.sync_hub import HubError
from inference.gibbs.counts import group_nonzeros
from inference.gibbs.model import DRIVER_PARTITION, GibbsModel, task_seed
from partitioners.topic import STATISTICS_KEY, TopicPartitioner

log = logging.getLogger("spark_topics.train")

KEEP_CHECKPOINTS = 2
#: the partitions' counts of one synchronisation go to the driver (one Spark stage) while they fit in this
DRIVER_SUM_BYTES = 64 << 20
STATE_FORMAT = 2   # layout of the per-partition files (drivers.gibbs_state); a checkpoint of another is refused


# --------------------------------------------------------------------------- settings and results

@dataclass
class SampleSchedule:
    """Burn-in, then ``samples`` samples ``lag`` iterations apart: iterations burn_in + j * lag, j = 1..samples."""
    iterations: int
    burn_in: int
    lag: int
    samples: int

    @classmethod
    def resolve(cls, iterations: int, burn_in: int | None = None, lag: int | None = None,
                samples: int | None = None) -> "SampleSchedule":
        """Fill unset values: 5 samples (at most ``iterations``), lag N/10 (or what fits after the
        burn-in), burn-in = what is left before the samples, e.g. N = 1000 gives 500 + 5 x 100."""
        if iterations < 1:
            raise ValueError("--iterations must be at least 1")
        S = samples if samples is not None else min(5, iterations)
        if S < 1:
            raise ValueError("--samples must be at least 1")
        if lag is None:
            room = iterations - (burn_in if burn_in is not None else iterations // 2)
            lag = max(1, room // S) if burn_in is not None else max(1, min(iterations // 10, room // S))
        if lag < 1:
            raise ValueError("--lag must be at least 1")
        B = burn_in if burn_in is not None else iterations - S * lag
        if B < 0 or B + S * lag > iterations:
            raise ValueError(f"burn-in {B} + {S} samples x lag {lag} = {B + S * lag} iterations, "
                             f"more than --iterations {iterations}")
        return cls(iterations, B, lag, S)

    def is_sample(self, t: int) -> bool:
        return t > self.burn_in and (t - self.burn_in) % self.lag == 0 and (t - self.burn_in) // self.lag <= self.samples

    def last_sample(self, t: int) -> int | None:
        """The last sample iteration up to ``t`` (None before the first)."""
        j = min(self.samples, (t - self.burn_in) // self.lag) if t > self.burn_in else 0
        return self.burn_in + j * self.lag if j >= 1 else None

    def to_json(self) -> dict:
        return {"iterations": self.iterations, "burn_in": self.burn_in, "lag": self.lag, "samples": self.samples}


@dataclass
class GibbsSettings:
    schedule: SampleSchedule
    seed: int = 0
    num_reducers: int | None = None
    checkpoint_every: int = 10
    sweeps_per_sync: int = 1          # local sweeps between two synchronisations of the counts (AD-LDA: 1)
    sync: str = "auto"                # "resident" (one barrier stage), "jobs" (a Spark job each), "auto"

    def __post_init__(self):
        m, sched = int(self.sweeps_per_sync), self.schedule
        if m < 1:
            raise ValueError("--sweeps-per-sync must be at least 1")
        if self.sync not in ("auto", "resident", "jobs"):
            raise ValueError(f"--sync must be auto, resident or jobs, got {self.sync!r}")
        bad = [f"{name} {value}" for name, value in (("iterations", sched.iterations), ("burn-in", sched.burn_in),
                                                      ("lag", sched.lag), ("checkpoint-every", self.checkpoint_every))
               if value % m]
        if bad:
            raise ValueError(f"with --sweeps-per-sync {m}, iterations, burn-in, lag and checkpoint-every must be "
                             f"multiples of {m} (samples and checkpoints fall on synchronisations): "
                             + ", ".join(bad))


@dataclass
class GibbsRecord:
    iteration: int
    seconds: float
    tokens_per_second: float        # tokens of the corpus / wall seconds of the iteration
    sweep_tokens_per_second: float  # tokens / summed sweep seconds of the tasks (kernel speed per core)
    loglik: float                   # log p(w | z, beta), Phi integrated out
    loglik_per_token: float
    sample: bool
    hyper: dict                     # scalars of the hyperparameters after the update (vectors: their sum)


@dataclass
class GibbsResult:
    topic_word: np.ndarray          # K x V posterior mean over the samples
    hyper: dict
    trace: list
    iterations: int
    samples: int
    states: object                  # RDD of (partition, item) after the last iteration, read on demand
    num_partitions: int
    num_tokens: int
    num_documents: int              # documents as the model sees them (LDA_P: segments)
    counts_summed_on: str = "reducers"   # "driver": one Spark stage per synchronisation
    shared_counts: np.ndarray | None = None   # the shared table after the last iteration (rows x K int32)
    sync: str = "jobs"              # how partitions synchronised: "resident", "jobs", "resident, then jobs"


def hyper_summary(hyper: dict) -> dict:
    """The numbers of ``hyper`` worth a log line: floats as they are, vectors by their sum."""
    out = {}
    for key, value in hyper.items():
        if isinstance(value, bool) or key == "cycles":
            continue
        if isinstance(value, float):
            out[key] = value
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
            out[f"{key}_sum"] = float(np.sum(value))
    return out


# --------------------------------------------------------------------------- the tasks

@dataclass(frozen=True)
class SyncPlan:
    """What every partition does in one synchronisation (one Spark job)."""
    iterations: tuple               # iteration numbers to sweep, consecutive; () initialises instead
    sample: bool = False            # the last one is a sample: add the proportions to the sums
    previous_sample: int | None = None   # the sample iteration whose sums this sample adds to

    @property
    def last(self) -> int:
        return self.iterations[-1] if self.iterations else 0


def _accumulate(model: GibbsModel, item: dict, acc: dict, hyper: dict) -> dict:
    """``acc`` plus this sample's document and segment topic proportions."""
    block, state = item["block"], item["state"]
    doc = model.doc_topic(block, state, hyper)
    seg = model.segment_topic(block, state, hyper)
    return dict(acc, doc=doc if "doc" not in acc else acc["doc"] + doc,
                seg=seg if "seg" not in acc else acc["seg"] + seg, samples=acc["samples"] + 1)


def _only_one(partition: int, items):
    """The one (partition, value) record of the partition (the whole input is read: Spark reuses a worker
    only then)."""
    records = list(items)
    if len(records) != 1 or records[0][0] != partition:
        raise RuntimeError(f"partition {partition} expects its one record, got {[p for p, _ in records]}")
    return records[0][1]


def _stage_task(partition, items, model, run, directory):
    """The block of the partition staged (:func:`drivers.gibbs_state.stage`): its handle."""
    yield gibbs_state.stage(run, partition, model, _only_one(partition, items), directory)


def _sweep(model: GibbsModel, item: dict, global_values, seed: int, partition: int, plan: SyncPlan) -> tuple:
    """Sweeps (or initialises) the item's state in place on a private copy of the counts (AD-LDA); returns
    (partition statistics, sweep seconds)."""
    nwk_global, nk_global, hyper = global_values
    block = item["block"]
    began = time.perf_counter()
    if not plan.iterations:
        R, K = model.shared_rows, model.num_topics
        nwk, nk = np.zeros((R, K), dtype=np.int32), np.zeros(K, dtype=np.int64)
        item["state"] = model.init_state(block, hyper, nwk, nk, task_seed(seed, 0, partition))
        check_state(model, block, item["state"])
        return np.zeros(0), 0.0
    nwk, nk = nwk_global.copy(), nk_global.copy()
    for t in plan.iterations:
        model.sweep(block, item["state"], hyper, nwk, nk, task_seed(seed, t, partition))
        model.local_hyper_update(block, item["state"], hyper, task_seed(seed, t, partition, 1))
    seconds = time.perf_counter() - began
    stats = model.partition_stats(block, item["state"], hyper, task_seed(seed, plan.last, partition, 2))
    return np.asarray(stats, dtype=np.float64), seconds


def _count_records(partition: int, item: dict, model: GibbsModel, topic_groups):
    """One record per topic group: the partition's nonzero counts of (w, z) for the group's topics, as flat
    indices w * |group| + j (int32 where every index fits) and int32 counts."""
    row_ids, counts = model.shared_counts(item["block"], item["state"], (item["vocab_ids"], item["local"]))
    row_ids = row_ids.astype(np.int64)
    counts = np.ascontiguousarray(counts, dtype=np.int32)
    for topics in topic_groups:
        dtype = np.int32 if model.shared_rows * len(topics) <= np.iinfo(np.int32).max else np.int64
        flat, values = group_nonzeros(counts, row_ids, np.asarray(topics, dtype=np.int64),
                                      np.empty(counts.shape[0] * len(topics), dtype=dtype))
        yield topics[0], (partition, flat, values)


def _partition_sync(partition, model, run, directory, global_values, seed, plan, topic_groups) -> list:
    """One partition's share of a synchronisation: its state (this worker's or the files), the sweeps, the
    state's files, then its counts by topic group and its record (statistics, sizes, timings)."""
    wall = [time.time()]
    previous = plan.iterations[0] - 1 if plan.iterations else None
    item = gibbs_state.checkout(run, partition, model, directory, previous)
    wall.append(time.time())
    stats, sweep_seconds = _sweep(model, item, global_values, seed, partition, plan)
    acc = None
    if plan.sample:
        acc = _accumulate(model, item, gibbs_state.sample_sums(item, directory, partition, plan.previous_sample),
                          global_values[2])
    wall.append(time.time())
    gibbs_state.checkin(run, partition, item, directory, plan.last, acc)
    wall.append(time.time())
    records = list(_count_records(partition, item, model, topic_groups))
    block = item["block"]
    records.append((STATISTICS_KEY, (partition, stats, block.n_docs, block.n_tokens, sweep_seconds,
                                     wall + [time.time()])))
    return records


def _partition_task(partition, items, model, run, directory, bc_global, seed, plan, topic_groups):
    """Spark task of one synchronisation (one job per synchronisation)."""
    _only_one(partition, items)
    yield from _partition_sync(partition, model, run, directory, bc_global.value, seed, plan, topic_groups)


# ---- resident mode: one barrier stage for the whole run, a message pair per synchronisation (drivers.sync_hub)

def _plan_message(plan: SyncPlan, nwk, nk, hyper, previous=None) -> tuple[dict, list]:
    """A synchronisation's message: the plan and hyperparameters, and the shared table, whole (``previous``
    None) or as the entries that differ from ``previous``, the table the tasks hold (flat indices, new values):
    at large K most of a V x K table does not change in a sweep."""
    header = {"kind": "sync", "iterations": list(plan.iterations), "sample": plan.sample,
              "previous_sample": plan.previous_sample, "hyper": hyper}
    if previous is None or previous.shape != nwk.shape:
        return dict(header, table="whole"), [nwk, nk]
    changed = np.flatnonzero(nwk != previous)
    return dict(header, table="changes"), [changed, nwk.ravel()[changed], nk]


def _apply_table(header: dict, arrays: list, table):
    """The shared table and topic totals a task sweeps from, from a message and the task's copy of the last
    table (updated in place for a message of changes)."""
    if header["table"] == "whole":
        return arrays[0].copy(), arrays[1]
    changed, values, nk = arrays
    table.ravel()[changed] = values
    return table, nk


def _records_message(records) -> tuple[dict, list]:
    """A partition's records as one message: the statistics record's scalars in the header, its statistics
    vector and every group's (flat indices, counts) as arrays."""
    groups, arrays, stats_record = [], [], None
    for key, value in records:
        if key == STATISTICS_KEY:
            stats_record = value
        else:
            groups.append(int(key))
            arrays += [value[1], value[2]]
    partition, stats, n_docs, n_tokens, sweep_seconds, wall = stats_record
    header = {"partition": int(partition), "documents": int(n_docs), "tokens": int(n_tokens),
              "sweep_seconds": float(sweep_seconds), "wall": [float(w) for w in wall], "groups": groups}
    return header, [np.asarray(stats, dtype=np.float64)] + arrays


def _message_records(header: dict, arrays: list) -> list:
    """The records of :func:`_records_message` again, as the reducers' function takes them."""
    p = header["partition"]
    records = [(first, (p, arrays[1 + 2 * i], arrays[2 + 2 * i])) for i, first in enumerate(header["groups"])]
    records.append((STATISTICS_KEY, (p, arrays[0], header["documents"], header["tokens"], header["sweep_seconds"],
                                     header["wall"])))
    return records


#: a test's hook: ``(iteration, marker file)`` makes partition 1's resident task die (``os._exit``) before that
#: iteration, once (the marker records that it did), to show that the run goes on with one job per synchronisation
RESIDENT_TEST_KILL = None


def _resident_task(items, model, run, directory, seed, topic_groups, address, token, kill=None):
    """Spark barrier task: a partition's sampler for the whole run; per message of the driver's hub a
    synchronisation exactly as :func:`_partition_task` does it, answered by the partition's records."""
    from pyspark import BarrierTaskContext

    partition = BarrierTaskContext.get().partitionId()
    _only_one(partition, items)
    _serve_resident([partition], model, run, directory, seed, topic_groups, address, token, kill)
    yield partition


def _resident_group_task(items, model, run, directory, seed, topic_groups, address, token, kill=None):
    """Spark barrier task hosting several partitions (more partitions than task slots): its one record is the
    list of its partitions, each with its own connection to the hub, swept one after the other per
    synchronisation, each exactly as a task of its own would (the same model: only the wall clock changes)."""
    records = list(items)
    if len(records) != 1:
        raise RuntimeError(f"a resident group task expects its one list of partitions, got {records}")
    _serve_resident(list(records[0]), model, run, directory, seed, topic_groups, address, token, kill)
    yield from records[0]


def _serve_resident(partitions, model, run, directory, seed, topic_groups, address, token, kill=None):
    """The synchronisations of ``partitions`` (one connection each) until the hub says stop: every message is
    read before any partition sweeps (the driver sends all partitions their message before it reads a reply)."""
    import os

    from drivers.sync_hub import connect, recv_message, send_message
    socks = [connect(tuple(address), token, partition) for partition in partitions]
    tables = [None] * len(partitions)   # each partition's copy of the shared table of the last synchronisation
    try:
        while True:
            messages = [recv_message(sock) for sock in socks]
            if any(header["kind"] != "sync" for header, _ in messages):
                break
            for j, (partition, sock, (header, arrays)) in enumerate(zip(partitions, socks, messages)):
                plan = SyncPlan(tuple(header["iterations"]), header["sample"], header["previous_sample"])
                if kill is not None and partition == 1 and plan.iterations and plan.iterations[0] == kill[0] \
                        and not os.path.exists(kill[1]):
                    open(kill[1], "w").close()
                    os._exit(1)
                tables[j], nk = _apply_table(header, arrays, tables[j])
                records = _partition_sync(partition, model, run, directory, (tables[j], nk, header["hyper"]), seed,
                                          plan, topic_groups)
                send_message(sock, *_records_message(records))
    finally:
        for sock in socks:
            sock.close()


def resident_groups(num_partitions: int, slots: int) -> list[list[int]]:
    """The partitions each task of a resident stage hosts: one each while they fit the slots, else dealt round
    robin over ``slots`` tasks (partition p to task p mod slots)."""
    tasks = max(1, min(num_partitions, slots))
    return [list(range(t, num_partitions, tasks)) for t in range(tasks)]


def _reduce_task(records, num_rows, topic_groups):
    """Dense V x |group| int32 counts of each topic group routed here (the sum of the partitions' sparse
    counts); partition records pass through."""
    began = time.time()
    groups = {topics[0]: topics for topics in topic_groups}
    sparse, passthrough = {}, []
    for key, value in records:
        if key == STATISTICS_KEY:
            passthrough.append(value)
        else:
            sparse.setdefault(key, []).append(value[1:])
    for key in sorted(sparse):
        size = len(groups[key])
        flat = np.concatenate([f for f, _ in sparse[key]])
        counts = np.concatenate([c for _, c in sparse[key]]).astype(np.float64)   # exact below 2**53
        total = np.bincount(flat, weights=counts, minlength=num_rows * size)
        if total.size and total.max() > np.iinfo(np.int32).max:
            raise OverflowError("a topic-word count exceeds int32")
        yield "counts", (groups[key], total.astype(np.int32).reshape(num_rows, size))
    for value in passthrough:
        yield "partition", value[:5] + (value[5] + [began, time.time()],)


def _output_task(partition, items, model, run, directory, iteration, acc_iteration):
    """(partition, item) after ``iteration`` with the sums of the samples up to ``acc_iteration``."""
    _only_one(partition, items)
    item = gibbs_state.checkout(run, partition, model, directory, iteration, update=False)
    yield partition, dict(item, acc=gibbs_state.sample_sums(item, directory, partition, acc_iteration))


# --------------------------------------------------------------------------- resident mode

def resident_slots(sc) -> int:
    """How many tasks the cluster runs at once (what a barrier stage needs for all its tasks), 0 when unknown
    or when Spark may add and remove executors (dynamic allocation: no barrier stage)."""
    conf = sc.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return 0
    try:
        jsc = sc._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
    except Exception:       # noqa: BLE001  (an internal API of Spark's: without it, no resident mode)
        return 0


class ResidentSampler:
    """The partitions' samplers as one barrier stage that lives for the whole run (a Spark job in a thread of
    the driver) and a :class:`drivers.sync_hub.SyncHub` that trades one message pair per partition and
    synchronisation with its tasks: the driver's loop is unchanged, a synchronisation costs its sweeps and
    two messages instead of a Spark job."""

    def __init__(self, engine: "GibbsEngine", handles, groups, description: str, hosted=None):
        """``hosted``: the partitions of each task (:func:`resident_groups`) when tasks host several; None:
        one task per partition, scheduled where its staged handle is cached."""
        import threading

        from drivers.sync_hub import SyncHub
        sc = engine.sc
        conf = sc.getConf()
        if sc.master.startswith("local"):
            host = bind = "127.0.0.1"
        else:                       # executors reach spark.driver.host; the driver listens where Spark does
            host = conf.get("spark.driver.host")
            bind = conf.get("spark.driver.bindAddress", host)
        self.failure = None         # what ended the barrier stage early, if Spark said
        self.sent = None            # the plan the tasks are working on
        self._table = None          # the shared table the tasks hold (the last one sent)
        self._thread = None
        # a reply: a partition's nonzero (w, z) counts (flat index and count, <= 16 bytes each) and its statistics
        max_reply = 16 * engine.model.shared_rows * engine.model.num_topics + (64 << 20)
        self.hub = SyncHub(bind, engine._num_partitions, alive=lambda: self._thread.is_alive(), advertise=host,
                           max_reply=max_reply)
        self.group = f"spark-topics-resident-{engine._run}"
        task = dict(model=engine.model, run=engine._run, directory=engine.checkpoint_dir,
                    seed=engine.settings.seed, topic_groups=groups, address=list(self.hub.address),
                    token=self.hub.token, kill=RESIDENT_TEST_KILL)
        if hosted is None:
            job = handles.barrier().mapPartitions(partial(_resident_task, **task))
        else:
            job = sc.parallelize(hosted, len(hosted)).barrier().mapPartitions(partial(_resident_group_task, **task))

        def run():
            sc.setJobGroup(self.group, description, interruptOnCancel=True)
            try:
                job.collect()
            except Exception as exc:       # noqa: BLE001  (the hub's wait notices; the engine logs it)
                self.failure = exc
        self.sc = sc
        self._thread = threading.Thread(target=run, name="spark-topics resident sampler", daemon=True)
        self._thread.start()
        try:
            self.hub.accept_all()
        except BaseException:       # no task may wait for slots of a stage that will not run
            self.stop(cancel=True)
            raise

    def send(self, plan: SyncPlan, nwk, nk, hyper) -> None:
        """Start a synchronisation: every task gets the plan, the counts (the first time whole, then the
        entries that changed) and the hyperparameters."""
        self.hub.send([_plan_message(plan, nwk, nk, hyper, self._table)] * self.hub.num_partitions)
        self._table = nwk.copy()
        self.sent = plan

    def receive(self) -> list:
        """Every partition's records of the synchronisation sent last."""
        self.sent = None
        return [record for header, arrays in self.hub.receive() for record in _message_records(header, arrays)]

    def stop(self, cancel: bool = False) -> None:
        self.hub.close(None if cancel else {"kind": "stop"})
        if cancel:
            self.sc.cancelJobGroup(self.group)
        if self._thread is not None:
            self._thread.join(timeout=60)


# --------------------------------------------------------------------------- the engine

class GibbsEngine:
    """Runs a GibbsModel over an RDD of ``(partition, SegmentedBlock)`` with one block per partition."""

    def __init__(self, spark_context, model: GibbsModel, settings: GibbsSettings, checkpoint_dir: str):
        self.sc = spark_context
        self.model = model
        self.settings = settings
        self.checkpoint_dir = checkpoint_dir
        self._run = uuid.uuid4().hex   # names this run's items in the Python workers' caches
        self._resident = None          # the ResidentSampler while one runs
        self.sync_used = "jobs"

    # ---- checkpoint files
    def _driver_file(self, name: str, t: int) -> str:
        return storage.join(self.checkpoint_dir, f"{name}-{t:05d}.npy")

    def _is_checkpoint(self, t: int) -> bool:
        return t > 0 and (t % max(1, int(self.settings.checkpoint_every)) == 0
                          or t == self.settings.schedule.iterations)

    def _save_driver(self, t: int, meta: dict, nwk, topic_word_sum) -> None:
        storage.save_npy(self._driver_file("nwk", t), nwk)
        storage.save_npy(self._driver_file("topic_word_sum", t), topic_word_sum)
        storage.save_json(storage.join(self.checkpoint_dir, "state.json"), dict(meta, iteration=t))

    def _prune(self, t: int, last_checkpoint: int) -> None:
        """Delete the files that neither a task after iteration ``t`` nor a retained checkpoint (the last
        KEEP_CHECKPOINTS) needs."""
        stale = last_checkpoint - KEEP_CHECKPOINTS * self.settings.checkpoint_every
        keep = {t} | {c for c in range(stale + 1, last_checkpoint + 1) if self._is_checkpoint(c)}
        for u, folder in gibbs_state.iteration_dirs(self.checkpoint_dir, "state").items():
            if u < t and u not in keep:
                storage.delete(folder)
        sums = {self.settings.schedule.last_sample(u) for u in keep}
        for u, folder in gibbs_state.iteration_dirs(self.checkpoint_dir, "samples").items():
            if u < t and u not in sums:
                storage.delete(folder)
        for name in storage.list_dir(self.checkpoint_dir):
            if name.endswith(".npy") and "-" in name and int(name.rsplit("-", 1)[1][:5]) <= stale:
                storage.delete(storage.join(self.checkpoint_dir, name))

    def _load_checkpoint(self):
        path = storage.join(self.checkpoint_dir, "state.json")
        if not storage.exists(path):
            return None
        meta = storage.load_json(path)
        t = meta["iteration"]
        return (meta, storage.load_npy(self._driver_file("nwk", t)).astype(np.int32),
                storage.load_npy(self._driver_file("topic_word_sum", t)))

    def clear_checkpoint(self) -> None:
        storage.delete(self.checkpoint_dir)

    # ---- one synchronisation
    def _sums_on_driver(self, num_partitions: int, num_tokens: int | None = None) -> bool:
        """Whether the partitions' sparse counts go to the driver as task results (one stage per
        synchronisation) while their bound (a partition's nonzeros are at most its tokens and the table's
        entries, 12 bytes each) fits in :data:`DRIVER_SUM_BYTES` (the same model either way)."""
        entries = num_partitions * self.model.shared_rows * self.model.num_topics
        if num_tokens is not None:
            entries = min(entries, num_tokens)
        return 12 * entries <= DRIVER_SUM_BYTES

    def _run_job(self, handles, description: str, plan: SyncPlan, bc_global, partitioner: TopicPartitioner):
        """Partition tasks -> (TopicPartitioner -> reducers, or the driver) -> counts; returns (nwk, nk,
        partition records by partition)."""
        K, R = self.model.num_topics, self.model.shared_rows
        groups = partitioner.topic_groups()
        self.sc.setJobDescription(description + (" -> counts summed on the driver" if self._on_driver else
                                                 f" -> {partitioner!r} -> topic-word reducers"))
        mapped = handles.mapPartitionsWithIndex(partial(_partition_task, model=self.model, run=self._run,
                                                        directory=self.checkpoint_dir, bc_global=bc_global,
                                                        seed=self.settings.seed, plan=plan, topic_groups=groups))
        if self._on_driver:         # one stage: the reducers' sums, on the driver (exact integers, any order)
            results = list(_reduce_task(mapped.collect(), num_rows=R, topic_groups=groups))
        else:
            results = (mapped.partitionBy(partitioner.num_reducers, partitioner)
                       .mapPartitions(partial(_reduce_task, num_rows=R, topic_groups=groups))
                       .collect())
        return self._gather(results)

    def _gather(self, results):
        """(nwk, nk, partition records in partition order) from the reducers' results."""
        K, R = self.model.num_topics, self.model.shared_rows
        self._collected_at = time.time()
        nwk = np.zeros((R, K), dtype=np.int32)
        seen = []
        parts = []
        for kind, value in results:
            if kind == "counts":
                topics, dense = value
                nwk[:, topics] = dense
                seen += list(topics)
            else:
                parts.append(value)
        parts.sort(key=lambda r: r[0])
        if len(parts) != self._num_partitions or [r[0] for r in parts] != list(range(self._num_partitions)):
            raise RuntimeError(f"expected one record per partition 0..{self._num_partitions - 1}, "
                               f"got {[r[0] for r in parts]}")
        missing = set(range(K)) - set(seen)
        if missing and sum(r[3] for r in parts) > 0:
            # every partition emits a record for every group, even an empty one, so this is a bug
            raise RuntimeError(f"reducers returned no counts for topics {sorted(missing)}")
        return nwk, self.model.topic_totals(nwk), parts

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

    def _start_resident(self, handles, partitioner: TopicPartitioner, t: int):
        """A :class:`ResidentSampler` for the iterations after ``t`` when the settings allow one (else None: one
        Spark job per synchronisation). With more partitions than the cluster's task slots, each task of the
        barrier stage hosts several partitions (:func:`resident_groups`): the same model, one message pair per
        partition and synchronisation instead of a Spark job."""
        mode, P = self.settings.sync, self._num_partitions
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
                raise SystemExit(f"--sync resident: {why}; use --sync jobs or auto")
            log.info("one Spark job per synchronisation: %s", why)
            return None
        hosted = resident_groups(P, slots) if slots < P else None
        tasks = P if hosted is None else len(hosted)
        description = (f"{self.model.name}: resident sampler, iterations {t + 1}-{self.settings.schedule.iterations}"
                       f" ({P} partitions on {tasks} tasks of one barrier stage; counts summed on the driver)")
        try:
            resident = ResidentSampler(self, handles, partitioner.topic_groups(), description, hosted)
        except (HubError, OSError) as exc:
            if mode == "resident":
                raise SystemExit(f"--sync resident: the resident sampler did not start ({exc})") from None
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
        """partition_stats summed in partition order (shorter vectors zero-padded: an engine extension)."""
        size = max((r[1].shape[0] for r in parts), default=0)
        total = np.zeros(size)
        for r in parts:
            total[: r[1].shape[0]] += r[1]
        return total

    # ---- fit
    def fit(self, blocks, num_partitions: int, hyper: dict, resume: bool = False,
            fingerprint: dict | None = None, on_iteration=None) -> GibbsResult:
        s, model = self.settings, self.model
        sched = s.schedule
        K, V = model.num_topics, model.vocab_size
        self._num_partitions = num_partitions
        partitioner = TopicPartitioner.for_topics(K, s.num_reducers, self.sc.defaultParallelism)
        fingerprint = dict(fingerprint or {}, model=model.name, topics=K, vocab_size=V,
                           partitions=num_partitions, seed=s.seed, schedule=sched.to_json(),
                           sweeps_per_sync=s.sweeps_per_sync, state_format=STATE_FORMAT)

        self._on_driver = self._sums_on_driver(num_partitions)
        restored = self._load_checkpoint() if resume else None
        if restored is not None:
            meta, nwk, topic_word_sum = restored
            check_fingerprint(meta.get("fingerprint", {}), fingerprint)
            t = int(meta["iteration"])
            hyper = meta["hyper"]
            trace = [GibbsRecord(**r) for r in meta["trace"]]
            samples_taken = int(meta["samples"])
            nk = model.topic_totals(nwk)
            num_docs, num_tokens = int(meta["documents"]), int(meta["tokens"])
            self._on_driver = self._sums_on_driver(num_partitions, num_tokens)
            last_checkpoint = t
            log.info("resuming from checkpoint %s after iteration %d", self.checkpoint_dir, t)
        self._handles = blocks.mapPartitionsWithIndex(partial(
            _stage_task, model=model, run=self._run, directory=self.checkpoint_dir)).setName(
            f"{model.name} staged blocks").persist(StorageLevel.MEMORY_ONLY)
        handles = self._handles
        if restored is None:
            if resume:
                log.warning("--resume: no checkpoint in %s, starting from scratch", self.checkpoint_dir)
            self.clear_checkpoint()   # files of an earlier run must not mix with this one's
            t, trace, samples_taken, last_checkpoint = 0, [], 0, 0
            topic_word_sum = np.zeros((K, V))
            began = time.perf_counter()
            bc = self.sc.broadcast((None, None, hyper))
            nwk, nk, parts = self._run_job(handles, f"{model.name}: random initial topics", SyncPlan(()),
                                           bc, partitioner)
            bc.destroy()
            num_docs, num_tokens = sum(r[2] for r in parts), sum(r[3] for r in parts)
            self._on_driver = self._sums_on_driver(num_partitions, num_tokens)
            log.info("%s: K=%d, %d partitions, %d documents, %d tokens; initialised in %.2f s "
                     "(burn-in %d, %d samples at lag %d, %d iterations; counts summed on the %s)", model.name, K,
                     num_partitions, num_docs, num_tokens, time.perf_counter() - began, sched.burn_in,
                     sched.samples, sched.lag, sched.iterations,
                     "driver (one stage per iteration)" if self._on_driver else f"reducers ({partitioner!r})")

        m = s.sweeps_per_sync
        self._resident = self._start_resident(handles, partitioner, t) if t < sched.iterations else None
        self.sync_used = "resident" if self._resident is not None else "jobs"
        try:
            while t < sched.iterations:
                began = time.perf_counter()
                plan = self._plan_after(t)
                first, t = plan.iterations[0], plan.last
                used_hyper = hyper
                job_began = time.perf_counter()
                wall_began = time.time()
                parts = None
                if self._resident is not None:
                    try:
                        if self._resident.sent != plan:
                            self._resident.send(plan, nwk, nk, hyper)
                        records = self._resident.receive()
                        nwk, nk, parts = self._gather(list(_reduce_task(
                            records, num_rows=model.shared_rows, topic_groups=partitioner.topic_groups())))
                    except HubError as exc:     # a task died: the files of iteration first - 1 are complete
                        self._lose_resident(first, exc)
                        job_began, wall_began = time.perf_counter(), time.time()
                if parts is None:
                    bc = self.sc.broadcast((nwk, nk, hyper))
                    label = f"iteration {t}" if m == 1 else f"iterations {first}-{t}"
                    nwk, nk, parts = self._run_job(handles, f"{model.name} {label}/{sched.iterations}: sweep (AD-LDA)",
                                                   plan, bc, partitioner)
                    bc.destroy()   # no task of a later job reads it: the state is in files
                job_seconds = time.perf_counter() - job_began
                self._log_timeline(parts, wall_began)
                stats = self._sum_stats(parts)
                hyper = model.update_hyper(hyper, stats, num_docs, task_seed(s.seed, t, DRIVER_PARTITION, 3))
                if self._resident is not None and t < sched.iterations:   # the tasks sweep on while the driver logs
                    try:
                        self._resident.send(self._plan_after(t), nwk, nk, hyper)
                    except HubError as exc:
                        self._lose_resident(t + 1, exc)
                if plan.sample:
                    topic_word_sum += model.topic_word(nwk, nk, used_hyper)
                    samples_taken += 1
                loglik = model.word_loglik(nwk, nk, hyper)
                seconds = time.perf_counter() - began
                sweep_seconds = sum(r[4] for r in parts)
                record = GibbsRecord(t, seconds, m * num_tokens / seconds,
                                     m * num_tokens / sweep_seconds if sweep_seconds > 0 else 0.0,
                                     loglik, loglik / max(num_tokens, 1), plan.sample, hyper_summary(hyper))
                trace.append(record)
                log.info("iteration %d/%d  loglik=%.6e  per_token=%.4f  seconds=%.2f  tokens/s=%.3g  "
                         "sweep_tokens/s/core=%.3g%s%s", t, sched.iterations, loglik, record.loglik_per_token,
                         seconds, record.tokens_per_second, record.sweep_tokens_per_second,
                         "".join(f"  {k}={v:.4g}" for k, v in record.hyper.items()),
                         f"  [sample {samples_taken}/{sched.samples}]" if plan.sample else "")
                if self._is_checkpoint(t):
                    self._save_driver(t, {"fingerprint": fingerprint, "hyper": hyper,
                                          "trace": [r.__dict__ for r in trace], "samples": samples_taken,
                                          "documents": num_docs, "tokens": num_tokens}, nwk, topic_word_sum)
                    last_checkpoint = t
                self._prune(t, last_checkpoint)
                log.debug("iteration %d: broadcast %.3f s, Spark job %.3f s, driver %.3f s, summed sweep %.3f s",
                          t, job_began - began, job_seconds, time.perf_counter() - job_began - job_seconds,
                          sweep_seconds)
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
        topic_word = topic_word_sum / samples_taken
        states = handles.mapPartitionsWithIndex(partial(
            _output_task, model=model, run=self._run, directory=self.checkpoint_dir, iteration=t,
            acc_iteration=sched.last_sample(t))).setName(f"gibbs state {t}")
        return GibbsResult(topic_word, hyper, trace, t, samples_taken, states, num_partitions,
                           num_tokens, num_docs, "driver" if self._on_driver else "reducers", nwk, self.sync_used)

    def release(self) -> None:
        """Unpersist the staged handles (the workers' caches are replaced by the next run)."""
        if getattr(self, "_handles", None) is not None:
            self._handles.unpersist()
            self._handles = None


# --------------------------------------------------------------------------- outputs

def topic_proportions(model: GibbsModel, item: dict) -> tuple[np.ndarray, np.ndarray]:
    """(D, K) document and (S, K) segment proportions of the ORIGINAL block, averaged over the samples.

    When the model sees other documents than the corpus has (LDA_P: every
    segment a document), a document's proportions are the token-weighted mean
    of its segments'.
    """
    orig, block, acc = item["orig"], item["block"], item["acc"]
    n = int(acc["samples"][0])
    if n == 0:
        raise RuntimeError("no samples were accumulated")
    seg = acc["seg"] / n
    if np.array_equal(block.doc_ptr, orig.doc_ptr):
        doc = acc["doc"] / n
    else:
        lengths = np.diff(orig.seg_ptr).astype(np.float64)
        weighted = seg * lengths[:, None]
        doc = np.add.reduceat(weighted, orig.doc_ptr[:-1], axis=0) if orig.n_docs else np.zeros((0, seg.shape[1]))
        doc = doc / doc.sum(axis=1, keepdims=True)
    return doc, seg
