"""The Pitman-Yor discount d of the infinite-vocabulary topics' sticks (issue 30, session 27): GEM(d, alpha^beta),
V_t ~ Beta(1 - d, alpha^beta + t d), in the online update (7.6)-(7.7), the appended words, the fixed point and the
re-seed's evidence; d = 0 is the thesis' update bit for bit."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inference.infvoc.reseed import evidence, seeded_topic
from inference.infvoc.tos import (OnlineSettings, TopicSet, expand_topic, reorder_topic, step_size, update_sets,
                                  update_topic)

G0 = {"apple": 1e-3, "pear": 5e-4, "fig": 2e-3, "kiwi": 1e-4, "lime": 3e-4, "plum": 8e-4}
#: five minibatches of one topic's counts: new words, a reordering after 2 and 4 (U = 2) cutting to T = 3, so
#: words are dropped (and one comes back as new)
STREAM = [{"apple": 2.0, "pear": 0.5}, {"fig": 1.5, "apple": 0.3, "kiwi": 0.8}, {"pear": 0.6, "lime": 2.5},
          {"plum": 1.0, "fig": 0.2, "apple": 0.1}, {"kiwi": 3.0, "pear": 0.4}]


def pitman_yor_stream(stream, d: float, alpha_beta: float, D: float, S: int, tau0: float, kappa: float,
                      delay: int, truncation: int):
    """The PY update per atom, a dict per word: append new words (most counts first, then the string) at the prior
    of their position t, Beta(1 - d, alpha^beta + t d); nu1 += eps (1 - d + D/S c - nu1), nu2 += eps (alpha^beta +
    t d + D/S sum_{s>t} c - nu2); R += eps (G_0 D/S c - R); every ``delay`` minibatches sort by R and keep
    ``truncation``. Yields (terms, nu1, nu2, R) after each minibatch."""
    tos, n1, n2, r = [], {}, {}, {}
    for i, counts in enumerate(stream, 1):
        for w in sorted((w for w in counts if w not in tos), key=lambda w: (-counts[w], w)):
            tos.append(w)
            n1[w], n2[w], r[w] = 1.0 - d, alpha_beta + len(tos) * d, 0.0
        eps = step_size(i, tau0, kappa)
        for t, w in enumerate(tos, 1):
            after = sum(counts.get(v, 0.0) for v in tos[t:])
            n1[w] += eps * (1.0 - d + D / S * counts.get(w, 0.0) - n1[w])
            n2[w] += eps * (alpha_beta + t * d + D / S * after - n2[w])
            r[w] = (1 - eps) * r[w] + eps * G0[w] * D / S * counts.get(w, 0.0)
        if i % delay == 0:
            tos = sorted(tos, key=lambda w: -r[w])[:truncation]
        yield list(tos), [n1[w] for w in tos], [n2[w] for w in tos], [r[w] for w in tos]


def run_sets(settings, stream=STREAM):
    sets = [TopicSet.empty()]
    for i, counts in enumerate(stream, 1):
        terms = np.array(sorted(counts), dtype=object)
        sets = update_sets(sets, {0: (terms, np.array([counts[w] for w in terms]))},
                           {w: math.log(G0[w]) for w in terms}, batch_docs=2, documents_seen=2 * i, minibatch=i,
                           settings=settings)
        yield sets[0]


@pytest.mark.parametrize("d", [0.0, 0.6, 0.95])
def test_the_update_matches_the_pitman_yor_equations_per_atom(d):
    settings = OnlineSettings(alpha_beta=7.0, truncation=3, delay=2, tau0=2.0, kappa=0.7, corpus_size=20,
                              discount=d)
    reference = pitman_yor_stream(STREAM, d, 7.0, 20.0, 2, 2.0, 0.7, 2, 3)
    dropped = False
    for i, (got, (terms, nu1, nu2, rank)) in enumerate(zip(run_sets(settings), reference), 1):
        assert list(got.terms) == terms
        np.testing.assert_allclose(got.nu1, nu1, rtol=1e-12)
        np.testing.assert_allclose(got.nu2, nu2, rtol=1e-12)
        np.testing.assert_allclose(got.rank, rank, rtol=1e-12)
        dropped |= i % 2 == 0 and len(terms) == 3
    assert dropped and set(got.terms[got.since == 5]) == {"kiwi", "pear"}    # cut at 4, back as new words at 5


def thesis_update(topic: TopicSet, terms, counts, log_base, scale, eps, alpha_beta, minibatch) -> TopicSet:
    """The update before the discount (the thesis' GEM(alpha^beta), tos.update_topic at 0e6c0a3), verbatim."""
    keep = counts > 0
    terms, counts, log_base = terms[keep], counts[keep], log_base[keep]
    position = topic.index.get_indexer(terms) if len(topic) else np.full(terms.shape[0], -1)
    new = np.flatnonzero(position < 0)
    new = new[np.lexsort((terms[new].astype(str), -counts[new]))]
    T_old = len(topic)
    all_terms = np.concatenate([topic.terms, terms[new]])
    nu1 = np.concatenate([topic.nu1, np.ones(new.shape[0])])
    nu2 = np.concatenate([topic.nu2, np.full(new.shape[0], float(alpha_beta))])
    rank = np.concatenate([topic.rank, np.zeros(new.shape[0])])
    since = np.concatenate([topic.since, np.full(new.shape[0], minibatch, dtype=np.int64)])
    position[new] = T_old + np.arange(new.shape[0])
    c = np.zeros(all_terms.shape[0])
    c[position] = counts
    after = np.concatenate([np.cumsum(c[::-1])[::-1][1:], [0.0]])
    nu1 = nu1 + eps * (1.0 + scale * c - nu1)
    nu2 = nu2 + eps * (alpha_beta + scale * after - nu2)
    g0 = np.zeros(all_terms.shape[0])
    g0[position] = np.exp(log_base)
    rank = (1.0 - eps) * rank + eps * g0 * scale * c
    return TopicSet(all_terms, nu1, nu2, rank, since)


def test_zero_discount_is_the_thesis_update_bit_for_bit():
    """d = 0 (the default) gives the numbers of the update before the discount exactly: 12 minibatches of random
    counts with new words, a reordering every 3, and words appended by expand_topic."""
    rng = np.random.default_rng(4)
    words = np.array([f"w{j:02d}" for j in range(30)], dtype=object)
    old, new = TopicSet.empty(), TopicSet.empty()
    for i in range(1, 13):
        pick = np.unique(rng.choice(30, 8))
        terms, counts, log_base = words[pick], rng.gamma(1.0, 2.0, pick.size), -rng.uniform(2, 9, pick.size)
        eps = step_size(i, 1.0, 0.6)
        old = thesis_update(old, terms, counts, log_base, 37.5, eps, 123.0, i)
        new = update_topic(new, terms, counts, log_base, 37.5, eps, 123.0, i, discount=0.0)
        if i % 3 == 0:
            old, new = reorder_topic(old, 12), reorder_topic(new, 12)
        assert list(new.terms) == list(old.terms)
        for name in ("nu1", "nu2", "rank", "since"):
            np.testing.assert_array_equal(getattr(new, name), getattr(old, name))
    grown = expand_topic(new, words, 123.0, 13, discount=0.0)
    np.testing.assert_array_equal(grown.nu1[len(new):], np.ones(len(grown) - len(new)))
    np.testing.assert_array_equal(grown.nu2[len(new):], np.full(len(grown) - len(new), 123.0))
    assert OnlineSettings().discount == 0.0


def test_without_counts_the_update_goes_to_the_prior_beta_1_minus_d_alpha_plus_t_d():
    """The fixed point of (7.6)-(7.7) with no counts is the prior of each atom's position (Beta(1 - d, alpha^beta +
    t d)): one step at eps = 1 lands on it, smaller steps converge to it, and words expand_topic appends start on
    it and stay."""
    d, alpha_beta = 0.8, 50.0
    start = TopicSet(np.array(["a", "b", "c"], dtype=object), np.array([9.0, 4.0, 0.3]), np.array([80.0, 20.0, 3.0]),
                     np.array([1.0, 0.5, 0.1]), np.zeros(3, dtype=np.int64))
    prior1, prior2 = 1 - d, alpha_beta + np.arange(1, 6) * d
    none = (np.empty(0, dtype=object), np.zeros(0), np.zeros(0), 10.0)
    once = update_topic(start, *none, 1.0, alpha_beta, 2, discount=d)
    np.testing.assert_allclose(once.nu1, prior1, rtol=1e-12)
    np.testing.assert_allclose(once.nu2, prior2[:3], rtol=1e-12)
    topic = expand_topic(start, ["e", "d"], alpha_beta, 2, discount=d)
    np.testing.assert_allclose(topic.nu1[3:], prior1, rtol=1e-12)
    np.testing.assert_allclose(topic.nu2[3:], prior2[3:], rtol=1e-12)
    for i in range(3, 400):
        topic = update_topic(topic, *none, 0.1, alpha_beta, i, discount=d)
    np.testing.assert_allclose(topic.nu1, prior1, rtol=1e-9)
    np.testing.assert_allclose(topic.nu2, prior2, rtol=1e-9)


def test_a_topic_at_the_prior_has_no_evidence_and_a_seed_starts_at_the_prior_plus_its_counts():
    """The re-seed's evidence is sum_t (nu1 - (1 - d)) (0 for a topic at the prior), and a seeded topic's
    nu1 = 1 - d + scale c (one update at eps = 1)."""
    d = 0.9
    topic = expand_topic(TopicSet.empty(), ["x", "y", "z"], 20.0, 1, discount=d)
    assert evidence([topic], d)[0] == pytest.approx(0.0, abs=1e-12)
    assert evidence([topic])[0] == pytest.approx(-3 * d)                    # against the d = 0 prior: below it
    seeded = seeded_topic(["x", "x", "y"], lambda t: np.zeros(len(t)), 4.0, 20.0, 1, 10, discount=d)
    assert list(seeded.terms) == ["x", "y"]
    np.testing.assert_allclose(seeded.nu1, [1 - d + 8.0, 1 - d + 4.0])
    np.testing.assert_allclose(seeded.nu2, [20.0 + d + 4.0, 20.0 + 2 * d])
    assert evidence([seeded], d)[0] == pytest.approx(12.0)


@pytest.mark.parametrize("d", [-0.1, 1.0, 1.5])
def test_a_discount_outside_0_1_is_refused(d):
    with pytest.raises(ValueError, match="discount"):
        OnlineSettings(discount=d).check()
    OnlineSettings(discount=0.99).check()
