"""A Spark ML Estimator and Model for spark-topics LDA: ``Pipeline([... CountVectorizer, SparkTopicsLDA])``.

:class:`SparkTopicsLDA` is a pure-Python ``pyspark.ml`` Estimator with the names
of ``pyspark.ml.clustering.LDA`` (``k``, ``maxIter``, ``seed``, ``featuresCol``,
``topicDistributionCol``, ``docConcentration``, ``topicConcentration``,
``optimizeDocConcentration``, ``checkpointInterval``) plus its own (``inference``,
``vocabulary``, ``idCol``, ``numPartitions``, ``checkpointDir``, ``tol``). Its
``fit`` is a thin layer over the existing path, not a second implementation:

1. the features column (MLlib vectors of term counts, e.g. ``CountVectorizer``
   output) becomes a prepared corpus in a working directory, in the format
   ``spark-topics prepare`` writes (``docs.parquet``, ``vocab.parquet``,
   ``corpus.json``, ``rejects/``); documents with no words are skipped, counted
   in a log line and listed in ``rejects/`` as ``empty``, as ``prepare`` does;
2. the variational family trains ``lda`` on it exactly as ``spark-topics train``
   does (same corpus, seed, K and settings: the same lambda, bit for bit);
3. the model directory is read back (:func:`drivers.store.model_store.load_model`) into
   a :class:`SparkTopicsLDAModel`.

:class:`SparkTopicsLDAModel` has MLlib's ``LDAModel`` methods (``isDistributed``,
``vocabSize``, ``topicsMatrix``, ``describeTopics``, ``estimatedDocConcentration``,
``logLikelihood``, ``logPerplexity``, ``transform``) and ``modelDirectory``.
``transform`` and the bounds run the fold-in E-step of ``spark-topics infer``
(:func:`inference.heldout.fold_in`) in the executors (``mapInArrow``, the model's
exp E_q[log beta] and alpha broadcast once per model).

Persistence (``model.save(path)``, also inside ``Pipeline.save`` /
``PipelineModel.save``): ``path/metadata`` holds the params
(:meth:`DefaultParamsWriter.saveMetadata`) and ``path/data`` is an ordinary
spark-topics model directory (``model.json``, ``vocab.parquet``, ``lambda.npy``,
``doc_topics.parquet``, ...; no pickle anywhere), so ``spark-topics topics
--model path/data``, ``infer`` and ``evaluate`` read it as they read any model.

Limits:

* classic Spark only: the engine runs on RDDs, which Spark Connect does not have
  (``fit``, ``transform`` and the bounds refuse a Connect session in one line);
* the package (``drivers``, ``inference``, ``partitioners``) must be importable
  wherever a pipeline holding these stages is fitted, loaded or applied, the
  executors included (``--py-files dist/spark_topics_code.zip`` or an installed
  package), as for any Python stage;
* a saved pipeline with these stages is read by Python's ``PipelineModel.load``
  only; Scala/Java cannot load a ``language: Python`` pipeline;
* the K x V topic matrix is held in the driver (and broadcast to the executors by
  ``transform``); the corpus is not;
* on a cluster the working directory (the corpus and model files of ``fit``) must
  be reachable from every executor: ``checkpointDir``, else Spark's checkpoint
  directory (``sc.setCheckpointDir``); local masters use the local temporary
  directory. A fitted model's directory is temporary until the model is saved
  (it is removed when the Python process exits); a fit's working directory
  (``spark-topics-ml-<host>-<pid>-<id>``) left by a process killed before its
  exit is removed by the next fit on that host.
"""
from __future__ import annotations

import atexit
import logging
import os
import socket
import tempfile
import uuid
from functools import partial

import numpy as np

from pyspark import keyword_only
from pyspark.ml.base import Estimator, Model
from pyspark.ml.linalg import DenseMatrix, DenseVector, VectorUDT
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasCheckpointInterval, HasFeaturesCol, HasMaxIter, HasSeed, HasTol
from pyspark.ml.util import (DefaultParamsReadable, DefaultParamsReader, DefaultParamsWritable, DefaultParamsWriter,
                             MLReadable, MLReader, MLWritable, MLWriter)

from drivers import registry, storage
from drivers.api.saved import CheckedParamsReader, check_model_stage, stage_metadata
from drivers.corpora.files import CORPUS_JSON, DOCS, NO_STOPWORDS, REJECTS, VOCAB
from drivers.engines.memory import estimator_memory_problem
from drivers.families import TrainRequest
from drivers.families.variational.infer import exp_elogbeta
from drivers.families.variational.shared import VariationalTraining
from drivers.store import model_store, topic_model, topics_text
from inference.blocks import DocBlock
from inference.constraints import AT_LEAST_1, NON_NEGATIVE, POSITIVE, TOPICS, StrOptions, validate
from inference.elbo import alpha_terms, topic_terms
from inference.errors import RefusedError, UsageError
from inference.heldout import fold_in, top_word_ids
from inference.mapper import EStepSettings

log = logging.getLogger("spark_topics.ml")

#: the inference modes of ``--model lda`` (``train --inference``)
INFERENCE_MODES = ("variational", "hybrid")
#: the estimator's params, checked when it fits (one-line UsageErrors naming the param)
PARAM_CONSTRAINTS = {"k": TOPICS, "maxIter": AT_LEAST_1, "inference": StrOptions(INFERENCE_MODES),
                     "tol": NON_NEGATIVE, "docConcentration": POSITIVE, "topicConcentration": POSITIVE,
                     "numPartitions": AT_LEAST_1}
#: its default: ``train --model lda``'s (the registry's, README "why this default")
DEFAULT_INFERENCE = registry.MODELS["lda"].default_inference or "variational"
#: ``path/data`` of a saved model: an ordinary spark-topics model directory
DATA = "data"
#: the part of a model directory that belongs to a run, not to the model (never copied by ``save``)
RUN_FILES = ("_checkpoint", "_lease.json", "_SUCCESS")
#: the format of a saved model's ``data/`` (in its metadata)
DATA_FORMAT = "spark-topics model directory"
#: the largest count a prepared corpus holds (``counts`` is array<int>)
MAX_COUNT = 2 ** 31 - 1
SEED_MODULUS = 2 ** 63


# --------------------------------------------------------------------------- params

def _given(kwargs: dict) -> dict:
    """The keyword arguments that set a param (None leaves an optional param unset)."""
    return {name: value for name, value in kwargs.items() if value is not None}


def _to_doc_concentration(value):
    """docConcentration as MLlib types it (a list of floats); a single number is accepted too."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return [float(value)]
    return TypeConverters.toListFloat(value)


class _SparkTopicsLDAParams(HasFeaturesCol, HasMaxIter, HasSeed, HasCheckpointInterval, HasTol):
    """Params shared by :class:`SparkTopicsLDA` and :class:`SparkTopicsLDAModel` (MLlib's names where they apply)."""

    k = Param(Params._dummy(), "k", "the number of topics (clusters) to infer; must be > 1",
              typeConverter=TypeConverters.toInt)
    docConcentration = Param(
        Params._dummy(), "docConcentration",
        "initial symmetric alpha, the Dirichlet prior on documents' topic proportions (one value; default 1/k); "
        "learnt (asymmetric) by Newton-Raphson unless optimizeDocConcentration is false",
        typeConverter=_to_doc_concentration)
    topicConcentration = Param(
        Params._dummy(), "topicConcentration",
        "symmetric eta, the Dirichlet prior on topics' word distributions (default 1/k); fixed",
        typeConverter=TypeConverters.toFloat)
    optimizeDocConcentration = Param(
        Params._dummy(), "optimizeDocConcentration", "learn alpha by Newton-Raphson during training",
        typeConverter=TypeConverters.toBoolean)
    topicDistributionCol = Param(
        Params._dummy(), "topicDistributionCol",
        "output column with each document's topic proportions theta (the posterior mean of the fold-in E-step); "
        "a vector of zeros for a document with no words, as MLlib",
        typeConverter=TypeConverters.toString)
    inference = Param(
        Params._dummy(), "inference",
        "the local step of training: variational (the E-step) or hybrid (variational-MCMC, sampled "
        "topic assignments; train --inference hybrid); default: train --model lda's",
        typeConverter=TypeConverters.toString)
    vocabulary = Param(
        Params._dummy(), "vocabulary",
        "the term of every feature index (e.g. CountVectorizerModel.vocabulary); default: the names in the "
        "features column's ML attributes, else the indices as strings", typeConverter=TypeConverters.toListString)
    idCol = Param(
        Params._dummy(), "idCol",
        "a column of unique document ids (any type, read as strings); default: a monotonically increasing id "
        "(deterministic for a given DataFrame and its partitioning)", typeConverter=TypeConverters.toString)
    numPartitions = Param(
        Params._dummy(), "numPartitions",
        "document partitions of training (train --partitions; default: from the corpus size, not the cluster)",
        typeConverter=TypeConverters.toInt)
    checkpointDir = Param(
        Params._dummy(), "checkpointDir",
        "working directory of fit (the prepared corpus, the model files and the per-iteration checkpoint), "
        "reachable from every executor; default: the local temporary directory on a local master, else "
        "Spark's checkpoint directory", typeConverter=TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(k=10, maxIter=20, seed=0, tol=1e-5, checkpointInterval=10, optimizeDocConcentration=True,
                         topicDistributionCol="topicDistribution", inference=DEFAULT_INFERENCE)

    def getK(self) -> int:
        return self.getOrDefault(self.k)

    def getDocConcentration(self):
        return self.getOrDefault(self.docConcentration)

    def getTopicConcentration(self) -> float:
        return self.getOrDefault(self.topicConcentration)

    def getOptimizeDocConcentration(self) -> bool:
        return self.getOrDefault(self.optimizeDocConcentration)

    def getTopicDistributionCol(self) -> str:
        return self.getOrDefault(self.topicDistributionCol)

    def getInference(self) -> str:
        return self.getOrDefault(self.inference)

    def getVocabulary(self):
        return self.getOrDefault(self.vocabulary)

    def getIdCol(self):
        return self.getOrDefault(self.idCol)

    def getNumPartitions(self):
        return self.getOrDefault(self.numPartitions)

    def getCheckpointDir(self):
        return self.getOrDefault(self.checkpointDir)

    def _optional(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None


# --------------------------------------------------------------------------- the estimator

class SparkTopicsLDA(Estimator, _SparkTopicsLDAParams, DefaultParamsReadable, DefaultParamsWritable):
    """LDA by Mr. LDA's variational EM (``spark-topics train --model lda``) as a Spark ML Estimator.

    ``featuresCol`` holds MLlib vectors (sparse or dense) of term counts, one per
    document, all of one size V (the vocabulary): ``CountVectorizer`` output. The
    counts must be non-negative integers (``prepare``'s format: a TF-IDF or
    ``binary=False``-normalised column is refused). Documents with no words are
    skipped and counted. ``maxIter`` EM iterations at most (training stops earlier
    when the relative ELBO change falls below ``tol``; ``tol=0`` runs them all).
    ``checkpointInterval`` is accepted for MLlib compatibility and not used: the
    engine keeps its state every iteration (its gamma files are the checkpoint).
    The same DataFrame, params and seed give the same model, bit for bit, and the
    model ``spark-topics train`` fits on the same corpus. See the module docstring
    for the limits.
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", topicDistributionCol="topicDistribution", k=10, maxIter=20,
                 seed=0, tol=1e-5, checkpointInterval=10, docConcentration=None, topicConcentration=None,
                 optimizeDocConcentration=True, inference=DEFAULT_INFERENCE, vocabulary=None, idCol=None,
                 numPartitions=None, checkpointDir=None):
        super().__init__()
        self._set(**_given(self._input_kwargs))

    @keyword_only
    def setParams(self, *, featuresCol="features", topicDistributionCol="topicDistribution", k=10, maxIter=20,
                  seed=0, tol=1e-5, checkpointInterval=10, docConcentration=None, topicConcentration=None,
                  optimizeDocConcentration=True, inference=DEFAULT_INFERENCE, vocabulary=None, idCol=None,
                  numPartitions=None, checkpointDir=None):
        return self._set(**_given(self._input_kwargs))

    def setK(self, value: int):
        return self._set(k=value)

    def setMaxIter(self, value: int):
        return self._set(maxIter=value)

    def setSeed(self, value: int):
        return self._set(seed=value)

    def setTol(self, value: float):
        return self._set(tol=value)

    def setCheckpointInterval(self, value: int):
        return self._set(checkpointInterval=value)

    def setFeaturesCol(self, value: str):
        return self._set(featuresCol=value)

    def setTopicDistributionCol(self, value: str):
        return self._set(topicDistributionCol=value)

    def setDocConcentration(self, value):
        return self._set(docConcentration=value)

    def setTopicConcentration(self, value: float):
        return self._set(topicConcentration=value)

    def setOptimizeDocConcentration(self, value: bool):
        return self._set(optimizeDocConcentration=value)

    def setInference(self, value: str):
        return self._set(inference=value)

    def setVocabulary(self, value):
        return self._set(vocabulary=value)

    def setIdCol(self, value: str):
        return self._set(idCol=value)

    def setNumPartitions(self, value: int):
        return self._set(numPartitions=value)

    def setCheckpointDir(self, value: str):
        return self._set(checkpointDir=value)

    @classmethod
    def read(cls):
        return CheckedParamsReader(cls)

    # ---- fit
    def _settings(self) -> dict:
        """The params as TrainRequest fields, checked (one-line UsageErrors naming the param)."""
        k, max_iter, tol = self.getK(), self.getMaxIter(), self.getTol()
        validate({"k": k, "maxIter": max_iter, "inference": self.getInference(), "tol": tol}, PARAM_CONSTRAINTS,
                 name=lambda param: f"SparkTopicsLDA: {param}")
        alpha = self._optional(self.docConcentration)
        if alpha is not None:
            alpha = [float(a) for a in alpha]
            if len(alpha) == 0 or len(set(alpha)) != 1 or (len(alpha) != 1 and len(alpha) != k):
                raise UsageError("SparkTopicsLDA: docConcentration must be one value (a symmetric initial alpha; "
                                 "an asymmetric alpha is learnt from it when optimizeDocConcentration is true), "
                                 f"got {alpha}")
            alpha = alpha[0]
        eta, partitions = self._optional(self.topicConcentration), self._optional(self.numPartitions)
        validate({"docConcentration": alpha, "topicConcentration": eta, "numPartitions": partitions},
                 PARAM_CONSTRAINTS, name=lambda param: f"SparkTopicsLDA: {param}")
        return {"topics": k, "iterations": max_iter, "seed": int(self.getSeed()) % SEED_MODULUS, "alpha": alpha,
                "fixed_alpha": not self.getOptimizeDocConcentration(), "partitions": partitions,
                "engine": VariationalTraining(tol=float(tol), inference=self.getInference()),
                "options": {"eta": eta, "optimize_eta": False}}

    def _fit(self, dataset):
        spark = _classic_session(dataset)
        settings = self._settings()
        features = self.getFeaturesCol()
        check_vector_column(dataset.schema, features, "SparkTopicsLDA")
        id_col = self._optional(self.idCol)
        if id_col is not None and id_col not in dataset.columns:
            raise UsageError(f"SparkTopicsLDA: idCol {id_col!r} is not a column of the DataFrame "
                             f"({', '.join(dataset.columns)})")
        vocabulary = self._optional(self.vocabulary)
        if vocabulary is None:
            vocabulary = attribute_names(dataset.schema[features])
        work = _work_directory(spark, self._optional(self.checkpointDir))
        corpus_dir, model_dir = storage.join(work, "corpus"), storage.join(work, "model")
        _TEMPORARY.add(work)
        try:
            summary = write_corpus(spark, dataset, features, corpus_dir, id_col, vocabulary, settings["topics"])
            request = TrainRequest(model="lda", corpus=corpus_dir, output=model_dir, **settings)
            spec = registry.model("lda")
            spec.family_object().train(spark, spec, request)
            _mark_complete(model_dir)
            trained = model_store.load_model(model_dir)
        except BaseException:
            _remove(work)
            raise
        _remove(corpus_dir)
        log.info("SparkTopicsLDA: K=%d, V=%d, %d documents, %d tokens, %d iterations; model files in %s",
                 trained.num_topics, len(trained.vocab), summary["documents"], summary["tokens"],
                 int(trained.meta["iterations"]), model_dir)
        model = self._copyValues(SparkTopicsLDAModel(trained, vocabulary_known=vocabulary is not None))
        if vocabulary is not None:
            model._set(vocabulary=list(vocabulary))
        return model


# --------------------------------------------------------------------------- the model

class SparkTopicsLDAModel(Model, _SparkTopicsLDAParams, MLReadable, MLWritable):
    """A fitted spark-topics LDA model (a local model: K x V lambda and alpha in the driver).

    ``topicsMatrix()`` is V x K with column k = lambda_k, the Dirichlet parameters
    of q(beta_k) (MLlib's online LDA returns the same thing: its lambda,
    transposed); normalise a column for E_q[beta_k], which is what
    ``describeTopics`` reports as ``termWeights``.
    """

    def __init__(self, topic_model: topic_model.TopicModel | None = None, vocabulary_known: bool = False):
        super().__init__()
        self._model = topic_model
        self._vocabulary_known = bool(vocabulary_known)
        self._vocabulary_changed = False
        self._broadcast = None          # (SparkContext, Broadcast of (the word factor, alpha))
        self._topic_part = None

    def setFeaturesCol(self, value: str):
        return self._set(featuresCol=value)

    def setTopicDistributionCol(self, value: str):
        return self._set(topicDistributionCol=value)

    def setSeed(self, value: int):
        return self._set(seed=value)

    def setVocabulary(self, terms):
        """Name the V feature indices (e.g. with ``CountVectorizerModel.vocabulary`` of the same pipeline): used by
        ``describeTopics`` (``terms``) and written to ``vocab.parquet`` / ``topics.txt`` by ``save``."""
        terms = [str(t) for t in TypeConverters.toListString(list(terms))]
        if len(terms) != self.vocabSize():
            raise UsageError(f"SparkTopicsLDAModel.setVocabulary: {len(terms)} terms for a vocabulary of "
                             f"{self.vocabSize()}")
        vocab = self._fitted().vocab.copy()
        vocab["term"] = terms
        self._model = topic_model.TopicModel(self._model.directory, self._model.meta, vocab, self._model.lambda_)
        self._vocabulary_known = self._vocabulary_changed = True
        return self._set(vocabulary=terms)

    # ---- MLlib's LDAModel
    def isDistributed(self) -> bool:
        return False

    def vocabSize(self) -> int:
        return int(self._fitted().lambda_.shape[1])

    def topicsMatrix(self) -> DenseMatrix:
        """V x K: column k is lambda_k (see the class docstring)."""
        lam = np.ascontiguousarray(self._fitted().lambda_, dtype=np.float64)
        K, V = lam.shape
        return DenseMatrix(V, K, lam.ravel())   # column-major V x K = lambda (K x V) row by row

    def estimatedDocConcentration(self) -> DenseVector:
        """The learnt alpha (K values)."""
        return DenseVector(self._fitted().alpha)

    def describeTopics(self, maxTermsPerTopic: int = 10):
        """DataFrame ``topic``, ``termIndices``, ``termWeights`` (E_q[beta_k], largest first; ties: lower index
        first), and ``terms`` (the words of ``termIndices``) when the vocabulary is known (the ``vocabulary``
        param, the features column's attribute names, or :meth:`setVocabulary`)."""
        from pyspark.sql import SparkSession
        from pyspark.sql.types import ArrayType, DoubleType, IntegerType, StringType, StructField, StructType

        model = self._fitted()
        beta = model.topic_word()
        top = top_word_ids(beta, max(0, min(int(maxTermsPerTopic), beta.shape[1])))
        terms = model.vocab["term"].to_numpy()
        fields = [StructField("topic", IntegerType(), False),
                  StructField("termIndices", ArrayType(IntegerType(), False), False),
                  StructField("termWeights", ArrayType(DoubleType(), False), False)]
        rows = [[k, [int(i) for i in top[k]], [float(beta[k, i]) for i in top[k]]] for k in range(beta.shape[0])]
        if self._vocabulary_known:
            fields.append(StructField("terms", ArrayType(StringType(), False), False))
            for k, row in enumerate(rows):
                row.append([str(terms[i]) for i in top[k]])
        return SparkSession.active().createDataFrame(rows, StructType(fields))

    def logLikelihood(self, dataset) -> float:
        """The variational lower bound on log p(documents) that MLlib's ``logLikelihood`` computes (Hoffman et al.
        2010, eq 16), with this model's q(beta) = Dir(lambda) and alpha:

            sum_d [ E_q log p(w_d | theta_d, z_d, beta) + E_q log p(z_d | theta_d) - E_q log q(z_d)
                    + E_q log p(theta_d | alpha) - E_q log q(theta_d | gamma_d) ]
            + sum_k [ E_q log p(beta_k | eta) - E_q log q(beta_k | lambda_k) ]

        gamma_d from the fold-in E-step (``spark-topics infer``'s: cold start alpha + N_d / K, tolerance 1e-3,
        at most 100 passes) with phi at its optimum for gamma_d (the log-sum-exp form); documents with no words
        are left out, as MLlib does; the topic terms are counted once, whatever the dataset (MLlib's choice)."""
        doc_part, _, _ = self._document_bound(dataset)
        return float(doc_part + self._topic_terms())

    def logPerplexity(self, dataset) -> float:
        """-logLikelihood(dataset) / tokens of the dataset (MLlib's definition: an upper bound on the log
        perplexity per token)."""
        doc_part, _, tokens = self._document_bound(dataset)
        if tokens <= 0:
            raise UsageError("SparkTopicsLDAModel.logPerplexity: the dataset has no tokens")
        return float(-(doc_part + self._topic_terms()) / tokens)

    # ---- ours
    def modelDirectory(self) -> str:
        """The spark-topics model directory of this model: ``path/data`` of a loaded or saved model, or the
        temporary directory ``fit`` trained into (removed when the process exits; save the model to keep it)."""
        return self._fitted().directory

    def modelMetadata(self) -> dict:
        """``model.json`` of the model (K, V, alpha, eta, iterations, the ELBO trace, seed, ...)."""
        return dict(self._fitted().meta)

    def topicModel(self) -> topic_model.TopicModel:
        """The model as the jobs see it (:class:`drivers.store.topic_model.TopicModel`)."""
        return self._fitted()

    # ---- transform and bounds
    def _transform(self, dataset):
        from pyspark.sql.types import StructField, StructType

        spark = _classic_session(dataset)
        features, output = self.getFeaturesCol(), self.getTopicDistributionCol()
        check_vector_column(dataset.schema, features, "SparkTopicsLDAModel")
        if output in dataset.columns:
            raise UsageError(f"SparkTopicsLDAModel: output column {output!r} already exists")
        schema = StructType(list(dataset.schema.fields) + [StructField(output, VectorUDT(), True)])
        task = partial(_theta_batches, params=self._params_broadcast(spark),
                       features_index=dataset.columns.index(features), output=output, vocab_size=self.vocabSize(),
                       options=EStepSettings())
        return dataset.mapInArrow(task, schema)

    def _document_bound(self, dataset) -> tuple:
        """(sum over documents of their ELBO terms, documents with words, tokens), summed in a fixed order."""
        from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

        spark = _classic_session(dataset)
        features = self.getFeaturesCol()
        check_vector_column(dataset.schema, features, "SparkTopicsLDAModel")
        schema = StructType([StructField("partition", LongType(), False), StructField("batch", LongType(), False),
                             StructField("terms", ArrayType(DoubleType(), False), False)])
        task = partial(_bound_batches, params=self._params_broadcast(spark), vocab_size=self.vocabSize(),
                       options=EStepSettings())
        spark.sparkContext.setJobDescription("SparkTopicsLDAModel: variational bound (fold-in E-step)")
        try:
            rows = dataset.select(dataset[features]).mapInArrow(task, schema).collect()
        finally:
            spark.sparkContext.setJobDescription(None)
        alpha = self._fitted().alpha
        total = np.zeros(3 + len(alpha))
        for row in sorted(rows, key=lambda r: (r.partition, r.batch)):
            total = total + np.asarray(row.terms)
        doc_terms, n_docs, n_tokens, alpha_stats = total[0], total[1], total[2], total[3:]
        return float(doc_terms + alpha_terms(alpha, alpha_stats, n_docs)), int(n_docs), float(n_tokens)

    def _topic_terms(self) -> float:
        """sum_k E_q[log p(beta_k | eta)] - E_q[log q(beta_k | lambda_k)] (a symmetric eta, as fit learns)."""
        if self._topic_part is None:
            model = self._fitted()
            eta = model.meta.get("eta")
            if not isinstance(eta, (int, float)):
                raise UsageError(f"SparkTopicsLDAModel: the bound needs a symmetric eta; {model.directory} has "
                                 f"{eta!r}")
            V = model.lambda_.shape[1]
            self._topic_part = float(sum(sum(topic_terms(row, np.full(V, float(eta)))[1:])
                                         for row in model.lambda_))
        return self._topic_part

    def _params_broadcast(self, spark):
        sc = spark.sparkContext
        if self._broadcast is None or self._broadcast[0] is not sc:
            model = self._fitted()
            self._broadcast = (sc, sc.broadcast((exp_elogbeta(model), model.alpha)))
        return self._broadcast[1]

    def _fitted(self) -> topic_model.TopicModel:
        if self._model is None:
            raise UsageError("SparkTopicsLDAModel has no model: fit SparkTopicsLDA or load a saved model")
        return self._model

    # ---- persistence
    def write(self) -> MLWriter:
        return _ModelWriter(self)

    @classmethod
    def read(cls) -> MLReader:
        return _ModelReader(cls)


class _ModelWriter(MLWriter):
    """``path/metadata``: the params (DefaultParamsWriter); ``path/data``: the model directory (see the module)."""

    def __init__(self, instance: SparkTopicsLDAModel):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path: str) -> None:
        model = self.instance._fitted()
        params = {p.name: v for p, v in self.instance._paramMap.items() if p.name != "vocabulary"}  # in data/
        DefaultParamsWriter.saveMetadata(self.instance, path, self.sparkSession, paramMap=params, extraMetadata={
            "data": DATA, "dataFormat": DATA_FORMAT, "topics": model.num_topics,
            "vocabSize": int(model.lambda_.shape[1]), "vocabularyKnown": self.instance._vocabulary_known})
        data = storage.join(_storage_path(path), DATA)
        save_model_directory(model, data, rewrite_vocabulary=self.instance._vocabulary_changed)


class _ModelReader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> SparkTopicsLDAModel:
        metadata = stage_metadata(path, self.sparkSession, "SparkTopicsLDAModel.load")
        trained = model_store.load_model(storage.join_inside(_storage_path(path), metadata.get("data", DATA),
                                                             "the stage metadata's data"))
        known = bool(metadata.get("vocabularyKnown"))
        instance = self.cls(trained, vocabulary_known=known)
        instance._resetUid(metadata["uid"])
        DefaultParamsReader.getAndSetParams(instance, metadata)
        check_model_stage(metadata, instance, trained, path, "SparkTopicsLDAModel.load")
        if known:     # the vocabulary param is the model's terms (saved once, in data/vocab.parquet)
            instance._set(vocabulary=[str(t) for t in trained.vocab["term"]])
        return instance


def save_model_directory(model: topic_model.TopicModel, target: str, rewrite_vocabulary: bool = False) -> None:
    """``target`` as an ordinary model directory of ``model``: the files of its directory when that still exists
    (everything ``train`` wrote but the run's own files), else the model files from memory (model.json,
    lambda.npy, vocab.parquet, topics.txt); a renamed vocabulary rewrites vocab.parquet and topics.txt; the
    completion marker last."""
    from pyarrow import fs as pafs

    source = model.directory
    storage.makedirs(target)
    if source and storage.exists(storage.join(source, "model.json")) and \
            _absolute(source) != _absolute(target):
        src_fs, src_root = storage.resolve(source)
        dst_fs, dst_root = storage.resolve(target)
        for info in src_fs.get_file_info(pafs.FileSelector(src_root)):
            if info.base_name in RUN_FILES or info.base_name.startswith("."):
                continue
            destination = f"{dst_root.rstrip('/')}/{info.base_name}"
            if info.type == pafs.FileType.Directory:      # copy_files fills a directory, it does not create it
                dst_fs.create_dir(destination, recursive=True)
            pafs.copy_files(info.path, destination, source_filesystem=src_fs, destination_filesystem=dst_fs)
    else:
        model_store.save_model(target, model.meta, model.vocab, model.lambda_)
        rewrite_vocabulary = True
    if rewrite_vocabulary:
        cols = [c for c in ("term", "id", "df", "cf") if c in model.vocab.columns]
        model_store.write_parquet(storage.join(target, "vocab.parquet"), model.vocab[cols])
        topics_text.write_topics_file(target, 10)
    _mark_complete(target)


# --------------------------------------------------------------------------- DataFrame -> prepared corpus

def check_vector_column(schema, column: str, who: str) -> None:
    """A one-line UsageError unless ``column`` is a column of MLlib vectors."""
    if column not in schema.fieldNames():
        raise UsageError(f"{who}: featuresCol {column!r} is not a column of the DataFrame "
                         f"({', '.join(schema.fieldNames())})")
    kind = schema[column].dataType
    if not isinstance(kind, VectorUDT):
        raise UsageError(f"{who}: featuresCol {column!r} must hold pyspark.ml.linalg vectors of term counts "
                         f"(VectorUDT, e.g. CountVectorizer output), but it is {kind.simpleString()}"
                         + (" (convert it with pyspark.ml.functions.array_to_vector)"
                            if kind.typeName() == "array" else ""))


def attribute_names(field) -> list | None:
    """The names of a vector column's ML attributes (``ml_attr.attrs``), when every index has one."""
    attr = (field.metadata or {}).get("ml_attr") or {}
    size, names = attr.get("num_attrs"), {}
    for group in (attr.get("attrs") or {}).values():
        for entry in group:
            if "idx" in entry and "name" in entry:
                names[int(entry["idx"])] = str(entry["name"])
    if not names or size is None or sorted(names) != list(range(int(size))):
        return None
    return [names[i] for i in range(int(size))]


def write_corpus(spark, dataset, features: str, corpus_dir: str, id_col: str | None = None,
                 vocabulary: list | None = None, topics: int | None = None) -> dict:
    """The documents of ``dataset[features]`` as a prepared corpus in ``corpus_dir`` (``docs.parquet``,
    ``vocab.parquet``, ``rejects/``, ``corpus.json`` last; the format :mod:`drivers.corpora.files` describes).

    Document ids: ``id_col`` as strings (unique, not null), else a monotonically increasing id. Refused in one
    line: null vectors, vectors of different sizes, values that are not non-negative integer counts, a
    vocabulary of another size, fewer terms than ``topics``. Documents with no words go to ``rejects/`` as ``empty`` (and are counted).
    Returns corpus.json's content.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.types import (ArrayType, BooleanType, IntegerType, StringType, StructField, StructType)

    ids = (dataset[id_col].cast("string") if id_col is not None
           else F.monotonically_increasing_id().cast("string")).alias("doc_id")
    source = dataset.select(ids, dataset[features].alias("features"))
    schema = StructType([StructField("doc_id", StringType()), StructField("term_ids", ArrayType(IntegerType())),
                         StructField("counts", ArrayType(IntegerType())), StructField("n_tokens", IntegerType()),
                         StructField("n_oov", IntegerType()), StructField("size", IntegerType()),
                         StructField("problem", IntegerType()), StructField("is_null", BooleanType())])
    sc = spark.sparkContext
    converted = source.mapInArrow(_corpus_batches, schema).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        sc.setJobDescription("SparkTopicsLDA: read the features column")
        stats = converted.agg(
            F.count("*").alias("rows"), F.sum(F.col("is_null").cast("long")).alias("nulls"),
            F.sum(F.when(~F.col("is_null") & (F.col("n_tokens") == 0), 1).otherwise(0)).alias("empty"),
            F.sum(F.when(~F.col("is_null"), F.col("n_tokens").cast("long"))).alias("tokens"),
            F.min(F.when(~F.col("is_null"), F.col("size"))).alias("min_size"),
            F.max(F.when(~F.col("is_null"), F.col("size"))).alias("max_size"),
            F.sum((F.col("problem") > 0).cast("long")).alias("problems"),
            F.min(F.when(F.col("problem") > 0, F.struct("problem", "doc_id"))).alias("example"),
            F.sum(F.col("doc_id").isNull().cast("long")).alias("null_ids"),
            *([F.countDistinct("doc_id").alias("distinct_ids")] if id_col is not None else [])).first()
        _check_documents(stats, features, id_col)
        V = int(stats.max_size)
        if vocabulary is not None and len(vocabulary) != V:
            raise UsageError(f"SparkTopicsLDA: the vocabulary has {len(vocabulary)} terms but the vectors of "
                             f"{features!r} have size {V}")
        if topics is not None and topics > V:
            raise UsageError(f"SparkTopicsLDA: k={topics} is larger than the vocabulary (vectors of size {V} in "
                             f"{features!r}): use fewer topics or a larger vocabulary")
        too_big = estimator_memory_problem(topics or 1, V)
        if too_big:
            raise UsageError(f"SparkTopicsLDA: {too_big}")
        documents = int(stats.rows) - int(stats.empty)
        if documents == 0:
            raise UsageError(f"SparkTopicsLDA: no document of {features!r} has a word ({stats.rows} rows)")
        if stats.empty:
            log.warning("SparkTopicsLDA: %d of %d documents have no words: skipped (listed in the corpus' %s as "
                        "empty)", stats.empty, stats.rows, REJECTS)
        sc.setJobDescription("SparkTopicsLDA: write the prepared corpus")
        storage.makedirs(corpus_dir)
        docs_path = storage.join(corpus_dir, DOCS)
        (converted.where(F.col("n_tokens") > 0)
         .select("doc_id", "term_ids", "counts", "n_tokens", "n_oov").write.parquet(_spark_path(docs_path)))
        rejects_path = storage.join(corpus_dir, REJECTS)
        if stats.empty:
            (converted.where(F.col("n_tokens") == 0)
             .select(F.col("doc_id").alias("id"), F.lit("empty").alias("reason"),
                     F.lit(f"DataFrame column {features}").alias("source"), F.lit(None).cast("string").alias("raw"))
             .write.option("ignoreNullFields", False).json(_spark_path(rejects_path)))
        else:
            storage.makedirs(rejects_path)
        sc.setJobDescription("SparkTopicsLDA: document and collection frequencies")
        frequencies = (spark.read.parquet(_spark_path(docs_path))
                       .select(F.explode(F.arrays_zip("term_ids", "counts")).alias("e"))
                       .groupBy(F.col("e.term_ids").alias("id"))
                       .agg(F.count("*").alias("df"), F.sum(F.col("e.counts").cast("long")).alias("cf"))
                       .collect())
    finally:
        converted.unpersist()
        sc.setJobDescription(None)
    df, cf = np.zeros(V, dtype=np.int64), np.zeros(V, dtype=np.int64)
    for row in frequencies:
        df[row.id], cf[row.id] = row.df, row.cf
    terms = list(vocabulary) if vocabulary is not None else [str(i) for i in range(V)]
    _write_vocabulary(storage.join(corpus_dir, VOCAB), terms, df, cf)
    meta = {"format_version": 1, "documents": documents, "vocab_size": V, "tokens": int(stats.tokens or 0),
            "oov_tokens": 0, "input_rows": int(stats.rows),
            "rejected": {"malformed": 0, "invalid_encoding": 0, "duplicate_id": 0, "empty": int(stats.empty)},
            "options": {"format": "dataframe", "language": NO_STOPWORDS, "features_column": features,
                        "id_column": id_col, "vocabulary": "given" if vocabulary is not None else "indices"},
            "input": f"DataFrame column {features}"}
    storage.save_json(storage.join(corpus_dir, CORPUS_JSON), meta)
    return meta


def _check_documents(stats, features: str, id_col: str | None) -> None:
    where = f"SparkTopicsLDA: featuresCol {features!r}"
    if not stats.rows:
        raise UsageError("SparkTopicsLDA: the DataFrame has no rows")
    if stats.nulls:
        raise UsageError(f"{where} is null in {stats.nulls} of {stats.rows} rows")
    if stats.problems:
        kind, doc = stats.example["problem"], stats.example["doc_id"]
        what = ("values that are not term counts (non-negative integers below 2^31; a TF-IDF or normalised "
                "column cannot be a corpus)" if kind == _NOT_COUNTS else
                "indices that are not ascending within the vector's size")
        raise UsageError(f"{where} has {what} in {stats.problems} rows (e.g. the document "
                         f"{'with ' + id_col + ' ' if id_col else ''}{doc!r})")
    if stats.min_size != stats.max_size:
        raise UsageError(f"{where} holds vectors of different sizes ({stats.min_size} to {stats.max_size}): one "
                         f"vocabulary (vector size) for all documents")
    if stats.max_size < 1:
        raise UsageError(f"{where} holds vectors of size 0")
    if id_col is not None:
        if stats.null_ids:
            raise UsageError(f"SparkTopicsLDA: idCol {id_col!r} is null in {stats.null_ids} rows")
        if stats.distinct_ids != stats.rows:
            raise UsageError(f"SparkTopicsLDA: idCol {id_col!r} is not unique ({stats.distinct_ids} distinct ids "
                             f"in {stats.rows} rows)")


def _write_vocabulary(path: str, terms: list, df: np.ndarray, cf: np.ndarray) -> None:
    """vocab.parquet as ``prepare`` writes it (a Parquet directory: term string, id int, df long, cf long)."""
    import pyarrow as pa

    table = pa.table({"term": pa.array([str(t) for t in terms], pa.string()),
                      "id": pa.array(np.arange(len(terms), dtype=np.int32)),
                      "df": pa.array(df, pa.int64()), "cf": pa.array(cf, pa.int64())})
    storage.write_parquet(storage.join(path, "part-00000.parquet"), table)


# --------------------------------------------------------------------------- executor side: vectors in Arrow

_NOT_COUNTS, _BAD_INDICES = 1, 2


class _Vectors:
    """A batch of MLlib vectors (Arrow ``struct<type, size, indices, values>``) in CSR form, zeros kept."""

    def __init__(self, column):
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        n = len(column)
        kind_arr, size_arr, index_arr, value_arr = column.flatten()
        self.n = n
        self.valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        dense = np.asarray(pc.fill_null(kind_arr, 1).to_numpy(zero_copy_only=False)) == 1
        lengths = np.asarray(pc.fill_null(pc.list_value_length(value_arr), 0).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
        lengths[~self.valid] = 0
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.indptr[1:])
        self.values = np.asarray(pc.list_flatten(value_arr.filter(pa.array(self.valid))).to_numpy(
            zero_copy_only=False), dtype=np.float64) if n else np.zeros(0)
        self.row = np.repeat(np.arange(n), lengths)
        self.indices = np.arange(self.indptr[-1], dtype=np.int64) - self.indptr[:-1][self.row]
        sparse_entries = ~dense[self.row]
        if sparse_entries.any():
            sparse_rows = self.valid & ~dense
            flat = pc.list_flatten(index_arr.filter(pa.array(sparse_rows))).to_numpy(zero_copy_only=False)
            self.indices[sparse_entries] = np.asarray(flat, dtype=np.int64)
        sizes = np.asarray(pc.fill_null(size_arr, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
        self.sizes = np.where(dense, lengths, sizes)

    def row_any(self, entries: np.ndarray) -> np.ndarray:
        """(n,) whether any of a row's entries is flagged."""
        return np.bincount(self.row[entries], minlength=self.n) > 0

    def bad_indices(self) -> np.ndarray:
        """(n,) rows whose indices are outside [0, size) or not strictly ascending."""
        outside = (self.indices < 0) | (self.indices >= self.sizes[self.row])
        same_row = self.row[1:] == self.row[:-1]
        unordered = np.zeros(len(self.indices), dtype=bool)
        unordered[1:] = same_row & (np.diff(self.indices) <= 0)
        return self.row_any(outside | unordered)

    def nonzero(self, keep: np.ndarray | None = None):
        """(indptr, indices, values) of the nonzero entries (of rows where ``keep``)."""
        entries = self.values != 0
        if keep is not None:
            entries &= keep[self.row]
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.row[entries], minlength=self.n), out=indptr[1:])
        return indptr, self.indices[entries], self.values[entries]


def _corpus_batches(batches):
    """mapInArrow: (doc_id, features) -> the rows of docs.parquet, with each row's size and problems."""
    import pyarrow as pa

    for batch in batches:
        vectors = _Vectors(batch.column(1))
        values = vectors.values
        not_counts = ~np.isfinite(values) | (values < 0) | (values > MAX_COUNT) | (values != np.rint(values))
        problem = np.where(vectors.row_any(not_counts), _NOT_COUNTS,
                           np.where(vectors.bad_indices(), _BAD_INDICES, 0)).astype(np.int32)
        problem[~vectors.valid] = 0
        indptr, indices, counts = vectors.nonzero(keep=problem == 0)
        counts = counts.astype(np.int32)
        n_tokens = np.bincount(np.repeat(np.arange(vectors.n), np.diff(indptr)), weights=counts,
                               minlength=vectors.n).astype(np.int64)
        offsets = pa.array(indptr.astype(np.int32))
        yield pa.RecordBatch.from_arrays(
            [batch.column(0).cast(pa.string()),
             pa.ListArray.from_arrays(offsets, pa.array(indices.astype(np.int32))),
             pa.ListArray.from_arrays(offsets, pa.array(counts)),
             pa.array(np.minimum(n_tokens, MAX_COUNT).astype(np.int32)), pa.array(np.zeros(vectors.n, np.int32)),
             pa.array(vectors.sizes.astype(np.int32)), pa.array(problem), pa.array(~vectors.valid)],
            names=["doc_id", "term_ids", "counts", "n_tokens", "n_oov", "size", "problem", "is_null"])


def _weights(vectors: _Vectors, vocab_size: int, drop_empty: bool = False) -> DocBlock:
    """The batch as a DocBlock of its nonzero weights (rows in batch order; without the rows that have none with
    ``drop_empty``); a one-line error for vectors of another size or negative or non-finite values."""
    valid = vectors.valid
    if np.any(valid & (vectors.sizes != vocab_size)):
        bad = int(vectors.sizes[valid & (vectors.sizes != vocab_size)][0])
        raise UsageError(f"SparkTopicsLDAModel: a features vector has size {bad}, the model's vocabulary "
                         f"{vocab_size} terms")
    if np.any(~np.isfinite(vectors.values) | (vectors.values < 0)):
        raise UsageError("SparkTopicsLDAModel: the features hold negative or non-finite values (term counts "
                         "expected)")
    indptr, indices, values = vectors.nonzero()
    if drop_empty:
        lengths = np.diff(indptr)
        lengths = lengths[lengths > 0]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return DocBlock.from_csr(np.arange(len(indptr) - 1), indptr, indices, values)


def _theta_batches(batches, params, features_index: int, output: str, vocab_size: int, options: EStepSettings):
    """mapInArrow: every column of the batch and the documents' theta (a dense vector; zeros without words)."""
    import pyarrow as pa

    (topic_word, _), alpha = params.value
    K = len(alpha)
    for batch in batches:
        vectors = _Vectors(batch.column(features_index))
        block = _weights(vectors, vocab_size)
        theta = fold_in(block, topic_word, alpha, options.tol, options.max_iter).theta
        theta[np.diff(block.indptr) == 0] = 0.0
        n = vectors.n
        values = pa.ListArray.from_arrays(pa.array(np.arange(0, (n + 1) * K, K, dtype=np.int32)),
                                          pa.array(np.ascontiguousarray(theta).ravel(), pa.float64()))
        vector = pa.StructArray.from_arrays(
            [pa.array(np.ones(n, dtype=np.int8)), pa.nulls(n, pa.int32()), pa.nulls(n, pa.list_(pa.int32())),
             values], names=["type", "size", "indices", "values"], mask=pa.array(~vectors.valid))
        yield pa.RecordBatch.from_arrays(batch.columns + [vector], names=batch.schema.names + [output])


def _bound_batches(batches, params, vocab_size: int, options: EStepSettings):
    """mapInArrow: per batch [sum of the documents' ELBO terms, documents, tokens, alpha statistics (K)] over the
    documents with words (:func:`drivers.evaluation.heldout.heldout_elbo`'s vector), keyed by (partition, batch)."""
    import pyarrow as pa
    from pyspark import TaskContext

    (topic_word, log_scale), alpha = params.value
    partition = TaskContext.get().partitionId()
    for number, batch in enumerate(batches):
        words = _weights(_Vectors(batch.column(0)), vocab_size, drop_empty=True)
        fit = fold_in(words, topic_word, alpha, options.tol, options.max_iter, log_scale)
        terms = np.concatenate([[fit.doc_elbo.sum(), words.n_docs, words.n_tokens], fit.alpha_stats])
        yield pa.RecordBatch.from_arrays(
            [pa.array([partition], pa.int64()), pa.array([number], pa.int64()),
             pa.ListArray.from_arrays(pa.array([0, len(terms)], pa.int32()), pa.array(terms, pa.float64()))],
            names=["partition", "batch", "terms"])


# --------------------------------------------------------------------------- working directories

_TEMPORARY: set = set()


def _remove(path: str) -> None:
    try:
        storage.delete(path)
    except Exception as exc:  # a best effort: a leftover temporary directory is logged, not fatal
        log.warning("could not remove %s: %s", path, exc)


@atexit.register
def _remove_temporary() -> None:
    for path in sorted(_TEMPORARY):
        _remove(path)
    _TEMPORARY.clear()


def _work_directory(spark, checkpoint_dir: str | None) -> str:
    """A new, unique working directory for one fit (see the ``checkpointDir`` param)."""
    sc = spark.sparkContext
    base = checkpoint_dir
    if base is None and sc.master.startswith("local"):
        base = tempfile.gettempdir()
    if base is None:
        base = sc.getCheckpointDir() if hasattr(sc, "getCheckpointDir") else None
    if base is None:
        raise UsageError(f"SparkTopicsLDA on {sc.master}: set checkpointDir (or sc.setCheckpointDir) to a "
                         f"directory every executor can reach (hdfs://..., s3://..., a shared mount)")
    base = _storage_path(base)
    _remove_abandoned(base)
    work = storage.join(base, f"{WORK_PREFIX}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    storage.makedirs(work)
    return work


WORK_PREFIX = "spark-topics-ml-"


def _remove_abandoned(base: str) -> None:
    """Delete the working directories in ``base`` of fits killed before they could (named by host and pid: of this
    host, whose process is gone)."""
    from drivers.store import lease

    for name in storage.list_dir(base):
        host, _, pid = name[len(WORK_PREFIX):].rpartition("-")[0].rpartition("-")
        if name.startswith(WORK_PREFIX) and pid.isdigit() and lease.is_stale({"host": host, "pid": pid}, wait=0):
            log.warning("removing %s, left by a killed fit (pid %s)", storage.join(base, name), pid)
            _remove(storage.join(base, name))


def _storage_path(path: str) -> str:
    """A path as :mod:`drivers.storage` takes it (Hadoop's ``file:/x`` is the local ``/x``)."""
    if path.startswith("file:") and not path.startswith("file://"):
        return "/" + path[len("file:"):].lstrip("/")
    return path


def _spark_path(path: str) -> str:
    """A :mod:`drivers.storage` path as Spark takes it (a local path made absolute)."""
    return path if "://" in path else os.path.abspath(path)


def _absolute(path: str) -> str:
    return path.rstrip("/") if "://" in path else os.path.abspath(path)


def _mark_complete(directory: str) -> None:
    """The completion marker of a model directory (``_SUCCESS``, :mod:`drivers.store.publish`) where this version of
    spark-topics writes one (model directories are read only when marked complete)."""
    try:
        from drivers.store import publish
    except ImportError:
        return
    publish.write_marker(directory, publish.new_token())


def _classic_session(dataset):
    from pyspark.sql.utils import is_remote

    if is_remote() or not hasattr(dataset, "rdd"):
        raise RefusedError("spark-topics' Spark ML stages need classic Spark (the engine runs on RDDs); Spark "
                           "Connect is not supported")
    return dataset.sparkSession

