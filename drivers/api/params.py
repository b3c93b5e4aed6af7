"""The params of the Spark ML stages, MLlib's names where they apply (``k``, ``maxIter``, ``docConcentration``, ...)
and their declared constraints, checked when the estimator fits."""
from __future__ import annotations

import numpy as np
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasCheckpointInterval, HasFeaturesCol, HasMaxIter, HasSeed, HasTol

from drivers import registry
from inference.constraints import AT_LEAST_1, NON_NEGATIVE, POSITIVE, TOPICS, StrOptions


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
#: the format of a saved model's ``data/`` (in its metadata)
DATA_FORMAT = "spark-topics model directory"
SEED_MODULUS = 2 ** 63


def given_params(kwargs: dict) -> dict:
    """The keyword arguments that set a param (None leaves an optional param unset)."""
    return {name: value for name, value in kwargs.items() if value is not None}


def _to_doc_concentration(value):
    """docConcentration as MLlib types it (a list of floats); a single number is accepted too."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return [float(value)]
    return TypeConverters.toListFloat(value)


class SparkTopicsLDAParams(HasFeaturesCol, HasMaxIter, HasSeed, HasCheckpointInterval, HasTol):
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
