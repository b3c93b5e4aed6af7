"""The variational mapper (thesis Alg. 1) for one partition, with its in-mapper combiner.

``map_block`` runs the E-step kernel over every document of a :class:`DocBlock`
and returns the partition's *combined* output as keyed records, ready for the
topic partitioner:

* ``(k, (partition, topics, vocab_ids, values))``: the lambda statistics
  sum_d w_dv phi_dvk over the block's local vocabulary (Alg. 1 line 15, summed
  inside the partition before anything is shuffled) for the ``topics`` one reducer
  owns, keyed by the first of them (so the TopicPartitioner still routes by topic;
  grouping a reducer's topics in one record ships the block's vocabulary once
  per reducer rather than once per topic); ``values`` is dense, or a CSR matrix
  of its non-zeros when that is smaller (the hybrid step's sampled counts);
* the partition's statistics vector: the alpha statistics of eq (3.3) (Alg. 1
  line 17, key <Delta, k>) followed by the partition totals (:data:`TOTALS`:
  document ELBO terms, documents, inner iterations, tokens, restarts); the engine
  sends it under the partitioner's reserved key
  (:data:`partitioners.topic.STATISTICS_KEY`).

No Spark here: the engine calls it inside ``mapPartitionsWithIndex``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scipy import sparse

from inference.blocks import DocBlock
from inference.estep import estep_documents, initial_gamma
from inference.hybrid import block_tokens, document_seeds, hybrid_documents, sampling_weights, word_log_joint
from inference.word_weights import check_finite, document_offsets, scale_by_word_maximum

#: at most this many statistics in one shuffled record (16 MB of float64): the engine groups topics so that no
#: record, and no buffer of Spark's, grows with K
RECORD_ENTRIES = 1 << 21
# layout of the tail of the statistics vector, after the K alpha statistics
TOTALS = ("doc_elbo", "documents", "inner_iterations", "tokens", "restarts_kept", "restarts_tried")


@dataclass
class EStepSettings:
    tol: float = 1e-3
    max_iter: int = 100
    restart: bool = False   # also fit documents from a cold start, keep the better fit (see estep)
    restart_stride: int = 1  # ... only every stride-th document, starting at restart_offset
    restart_offset: int = 0
    warm_max_iter: int = -1  # passes of the warm fit when restarting (-1: max_iter; 0: compare the start)


def map_block(partition: int, block: DocBlock, gamma: np.ndarray | None, log_weights: np.ndarray,
              alpha: np.ndarray, settings: EStepSettings, topic_groups=None):
    """E-step over one block; returns ``(new_gamma, topic records, statistics vector)``.

    ``log_weights`` is E_q[log beta] of the block's vocabulary, U x K (row u:
    ``block.vocab_ids[u]``), exponentiated scaled by each word's maximum (:mod:`inference.word_weights`);
    ``gamma`` the warm start (None -> alpha + N_d / K); ``topic_groups`` the topics of each
    reducer (default: one group per topic). A non-finite result raises ``FloatingPointError`` naming
    the partition and the document.
    """
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    restart = settings.restart
    if gamma is None:  # the cold start itself: nothing to restart from
        gamma = initial_gamma(block.indptr, block.counts, alpha)
        restart = False
    else:
        gamma = np.array(gamma, dtype=np.float64, copy=True)
    eb_local, scale = local_weights(block, log_weights)
    sstats, alpha_stats, doc_elbo, inner, restarts = estep_documents(
        block.indptr, block.local_terms, block.counts, gamma, eb_local, alpha,
        settings.tol, settings.max_iter, True, restart,
        settings.restart_stride, settings.restart_offset, settings.warm_max_iter)
    doc_elbo += document_offsets(block.indptr, block.local_terms, block.counts, scale)
    check_documents(partition, block, doc_elbo, "ELBO terms")
    totals = np.array([doc_elbo.sum(), block.n_docs, inner.sum(), block.n_tokens, restarts[0], restarts[1]])
    return gamma, topic_records(partition, block, sstats, topic_groups), np.concatenate([alpha_stats, totals])


def local_weights(block: DocBlock, log_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (U, K) word weights of the block's vocabulary as the kernels take them, from their logs: each word's
    row scaled to a maximum of 1, and the (U,) logs of the scales (:func:`inference.word_weights.scale_by_word_maximum`)."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    if log_weights.shape[0] != len(block.vocab_ids):
        raise ValueError(f"word weights for {log_weights.shape[0]} words, the block has {len(block.vocab_ids)}")
    return scale_by_word_maximum(log_weights, topic_axis=1)


def check_documents(partition: int, block: DocBlock, doc_values: np.ndarray, what: str) -> None:
    """Raise ``FloatingPointError`` at the first document whose ``what`` is not finite."""
    check_finite(doc_values, f"partition {partition}: the {what}", lambda d: f"document {block.doc_ids[d]!r}")


def topic_records(partition: int, block: DocBlock, sstats: np.ndarray, topic_groups=None):
    """The in-mapper combiner's output: one ``(first topic, (partition, topics, vocab_ids, values))`` record per
    reducer's topic group (default: one group per topic) from the block's U x K statistics; ``values`` travels
    as a CSR matrix of its non-zeros when that is smaller than the dense rows (sums are unchanged: the entries
    left out are zeros)."""
    groups = topic_groups if topic_groups is not None else [[k] for k in range(sstats.shape[1])]
    return ((topics[0], (partition, np.asarray(topics), block.vocab_ids, compact(sstats[:, topics].T)))
            for topics in groups if len(topics))     # made as Spark takes them: one record's copy at a time


def compact(values: np.ndarray):
    """A (k, U) block of statistics as dense rows, or as CSR when its non-zeros take less room (12 bytes each
    against 8 per entry)."""
    values = np.ascontiguousarray(values)
    nonzeros = np.count_nonzero(values)
    return sparse.csr_matrix(values) if 3 * nonzeros < 2 * values.size else values


def hybrid_block(partition: int, block: DocBlock, z: np.ndarray | None, log_weights: np.ndarray,
                 alpha: np.ndarray, seed: int, iteration: int, burn_in: int, samples: int, topic_groups=None,
                 dense: bool = False, average_digammas: bool = False):
    """The hybrid local step over one block (:mod:`inference.hybrid`), ``log_weights`` the (U, K) log word factor
    of (4.9) for the block's vocabulary: ``(new z, topic records, statistics)``
    with the statistics vector laid out as the E-step's (alpha statistics, then :data:`TOTALS`: the sampled
    log joint in place of the document ELBO terms, sweeps per document in place of inner iterations)."""
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    tokens = block_tokens(block.counts)
    initialise = z is None
    z = np.zeros(tokens, dtype=np.int32) if initialise else np.array(z, dtype=np.int32, copy=True)
    if z.shape != (tokens,):
        raise ValueError(f"partition {partition}: the sampler state has {z.shape[0]} tokens, the block {tokens}")
    eb_local, scale = local_weights(block, log_weights)
    seeds = document_seeds(block.doc_ids, seed, iteration)
    sstats, alpha_stats, doc_log_joint, _ = hybrid_documents(
        block.indptr, block.local_terms, block.counts, z, sampling_weights(eb_local), alpha, burn_in, samples,
        seeds, initialise, dense, average_digammas)
    check_documents(partition, block, doc_log_joint, "sampled log joint")
    log_joint = doc_log_joint.sum() + word_log_joint(sstats, eb_local) + float(np.dot(sstats.sum(axis=1), scale))
    totals = np.array([log_joint, block.n_docs, (burn_in + samples) * block.n_docs, block.n_tokens, 0, 0])
    return z, topic_records(partition, block, sstats, topic_groups), np.concatenate([alpha_stats, totals])


def doc_topic_counts(block: DocBlock, z: np.ndarray, num_topics: int) -> np.ndarray:
    """(D, K) document-topic counts of the sampler state ``z`` (tokens in CSR order)."""
    doc_of_token = np.repeat(np.repeat(np.arange(block.n_docs), np.diff(block.indptr)),
                             block.counts.astype(np.int64))
    out = np.zeros((block.n_docs, num_topics))
    np.add.at(out, (doc_of_token, z), 1.0)
    return out
