"""A revised tuple's old copy leaves a polylda refresh (issue 30; drivers/families/variational/revisions.py): the old
copy's texts, read back per language from the version that ingested them, leave accumulate's prior by their expected
counts under the parent model (one theta per tuple, each language's words under its own Dirichlet), clipped at
eta; the tuple is counted once. On test_refresh_variational_families' ``poly_root`` (version 1 ingested batch 1)."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
from scipy.special import digamma

from drivers.corpora.files import DOCS
from drivers.store import model_store
from test_refresh import run
from test_refresh_variational_families import LANGS, _write, aligned, poly_root  # noqa: F401 (fixtures)


def tuple_bags(version_dir, doc_id):
    """language -> the prepared document ``doc_id`` (local word id -> count)."""
    out = {}
    for language in LANGS:
        docs = pd.read_parquet(os.path.join(version_dir, "corpus", language, DOCS))
        row = docs[docs.doc_id.astype(str) == doc_id].iloc[0]
        out[language] = dict(zip(row.term_ids.tolist(), row.counts.tolist()))
    return out


def tuple_counts(views, alpha, bags, tol=1e-12):
    """Each language's expected counts (K x V_language) of one tuple under the views' lambdas: gamma = alpha +
    sum over languages and words of n_w phi_w, phi_wk ~ exp(E[log beta^l_kw] + E[log theta_k])."""
    parts = {}
    for language, bag in bags.items():
        lam = views[language]
        ids = np.array(list(bag))
        parts[language] = (ids, np.array(list(bag.values()), float),
                           digamma(lam[:, ids]) - digamma(lam.sum(axis=1, keepdims=True)))
    gamma = alpha + sum(n.sum() for _, n, _ in parts.values()) / len(alpha)
    for _ in range(10_000):
        elogtheta = digamma(gamma) - digamma(gamma.sum())
        phis = {}
        for language, (ids, n, elogbeta) in parts.items():
            phi = np.exp(elogbeta + elogtheta[:, None])
            phis[language] = phi / phi.sum(axis=0, keepdims=True)
        new = alpha + sum(phis[l] @ parts[l][1] for l in parts)
        done = np.abs(new - gamma).mean() < tol
        gamma = new
        if done:
            break
    out = {}
    for language, (ids, n, _) in parts.items():
        out[language] = np.zeros_like(views[language])
        out[language][:, ids] = phis[language] * n
    return out


def test_a_revised_tuple_leaves_the_polylda_prior(spark_session, aligned, poly_root, tmp_path):  # noqa: F811
    root = tmp_path / "root"
    shutil.copytree(poly_root[0], root)
    rows = [json.loads(line) for line in open(aligned["files"]["b1"])]
    ids = sorted({r["id"] for r in rows})
    revised, donor = ids[0], ids[1]
    texts = {r["lang"]: r["text"] for r in rows if r["id"] == donor}
    batch = _write(tmp_path / "revise.jsonl", [{"id": revised, "lang": l, "text": texts[l]} for l in LANGS])
    parent = model_store.load_model(str(root))
    old = tuple_bags(model_store.resolve(str(root)), revised)
    report = run(spark_session, "--model", root, "--input", batch, "--mode", "accumulate", "--iterations", 1,
                 "--min-new-df", 1000)
    assert report["documents"]["revision"] == 1 and report["ingested"] == 1
    version = model_store.resolve(str(root))
    new = model_store.load_model(version)
    views = {l: parent.language_view(l).lambda_ for l in LANGS}
    s_old = tuple_counts(views, parent.alpha, old)
    eta = float(parent.meta["eta"])
    tokens = json.load(open(os.path.join(version, "corpus", "corpus.json")))["tokens"]
    delta = sum((new.language_view(l).lambda_ - np.maximum(views[l] - s_old[l], eta)).sum() for l in LANGS)
    minimum = min((new.language_view(l).lambda_ - np.maximum(views[l] - s_old[l], eta)).min() for l in LANGS)
    assert minimum > -0.05 and abs(delta - tokens) < 0.05, (minimum, delta, tokens)
    assert (new.lambda_ - parent.lambda_).sum() < tokens - 10          # the code before: exactly tokens
    assert new.meta["refresh"]["documents"] == parent.meta["refresh"]["documents"]      # counted once
    assert new.meta["revisions"]["old_copies_out"] == 1
