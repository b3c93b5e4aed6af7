"""The variational reducer (thesis Alg. 3): one topic's lambda from the mappers' statistics.

lambda_k = eta_k + sum over partitions of the statistics (thesis §3.2.3). The
reducer also computes the row normaliser once ("reducer caching", §3.2.6) and
emits exp(E_q[log beta_k]) so mappers need not renormalise, plus the topic's
ELBO terms (eq 3.4). Contributions are summed in partition order, so the result
is bit-for-bit the same whatever order the shuffle delivered them in.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inference.elbo import topic_terms
from inference.mapper import ALPHA_KEY


@dataclass
class TopicUpdate:
    topic: int
    lambda_row: np.ndarray        # (V,)
    exp_elogbeta_row: np.ndarray  # (V,)
    prior_term: float             # E_q[log p(beta_k | eta_k)]
    entropy_term: float           # -Phi(lambda_k)
    elogbeta_sum: float           # sum_v E_q[log beta_kv] (for the symmetric-eta update)


def sum_in_partition_order(contributions, size: int, start: np.ndarray | None = None) -> np.ndarray:
    """Sum sparse ``(partition, ids, values)`` (or dense ``(partition, values)``) contributions."""
    total = np.zeros(size) if start is None else np.array(start, dtype=np.float64, copy=True)
    for contribution in sorted(contributions, key=lambda c: c[0]):
        if len(contribution) == 3:
            _, ids, values = contribution
            total[ids] += values  # ids are a block's distinct terms: no repeats
        else:
            total += contribution[1]
    return total


def split_by_topic(grouped_contributions) -> dict[int, list]:
    """``(partition, topics, ids, values[len(topics), n])`` records -> topic -> [(partition, ids, row)]."""
    by_topic: dict[int, list] = {}
    for partition, topics, ids, values in grouped_contributions:
        for row, topic in enumerate(topics):
            by_topic.setdefault(int(topic), []).append((partition, ids, values[row]))
    return by_topic


def reduce_topic(topic: int, contributions, eta_row: np.ndarray, layout=None) -> TopicUpdate:
    """lambda_k = eta_k + sum_d w_dv phi_dvk, and the topic's ELBO terms (per language slice of ``layout``)."""
    lam = sum_in_partition_order(contributions, eta_row.shape[0], start=eta_row)
    elog, prior_term, entropy_term = topic_terms(lam, eta_row, layout)
    return TopicUpdate(topic, lam, np.exp(elog), prior_term, entropy_term, float(elog.sum()))


def reduce_partition(records, eta_row_of, n_alpha_values: int, layout=None):
    """Reduce every key routed to this reducer partition.

    ``records`` iterates ``(key, contribution)`` as emitted by ``map_block``;
    ``eta_row_of(k)`` gives topic k's prior row. Yields ``(ALPHA_KEY, summed_vector)``
    and a ``TopicUpdate`` per topic.
    """
    alpha_parts, topic_parts = [], []
    for key, contribution in records:
        (alpha_parts if key == ALPHA_KEY else topic_parts).append(contribution)
    if alpha_parts:
        yield ALPHA_KEY, sum_in_partition_order(alpha_parts, n_alpha_values)
    by_topic = split_by_topic(topic_parts)
    for topic in sorted(by_topic):
        yield reduce_topic(topic, by_topic[topic], eta_row_of(topic), layout)
