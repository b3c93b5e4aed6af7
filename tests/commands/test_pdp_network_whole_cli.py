"""A spec the split engine refuses trains in whole-network mode (issue 28, 2) on a tiny corpus, whatever
``--partitions`` says, and its model directory serves ``topics``, ``evaluate`` (document completion and left to
right) and ``infer`` like any network's (the same seed gives the same chain: the resumed run of
tests/engines/test_pdp_network_whole.py)."""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pandas as pd

from inference.left_to_right import LeftToRight
from jobs import topics
from jobs.evaluate import evaluate_model
from jobs.infer import infer_documents
from jobs.train import train

#: the topic side refused: documents DP over a chain of eight corpus-level Pitman-Yor vectors (nine shared families)
CHAIN = {"base": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0}}
for _i in range(1, 9):
    CHAIN[f"c{_i}"] = {"index": ["corpus"], "over": "topic", "pyp": {"a": {"value": 0.2, "sample": _i == 8}, "b": 3.0},
                       "parents": [{"node": "base" if _i == 1 else f"c{_i - 1}", "index": ["corpus"]}]}
DEEP = {"name": "deep", "nodes": dict(CHAIN, theta={"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                                                    "parents": [{"node": "c8", "index": ["corpus"]}]},
                                      phi={"index": ["topic"], "over": "word", "dirichlet": 0.1}),
        "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def test_whole_network_mode_trains_and_serves_topics_evaluate_and_infer(spark_session, tmp_path):
    from conftest import sample_lda_corpus, train_args, write_corpus

    docs, _ = sample_lda_corpus(n_docs=30, n_topics=3, vocab_size=15, doc_length=12, alpha=0.3, eta=0.1, seed=3)
    corpus = write_corpus(spark_session, str(tmp_path / "corpus"), docs, [f"w{i:02d}" for i in range(15)])
    spec = tmp_path / "deep.json"
    spec.write_text(json.dumps(DEEP))
    model_dir = str(tmp_path / "a")
    meta = train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network", str(spec),
                                           "--topics", 3, "--iterations", 4, "--burn-in", 2, "--lag", 1,
                                           "--samples", 2, "--seed", 1, "--partitions", 2))
    assert meta["partitions"] == 1 and meta["hyper"]["whole_network"].startswith(      # 192fea1: names the node
        "network spec: node 'c8': more than 8 shared topic families")
    assert meta["hyper"]["a_values"]["c8.a"] != 0.2          # the sampled discount moved
    assert not [f for f in os.listdir(model_dir) if f.endswith((".pkl", ".pickle"))]
    doc = pd.read_parquet(f"{model_dir}/doc_topics.parquet")
    assert len(doc) == 30
    keys = np.load(f"{model_dir}/whole_shared_keys.npy")
    assert len(keys) == 2 * 8 + 1          # the nonzero rows: tc and tp of the eight Pitman-Yor vectors, the root's
    assert not (keys % 4 == 0).any()       # tc (n: no token's topic is drawn from a shared vector)
    # no whole_word_*.npy: a word side indexed by [topic] alone is scored by the posterior means (whole_words)
    assert not [f for f in os.listdir(model_dir) if f.startswith("whole_word_")]
    text = topics.run(argparse.Namespace(model_dir=model_dir, top_words=3, weights=False))
    assert text.count("\n") >= 2
    metrics = evaluate_model(spark_session, model_dir, corpus)
    assert 1.0 < metrics["perplexity"] < 15
    l2r = evaluate_model(spark_session, model_dir, corpus, left_to_right=LeftToRight(particles=2, seed=1))
    r = l2r["left_to_right"]
    assert r["tokens"] == 360 and 0 < r["bits_per_word"] < np.log2(15), r
    assert "whole-network mode" in r["protocol"]
    inferred = infer_documents(spark_session, model_dir, corpus, str(tmp_path / "inferred"))
    assert inferred["documents"] == 30
    rows = pd.read_parquet(inferred["output"])
    assert np.allclose(np.stack(rows["topics"] if "topics" in rows else rows.iloc[:, 1]).sum(axis=1), 1.0)
