"""A single-process reference driver for the Gibbs models: the engine's loop without Spark.

``run_local_tables`` performs exactly the steps the Spark engine (``drivers/engines/gibbs/``) performs per
iteration, for one block treated as partition 0, so kernel tests can run a model end to end, and the engine's
single-partition run can be checked against it: the tables counted from the state, the sweep on them, the
per-document and the global hyperparameter updates, the global step and its directive.
"""
from __future__ import annotations

import numpy as np

from inference.gibbs.counts import local_vocabulary
from inference.gibbs.counts import topic_word_counts
from inference.gibbs.model import DRIVER_PARTITION, GibbsModel, SegmentedBlock, task_seed
from inference.gibbs.tables import merge


def global_counts(block: SegmentedBlock, z: np.ndarray, num_topics: int, vocab_size: int):
    """Dense ``nwk`` (V x K int32) and ``nk`` (K int64) from one block's assignments."""
    vocab_ids, counts = topic_word_counts(block, z, num_topics)
    nwk = np.zeros((vocab_size, num_topics), dtype=np.int32)
    nwk[vocab_ids] = counts
    return nwk, nwk.sum(axis=0).astype(np.int64)


def count_tables(model: GibbsModel, block: SegmentedBlock, state: dict, local) -> tuple[dict, dict]:
    """The model's count tables and derived values from one block's state, as the engine's reducers build
    them."""
    contributions = model.table_counts(block, state, local)
    tables = {table.name: merge(table, [contributions[table.name]]) for table in model.count_tables()}
    return tables, model.derive(tables)


def run_local_tables(model: GibbsModel, block: SegmentedBlock, iterations: int, seed: int = 0,
                     hyper: dict | None = None, on_iteration=None):
    """Initialise and run ``iterations`` Gibbs cycles; returns ``(block, state, hyper, tables, derived)``.

    Per iteration, as the engine: the directive of the last global step applied to the state, the sweep on the
    tables (counted from the state, or as the global step left them), per-document hyperparameter updates, the
    driver's hyperparameter update from ``partition_stats``, the tables counted again and, between two
    iterations, the global step. A model without latent variables (``model.latent`` False) is counted once and
    fitted by one global step, as the engine runs it, whatever ``iterations`` says.
    """
    block = model.prepare_block(block)
    local = local_vocabulary(block.words)
    hyper = dict(hyper) if hyper is not None else model.initial_hyper()
    state = model.initial_state(block, hyper, task_seed(seed, 0, 0))
    tables, derived = count_tables(model, block, state, local)
    if not model.latent:
        tables, hyper, _ = model.global_step(tables, hyper, np.zeros(0), task_seed(seed, 1, DRIVER_PARTITION, 4))
        if on_iteration is not None:
            on_iteration(1, state, hyper)
        return block, state, hyper, tables, model.derive(tables)
    directive = None
    for it in range(1, iterations + 1):
        if directive is not None:
            model.apply_directive(block, state, directive)
        model.sweep_tables(block, state, hyper, tables, derived, task_seed(seed, it, 0))
        model.local_hyper_update(block, state, hyper, task_seed(seed, it, 0, 1))
        stats = np.asarray(model.partition_stats(block, state, hyper, task_seed(seed, it, 0, 2)), dtype=np.float64)
        if model.stats_by_partition:
            stats = [stats]
        hyper = model.update_hyper(hyper, stats, block.n_docs, task_seed(seed, it, DRIVER_PARTITION, 3))
        tables, derived = count_tables(model, block, state, local)
        if it < iterations:
            tables, hyper, directive = model.global_step(tables, hyper, stats,
                                                         task_seed(seed, it, DRIVER_PARTITION, 4))
            derived = model.derive(tables)
        if on_iteration is not None:
            on_iteration(it, state, hyper)
    return block, state, hyper, tables, derived


def run_local(model: GibbsModel, block: SegmentedBlock, iterations: int, seed: int = 0,
              hyper: dict | None = None, on_iteration=None):
    """:func:`run_local_tables` of a model over the one word table: ``(block, state, hyper, nwk, nk)``."""
    block, state, hyper, tables, derived = run_local_tables(model, block, iterations, seed, hyper, on_iteration)
    return block, state, hyper, tables["nwk"], derived["nk"]
