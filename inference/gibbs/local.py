"""A single-process reference driver for the Gibbs models: the engine's loop without Spark.

``run_local`` performs exactly the steps the Spark engine (``drivers/gibbs.py``)
performs per iteration, for one block treated as partition 0, so kernel tests
can run a model end to end, and the engine's single-partition run can be checked
against it.
"""
from __future__ import annotations

import numpy as np

from inference.gibbs.counts import local_vocabulary
from inference.gibbs.model import DRIVER_PARTITION, GibbsModel, SegmentedBlock, task_seed, topic_word_counts


def global_counts(block: SegmentedBlock, z: np.ndarray, num_topics: int, vocab_size: int):
    """Dense ``nwk`` (V x K int32) and ``nk`` (K int64) from one block's assignments."""
    vocab_ids, counts = topic_word_counts(block, z, num_topics)
    nwk = np.zeros((vocab_size, num_topics), dtype=np.int32)
    nwk[vocab_ids] = counts
    return nwk, nwk.sum(axis=0).astype(np.int64)


def shared_table(model: GibbsModel, block: SegmentedBlock, state: dict, local) -> tuple[np.ndarray, np.ndarray]:
    """The model's shared count table (``shared_rows`` x K int32) and its column totals from one block's state,
    as the engine's reducers build it."""
    rows, counts = model.shared_counts(block, state, local)
    table = np.zeros((model.shared_rows, model.num_topics), dtype=np.int32)
    table[rows] = counts
    return table, model.topic_totals(table)


def run_local(model: GibbsModel, block: SegmentedBlock, iterations: int, seed: int = 0,
              hyper: dict | None = None, on_iteration=None):
    """Initialise and run ``iterations`` Gibbs cycles; returns ``(block, state, hyper, nwk, nk)``.

    Per iteration: sweep (with the counts rebuilt from ``z``, as the engine does
    after every reduce), per-document hyperparameter updates, then the driver's
    global hyperparameter update from ``partition_stats``.
    """
    K, R = model.num_topics, model.shared_rows
    block = model.prepare_block(block)
    local = local_vocabulary(block.words)
    hyper = dict(hyper) if hyper is not None else model.initial_hyper()
    nwk = np.zeros((R, K), dtype=np.int32)
    nk = np.zeros(K, dtype=np.int64)
    state = model.init_state(block, hyper, nwk, nk, task_seed(seed, 0, 0))
    for it in range(1, iterations + 1):
        nwk, nk = shared_table(model, block, state, local)
        model.sweep(block, state, hyper, nwk, nk, task_seed(seed, it, 0))
        model.local_hyper_update(block, state, hyper, task_seed(seed, it, 0, 1))
        stats = model.partition_stats(block, state, hyper, task_seed(seed, it, 0, 2))
        hyper = model.update_hyper(hyper, stats, block.n_docs, task_seed(seed, it, DRIVER_PARTITION, 3))
        if on_iteration is not None:
            on_iteration(it, state, hyper)
    nwk, nk = shared_table(model, block, state, local)
    return block, state, hyper, nwk, nk
