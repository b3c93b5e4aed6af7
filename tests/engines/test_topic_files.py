"""The sparse data path of the variational engine: topic parameters in the reducers' files, mappers reading the
rows of their own vocabulary, statistics travelling by their non-zeros, online rules reading the previous lambda."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import sparse

from drivers import storage
from drivers.engines.variational.topic_store import TopicFiles
from inference.errors import RefusedError
from inference.mapper import compact
from inference.reducer import split_by_topic, sum_in_partition_order


@pytest.mark.parametrize("uri", [False, True])
def test_rows_of_a_npy_file_are_read_alone(tmp_path, uri):
    """load_npy_rows = array[rows] for any rows (unsorted, repeated, far apart, none), memory-mapped locally and
    by byte ranges on a filesystem URI."""
    matrix = np.random.default_rng(0).random((5000, 7))
    path = str(tmp_path / "m.npy")
    np.save(path, matrix)
    path = "file://" + path if uri else path
    for rows in ([4999, 0, 17, 17, 2500, 1], list(range(0, 5000, 3)), [], [3]):
        np.testing.assert_array_equal(storage.load_npy_rows(path, np.array(rows, dtype=np.int64)),
                                      matrix[np.array(rows, dtype=np.int64)])
    if uri:
        with pytest.raises(IndexError):
            storage.load_npy_rows(path, np.array([5000]))


def test_topic_files_give_each_mapper_its_columns(tmp_path):
    K, V = 7, 50
    rng = np.random.default_rng(1)
    lam, weights = rng.random((K, V)), rng.random((V, K))
    files = TopicFiles(str(tmp_path / "iter"), K, 3)
    assert files.topic_groups == [[0, 3, 6], [1, 4], [2, 5]]
    assert not files.complete()
    for r, topics in enumerate(files.topic_groups):
        files.write(r, lam[topics], weights[:, topics])
    assert files.complete()
    assert np.load(files.weights_file(1)).shape == (V, 2)      # word-major
    vocab = np.array([3, 10, 11, 49])
    np.testing.assert_array_equal(files.log_word_weights(vocab), weights[vocab])
    np.testing.assert_array_equal(files.lambda_matrix(), lam)
    row = files.lambda_row_reader()
    for k in (5, 0, 6, 1):
        np.testing.assert_array_equal(row(k), lam[k])


def test_sparse_statistics_sum_as_dense_ones():
    """A block of sampled counts travels as CSR (its non-zeros); the reducer's sums are bit for bit those of the
    dense rows. Dense statistics (the E-step's) stay dense."""
    rng = np.random.default_rng(2)
    ids = np.array([2, 5, 9, 11, 12])
    dense = np.where(rng.random((3, 5)) < 0.2, rng.random((3, 5)), 0.0)
    packed = compact(dense)
    assert sparse.issparse(packed) and packed.nnz == np.count_nonzero(dense)
    assert isinstance(compact(rng.random((3, 5)) + 0.1), np.ndarray)
    other = rng.random((3, 5))
    topics = np.array([0, 4, 8])
    for records in ([(1, topics, ids, packed), (0, topics, ids, other)],):
        via_sparse = split_by_topic(records)
        via_dense = split_by_topic([(1, topics, ids, dense), (0, topics, ids, other)])
        start = rng.random(13)
        for k in topics:
            np.testing.assert_array_equal(sum_in_partition_order(via_sparse[k], 13, start),
                                          sum_in_partition_order(via_dense[k], 13, start))


def test_online_rule_gets_the_previous_lambda_and_the_driver_no_topic_matrix(spark_session, synthetic_lda,
                                                                            tmp_path):
    """An update rule with ``needs_previous`` reads the previous lambda of its topics from the topic files: one
    iteration from a warm start blends it with what batch EM forms from the same E-step. The reducers write their
    topics' files (word-major weights); the checkpoint's state holds per-topic numbers only."""
    from drivers.corpora.bow import load_corpus
    from drivers.engines.variational.engine import VariationalEngine
    from drivers.engines.variational.starts import WarmStart
    from drivers.engines.variational.settings import EMSettings
    from inference.priors import SymmetricPrior

    from inference.reducer import BatchUpdate

    class HalfStep(BatchUpdate):   # defined here: Spark ships it by value (a test module is not importable there)
        """An online rule for the test: lambda_k = (previous lambda_k + batch lambda_k) / 2."""
        needs_previous = True

        def final(self, total, eta_row, previous_row=None):
            return 0.5 * previous_row + 0.5 * total

    corpus_dir, _ = synthetic_lda
    corpus = load_corpus(spark_session, corpus_dir)
    K, V = 4, corpus.vocab_size
    settings = EMSettings(num_topics=K, max_iterations=1, tol=0, seed=0, schedule="fixed", restarts="never",
                          optimize_alpha=False, num_reducers=3)
    prior = SymmetricPrior(0.25, V)
    start = np.random.default_rng(5).gamma(2.0, 1.0, size=(K, V))
    try:
        fits = {}
        for name, update in (("batch", None), ("online", HalfStep())):
            engine = VariationalEngine(spark_session.sparkContext, settings, prior, str(tmp_path / name),
                                       update=update, start=WarmStart(start, np.full(K, 0.3)))
            fits[name] = engine.fit(corpus.blocks, corpus.num_partitions, V)
        np.testing.assert_allclose(fits["online"].lambda_, 0.5 * start + 0.5 * fits["batch"].lambda_, rtol=1e-12)
        assert fits["online"].trace[0].elbo == fits["batch"].trace[0].elbo   # same point of the E-step

        files = TopicFiles(str(tmp_path / "batch" / "topics" / "iter-00001"), K, 3)
        assert files.complete() and np.load(files.weights_file(0)).shape == (V, 2)
        np.testing.assert_array_equal(files.lambda_matrix(), fits["batch"].lambda_)
        state = json.loads((tmp_path / "batch" / "state.json").read_text())
        assert state["format"] == 2 and state["reducers"] == 3 and len(state["prior_terms"]) == K
        assert not list(tmp_path.glob("batch/lambda-*.npy"))      # no K x V file from the driver
    finally:
        corpus.blocks.unpersist()


def test_checkpoint_of_an_older_layout_is_refused(tmp_path):
    from drivers.engines.variational.checkpoint import Checkpointer

    (tmp_path / "state.json").write_text(json.dumps({"iteration": 3, "alpha": [0.1]}))
    with pytest.raises(RefusedError, match="older spark-topics"):
        Checkpointer(str(tmp_path)).load()


def test_reducer_streams_in_partition_order_and_refuses_disorder():
    """reduce_topics adds one record at a time; a topic no record mentions is the prior row; records of a topic
    out of partition order are refused (they would change the sums' rounding)."""
    from inference.layout import VocabLayout
    from inference.reducer import reduce_topics

    layout, eta = VocabLayout.monolingual(6), np.full(6, 0.5)
    ids = np.array([1, 4])
    records = [(0, np.array([0, 2]), ids, np.array([[1.0, 2.0], [3.0, 4.0]])),
               (1, np.array([0, 2]), ids, compact(np.array([[0.0, 5.0], [0.0, 0.0]])))]
    updates = list(reduce_topics([0, 2, 4], iter(records), lambda k: eta, layout))
    assert [u.topic for u in updates] == [0, 2, 4]
    np.testing.assert_array_equal(updates[0].lambda_row, [0.5, 1.5, 0.5, 0.5, 7.5, 0.5])
    np.testing.assert_array_equal(updates[1].lambda_row, [0.5, 3.5, 0.5, 0.5, 4.5, 0.5])
    np.testing.assert_array_equal(updates[2].lambda_row, eta)
    with pytest.raises(ValueError, match="partition order"):
        list(reduce_topics([0, 2], iter(records[::-1]), lambda k: eta, layout))


def test_small_records_give_the_same_model(spark_session, synthetic_lda, tmp_path, monkeypatch):
    """Records split to one topic each (a tiny RECORD_ENTRIES) give the model of the default grouping, bit for
    bit: a topic's statistics still reach its reducer in partition order."""
    import drivers.engines.variational.engine as engine_module
    from jobs import train
    from conftest import train_args

    corpus, _ = synthetic_lda
    flags = ["--topics", 4, "--iterations", 3, "--tol", 0, "--seed", 2, "--reducers", 2]
    train.train(spark_session, train_args(corpus, tmp_path / "default", *flags))
    monkeypatch.setattr(engine_module, "RECORD_ENTRIES", 80)        # V = 80: one topic per record
    train.train(spark_session, train_args(corpus, tmp_path / "small", *flags))
    np.testing.assert_array_equal(np.load(tmp_path / "default" / "lambda.npy"),
                                  np.load(tmp_path / "small" / "lambda.npy"))


def test_resume_with_other_reducers_gives_the_same_model(spark_session, synthetic_lda, tmp_path):
    """The topic files record their grouping: a run stopped after 2 iterations with 1 reducer and resumed with 3
    ends with the model of an uninterrupted run with 2 (sums in partition order, whatever the grouping)."""
    from dataclasses import replace

    from drivers.corpora.bow import load_corpus
    from drivers.engines.variational.engine import VariationalEngine
    from drivers.engines.variational.settings import EMSettings
    from inference.priors import SymmetricPrior

    corpus_dir, _ = synthetic_lda
    corpus = load_corpus(spark_session, corpus_dir)
    V = corpus.vocab_size
    base = EMSettings(num_topics=4, max_iterations=4, tol=0, seed=3)

    def fit(directory, settings, resume=False):
        engine = VariationalEngine(spark_session.sparkContext, settings, SymmetricPrior(0.25, V), str(directory))
        return engine.fit(corpus.blocks, corpus.num_partitions, V, resume=resume)

    try:
        whole = fit(tmp_path / "whole", replace(base, num_reducers=2))
        fit(tmp_path / "parts", replace(base, num_reducers=1, max_iterations=2))
        resumed = fit(tmp_path / "parts", replace(base, num_reducers=3), resume=True)
        assert resumed.iterations == 4
        np.testing.assert_array_equal(resumed.lambda_, whole.lambda_)
        np.testing.assert_array_equal(resumed.alpha, whole.alpha)
        assert [r.elbo for r in resumed.trace] == [r.elbo for r in whole.trace]
    finally:
        corpus.blocks.unpersist()
