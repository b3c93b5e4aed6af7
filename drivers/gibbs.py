"""The Gibbs engine on Spark: per-partition samplers (AD-LDA) -> TopicPartitioner -> reducers -> driver.

Any :class:`inference.gibbs.model.GibbsModel` runs on it; per iteration it
performs exactly the steps of :func:`inference.gibbs.local.run_local`, with one
partition per block:

1. the driver broadcasts the global topic-word counts ``nwk`` (V x K int32),
   ``nk`` and the hyperparameters;
2. ``mapPartitionsWithIndex`` runs, per partition, ``model.sweep`` on a private
   copy of the counts (AD-LDA, Newman et al. 2009), then
   ``local_hyper_update`` and ``partition_stats``, seeded by
   ``task_seed(seed, iteration, partition, purpose)``; the partition's state
   (``z`` and whatever else the model keeps) stays in the executors as a
   persisted RDD of ``(partition, item)`` built from the previous iteration's;
3. each partition emits its counts of (w, z) per topic group, keyed by the
   group's first topic, and ``partitionBy(R, TopicPartitioner)`` (the same
   partitioner as the variational jobs) routes them to R reducers that sum
   them into dense V x |group| columns; the partition statistics travel under
   the reserved key to reducer 0;
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
partition's document and segment topic proportions are averaged over them.

Checkpoints (every ``checkpoint_every`` iterations and at the end): the
executors write each partition's state and sample sums as ``.npz`` (no
pickle), the driver ``nwk``, the topic-word sum and ``state.json`` (last,
atomically). The state RDD is then re-read from those files, which truncates
its lineage; ``resume`` continues from the last checkpoint and ends with the
model an uninterrupted run gives. Every draw is a function of (seed,
iteration, partition) and every sum runs in a fixed order, so a seed gives the
same model on any master and after task retries.
"""
from __future__ import annotations

import io
import logging
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.special import gammaln

from drivers import storage
from drivers.checkpoint import check_fingerprint
from inference.gibbs.counts import count_local, local_vocabulary
from inference.gibbs.model import DRIVER_PARTITION, GibbsModel, SegmentedBlock, task_seed
from inference.mapper import ALPHA_KEY
from partitioners.topic import TopicPartitioner

log = logging.getLogger("spark_topics.train")

KEEP_CHECKPOINTS = 2


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

    def to_json(self) -> dict:
        return {"iterations": self.iterations, "burn_in": self.burn_in, "lag": self.lag, "samples": self.samples}


@dataclass
class GibbsSettings:
    schedule: SampleSchedule
    seed: int = 0
    num_reducers: int | None = None
    checkpoint_every: int = 10
    sweeps_per_sync: int = 1          # local sweeps between two synchronisations of the counts (AD-LDA: 1)

    def __post_init__(self):
        m, sched = int(self.sweeps_per_sync), self.schedule
        if m < 1:
            raise ValueError("--sweeps-per-sync must be at least 1")
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
    states: object                  # RDD of (partition, item) after the last iteration (persisted)
    num_partitions: int
    num_tokens: int
    num_documents: int              # documents as the model sees them (LDA_P: segments)


def word_loglik(nwk: np.ndarray, nk: np.ndarray, beta: float) -> float:
    """log p(w | z, beta) = sum_k [log Gamma(V beta) - log Gamma(n_k + V beta) + sum_w log Gamma(n_kw + beta)
    - V log Gamma(beta)] (the Phi factor of eqs 4.2 and 5.2)."""
    V, K = nwk.shape
    nonzero = nwk[nwk > 0].astype(np.float64)
    zeros = V * K - nonzero.shape[0]
    return float(K * gammaln(V * beta) - gammaln(nk + V * beta).sum()
                 + gammaln(nonzero + beta).sum() + (zeros - V * K) * gammaln(beta))


def topic_word_point(nwk: np.ndarray, nk: np.ndarray, beta: float) -> np.ndarray:
    """(K x V) phi_kw = (M_kw + beta) / (M_k + V beta) (eq 5.7)."""
    V = nwk.shape[0]
    return ((nwk + beta) / (nk + V * beta)).T


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


# --------------------------------------------------------------------------- per-partition state

def _state_bytes(item: dict) -> bytes:
    arrays = {f"state/{k}": np.asarray(v) for k, v in item["state"].items()}
    arrays.update({f"acc/{k}": np.asarray(v) for k, v in item["acc"].items()})
    for key, value in arrays.items():
        if value.dtype == object:
            raise TypeError(f"model state {key} is an object array: the state must be plain numeric arrays")
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _state_from_bytes(data: bytes) -> tuple[dict, dict]:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        state = {k[6:]: npz[k] for k in npz.files if k.startswith("state/")}
        acc = {k[4:]: npz[k] for k in npz.files if k.startswith("acc/")}
    return state, acc


def _new_item(model: GibbsModel, orig: SegmentedBlock) -> dict:
    block = model.prepare_block(orig)
    if not np.array_equal(block.seg_ptr, orig.seg_ptr):
        raise ValueError(f"{model.name}.prepare_block must keep the segments (seg_ptr) of the block")
    vocab_ids, local = local_vocabulary(block.words)
    return {"orig": orig, "block": block, "vocab_ids": vocab_ids, "local": local, "state": None, "stats": None,
            "acc": {"samples": np.zeros(1, dtype=np.int64)}, "sweep_seconds": 0.0}


def _check_state(model: GibbsModel, block: SegmentedBlock, state: dict) -> None:
    z = state.get("z") if isinstance(state, dict) else None
    if z is None or z.shape != (block.n_tokens,) or z.dtype != np.int32:
        raise TypeError(f"{model.name}: the state needs 'z', int32 of shape ({block.n_tokens},)")
    if block.n_tokens and (z.min() < 0 or z.max() >= model.num_topics):
        raise ValueError(f"{model.name}: topic assignments outside 0..{model.num_topics - 1}")


def _accumulate(model: GibbsModel, item: dict, hyper: dict) -> None:
    """Add this sample's document and segment topic proportions to the partition's sums."""
    block, state, acc = item["block"], item["state"], item["acc"]
    doc = model.doc_topic(block, state, hyper)
    seg = model.segment_topic(block, state, hyper)
    acc["doc"] = doc if "doc" not in acc else acc["doc"] + doc
    acc["seg"] = seg if "seg" not in acc else acc["seg"] + seg
    acc["samples"] = acc["samples"] + 1


def _init_task(partition, items, model, bc_hyper, seed):
    hyper = bc_hyper.value
    V, K = model.vocab_size, model.num_topics
    for block_partition, orig in items:
        if block_partition != partition:
            raise RuntimeError(f"block of partition {block_partition} arrived in partition {partition}")
        item = _new_item(model, orig)
        nwk, nk = np.zeros((V, K), dtype=np.int32), np.zeros(K, dtype=np.int64)
        item["state"] = model.init_state(item["block"], hyper, nwk, nk, task_seed(seed, 0, partition))
        _check_state(model, item["block"], item["state"])
        yield partition, item


def _load_task(partition, items, model, state_dir):
    for block_partition, orig in items:
        if block_partition != partition:
            raise RuntimeError(f"block of partition {block_partition} arrived in partition {partition}")
        item = _new_item(model, orig)
        item["state"], item["acc"] = _state_from_bytes(storage.read_bytes(_state_file(state_dir, partition)))
        _check_state(model, item["block"], item["state"])
        yield partition, item


def _sweep_task(partition, items, model, bc_global, seed, iterations, sample, state_dir):
    """Sweeps ``iterations`` (consecutive iteration numbers) on a private copy of the counts, then the
    partition statistics of the last one."""
    nwk_global, nk_global, hyper = bc_global.value
    iteration = iterations[-1]
    for p, item in items:
        if p != partition:
            raise RuntimeError(f"state of partition {p} arrived in partition {partition}")
        block, state = item["block"], item["state"]
        nwk, nk = nwk_global.copy(), nk_global.copy()   # private copy (AD-LDA)
        item["wall"] = [time.time()]
        began = time.perf_counter()
        for t in iterations:
            model.sweep(block, state, hyper, nwk, nk, task_seed(seed, t, partition))
            model.local_hyper_update(block, state, hyper, task_seed(seed, t, partition, 1))
        item["sweep_seconds"] = time.perf_counter() - began
        item["stats"] = np.asarray(model.partition_stats(block, state, hyper,
                                                         task_seed(seed, iteration, partition, 2)),
                                   dtype=np.float64)
        if sample:
            _accumulate(model, item, hyper)
        if state_dir is not None:
            storage.write_bytes(_state_file(state_dir, partition), _state_bytes(item))
        item["wall"].append(time.time())
        yield p, item


def _emit_task(partition, items, num_topics, topic_groups):
    """One record per (partition, reducer): the partition's counts of (w, z) for the reducer's topics."""
    for p, item in items:
        block, vocab_ids = item["block"], item["vocab_ids"]
        counts = count_local(item["local"], item["state"]["z"], vocab_ids.shape[0], num_topics)
        for topics in topic_groups:
            yield topics[0], (p, vocab_ids, np.ascontiguousarray(counts[:, topics]))
        stats = item["stats"] if item["stats"] is not None else np.zeros(0)
        yield ALPHA_KEY, (p, stats, block.n_docs, block.n_tokens, item["sweep_seconds"],
                          item.get("wall", []) + [time.time()])


def _reduce_task(records, vocab_size, topic_groups):
    """Dense V x |group| counts of each topic group routed here; partition records pass through."""
    groups = {topics[0]: topics for topics in topic_groups}
    sums, passthrough = {}, []
    for key, value in records:
        if key == ALPHA_KEY:
            passthrough.append(value)
            continue
        _, vocab_ids, counts = value
        if key not in sums:
            sums[key] = np.zeros((vocab_size, len(groups[key])), dtype=np.int64)
        sums[key][vocab_ids] += counts
    for key in sorted(sums):
        total = sums[key]
        if total.size and total.max() > np.iinfo(np.int32).max:
            raise OverflowError("a topic-word count exceeds int32")
        yield "counts", (groups[key], total.astype(np.int32))
    for value in passthrough:
        yield "partition", value[:5] + (value[5] + [time.time()],)


def _state_file(state_dir: str, partition: int) -> str:
    return storage.join(state_dir, f"part-{partition:05d}.npz")


# --------------------------------------------------------------------------- the engine

class GibbsEngine:
    """Runs a GibbsModel over an RDD of ``(partition, SegmentedBlock)`` with one block per partition."""

    def __init__(self, spark_context, model: GibbsModel, settings: GibbsSettings, checkpoint_dir: str):
        self.sc = spark_context
        self.model = model
        self.settings = settings
        self.checkpoint_dir = checkpoint_dir
        self._broadcasts = []   # broadcasts the state RDD's lineage still needs (until the next checkpoint)
        self._states = None

    # ---- checkpoint files
    def _state_dir(self, t: int) -> str:
        return storage.join(self.checkpoint_dir, "state", f"iter-{t:05d}")

    def _driver_file(self, name: str, t: int) -> str:
        return storage.join(self.checkpoint_dir, f"{name}-{t:05d}.npy")

    def _save_driver(self, t: int, meta: dict, nwk, topic_word_sum) -> None:
        storage.save_npy(self._driver_file("nwk", t), nwk)
        storage.save_npy(self._driver_file("topic_word_sum", t), topic_word_sum)
        storage.save_json(storage.join(self.checkpoint_dir, "state.json"), dict(meta, iteration=t))
        stale = t - KEEP_CHECKPOINTS * self.settings.checkpoint_every
        for name in storage.list_dir(self.checkpoint_dir):
            if name.endswith(".npy") and "-" in name and int(name.rsplit("-", 1)[1][:5]) <= stale:
                storage.delete(storage.join(self.checkpoint_dir, name))
        for name in storage.list_dir(storage.join(self.checkpoint_dir, "state")):
            if name.startswith("iter-") and int(name[5:]) <= stale:
                storage.delete(storage.join(self.checkpoint_dir, "state", name))

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

    # ---- state RDD
    def _set_states(self, rdd):
        """Persist ``rdd`` as the current state; returns the previous one (unpersist it after the next job)."""
        from pyspark import StorageLevel

        rdd.persist(StorageLevel.MEMORY_AND_DISK)
        old, self._states = self._states, rdd
        return old

    def _truncate(self, rdd) -> None:
        """Replace the state by ``rdd`` read from checkpoint files: the old lineage and its broadcasts go."""
        old = self._set_states(rdd)
        if old is not None:
            old.unpersist()
        for bc in self._broadcasts:
            bc.destroy()
        self._broadcasts = []

    def _run_job(self, description: str, partitioner: TopicPartitioner, V: int):
        """Emit -> TopicPartitioner -> reducers -> collect; returns (nwk, nk, partition records by partition)."""
        K = self.model.num_topics
        groups = partitioner.topic_groups()
        self.sc.setJobDescription(description)
        results = (self._states
                   .mapPartitionsWithIndex(partial(_emit_task, num_topics=K, topic_groups=groups))
                   .partitionBy(partitioner.num_reducers, partitioner)
                   .mapPartitions(partial(_reduce_task, vocab_size=V, topic_groups=groups))
                   .collect())
        nwk = np.zeros((V, K), dtype=np.int32)
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
            # a group whose topics no token uses in any partition still produced its record, so this is a bug
            raise RuntimeError(f"reducers returned no counts for topics {sorted(missing)}")
        return nwk, nwk.sum(axis=0, dtype=np.int64), parts

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
        R = s.num_reducers or TopicPartitioner.default_reducers(K, self.sc.defaultParallelism)
        partitioner = TopicPartitioner(K, R)
        fingerprint = dict(fingerprint or {}, model=model.name, topics=K, vocab_size=V,
                           partitions=num_partitions, seed=s.seed, schedule=sched.to_json(),
                           sweeps_per_sync=s.sweeps_per_sync)
        every = max(1, int(s.checkpoint_every))

        restored = self._load_checkpoint() if resume else None
        if restored is not None:
            meta, nwk, topic_word_sum = restored
            check_fingerprint(meta.get("fingerprint", {}), fingerprint)
            t = int(meta["iteration"])
            hyper = meta["hyper"]
            trace = [GibbsRecord(**r) for r in meta["trace"]]
            samples_taken = int(meta["samples"])
            nk = nwk.sum(axis=0, dtype=np.int64)
            num_docs, num_tokens = int(meta["documents"]), int(meta["tokens"])
            self._truncate(blocks.mapPartitionsWithIndex(
                partial(_load_task, model=model, state_dir=self._state_dir(t))).setName("gibbs state (resumed)"))
            log.info("resuming from checkpoint %s after iteration %d", self.checkpoint_dir, t)
        else:
            if resume:
                log.warning("--resume: no checkpoint in %s, starting from scratch", self.checkpoint_dir)
            self.clear_checkpoint()   # files of an earlier run must not mix with this one's
            t, trace, samples_taken = 0, [], 0
            topic_word_sum = np.zeros((K, V))
            bc_hyper = self.sc.broadcast(hyper)
            self._truncate(blocks.mapPartitionsWithIndex(
                partial(_init_task, model=model, bc_hyper=bc_hyper, seed=s.seed)).setName("gibbs state 0"))
            self._broadcasts.append(bc_hyper)
            began = time.perf_counter()
            nwk, nk, parts = self._run_job(f"{model.name}: random initial topics -> {partitioner!r} -> "
                                           f"topic-word reducers", partitioner, V)
            num_docs, num_tokens = sum(r[2] for r in parts), sum(r[3] for r in parts)
            log.info("%s: K=%d, %d partitions, %d documents, %d tokens; initialised in %.2f s "
                     "(burn-in %d, %d samples at lag %d, %d iterations)", model.name, K, num_partitions,
                     num_docs, num_tokens, time.perf_counter() - began, sched.burn_in, sched.samples,
                     sched.lag, sched.iterations)

        m = s.sweeps_per_sync
        while t < sched.iterations:
            first, t = t + 1, t + m
            began = time.perf_counter()
            sample = sched.is_sample(t)
            checkpoint = t % every == 0 or t == sched.iterations
            used_hyper = hyper
            bc = self.sc.broadcast((nwk, nk, hyper))
            self._broadcasts.append(bc)
            state_dir = self._state_dir(t) if checkpoint else None
            job_began = time.perf_counter()
            previous = self._set_states(self._states.mapPartitionsWithIndex(
                partial(_sweep_task, model=model, bc_global=bc, seed=s.seed, iterations=list(range(first, t + 1)),
                        sample=sample, state_dir=state_dir)).setName(f"gibbs state {t}"))
            label = f"iteration {t}" if m == 1 else f"iterations {first}-{t}"
            nwk, nk, parts = self._run_job(
                f"{model.name} {label}/{sched.iterations}: sweep (AD-LDA) -> {partitioner!r} -> "
                f"topic-word reducers", partitioner, V)
            job_seconds = time.perf_counter() - job_began
            t_end = time.time()
            for r in parts:
                w = r[5]
                if len(w) == 4:
                    log.debug("  partition %d: start +%.3f, sweep+stats %.3f, to emit %.3f, to reduce end %.3f, "
                              "to collect %.3f", r[0], w[0] - (t_end - job_seconds), w[1] - w[0], w[2] - w[1],
                              w[3] - w[2], t_end - w[3])
            previous.unpersist()
            bc.unpersist()   # executors drop their copy; a recomputation from the lineage fetches it again
            stats = self._sum_stats(parts)
            hyper = model.update_hyper(hyper, stats, num_docs, task_seed(s.seed, t, DRIVER_PARTITION, 3))
            if sample:
                topic_word_sum += topic_word_point(nwk, nk, float(used_hyper["beta"]))
                samples_taken += 1
            loglik = word_loglik(nwk, nk, float(hyper["beta"]))
            seconds = time.perf_counter() - began
            sweep_seconds = sum(r[4] for r in parts)
            record = GibbsRecord(t, seconds, m * num_tokens / seconds,
                                 m * num_tokens / sweep_seconds if sweep_seconds > 0 else 0.0,
                                 loglik, loglik / max(num_tokens, 1), sample, hyper_summary(hyper))
            trace.append(record)
            log.info("iteration %d/%d  loglik=%.6e  per_token=%.4f  seconds=%.2f  tokens/s=%.3g  "
                     "sweep_tokens/s/core=%.3g%s%s", t, sched.iterations, loglik, record.loglik_per_token,
                     seconds, record.tokens_per_second, record.sweep_tokens_per_second,
                     "".join(f"  {k}={v:.4g}" for k, v in record.hyper.items()),
                     f"  [sample {samples_taken}/{sched.samples}]" if sample else "")
            if checkpoint:
                self._save_driver(t, {"fingerprint": fingerprint, "hyper": hyper,
                                      "trace": [r.__dict__ for r in trace], "samples": samples_taken,
                                      "documents": num_docs, "tokens": num_tokens}, nwk, topic_word_sum)
                # the state now lives in files: re-read it from there (truncates the lineage)
                self._truncate(blocks.mapPartitionsWithIndex(
                    partial(_load_task, model=model, state_dir=self._state_dir(t))).setName(f"gibbs state {t}"))
            log.debug("iteration %d: broadcast %.3f s, Spark job %.3f s, driver %.3f s, summed sweep %.3f s",
                      t, job_began - began, job_seconds, time.perf_counter() - job_began - job_seconds,
                      sweep_seconds)
            if on_iteration is not None:
                on_iteration(record)
        self.sc.setJobDescription(None)
        if samples_taken == 0:
            raise RuntimeError("no sample was taken (check --burn-in, --lag, --samples)")
        topic_word = topic_word_sum / samples_taken
        return GibbsResult(topic_word, hyper, trace, t, samples_taken, self._states, num_partitions,
                           num_tokens, num_docs)

    def release(self) -> None:
        """Unpersist the state RDD and destroy the broadcasts it needed."""
        if self._states is not None:
            self._states.unpersist()
            self._states = None
        for bc in self._broadcasts:
            bc.destroy()
        self._broadcasts = []


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
