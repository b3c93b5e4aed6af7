"""The Gibbs engine's tasks: staging a partition's block, one partition's share of a synchronisation (its
state, the directive of the driver's global step, the sweeps on private copies of the tables, its files, its
records) and the outputs after the last iteration.

A synchronisation's global values are ``(tables, derived, hyper, directive)``: the model's count tables and
the values derived from them (:meth:`inference.gibbs.model.GibbsModel.derive`), the hyperparameters and the
directive of the driver's global step (None: none). Every draw is seeded by ``task_seed(seed, iteration,
partition, purpose)``, and a task reads only files of earlier iterations, so a retried task reproduces its
result exactly.
"""
from __future__ import annotations

import time

import numpy as np

from drivers.engines.gibbs import state as gibbs_state
from drivers.engines.gibbs.settings import SyncPlan
from drivers.engines.gibbs.tables import TableLayout, count_records
from inference.gibbs.model import GibbsModel, task_seed
from partitioners.topic import STATISTICS_KEY


def only_one(partition: int, items):
    """The one (partition, value) record of the partition (the whole input is read: Spark reuses a worker
    only then)."""
    records = list(items)
    if len(records) != 1 or records[0][0] != partition:
        raise RuntimeError(f"partition {partition} expects its one record, got {[p for p, _ in records]}")
    return records[0][1]


def stage_task(partition, items, model, run, directory):
    """The block of the partition staged (:func:`drivers.engines.gibbs.state.stage`): its handle."""
    yield gibbs_state.stage(run, partition, model, only_one(partition, items), directory)


def _sweep(model: GibbsModel, item: dict, global_values, seed: int, partition: int, plan: SyncPlan) -> tuple:
    """Sweeps (or initialises) the item's state in place on private copies of the tables (AD-LDA), after the
    directive of the driver's global step (a partition marked :data:`~drivers.engines.gibbs.state.FROZEN` is not
    swept); returns (partition statistics, sweep seconds)."""
    tables_global, derived_global, hyper, directive = global_values
    block = item["block"]
    began = time.perf_counter()
    if not plan.iterations:
        item["state"] = model.initial_state(block, hyper, task_seed(seed, 0, partition))
        model.check_state(block, item["state"])
        return np.zeros(0), 0.0
    if directive is not None:
        model.apply_directive(block, item["state"], directive)
    if gibbs_state.FROZEN not in item["state"]:
        tables = {name: value.copy() for name, value in tables_global.items()}
        derived = {name: value.copy() for name, value in derived_global.items()}
        for t in plan.iterations:
            model.sweep_tables(block, item["state"], hyper, tables, derived, task_seed(seed, t, partition))
            model.local_hyper_update(block, item["state"], hyper, task_seed(seed, t, partition, 1))
    seconds = time.perf_counter() - began
    stats = model.partition_stats(block, item["state"], hyper, task_seed(seed, plan.last, partition, 2))
    return np.asarray(stats, dtype=np.float64), seconds


def partition_sync(partition, model, run, directory, global_values, seed, plan, layout: TableLayout) -> list:
    """One partition's share of a synchronisation: its state (this worker's or the files), the sweeps, the
    state's files, then its counts by table and column group and its record (statistics, sizes, timings)."""
    wall = [time.time()]
    previous = plan.iterations[0] - 1 if plan.iterations else None
    item = gibbs_state.checkout(run, partition, model, directory, previous)
    wall.append(time.time())
    stats, sweep_seconds = _sweep(model, item, global_values, seed, partition, plan)
    acc = None
    if plan.sample:
        acc = model.accumulate_sample(item["block"], item["state"], global_values[2],
                                      gibbs_state.sample_sums(item, directory, partition, plan.previous_sample))
    wall.append(time.time())
    gibbs_state.checkin(run, partition, item, directory, plan.last, acc)
    wall.append(time.time())
    block = item["block"]
    records = list(count_records(partition, model.table_counts(block, item["state"],
                                                               (item["vocab_ids"], item["local"])), layout))
    records.append((STATISTICS_KEY, (partition, stats, block.n_docs, block.n_tokens, sweep_seconds,
                                     wall + [time.time()])))
    return records


def partition_task(partition, items, model, run, directory, bc_global, seed, plan, layout):
    """Spark task of one synchronisation (one job per synchronisation)."""
    only_one(partition, items)
    yield from partition_sync(partition, model, run, directory, bc_global.value, seed, plan, layout)


def output_task(partition, items, model, run, directory, iteration, acc_iteration):
    """(partition, item) after ``iteration`` with the sums of the samples up to ``acc_iteration``."""
    only_one(partition, items)
    item = gibbs_state.checkout(run, partition, model, directory, iteration, update=False)
    yield partition, dict(item, acc=gibbs_state.sample_sums(item, directory, partition, acc_iteration))
