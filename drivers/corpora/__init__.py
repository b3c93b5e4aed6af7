"""Prepared corpora as cached RDDs of ``(partition, block)``, one reader per corpus kind.

* :mod:`drivers.corpora.bow`: a bag-of-words corpus -> ``DocBlock`` (the variational engine's unit);
* :mod:`drivers.corpora.segmented`: ordered segments (or a bag of words as one segment per document)
  -> ``SegmentedBlock`` (the Gibbs engine's unit), with a deterministic held-out split;
* :mod:`drivers.corpora.aligned`: aligned tuples of a multilingual corpus -> ``DocBlock`` over the
  concatenated vocabularies.

What a corpus directory holds (:mod:`drivers.corpora.files`) is written by ``spark-topics prepare``
(:mod:`drivers.preparation`). Documents go to partitions by a stable hash of their id and are sorted by id
inside a partition, so blocks, and models, do not depend on the cluster.
"""
