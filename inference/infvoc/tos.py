"""The truncation ordered sets (TOS) of the infinite-vocabulary topic model and their online update (thesis §7.4,
Algorithm 4 lines 6-8). Pure numpy.

Each topic k keeps, in TOS order, its terms rho_k1..rho_kT_k with the Beta parameters (nu1, nu2) of their sticks,
their ranking scores R (7.5 interpolated by 7.8) and the minibatch at which each entered. After the local step
of minibatch i has given topic k's expected counts c_k(w) = sum_{d in S} sum_n phi_dnk delta(w_dn = w),
:func:`update_topic` does, with scale = D / |S| and epsilon_i = (tau0 + i)^-kappa:

1. **expand** (§7.4.1): every word with c_k(w) > 0 and not in the TOS is appended (T_k(w) = T_k + 1, most counts
   first, then by string) with the prior's stick, nu1 = 1 and nu2 = alpha^beta, and R = 0 as its "previous"
   values (with a filter of dropped words, ``dropped_words="bloom"``: the TOS' smallest R for a word the filter
   holds, :func:`returning_ranks`; with ``expand="every"`` the engine has already appended every word of the
   minibatch to every topic, :func:`expand_topic`). The prior Beta(1, alpha^beta) is the value the word's nu
   would have had it sat at the end of the TOS with no counts since the first minibatch (the fixed point of
   (7.6)-(7.7) there), so appending it changes no other number. The thesis says "nu set to 1"; its code starts
   the atoms it knows at (1, alpha^beta) and appends new ones at (1, 1): Beta(1, 1) has mean 1/2, and one step of
   (7.7) leaves nu2 near 1 + eps alpha^beta, so a word that entered in the last minibatches had E[b] up to ~1/eps
   times its evidence's (README, "Infinite vocabulary": new names topped the topics by being new);
2. **nu** (7.6-7.7): nu1_kt += eps (1 + scale c_k(rho_kt) - nu1_kt);
   nu2_kt += eps (alpha^beta + scale sum_{s>t} c_k(rho_ks) - nu2_kt) (the mass after t: every token whose word's
   index is above t, the appended words included);
3. **ranking score** (7.8): R_k(rho) = (1 - eps) R_k(rho) + eps G_0(rho) scale c_k(rho) (the per-minibatch
   estimate r of §7.4.1, i.e. (7.5) on the minibatch).

Every ``delay`` (U) minibatches :func:`reorder_topic` sorts each TOS by R (the words keep their nu and R) and
**contracts** it to its top ``truncation`` (T) words: a dropped word's nu, R and entry are discarded, and if it
comes back it is new again (R from 0; with ``"bloom"`` the word is added to the topic's fixed-size Bloom filter and
comes back with the TOS' smallest R: the thesis' "reset scores for dropped words"). So a topic holds at most T words
after a reordering and T + (the new words of U minibatches) before one, plus a filter of fixed size: memory is
bounded by the stream's rate of new words, not by every word ever seen.

**Discount** (issue 30, session 27; ``discount`` = d, 0 <= d < 1, default 0): the two-parameter (Pitman-Yor)
stick-breaking GEM(d, alpha^beta), V_t ~ Beta(1 - d, alpha^beta + t d), in place of the thesis' GEM(alpha^beta)
(d = 0): the prior of the atom at TOS position t (1-based, at the update) is :func:`prior_sticks`, (7.6)-(7.7)
become nu1_kt += eps (1 - d + scale c_k(rho_kt) - nu1_kt), nu2_kt += eps (alpha^beta + t d + scale sum_{s>t} c -
nu2_kt), and a word enters at its position's prior. An unseen word keeps the pseudo-count 1 - d instead of 1 (at
d = 0.95 about fixvoc's eta = 1/K at K 20). d = 0 is the thesis' update, bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from inference.infvoc import dropped as dropped_words
from inference.infvoc.doc_prior import ALPHA_THETA


@dataclass
class TopicSet:
    """One topic's TOS: arrays in TOS order (position t = array index + 1)."""
    terms: np.ndarray      # (T_k,) object: the strings rho_kt
    nu1: np.ndarray        # (T_k,) float64
    nu2: np.ndarray        # (T_k,) float64
    rank: np.ndarray       # (T_k,) float64: R_k(rho_kt) (7.8)
    since: np.ndarray      # (T_k,) int64: the minibatch at which rho_kt (last) entered the TOS
    dropped: np.ndarray | None = None   # the Bloom filter of the words contracted out (``--dropped-words bloom``)

    def __post_init__(self):
        self.index = pd.Index(self.terms, dtype=object)

    def __len__(self) -> int:
        return int(self.terms.shape[0])

    @classmethod
    def empty(cls, bloom: bool = False) -> "TopicSet":
        return cls(np.empty(0, dtype=object), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64),
                   dropped_words.empty_filter() if bloom else None)


def step_size(minibatch: int, tau0: float, kappa: float) -> float:
    """epsilon_i = (tau0 + i)^-kappa of minibatch i (1, 2, ...)."""
    return float((tau0 + minibatch) ** -kappa)


def prior_sticks(positions, alpha_beta: float, discount: float = 0.0) -> tuple[float, np.ndarray]:
    """The prior Beta(1 - d, alpha^beta + t d) of the sticks at TOS ``positions`` t (1-based): ``(nu1, nu2 array)``
    (GEM(d, alpha^beta); d = 0: Beta(1, alpha^beta), exactly)."""
    return 1.0 - float(discount), float(alpha_beta) + np.asarray(positions, dtype=np.float64) * float(discount)


def update_topic(topic: TopicSet, terms, counts, log_base, scale: float, eps: float, alpha_beta: float,
                 minibatch: int, discount: float = 0.0) -> TopicSet:
    """Expand, update nu (7.6-7.7) and R (7.8) of one topic with its minibatch counts ``counts`` of the words
    ``terms`` (unique strings; ``log_base``: their log G_0); ``discount``: d of GEM(d, alpha^beta). See the module
    docstring."""
    terms = np.asarray(terms, dtype=object)
    counts = np.asarray(counts, dtype=np.float64)
    log_base = np.asarray(log_base, dtype=np.float64)
    keep = counts > 0
    terms, counts, log_base = terms[keep], counts[keep], log_base[keep]
    position = topic.index.get_indexer(terms) if len(topic) else np.full(terms.shape[0], -1)
    new = np.flatnonzero(position < 0)
    new = new[np.lexsort((terms[new].astype(str), -counts[new]))]        # most counts first, then the string
    T_old = len(topic)
    all_terms = np.concatenate([topic.terms, terms[new]])
    prior1, prior2 = prior_sticks(np.arange(1, all_terms.shape[0] + 1), alpha_beta, discount)
    nu1 = np.concatenate([topic.nu1, np.full(new.shape[0], prior1)])
    nu2 = np.concatenate([topic.nu2, prior2[T_old:]])     # the prior: module docstring
    rank = np.concatenate([topic.rank, returning_ranks(topic, terms[new])])
    since = np.concatenate([topic.since, np.full(new.shape[0], minibatch, dtype=np.int64)])
    position[new] = T_old + np.arange(new.shape[0])
    c = np.zeros(all_terms.shape[0])
    c[position] = counts
    after = np.concatenate([np.cumsum(c[::-1])[::-1][1:], [0.0]])         # sum_{s>t} c_s
    nu1 = nu1 + eps * (prior1 + scale * c - nu1)
    nu2 = nu2 + eps * (prior2 + scale * after - nu2)
    g0 = np.zeros(all_terms.shape[0])
    g0[position] = np.exp(log_base)
    rank = (1.0 - eps) * rank + eps * g0 * scale * c
    return TopicSet(all_terms, nu1, nu2, rank, since, topic.dropped)


def expand_topic(topic: TopicSet, words, alpha_beta: float, minibatch: int, discount: float = 0.0) -> TopicSet:
    """The TOS with every word of ``words`` it lacks appended (sorted by string) at the prior of its position
    (:func:`prior_sticks`; d = 0: Beta(1, alpha^beta)),
    R as :func:`returning_ranks` gives, entered at ``minibatch``: ``expand="every"``, done for every topic with the
    minibatch's words before its local step (the thesis' code: a word new to the model is appended to every
    topic's TOS), so a word is in every topic's TOS and (7.4) never applies. Appended at the prior, the words
    change no other number of the update (:func:`update_topic`)."""
    words = np.asarray(sorted({str(w) for w in words}), dtype=object)
    if len(topic) and len(words):
        words = words[topic.index.get_indexer(words) < 0]
    if not len(words):
        return topic
    prior1, prior2 = prior_sticks(len(topic) + np.arange(1, len(words) + 1), alpha_beta, discount)
    return TopicSet(np.concatenate([topic.terms, words]), np.concatenate([topic.nu1, np.full(len(words), prior1)]),
                    np.concatenate([topic.nu2, prior2]),
                    np.concatenate([topic.rank, returning_ranks(topic, words)]),
                    np.concatenate([topic.since, np.full(len(words), minibatch, dtype=np.int64)]), topic.dropped)


def returning_ranks(topic: TopicSet, words) -> np.ndarray:
    """The "previous" R of words entering the TOS: 0 (a new word), or with a filter of dropped words the smallest
    R in the TOS for a word the filter holds (the thesis' reset score, :mod:`inference.infvoc.dropped`)."""
    out = np.zeros(len(words))
    if topic.dropped is not None and len(topic) and len(words):
        out[dropped_words.contains(topic.dropped, words)] = float(topic.rank.min())
    return out


def reorder_topic(topic: TopicSet, truncation: int) -> TopicSet:
    """The TOS sorted by R, highest first (ties keep their order), cut to its first ``truncation`` words (the
    words cut go into the topic's filter of dropped words, if it has one)."""
    ranked = np.argsort(-topic.rank, kind="stable")
    order, cut = ranked[:int(truncation)], ranked[int(truncation):]
    remembered = topic.dropped
    if remembered is not None and cut.size:
        remembered = dropped_words.add(remembered, topic.terms[cut])
    return TopicSet(topic.terms[order], topic.nu1[order], topic.nu2[order], topic.rank[order], topic.since[order],
                    remembered)


@dataclass
class OnlineSettings:
    """The settings of the online update: alpha^beta, T, U, tau0, kappa, D (the corpus size of (7.6))."""
    alpha_beta: float = 1000.0
    truncation: int = 4000
    delay: int = 10
    tau0: float = 64.0
    kappa: float = 0.8
    corpus_size: float = 0.0     # D; 0: the documents seen so far (this minibatch included)
    dropped_words: str = "forget"  # forget: a returning word is new (R from 0); bloom: reset to the TOS' smallest R
    ranking: str = "base"        # R of (7.5)/(7.8): base, G_0(w) x counts (the thesis); counts, G_0 = 1 (its code)
    expand: str = "every"        # every: every topic takes the minibatch's words before its local step (its code;
    #                              the default, issue 30); sampled: a topic takes a word a token of it was sampled
    #                              into (7.4 with G_0; Algorithm 4 as printed). A saved model keeps its own
    reseed: float = 0.0          # > 0: at each reordering a topic whose evidence is below this times the topics'
    #                              mean is re-seeded from a document of the minibatch (inference.infvoc.reseed)
    reseed_draw: str = "words"   # the re-seed documents' draw: words, by distinct words (h30); uniform (h30b)
    reseed_against: str = "mean"  # reseed's fraction of: mean, the topics' mean evidence; document, one average
    #                              document of the minibatch's (D/|S| x its mean tokens; h30c)
    refresh_weight: str = "schedule"  # a refresh's eps: schedule, eps_i of the continued counter; share, the batch
    #                              weighs its share of the documents seen (share_step; issue 30, session 26)
    discount: float = 0.0        # d of the sticks' GEM(d, alpha^beta) (prior_sticks; issue 30, session 27)
    alpha_theta: str = "fixed"   # the document-topic prior: fixed, 1/K; fit, learned online (infvoc.doc_prior)

    def check(self) -> None:
        if not self.alpha_beta > 0:
            raise ValueError("alpha^beta must be positive")
        if self.truncation < 1 or self.delay < 1:
            raise ValueError("the truncation T and the reordering delay U must be at least 1")
        if not self.corpus_size >= 0:
            raise ValueError("the corpus size D must be >= 0 (0: the documents seen so far)")
        if not 0.5 < self.kappa <= 1.0:
            raise ValueError("kappa must be in (0.5, 1]")
        if self.tau0 < 0:
            raise ValueError("tau0 must be >= 0")
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking: one of {', '.join(RANKINGS)}")
        if self.dropped_words not in DROPPED_WORDS:
            raise ValueError(f"dropped words: one of {', '.join(DROPPED_WORDS)}")
        if self.expand not in EXPANSIONS:
            raise ValueError(f"expand: one of {', '.join(EXPANSIONS)}")
        if not 0.0 <= self.reseed < 1.0:
            raise ValueError("reseed: a fraction of the topics' mean evidence in [0, 1) (0: off)")
        if self.reseed_draw not in RESEED_DRAWS:
            raise ValueError(f"reseed draw: one of {', '.join(RESEED_DRAWS)}")
        if self.reseed_against not in RESEED_AGAINST:
            raise ValueError(f"reseed against: one of {', '.join(RESEED_AGAINST)}")
        if self.refresh_weight not in REFRESH_WEIGHTS:
            raise ValueError(f"refresh weight: one of {', '.join(REFRESH_WEIGHTS)}")
        if not 0.0 <= self.discount < 1.0:
            raise ValueError("discount: d of the sticks' GEM(d, alpha^beta) must be in [0, 1)")
        if self.alpha_theta not in ALPHA_THETA:
            raise ValueError(f"alpha theta: one of {', '.join(ALPHA_THETA)}")


#: how a refresh weighs the model before it against its batch (``OnlineSettings.refresh_weight``, :func:`share_step`)
REFRESH_WEIGHTS = ("schedule", "share")


def share_step(batch_documents: int, documents_seen: int, steps: int) -> float:
    """The constant eps of a refresh's ``steps`` online steps under ``refresh_weight="share"``: each step keeps
    1 - eps of the topics before it (7.6-7.8), so after all of them the model before the batch keeps
    (1 - eps)^steps = 1 - n/D of its weight and the batch has n/D, its share of the ``documents_seen`` D (the
    batch's n documents included). With the schedule's eps_i the batch's weight is 1 - prod(1 - eps_i): 0.87-0.95
    over the 60 steps of ``--passes auto``, whatever its share (README, "Why the joined stream's whole-stream
    NPMI trails fixvoc's")."""
    share = min(1.0, max(0.0, float(batch_documents) / max(float(documents_seen), 1.0)))
    if share >= 1.0:
        return 1.0
    return float(1.0 - (1.0 - share) ** (1.0 / max(int(steps), 1)))


#: how the re-seed documents are drawn (``OnlineSettings.reseed_draw``, inference.infvoc.reseed)
RESEED_DRAWS = ("words", "uniform")
#: what the re-seed's fraction is of (``OnlineSettings.reseed_against``, inference.infvoc.reseed)
RESEED_AGAINST = ("mean", "document")


#: which topics a word of a minibatch enters (``OnlineSettings.expand``)
EXPANSIONS = ("sampled", "every")


#: the ranking score's weight of a word (``OnlineSettings.ranking``)
RANKINGS = ("base", "counts")


def ranking_log_base(log_base, settings: OnlineSettings) -> np.ndarray:
    """log G_0 as the ranking score (7.5) weighs the words: as given, or 0 (G_0 = 1) with ``ranking="counts"``."""
    log_base = np.asarray(log_base, dtype=np.float64)
    return log_base if settings.ranking == "base" else np.zeros_like(log_base)


#: what the contraction does with the words it drops (``OnlineSettings.dropped_words``)
DROPPED_WORDS = ("forget", "bloom")


def with_filters(sets: list, settings: OnlineSettings) -> list:
    """``sets`` with an empty filter of dropped words where ``settings`` remembers them and a topic has none."""
    if settings.dropped_words != "bloom":
        return sets
    return [s if s.dropped is not None else TopicSet(s.terms, s.nu1, s.nu2, s.rank, s.since,
                                                     dropped_words.empty_filter()) for s in sets]


def update_sets(sets: list, topic_counts: dict, log_base: dict, batch_docs: int, documents_seen: int,
                minibatch: int, settings: OnlineSettings) -> list:
    """Algorithm 4 lines 6-8 for every topic: ``topic_counts[k] = (terms, counts)`` of minibatch ``minibatch``
    (``batch_docs`` documents; ``documents_seen`` including them), ``log_base``: word -> log G_0."""
    D = settings.corpus_size or documents_seen
    scale = float(D) / max(int(batch_docs), 1)
    eps = step_size(minibatch, settings.tau0, settings.kappa)
    out = []
    for k, topic in enumerate(sets):
        terms, counts = topic_counts.get(k, (np.empty(0, dtype=object), np.zeros(0)))
        logs = np.array([log_base[w] for w in terms], dtype=np.float64)
        topic = update_topic(topic, terms, counts, ranking_log_base(logs, settings), scale, eps, settings.alpha_beta,
                             minibatch, settings.discount)
        if minibatch % settings.delay == 0:
            topic = reorder_topic(topic, settings.truncation)
        out.append(topic)
    return out
