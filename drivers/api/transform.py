"""The executor side of the Spark ML model: a batch of feature vectors as a DocBlock, the fold-in E-step's theta of
every row (``transform``) and the documents' bounds (``logLikelihood``, ``logPerplexity``)."""
from __future__ import annotations

import numpy as np

from drivers.preparation.vectors import Vectors
from inference.blocks import DocBlock
from inference.errors import UsageError
from inference.heldout import fold_in
from inference.mapper import EStepSettings


def weights_block(vectors: Vectors, vocab_size: int, drop_empty: bool = False) -> DocBlock:
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


def theta_batches(batches, params, features_index: int, output: str, vocab_size: int, options: EStepSettings):
    """mapInArrow: every column of the batch and the documents' theta (a dense vector; zeros without words)."""
    import pyarrow as pa

    (topic_word, _), alpha = params.value
    K = len(alpha)
    for batch in batches:
        vectors = Vectors(batch.column(features_index))
        block = weights_block(vectors, vocab_size)
        theta = fold_in(block, topic_word, alpha, options.tol, options.max_iter).theta
        theta[np.diff(block.indptr) == 0] = 0.0
        n = vectors.n
        values = pa.ListArray.from_arrays(pa.array(np.arange(0, (n + 1) * K, K, dtype=np.int32)),
                                          pa.array(np.ascontiguousarray(theta).ravel(), pa.float64()))
        vector = pa.StructArray.from_arrays(
            [pa.array(np.ones(n, dtype=np.int8)), pa.nulls(n, pa.int32()), pa.nulls(n, pa.list_(pa.int32())),
             values], names=["type", "size", "indices", "values"], mask=pa.array(~vectors.valid))
        yield pa.RecordBatch.from_arrays(batch.columns + [vector], names=batch.schema.names + [output])


def bound_batches(batches, params, vocab_size: int, options: EStepSettings):
    """mapInArrow: per batch [sum of the documents' ELBO terms, documents, tokens, alpha statistics (K)] over the
    documents with words (:func:`drivers.evaluation.heldout.heldout_elbo`'s vector), keyed by (partition, batch)."""
    import pyarrow as pa
    from pyspark import TaskContext

    (topic_word, log_scale), alpha = params.value
    partition = TaskContext.get().partitionId()
    for number, batch in enumerate(batches):
        words = weights_block(Vectors(batch.column(0)), vocab_size, drop_empty=True)
        fit = fold_in(words, topic_word, alpha, options.tol, options.max_iter, log_scale)
        terms = np.concatenate([[fit.doc_elbo.sum(), words.n_docs, words.n_tokens], fit.alpha_stats])
        yield pa.RecordBatch.from_arrays(
            [pa.array([partition], pa.int64()), pa.array([number], pa.int64()),
             pa.ListArray.from_arrays(pa.array([0, len(terms)], pa.int32()), pa.array(terms, pa.float64()))],
            names=["partition", "batch", "terms"])
