"""The Gibbs engine over named count tables: a toy model with a dense and a keyed table and a global step that
relabels its topics (a directive applied to every partition before it sweeps) runs the same chain through a
Spark job per synchronisation and through the resident sampler, ends with tables equal to a recount of its
states, and a run interrupted after iteration 3 and resumed from its checkpoint equals an uninterrupted one."""
from __future__ import annotations

import numpy as np
import pytest
from pyspark import cloudpickle

import toy_tables
from drivers.engines.gibbs.settings import SampleSchedule
from engine_runs import Interrupted, fit_and_recount, assert_same_runs
from inference.gibbs.model import SegmentedBlock
from inference.gibbs.tables import KeyedCounts
from toy_tables import RelabelledPairs

cloudpickle.register_pickle_by_value(toy_tables)    # the tasks unpickle the toy model without the tests' path

K, V, ITERATIONS = 3, 30, 6


@pytest.fixture(scope="module")
def blocks(spark_session):
    rng = np.random.default_rng(5)
    parts = [SegmentedBlock.from_segments([(f"p{p}d{d}", [rng.integers(0, V, 9).tolist() for _ in range(3)])
                                           for d in range(12)]) for p in range(2)]
    rdd = spark_session.sparkContext.parallelize(list(enumerate(parts)), 2).cache()
    yield rdd
    rdd.unpersist()


def _fit(spark_session, blocks, directory, sync, resume=False, stop_after=None):
    model = RelabelledPairs(K, V)
    return fit_and_recount(spark_session, model, blocks, 2, directory, SampleSchedule.resolve(ITERATIONS, 2, 2, 2),
                           4, sync, model.initial_hyper(alpha=0.3), resume, stop_after)


@pytest.fixture(scope="module")
def jobs_run(spark_session, blocks, tmp_path_factory):
    return _fit(spark_session, blocks, tmp_path_factory.mktemp("toy") / "jobs", "jobs")


def test_two_tables_and_a_relabelling_step_give_one_chain_in_both_transports(spark_session, blocks, jobs_run,
                                                                               tmp_path):
    result, recount = jobs_run
    assert isinstance(result.tables["pairs"], KeyedCounts) and result.tables["pairs"].nnz > 0
    np.testing.assert_array_equal(result.tables["nwk"], recount["nwk"])     # the directives kept the tables right
    assert result.tables["pairs"].equals(recount["pairs"])
    assert result.tables["nwk"].sum() == 2 * 12 * 3 * 9
    resident = _fit(spark_session, blocks, tmp_path / "resident", "resident")
    assert resident[0].sync == "resident" and result.sync == "jobs"
    assert_same_runs(resident, jobs_run)


def test_resumed_from_a_checkpoint_with_a_pending_directive_equals_uninterrupted(spark_session, blocks, jobs_run,
                                                                                 tmp_path):
    with pytest.raises(Interrupted):
        _fit(spark_session, blocks, tmp_path / "ckpt", "jobs", stop_after=3)
    import json
    state = json.loads((tmp_path / "ckpt" / "state.json").read_text())
    assert state["iteration"] == 2 and state["directive"]["json"] == {"step": "relabel"}
    assert_same_runs(_fit(spark_session, blocks, tmp_path / "ckpt", "resident", resume=True), jobs_run)
