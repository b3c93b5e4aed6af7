"""A Pitman-Yor topic vector shared by documents, from prepare to evaluate (issue 28; :mod:`drivers.models.
shared_pyp`): documents DP over their group's Pitman-Yor vector (``column:group``) over a corpus-level Dirichlet
root; the trained tables of the group vectors (``network_tp.npy``, each within its customers, the root's customers
their sum) kept beside ``network_tc.npy``, and evaluate (document completion and left-to-right) scoring held-out
documents with the trained tables frozen."""
from __future__ import annotations

import json

import numpy as np

from jobs.cli import main
from jobs.evaluate import evaluate_model
from jobs.train import train
from inference.left_to_right import LeftToRight

GROUP_PYP = {"name": "group-pyp",
             "nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
                       "group": {"index": ["column:group"], "over": "topic",
                                 "pyp": {"a": {"value": 0.3, "sample": True}, "b": {"value": 2.0, "sample": True}},
                                 "parents": [{"node": "top", "index": ["corpus"]}]},
                       "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                                 "parents": [{"node": "group", "index": ["column:group"]}]},
                       "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
             "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}
WORDS = {"g0": "river boat water fish net", "g1": "bread oven flour salt yeast", "g2": "star moon night sky dark"}


#: the group vectors over a rho-mixture of two corpus roots (several parents: their tables per edge, network_ts)
TWO_PARENTS = dict(GROUP_PYP, name="group-pyp-2", nodes=dict(
    GROUP_PYP["nodes"], top2={"index": ["corpus"], "over": "topic", "dirichlet": 0.2},
    group=dict(GROUP_PYP["nodes"]["group"], parents=[{"node": "top", "index": ["corpus"], "gamma": 1.0},
                                                     {"node": "top2", "index": ["corpus"], "gamma": 1.0}])))


def _train(spark_session, tmp_path, spec) -> tuple[str, str]:
    """(corpus, model) of ``spec`` trained on 36 documents in three groups."""
    from conftest import train_args

    rows = [{"id": f"doc{d:02d}", "group": f"g{d % 3}",
             "text": f"{WORDS[f'g{d % 3}']} {WORDS[f'g{(d + 1) % 3}'].split()[d % 5]} common word"}
            for d in range(36)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    corpus = str(tmp_path / "corpus")
    assert main(["prepare", "--input", str(tmp_path / "in.jsonl"), "--output", corpus, "--min-df", "1",
                 "--max-df", "1.0", "--keep-columns", "group", "--segments", "paragraph", "--holdout-fraction", "0.3",
                 "--master", "none"]) == 0
    model_dir = str(tmp_path / "model")
    train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network",
                                    tmp_path / "spec.json", "--topics", 3, "--iterations", 6, "--burn-in", 4,
                                    "--lag", 1, "--samples", 2, "--seed", 2))
    return corpus, model_dir


def test_a_column_pitman_yor_vector_trains_keeps_its_tables_and_evaluates(spark_session, tmp_path):
    corpus, model_dir = _train(spark_session, tmp_path, GROUP_PYP)
    tc, tp = np.load(f"{model_dir}/network_tc.npy"), np.load(f"{model_dir}/network_tp.npy")
    groups = slice(1, 4)                # row 0 the root; rows 1-3 the groups g0-g2 (row 4: an unseen value)
    assert all(tc[groups].sum(axis=1) > 0) and np.all(tp <= tc) and tp[groups].sum() > 0
    np.testing.assert_array_equal(tc[0], tp[groups].sum(axis=0))      # the root's customers: the groups' tables
    assert not tp[0].any() and not tc[4:].any() and not tp[4:].any()
    meta = json.loads(open(f"{model_dir}/model.json").read())
    assert meta["hyper"]["a_values"]["group.a"] != 0.3

    metrics = evaluate_model(spark_session, model_dir, f"{corpus}/heldout")
    assert 1.0 < metrics["perplexity"] < 30
    l2r = evaluate_model(spark_session, model_dir, f"{corpus}/heldout", left_to_right=LeftToRight(particles=2))
    assert 0 < l2r["left_to_right"]["bits_per_word"] < np.log2(30)


def test_a_column_pitman_yor_vector_with_two_parents_keeps_its_tables_per_edge_and_evaluates(spark_session,
                                                                                               tmp_path):
    """The group vectors over two corpus roots: ``network_ts.npy`` (rows 2 g, 2 g + 1: a group's tables sent to
    top, to top2) sums to its tables, each root's customers the sum of its edges' rows; document completion."""
    corpus, model_dir = _train(spark_session, tmp_path, TWO_PARENTS)
    tc, tp, ts = (np.load(f"{model_dir}/network_{x}.npy") for x in ("tc", "tp", "ts"))
    groups = range(2, 5)                # rows 0-1 the roots top, top2; rows 2-4 the groups g0-g2
    assert ts.shape[0] == 2 * tc.shape[0] and all(tp[g].sum() > 0 for g in groups) and np.all(tp <= tc)
    for g in groups:
        np.testing.assert_array_equal(ts[2 * g] + ts[2 * g + 1], tp[g])
    np.testing.assert_array_equal(tc[0], sum(ts[2 * g] for g in groups))
    np.testing.assert_array_equal(tc[1], sum(ts[2 * g + 1] for g in groups))
    assert 1.0 < evaluate_model(spark_session, model_dir, f"{corpus}/heldout")["perplexity"] < 30


#: the group vectors' parent with an if_missing fallback root (top3): never used, as a group vector's reference to
#: the corpus always has a value (a document without a group has the group "", a vector of its own)
IF_MISSING = dict(GROUP_PYP, name="group-pyp-if-missing", nodes=dict(
    GROUP_PYP["nodes"], top3={"index": ["corpus"], "over": "topic", "dirichlet": 0.3},
    group=dict(GROUP_PYP["nodes"]["group"], parents=[{"node": "top", "index": ["corpus"],
                                                      "if_missing": {"node": "top3", "index": ["corpus"]}}])))


def test_a_column_pitman_yor_vector_with_an_if_missing_parent_trains_as_without_it(spark_session, tmp_path):
    """The engine runs it (refused until session 23): the fallback root's row stays empty, the root's customers
    are the groups' tables, each within its customers; document completion scores the held-out documents."""
    corpus, model_dir = _train(spark_session, tmp_path, IF_MISSING)
    tc, tp = np.load(f"{model_dir}/network_tc.npy"), np.load(f"{model_dir}/network_tp.npy")
    groups = slice(2, 5)                # rows 0-1 the roots top, top3; rows 2-4 the groups g0-g2
    assert not tc[1].any() and all(tc[groups].sum(axis=1) > 0) and np.all(tp <= tc) and tp[groups].sum() > 0
    np.testing.assert_array_equal(tc[0], tp[groups].sum(axis=0))
    assert 1.0 < evaluate_model(spark_session, model_dir, f"{corpus}/heldout")["perplexity"] < 30
