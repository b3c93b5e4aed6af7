"""A network indexed by a kept column, from prepare to evaluate (issue 28, 1): ``prepare --keep-columns group``,
``train --model pdp-network`` with documents DP over their group's root, the group values kept beside the model,
and evaluate (document completion and left-to-right) scoring held-out documents under their own group's root (a
value training did not see: the unseen value's root, its prior). Refresh: tests/commands/test_refresh_pdp_columns.py."""
from __future__ import annotations

import json

import numpy as np

from drivers import storage
from drivers.families.gibbs.models import open_trained
from drivers import registry
from jobs.cli import main
from jobs.evaluate import evaluate_model
from jobs.train import train
from inference.left_to_right import LeftToRight

GROUP_HDP = {"name": "group-hdp",
             "nodes": {"group": {"index": ["column:group"], "over": "topic", "dirichlet": 0.5},
                       "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                                 "parents": [{"node": "group", "index": ["column:group"]}]},
                       "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
             "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}
WORDS = {"g0": "river boat water fish net", "g1": "bread oven flour salt yeast", "g2": "star moon night sky dark"}


def test_a_kept_column_indexes_topic_roots_from_prepare_to_evaluate(spark_session, tmp_path):
    from conftest import train_args

    rows = [{"id": f"doc{d:02d}", "group": "solo" if d == 7 else f"g{d % 3}",
             "text": f"{WORDS[f'g{d % 3}']} {WORDS[f'g{(d + 1) % 3}'].split()[d % 5]} common word"}
            for d in range(36)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.json").write_text(json.dumps(GROUP_HDP))
    corpus = str(tmp_path / "corpus")
    assert main(["prepare", "--input", str(tmp_path / "in.jsonl"), "--output", corpus, "--min-df", "1",
                 "--max-df", "1.0", "--keep-columns", "group", "--segments", "paragraph", "--holdout-fraction",
                 "0.3", "--master", "none"]) == 0
    model_dir = str(tmp_path / "model")
    train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network",
                                    tmp_path / "spec.json", "--topics", 3, "--iterations", 6, "--burn-in", 4,
                                    "--lag", 1, "--samples", 2, "--seed", 2))
    training = storage.read_table(f"{corpus}/docs.parquet", columns=["doc_id", "group"]).to_pylist()
    values = sorted({r["group"] for r in training})
    assert storage.load_json(f"{model_dir}/network_columns.json") == {"values": {"group": values}}
    tc = np.load(f"{model_dir}/network_tc.npy")
    assert tc.shape[0] >= len(values) + 1 and all(tc[v].sum() > 0 for v in range(len(values)))
    assert not tc[len(values):].any()                   # the unseen value's root has no trained tables

    _, model = open_trained(model_dir, registry)
    model.bind_scored_corpus(f"{corpus}/heldout")
    held = storage.read_table(f"{corpus}/heldout/docs.parquet", columns=["doc_id", "group"]).to_pylist()
    assert held and {r["doc_id"]: model._columns.by_doc["group"][r["doc_id"]] for r in held} == \
        {r["doc_id"]: values.index(r["group"]) if r["group"] in values else len(values) for r in held}

    metrics = evaluate_model(spark_session, model_dir, f"{corpus}/heldout")
    assert 1.0 < metrics["perplexity"] < 30
    l2r = evaluate_model(spark_session, model_dir, f"{corpus}/heldout", left_to_right=LeftToRight(particles=2))
    assert 0 < l2r["left_to_right"]["bits_per_word"] < np.log2(30)



def test_an_author_list_column_from_prepare_to_evaluate(spark_session, tmp_path):
    """``prepare --keep-columns authors`` (names separated by ";"), ``train --network author-topic`` (the shipped
    spec: a document's vector the uniform mixture of its authors' roots, a mixture node, issue 28), one root per
    author, documents by the same authors with (nearly) the same topic row (the author-topic model), evaluate with held-out
    documents by known and unseen authors (document completion, left-to-right)."""
    from conftest import train_args
    from drivers.models.cluster_lda.authors import list_names

    def authors(d):
        return [f"p{d % 3}"] + ([f"q{d % 2}"] if d % 4 == 0 else []) if d != 9 else ["newbie", "p0"]
    rows = [{"id": f"doc{d:02d}", "authors": "; ".join(authors(d)),
             "text": f"{WORDS[f'g{d % 3}']} {WORDS[f'g{(d + 1) % 3}'].split()[d % 5]} common word"} for d in range(36)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus, model_dir = str(tmp_path / "corpus"), str(tmp_path / "model")
    assert main(["prepare", "--input", str(tmp_path / "in.jsonl"), "--output", corpus, "--min-df", "1",
                 "--max-df", "1.0", "--keep-columns", "authors", "--segments", "paragraph", "--holdout-fraction",
                 "0.3", "--master", "none"]) == 0
    train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network", "author-topic",
                                    "--topics", 3, "--iterations", 6, "--burn-in", 4, "--lag", 1, "--samples", 2,
                                    "--seed", 2))
    training = storage.read_table(f"{corpus}/docs.parquet", columns=["doc_id", "authors"]).to_pylist()
    names = sorted({n for r in training for n in list_names(r["authors"])})
    assert storage.load_json(f"{model_dir}/network_columns.json") == {"values": {"authors": names},
                                                                       "lists": ["authors"]}
    tc = np.load(f"{model_dir}/network_tc.npy")
    assert all(tc[a].sum() > 0 for a in range(len(names))) and not tc[len(names):].any()
    theta = storage.read_table(f"{model_dir}/doc_topics.parquet", columns=["doc_id", "theta"]).to_pylist()
    by_authors = {}
    for r in theta:
        by_authors.setdefault(tuple(authors(int(r["doc_id"][3:]))), []).append(np.asarray(r["theta"]))
    same = [np.abs(np.array(rows_) - rows_[0]).max() for rows_ in by_authors.values() if len(rows_) > 1]
    # a document's row is the mean of its authors' vectors as its partition saw them: the same in one partition,
    # across the two up to the moves the other made since the last synchronisation
    assert len(same) >= 4 and sorted(same)[2] < 1e-5 and max(same) < 0.05, same

    _, model = open_trained(model_dir, registry)
    model.bind_scored_corpus(f"{corpus}/heldout")
    held = storage.read_table(f"{corpus}/heldout/docs.parquet", columns=["doc_id", "authors"]).to_pylist()
    unseen = len(names)
    assert held and all(model._columns.by_doc["authors"][r["doc_id"]] == tuple(
        names.index(n) if n in names else unseen for n in list_names(r["authors"])) for r in held)
    metrics = evaluate_model(spark_session, model_dir, f"{corpus}/heldout")
    assert 1.0 < metrics["perplexity"] < 30
    l2r = evaluate_model(spark_session, model_dir, f"{corpus}/heldout", left_to_right=LeftToRight(particles=2))
    assert 0 < l2r["left_to_right"]["bits_per_word"] < np.log2(30)
