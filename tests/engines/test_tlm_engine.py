"""The topic-based language model on the Gibbs engine (:mod:`drivers.models.tlm.model`): two partitions sweep their
pairs' counts (every variant's upper levels rebuilt from the keyed table), the counts summed by the reducers equal
to a recount of the final states (N_{w|w't} and the documents' topic histograms of Gibbs EM's alpha step), the same
chain through Spark jobs and the resident sampler, two sweeps per synchronisation (the partition's counts kept
between them), and a run interrupted after iteration 3 and resumed from its checkpoint equal to an uninterrupted
one."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.engines.gibbs.settings import SampleSchedule
from engine_runs import Interrupted, assert_same_runs, fit_and_recount
from inference.dm import CountHistograms
from inference.gibbs.model import SegmentedBlock
from drivers.models.tlm.model import TopicLM
from drivers.models.tlm.counts import pair_keys
from test_tlm import sample_tlm

V, K, ITERATIONS = 10, 3, 6


@pytest.fixture(scope="module")
def blocks(spark_session):
    docs, _, _ = sample_tlm(n_docs=40, length=20, V=V, K=K, alpha=0.2, beta=2.0, seed=5)
    parts = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    rdd = spark_session.sparkContext.parallelize(list(enumerate(parts)), 2).cache()
    yield rdd, SegmentedBlock.from_segments(docs)
    rdd.unpersist()


def _fit(spark_session, blocks, directory, sync, variant="h2b", path="minimal", resume=False, stop_after=None,
         sweeps_per_sync=1):
    model = TopicLM(K, V)
    return fit_and_recount(spark_session, model, blocks[0], 2, directory,
                           SampleSchedule.resolve(ITERATIONS, 4, 2 if sweeps_per_sync == 2 else 1, 1), 7, sync,
                           model.initial_hyper(prior_variant=variant, path=path), resume, stop_after, sweeps_per_sync)


@pytest.fixture(scope="module")
def jobs_run(spark_session, blocks, tmp_path_factory):
    return _fit(spark_session, blocks, tmp_path_factory.mktemp("tlm") / "jobs", "jobs")


def test_tables_are_the_recount_and_resident_is_the_same_chain(spark_session, blocks, jobs_run, tmp_path,
                                                               monkeypatch):
    result, recount = jobs_run
    whole = blocks[1]
    for name in ("bigram_topics", "doc_topic_histograms"):
        assert result.tables[name].equals(recount[name]), name
    table = result.tables["bigram_topics"]
    assert table.counts.sum() == whole.n_tokens
    np.testing.assert_array_equal(np.unique(table.keys // K), np.unique(pair_keys(whole, V)))
    histograms = result.tables["doc_topic_histograms"]
    hist = CountHistograms.from_rows(K, histograms.keys, histograms.counts[:, 0])
    assert hist.num_groups == whole.n_docs and hist.num_observations == whole.n_tokens
    assert {"beta", "beta0", "beta1"} <= set(result.hyper) and result.hyper["beta"] != 0.1 * V    # sampled
    np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    assert_same_runs(_fit(spark_session, blocks, tmp_path / "resident", "resident"), jobs_run)
    monkeypatch.setattr("drivers.engines.gibbs.engine.DRIVER_SUM_BYTES", 0)     # through the reducers
    reducers = _fit(spark_session, blocks, tmp_path / "reducers", "jobs")
    assert reducers[0].counts_summed_on == "reducers" and result.counts_summed_on == "driver"
    assert_same_runs(reducers, jobs_run)


def test_two_sweeps_per_synchronisation_keep_the_partitions_counts(spark_session, blocks, tmp_path):
    result, recount = _fit(spark_session, blocks, tmp_path / "two", "jobs", variant="2", path=None,
                               sweeps_per_sync=2)
    assert result.tables["bigram_topics"].equals(recount["bigram_topics"])
    assert len(result.hyper["beta_n"]) == K and result.trace[-1].iteration == ITERATIONS


def test_resumed_from_a_checkpoint_equals_uninterrupted(spark_session, blocks, jobs_run, tmp_path):
    with pytest.raises(Interrupted):
        _fit(spark_session, blocks, tmp_path / "ckpt", "jobs", stop_after=3)
    assert_same_runs(_fit(spark_session, blocks, tmp_path / "ckpt", "jobs", resume=True), jobs_run)
