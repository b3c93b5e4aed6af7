"""``SparkTopicsLDA``: the Estimator; ``fit`` writes the features column as a prepared corpus and trains ``lda`` on it
exactly as ``spark-topics train`` does."""
from __future__ import annotations

import logging

from pyspark import keyword_only
from pyspark.ml.base import Estimator
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from drivers import registry, storage
from drivers.api.model import SparkTopicsLDAModel
from drivers.api.params import DEFAULT_INFERENCE, PARAM_CONSTRAINTS, SEED_MODULUS, SparkTopicsLDAParams, given_params
from drivers.api.saved import CheckedParamsReader
from drivers.api.work import TEMPORARY_DIRECTORIES, classic_session, mark_complete, remove_quietly, work_directory
from drivers.families import TrainRequest
from drivers.families.variational.shared import VariationalTraining
from drivers.preparation.vectors import attribute_names, check_vector_column, write_corpus
from drivers.store import model_store
from inference.constraints import validate
from inference.errors import UsageError

log = logging.getLogger("spark_topics.ml")


class SparkTopicsLDA(Estimator, SparkTopicsLDAParams, DefaultParamsReadable, DefaultParamsWritable):
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
        self._set(**given_params(self._input_kwargs))

    @keyword_only
    def setParams(self, *, featuresCol="features", topicDistributionCol="topicDistribution", k=10, maxIter=20,
                  seed=0, tol=1e-5, checkpointInterval=10, docConcentration=None, topicConcentration=None,
                  optimizeDocConcentration=True, inference=DEFAULT_INFERENCE, vocabulary=None, idCol=None,
                  numPartitions=None, checkpointDir=None):
        return self._set(**given_params(self._input_kwargs))

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
        spark = classic_session(dataset)
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
        work = work_directory(spark, self._optional(self.checkpointDir))
        corpus_dir, model_dir = storage.join(work, "corpus"), storage.join(work, "model")
        TEMPORARY_DIRECTORIES.add(work)
        try:
            summary = write_corpus(spark, dataset, features, corpus_dir, id_col, vocabulary, settings["topics"])
            request = TrainRequest(model="lda", corpus=corpus_dir, output=model_dir, **settings)
            spec = registry.model("lda")
            spec.family_object().train(spark, spec, request)
            mark_complete(model_dir)
            trained = model_store.load_model(model_dir)
        except BaseException:
            remove_quietly(work)
            raise
        remove_quietly(corpus_dir)
        log.info("SparkTopicsLDA: K=%d, V=%d, %d documents, %d tokens, %d iterations; model files in %s",
                 trained.num_topics, len(trained.vocab), summary["documents"], summary["tokens"],
                 int(trained.meta["iterations"]), model_dir)
        model = self._copyValues(SparkTopicsLDAModel(trained, vocabulary_known=vocabulary is not None))
        if vocabulary is not None:
            model._set(vocabulary=list(vocabulary))
        return model
