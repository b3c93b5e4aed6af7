"""``spark-topics evaluate --json FILE`` through the command line's entry point, in this process: the figures it
prints, as JSON, for a variational model, a Gibbs model and a polylingual model on an aligned corpus."""
from __future__ import annotations

import json
import math
import re

import pytest

from drivers.evaluation import report as evaluation_report
from jobs.cli import main

#: (model, corpus kind, family, method name)
CASES = [("lda", "segmented", "variational", "document-completion"),
         ("lda-gibbs", "segmented", "gibbs", "document-completion"),
         ("polylda", "aligned", "variational", "document-completion")]


@pytest.fixture(scope="module")
def models(tiny_models, tiny_corpora_of_kind):
    from drivers import registry

    return {name: (tiny_models[name], tiny_corpora_of_kind[registry.model(name).corpus]) for name, *_ in CASES}


def _printed(pattern: str, text: str) -> float:
    return float(re.search(pattern, text).group(1))


@pytest.mark.parametrize("name,kind,family,method", CASES)
def test_evaluate_json_holds_the_printed_figures(spark_session, models, name, kind, family, method, tmp_path,
                                                 capsys):
    model_dir, corpus = models[name]
    path = tmp_path / "figures" / "evaluate.json"
    path.parent.mkdir()
    path.write_text("an older report")                              # replaced whole
    assert main(["evaluate", "--model", model_dir, "--corpus", corpus, "--top-words", "4", "--seed", "2",
                 "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(path.read_text())
    assert [p.name for p in path.parent.iterdir()] == ["evaluate.json"]      # no temporary file left behind
    assert report["format"] == "spark-topics-evaluate/1"
    scores = list(report["per_language"].values()) if kind == "aligned" else [report]
    models_of = report["models"].values() if kind == "aligned" else [report["model"]]
    for settings in models_of:
        assert settings["name"] == name and settings["topics"] == 3 and settings["seed"] == 3
        assert settings["hyperparameters"]["alpha"] and settings["iterations"] in (4, 6)
    if kind == "aligned":
        assert report["languages"] == ["en", "es"] and set(report["retrieval"]) == {"en->es", "es->en"}
        for lang, score in report["per_language"].items():
            assert f"[{lang}] document-completion perplexity {score['perplexity']:.3f}" in printed
            assert f"NPMI {score['npmi']:.4f}" in printed
    elif family == "gibbs":
        assert report["perplexity"] == pytest.approx(_printed(r"held-out perplexity \(.*\): ([\d.]+)", printed),
                                                     abs=5e-4)
        assert report["method"]["iterations"] > 0 and report["method"]["samples"] > 0
        assert report["method"]["observed"] == 0.5 and report["test_documents"] == "all"
    else:
        assert report["perplexity"] == pytest.approx(_printed(r"document-completion perplexity: ([\d.]+)", printed),
                                                     abs=5e-4)
        assert report["heldout_elbo_per_token"] == pytest.approx(
            _printed(r"held-out ELBO per token: +(-?[\d.]+)", printed), abs=5e-5)
        assert report["model"]["settings"]["inference"] == "variational"
    if kind != "aligned":
        assert report["npmi"] == pytest.approx(_printed(r"document-level NPMI \(.*\) \(top 4\): (-?[\d.]+)", printed), abs=5e-5)
        assert report["model"]["directory"] == model_dir and report["corpus"] == corpus
    for score in scores:
        assert score["method"]["name"] == method and score["method"]["seed"] == 2
        assert 1 < score["perplexity"] < 90 and 0 < score["tokens"]["scored"] <= 1200
        assert 0 < score["documents"] <= 40 and score["npmi_top_words"] == 4
        assert len(score["npmi_per_topic"]) == 3
        assert score["loglik"] == pytest.approx(-score["tokens"]["scored"] * math.log(score["perplexity"]),
                                                rel=1e-9)
    assert f"figures written to {path}" in printed


def test_not_finite_figures_are_null_and_long_vectors_summarised(models):
    model_dir, corpus = models["lda-gibbs"]
    metrics = {"gibbs": True, "model": model_dir, "model_type": "lda-gibbs", "corpus": corpus,
               "test_documents": "all", "reference": corpus, "seed": 0, "topics": 3, "perplexity": float("inf"),
               "heldout": {"perplexity": float("inf"), "loglik": float("-inf"), "tokens": 0, "documents": 0,
                           "iterations": 5, "burn_in": 2, "lag": 1, "samples": 3, "observed": None, "seed": 0},
               "npmi": float("nan"), "npmi_per_topic": [0.5, float("nan"), -0.25],
               "npmi_settings": {"top_words": 10, "reference_documents": 40}}
    report = evaluation_report.report(metrics)
    json.dumps(report, allow_nan=False)
    assert report["perplexity"] is None and report["loglik"] is None and report["npmi"] is None
    assert report["npmi_per_topic"] == [0.5, None, -0.25] and report["method"]["name"] == "every-word"
    assert evaluation_report._compact(list(range(evaluation_report.MAX_VECTOR + 1))) == {
        "length": evaluation_report.MAX_VECTOR + 1, "sum": float(sum(range(evaluation_report.MAX_VECTOR + 1)))}
