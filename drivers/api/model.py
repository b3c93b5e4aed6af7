"""``SparkTopicsLDAModel``: the fitted model with MLlib's ``LDAModel`` methods, ``transform`` and the bounds by the
fold-in E-step in the executors, and its persistence (``path/metadata`` + ``path/data``, a model directory)."""
from __future__ import annotations

import logging
from functools import partial

import numpy as np
from pyspark.ml.base import Model
from pyspark.ml.linalg import DenseMatrix, DenseVector, VectorUDT
from pyspark.ml.param import TypeConverters
from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter, MLReadable, MLReader, MLWritable, MLWriter

from drivers import storage
from drivers.api.params import DATA, DATA_FORMAT, SparkTopicsLDAParams
from drivers.api.saved import check_model_stage, stage_metadata
from drivers.api.transform import bound_batches, theta_batches
from drivers.api.work import classic_session, storage_path, save_model_directory
from drivers.families.variational.infer import exp_elogbeta
from drivers.preparation.vectors import check_vector_column
from drivers.store import model_store, topic_model
from inference.elbo import alpha_terms, topic_terms
from inference.errors import UsageError
from inference.heldout import top_word_ids
from inference.mapper import EStepSettings


log = logging.getLogger("spark_topics.ml")


# --------------------------------------------------------------------------- params


# --------------------------------------------------------------------------- the estimator


# --------------------------------------------------------------------------- the model

class SparkTopicsLDAModel(Model, SparkTopicsLDAParams, MLReadable, MLWritable):
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

        spark = classic_session(dataset)
        features, output = self.getFeaturesCol(), self.getTopicDistributionCol()
        check_vector_column(dataset.schema, features, "SparkTopicsLDAModel")
        if output in dataset.columns:
            raise UsageError(f"SparkTopicsLDAModel: output column {output!r} already exists")
        schema = StructType(list(dataset.schema.fields) + [StructField(output, VectorUDT(), True)])
        task = partial(theta_batches, params=self._params_broadcast(spark),
                       features_index=dataset.columns.index(features), output=output, vocab_size=self.vocabSize(),
                       options=EStepSettings())
        return dataset.mapInArrow(task, schema)

    def _document_bound(self, dataset) -> tuple:
        """(sum over documents of their ELBO terms, documents with words, tokens), summed in a fixed order."""
        from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

        spark = classic_session(dataset)
        features = self.getFeaturesCol()
        check_vector_column(dataset.schema, features, "SparkTopicsLDAModel")
        schema = StructType([StructField("partition", LongType(), False), StructField("batch", LongType(), False),
                             StructField("terms", ArrayType(DoubleType(), False), False)])
        task = partial(bound_batches, params=self._params_broadcast(spark), vocab_size=self.vocabSize(),
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
        data = storage.join(storage_path(path), DATA)
        save_model_directory(model, data, rewrite_vocabulary=self.instance._vocabulary_changed)


class _ModelReader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> SparkTopicsLDAModel:
        metadata = stage_metadata(path, self.sparkSession, "SparkTopicsLDAModel.load")
        trained = model_store.load_model(storage.join_inside(storage_path(path), metadata.get("data", DATA),
                                                             "the stage metadata's data"))
        known = bool(metadata.get("vocabularyKnown"))
        instance = self.cls(trained, vocabulary_known=known)
        instance._resetUid(metadata["uid"])
        DefaultParamsReader.getAndSetParams(instance, metadata)
        check_model_stage(metadata, instance, trained, path, "SparkTopicsLDAModel.load")
        if known:     # the vocabulary param is the model's terms (saved once, in data/vocab.parquet)
            instance._set(vocabulary=[str(t) for t in trained.vocab["term"]])
        return instance


# --------------------------------------------------------------------------- DataFrame -> prepared corpus


# --------------------------------------------------------------------------- executor side: vectors in Arrow


# --------------------------------------------------------------------------- working directories
