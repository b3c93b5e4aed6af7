"""A revised document's old copy leaves a variational refresh (issue 30; drivers/families/variational/revisions.py):
``batch`` reads each id's latest text only, ``accumulate`` takes the old copy's expected counts under the parent
model out of its prior (clipped at eta) and its E[log theta] out of alpha's sums, ``online`` out of the step's
start; model.json counts the id once; the version's doc_topics (``--reinfer-old``, ``batch``) holds it once.

The root is test_refresh's ``refreshed`` (a base of 40 documents, version 1 ingesting b000..b019); each test
revises b003 into the words of the topic its old text uses least, 50 tokens (its old text: 30 and the new words).
The old copy's expected counts are computed here from the math: gamma by fixed-point iteration to 1e-12 (the
refresh's E-step stops at a mean |delta gamma| of 1e-3, hence the tolerances of 0.05 tokens), phi from gamma."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from scipy.special import digamma

from drivers.corpora.files import DOCS
from drivers.families.variational import revisions
from drivers.store import model_root, model_store
from test_refresh import base, copy_root, refreshed, run, texts, write_batch  # noqa: F401 (fixtures)


def corpus_rows(version_dir):
    docs = pd.read_parquet(os.path.join(version_dir, "corpus", DOCS))
    return {str(d): dict(zip(t.tolist(), c.tolist())) for d, t, c in zip(docs.doc_id, docs.term_ids, docs.counts)}


def posterior(lambda_, alpha, bag, tol=1e-12):
    """(expected counts K x V, E[log theta]) of one document ``bag`` (id -> count) under (lambda, alpha): the
    variational fixed point gamma = alpha + sum_w n_w phi_w, phi_wk ~ exp(E[log beta_kw] + E[log theta_k])."""
    ids, n = np.array(list(bag)), np.array(list(bag.values()), dtype=float)
    elogbeta = digamma(lambda_[:, ids]) - digamma(lambda_.sum(axis=1, keepdims=True))
    gamma = alpha + n.sum() / len(alpha)
    for _ in range(10_000):
        elogtheta = digamma(gamma) - digamma(gamma.sum())
        phi = np.exp(elogbeta + elogtheta[:, None])
        phi /= phi.sum(axis=0, keepdims=True)
        new = alpha + phi @ n
        done = np.abs(new - gamma).mean() < tol
        gamma = new
        if done:
            break
    elogtheta = digamma(gamma) - digamma(gamma.sum())
    counts = np.zeros_like(lambda_)
    counts[:, ids] = phi * n
    return counts, elogtheta


@pytest.fixture()
def revised_batch(refreshed, tmp_path):  # noqa: F811
    """A copy of ``refreshed`` and a batch revising b003 (into the words of the topic its old text uses least), a
    base document met again (adopted) and one new document."""
    root = copy_root(refreshed, tmp_path)
    parent = model_store.load_model(str(root))
    old_bag = corpus_rows(model_store.resolve(str(root)))["b003"]
    share = (parent.lambda_[:, list(old_bag)] * np.array(list(old_bag.values()))).sum(axis=1)
    other = int(np.argmin(share))
    top = parent.vocab["term"].to_numpy()[np.argsort(-parent.lambda_[other])[:10]]
    new_text = " ".join(top[i % 10] for i in range(50))
    batch = [("b003", new_text), texts(40, 1, "a")[5], texts(1, 9, "c")[0]]
    return root, parent, old_bag, write_batch(tmp_path / "revise.jsonl", batch)


def test_accumulate_takes_the_old_copy_out_of_the_prior_and_alpha_sums(spark_session, revised_batch):
    """lambda_new - max(lambda_old - S_old, eta) is the batch's expected counts: >= 0, summing to its tokens (the
    old code kept S_old: the sum was off by the old copy's 33 tokens); alpha's sums lose the old copy's E[log theta];
    the document count holds b003 once."""
    root, parent, old_bag, raw = revised_batch
    report = run(spark_session, "--model", root, "--input", raw, "--mode", "accumulate", "--iterations", 3)
    assert (report["documents"]["revision"], report["documents"]["new"], report["documents"]["adopted"]) == (1, 1, 1)
    version = model_store.resolve(str(root))
    new = model_store.load_model(version)
    assert new.lambda_.shape == parent.lambda_.shape                  # no new word: one vocabulary
    s_old, elogtheta_old = posterior(parent.lambda_, parent.alpha, old_bag)
    eta = float(parent.meta["eta"])
    cleaned = np.maximum(parent.lambda_ - s_old, eta)
    batch_tokens = sum(sum(bag.values()) for bag in corpus_rows(version).values())
    delta = new.lambda_ - cleaned
    assert delta.min() > -0.05 and abs(delta.sum() - batch_tokens) < 0.05, (delta.min(), delta.sum(), batch_tokens)
    assert abs((new.lambda_ - parent.lambda_).sum() - batch_tokens) > 10       # the old copy did leave
    meta = new.meta
    assert meta["refresh"]["documents"] == parent.meta["refresh"]["documents"] + 2 - 1 == 61
    assert meta["revisions"]["revised"] == meta["revisions"]["old_copies_out"] == 1
    assert "approximate" in meta["revisions"]["old_copies"]
    rows = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))   # the batch's: b003 and c000
    assert sorted(rows.doc_id) == ["b003", "c000"]
    gamma_new = np.vstack(rows.gamma.to_numpy())
    batch_elog = (digamma(gamma_new) - digamma(gamma_new.sum(axis=1, keepdims=True))).sum(axis=0)
    # alpha's sums: the parent's + the batch's - the old copy's (ours converged further: 1e-2)
    expected = np.asarray(parent.meta["refresh"]["alpha_statistics"]) - elogtheta_old
    got = np.asarray(meta["refresh"]["alpha_statistics"]) - batch_elog
    assert np.allclose(got, expected, atol=1e-2), (got, expected)
    assert not np.allclose(got, expected + elogtheta_old, atol=0.5)
    assert "revised_out_alpha_statistics" not in meta


def test_online_starts_its_step_without_the_old_copy(spark_session, revised_batch):
    """One online step: lambda_new = (1 - rho) start + rho (eta + D/|S| S_batch), so the start's total follows from
    lambda_new's; it is max(lambda_old - S_old, eta)'s, D counting b003 once. --reinfer-old's table holds every id
    once, b003 with its new text."""
    root, parent, old_bag, raw = revised_batch
    run(spark_session, "--model", root, "--input", raw, "--mode", "online", "--iterations", 1, "--reinfer-old")
    version = model_store.resolve(str(root))
    new = model_store.load_model(version)
    s_old, _ = posterior(parent.lambda_, parent.alpha, old_bag)
    eta = float(parent.meta["eta"])
    batch_tokens = sum(sum(bag.values()) for bag in corpus_rows(version).values())
    D, S = 60 - 1 + 2, 2
    rho = (64.0 + 1) ** -0.7                       # tau0 64, kappa 0.7, the root's first online step
    start_total = (new.lambda_.sum() - rho * (eta * new.lambda_.size + D / S * batch_tokens)) / (1 - rho)
    assert start_total == pytest.approx(np.maximum(parent.lambda_ - s_old, eta).sum(), abs=0.1)
    assert abs(start_total - parent.lambda_.sum()) > 10
    assert new.meta["refresh"]["documents"] == 61
    rows = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))   # every document, once
    assert rows.doc_id.is_unique and len(rows) == 61
    new_length = sum(corpus_rows(version)["b003"].values())
    offsets = {d: np.sum(g) - n for d, g, n in zip(rows.doc_id, rows.gamma, rows.doc_id.map(
        {"b003": new_length, "c000": sum(corpus_rows(version)["c000"].values())}))}
    assert offsets["b003"] == pytest.approx(offsets["c000"], abs=1e-6)       # sum gamma = sum alpha + N_d


def test_batch_mode_fits_each_id_once_with_its_latest_text(spark_session, revised_batch):
    """The guided pass reads the union holding b003's new text only: lambda - eta sums to the union's tokens, the
    version's doc_topics holds every id once, and every row's sum of gamma less its tokens is one number (the
    alpha of the last E-step), b003's counted with its new text."""
    root, parent, old_bag, raw = revised_batch
    run(spark_session, "--model", root, "--input", raw, "--mode", "batch", "--iterations", 2)
    version = model_store.resolve(str(root))
    new = model_store.load_model(version)
    chain = [model_root.version_dir(str(root), v) for v in model_root.chain(str(root))]
    docs = corpus_rows(chain[1])                                   # version 1's batch
    docs.update(corpus_rows(version))                              # the batch: b003's new text
    base_tokens = int(model_store.read_meta(model_root.resolve(str(root), "base"))["data"]["tokens"])
    union_tokens = base_tokens + sum(sum(bag.values()) for bag in docs.values())
    eta = float(parent.meta["eta"])
    assert (new.lambda_ - eta).sum() == pytest.approx(union_tokens, abs=1e-6)
    assert new.meta["refresh"]["documents"] == new.meta["data"]["documents"] == 61
    assert new.meta["revisions"] == {"revised": 1, "old_copies_out": 1, "old_copies": revisions.HOW["batch"]}
    rows = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))
    assert rows.doc_id.is_unique and len(rows) == 61
    lengths = {d: sum(bag.values()) for d, bag in docs.items()}
    mine = rows[rows.doc_id.isin(list(lengths))]
    offsets = np.array([np.sum(g) - lengths[d] for d, g in zip(mine.doc_id, mine.gamma)])
    assert np.ptp(offsets) < 1e-6 and len(mine) == 21
