"""The Spark ML stages (drivers/api/model.py): SparkTopicsLDA in a Pipeline, its model's methods, persistence.

The fitted model is checked against the existing path rather than against itself: the same lambda, bit for bit,
as ``spark-topics train`` on the same corpus and seed; ``transform`` against the fold-in ``infer`` runs, on the
document list; the bound against the held-out ELBO of ``evaluate`` plus MLlib's topic terms written out here.
"""
from __future__ import annotations

import argparse
import json
import logging
import os

import numpy as np
import pandas as pd
import pytest
from pyspark.ml.linalg import VectorUDT
from scipy.special import digamma, gammaln

from conftest import SAMPLE_DATA, sample_lda_corpus, train_args, write_corpus
from drivers.api.estimator import SparkTopicsLDA
from drivers.api.model import SparkTopicsLDAModel
from drivers.api.params import DEFAULT_INFERENCE
from drivers.store.model_store import load_model

K_TEXT = 4
# the text pipeline's checks were written for variational EM (the default of the estimator, like train's, is hybrid:
# the drawn documents below fit the default)
TEXT_LDA = {"k": K_TEXT, "maxIter": 4, "seed": 11, "docConcentration": 0.1, "optimizeDocConcentration": False,
            "inference": "variational"}


# --------------------------------------------------------------------------- a text pipeline

@pytest.fixture(scope="module")
def texts(spark_session):
    """40 chapters of the sample Bible and one text without a word the tokenizer keeps."""
    chapters = spark_session.read.schema("id string, text string").json(
        os.path.join(SAMPLE_DATA, "web_chapters.jsonl.gz")).limit(40)
    empty = spark_session.createDataFrame([("Empty.1", "1 2 3 -- 42")], "id string, text string")
    return chapters.select("id", "text").unionByName(empty).cache()


@pytest.fixture(scope="module")
def text_pipeline(spark_session, texts):
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import CountVectorizer, RegexTokenizer

    stages = [RegexTokenizer(inputCol="text", outputCol="words", pattern="\\p{L}{3,}", gaps=False),
              CountVectorizer(inputCol="words", outputCol="features", vocabSize=300, minDF=3.0),
              SparkTopicsLDA(**TEXT_LDA)]
    return Pipeline(stages=stages).fit(texts)


@pytest.fixture(scope="module")
def text_topics(text_pipeline, texts):
    """id -> theta of every text, the empty text included."""
    rows = text_pipeline.transform(texts).select("id", "topicDistribution").collect()
    return {r.id: r.topicDistribution.toArray() for r in rows}


def test_pipeline_fit_and_transform(text_pipeline, text_topics):
    model = text_pipeline.stages[-1]
    assert isinstance(model, SparkTopicsLDAModel) and not model.isDistributed()
    assert model.getK() == K_TEXT and model.getSeed() == 11 and model.getMaxIter() == 4
    vocabulary = text_pipeline.stages[1].vocabulary
    assert model.vocabSize() == len(vocabulary) <= 300
    thetas = text_topics
    assert len(thetas) == 41
    for doc_id, theta in thetas.items():
        assert theta.shape == (K_TEXT,) and np.all(theta >= 0)
        if doc_id == "Empty.1":     # no word: a vector of zeros (MLlib's convention)
            assert np.all(theta == 0)
        else:
            assert theta.sum() == pytest.approx(1.0, abs=1e-12)
    # documents are told apart: not every text gets the same proportions
    assert np.ptp(np.stack([t for d, t in thetas.items() if d != "Empty.1"]), axis=0).max() > 0.5
    # MLlib's matrices: V x K lambda, the learnt alpha
    matrix = model.topicsMatrix()
    lam = model.topicModel().lambda_
    assert (matrix.numRows, matrix.numCols) == (len(vocabulary), K_TEXT)
    np.testing.assert_array_equal(matrix.toArray(), lam.T)
    np.testing.assert_array_equal(model.estimatedDocConcentration().toArray(), model.topicModel().alpha)
    assert model.topicModel().alpha.tolist() == [0.1] * K_TEXT       # docConcentration, kept fixed
    assert model.modelMetadata()["data"]["documents"] == 40       # the empty text was skipped


def test_describe_topics_with_the_count_vectorizer_vocabulary(text_pipeline):
    model = text_pipeline.stages[-1].copy()
    vocabulary = text_pipeline.stages[1].vocabulary
    plain = model.describeTopics(5)
    assert plain.columns == ["topic", "termIndices", "termWeights"]      # no vocabulary given: MLlib's columns
    beta = model.topicModel().lambda_ / model.topicModel().lambda_.sum(axis=1, keepdims=True)
    for row in plain.collect():
        weights = np.array(row.termWeights)
        assert np.all(np.diff(weights) <= 0)
        np.testing.assert_array_equal(weights, beta[row.topic, row.termIndices])
        assert weights[0] == beta[row.topic].max()
    with pytest.raises(ValueError, match="terms for a vocabulary of"):
        model.setVocabulary(vocabulary[:-1])
    described = model.setVocabulary(vocabulary).describeTopics(5).collect()
    assert len(described) == K_TEXT
    for row in described:
        assert row.terms == [vocabulary[i] for i in row.termIndices]
    assert {"god", "yahweh"} & {t for row in described for t in row.terms}


def test_pipeline_model_save_load(spark_session, text_pipeline, texts, text_topics, tmp_path):
    from pyspark.ml import PipelineModel

    from jobs import topics

    model = text_pipeline.stages[-1].copy().setVocabulary(text_pipeline.stages[1].vocabulary)
    pipeline = PipelineModel(text_pipeline.stages[:-1] + [model])
    path = str(tmp_path / "pipeline")
    pipeline.write().overwrite().save(path)
    loaded = PipelineModel.load(path)
    assert [type(s).__name__ for s in loaded.stages] == ["RegexTokenizer", "CountVectorizerModel",
                                                         "SparkTopicsLDAModel"]
    stage = loaded.stages[-1]
    assert stage.uid == model.uid and stage.getK() == K_TEXT and stage.getSeed() == 11
    np.testing.assert_array_equal(stage.topicModel().lambda_, model.topicModel().lambda_)
    np.testing.assert_array_equal(stage.topicModel().alpha, model.topicModel().alpha)
    thetas = text_topics
    rows = loaded.transform(texts).select("id", "topicDistribution").collect()
    assert {r.id for r in rows} == set(thetas)
    for r in rows:
        np.testing.assert_array_equal(r.topicDistribution.toArray(), thetas[r.id])
    assert stage.describeTopics(3).columns[-1] == "terms"      # the vocabulary travels with the model

    # data/ is an ordinary model directory: the jobs read it, and nothing in it is a pickle
    stages = os.path.join(path, "stages")
    data = os.path.join(stages, next(d for d in os.listdir(stages) if "SparkTopicsLDAModel" in d), "data")
    assert stage.modelDirectory() == data
    reread = load_model(data)
    np.testing.assert_array_equal(reread.lambda_, model.topicModel().lambda_)
    assert list(reread.vocab["term"]) == list(text_pipeline.stages[1].vocabulary)
    assert {"model.json", "lambda.npy", "vocab.parquet", "doc_topics.parquet", "topics.txt"} <= set(os.listdir(data))
    assert not os.path.exists(os.path.join(data, "_checkpoint"))
    for root, _, files in os.walk(os.path.join(path, "stages")):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                head = f.read(2)
            assert not (len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5), f"a pickle: {root}/{name}"
    np.load(os.path.join(data, "lambda.npy"), allow_pickle=False)
    text = topics.run(argparse.Namespace(model_dir=data, top_words=5, weights=False))
    assert len(text.splitlines()) == K_TEXT and ("god" in text or "yahweh" in text)
    assert stage.getVocabulary() == list(text_pipeline.stages[1].vocabulary)

    # a loaded model saved over its own directory (overwrite deletes it first): written from memory
    stage_path = os.path.dirname(data)
    stage.write().overwrite().save(stage_path)
    again = SparkTopicsLDAModel.load(stage_path)
    np.testing.assert_array_equal(again.topicModel().lambda_, model.topicModel().lambda_)
    assert again.getVocabulary() == stage.getVocabulary() and again.uid == model.uid
    assert load_model(data).meta["elbo_trace"] == model.modelMetadata()["elbo_trace"]
    with open(os.path.join(data, "lambda.npy"), "ab") as f:         # damaged: refused in one line, not an exit
        f.write(b"\0" * 8)
    from inference.errors import DamagedError
    with pytest.raises(DamagedError, match=r"lambda\.npy.*damaged"):         # the project's exception, a ValueError
        SparkTopicsLDAModel.load(stage_path)


def test_refit_of_the_same_dataframe_is_deterministic(text_pipeline, texts):
    """No idCol: the monotonically increasing ids of the same DataFrame (and partitioning) give the same model, in
    a Pipeline or fitted directly on the features."""
    from pyspark.ml import PipelineModel

    features = PipelineModel(text_pipeline.stages[:-1]).transform(texts)
    again = SparkTopicsLDA(**TEXT_LDA).fit(features)
    np.testing.assert_array_equal(again.topicModel().lambda_, text_pipeline.stages[-1].topicModel().lambda_)


# --------------------------------------------------------------------------- reduction to the existing path

@pytest.fixture(scope="module")
def drawn(spark_session, tmp_path_factory):
    """Documents drawn from LDA as a prepared corpus (conftest.write_corpus) and as a DataFrame of count vectors
    (sparse and dense, plus one empty document), with the model ``spark-topics train`` fits on the corpus."""
    from pyspark.ml.linalg import Vectors

    from jobs import train

    V = 60
    docs, _ = sample_lda_corpus(n_docs=200, n_topics=3, vocab_size=V, doc_length=50, alpha=0.3, eta=0.05, seed=3)
    terms = [f"term{i:02d}" for i in range(V)]
    root = tmp_path_factory.mktemp("ml_drawn")
    corpus = write_corpus(spark_session, str(root / "corpus"), docs, terms)
    model_dir = str(root / "model")
    # the estimator's default inference is train's (hybrid; train_args would pin variational EM)
    train.train(spark_session, train_args(corpus, model_dir, "--topics", 3, "--iterations", 5, "--seed", 8,
                                          "--inference", DEFAULT_INFERENCE))
    rows = []
    for number, (doc_id, bag) in enumerate(docs):   # sparse vectors, and every 7th dense
        dense = np.zeros(V)
        dense[list(bag)] = list(bag.values())
        rows.append((doc_id, Vectors.dense(dense) if number % 7 == 0 else
                     Vectors.sparse(V, sorted(bag), [float(bag[i]) for i in sorted(bag)])))
    rows.insert(17, ("zz-empty", Vectors.sparse(V, [], [])))
    frame = spark_session.createDataFrame(rows, ["doc_id", "features"]).repartition(3)
    return {"docs": docs, "terms": terms, "corpus": corpus, "model_dir": model_dir, "frame": frame, "V": V}


@pytest.fixture(scope="module")
def drawn_model(drawn):
    """SparkTopicsLDA fitted on the DataFrame of the drawn documents, and what it logged."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("spark_topics.ml").addHandler(handler)
    try:
        model = SparkTopicsLDA(k=3, maxIter=5, seed=8, idCol="doc_id", vocabulary=drawn["terms"]).fit(drawn["frame"])
    finally:
        logging.getLogger("spark_topics.ml").removeHandler(handler)
    return model, [r.getMessage() for r in records]


def test_fit_equals_spark_topics_train(drawn, drawn_model):
    model, messages = drawn_model
    trained = load_model(drawn["model_dir"])
    ours = model.topicModel()
    np.testing.assert_array_equal(ours.lambda_, trained.lambda_)       # bit for bit
    np.testing.assert_array_equal(ours.alpha, trained.alpha)
    assert ours.meta["eta"] == trained.meta["eta"] and ours.meta["partitions"] == trained.meta["partitions"]
    assert ours.meta["elbo_trace"][-1]["elbo"] == trained.meta["elbo_trace"][-1]["elbo"]
    assert list(ours.vocab["term"]) == drawn["terms"]
    np.testing.assert_array_equal(ours.vocab["df"], trained.vocab["df"])
    np.testing.assert_array_equal(ours.vocab["cf"], trained.vocab["cf"])
    assert any("1 of 201 documents have no words" in m for m in messages), messages
    mine = pd.read_parquet(os.path.join(model.modelDirectory(), "doc_topics.parquet")).sort_values("doc_id")
    theirs = pd.read_parquet(os.path.join(drawn["model_dir"], "doc_topics.parquet")).sort_values("doc_id")
    assert list(mine["doc_id"]) == list(theirs["doc_id"])
    np.testing.assert_array_equal(np.stack(mine["gamma"]), np.stack(theirs["gamma"]))
    # the vocabulary param names the terms
    for row in model.describeTopics(4).collect():
        assert row.terms == [drawn["terms"][i] for i in row.termIndices]


def _drawn_block(drawn):
    """The drawn documents as one DocBlock, built from the document list (not from the DataFrame)."""
    from inference.blocks import DocBlock

    return DocBlock.from_documents([(doc_id, sorted(bag), [bag[i] for i in sorted(bag)])
                                    for doc_id, bag in drawn["docs"]])


def test_transform_equals_the_fold_in_of_infer(drawn, drawn_model):
    """transform runs what ``spark-topics infer`` runs on each document (fold_in with exp E[log beta] and alpha):
    the same theta, bit for bit; a document without words gets zeros."""
    from drivers.families.variational.infer import exp_elogbeta
    from inference.heldout import fold_in

    model, _ = drawn_model
    rows = model.transform(drawn["frame"]).collect()
    ours = {r.doc_id: r.topicDistribution.toArray() for r in rows}
    assert np.all(ours.pop("zz-empty") == 0)
    block = _drawn_block(drawn)
    theirs = fold_in(block, exp_elogbeta(load_model(drawn["model_dir"]))[0], model.topicModel().alpha).theta
    assert len(ours) == block.n_docs == 200
    for doc_id, theta in zip(block.doc_ids, theirs):
        np.testing.assert_array_equal(ours[doc_id], theta)


def _mllib_topic_terms(lam: np.ndarray, eta: float) -> float:
    """MLlib's LDAModel.logLikelihoodBound topic part, written out: E[log p(beta | eta) - log q(beta | lambda)]."""
    elogbeta = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))
    V = lam.shape[1]
    return float(np.sum((eta - lam) * elogbeta) + np.sum(gammaln(lam) - gammaln(eta))
                 + np.sum(gammaln(V * eta) - gammaln(lam.sum(axis=1))))


def test_log_likelihood_and_perplexity(spark_session, drawn, drawn_model):
    from drivers.families.variational.infer import exp_elogbeta
    from inference.elbo import alpha_terms
    from inference.heldout import fold_in
    from pyspark.ml.linalg import Vectors

    model, _ = drawn_model
    topic_model = model.topicModel()
    frame = drawn["frame"]
    loglik, perplexity = model.logLikelihood(frame), model.logPerplexity(frame)
    tokens = sum(sum(bag.values()) for _, bag in drawn["docs"])
    assert np.isfinite(loglik) and perplexity == pytest.approx(-loglik / tokens, rel=1e-12)
    # independently: evaluate's held-out ELBO (drivers.evaluation.heldout.heldout_elbo: the fold-in's document terms and
    # the alpha terms) of the document list in one block, + MLlib's topic terms written out
    weights, log_scale = exp_elogbeta(topic_model)
    fit = fold_in(_drawn_block(drawn), weights, topic_model.alpha, log_scale=log_scale)
    documents = fit.doc_elbo.sum() + alpha_terms(topic_model.alpha, fit.alpha_stats, len(drawn["docs"]))
    expected = documents + _mllib_topic_terms(topic_model.lambda_, topic_model.meta["eta"])
    assert loglik == pytest.approx(expected, rel=1e-10)
    assert not loglik == pytest.approx(documents, rel=1e-3)     # the topic terms count
    # the training documents are far more probable than the same lengths of uniformly drawn words
    rng = np.random.default_rng(0)
    V = drawn["V"]
    nonsense = []
    for doc_id, bag in drawn["docs"]:
        ids, counts = np.unique(rng.integers(0, V, size=sum(bag.values())), return_counts=True)
        nonsense.append((doc_id, Vectors.sparse(V, ids.tolist(), counts.astype(float).tolist())))
    shuffled = spark_session.createDataFrame(nonsense, ["doc_id", "features"])
    assert model.logPerplexity(shuffled) > perplexity + 0.3


# --------------------------------------------------------------------------- params, persistence, errors

def test_unfitted_pipeline_save_load_keeps_the_params(spark_session, tmp_path):
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import CountVectorizer

    lda = SparkTopicsLDA(k=7, maxIter=3, seed=-5, tol=0.0, inference="hybrid", vocabulary=["a", "b", "c"],
                         docConcentration=0.3, topicConcentration=0.05, optimizeDocConcentration=False,
                         idCol="id", numPartitions=3, checkpointDir=str(tmp_path / "work"),
                         featuresCol="counts", topicDistributionCol="theta")
    pipeline = Pipeline(stages=[CountVectorizer(inputCol="words", outputCol="counts"), lda])
    pipeline.save(str(tmp_path / "pipeline"))
    stage = Pipeline.load(str(tmp_path / "pipeline")).getStages()[-1]
    assert type(stage) is SparkTopicsLDA and stage.uid == lda.uid
    values = {p.name: v for p, v in stage.extractParamMap().items()}
    assert values == {p.name: v for p, v in lda.extractParamMap().items()}
    assert values["docConcentration"] == [0.3] and values["vocabulary"] == ["a", "b", "c"]
    settings = stage._settings()       # what reaches the TrainRequest
    assert settings["seed"] == (-5) % 2 ** 63 and settings["fixed_alpha"] is True and settings["alpha"] == 0.3
    assert settings["engine"].inference == "hybrid" and settings["engine"].tol == 0.0
    assert settings["options"]["eta"] == 0.05 and settings["partitions"] == 3 and settings["topics"] == 7
    assert SparkTopicsLDA().getK() == 10 and SparkTopicsLDA().getMaxIter() == 20    # MLlib's defaults
    fresh = SparkTopicsLDA()
    assert not fresh.isSet(fresh.docConcentration) and fresh.getSeed() == 0


def test_vocabulary_from_the_column_attributes():
    from pyspark.sql.types import StructField

    from drivers.preparation.vectors import attribute_names

    names = {"ml_attr": {"attrs": {"numeric": [{"idx": 1, "name": "b"}, {"idx": 0, "name": "a"}],
                                   "binary": [{"idx": 2, "name": "c"}]}, "num_attrs": 3}}
    assert attribute_names(StructField("features", VectorUDT(), metadata=names)) == ["a", "b", "c"]
    names["ml_attr"]["num_attrs"] = 4           # an index without a name: no vocabulary
    assert attribute_names(StructField("features", VectorUDT(), metadata=names)) is None
    assert attribute_names(StructField("features", VectorUDT())) is None


def test_bad_input_is_refused_in_one_line(spark_session, drawn, drawn_model):
    from pyspark.ml.linalg import Vectors

    arrays = spark_session.createDataFrame([([1.0, 0.0, 2.0],)], ["features"])
    with pytest.raises(ValueError, match=r"featuresCol 'features' must hold pyspark.ml.linalg vectors .*"
                                         r"array<double>.*array_to_vector"):
        SparkTopicsLDA(k=2).fit(arrays)
    with pytest.raises(ValueError, match="featuresCol 'counts' is not a column"):
        SparkTopicsLDA(k=2, featuresCol="counts").fit(drawn["frame"])
    model, _ = drawn_model
    with pytest.raises(ValueError, match="must hold pyspark.ml.linalg vectors"):
        model.transform(arrays)
    with pytest.raises(ValueError, match="output column 'doc_id' already exists"):
        model.copy({model.topicDistributionCol: "doc_id"}).transform(drawn["frame"])
    tfidf = spark_session.createDataFrame([(Vectors.dense([0.5, 1.0, 0.0]),), (Vectors.dense([1.0, 2.0, 3.0]),)],
                                          ["features"])
    with pytest.raises(ValueError, match="not term counts .* in 1 rows"):
        SparkTopicsLDA(k=2).fit(tfidf)
    sizes = spark_session.createDataFrame([(Vectors.sparse(3, [0], [1.0]),), (Vectors.sparse(4, [1], [2.0]),)],
                                          ["features"])
    with pytest.raises(ValueError, match="different sizes"):
        SparkTopicsLDA(k=2).fit(sizes)
    with pytest.raises(ValueError, match="the vocabulary has 2 terms but the vectors"):
        SparkTopicsLDA(k=2, vocabulary=["x", "y"]).fit(drawn["frame"])
    with pytest.raises(ValueError, match="k must be at least 2"):
        SparkTopicsLDA(k=1).fit(drawn["frame"])
    with pytest.raises(ValueError, match="docConcentration must be one value"):
        SparkTopicsLDA(k=3, docConcentration=[0.1, 0.2, 0.3]).fit(drawn["frame"])
    with pytest.raises(ValueError, match="k=4 is larger than the vocabulary"):
        SparkTopicsLDA(k=4).fit(sizes.limit(1))


def test_a_saved_stage_whose_data_leaves_its_directory_is_refused(spark_session, tmp_path):
    """A stage's metadata ``"data": "../../other/model"`` (a pipeline handed over) loaded a model from outside
    its directory; now refused in one line, before anything is read there."""
    from drivers.store import model_store
    from drivers.store import publish
    outside = str(tmp_path / "other" / "model")
    model_store.save_model(outside, {"model": "lda", "topics": 2, "vocab_size": 3, "alpha": [0.5, 0.5],
                                     "eta": 0.1}, pd.DataFrame({"term": ["a", "b", "c"], "id": [0, 1, 2]}),
                           np.ones((2, 3)))
    publish.write_marker(outside, publish.new_token())
    assert load_model(outside).num_topics == 2          # a model a wrong path would load
    stage = tmp_path / "pipeline" / "stages" / "1_SparkTopicsLDAModel_x"
    (stage / "metadata").mkdir(parents=True)
    (stage / "metadata" / "part-00000").write_text(json.dumps({
        "class": "drivers.api.model.SparkTopicsLDAModel", "timestamp": 0, "sparkVersion": spark_session.version,
        "uid": "SparkTopicsLDAModel_x", "paramMap": {}, "defaultParamMap": {}, "data": "../../../other/model"}))
    with pytest.raises(ValueError, match=r"the stage metadata's data '../../../other/model' is not a path inside"):
        SparkTopicsLDAModel.load(str(stage))


def _saved_stage(spark, directory, metadata_text=None, **metadata):
    """A saved SparkTopicsLDAModel stage: ``data/`` an ordinary 3-topic model directory, ``metadata/part-00000``
    the params (``metadata``) or ``metadata_text`` as it is."""
    from drivers.store import model_store
    from drivers.store import publish
    data = str(directory / "data")
    model_store.save_model(data, {"model": "lda", "topics": 3, "vocab_size": 4, "alpha": [0.5] * 3, "eta": 0.1},
                           pd.DataFrame({"term": ["a", "b", "c", "d"], "id": range(4)}), np.ones((3, 4)))
    publish.write_marker(data, publish.new_token())
    (directory / "metadata").mkdir(parents=True)
    (directory / "metadata" / "part-00000").write_text(metadata_text if metadata_text is not None else json.dumps({
        "class": "drivers.api.model.SparkTopicsLDAModel", "timestamp": 0, "sparkVersion": spark.version,
        "uid": "SparkTopicsLDAModel_x", "paramMap": {}, "defaultParamMap": {}, "data": "data", **metadata}))
    return str(directory)


def test_a_stage_saved_before_the_api_moved_finds_its_class(spark_session, tmp_path):
    """Stages saved while the API was drivers/ml.py name ``drivers.ml.SparkTopicsLDAModel`` in their metadata;
    ``PipelineModel.load`` imports the class by that name (DefaultParamsReader.loadParamsInstance) and finds it."""
    from pyspark.ml.util import DefaultParamsReader

    path = _saved_stage(spark_session, tmp_path / "old", paramMap={"k": 3}, topics=3, vocabSize=4,
                        **{"class": "drivers.ml.SparkTopicsLDAModel"})
    stage = DefaultParamsReader.loadParamsInstance(path, spark_session)
    assert type(stage) is SparkTopicsLDAModel and stage.getK() == 3 and stage.vocabSize() == 4


def test_a_saved_stage_is_checked_against_its_model_and_unreadable_metadata_named(spark_session, tmp_path):
    """Issue 25: a stage whose metadata says k = 99 beside a 3-topic model loaded silently (getK() 99); garbage
    metadata gave 'JSONDecodeError: Expecting value' naming no file. Both refused in one line now."""
    good = SparkTopicsLDAModel.load(_saved_stage(spark_session, tmp_path / "good", paramMap={"k": 3}, topics=3,
                                                 vocabSize=4))
    assert good.getK() == 3 and good.vocabSize() == 4
    for name, metadata in (("k", {"paramMap": {"k": 99}}), ("topics", {"topics": 99}), ("vocabSize", {"vocabSize": 9})):
        stage = _saved_stage(spark_session, tmp_path / name, **{"paramMap": {"k": 3}, **metadata})
        with pytest.raises(ValueError, match=rf"SparkTopicsLDAModel.load: .*{name}/metadata says {name} = 99?, but "
                                             rf"the model it names \(.*\) has 3 topics and 4 terms: the saved stage "
                                             rf"is damaged"):
            SparkTopicsLDAModel.load(stage)
    for cls, text in ((SparkTopicsLDAModel, "\x00garbage{"), (SparkTopicsLDA, '["a list"]')):
        stage = _saved_stage(spark_session, tmp_path / f"garbage-{cls.__name__}", metadata_text=text)
        with pytest.raises(ValueError, match=rf"{cls.__name__}.load: cannot read the saved stage's metadata "
                                             rf".*garbage-{cls.__name__}/metadata: \w+Error: "):
            cls.load(stage)


def test_a_vocabulary_too_large_for_the_driver_is_refused_before_it_is_allocated(spark_session):
    """Issue 25: two rows of Vectors.sparse(10**9, ...) drove the driver to 19 GB (the vocabulary's arrays, then the
    K x V model) and the out-of-memory killer; refused up front now, saying what to set."""
    from pyspark.ml.linalg import Vectors

    from drivers.engines.memory import estimator_memory_problem

    huge = spark_session.createDataFrame([(Vectors.sparse(10 ** 9, [0, 5], [1.0, 2.0]),),
                                          (Vectors.sparse(10 ** 9, [1], [3.0]),)], ["features"])
    with pytest.raises(ValueError, match=r"SparkTopicsLDA: k=2 topics over vectors of size 1000000000 need about "
                                         r"\d+[mg] of memory in the driver .* set a smaller vector size "
                                         r"\(CountVectorizer's vocabSize"):
        SparkTopicsLDA(k=2).fit(huge)
    assert estimator_memory_problem(3000, 594_000, machine=64 << 30) is not None     # as train refuses it
    assert estimator_memory_problem(20, 100_000, machine=8 << 30) is None
