"""A Gibbs engine run for the engine's tests: fit a model over an RDD of blocks with a given sync mode, maybe
interrupted after an iteration or resumed from its checkpoint, and recount its tables from the final states."""
from __future__ import annotations

from drivers.engines.gibbs.engine import GibbsEngine
from drivers.engines.gibbs.settings import GibbsSettings
from inference.gibbs.tables import merge


class Interrupted(Exception):
    """Raised after the iteration a run is to stop at (a kill, as the checkpoint sees it)."""


def fit_and_recount(spark_session, model, blocks, partitions: int, directory, schedule, seed: int, sync: str,
                    hyper: dict, resume: bool = False, stop_after: int | None = None, sweeps_per_sync: int = 1):
    """``(GibbsResult, {table name: the table recounted from the final states})``; checkpoints every 2
    iterations; raises :class:`Interrupted` after iteration ``stop_after``."""
    engine = GibbsEngine(spark_session.sparkContext, model,
                         GibbsSettings(schedule, seed=seed, checkpoint_every=2, sync=sync,
                                       sweeps_per_sync=sweeps_per_sync), str(directory))

    def on_iteration(record):
        if record.iteration == stop_after:
            raise Interrupted()

    try:
        result = engine.fit(blocks, partitions, hyper, resume=resume, on_iteration=on_iteration)
        recount = result.states.map(lambda pi: model.table_counts(
            pi[1]["block"], pi[1]["state"], (pi[1]["vocab_ids"], pi[1]["local"]))).collect()
        return result, {t.name: merge(t, [c[t.name] for c in recount]) for t in model.count_tables()}
    finally:
        engine.release()


def assert_same_runs(a, b) -> None:
    """Two :func:`fit_and_recount` results are one chain: the same topic-word estimate, hyperparameters, trace and
    final tables (dense tables equal as arrays, keyed ones by ``equals``)."""
    import numpy as np

    (ra, _), (rb, _) = a, b
    np.testing.assert_array_equal(ra.topic_word, rb.topic_word)
    assert ra.hyper == rb.hyper and [r.loglik for r in ra.trace] == [r.loglik for r in rb.trace]
    assert ra.tables.keys() == rb.tables.keys()
    for name, table in ra.tables.items():
        if isinstance(table, np.ndarray):
            np.testing.assert_array_equal(table, rb.tables[name], err_msg=name)
        else:
            assert table.equals(rb.tables[name]), name


def interrupted_and_resumed(fit, directory, stop_after: int = 3):
    """``fit(directory, sync, resume=..., stop_after=...)`` run with jobs and stopped after iteration
    ``stop_after``, then resumed from its checkpoint with the resident sampler: ``(state.json's content, the resumed
    run)``."""
    import json

    import pytest

    with pytest.raises(Interrupted):
        fit(directory, "jobs", stop_after=stop_after)
    state = json.loads((directory / "state.json").read_text())
    return state, fit(directory, "resident", resume=True)
