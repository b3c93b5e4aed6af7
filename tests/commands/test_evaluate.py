"""Held-out evaluation: the estimators of inference/heldout.py against slow direct versions, and the evaluate job."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import special

from conftest import sample_lda_corpus, train_args, write_corpus
from drivers.corpora.bow import load_corpus
from drivers.evaluation import heldout as evaluation
from drivers.families.variational import infer as variational_infer
from drivers.store import publish
from drivers.store.model_store import save_model
from inference.blocks import DocBlock
from inference.heldout import (completion_log_likelihood, cooccurrence_counts, distinct_word_ids,
                               fold_in, npmi_coherence, score_document_completion, split_block,
                               split_document_completion, top_word_ids)
from inference.mapper import EStepSettings
from jobs import evaluate, train
from test_kernels import reference_estep
from inference.errors import UsageError

TERMS = [f"w{i:03d}" for i in range(80)]


def toy_block(docs) -> DocBlock:
    """``docs = [(doc_id, {term: count})]`` as a DocBlock."""
    return DocBlock.from_documents((d, sorted(bag), [bag[t] for t in sorted(bag)]) for d, bag in docs)


def random_docs(rng, n_docs, vocab_size, max_len):
    docs = []
    for d in range(n_docs):
        words = rng.integers(0, vocab_size, size=rng.integers(0, max_len + 1))
        ids, counts = np.unique(words, return_counts=True)
        docs.append((f"doc{d}", dict(zip(ids.tolist(), counts.tolist()))))
    return docs


# --------------------------------------------------------------------------- the split

def test_split_halves_tokens_deterministically():
    counts = np.array([3.0, 1.0, 7.0, 2.0])
    observed, heldout = split_document_completion(counts, seed=5, doc_id="a")
    np.testing.assert_array_equal(observed + heldout, counts)
    assert observed.sum() == 6 and heldout.sum() == 7 and np.all(observed >= 0) and np.all(heldout >= 0)
    again = split_document_completion(counts, seed=5, doc_id="a")
    np.testing.assert_array_equal(again[0], observed)
    draws = {tuple(split_document_completion(counts, seed=s, doc_id="a")[0]) for s in range(20)}
    assert len(draws) > 5, "the split must depend on the seed"
    draws = {tuple(split_document_completion(counts, seed=5, doc_id=f"d{i}")[0]) for i in range(20)}
    assert len(draws) > 5, "the split must depend on the document id"
    with pytest.raises(ValueError):
        split_document_completion(np.array([1.5, 2.0]), seed=0, doc_id="x")


def test_split_block_skips_short_documents_and_ignores_block_composition():
    rng = np.random.default_rng(0)
    docs = random_docs(rng, 40, 30, 12) + [("one", {4: 1}), ("none", {})]
    block = toy_block(docs)
    split = split_block(block, seed=3)
    lengths = block.doc_lengths()
    assert split.skipped == int(np.sum(lengths < 2)) >= 2
    assert list(split.observed.doc_ids) == list(split.heldout.doc_ids) == list(block.doc_ids[lengths >= 2])
    assert split.observed.n_tokens + split.heldout.n_tokens == block.n_tokens - lengths[lengths < 2].sum()
    # the same document gets the same split in another block (another partitioning)
    other = split_block(toy_block(docs[::3]), seed=3)
    for half, other_half in ((split.observed, other.observed), (split.heldout, other.heldout)):
        for d, doc_id in enumerate(other_half.doc_ids):
            e = int(np.flatnonzero(half.doc_ids == doc_id)[0])
            mine = dict(zip(half.global_terms()[half.indptr[e]:half.indptr[e + 1]].tolist(),
                            half.counts[half.indptr[e]:half.indptr[e + 1]].tolist()))
            theirs = dict(zip(other_half.global_terms()[other_half.indptr[d]:other_half.indptr[d + 1]].tolist(),
                              other_half.counts[other_half.indptr[d]:other_half.indptr[d + 1]].tolist()))
            assert mine == theirs and all(c > 0 for c in mine.values())


# --------------------------------------------------------------------------- fold-in and the likelihood

@pytest.fixture
def toy_model():
    rng = np.random.default_rng(11)
    K, V = 3, 25
    beta = rng.dirichlet(np.full(V, 0.3), size=K)
    alpha = np.array([0.2, 0.5, 0.1])
    block = toy_block(random_docs(rng, 30, V, 15))
    return beta, alpha, block


def test_fold_in_is_the_fixed_point_of_the_lda_updates_with_log_beta(toy_model):
    """gamma_k = alpha_k + sum_v w_v phi_vk with phi_vk proportional to exp(Psi(gamma_k)) beta_kv (explicit loops)."""
    beta, alpha, block = toy_model
    fit = fold_in(block, beta, alpha, tol=1e-12, max_iter=5000)
    for d in range(block.n_docs):
        expected = alpha.copy()
        elogtheta = special.digamma(fit.gamma[d]) - special.digamma(fit.gamma[d].sum())
        for j in range(block.indptr[d], block.indptr[d + 1]):
            v = block.vocab_ids[block.local_terms[j]]
            phi = np.exp(elogtheta) * beta[:, v]
            expected += block.counts[j] * phi / phi.sum()
        np.testing.assert_allclose(fit.gamma[d], expected, rtol=1e-8)
    np.testing.assert_allclose(fit.theta.sum(axis=1), 1.0)


def test_fold_in_with_exp_elogbeta_is_the_variational_estep(toy_model):
    _, alpha, block = toy_model
    rng = np.random.default_rng(2)
    lam = rng.gamma(2.0, 1.0, size=(3, 25))
    eb = np.exp(special.digamma(lam) - special.digamma(lam.sum(1, keepdims=True)))
    fit = fold_in(block, eb, alpha, tol=1e-10, max_iter=2000)
    for d in range(block.n_docs):
        s, e = block.indptr[d], block.indptr[d + 1]
        n_d = block.counts[s:e].sum()
        gamma, _, elbo, _, _ = reference_estep(block.global_terms()[s:e], block.counts[s:e], alpha + n_d / 3,
                                               lam, alpha, 1e-10, 2000)
        np.testing.assert_allclose(fit.gamma[d], gamma, rtol=1e-6)
        alpha_part = special.gammaln(alpha.sum()) - special.gammaln(alpha).sum() + np.dot(
            alpha, special.digamma(gamma) - special.digamma(gamma.sum()))
        assert fit.doc_elbo[d] + alpha_part == pytest.approx(elbo, rel=1e-7, abs=1e-7)


def test_completion_log_likelihood_matches_explicit_loops(toy_model):
    beta, _, block = toy_model
    theta = np.random.default_rng(4).dirichlet(np.ones(3), size=block.n_docs)
    ours = completion_log_likelihood(block, theta, beta)
    for d in range(block.n_docs):
        total = 0.0
        for j in range(block.indptr[d], block.indptr[d + 1]):
            v = block.vocab_ids[block.local_terms[j]]
            for _ in range(int(block.counts[j])):       # token by token
                total += math.log(sum(theta[d, k] * beta[k, v] for k in range(3)))
        assert ours[d] == pytest.approx(total, rel=1e-12, abs=1e-12)


def test_score_document_completion_puts_the_pieces_together(toy_model):
    beta, alpha, block = toy_model
    score = score_document_completion(block, beta, alpha, seed=9)
    split = split_block(block, 9)
    theta = fold_in(split.observed, beta, alpha).theta
    loglik = completion_log_likelihood(split.heldout, theta, beta).sum()
    assert score.loglik == pytest.approx(loglik) and score.heldout_tokens == split.heldout.n_tokens
    assert score.perplexity == pytest.approx(math.exp(-loglik / split.heldout.n_tokens))
    assert score.documents + score.skipped == block.n_docs
    # a uniform topic-word matrix predicts every word with probability 1/V
    uniform = score_document_completion(block, np.full((3, 25), 1 / 25), alpha, seed=9)
    assert uniform.perplexity == pytest.approx(25.0)


# --------------------------------------------------------------------------- NPMI

def brute_force_npmi(top_words, doc_sets):
    D = len(doc_sets)
    per_topic = []
    for words in top_words:
        scores = []
        for wi, wj in itertools.combinations(words, 2):
            di = sum(wi in s for s in doc_sets)
            dj = sum(wj in s for s in doc_sets)
            dij = sum(wi in s and wj in s for s in doc_sets)
            if dij == 0:
                scores.append(-1.0)
            elif dij == D:
                scores.append(1.0)
            else:
                p = dij / D
                scores.append(math.log(p / ((di / D) * (dj / D))) / -math.log(p))
        per_topic.append(sum(scores) / len(scores))
    return per_topic


def test_npmi_matches_brute_force_on_a_toy_corpus():
    rng = np.random.default_rng(1)
    docs = random_docs(rng, 60, 20, 8)
    docs += [("pair", {18: 1, 19: 2}), ("all", {0: 1, 1: 1})]
    block = toy_block(docs)
    top_words = np.array([[0, 1, 2, 3], [5, 9, 18, 19], [19, 7, 25, 0]])   # 25 occurs nowhere: NPMI -1
    word_ids = distinct_word_ids(top_words)
    counts = cooccurrence_counts(block, word_ids) + cooccurrence_counts(toy_block([]), word_ids)
    doc_sets = [set(bag) for _, bag in docs]
    for a, b in itertools.product(range(word_ids.size), repeat=2):
        assert counts[a, b] == sum(word_ids[a] in s and word_ids[b] in s for s in doc_sets)
    result = npmi_coherence(top_words, word_ids, counts, len(docs))
    expected = brute_force_npmi(top_words, doc_sets)
    np.testing.assert_allclose(result["per_topic"], expected, rtol=1e-12)
    assert result["mean"] == pytest.approx(np.mean(expected))
    assert all(-1.0 <= v <= 1.0 for v in result["per_topic"])


# --------------------------------------------------------------------------- the Spark job

@pytest.fixture(scope="module")
def heldout_setup(spark_session, tmp_path_factory):
    """A model trained on 400 synthetic LDA documents and 120 held-out documents of the same process. Made once
    per run, by whichever pytest-xdist worker needs it first (tests/shared_runs.py); tests read it."""
    import shutil

    from shared_runs import made_once, run_folder

    docs, beta = sample_lda_corpus(n_docs=520, n_topics=4, vocab_size=80, doc_length=60,
                                   alpha=0.2, eta=0.05, seed=21)
    root = run_folder(tmp_path_factory) / "evaluate_heldout"
    train_dir, test_dir, model_dir = str(root / "train"), str(root / "test"), str(root / "model")
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)         # a make that failed half-way
            write_corpus(spark_session, train_dir, docs[:400], TERMS)
            write_corpus(spark_session, test_dir, docs[400:], TERMS)
            train.train(spark_session, train_args(train_dir, model_dir, "--topics", 4, "--iterations", 25,
                                                  "--tol", 0, "--seed", 0))
    return model_dir, train_dir, test_dir, beta


def model_with(directory, lambda_, alpha, terms=TERMS):
    save_model(str(directory), {"model": "lda", "topics": lambda_.shape[0], "alpha": list(map(float, alpha))},
               pd.DataFrame({"term": terms, "id": np.arange(len(terms), dtype=np.int32)}), lambda_)
    publish.write_marker(str(directory), publish.new_token())     # a complete model directory
    return str(directory)


def test_trained_model_beats_uniform_and_shuffled_topics(spark_session, heldout_setup):
    model_dir, _, test_dir, beta = heldout_setup
    metrics = evaluate.evaluate_model(spark_session, model_dir, test_dir, seed=0)
    corpus = load_corpus(spark_session, test_dir)
    from drivers.store.model_store import load_model
    model = load_model(model_dir)
    uniform = evaluation.score_topic_word(spark_session, corpus, np.ones((4, 80)), model.alpha, seed=0)
    rng = np.random.default_rng(0)
    shuffled = np.stack([row[rng.permutation(80)] for row in model.topic_word()])
    scrambled = evaluation.score_topic_word(spark_session, corpus, shuffled, model.alpha, seed=0)
    truth = evaluation.score_topic_word(spark_session, corpus, beta, 0.2, seed=0)
    scrambled_npmi = evaluation.coherence(spark_session, corpus, top_word_ids(shuffled, 10))
    corpus.blocks.unpersist()
    assert uniform.perplexity == pytest.approx(80.0)
    assert metrics["perplexity"] < 0.5 * scrambled.perplexity
    assert metrics["perplexity"] < 0.5 * uniform.perplexity
    assert metrics["perplexity"] < 1.2 * truth.perplexity            # close to the true topics
    assert metrics["completion"]["documents"] == 120 and metrics["completion"]["heldout_tokens"] == 120 * 30
    assert len(metrics["npmi_per_topic"]) == 4 and metrics["npmi"] > scrambled_npmi["mean"] + 0.1, \
        (metrics["npmi"], scrambled_npmi)
    assert -math.log(metrics["perplexity"]) - 0.5 < metrics["heldout_elbo_per_token"] < 0


def test_evaluate_is_deterministic_and_independent_of_partitioning(spark_session, heldout_setup):
    model_dir, _, test_dir, _ = heldout_setup
    first = evaluate.evaluate_model(spark_session, model_dir, test_dir, seed=3)
    again = evaluate.evaluate_model(spark_session, model_dir, test_dir, seed=3, partitions=5)
    assert again["perplexity"] == pytest.approx(first["perplexity"], rel=1e-12)
    assert again["heldout_elbo_per_token"] == pytest.approx(first["heldout_elbo_per_token"], rel=1e-12)
    assert again["npmi_per_topic"] == first["npmi_per_topic"]
    other_seed = evaluate.evaluate_model(spark_session, model_dir, test_dir, seed=4)
    assert other_seed["perplexity"] != first["perplexity"]


def test_heldout_elbo_matches_the_reference_estep(spark_session, tmp_path):
    rng = np.random.default_rng(5)
    docs = random_docs(rng, 12, 80, 20)
    docs = [(d, bag) for d, bag in docs if bag]
    corpus_dir = write_corpus(spark_session, str(tmp_path / "c"), docs, TERMS)
    lam = rng.gamma(1.0, 1.0, size=(3, 80)) + 0.05
    alpha = np.array([0.3, 0.1, 0.6])
    model_dir = model_with(tmp_path / "m", lam, alpha)
    model, corpus = variational_infer.open_model_and_corpus(spark_session, model_dir, corpus_dir)
    result = evaluation.heldout_elbo(spark_session, corpus, variational_infer.exp_elogbeta(model), alpha,
                                   EStepSettings(1e-10, 3000))
    corpus.blocks.unpersist()
    total, tokens = 0.0, 0.0
    for _, bag in docs:
        terms = np.array(sorted(bag))
        counts = np.array([bag[t] for t in terms], dtype=float)
        total += reference_estep(terms, counts, alpha + counts.sum() / 3, lam, alpha, 1e-10, 3000)[2]
        tokens += counts.sum()
    assert result["elbo"] == pytest.approx(total, rel=1e-8)
    assert result["per_token"] == pytest.approx(total / tokens, rel=1e-8)


def test_vocabulary_mismatch_fails_with_advice(spark_session, heldout_setup, tmp_path):
    model_dir, _, _, _ = heldout_setup
    other = write_corpus(spark_session, str(tmp_path / "other"), [("a", {0: 2, 1: 1})],
                         list(reversed(TERMS)))
    with pytest.raises(UsageError, match=r"--vocab .*vocab\.parquet"):
        evaluate.evaluate_model(spark_session, model_dir, other)


def test_evaluate_cli_writes_json(spark_session, heldout_setup, tmp_path, capsys):
    import argparse

    from jobs.spark import add_spark_arguments
    model_dir, train_dir, test_dir, _ = heldout_setup
    parser = argparse.ArgumentParser()
    evaluate.add_arguments(parser)
    add_spark_arguments(parser)
    out = tmp_path / "metrics.json"
    args = parser.parse_args(["--model", model_dir, "--corpus", test_dir, "--reference", train_dir,
                              "--top-words", "5", "--output", str(out)])
    metrics = evaluate.run(args)
    printed = capsys.readouterr().out
    assert "document-completion perplexity" in printed and "NPMI" in printed
    saved = json.loads(out.read_text())
    assert saved["perplexity"] == pytest.approx(metrics["perplexity"])
    assert saved["npmi_settings"] == {"top_words": 5, "reference_documents": 400}
    assert saved["reference"] == train_dir
