"""Every registered model passes the same checks: a new model gets these tests by being registered.

For each model of :data:`drivers.registry.MODELS`, on the tiny corpus of the kind it needs
(:mod:`tiny_corpora`): train (local[2]), the model directory names the model, reopen it through its
family, ``infer`` on the training documents, ``evaluate``, ``topics``; the same models on local[1] (one
other Spark application trains them all); and every model bit for bit against ``tests/golden/tiny_models.npz``
(the six models of the code before the registry written by that code, tlda and ptlda by the code of their
log-space weights; same corpora, seeds and flags).
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from drivers import registry
from drivers.evaluation import report as evaluation_report
from drivers.families import EvaluateRequest, InferRequest
from drivers.store.model_store import load_model
from jobs import evaluate, infer, topics, train
from spark_jobs import counted_jobs, job_count
from tiny_corpora import FAMILY_FLAGS
from inference.errors import UsageError
from inference.left_to_right import LeftToRight

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/
MODELS = list(registry.MODELS)
GOLDEN = os.path.join(HERE, "golden", "tiny_models.npz")


@pytest.fixture(scope="module")
def corpora(tiny_corpora_of_kind):
    return tiny_corpora_of_kind


@pytest.fixture(scope="module")
def trained(tiny_models, corpora):
    """name -> (model directory, model.json) of every registered model, trained on local[2] (once per run:
    conftest ``tiny_models``)."""
    for spec in registry.MODELS.values():
        if spec.corpus not in corpora:
            pytest.fail(f"no tiny corpus of kind {spec.corpus!r} (model {spec.name}): add one to tests/tiny_corpora.py")
    return {name: (path, tiny_models.meta(name)) for name, path in tiny_models.every(registry.MODELS).items()}


#: the most Spark jobs ``infer`` of the tiny corpus may run (monolingual, aligned). Variational: Parquet's schema
#: (of each language), the range partitioner's sample of the ids, the shuffle, the tasks that fold the documents
#: in and write their parts (it was 15 and 18: a cached load, joins with the sizes and the rejects, orderBy, a
#: re-read for the counts); Gibbs: Parquet's schema, the shuffle and count of the cached load, the write
INFER_JOBS = {False: 4, True: 5}


def _theta(path) -> np.ndarray:
    frame = pd.read_parquet(path).sort_values("doc_id")
    return np.stack(frame["theta"].to_numpy())


@pytest.mark.parametrize("name", MODELS)
def test_train_reopen_infer_evaluate_topics(spark_session, trained, corpora, name, tmp_path):
    model_dir, meta = trained[name]
    spec = registry.model(name)
    corpus = corpora[spec.corpus]
    assert registry.model_of_directory(model_dir) is spec and meta["model"] == name
    for file in ("model.json", "topics.txt", "doc_topics.parquet"):
        assert os.path.exists(os.path.join(model_dir, file)), file
    saved = load_model(model_dir)
    K = int(meta["topics"])         # --topics 3; a DP mixture's clusters at the end
    assert saved.topic_word().shape == (K, saved.vocab.shape[0]) and np.all(np.isfinite(saved.lambda_))
    np.testing.assert_allclose(saved.topic_word().sum(axis=1), len(saved.languages) or 1)
    assert spec.family_object().open(model_dir) is not None

    with counted_jobs(spark_session) as jobs:
        result = infer.infer(spark_session, InferRequest(model_dir, corpus, str(tmp_path / "inferred"),
                                                         runs_on="spark"))
    assert 0 < len(jobs) <= INFER_JOBS[spec.corpus == registry.ALIGNED], f"infer ran {len(jobs)} Spark jobs:\n{jobs}"
    theta = _theta(tmp_path / "inferred" / "doc_topics.parquet")
    assert result["documents"] == theta.shape[0] == 40 and result["no_known_words"] == 0
    if spec.family == "variational" and spec.corpus != registry.ALIGNED:   # its table flags documents without a
        # known word: none here
        assert not pd.read_parquet(tmp_path / "inferred" / "doc_topics.parquet")["no_known_words"].any()
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    _same_without_spark(spark_session, model_dir, corpus, spec, result, tmp_path)

    metrics = evaluate.evaluate_model(spark_session, model_dir, corpus)
    _same_evaluation_without_spark(spark_session, model_dir, corpus, spec, metrics)
    text = evaluate.format_metrics(metrics)
    assert "perplexity" in text and json.loads(json.dumps(metrics))
    scores = [metrics] if "perplexity" in metrics else list(metrics["per_language"].values())
    for score in scores:
        assert 1.0 < score["perplexity"] < 60 * 3 and -1.0 <= score["npmi"] <= 1.0
    report = evaluation_report.report(metrics)                          # what evaluate --json writes
    figures = list(report["per_language"].values()) if "per_language" in report else [report]
    assert [f["perplexity"] for f in figures] == [s["perplexity"] for s in scores] and all(
        f["tokens"]["scored"] > 0 and f["method"]["name"] for f in figures) and json.dumps(report, allow_nan=False)

    _left_to_right(spark_session, model_dir, corpus, spec)

    shown = topics.run(argparse.Namespace(model_dir=model_dir, top_words=4, weights=False))
    assert len(shown.splitlines()) == K * (len(saved.languages) or 1)


def _same_without_spark(spark_session, model_dir, corpus, spec, result, tmp_path):
    """``infer`` in this process (``--master none``, every monolingual model) starts no Spark job and writes the
    Spark job's tables (doc_topics, segment_topics, the model's own) number for number, and the same counts (for
    lda and tlda this was also tests/commands/test_infer_in_process.py's, on the same tiny models and corpora)."""
    if spec.corpus == registry.ALIGNED:
        return
    jobs_before = job_count(spark_session)
    local = infer.infer(spark_session, InferRequest(model_dir, corpus, str(tmp_path / "local"), runs_on="in-process"))
    assert job_count(spark_session) == jobs_before
    assert {k: v for k, v in local.items() if not str(v).startswith(str(tmp_path))} == \
        {k: v for k, v in result.items() if not str(v).startswith(str(tmp_path))}
    tables = sorted(f for f in os.listdir(tmp_path / "inferred") if f.endswith(".parquet"))
    assert tables == sorted(f for f in os.listdir(tmp_path / "local") if f.endswith(".parquet")) and tables
    for table in tables:
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "local" / table),
                                      pd.read_parquet(tmp_path / "inferred" / table), check_exact=True, obj=table)


def _same_evaluation_without_spark(spark_session, model_dir, corpus, spec, metrics):
    """``evaluate`` in this process (every monolingual model: the Spark job's blocks, documents sorted by id in
    each, the same seeded held-out sampler or document-completion split) starts no Spark job and gives the Spark
    job's figures exactly, gensim's measures too (they read only the model's top words: on Spark once per tiny
    corpus, :data:`COHERENCE_ON_SPARK`); a polylingual model says it needs Spark."""
    from drivers.evaluation import standard_coherence as standard

    request = EvaluateRequest((model_dir,), corpus, runs_on="in-process")
    why_not = spec.family_object().why_not_evaluate_in_process(request)
    if spec.corpus == registry.ALIGNED:
        assert why_not is not None
        return
    assert why_not is None, why_not
    before = job_count(spark_session)
    local = standard.standard_coherence(None, model_dir, corpus)
    assert json.dumps(spec.family_object().evaluate(None, request), sort_keys=True) == \
        json.dumps(metrics, sort_keys=True)
    assert job_count(spark_session) == before
    if spec.name in COHERENCE_ON_SPARK.values():
        on_spark = standard.standard_coherence(spark_session, model_dir, corpus)
        assert json.dumps(local, sort_keys=True) == json.dumps(on_spark, sort_keys=True)


#: gensim's measures on Spark (drivers/evaluation/standard_coherence.py) read a model's top words and the corpus'
#: files; their Spark counts depend on the corpus (the documents' words, the ordered file's sliding windows), not on
#: the model: checked against the in-process counts with the first monolingual model of each tiny corpus (bag of
#: words and ordered segments: one corpus, conftest ``tiny_corpora_of_kind``)
COHERENCE_ON_SPARK = {}
for _spec in registry.MODELS.values():
    if _spec.corpus != registry.ALIGNED:
        COHERENCE_ON_SPARK.setdefault(_spec.corpus if _spec.corpus != registry.BAG_OF_WORDS else registry.SEGMENTED,
                                      _spec.name)


#: how each model's left-to-right estimate says it was computed (the default: particles, LDA's predictive)
LEFT_TO_RIGHT_PROTOCOL = {"bigram-lm": "exact", "dp-mixture": "exact", "stm": "particles: every particle seats",
                          "seqlda": "particles: every particle seats", "adatm": "particles: every particle seats",
                          "pdp-network": "particles: the document's network state"}


def _left_to_right(spark_session, model_dir, corpus, spec):
    """``evaluate --method left-to-right`` (2 particles): every monolingual model scores all 1,200 tokens of the
    40 documents below uniform's log2 30 bits and says how, in this process (no Spark job) exactly as on Spark; a
    polylingual model is refused in one line."""
    settings = LeftToRight(particles=2, seed=1)
    if spec.corpus == registry.ALIGNED:
        with pytest.raises(UsageError, match="left-to-right scores monolingual models"):
            evaluate.evaluate_model(spark_session, model_dir, corpus, left_to_right=settings)
        return
    metrics = evaluate.evaluate_model(spark_session, model_dir, corpus, left_to_right=settings)
    r = metrics["left_to_right"]
    request = EvaluateRequest((model_dir,), corpus, left_to_right=settings, runs_on="in-process")
    assert spec.family_object().why_not_evaluate_in_process(request) is None      # in this process: the same
    jobs_before = job_count(spark_session)
    local = spec.family_object().evaluate(None, request)
    assert job_count(spark_session) == jobs_before
    timing = ("seconds", "seconds_per_token")
    assert {k: v for k, v in local["left_to_right"].items() if k not in timing} == \
        {k: v for k, v in r.items() if k not in timing}
    assert {k: v for k, v in local.items() if k != "left_to_right"} == \
        {k: v for k, v in metrics.items() if k != "left_to_right"}
    assert r["tokens"] == 1200 and r["documents"] == 40 and r["skipped_oov"] == 0, r
    assert 0 < r["bits_per_word"] < np.log2(30) and 0 < r["bits_per_word_importance"] < np.log2(30), r
    assert r["protocol"].startswith(LEFT_TO_RIGHT_PROTOCOL.get(spec.name, "particles")), r["protocol"]
    if r["protocol"].startswith("exact"):
        assert r["loglik"] == r["loglik_importance"]
    report = evaluation_report.report(metrics)
    assert report["method"]["name"] == "left-to-right" and report["bits_per_word"] == r["bits_per_word"]
    assert "left-to-right" in evaluate.format_metrics(metrics) and json.dumps(report, allow_nan=False)


@pytest.mark.parametrize("name", MODELS)
def test_browse_site_of_every_model(trained, name, tmp_path):
    """``browse`` writes a site for every registered model: a script per topic with its ranked words (every
    language), its top documents (the model's own doc_topics ids) and its related topics."""
    from drivers.browse.build import build

    model_dir, meta = trained[name]
    site = tmp_path / "site"
    assert build(model_dir, str(site))["topics"] == int(meta["topics"])
    summary = json.loads((site / "data" / "model.js").read_text().strip()[len("window.SPARK_TOPICS_MODEL = "):-1])
    K = int(meta["topics"])
    assert [t["k"] for t in summary["topics"]] == list(range(K))
    assert sum(t["share"] for t in summary["topics"]) == pytest.approx(1.0)
    ids = set(pd.read_parquet(os.path.join(model_dir, "doc_topics.parquet"))["doc_id"])
    languages = load_model(model_dir).languages or [""]
    for k in range(K):
        record = json.loads((site / "data" / "topics" / f"{k}.js").read_text().strip()[len("SPARK_TOPICS_TOPIC("):-2])
        assert [p["language"] for p in record["panels"]] == languages and all(p["terms"] for p in record["panels"])
        assert record["docs"] and {d["id"] for d in record["docs"]} <= ids
        assert len(record["related"]) == min(5, K - 1)


@pytest.mark.parametrize("name", MODELS)
def test_same_models_as_before_the_registry(trained, name):
    """The models the code before the registry trained (locally bit for bit; the tolerance only allows for
    another CPU's floating-point code)."""
    model_dir, _ = trained[name]
    if name in os.environ.get("SPARK_TOPICS_WRITE_GOLDEN", "").split(","):
        write_golden(name, load_model(model_dir).lambda_, _theta(os.path.join(model_dir, "doc_topics.parquet")))
    golden = np.load(GOLDEN)
    if f"{name}.matrix" not in golden.files:
        pytest.fail(f"no golden model of {name}: write it with SPARK_TOPICS_WRITE_GOLDEN={name} pytest "
                    f"tests/commands/test_conformance.py -k same_models")
    np.testing.assert_allclose(load_model(model_dir).lambda_, golden[f"{name}.matrix"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(_theta(os.path.join(model_dir, "doc_topics.parquet")), golden[f"{name}.theta"],
                               rtol=1e-9, atol=1e-15)


def write_golden(name: str, matrix: np.ndarray, theta: np.ndarray) -> None:
    """Add (or replace) a model's golden arrays (``SPARK_TOPICS_WRITE_GOLDEN=name,...``: for a new model, or a
    change of numbers that is meant, said in the commit)."""
    with np.load(GOLDEN) as golden:
        arrays = {key: golden[key] for key in golden.files}
    arrays[f"{name}.matrix"], arrays[f"{name}.theta"] = matrix, theta
    np.savez_compressed(GOLDEN, **arrays)


@pytest.mark.parametrize("name", [s.name for s in registry.models_of("variational")])
def test_default_inference(spark_session, trained, corpora, name, tmp_path, caplog):
    """Without --inference, lda and polylda train in hybrid mode (their registry default, README "why this
    default") and the other variational models by variational EM; the goldens above pin --inference variational.
    Hybrid inference's objective is the kept samples' mean log joint, not an ELBO: model.json and the progress
    lines say so (variational EM's stays "ELBO"; this was tests/commands/test_evaluate_standard.py's, with a
    hybrid training of its own)."""
    import logging

    caplog.set_level(logging.INFO, logger="spark_topics")
    spec = registry.MODELS[name]
    flags = [str(f) for f in FAMILY_FLAGS[spec.family]]
    del flags[flags.index("--inference"):flags.index("--inference") + 2]
    flags[flags.index("--iterations") + 1] = "2"        # the mode is the claim, not the model: 2 of the 4 iterations
    corpus, model_dir = corpora[spec.corpus], str(tmp_path / name)
    request = train.parse_request(["--corpus", corpus, "--output", model_dir, "--model", name, *flags]
                                  + (["--tree", "unused"] if spec.name in ("tlda", "ptlda") else []))
    expected = "hybrid" if name in ("lda", "polylda") else "variational"
    assert spec.default_inference in (None, expected) and request.engine.inference == expected
    if spec.default_inference is None:
        return
    meta = train.train(spark_session, request)
    assert meta["settings"]["inference"] == "hybrid" and registry.model_of_directory(model_dir) is spec
    with open(os.path.join(model_dir, "model.json")) as f:
        assert json.load(f)["objective"] == "mean log joint of the samples"
    assert trained[name][1]["objective"] == "ELBO"                     # the tiny model: --inference variational
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("iteration 2/2")]
    assert lines and lines[0].endswith(tuple("0123456789")) and ": mean log joint of the samples " in lines[0], lines
    metrics = evaluate.evaluate_model(spark_session, model_dir, corpus)
    for score in [metrics] if "perplexity" in metrics else list(metrics["per_language"].values()):
        assert 1.0 < score["perplexity"] < 60 * 3


def test_every_model_is_the_same_on_local1(trained, local1_models):
    """Another Spark application on local[1] trains every registered model to the same numbers."""
    for name, (model_dir, _) in trained.items():
        np.testing.assert_array_equal(load_model(str(local1_models / name)).lambda_, load_model(model_dir).lambda_,
                                      err_msg=name)
        np.testing.assert_array_equal(_theta(local1_models / name / "doc_topics.parquet"),
                                      _theta(os.path.join(model_dir, "doc_topics.parquet")), err_msg=name)


def test_left_to_right_is_the_same_on_local1(spark_session, trained, corpora, local1_models):
    """The left-to-right figures of the local[1] application (tests/train_every_model.py) are this session's."""
    import train_every_model

    with open(local1_models / "left_to_right.json") as f:
        local1 = json.load(f)
    for name in train_every_model.LEFT_TO_RIGHT_MODELS:
        r = evaluate.evaluate_model(spark_session, trained[name][0], corpora[registry.model(name).corpus],
                                    left_to_right=LeftToRight(**train_every_model.LEFT_TO_RIGHT_SETTINGS))
        assert local1[name] == [r["left_to_right"]["loglik"], r["left_to_right"]["loglik_importance"]], name


def test_evaluate_with_master_none(spark_session, trained, corpora, capsys):
    """``evaluate --master none`` of a Gibbs and of a variational model prints its figures without a Spark job; a
    polylingual model on its aligned corpus is refused in one line saying why."""
    from jobs.cli import main

    corpus = corpora[registry.BAG_OF_WORDS]
    jobs_before = job_count(spark_session)
    main(["evaluate", "--model", trained["lda-gibbs"][0], "--corpus", corpus, "--master", "none"])
    out = capsys.readouterr().out
    assert "held-out perplexity" in out and "u_mass" in out, out
    main(["evaluate", "--model", trained["lda"][0], "--corpus", corpus, "--master", "none"])
    out = capsys.readouterr().out
    assert "document-completion perplexity" in out and "u_mass" in out, out
    assert job_count(spark_session) == jobs_before
    with pytest.raises(SystemExit, match="without Spark: a multilingual model"):
        main(["evaluate", "--model", trained["polylda"][0], "--corpus", corpora[registry.ALIGNED],
              "--master", "none"])


def test_train_help_shows_the_models_own_flags():
    """`train --model NAME --help` lists the model's own flags and not another family's."""
    for spec in registry.MODELS.values():
        parser = argparse.ArgumentParser()
        train.add_arguments(parser, ["train", "--model", spec.name])
        text = parser.format_help()
        for option in spec.options:
            assert option.flag in text, (spec.name, option.flag)
        others = {o.flag for s in registry.MODELS.values() if s.family != spec.family for o in s.options}
        own = {o.flag for o in spec.options}
        offered = {flag for action in parser._actions for flag in action.option_strings}
        assert not (others - own) & offered, spec.name


def test_a_flag_of_another_model_is_refused_with_its_owner():
    with pytest.raises(UsageError, match=r"--model stm does not take --lambda-s \(a flag of adatm\)"):
        train_args("c", "o", "--model", "stm", "--topics", 3, "--lambda-s", 1)
    with pytest.raises(UsageError, match=r"--model lda is variational: --beta only apply to the sampled models"):
        train_args("c", "o", "--model", "lda", "--topics", 3, "--beta", 0.1)


README = os.path.join(os.path.dirname(HERE), "README.md")


def readme_family_files() -> dict:
    """model name -> the files the README's table of each family's own files gives it (rows that name a
    condition, "trained with ...", are not checked: the tiny models are trained without it)."""
    import re

    with open(README, encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("Beside them, each family's own files"):].split("\n\n")[1]
    files = {}
    for row in table.splitlines()[2:]:
        cells = row.split(" | ")
        if " with " in cells[1]:
            continue
        for model in re.findall(r"`([^`]+)`", cells[1]):
            files.setdefault(model, []).extend(re.findall(r"`([^`]+)`", cells[0]))
    return files


@pytest.mark.parametrize("name", MODELS)
def test_output_contract(trained, name):
    """Every model directory has ``topic_word.npy`` (K x V float64, rows sum to 1, read without pickle; the
    matrix ``load_model`` serves, a polylingual model's languages weighted as the README says) and
    ``doc_topics.parquet`` with ``doc_id`` and ``theta`` (K, sum 1) for every training document, and beside them
    the files the README's table gives its family."""
    model_dir, meta = trained[name]
    saved = load_model(model_dir)
    K, V = int(meta["topics"]), len(saved.vocab)
    topic_word = np.load(os.path.join(model_dir, "topic_word.npy"), allow_pickle=False)
    assert topic_word.dtype == np.float64 and topic_word.shape == (K, V), topic_word.shape
    assert np.all(topic_word >= 0)
    np.testing.assert_allclose(topic_word.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    languages = saved.languages
    if not languages:
        np.testing.assert_array_equal(topic_word, saved.topic_word())
    else:
        offsets = np.cumsum([0] + [meta["vocab_sizes"][lang] for lang in languages])
        for lang, start, stop in zip(languages, offsets[:-1], offsets[1:]):
            part = topic_word[:, start:stop]
            np.testing.assert_allclose(part / part.sum(axis=1, keepdims=True), saved.topic_word()[:, start:stop],
                                       rtol=1e-12, err_msg=lang)
            if name == "polylda":     # no joint over the languages: each weighted 1 / (number of languages)
                np.testing.assert_allclose(part.sum(axis=1), 1 / len(languages), rtol=1e-12)

    table = pd.read_parquet(os.path.join(model_dir, "doc_topics.parquet"))
    assert {"doc_id", "theta"} <= set(table.columns) and table["doc_id"].map(type).eq(str).all()
    theta = np.stack(table["theta"].to_numpy())
    assert theta.shape == (int(meta["data"]["documents"]), K) and table["doc_id"].is_unique
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=0, atol=1e-12)

    own = readme_family_files()
    assert name in own, f"the README's model-directory table names no file of {name}"
    for entry in own[name]:
        for file in ([entry.replace("<L>", lang) for lang in languages] if "<L>" in entry else [entry]):
            assert os.path.exists(os.path.join(model_dir, file)), file
