"""The Spark ML API: ``SparkTopicsLDA`` (a ``pyspark.ml`` Estimator) and ``SparkTopicsLDAModel``."""
