"""The cluster-based topic model on the Gibbs engine (:mod:`drivers.models.cluster_lda.model`): two partitions open
clusters under provisional ids and the driver's global step numbers them and samples the concentrations; the same
chain through a Spark job per synchronisation and through the resident sampler, tables equal to a recount of the
states, and a run interrupted after iteration 3 and resumed from its checkpoint equal to an uninterrupted one."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.engines.gibbs.settings import SampleSchedule
from engine_runs import assert_same_runs, fit_and_recount, interrupted_and_resumed
from drivers.models.cluster_lda.model import ClusterLDA
from inference.gibbs.model import SegmentedBlock

V, T, ITERATIONS = 24, 3, 6


@pytest.fixture(scope="module")
def blocks(spark_session):
    rng = np.random.default_rng(3)
    phi = rng.dirichlet(np.full(V, 0.1), size=T)
    parts = [SegmentedBlock.from_segments([(f"p{p}d{d:03d}", [rng.choice(V, 12, p=phi[rng.integers(T)]).tolist()])
                                           for d in range(25)]) for p in range(2)]
    rdd = spark_session.sparkContext.parallelize(list(enumerate(parts)), 2).cache()
    yield rdd
    rdd.unpersist()


def _fit(spark_session, blocks, directory, sync, resume=False, stop_after=None):
    model = ClusterLDA(T, V)
    return fit_and_recount(spark_session, model, blocks, 2, directory, SampleSchedule.resolve(ITERATIONS, 4, 1, 2),
                           7, sync, model.initial_hyper(initial_clusters=2), resume, stop_after)


@pytest.fixture(scope="module")
def jobs_run(spark_session, blocks, tmp_path_factory):
    return _fit(spark_session, blocks, tmp_path_factory.mktemp("clda") / "jobs", "jobs")


def test_clusters_opened_by_partitions_and_numbered_by_the_driver_give_one_chain(spark_session, blocks, jobs_run,
                                                                                  tmp_path):
    result, recount = jobs_run
    assert result.tables["clusters"].equals(recount["clusters"])      # the directives kept the tables right
    np.testing.assert_array_equal(result.tables["nwk"], recount["nwk"])
    assert result.tables["clusters"].counts[:, 0].sum() == 50 and result.tables["nwk"].sum() == 600
    assert result.hyper["alpha1"] != 10.0 and result.hyper["zeta"] != 1.0          # sampled by the global step
    assert result.hyper["alpha_doc"] != 1.0         # under the evidence of both partitions' documents, in order
    np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    resident = _fit(spark_session, blocks, tmp_path / "resident", "resident")
    assert resident[0].sync == "resident" and result.sync == "jobs"
    assert_same_runs(resident, jobs_run)


def test_resumed_from_a_checkpoint_equals_uninterrupted(spark_session, blocks, jobs_run, tmp_path):
    state, resumed = interrupted_and_resumed(
        lambda directory, sync, **kw: _fit(spark_session, blocks, directory, sync, **kw), tmp_path / "ckpt")
    assert state["iteration"] == 2
    assert_same_runs(resumed, jobs_run)
