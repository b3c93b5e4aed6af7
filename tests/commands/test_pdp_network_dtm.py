"""A word side indexed by [topic, column:group] from prepare to evaluate and infer (issue 28, differential topic
models; :mod:`drivers.models.pdp_network.words_column`): phi[topic, group] ~ PYP over phi0[topic] ~ PYP over the uniform; the
trained bottom tables kept beside the model (``word_col_n.npy``, ``word_col_t.npy``, t <= n), document completion
and left-to-right scoring held-out documents with their group's rows (below V), infer writing their
proportions."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from jobs.cli import main
from jobs.evaluate import evaluate_model
from jobs.train import train
from inference.left_to_right import LeftToRight

DTM = {"name": "dtm",
       "nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                 "base": {"index": ["corpus"], "over": "word", "uniform": True},
                 "phi0": {"index": ["topic"], "over": "word", "pyp": {"a": 0.3, "b": 2.0},
                          "parents": [{"node": "base", "index": ["corpus"]}]},
                 "phi": {"index": ["topic", "column:group"], "over": "word", "pyp": {"a": 0.4, "b": 1.5},
                         "parents": [{"node": "phi0", "index": ["topic"]}]}},
       "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic", "column:group"]}}
WORDS = {"g0": "river boat water fish net", "g1": "bread oven flour salt yeast", "g2": "star moon night sky dark"}


def test_a_column_indexed_word_side_trains_keeps_its_tables_evaluates_and_infers(spark_session, tmp_path):
    from conftest import train_args

    rows = [{"id": f"doc{d:02d}", "group": f"g{d % 3}",
             "text": f"{WORDS[f'g{d % 3}']} {WORDS[f'g{(d + 1) % 3}'].split()[d % 5]} common word"}
            for d in range(36)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.json").write_text(json.dumps(DTM))
    corpus = str(tmp_path / "corpus")
    assert main(["prepare", "--input", str(tmp_path / "in.jsonl"), "--output", corpus, "--min-df", "1",
                 "--max-df", "1.0", "--keep-columns", "group", "--holdout-fraction", "0.3", "--master", "none"]) == 0
    model_dir = str(tmp_path / "model")
    train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network",
                                    tmp_path / "spec.json", "--topics", 3, "--iterations", 6, "--burn-in", 4,
                                    "--lag", 1, "--samples", 2, "--seed", 2))
    n, t = np.load(f"{model_dir}/word_col_n.npy"), np.load(f"{model_dir}/word_col_t.npy")
    V = json.loads(open(f"{model_dir}/model.json").read())["vocab_size"]
    assert n.shape[0] == 4 * V and n.sum() > 0 and np.all(t <= n) and (t < n).any()
    assert not n[3 * V:].any()          # the unseen value's rows: no training document has it
    metrics = evaluate_model(spark_session, model_dir, f"{corpus}/heldout")
    assert 1.0 < metrics["perplexity"] < V
    l2r = evaluate_model(spark_session, model_dir, f"{corpus}/heldout", left_to_right=LeftToRight(particles=2))
    assert 0 < l2r["left_to_right"]["bits_per_word"] < np.log2(V)
    assert main(["infer", "--model", model_dir, "--input", f"{corpus}/heldout", "--output",
                 str(tmp_path / "inferred"), "--master", "local[2]"]) == 0
    theta = np.stack(pd.read_parquet(tmp_path / "inferred" / "doc_topics.parquet")["theta"])
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)


def test_phi0_as_a_dirichlet_root_per_topic_trains_and_scores_left_to_right(spark_session, tmp_path):
    """The same word side over phi0[topic] a Dirichlet root per topic (the bigram side with the group as the
    context): trained, its held-out documents scored left to right with their group's cells (evaluate agrees with
    itself, below V), infer writing proportions."""
    from conftest import train_args

    rows = [{"id": f"doc{d:02d}", "group": f"g{d % 3}", "text": f"{WORDS[f'g{d % 3}']} common word"}
            for d in range(24)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = json.loads(json.dumps(DTM))
    spec["nodes"]["phi0"] = {"index": ["topic"], "over": "word", "dirichlet": 0.2}
    del spec["nodes"]["base"]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    corpus = str(tmp_path / "corpus")
    assert main(["prepare", "--input", str(tmp_path / "in.jsonl"), "--output", corpus, "--min-df", "1",
                 "--max-df", "1.0", "--keep-columns", "group", "--holdout-fraction", "0.3", "--master", "none"]) == 0
    model_dir = str(tmp_path / "model")
    train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network",
                                    tmp_path / "spec.json", "--topics", 3, "--iterations", 6, "--burn-in", 4,
                                    "--lag", 1, "--samples", 2, "--seed", 2))
    meta = json.loads(open(f"{model_dir}/model.json").read())
    assert meta["hyper"]["word_pyp"]["context"] == "group" and meta["hyper"]["b_values"]["phi.b"] == 1.5
    keys = np.load(f"{model_dir}/bigram_keys.npy")
    V = meta["vocab_size"]
    assert keys.max() < 4 * V * 3 and len(np.unique(keys // (V * 3))) == 3     # (g V + w) K + k, three values
    metrics = evaluate_model(spark_session, model_dir, f"{corpus}/heldout", seed=1)
    assert 1.0 < metrics["perplexity"] < V
    again = evaluate_model(spark_session, model_dir, f"{corpus}/heldout", seed=1)
    assert again["perplexity"] == metrics["perplexity"]
    assert main(["infer", "--model", model_dir, "--input", f"{corpus}/heldout", "--output",
                 str(tmp_path / "inferred"), "--master", "local[2]"]) == 0
    theta = np.stack(pd.read_parquet(tmp_path / "inferred" / "doc_topics.parquet")["theta"])
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
