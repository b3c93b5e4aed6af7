"""The hierarchical Dirichlet bigram language model (MacKay & Peto; Wallach §2.2, :mod:`drivers.models.bigram_lm`):
its keys against a direct reading of the tokens, the predictive (3.6) against the evidence (3.5) (a chain of
conditionals is the joint), the fixed point (2.58) against the evidence's maximum, recovery of beta n from data
drawn from the model, and on the engine: one counting pass through the reducers (each summing a share of the
one-column keyed table), the counts equal to a recount, the same model when resumed."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from drivers.engines.gibbs.settings import SampleSchedule
from engine_runs import fit_and_recount
from gibbs_corpus import sample_bigram_lm
from drivers.models.bigram_lm import BigramLM, bigram_keys, fixed_point, log_evidence
from inference.gibbs.model import SegmentedBlock
from inference.gibbs.tables import KeyedCounts


def counted(block, V):
    keys, counts = np.unique(bigram_keys(block, V), return_counts=True)
    return keys, counts.astype(np.int64)


def trained_model(V, keys, counts, alpha_m):
    model = BigramLM(1, V)
    model._bind(keys, counts, alpha_m)
    return model


def test_keys_are_the_previous_word_of_the_segment_or_the_start():
    block = SegmentedBlock.from_segments([("a", [[3, 1, 1], [2]]), ("b", [[0, 4]])])
    expected = []
    for s in range(block.n_segments):
        previous = 5
        for w in block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]]:
            expected.append(previous * 5 + int(w))
            previous = int(w)
    assert bigram_keys(block, 5).tolist() == expected


def test_predictive_left_to_right_is_the_evidence():
    """Without training counts the product of the predictives (3.6) of a document's words is the evidence (3.5)
    of its bigrams; with them it is the evidence of both over the evidence of the training bigrams."""
    rng = np.random.default_rng(2)
    V = 4
    alpha_m = rng.uniform(0.2, 2.0, V)
    train = SegmentedBlock.from_segments([(f"t{i}", [rng.integers(0, V, 12).tolist()]) for i in range(3)])
    test = SegmentedBlock.from_segments([("x", [rng.integers(0, V, 9).tolist()])])
    empty = trained_model(V, np.zeros(0, np.int64), np.zeros(0, np.int64), alpha_m)
    np.testing.assert_allclose(empty.token_log_probabilities(test).sum(),
                               log_evidence(*counted(test, V), V, alpha_m), rtol=1e-12)
    model = trained_model(V, *counted(train, V), alpha_m)
    both = SegmentedBlock.from_segments([(f"t{i}", [train.words[train.seg_ptr[i]:train.seg_ptr[i + 1]].tolist()])
                                         for i in range(3)] + [("x", [test.words.tolist()])])
    np.testing.assert_allclose(model.heldout_loglik(test, {}, None, None, 0, 0)[0],
                               log_evidence(*counted(both, V), V, alpha_m)
                               - log_evidence(*counted(train, V), V, alpha_m), rtol=1e-12)
    np.testing.assert_allclose(model.document_logliks(test), model.token_log_probabilities(test).sum())


def test_fixed_point_climbs_to_the_maximum_of_the_evidence():
    docs, _, _ = sample_bigram_lm(n_docs=8, length=40, vocab_size=5, beta=6.0, seed=1)
    keys, counts = counted(SegmentedBlock.from_segments(docs), 5)
    a = np.ones(5)
    values = [log_evidence(keys, counts, 5, a)]
    for _ in range(10):
        a, _ = fixed_point(keys, counts, 5, a, max_steps=1)
        values.append(log_evidence(keys, counts, 5, a))
    assert all(later >= earlier - 1e-9 for earlier, later in zip(values, values[1:]))
    optimum, steps = fixed_point(keys, counts, 5, np.ones(5))
    best = minimize(lambda x: -log_evidence(keys, counts, 5, np.exp(x)), np.zeros(5), method="BFGS")
    assert steps < 2000 and log_evidence(keys, counts, 5, optimum) >= -best.fun - 1e-6
    np.testing.assert_allclose(optimum, np.exp(best.x), rtol=1e-3, atol=1e-5)   # a word never seen: ~0


def test_recovers_the_base_measure_and_concentration_of_data_drawn_from_the_model():
    docs, n, _ = sample_bigram_lm(n_docs=150, length=100, vocab_size=20, beta=30.0, seed=4)
    model = BigramLM(1, 20)
    hyper = model.initial_hyper()
    keys, counts = counted(SegmentedBlock.from_segments(docs), 20)
    tables = {"bigrams": KeyedCounts(keys, counts.astype(np.int32)[:, None])}
    _, fitted, directive = model.global_step(tables, hyper, np.zeros(0), 0)
    found = np.asarray(fitted["base_measure"])
    assert directive is None and abs(fitted["beta"] - 30.0) / 30.0 < 0.25
    assert float(np.sum(n * np.log(n / found))) < 0.02                     # KL(n || n-hat), nats
    assert model.loglik(tables, {}, fitted) > model.loglik(tables, {}, hyper)


@pytest.fixture(scope="module")
def blocks(spark_session):
    docs, _, _ = sample_bigram_lm(n_docs=40, length=25, vocab_size=12, beta=10.0, seed=6)
    parts = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    rdd = spark_session.sparkContext.parallelize(list(enumerate(parts)), 2).cache()
    yield rdd, SegmentedBlock.from_segments(docs)
    rdd.unpersist()


def test_one_counting_pass_on_the_engine_and_resumed_the_same(spark_session, blocks, tmp_path, monkeypatch):
    monkeypatch.setattr("drivers.engines.gibbs.engine.DRIVER_SUM_BYTES", 0)     # through the reducers
    rdd, whole = blocks
    model = BigramLM(1, 12)
    schedule = SampleSchedule.resolve(5)
    result, recount = fit_and_recount(spark_session, model, rdd, 2, tmp_path / "run", schedule, 1, "auto",
                                      model.initial_hyper())
    keys, counts = counted(whole, 12)
    assert result.tables["bigrams"].equals(recount["bigrams"]) and result.counts_summed_on == "reducers"
    np.testing.assert_array_equal(result.tables["bigrams"].keys, keys)
    np.testing.assert_array_equal(result.tables["bigrams"].counts[:, 0], counts)
    assert len(result.trace) == 1 and result.samples == 1 and result.topic_word.shape == (1, 12)
    expected, _ = fixed_point(keys, counts, 12, np.ones(12))
    np.testing.assert_allclose(np.asarray(result.hyper["base_measure"]) * result.hyper["beta"], expected)
    assert math.isclose(result.trace[0].loglik, log_evidence(keys, counts, 12, expected))
    again, _ = fit_and_recount(spark_session, model, rdd, 2, tmp_path / "run", schedule, 1, "auto",
                               model.initial_hyper(), resume=True)
    assert again.hyper == result.hyper and again.tables["bigrams"].equals(result.tables["bigrams"])
    np.testing.assert_array_equal(again.topic_word, result.topic_word)
