"""The variational mapper (thesis Alg. 1) for one partition, with its in-mapper combiner.

``map_block`` runs the E-step kernel over every document of a :class:`DocBlock`
and returns the partition's *combined* output as keyed records, ready for the
topic partitioner:

* ``(k, (partition, topics, vocab_ids, values))``: the lambda statistics
  sum_d w_dv phi_dvk over the block's local vocabulary (Alg. 1 line 15, summed
  inside the partition before anything is shuffled) for the ``topics`` one reducer
  owns, keyed by the first of them (so the TopicPartitioner still routes by topic;
  grouping a reducer's topics in one record ships the block's vocabulary once
  per reducer rather than once per topic);
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

from inference.blocks import DocBlock
from inference.estep import estep_documents, initial_gamma

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


def map_block(partition: int, block: DocBlock, gamma: np.ndarray | None, exp_elogbeta: np.ndarray,
              alpha: np.ndarray, settings: EStepSettings, topic_groups=None):
    """E-step over one block; returns ``(new_gamma, topic records, statistics vector)``.

    ``exp_elogbeta`` is the broadcast V x K matrix exp(E_q[log beta]) (rows by
    vocabulary id); ``gamma`` the warm start (None -> alpha + N_d / K);
    ``topic_groups`` the topics of each reducer (default: one group per topic).
    """
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    restart = settings.restart
    if gamma is None:  # the cold start itself: nothing to restart from
        gamma = initial_gamma(block.indptr, block.counts, alpha)
        restart = False
    else:
        gamma = np.array(gamma, dtype=np.float64, copy=True)
    eb_local = np.ascontiguousarray(exp_elogbeta[block.vocab_ids])
    sstats, alpha_stats, doc_elbo, inner, restarts = estep_documents(
        block.indptr, block.local_terms, block.counts, gamma, eb_local, alpha,
        settings.tol, settings.max_iter, True, restart,
        settings.restart_stride, settings.restart_offset, settings.warm_max_iter)
    groups = topic_groups if topic_groups is not None else [[k] for k in range(alpha.shape[0])]
    records = [(topics[0], (partition, np.asarray(topics), block.vocab_ids,
                            np.ascontiguousarray(sstats[:, topics].T)))
               for topics in groups if len(topics)]
    totals = np.array([doc_elbo.sum(), block.n_docs, inner.sum(), block.n_tokens, restarts[0], restarts[1]])
    return gamma, records, np.concatenate([alpha_stats, totals])
