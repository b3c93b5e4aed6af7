"""Re-seeding a starved topic of the infinite-vocabulary model (issue 30; not in the thesis). Pure numpy.

A topic's *evidence* is sum_t (nu1_kt - (1 - d)): the scaled counts its sticks hold beyond the prior
Beta(1 - d, alpha^beta + t d) (d the discount, :func:`inference.infvoc.tos.prior_sticks`; 0: Beta(1, alpha^beta))
((7.6)-(7.7) average them over the last ~1/eps minibatches). Algorithm 4 leaves a topic whose evidence stays near
the prior as it is: its nu decay to the prior and E[beta] (8.6) reads its stale TOS order through the stick's
prior alone (README, "What fixvoc's top words have"). With ``reseed`` = f > 0, at every reordering (every U
minibatches) each topic whose evidence is below f times the topics' mean is replaced by the topic that one update
(7.6)-(7.8) with eps = 1 makes from the empty TOS with one document of the minibatch as if it were the minibatch
(scale D/|S|): nu1 = 1 - d + scale c(w), nu2 = alpha^beta + t d + scale sum_{s>t} c(rho_s), R = G_0(w) scale c(w),
sorted by R (:func:`seeded_topic`). One document per starved topic, drawn without replacement among the non-empty
documents, with probability proportional to its distinct words (``draw="words"``) or uniformly (``draw="uniform"``),
seeded by (seed, minibatch): the same seed gives the same model.

``against="document"`` (session 25, h30c): the fraction is of one average document's evidence, (D/|S|) x the mean
tokens of the minibatch's documents, instead of the topics' mean, which is about |S|/K such documents: a topic is
starved when it is given less than ``f`` of a document per minibatch. Against the mean, a stream whose evidence a
few topics hold (the changelogs' boilerplate) has half its topics below 0.25 x the mean, and a seed of a document
of n tokens starts at about K n / (|S| x mean n) of the mean (0.08 for an average changelog entry, K 20, |S| 256):
starved at birth, re-seeded again at the next reordering (``tests/bench/infvoc_reseeds.py``).
"""
from __future__ import annotations

import numpy as np

from inference.infvoc.tos import TopicSet, reorder_topic, update_topic

#: the seed stream of the draws (distinct from the local step's)
RESEED_STREAM = 0x5EED


def evidence(sets: list, discount: float = 0.0) -> np.ndarray:
    """(K,) sum_t (nu1_kt - (1 - d)) of every topic (d: the sticks' ``discount``)."""
    return np.array([float(np.sum(ts.nu1 - (1.0 - discount))) if len(ts) else 0.0 for ts in sets])


def starved(sets: list, below: float, reference: float | None = None, discount: float = 0.0) -> np.ndarray:
    """The topics whose evidence is below ``below`` times ``reference`` (default: the mean over topics; none when
    all are at the prior)."""
    e = evidence(sets, discount)
    if below <= 0 or not e.mean() > 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(e < below * (e.mean() if reference is None else reference))


def seeded_topic(tokens, log_base, scale: float, alpha_beta: float, minibatch: int, truncation: int,
                 dropped=None, discount: float = 0.0) -> TopicSet:
    """The TOS of one update with eps = 1 from the empty TOS with a document's ``tokens`` (strings) as the counts
    (``log_base(terms)``: log G_0 as the ranking weighs it), reordered by R and cut to ``truncation``."""
    terms, counts = np.unique(np.asarray(tokens, dtype=object).astype(str), return_counts=True)
    terms = terms.astype(object)
    empty = TopicSet(np.empty(0, dtype=object), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64),
                     dropped)
    topic = update_topic(empty, terms, counts.astype(np.float64), log_base(terms), scale, 1.0, alpha_beta, minibatch,
                         discount)
    return reorder_topic(topic, truncation)


def reseed_starved(sets: list, documents: list, log_base, below: float, scale: float, alpha_beta: float,
                   truncation: int, seed: int, minibatch: int, draw: str = "words",
                   against: str = "mean", nominal: int | None = None, discount: float = 0.0) -> tuple[list, list]:
    """(``sets`` with every starved topic re-seeded from one of ``documents`` [(doc_id, tokens)], the
    (topic, doc_id) pairs re-seeded). ``against``: mean (the topics' mean evidence) or document (D/|S| x the
    documents' mean tokens, |S| the stream's minibatch size ``nominal``: ``scale`` = D/|documents| x |documents| /
    nominal, so a pass's short last minibatch does not inflate it; None: |documents|); ``discount``: the sticks' d."""
    if against == "document":
        size = max(len(documents), int(nominal or 0), 1)
        reference = scale * len(documents) / size * float(np.mean([len(tokens) for _, tokens in documents])) \
            if documents else 0.0
    elif against == "mean":
        reference = None
    else:
        raise ValueError(f"reseed against: mean or document, not {against!r}")
    topics = starved(sets, below, reference, discount)
    sizes = np.array([len(set(tokens)) for _, tokens in documents], dtype=np.float64)
    if draw == "uniform":
        sizes = (sizes > 0).astype(np.float64)
    elif draw != "words":
        raise ValueError(f"reseed draw: words or uniform, not {draw!r}")
    n = min(topics.size, int(np.count_nonzero(sizes)))
    if n == 0:
        return sets, []
    generator = np.random.default_rng([int(seed), int(minibatch), RESEED_STREAM])
    chosen = generator.choice(len(documents), size=n, replace=False, p=sizes / sizes.sum())
    out = list(sets)
    pairs = []
    for k, d in zip(topics[:n], chosen):
        doc_id, tokens = documents[int(d)]
        out[k] = seeded_topic(tokens, log_base, scale, alpha_beta, minibatch, truncation, sets[k].dropped, discount)
        pairs.append((int(k), str(doc_id)))
    return out, pairs
