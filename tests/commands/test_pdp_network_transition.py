"""A topic vector indexed by previous_word (theta[previous_word] DP over a corpus-level root draws every token's
topic; issue 28, session 24) from prepare --ordered to evaluate and infer on Spark: trained on two partitions, its
rows of ``network_tc``/``network_tp`` (the start context last) the tokens' (previous word, topic) counts and
t <= c, held-out documents scored left to right below V (the default protocol: document completion would score
every token with the document's first vector, theta[start]; 48.5 against V = 17 here before), train and infer
writing proportions that sum to 1 and differ between documents (session 25: a document's topic counts with one
pseudo-token from its tokens' predictive, ``model.transition_rows``; before, theta[start] for every document)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from jobs.cli import main
from jobs.evaluate import evaluate_model
from jobs.train import train
from tests.kernels.test_pdpnet_previous_word_topics import transition_spec

WORDS = {"g0": "river boat water fish net", "g1": "bread oven flour salt yeast", "g2": "star moon night sky dark"}


def test_a_transition_network_trains_evaluates_and_infers(spark_session, tmp_path):
    from conftest import train_args

    rows = [{"id": f"doc{d:02d}", "text": f"{WORDS[f'g{d % 3}']} {WORDS[f'g{(d + 1) % 3}']} common word"}
            for d in range(30)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.json").write_text(json.dumps(transition_spec("dp")))
    corpus = str(tmp_path / "corpus")
    assert main(["prepare", "--input", str(tmp_path / "in.jsonl"), "--output", corpus, "--min-df", "1",
                 "--max-df", "1.0", "--ordered", "--holdout-fraction", "0.2", "--master", "none"]) == 0
    model_dir = str(tmp_path / "model")
    train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network",
                                    tmp_path / "spec.json", "--topics", 3, "--iterations", 6, "--burn-in", 4,
                                    "--lag", 1, "--samples", 2, "--seed", 2))
    meta = json.loads(open(f"{model_dir}/model.json").read())
    V = meta["vocab_size"]
    c, t = np.load(f"{model_dir}/network_tc.npy"), np.load(f"{model_dir}/network_tp.npy")
    theta_c, theta_t = c[1:V + 2], t[1:V + 2]                 # (rows: top, then theta[0..V], the start last)
    assert theta_c.sum() == meta["data"]["tokens"] and theta_c[V].sum() == meta["data"]["documents"]
    assert np.all(theta_t <= theta_c) and np.array_equal(c[0], theta_t.sum(axis=0))
    trained = np.stack(pd.read_parquet(f"{model_dir}/doc_topics.parquet")["theta"])   # (session 25: the documents'
    np.testing.assert_allclose(trained.sum(axis=1), 1.0)                    # counts with their tokens' predictive;
    assert np.abs(trained - trained[0]).max() > 0.2                         # theta[start] for every one before)
    metrics = evaluate_model(spark_session, model_dir, f"{corpus}/heldout")      # (left to right: the protocol)
    assert 1.0 < metrics["perplexity"] < V and metrics["heldout"]["protocol"].startswith("left to right"), metrics
    assert main(["infer", "--model", model_dir, "--input", f"{corpus}/heldout", "--output",
                 str(tmp_path / "inferred"), "--master", "local[2]"]) == 0
    theta = np.stack(pd.read_parquet(tmp_path / "inferred" / "doc_topics.parquet")["theta"])
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert np.abs(theta - theta[0]).max() > 0.2
