"""Collapsed Gibbs LDA: the kernel samples eq (4.3) (first draw and stationary distribution against exact
enumeration), Minka's fixed point reaches the Dirichlet-multinomial maximum, topics are recovered on
Spark, the held-out estimator's arithmetic, and the model directory works with `topics`."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln

from conftest import hellinger_matched, train_args
from gibbs_corpus import sample_segmented_lda, terms, write_segmented_corpus
from drivers.evaluation.heldout import score_heldout
from drivers.models.lda_gibbs.model import LdaGibbs, doc_topic_counts, lda_sweep, minka_statistics
from inference.dirichlet import minka_step
from inference.errors import UsageError
from inference.gibbs.heldout import HeldoutSchedule, heldout_loglik
from inference.gibbs.local import global_counts
from inference.gibbs.model import SegmentedBlock
from jobs import train


def _counts(block, z, K, V):
    nwk, nk = global_counts(block, z, K, V)
    return nwk, nk


def test_first_draw_follows_eq_4_3():
    """The first token's new topic is distributed as (m_dk + alpha_k)(n_kw + beta)/(n_k + V beta), counts without it."""
    block = SegmentedBlock.from_segments([("a", [[0, 1, 2, 1]]), ("b", [[1, 3, 3, 0, 2]])])
    K, V, beta = 3, 4, 0.3
    alpha = np.array([0.2, 0.5, 1.1])
    z0 = np.array([2, 0, 1, 0, 1, 2, 2, 0, 1], dtype=np.int32)
    nwk, nk = _counts(block, z0, K, V)
    # slow reference: remove token 0 (word 0, topic 2) and evaluate eq (4.3)
    m = np.bincount(z0[1:4], minlength=K).astype(float)
    n_kw = nwk[0].astype(float).copy()
    n_k = nk.astype(float).copy()
    n_kw[2] -= 1
    n_k[2] -= 1
    p = (m + alpha) * (n_kw + beta) / (n_k + V * beta)
    p /= p.sum()
    draws = np.empty(20000, dtype=np.int64)
    for s in range(draws.size):
        z = z0.copy()
        lda_sweep(block.token_ptr(), block.words, z, nwk.copy(), nk.copy(), alpha, beta, np.zeros((1, 1)), False, s)
        draws[s] = z[0]
    freq = np.bincount(draws, minlength=K) / draws.size
    sd = np.sqrt(p * (1 - p) / draws.size)
    assert np.all(np.abs(freq - p) < 4.5 * sd), (freq, p)


def _exact_posterior(block, K, V, alpha, beta, frozen_phi=None):
    """p(z | w) over every assignment, from eq (4.2) (or with Phi given, prod_i phi_{z_i, w_i})."""
    N = block.n_tokens
    configs = np.array(list(itertools.product(range(K), repeat=N)), dtype=np.int32)
    logp = np.empty(len(configs))
    ptr = block.token_ptr()
    for c, z in enumerate(configs):
        total = 0.0
        for d in range(block.n_docs):
            m = np.bincount(z[ptr[d]:ptr[d + 1]], minlength=K)
            total += gammaln(alpha + m).sum() - gammaln(alpha.sum() + m.sum())
        if frozen_phi is None:
            nwk, nk = global_counts(block, z, K, V)
            total += gammaln(nwk + beta).sum() - gammaln(nk + V * beta).sum()
        else:
            total += np.log(frozen_phi[block.words, z]).sum()
        logp[c] = total
    p = np.exp(logp - logp.max())
    return configs, p / p.sum()


@pytest.mark.parametrize("frozen", [False, True], ids=["counts", "frozen_phi"])
def test_chain_converges_to_the_exact_posterior(frozen):
    """Many sweeps on a 5-token corpus visit every assignment with its exact posterior probability."""
    block = SegmentedBlock.from_segments([("a", [[0, 1], [1]]), ("b", [[2, 0]])])
    K, V, beta = 2, 3, 0.4
    alpha = np.array([0.3, 0.9])
    phi = np.array([[0.6, 0.1], [0.3, 0.2], [0.1, 0.7]]) if frozen else None
    configs, exact = _exact_posterior(block, K, V, alpha, beta, phi)
    model = LdaGibbs(K, V)
    hyper = model.initial_hyper(alpha=alpha, beta=beta)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = model.init_state(block, hyper, nwk, nk, 0)
    before = (nwk.copy(), nk.copy())
    index = {tuple(c): i for i, c in enumerate(configs)}
    visits = np.zeros(len(configs))
    for s in range(60000):
        model.sweep(block, state, hyper, nwk, nk, s + 1, frozen_phi=phi)
        visits[index[tuple(state["z"])]] += 1
    tv = 0.5 * np.abs(visits / visits.sum() - exact).sum()
    assert tv < 0.02, tv
    if frozen:   # frozen topics: the counts are never touched
        np.testing.assert_array_equal(nwk, before[0])
        np.testing.assert_array_equal(nk, before[1])
    else:        # the kernel keeps the counts equal to those of z
        expected = global_counts(block, state["z"], K, V)
        np.testing.assert_array_equal(nwk, expected[0])
        np.testing.assert_array_equal(nk, expected[1])


def test_minka_fixed_point_reaches_the_dirichlet_multinomial_maximum():
    rng = np.random.default_rng(4)
    alpha_true = np.array([0.1, 0.4, 1.5, 0.05])
    lengths = rng.integers(5, 120, size=300)
    ndk = np.stack([rng.multinomial(n, rng.dirichlet(alpha_true)) for n in lengths]).astype(np.int64)

    def neg_loglik(log_alpha):
        a = np.exp(log_alpha)
        return -(gammaln(a.sum()) - gammaln(lengths + a.sum()) + (gammaln(ndk + a) - gammaln(a)).sum(1)).sum()

    best = np.exp(minimize(neg_loglik, np.zeros(4), method="BFGS", options={"gtol": 1e-9}).x)
    alpha = np.full(4, 0.25)
    for _ in range(3000):
        alpha = minka_step(alpha, minka_statistics(ndk, alpha))
    np.testing.assert_allclose(alpha, best, rtol=2e-4)
    # the statistics are the digamma sums of the update, and count documents with tokens
    stats = minka_statistics(ndk, alpha)
    from scipy.special import digamma
    np.testing.assert_allclose(stats[:4], (digamma(ndk + alpha) - digamma(alpha)).sum(0), rtol=1e-10)
    np.testing.assert_allclose(stats[4], (digamma(lengths + alpha.sum()) - digamma(alpha.sum())).sum(), rtol=1e-10)
    assert stats[5] == 300


def test_doc_topic_and_hyper_contract():
    block = SegmentedBlock.from_segments([("x", [[0, 1], [2]]), ("y", [[1, 1, 1]])])
    model = LdaGibbs(2, 3)
    hyper = model.initial_hyper(alpha=[0.5, 1.5], beta=0.1, alpha_burn_in=2)
    state = {"z": np.array([0, 1, 1, 0, 0, 0], dtype=np.int32)}
    theta = model.doc_topic(block, state, hyper)
    np.testing.assert_allclose(theta, [[1.5 / 5, 3.5 / 5], [3.5 / 5, 1.5 / 5]])
    np.testing.assert_allclose(model.segment_topic(block, state, hyper), theta[[0, 0, 1]])
    stats = model.partition_stats(block, state, hyper, 0)
    for cycle in (1, 2):   # alpha_burn_in: the first two updates leave alpha alone
        hyper = model.update_hyper(hyper, stats, 2, 0)
        assert hyper["alpha"] == [0.5, 1.5] and hyper["cycles"] == cycle
    hyper = model.update_hyper(hyper, stats, 2, 0)
    assert hyper["alpha"] != [0.5, 1.5]
    seg = LdaGibbs(2, 3, segment_level=True).prepare_block(block)
    assert seg.n_docs == 3 and list(seg.doc_ids) == ["x#0", "x#1", "y#0"]
    np.testing.assert_array_equal(doc_topic_counts(seg.token_ptr(), state["z"], 2), [[1, 1], [0, 1], [3, 0]])


def test_heldout_estimator_arithmetic():
    """With identical topic rows the proportions do not matter: each token scores exactly phi_w."""
    block = SegmentedBlock.from_segments([("a", [[0, 1, 1], [2]]), ("b", [[2, 2, 0]])])
    phi = np.array([0.5, 0.3, 0.2])
    phi_vk = np.repeat(phi[:, None], 3, axis=1)
    model = LdaGibbs(3, 3)
    out = heldout_loglik(model, block, model.initial_hyper(), phi_vk, HeldoutSchedule(6, 2, 2, 2), 0, 0)
    np.testing.assert_allclose(out, [np.log(phi[block.words]).sum(), 7, 2])
    with pytest.raises(ValueError, match="must fit"):
        HeldoutSchedule(5, 3, 2, 2)
    s = HeldoutSchedule.default(50, 5)
    assert [t for t in range(1, 51) if s.is_sample(t)] == [30, 35, 40, 45, 50]


# --------------------------------------------------------------------------- on Spark

@pytest.fixture(scope="module")
def synthetic_gibbs_model(spark_session, tmp_path_factory):
    """LDA_D trained on Spark (2 partitions) on segmented data drawn from LDA, 20% held out."""
    docs, beta = sample_segmented_lda(n_docs=400, n_segments=4, seg_length=20, n_topics=4, vocab_size=80,
                                      alpha=0.2, eta=0.05, seed=7)
    root = tmp_path_factory.mktemp("gibbs_lda")
    corpus = write_segmented_corpus(root / "corpus", docs, terms(80))
    out = root / "model"
    meta = train.train(spark_session, train_args(
        corpus, out, "--model", "lda-gibbs", "--topics", 4, "--iterations", 40, "--burn-in", 30, "--lag", 2,
        "--samples", 5, "--partitions", 2, "--seed", 0, "--heldout-fraction", 0.2, "--heldout-iterations", 20))
    return corpus, out, meta, beta


def test_recovers_known_topics_and_alpha(synthetic_gibbs_model):
    corpus, out, meta, beta = synthetic_gibbs_model
    topic_word = np.load(out / "topic_word.npy", allow_pickle=False)
    distances = hellinger_matched(topic_word, beta)
    assert distances.max() < 0.1, distances
    alpha = np.asarray(meta["alpha"])
    assert np.all((alpha > 0.1) & (alpha < 0.35)), alpha        # Minka's alpha from 0.1 towards the true 0.2


def test_model_directory(synthetic_gibbs_model, capsys):
    corpus, out, meta, beta = synthetic_gibbs_model
    saved = json.loads((out / "model.json").read_text())
    assert saved["model"] == "lda-gibbs" and saved["topics"] == 4 and len(saved["alpha"]) == 4
    assert (saved["burn_in"], saved["lag"], saved["samples"], saved["samples_taken"]) == (30, 2, 5, 5)
    assert len(saved["trace"]) == 40 and sum(r["sample"] for r in saved["trace"]) == 5
    assert saved["data"]["split"] == "train" and saved["seed"] == 0
    # 20% of the documents are held out by a hash of their id, and scored
    held = saved["heldout"]
    assert 50 <= held["documents"] <= 110 and held["documents"] + saved["data"]["documents"] == 400
    assert 1 < held["perplexity"] < 80              # vocabulary 80: below uniform
    doc = pd.read_parquet(out / "doc_topics.parquet")
    seg = pd.read_parquet(out / "segment_topics.parquet")
    assert len(doc) == 400 and len(seg) == 4 * len(doc)      # the held-out documents too, inferred
    assert (~doc["heldout"]).sum() == saved["data"]["documents"] and doc["heldout"].sum() == held["documents"]
    assert set(seg["segment"]) == {0, 1, 2, 3}
    np.testing.assert_allclose(np.stack(doc["theta"]).sum(1), 1.0)
    assert (out / "loglik.png").stat().st_size > 1000 and (out / "topics.txt").exists()
    from jobs import topics
    import argparse
    text = topics.run(argparse.Namespace(model_dir=str(out), top_words=5, weights=False))
    assert text.count("topic") == 4
    # the trained topics explain held-out text better than random ones (same estimator)
    assert held["perplexity"] < 0.8 * _random_topics_perplexity(out, corpus, beta.shape)


def _random_topics_perplexity(out, corpus, shape):
    from drivers.corpora.segmented import load_segmented_corpus
    from pyspark.sql import SparkSession
    spark = SparkSession.getActiveSession()
    test = load_segmented_corpus(spark, corpus, None, heldout_fraction=0.2, split="test")
    model = LdaGibbs(*shape)
    random_topics = np.random.default_rng(0).dirichlet(np.ones(shape[1]), size=shape[0])
    try:
        return score_heldout(spark, model, model.initial_hyper(), random_topics, test.blocks,
                             HeldoutSchedule.default(20, observed=0.5))["perplexity"]
    finally:
        test.blocks.unpersist()


def test_evaluate_job_reuses_the_heldout_split(spark_session, synthetic_gibbs_model):
    """`evaluate` on the training corpus scores the same held-out documents with the same estimator and seed."""
    from drivers.families.gibbs.settings import GibbsEvaluation
    from jobs.evaluate import evaluate_model, format_metrics
    corpus, out, meta, _ = synthetic_gibbs_model
    metrics = evaluate_model(spark_session, str(out), corpus)
    assert metrics["test_documents"].startswith("held-out split")
    assert metrics["heldout"]["documents"] == meta["heldout"]["documents"]
    assert metrics["perplexity"] == pytest.approx(meta["heldout"]["perplexity"], rel=1e-12)
    assert -1 <= metrics["npmi"] <= 1 and "held-out perplexity (lda-gibbs" in format_metrics(metrics)
    # the default protocol is document completion of half of every segment; 'all' fits and scores every word,
    # which is optimistic (lower) and scores twice the tokens
    assert meta["heldout"]["observed"] == 0.5 and "document completion: 0.5" in format_metrics(metrics)
    same_words = evaluate_model(spark_session, str(out), corpus, engine=GibbsEvaluation(observed=None))
    assert same_words["heldout"]["observed"] is None and "every word fitted" in format_metrics(same_words)
    assert same_words["heldout"]["tokens"] > 1.9 * metrics["heldout"]["tokens"]
    assert same_words["perplexity"] < metrics["perplexity"]
    # the command line: `evaluate --heldout-observed all`, and a bad value is refused with a message
    import argparse
    from jobs import evaluate
    from jobs.spark import add_spark_arguments
    parser = argparse.ArgumentParser()
    evaluate.add_arguments(parser)
    add_spark_arguments(parser)
    cli = evaluate.run(parser.parse_args(["--model", str(out), "--corpus", corpus, "--heldout-observed", "all"]))
    assert cli["perplexity"] == pytest.approx(same_words["perplexity"], rel=1e-12)
    with pytest.raises(UsageError, match="heldout-observed"):
        evaluate.run(parser.parse_args(["--model", str(out), "--corpus", corpus, "--heldout-observed", "1.5"]))


def test_topic_evolution_of_one_document(synthetic_gibbs_model, tmp_path, capsys):
    import argparse
    from jobs import evolution
    _, out, _, _ = synthetic_gibbs_model
    doc_id = pd.read_parquet(out / "doc_topics.parquet")["doc_id"].iloc[0]
    result = evolution.run(argparse.Namespace(model_dir=str(out), doc_id=doc_id, output=str(tmp_path / "evo"),
                                              top_topics=3, top_words=3))
    theta = np.asarray(result["theta"])
    assert result["segments"] == [0, 1, 2, 3] and theta.shape == (4, 4)
    expected = np.sqrt(1 - np.sqrt(theta[1:] * theta[:-1]).sum(1))
    np.testing.assert_allclose(result["hellinger"], expected, atol=1e-12)
    assert evolution.hellinger(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == 1.0
    assert (tmp_path / "evo" / "evolution.png").stat().st_size > 1000
    saved = json.loads((tmp_path / "evo" / "evolution.json").read_text())
    assert saved["doc_id"] == doc_id and len(saved["topic_words"]) == 4
    with pytest.raises(UsageError, match="not among"):
        evolution.evolution(str(out), "no-such-document")


@pytest.mark.parametrize("K", [3, 60])
def test_minka_statistics_from_assignments_equal_the_count_matrix_route(K):
    """The partition statistics computed straight from z are bit for bit those of the (D, K) count matrix
    (documents of every length, empty ones included)."""
    from drivers.models.lda_gibbs.model import minka_statistics_of_assignments

    rng = np.random.default_rng(K)
    lengths = rng.integers(0, 40, size=300)
    lengths[[0, 17, 299]] = 0
    token_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    z = rng.integers(0, K, size=token_ptr[-1]).astype(np.int32)
    alpha = rng.gamma(1.0, 0.1, size=K)
    expected = minka_statistics(doc_topic_counts(token_ptr, z, K), alpha)
    np.testing.assert_array_equal(minka_statistics_of_assignments(token_ptr, z, alpha), expected)
    assert expected[K + 1] == np.count_nonzero(lengths)
