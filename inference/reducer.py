"""The variational reducer (thesis Alg. 3): one topic's lambda from the mappers' statistics.

The global update rule is a plug-in of the engine: :class:`BatchUpdate` (batch
EM, thesis §3.2.3) sets lambda_k = eta_k + the sum over partitions of the
statistics; an online rule (refresh) blends the previous lambda_k with it. The
reducer also computes the row normaliser once ("reducer caching", §3.2.6) and
emits E_q[log beta_k] (the mappers' log word weights, :mod:`inference.word_weights`) so mappers need not
renormalise, plus the topic's
ELBO terms (eq 3.4) from the topic-word structure (``layout.topic_terms``).
Contributions are summed in partition order, so the result is bit-for-bit the
same whatever order the shuffle delivered them in.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inference.word_weights import check_finite

@dataclass
class TopicUpdate:
    topic: int
    lambda_row: np.ndarray        # (V,)
    log_weight_row: np.ndarray    # (V,) the mappers' log word weights (E_q[log beta_k], or log E_q[beta_k])
    prior_term: float             # E_q[log p(beta_k | eta_k)]
    entropy_term: float           # -Phi(lambda_k)
    elogbeta_sum: float           # sum_v E_q[log beta_kv] (for the symmetric-eta update)

    def terms(self) -> "TopicTerms":
        return TopicTerms(self.topic, self.prior_term, self.entropy_term, self.elogbeta_sum)


@dataclass(frozen=True)
class TopicTerms:
    """What the driver needs of a topic after the reducers: its ELBO terms (eq 3.4) and sum_v E_q[log beta_kv]."""
    topic: int
    prior_term: float
    entropy_term: float
    elogbeta_sum: float


def sum_in_partition_order(contributions, size: int, start: np.ndarray | None = None) -> np.ndarray:
    """Sum sparse ``(partition, ids, values)`` (or dense ``(partition, values)``) contributions."""
    total = np.zeros(size) if start is None else np.array(start, dtype=np.float64, copy=True)
    for contribution in sorted(contributions, key=lambda c: c[0]):
        if len(contribution) == 3:
            _, ids, values = contribution
            total[ids] += values  # ids are distinct terms: no repeats
        else:
            total += contribution[1]
    return total


def split_by_topic(grouped_contributions) -> dict[int, list]:
    """``(partition, topics, ids, values)`` records -> topic -> [(partition, ids, row)]; ``values`` is the dense
    ``(len(topics), len(ids))`` matrix or a ``scipy.sparse`` CSR matrix of that shape (only its non-zeros
    travelled, see :func:`inference.mapper.topic_records`)."""
    by_topic: dict[int, list] = {}
    for record in grouped_contributions:
        for partition, topic, ids, values in _record_rows(record):
            by_topic.setdefault(topic, []).append((partition, ids, values))
    return by_topic


class BatchUpdate:
    """Batch EM's global step: lambda_k = eta_k + sum of the partitions' statistics (thesis §3.2.3).

    An update rule is three steps, so that a reducer adds the partitions' statistics one record at a time, in
    partition order, holding nothing but the running rows: ``initial`` (the row the statistics are added to),
    the additions, ``final`` (lambda_k from the sum)."""

    needs_previous = False       # an online rule reads the previous lambda_k (the reducer's own topic files)

    def initial(self, eta_row: np.ndarray, previous_row: np.ndarray | None = None) -> np.ndarray:
        return np.array(eta_row, dtype=np.float64, copy=True)

    def final(self, total: np.ndarray, eta_row: np.ndarray, previous_row: np.ndarray | None = None) -> np.ndarray:
        return total

    def topic_row(self, eta_row: np.ndarray, contributions, previous_row: np.ndarray | None = None) -> np.ndarray:
        """lambda_k from a list of ``(partition, ids, values)`` contributions."""
        total = sum_in_partition_order(contributions, eta_row.shape[0], start=self.initial(eta_row, previous_row))
        return self.final(total, eta_row, previous_row)


def topic_weights(topic: int, lam: np.ndarray, eta_row: np.ndarray, layout, mean_weights: bool = False) -> TopicUpdate:
    """Topic k's mapper weights and ELBO terms from its lambda row: the log weights E_q[log beta_k], or with
    ``mean_weights`` log E_q[beta_k] (lambda normalised: the word factor of a collapsed sampler). A non-finite
    lambda or weight raises ``FloatingPointError`` naming the topic and the entry."""
    check_finite(lam, f"topic {topic}: lambda", layout.entry_name)
    elog, prior_term, entropy_term = layout.topic_terms(lam, eta_row)
    weights = layout.log_word_weights(lam, elog, mean_weights)
    check_finite(weights, f"topic {topic}: the log word weight", lambda w: f"word id {w}")
    check_finite([prior_term, entropy_term], f"topic {topic}: the ELBO terms", ("prior", "entropy").__getitem__)
    return TopicUpdate(topic, lam, weights, prior_term, entropy_term, float(elog.sum()))


def reduce_topic(topic: int, contributions, eta_row: np.ndarray, layout, update=None,
                 previous_row: np.ndarray | None = None, mean_weights: bool = False) -> TopicUpdate:
    """lambda_k by the update rule (default: batch EM) from a list of ``(partition, ids, values)``, then its
    weights and ELBO terms (:func:`topic_weights`)."""
    records = [(partition, np.array([topic]), ids, np.asarray(values)[None, :])
               for partition, ids, values in sorted(contributions, key=lambda c: c[0])]
    return next(reduce_topics([topic], records, lambda k: eta_row, layout, update,
                              None if previous_row is None else (lambda k: previous_row), mean_weights))


def reduce_topics(topics, sorted_records, eta_row_of, layout, update=None, previous_row_of=None,
                  mean_weights=False):
    """A ``TopicUpdate`` for each of ``topics`` (one reducer's, in that order) from the ``(partition, topics, ids,
    values)`` records routed to the reducer, streamed: each topic's records must come in partition order (the
    engine sorts the shuffle by (record's first topic, partition) and every partition groups topics alike), and
    only the running rows are held. A topic no record mentions gets lambda_k from the prior alone;
    ``eta_row_of(k)`` gives topic k's prior row, ``previous_row_of(k)`` its previous lambda row (online rules)."""
    update = update or BatchUpdate()
    mine = {int(k) for k in topics}
    running, last_partition = {}, {}

    def start(topic):
        previous = previous_row_of(topic) if previous_row_of is not None else None
        return update.initial(layout.accumulator_start(eta_row_of(topic)), previous)

    def row_of(topic):
        if topic not in running:
            if topic not in mine:
                raise KeyError(f"topic {topic} was routed to a reducer that does not own it")
            running[topic] = start(topic)
        return running[topic]

    for record in sorted_records:
        for partition, topic, ids, values in _record_rows(record):
            if last_partition.get(topic, -1) >= partition:
                raise ValueError(f"topic {topic}: statistics of partition {partition} out of partition order")
            last_partition[topic] = partition
            row_of(topic)[ids] += values       # ids: distinct terms, no repeats
    for topic in topics:
        previous = previous_row_of(topic) if previous_row_of is not None else None
        eta_row = eta_row_of(topic)
        total = running.pop(int(topic)) if int(topic) in running else start(int(topic))
        lam = layout.parameters_from(update.final(total, eta_row, previous), eta_row, previous, mean_weights)
        yield topic_weights(topic, lam, eta_row, layout, mean_weights)


def _record_rows(record):
    """``(partition, topic, ids, values)`` of every topic of a ``(partition, topics, ids, values)`` record (dense
    rows or CSR, :func:`split_by_topic`)."""
    partition, topics, ids, values = record
    sparse = hasattr(values, "indptr")
    for row, topic in enumerate(topics):
        if sparse:
            a, b = values.indptr[row], values.indptr[row + 1]
            yield partition, int(topic), ids[values.indices[a:b]], values.data[a:b]
        else:
            yield partition, int(topic), ids, values[row]


class OnlineUpdate(BatchUpdate):
    """Online variational Bayes' global step (Hoffman et al. 2010; thesis §5, eq 5.x): with the batch's
    statistics S_k scaled to the corpus (``scale`` = D / |batch|),

        lambda_k <- (1 - rho_t) lambda_k^(prev) + rho_t (eta_k + scale S_k),   rho_t = (tau0 + t)^-kappa,

    where lambda^(prev) is the previous iteration's lambda and t counts every step the model ever took (kept in
    model.json), so a refreshed model keeps shrinking its steps. ``at(t)`` gives the rule of step t."""

    needs_previous = True

    def __init__(self, tau0: float, kappa: float, scale: float, steps_before: int = 0, step: int | None = None):
        if tau0 < 0 or not 0.5 < kappa <= 1.0 or scale <= 0:
            raise ValueError(f"online updates need tau0 >= 0, 0.5 < kappa <= 1 and a positive scale, got tau0={tau0}, "
                             f"kappa={kappa}, scale={scale}")
        self.tau0, self.kappa, self.scale = float(tau0), float(kappa), float(scale)
        self.steps_before = int(steps_before)            # the model's steps before this run
        self.step = self.steps_before + 1 if step is None else int(step)

    @property
    def rho(self) -> float:
        return step_size(self.tau0, self.kappa, self.step)

    def at(self, iteration: int) -> "OnlineUpdate":
        """The rule of this run's ``iteration`` (1, 2, ...): step steps_before + iteration."""
        return OnlineUpdate(self.tau0, self.kappa, self.scale, self.steps_before, self.steps_before + iteration)

    def final(self, total: np.ndarray, eta_row: np.ndarray, previous_row: np.ndarray | None = None) -> np.ndarray:
        if previous_row is None:
            raise ValueError("an online update needs the previous lambda row")
        rho = self.rho
        return (1.0 - rho) * previous_row + rho * (eta_row + self.scale * (total - eta_row))


def step_size(tau0: float, kappa: float, step: int) -> float:
    """rho_t = (tau0 + t)^-kappa (Hoffman et al. 2010, with t counted from 1)."""
    return float((tau0 + max(int(step), 1)) ** -kappa)
