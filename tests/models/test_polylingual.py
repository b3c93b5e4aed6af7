"""Polylingual LDA (thesis §3.3.2, Mimno et al. 2009): layout maths, aligned corpora, recovery, evaluation."""
from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pandas as pd
import pytest

from conftest import SAMPLE_DATA, hellinger_matched, train_args
from drivers.corpora.aligned import load_aligned_corpus
from drivers.preparation.aligned import prepare_aligned
from drivers.store import model_store, topics_text
from inference.distances import hellinger_matrix
from inference.elbo import topic_terms
from inference.layout import VocabLayout
from inference.priors import DirichletPrior
from inference.retrieval import retrieval_scores

LANGS = ("en", "es")


def test_layout_normalises_each_language():
    layout = VocabLayout.from_sizes(["de", "en"], [3, 2])
    lam = np.array([[1.0, 2.0, 3.0, 4.0, 4.0], [2.0, 2.0, 2.0, 1.0, 3.0]])
    beta = layout.normalise(lam)
    assert np.allclose(beta[:, :3].sum(1), 1) and np.allclose(beta[:, 3:].sum(1), 1)
    assert np.allclose(beta[0, 3:], [0.5, 0.5])
    from scipy.special import digamma
    elog = layout.dirichlet_expectation(lam[0])
    assert np.allclose(elog[:3], digamma(lam[0, :3]) - digamma(6.0))
    assert np.allclose(elog[3:], digamma(lam[0, 3:]) - digamma(8.0))


def test_polylingual_topic_terms_are_sums_of_per_language_dirichlets():
    rng = np.random.default_rng(0)
    layout = VocabLayout.from_sizes(["a", "b", "c"], [4, 6, 3])
    lam = rng.gamma(2.0, 1.0, size=13)
    prior = DirichletPrior.per_language([0.1, 0.5, 2.0], layout)
    eta = prior.row(0)
    assert np.allclose(eta, np.repeat([0.1, 0.5, 2.0], [4, 6, 3]))
    elog, prior_term, entropy_term = topic_terms(lam, eta, layout)
    parts = [topic_terms(lam[s], eta[s]) for s in layout.slices()]
    assert np.allclose(elog, np.concatenate([p[0] for p in parts]))
    assert prior_term == pytest.approx(sum(p[1] for p in parts))
    assert entropy_term == pytest.approx(sum(p[2] for p in parts))


def test_retrieval_scores():
    theta = np.random.default_rng(1).dirichlet(np.full(5, 0.3), size=20)
    perfect = retrieval_scores(theta, theta)
    assert perfect["precision_at_1"] == 1.0 and perfect["mean_rank"] == 1.0
    shuffled = retrieval_scores(theta, theta[::-1])
    assert shuffled["precision_at_1"] < 0.2
    h = hellinger_matrix(theta[:3], theta[3:6])
    direct = np.sqrt(0.5 * ((np.sqrt(theta[:3, None]) - np.sqrt(theta[None, 3:6])) ** 2).sum(-1))
    assert np.allclose(h, direct)


def synthetic_aligned(path, n_tuples=240, K=3, V=40, length=60, seed=3):
    """Tuples drawn from polylingual LDA: one theta per tuple, one topic-word matrix per language.

    Words are letter strings (``xq...`` English, ``zq...`` Spanish) so ``prepare`` keeps them. Also writes
    a row without language (a reject) and a tuple present in English only (counted as missing es)."""
    rng = np.random.default_rng(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {l: [p + letters[i // 26] + letters[i % 26] for i in range(V)] for l, p in zip(LANGS, ("xq", "zq"))}
    beta = {l: rng.dirichlet(np.full(V, 0.05), size=K) for l in LANGS}
    rows = []
    for d in range(n_tuples):
        theta = rng.dirichlet(np.full(K, 0.3))
        for l in LANGS:
            z = rng.choice(K, size=length, p=theta)
            w = [words[l][rng.choice(V, p=beta[l][k])] for k in z]
            rows.append({"id": f"t{d:04d}", "lang": l, "text": " ".join(w)})
    rows.append({"id": "lonely", "lang": "en", "text": " ".join(words["en"][:10])})
    rows.append({"id": "nolang", "lang": None, "text": "xqaa xqab"})
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return beta, words


@pytest.fixture(scope="module")
def synthetic_poly(spark_session, tmp_path_factory):
    base = tmp_path_factory.mktemp("poly")
    beta, words = synthetic_aligned(str(base / "input.jsonl.gz"))
    corpus = prepare_aligned(spark_session, str(base / "input.jsonl.gz"), str(base / "corpus"), "lang",
                             min_df=1, max_df=1.0, language="none")
    return str(base / "corpus"), corpus, beta, words


def test_prepare_aligned_counts_everything(synthetic_poly):
    directory, corpus, _, _ = synthetic_poly
    assert corpus["languages"] == ["en", "es"] and corpus["documents"] == 241
    assert corpus["tuples"] == {"complete": 240, "missing": {"en": 0, "es": 1}}
    assert corpus["rejected"]["missing_language"] == 1 and corpus["input_rows"] == 482
    assert corpus["per_language"]["en"]["documents"] == 241 and corpus["per_language"]["es"]["documents"] == 240
    rejects = pd.read_json(next(p for p in (os.path.join(directory, "rejects", f) for f in
                                            os.listdir(os.path.join(directory, "rejects"))) if p.endswith(".json")
                                and os.path.getsize(p) > 0), lines=True)
    assert rejects["id"].tolist() == ["nolang"] and rejects["reason"].tolist() == ["missing_language"]


def test_aligned_blocks_concatenate_languages(spark_session, synthetic_poly):
    directory, corpus, _, _ = synthetic_poly
    loaded = load_aligned_corpus(spark_session, directory, 2)
    V_en = loaded.layout.sizes()[0]
    blocks = dict(loaded.blocks.collect())
    docs = {i: b for b in blocks.values() for i in b.doc_ids}
    assert len(docs) == 241
    block = docs["t0000"]
    d = list(block.doc_ids).index("t0000")
    ids = block.global_terms()[block.indptr[d]:block.indptr[d + 1]]
    assert np.all(np.diff(ids) > 0) and ids.min() < V_en <= ids.max()   # both languages, ascending
    assert block.doc_lengths()[d] == 120
    loaded.blocks.unpersist()


def test_polylingual_lda_recovers_aligned_topics(spark_session, synthetic_poly, tmp_path):
    from jobs.train import train as train_lda

    directory, _, beta, words = synthetic_poly
    out = tmp_path / "model"
    meta = train_lda(spark_session, train_args(directory, out, "--model", "polylda", "--topics", 3,
                                               "--iterations", 15, "--tol", 0, "--seed", 0))
    elbo = np.array([r["elbo"] for r in meta["elbo_trace"]])
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:]))
    assert meta["languages"] == ["en", "es"]
    for name in ("vocab.en.parquet", "vocab.es.parquet", "lambda.en.npy", "lambda.es.npy", "model.json"):
        assert (out / name).exists()
    assert np.load(out / "lambda.es.npy", allow_pickle=False).shape == (3, meta["vocab_sizes"]["es"])
    model = model_store.load_model(str(out))
    matches = {}
    for l in ("en", "es"):
        view = model.language_view(l)
        order = [words[l].index(t) for t in view.vocab["term"]]
        truth = beta[l][:, order]
        truth = truth / truth.sum(1, keepdims=True)
        est = view.topic_word()
        h = np.sqrt(0.5 * ((np.sqrt(est[:, None]) - np.sqrt(truth[None])) ** 2).sum(-1))
        matches[l] = h.argmin(axis=1)
        assert hellinger_matched(est, truth).max() < 0.15
    # topic k is the same topic in both languages: it matches the same true topic
    assert matches["en"].tolist() == matches["es"].tolist() and len(set(matches["en"])) == 3
    text = topics_text.format_model_topics(model, 5)
    assert "topic 0 [en]" in text and "[es]" in text


def test_sample_retrieval_beats_monolingual(spark_session, tmp_path):
    """On the aligned English/Spanish sample: polylingual topics retrieve the aligned chapter far above
    chance, monolingual models of each language (unaligned topics) do not."""
    from drivers.families.variational.evaluate import evaluate_aligned, language_models
    from jobs.train import train as train_lda

    corpus = str(tmp_path / "corpus")
    meta = prepare_aligned(spark_session, os.path.join(SAMPLE_DATA, "bible_en_es.jsonl.gz"), corpus, "lang",
                           holdout_fraction=0.2)
    assert meta["heldout"] > 80 and meta["tuples"]["complete"] == meta["documents"]
    args = ("--topics", 12, "--iterations", 6, "--tol", 0, "--seed", 0)
    train_lda(spark_session, train_args(corpus, tmp_path / "poly", "--model", "polylda", *args))
    for l in LANGS:
        train_lda(spark_session, train_args(os.path.join(corpus, l), tmp_path / f"mono_{l}", *args))
    heldout = os.path.join(corpus, "heldout")
    poly = evaluate_aligned(spark_session, language_models(str(tmp_path / "poly"), None), heldout)
    mono = evaluate_aligned(spark_session, language_models(
        None, ",".join(f"{l}={tmp_path / f'mono_{l}'}" for l in LANGS)), heldout)
    for pair in ("en->es", "es->en"):
        p, m = poly["retrieval"][pair], mono["retrieval"][pair]
        assert p["precision_at_1"] > 10 * p["chance_precision"], p
        assert p["precision_at_1"] > 3 * m["precision_at_1"] + 0.05, (p, m)
        assert p["mean_aligned_divergence"] < m["mean_aligned_divergence"]
    for l in LANGS:
        assert np.isfinite(poly["per_language"][l]["perplexity"]) and poly["per_language"][l]["perplexity"] > 1
