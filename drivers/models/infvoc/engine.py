"""Online inference of the infinite-vocabulary model (thesis Algorithm 4): a Spark job per minibatch, or in process.

* **Mappers**: each partition of the minibatch's documents (strings, not ids: any word can come) runs the hybrid
  local step (7.2-7.4) over a broadcast of every topic's truncation ordered set, G_0 and alpha, and emits per
  topic the sampled counts of its words (integers: the kept samples' assignments, so the reduction is exact in
  any order) and, under the reserved statistics key, its documents' topic proportions (with ``--alpha-theta fit``
  also their alpha statistics, which the driver sums in document order for the step of
  :mod:`inference.infvoc.doc_prior`).
* **Reducers**: the :class:`~partitioners.topic.TopicPartitioner` routes each topic's records to one reducer
  (thesis Alg. 2), which sums them and updates that topic's TOS: expand, nu (7.6-7.7), R (7.8) and, every U
  minibatches, reorder and contract to T (:func:`inference.infvoc.tos.update_topic`). The driver collects the K
  updated sets (bounded: at most T words each after a reordering) and broadcasts them to the next minibatch.

Draws are seeded by (seed, minibatch, document id), so the same seed gives the same model in local[1],
local[2] or on a cluster. A small minibatch's step runs the same tasks in this process instead
(:func:`step_in_process`, chosen by :func:`steps_in_process`): the same model to the bit, without a Spark job's
fixed cost (about 0.4 s a step on the local master).
"""
from __future__ import annotations

import logging
import zlib
from types import SimpleNamespace

import numpy as np
import pandas as pd

from drivers.progress import Steps
from inference.infvoc.doc_prior import online_step
from inference.infvoc.local_step import StringBlock, sample_block
from inference.infvoc.reseed import evidence, reseed_starved
from inference.infvoc.tos import TopicSet, expand_topic, ranking_log_base, reorder_topic, step_size, update_topic
from partitioners.topic import STATISTICS_KEY, TopicPartitioner

log = logging.getLogger("spark_topics.infvoc")


def partition_of(doc_id: str, partitions: int) -> int:
    """A stable partition of a document (CRC32 of its id; Python's hash of a str differs between processes)."""
    return zlib.crc32(str(doc_id).encode("utf-8")) % partitions


def mapper_task(documents, bc_state, minibatch: int, fit_alpha: bool = False):
    """The local step over one partition's documents ``(doc_id, tokens)``: ``(topic, (terms, int counts))``
    records and one ``(STATISTICS_KEY, (doc_ids, theta))``, ``(doc_ids, theta, alpha statistics)`` with
    ``fit_alpha``."""
    sets, base, alpha, burn_in, samples, seed = bc_state.value
    block = StringBlock.from_documents(documents)
    if block.n_docs == 0:
        return
    log_base = base.log_probs(block.terms)
    phi, doc_topics, *alpha_stats = sample_block(block, sets, log_base, alpha, seed, minibatch, burn_in, samples,
                                                 alpha_statistics=fit_alpha)
    kept = np.rint(phi * samples).astype(np.int64)          # exact: the kept samples' assignment counts
    for k in range(kept.shape[1]):
        nonzero = np.flatnonzero(kept[:, k])
        if nonzero.size:
            yield k, (block.terms[nonzero], kept[nonzero, k])
    theta = doc_topics + alpha[None, :]
    yield STATISTICS_KEY, (block.doc_ids, theta / theta.sum(axis=1, keepdims=True), *alpha_stats)


def reducer_task(records, bc_state, settings, scale: float, minibatch: int, eps: float):
    """Sum each topic's records and update its TOS with step ``eps``; the statistics records pass through."""
    sets, base, _, _, samples, _ = bc_state.value
    by_topic: dict = {}
    for key, value in records:
        by_topic.setdefault(key, []).append(value)
    for key, values in by_topic.items():
        if key == STATISTICS_KEY:
            for value in values:
                yield key, value
            continue
        frame = pd.DataFrame({"term": np.concatenate([v[0] for v in values]),
                              "count": np.concatenate([v[1] for v in values])})
        summed = frame.groupby("term", sort=True)["count"].sum()
        terms = summed.index.to_numpy(dtype=object)
        topic = update_topic(sets[key], terms, summed.to_numpy(dtype=np.float64) / samples,
                             ranking_log_base(base.log_probs(terms), settings), scale, eps, settings.alpha_beta,
                             minibatch, settings.discount)
        if minibatch % settings.delay == 0:
            topic = reorder_topic(topic, settings.truncation)
        yield key, topic


def step_in_process(groups: list, state: tuple, partitioner: TopicPartitioner, settings, scale: float,
                    minibatch: int, eps: float, fit_alpha: bool) -> list:
    """The Spark job of :func:`run_minibatch` in this process: :func:`mapper_task` over each partition's group,
    its records routed to the reducer ``partitioner`` picks (in partition order, as the shuffle reads them),
    :func:`reducer_task` per reducer, the results in reducer order (as ``collect`` returns them)."""
    held = SimpleNamespace(value=state)          # what a broadcast's tasks read
    routed = [[] for _ in range(partitioner.num_reducers)]
    for group in groups:
        for record in mapper_task(group, held, minibatch, fit_alpha):
            routed[partitioner(record[0])].append(record)
    return [result for records in routed
            for result in reducer_task(records, held, settings, scale, minibatch, eps)]


def run_minibatch(sc, model, documents: list, partitions: int, reducers: int | None = None, new: bool = True,
                  eps: float | None = None, remaining: int | None = None, nominal: int | None = None,
                  in_process: bool = False):
    """One minibatch (Algorithm 4) over ``documents`` [(doc_id, tokens)]: updates ``model`` in place (its sets,
    counters) and returns the documents' topic proportions as a DataFrame (doc_id, theta, minibatch).
    ``new=False``: documents an earlier pass counted, so D of (7.6) (``--corpus-size cumulative``: the documents
    seen so far) does not count them again (a second pass over a corpus is not a corpus twice the size).
    ``eps``: the step of (7.6)-(7.8) (default eps_i of the model's counter; a refresh's ``share``, tos.share_step).
    ``remaining``: the run's minibatches after this one (None: unknown); a re-seed needs U of them, else the seed
    would be saved with almost no data (issue 30, session 26). ``nominal``: the stream's minibatch size, the re-seed
    reference's |S| (a pass's short last minibatch is not the size the topics' evidence was gathered at).
    ``in_process``: the step's mappers and reducers in this process (:func:`step_in_process`, the same model to the
    bit), not a Spark job (:func:`steps_in_process` chooses)."""
    minibatch = model.minibatches + 1
    settings = model.settings
    documents_seen = model.documents + (len(documents) if new else 0)
    scale = float(settings.corpus_size or documents_seen) / max(len(documents), 1)
    eps = step_size(minibatch, settings.tau0, settings.kappa) if eps is None else float(eps)
    K = model.num_topics
    if settings.expand == "every":       # every topic takes the minibatch's words first (tos.expand_topic)
        words = {w for _, tokens in documents for w in tokens}
        model.sets = [expand_topic(ts, words, settings.alpha_beta, minibatch, settings.discount) for ts in model.sets]
    fit_alpha = settings.alpha_theta == "fit"
    partitioner = TopicPartitioner.for_topics(K, reducers, sc.defaultParallelism)
    state = (model.sets, model.base, model.alpha, model.burn_in, model.samples, model.seed)
    groups = [[] for _ in range(partitions)]
    for d, t in documents:
        groups[partition_of(d, partitions)].append((d, t))
    if in_process:
        results = step_in_process(groups, state, partitioner, settings, scale, minibatch, eps, fit_alpha)
    else:
        bc_state = sc.broadcast(state)
        try:
            rdd = (sc.parallelize(groups, partitions)
                   .mapPartitions(lambda group: mapper_task([doc for docs in group for doc in docs], bc_state,
                                                            minibatch, fit_alpha))
                   .partitionBy(partitioner.num_reducers, partitioner)
                   .mapPartitions(lambda records: reducer_task(records, bc_state, settings, scale, minibatch,
                                                               eps)))
            results = rdd.collect()
        finally:
            bc_state.unpersist()
    sets = list(model.sets)
    touched = set()
    ids, thetas, alpha_parts = [], [], []
    for key, value in results:
        if key == STATISTICS_KEY:
            ids.extend(value[0].tolist())
            thetas.extend(value[1])
            if fit_alpha:
                alpha_parts.extend(value[2])
        else:
            sets[key] = value
            touched.add(key)
    for k in range(K):                  # a topic no token visited: nu and R still decay (7.7, 7.8)
        if k not in touched:
            sets[k] = update_topic(sets[k], np.empty(0, dtype=object), np.zeros(0), np.zeros(0), scale, eps,
                                   settings.alpha_beta, minibatch, settings.discount)
            if minibatch % settings.delay == 0:
                sets[k] = reorder_topic(sets[k], settings.truncation)
    usable = remaining is None or remaining >= settings.delay      # the seed gets U steps of data before a save
    if settings.reseed > 0 and minibatch % settings.delay == 0 and usable:     # starved topics (infvoc.reseed)
        before = sets
        sets, pairs = reseed_starved(sets, documents, lambda t: ranking_log_base(model.base.log_probs(t), settings),
                                     settings.reseed, scale, settings.alpha_beta, settings.truncation, model.seed,
                                     minibatch, settings.reseed_draw, settings.reseed_against, nominal,
                                     settings.discount)
        if pairs:
            log.info("minibatch %d: re-seeded %d starved topics (topic, document): %s", minibatch, len(pairs), pairs)
            log_reseeds(minibatch, before, sets, pairs, dict(documents), settings.discount)
    model.sets = sets
    order = np.argsort(np.array(ids, dtype=object).astype(str), kind="stable")
    if fit_alpha:         # each document's statistics summed in document order: the same for any partitioning
        statistics = np.zeros(K)
        for i in order:
            statistics = statistics + alpha_parts[i]
        model.alpha = online_step(model.alpha, statistics, len(ids), float(settings.corpus_size or documents_seen),
                                  eps)
    model.minibatches = minibatch
    model.documents = documents_seen
    return pd.DataFrame({"doc_id": [str(ids[i]) for i in order], "theta": [np.asarray(thetas[i]) for i in order],
                         "minibatch": np.full(len(ids), minibatch, dtype=np.int64)})


def log_reseeds(minibatch: int, before: list, after: list, pairs: list, documents: dict, discount: float = 0.0
                ) -> None:
    """What a re-seeding replaced (issue 30, session 25): each topic's evidence over the mean before and after, its
    5 words of most evidence before and after, the document's tokens (evidence: nu1 - (1 - d), reseed.evidence)."""
    held_before, held_after = evidence(before, discount), evidence(after, discount)
    mean = float(np.mean(held_before)) or 1.0

    def held(ts):
        return " ".join(str(w) for w in ts.terms[np.argsort(-ts.nu1, kind="stable")[:5]])

    for k, doc_id in pairs:
        log.info("minibatch %d: re-seed topic %d: evidence/mean %.3f -> %.3f, %d tokens; was [%s], now [%s]",
                 minibatch, k, held_before[k] / mean, held_after[k] / mean,
                 len(documents[doc_id]), held(before[k]), held(after[k]))


def run_stream(sc, model, documents: list, minibatch_size: int, partitions: int, reducers: int | None = None,
               progress: str = "", new: bool = True, eps: float | None = None, after: int | None = None,
               steps: Steps | None = None, in_process: bool = False) -> pd.DataFrame:
    """The documents [(doc_id, tokens)] in order, in minibatches of ``minibatch_size``; the proportions of all
    (``new=False``: a later pass over documents already counted in D; ``eps``: the step; ``after``: the run's
    minibatches after this stream, None unknown; :func:`run_minibatch`; ``steps``: the run's progress line, one
    step per minibatch, with the time left; ``in_process``: the steps in this process, :func:`steps_in_process`)."""
    frames = []
    batches = max(1, -(-len(documents) // minibatch_size))
    for b in range(batches):
        chunk = documents[b * minibatch_size:(b + 1) * minibatch_size]
        if not chunk:
            continue
        sc.setJobDescription(f"{progress}minibatch {b + 1}/{batches} ({len(chunk)} documents)")
        frames.append(run_minibatch(sc, model, chunk, partitions, reducers, new, eps,
                                    None if after is None else after + batches - 1 - b,
                                    min(minibatch_size, len(documents)), in_process))
        sizes = f"TOS sizes {min(len(s) for s in model.sets)}-{max(len(s) for s in model.sets)}"
        (log.debug if steps else log.info)("%sminibatch %d/%d: %d documents; %s", progress, b + 1, batches,
                                           len(chunk), sizes)
        if steps:
            steps.step(f"{progress}minibatch {b + 1}/{batches}, {sizes}")
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"doc_id": [], "theta": []})


#: the most tokens a minibatch may hold for its online step to run in this process under ``auto`` (no ``--master``,
#: a local session). Measured (2026-11-29, ``tests/bench/bench_infvoc_steps.py``: debian-changelogs documents of 22
#: tokens, local[2], two busy cores; median seconds a step, Spark job / in this process): 256 documents 0.37 /
#: 0.069, 5,000 (109k tokens) 0.58 / 0.27, 25,000 (559k tokens) 1.44 / 0.90. Spark's fixed ~0.4 s a step is won
#: back only where two free cores halve a large step's work: the limit stays well below that.
IN_PROCESS_TOKENS = 250_000


def steps_in_process(named_master: bool, master: str, documents: list, minibatch_size: int) -> bool:
    """Whether the online steps over ``documents`` [(doc_id, tokens)] run in this process: without ``--master``
    (``named_master`` False) when the session is local (``master``, the session's: spark-submit to a cluster keeps
    Spark) and every minibatch of ``minibatch_size`` holds at most :data:`IN_PROCESS_TOKENS` tokens; a master the
    user named (a cluster, or ``local[N]`` given explicitly) keeps a Spark job per step. Logs the choice once."""
    size = max(1, int(minibatch_size))
    lengths = np.array([len(tokens) for _, tokens in documents], dtype=np.int64)
    largest = int(max((lengths[i:i + size].sum() for i in range(0, len(lengths), size)), default=0))
    if named_master:
        chosen, why = False, "a Spark master was named (--master)"
    elif not str(master).startswith("local"):
        chosen, why = False, f"the session's master is {master}"
    elif largest > IN_PROCESS_TOKENS:
        chosen, why = False, f"a minibatch holds up to {largest} tokens, above {IN_PROCESS_TOKENS}"
    else:
        chosen, why = True, f"a minibatch holds at most {largest} tokens (<= {IN_PROCESS_TOKENS}), the session is local"
    log.info("online steps %s: %s", "in this process" if chosen else "as one Spark job each", why)
    return chosen


def empty_sets(num_topics: int) -> list:
    return [TopicSet.empty() for _ in range(num_topics)]
