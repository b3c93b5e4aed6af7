"""Raw input -> a prepared corpus (``spark-topics prepare``, the Spark ML API, ``refresh``): tokens and stop
words (``text``), segments, aligned languages, the corpus format written whole (``corpus``)."""
