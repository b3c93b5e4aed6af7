"""burst-lda.json on the Gibbs engine (issue 28; a word vector per topic per document over phi[topic],
:mod:`drivers.models.pdp_network.words_burst`) over two partitions: the tables the reducers sum (``nwk`` = the
documents' tables t_dkw, ``burst_hist``) equal a recount of the final states, 0 < t <= n in every occupied cell,
the side's a and b move; the run interrupted and resumed from its
checkpoint is the uninterrupted chain, and so is the resident sampler's."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.engines.gibbs.settings import SampleSchedule
from drivers.models.pdp_network import words_burst
from drivers.models.pdp_network.model import PdpNetwork
from engine_runs import Interrupted, assert_same_runs, fit_and_recount
from inference.gibbs.model import SegmentedBlock

V, K, ITERATIONS = 12, 3, 6


@pytest.fixture(scope="module")
def blocks(spark_session):
    rng = np.random.default_rng(5)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V // 2, rng.integers(4, 12)) + (i % 2) * (V // 2))])
            for i in range(20)]
    parts = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    rdd = spark_session.sparkContext.parallelize(list(enumerate(parts)), 2).cache()
    yield rdd
    rdd.unpersist()


def _fit(spark_session, blocks, directory, resume=False, stop_after=None, sync="jobs"):
    model = PdpNetwork(K, V)
    return fit_and_recount(spark_session, model, blocks, 2, directory, SampleSchedule.resolve(ITERATIONS, 4, 1, 1),
                           7, sync, model.initial_hyper(network="burst-lda"), resume, stop_after)


def test_burst_tables_are_the_recount_and_resume_is_the_same_chain(spark_session, blocks, tmp_path):
    run = _fit(spark_session, blocks, tmp_path / "run")
    result, recount = run
    np.testing.assert_array_equal(result.tables["nwk"], recount["nwk"])
    assert result.tables[words_burst.HIST].equals(recount[words_burst.HIST])
    c, t, wc, N, T, wr = words_burst.split(result.tables[words_burst.HIST])
    tokens = sum(b.n_tokens for _, b in blocks.collect())
    assert (c * wc).sum() == tokens and (N * wr).sum() == tokens
    assert np.all((1 <= t) & (t <= c)) and (t < c).any()                  # cells legal, some customers share
    assert result.tables["nwk"].sum() == (t * wc).sum() == (T * wr).sum() < tokens     # nwk: the tables
    assert result.hyper["a_values"]["burst.a"] != 0.5 and result.hyper["b_values"]["burst.b"] != 10.0
    np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    with pytest.raises(Interrupted):
        _fit(spark_session, blocks, tmp_path / "ckpt", stop_after=3)
    assert_same_runs(_fit(spark_session, blocks, tmp_path / "ckpt", resume=True), run)
    assert_same_runs(_fit(spark_session, blocks, tmp_path / "resident", sync="resident"), run)


@pytest.mark.parametrize("network", ["burst-pyp-lda", "hca-burst"])
def test_burst_over_a_pitman_yor_phi_is_the_recount_and_resume_is_the_same_chain(spark_session, blocks, tmp_path,
                                                                                  network):
    """burst-pyp-lda.json (the burst vectors over pyp-lda's Pitman-Yor phi[topic], :mod:`.words_burst_chain`) and
    hca-burst.json (the same beside hca's shared Pitman-Yor topic vector) over two partitions: ``nwk`` (phi's
    customers: the burst tables), ``word_tables`` (phi's) and ``burst_hist`` the recount, 0 < t <= n at both
    levels (and the shared vector's), every level's a and b move; resume and the resident sampler the same
    chain."""
    from drivers.models.pdp_network import words_pyp

    def fit(directory, resume=False, stop_after=None, sync="jobs"):
        model = PdpNetwork(K, V)
        return fit_and_recount(spark_session, model, blocks, 2, directory, SampleSchedule.resolve(ITERATIONS, 4, 1, 1),
                               7, sync, model.initial_hyper(network=network), resume, stop_after)

    run = fit(tmp_path / "run")
    result, recount = run
    for name in ("nwk", words_pyp.TABLE):
        np.testing.assert_array_equal(result.tables[name], recount[name])
    assert result.tables[words_burst.HIST].equals(recount[words_burst.HIST])
    c, t, wc, N, T, wr = words_burst.split(result.tables[words_burst.HIST])
    assert np.all((1 <= t) & (t <= c)) and (t < c).any()
    nwk, twk = words_pyp.legal(result.tables["nwk"], result.tables[words_pyp.TABLE])     # (race cells as read)
    assert nwk.sum() == (t * wc).sum() == (T * wr).sum()                  # phi's customers: the burst tables
    assert np.all((twk <= nwk) & ((twk > 0) == (nwk > 0))) and (twk < nwk).any()
    for kind, name, start in [("a", "burst.a", 0.5), ("b", "burst.b", 10.0), ("a", "phi.a", 0.5), ("b", "phi.b", 10.0)]:
        assert result.hyper[kind + "_values"][name] != start, name
    np.testing.assert_allclose(result.topic_word.sum(axis=1), 1.0)
    if network == "hca-burst":
        c, t = result.tables["network_tc"][1], result.tables["network_tp"][1]     # (rows: base, corpus)
        assert np.all(t <= c) and (t < c).any() and result.hyper["a_values"]["corpus.a"] != 0.2
        np.testing.assert_array_equal(result.tables["network_tc"], recount["network_tc"])
    with pytest.raises(Interrupted):
        fit(tmp_path / "ckpt", stop_after=3)
    assert_same_runs(fit(tmp_path / "ckpt", resume=True), run)
    assert_same_runs(fit(tmp_path / "resident", sync="resident"), run)
