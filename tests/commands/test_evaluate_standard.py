"""``prepare --holdout-fraction`` of a plain (monolingual) corpus and ``evaluate``'s figures other tools print:
gensim's c_npmi, c_v and u_mass (the same numbers as gensim's CoherenceModel on the corpus' tokens), topic
diversity, stability against another seed (topics matched), and the in-sample warning. Through the command line's
entry point, in this process (the session's SparkSession)."""
from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from drivers.store.model_store import load_model
from inference.heldout import top_word_ids
from jobs.cli import main

gensim = pytest.importorskip("gensim")
from gensim.corpora import Dictionary  # noqa: E402
from gensim.models.coherencemodel import CoherenceModel  # noqa: E402

GROUPS = [["river", "boat", "water", "fish", "shore", "bank", "current", "stream", "sail", "harbor"],
          ["star", "moon", "night", "light", "sky", "planet", "comet", "orbit", "galaxy", "telescope"],
          ["bread", "flour", "oven", "yeast", "dough", "baker", "crust", "butter", "sugar", "wheat"]]
TRAIN = ["--model", "lda", "--topics", "3", "--iterations", "8", "--tol", "0", "--inference", "variational"]


@pytest.fixture(scope="module")
def setup(spark_session, tmp_path_factory):
    """90 documents of 8 to 160 words from three vocabularies, prepared with 30% held out and the token order
    kept; lda trained with two seeds. Made once per run, by whichever pytest-xdist worker needs it first
    (tests/shared_runs.py); tests read it and write elsewhere."""
    import shutil

    from shared_runs import made_once, run_folder

    root = run_folder(tmp_path_factory) / "evaluate_standard"
    rng = np.random.default_rng(4)
    rows = []
    for d in range(90):
        words = GROUPS[d % 3] + GROUPS[(d + 1) % 3][:2]
        rows.append({"id": f"doc{d:03d}", "text": " ".join(rng.choice(words, int(rng.integers(8, 160))).tolist())})
    corpus, models = str(root / "corpus"), [str(root / f"model{seed}") for seed in (1, 2)]
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)         # a make that failed half-way
            root.mkdir()
            (root / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            assert main(["prepare", "--input", str(root / "in.jsonl"), "--output", corpus, "--ordered", "--min-df",
                         "1", "--max-df", "1.0", "--holdout-fraction", "0.3"]) == 0
            for seed, model in zip((1, 2), models):
                assert main(["train", "--corpus", corpus, "--output", model, "--seed", str(seed), *TRAIN]) == 0
    return root, corpus, models, rows


def _ids(directory):
    return sorted(pq.read_table(f"{directory}/docs.parquet", columns=["doc_id"]).column(0).to_pylist())


def test_holdout_fraction_splits_a_plain_corpus(setup):
    root, corpus, _, rows = setup
    train, heldout = _ids(corpus), _ids(f"{corpus}/heldout")
    assert set(train).isdisjoint(heldout) and sorted(train + heldout) == [r["id"] for r in rows]
    assert 0.15 < len(heldout) / len(rows) < 0.45
    held_meta = json.loads(open(f"{corpus}/heldout/corpus.json").read())
    assert held_meta["options"]["holdout"] == [0.3, "heldout"]
    assert held_meta["options"]["vocab"].endswith("corpus/vocab.parquet")          # the training vocabulary
    vocab = lambda d: pq.read_table(f"{d}/vocab.parquet").to_pandas().sort_values("id")["term"].tolist()  # noqa
    assert vocab(corpus) == vocab(f"{corpus}/heldout")
    # the split is the hash of the id and nothing else (the rule the aligned corpora use)
    from pyspark.sql import SparkSession, functions as F
    from drivers.preparation.holdout import is_heldout
    spark = SparkSession.getActiveSession()
    frame = spark.createDataFrame([(r["id"],) for r in rows], "doc_id string")
    assert sorted(r[0] for r in frame.where(is_heldout(F.col("doc_id"), 0.3)).collect()) == heldout

def gensim_coherence(corpus_dir: str, model_dir: str, measure: str) -> float:
    vocab = pq.read_table(f"{corpus_dir}/vocab.parquet").to_pandas().sort_values("id")["term"].tolist()
    if measure == "u_mass":
        docs = pq.read_table(f"{corpus_dir}/docs.parquet", columns=["term_ids"]).column(0).to_pylist()
    else:
        docs = [[t for s in segments for t in s] for segments in
                pq.read_table(f"{corpus_dir}/ordered.parquet", columns=["segments"]).column(0).to_pylist()]
    texts = [[vocab[i] for i in doc] for doc in docs]
    dictionary = Dictionary([vocab])
    model = load_model(model_dir)
    topics = model.vocab["term"].to_numpy()[top_word_ids(model.topic_word(), 10)].tolist()
    return CoherenceModel(topics=topics, texts=texts, corpus=[dictionary.doc2bow(t) for t in texts],
                          dictionary=dictionary, coherence=measure, topn=10, processes=1).get_coherence()


def test_evaluate_reports_gensims_measures_diversity_and_stability(setup, tmp_path, capsys):
    _, corpus, (model, other), _ = setup
    heldout = f"{corpus}/heldout"
    report = tmp_path / "evaluate.json"
    assert main(["evaluate", "--model", model, "--corpus", heldout, "--stability-of", other,
                 "--json", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "document-level NPMI (pairs counted per whole document; not gensim's c_npmi)" in printed
    assert "in-sample" not in printed
    line = next(x for x in printed.splitlines() if x.startswith("coherence as gensim computes it"))
    figures = dict(re.findall(r"(c_npmi|c_v|u_mass) (-?[\d.]+)", line))
    standard = json.loads(report.read_text())["standard_coherence"]
    for measure in ("c_npmi", "c_v", "u_mass"):
        expected = gensim_coherence(heldout, model, measure)
        assert standard[measure]["mean"] == pytest.approx(expected, rel=1e-9, abs=1e-12), measure
        assert float(figures[measure]) == pytest.approx(expected, abs=5e-5)
    phi = load_model(model).topic_word()
    top = top_word_ids(phi, 25)
    assert standard["topic_diversity"] == pytest.approx(len(np.unique(top)) / top.size)
    stability = json.loads(report.read_text())["stability"]
    assert 0.0 <= stability["mean_js_divergence"] < 0.2 and stability["mean_top_word_jaccard"] > 0.5, stability
    assert sorted(b for _, b in stability["runs"][other]["matching"]) == [0, 1, 2]
    assert "stability against 1 other run(s)" in printed


def test_evaluate_on_the_training_corpus_warns_in_sample(setup, capsys):
    _, corpus, (model, _), _ = setup
    assert main(["evaluate", "--model", model, "--corpus", corpus]) == 0
    warning = [x for x in capsys.readouterr().out.splitlines() if "in-sample" in x]
    assert len(warning) == 1 and warning[0].startswith("warning: ") and "training corpus" in warning[0]


def test_select_k_trains_scores_and_plots_every_k(setup, tmp_path, capsys, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="spark_topics")
    _, corpus, (model, _), _ = setup
    out = tmp_path / "select"
    assert main(["select-k", "--model", "lda", "--corpus", corpus, "--topics", "3,2", "--output", str(out),
                 "--iterations", "8", "--seed", "1", "--train-args", "--tol 0 --inference variational"]) == 0
    printed = capsys.readouterr().out
    import pandas as pd
    table = pd.read_csv(out / "select_k.csv")
    assert table["topics"].tolist() == [2, 3]
    assert (out / "select_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # K=3 with these flags is the fixture's model1: its row holds what evaluate prints for it
    metrics = json.loads((out / "select_k.json").read_text())["rows"][1]
    assert main(["evaluate", "--model", model, "--corpus", f"{corpus}/heldout", "--seed", "1",
                 "--output", str(tmp_path / "m.json")]) == 0
    direct = json.loads((tmp_path / "m.json").read_text())
    assert metrics["heldout_perplexity"] == pytest.approx(direct["perplexity"], rel=1e-9)
    assert metrics["c_v"] == pytest.approx(direct["standard_coherence"]["c_v"]["mean"], rel=1e-9)
    assert metrics["document_npmi"] == pytest.approx(direct["npmi"], rel=1e-9)
    assert "select-k: K=2 (1 of 2)" in printed and "perplexity" in printed.splitlines()[-4]
    assert re.search(r"select-k: K 1/2 50%, .* left: K=2 held-out perplexity [\d.]+", printed), printed
    # training's progress: one short line per iteration, the time left, the objective by its name
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("iteration ")]
    short = r"iteration 4/8 50%, [\d a-z]+, about [\d a-z]+ left: ELBO -?[\d.]+e[+-]\d+"
    assert any(re.fullmatch(short, x) for x in lines), lines
    assert all(len(x) < 100 for x in lines)


def test_select_k_without_a_heldout_part_is_refused(setup, tmp_path):
    root, _, _, _ = setup
    with pytest.raises(SystemExit, match="prepare the corpus with --holdout-fraction"):
        main(["select-k", "--corpus", str(root / "corpus" / "heldout"), "--topics", "2,3", "--output",
              str(tmp_path / "x")])


# hybrid inference names its objective (model.json, the progress lines): tests/commands/test_conformance.py
# test_default_inference, whose hybrid lda and polylda are trained anyway
