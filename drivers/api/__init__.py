"""The Spark ML API: an Estimator and a Model for spark-topics LDA: ``Pipeline([... CountVectorizer, SparkTopicsLDA])``.

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

Modules: ``params`` (the params and their constraints), ``estimator`` (``SparkTopicsLDA``), ``model``
(``SparkTopicsLDAModel`` and its persistence), ``transform`` (the executor side), ``work`` (working directories,
paths, saving a model directory), ``saved`` (reading a saved stage); the corpus written from the features column:
:mod:`drivers.preparation.vectors`.
"""
from drivers.api.estimator import SparkTopicsLDA  # noqa: F401 (the API)
from drivers.api.model import SparkTopicsLDAModel  # noqa: F401
