"""``prepare`` in this process, without Spark, for small inputs (the automatic choice of :mod:`drivers.preparation.corpus`)."""
