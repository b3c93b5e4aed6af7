"""The infinite-vocabulary kernels (inference/infvoc) against direct, slow implementations of each equation of
thesis chapter 7 on a tiny stream; the truncation ordered set after a known sequence of minibatches; bounded
memory under a stream of unique junk words."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import digamma

from inference.infvoc.base_measure import CharNgramBase, fit_lengths
from inference.infvoc.local_step import StringBlock, sample_block
from inference.infvoc.stick import expected_log_sticks, word_log_weights
from inference.infvoc.tos import (OnlineSettings, TopicSet, expand_topic, step_size, update_sets,
                                 update_topic)


def slow_e_log_beta(nu1, nu2, t):
    """(8.6) for atom t (1-based), term by term."""
    value = digamma(nu1[t - 1]) - digamma(nu1[t - 1] + nu2[t - 1])
    for s in range(1, t):
        value += digamma(nu2[s - 1]) - digamma(nu1[s - 1] + nu2[s - 1])
    return value


def slow_leftover(nu1, nu2):
    """(7.4) with s <= T_k."""
    return sum(digamma(nu2[s]) - digamma(nu1[s] + nu2[s]) for s in range(len(nu1)))


def test_stick_expectations_match_8_6_and_7_4():
    rng = np.random.default_rng(0)
    nu1, nu2 = rng.gamma(2.0, 3.0, 7) + 0.1, rng.gamma(2.0, 300.0, 7) + 0.1
    e_log, leftover = expected_log_sticks(nu1, nu2)
    for t in range(1, 8):
        assert e_log[t - 1] == pytest.approx(slow_e_log_beta(nu1, nu2, t), rel=1e-12)
    assert leftover == pytest.approx(slow_leftover(nu1, nu2), rel=1e-12)
    # the misprinted (7.3) (nu2 summed to s <= t) is a different number: the test tells them apart
    printed = slow_e_log_beta(nu1, nu2, 3) + digamma(nu2[2])
    assert abs(printed - e_log[2]) > 1e-3


def topic(terms, nu1, nu2, rank=None, since=None):
    n = len(terms)
    return TopicSet(np.array(terms, dtype=object), np.array(nu1, float), np.array(nu2, float),
                    np.zeros(n) if rank is None else np.array(rank, float),
                    np.zeros(n, dtype=np.int64) if since is None else np.array(since))


def test_word_factor_is_7_3_inside_and_7_4_times_g0_outside():
    sets = [topic(["a", "b", "c"], [5, 2, 1.5], [40, 30, 20]), topic(["c", "d"], [3, 9], [10, 8])]
    words = np.array(["a", "c", "d", "zz"], dtype=object)
    log_g0 = np.array([-3.0, -4.0, -5.0, -9.0])
    got = word_log_weights(words, sets, log_g0)
    for k, ts in enumerate(sets):
        for u, w in enumerate(words):
            where = list(ts.terms).index(w) + 1 if w in ts.terms else None
            want = slow_e_log_beta(ts.nu1, ts.nu2, where) if where else slow_leftover(ts.nu1, ts.nu2) + log_g0[u]
            assert got[u, k] == pytest.approx(want, rel=1e-12)
    printed = word_log_weights(words, sets, log_g0, with_base=False)
    assert printed[3, 0] == pytest.approx(slow_leftover(sets[0].nu1, sets[0].nu2))


def slow_online_step(tos, nu1, nu2, rank, stream_phi, D, S, eps, alpha_beta, g0):
    """(7.6)-(7.8) written per token: ``stream_phi`` = [(word, phi_k)] for every token of the minibatch; ``tos``
    already expanded (the words in their order)."""
    n1, n2, r = dict(nu1), dict(nu2), dict(rank)
    index = {w: t for t, w in enumerate(tos, 1)}
    for w in tos:
        t = index[w]
        same = sum(phi for word, phi in stream_phi if word == w)
        after = sum(phi for word, phi in stream_phi if index[word] > t)
        n1[w] = n1[w] + eps * (1 + D / S * same - n1[w])
        n2[w] = n2[w] + eps * (alpha_beta + D / S * after - n2[w])
        r[w] = (1 - eps) * r[w] + eps * (g0[w] * D / S * same)
    return n1, n2, r


def test_online_update_matches_7_6_to_7_8_on_a_tiny_stream():
    """Three minibatches of two documents, phi given per token (one topic's column), against the per-token sums."""
    g0 = {"apple": 1e-3, "pear": 5e-4, "fig": 2e-3, "kiwi": 1e-4}
    stream = [[("apple", 0.9), ("apple", 0.5), ("pear", 0.2)],
              [("fig", 1.0), ("apple", 0.3), ("kiwi", 0.7), ("kiwi", 0.1)],
              [("pear", 0.6), ("fig", 0.2)]]
    settings = OnlineSettings(alpha_beta=7.0, truncation=10, delay=100, tau0=2.0, kappa=0.7, corpus_size=20)
    sets = [TopicSet.empty()]
    tos, n1, n2, r = [], {}, {}, {}
    for i, tokens in enumerate(stream, 1):
        counts = {}
        for w, phi in tokens:
            counts[w] = counts.get(w, 0.0) + phi
        terms = np.array(sorted(counts), dtype=object)
        sets = update_sets(sets, {0: (terms, np.array([counts[w] for w in terms]))},
                           {w: math.log(g0[w]) for w in terms}, batch_docs=2, documents_seen=2 * i, minibatch=i,
                           settings=settings)
        for w in sorted((w for w in counts if w not in tos), key=lambda w: (-counts[w], w)):   # expand
            tos.append(w)
            n1[w], n2[w], r[w] = 1.0, 7.0, 0.0                # the prior Beta(1, alpha^beta)
        n1, n2, r = slow_online_step(tos, n1, n2, r, tokens, 20, 2, step_size(i, 2.0, 0.7), 7.0, g0)
        assert list(sets[0].terms) == tos
        np.testing.assert_allclose(sets[0].nu1, [n1[w] for w in tos], rtol=1e-12)
        np.testing.assert_allclose(sets[0].nu2, [n2[w] for w in tos], rtol=1e-12)
        np.testing.assert_allclose(sets[0].rank, [r[w] for w in tos], rtol=1e-12)
    assert list(sets[0].since) == [1, 1, 2, 2]


def test_a_word_enters_at_the_prior_as_if_it_had_sat_at_the_end_of_the_tos():
    """Appending a word at minibatch 4 gives every number (nu, R, order) it would have had sitting at the end of the
    TOS with no counts since minibatch 1 (the prior Beta(1, alpha^beta) is (7.6)-(7.7)'s fixed point there); and a
    word that enters with the counts an old word has had every minibatch gets a smaller stick than the old word,
    not a larger one for being new (a start at Beta(1, 1) fails both)."""
    settings = OnlineSettings(alpha_beta=100.0, truncation=50, delay=100, tau0=2.0, kappa=0.7, corpus_size=3)
    batches = [{"a": 4.0, "b": 2.0}, {"a": 3.0, "b": 2.0}, {"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 2.0, "z": 2.0}]

    def run(sets, start):
        for i, batch in enumerate(batches[start - 1:], start):
            terms = np.array(sorted(batch), dtype=object)
            sets = update_sets(sets, {0: (terms, np.array([batch[w] for w in terms]))}, {w: -3.0 for w in terms},
                               batch_docs=3, documents_seen=3 * i, minibatch=i, settings=settings)
        return sets[0]

    entered = run([TopicSet.empty()], 1)
    seeded = update_sets([TopicSet.empty()], {0: (np.array(["a", "b"], dtype=object), np.array([4.0, 2.0]))},
                         {"a": -3.0, "b": -3.0}, 3, 3, 1, settings)[0]
    seeded = TopicSet(np.append(seeded.terms, "z"), np.append(seeded.nu1, 1.0), np.append(seeded.nu2, 100.0),
                      np.append(seeded.rank, 0.0), np.append(seeded.since, 1))
    sat = run([seeded], 2)
    assert list(entered.terms) == list(sat.terms) == ["a", "b", "z"]
    for name in ("nu1", "nu2", "rank"):
        np.testing.assert_allclose(getattr(entered, name), getattr(sat, name), rtol=1e-12)
    mean = entered.nu1 / (entered.nu1 + entered.nu2)
    assert mean[2] < mean[1]                            # z (2 counts once) below b (2 counts in every minibatch)


def test_truncation_ordered_set_after_a_known_sequence_of_minibatches():
    """U = 2, T = 3, eps = 1/2 (tau0 = 1, kappa = 1 at i = 1, then 1/3, 1/4, ...), G_0 uniform: the TOS is the
    interpolated counts' order after every second minibatch, cut to 3; a dropped word comes back as new."""
    settings = OnlineSettings(alpha_beta=1.0, truncation=3, delay=2, tau0=1.0, kappa=1.0, corpus_size=1)
    batches = [{"a": 1, "b": 5, "c": 3}, {"d": 9, "a": 1}, {"e": 1}, {"a": 30}, {"b": 1}]
    sets = [TopicSet.empty()]
    orders = []
    for i, batch in enumerate(batches, 1):
        terms = np.array(sorted(batch), dtype=object)
        sets = update_sets(sets, {0: (terms, np.array([float(batch[w]) for w in terms]))},
                           {w: 0.0 for w in terms}, 1, i, i, settings)
        orders.append(list(sets[0].terms))
    assert orders[0] == ["b", "c", "a"]                  # appended by count
    # R after 2 (eps 1/2, 1/3): a = (1/2)(2/3) + 1/3 = 2/3, b = (5/2)(2/3), c = (3/2)(2/3) = 1, d = 9/3
    assert orders[1] == ["d", "b", "c"]                  # reordered and cut to 3: a dropped
    assert orders[2] == ["d", "b", "c", "e"]             # e appended, no reordering at 3
    # after 4 (eps 1/4, 1/5): d 1.8, b 1, c 0.6, e 0.2, a new (R from 0): 30/5 = 6
    assert orders[3] == ["a", "d", "b"]
    assert orders[4] == ["a", "d", "b"]
    assert list(sets[0].since) == [4, 2, 1]              # a came back as a new word at minibatch 4
    np.testing.assert_allclose(sets[0].rank, [6 * 5 / 6, 1.8 * 5 / 6, 1 * 5 / 6 + 1 / 6])



def junk_stream(rng, real, batches=60, per_batch=50):
    """Minibatches of ``real`` words and ``per_batch`` junk words never seen before, for two topics: ``(i, junk,
    terms, counts per topic)``, the real words 20 times as frequent."""
    for i in range(1, batches + 1):
        junk = ["".join(rng.choice(list("qxzjvk"), 9)) + str(i) + str(j) for j in range(per_batch)]
        terms = np.array(sorted(set(real) | set(junk)), dtype=object)
        counts = {k: rng.gamma(1.0, 1.0, terms.shape[0]) * np.array([20.0 if w in real else 1.0 for w in terms])
                  for k in range(2)}
        yield i, junk, terms, counts

def test_memory_stays_bounded_under_a_stream_of_unique_junk_words():
    rng = np.random.default_rng(3)
    settings = OnlineSettings(alpha_beta=100.0, truncation=40, delay=3, tau0=4.0, kappa=0.7)
    base = CharNgramBase.fit(["river", "water", "stone", "forest", "mountain", "valley", "rain", "snow"])
    real = ["river", "water", "stone", "forest", "mountain", "valley", "rain", "snow"]
    sets = [TopicSet.empty(), TopicSet.empty()]
    sizes = []
    for i, _, terms, counts in junk_stream(rng, real):
        sets = update_sets(sets, {k: (terms, c) for k, c in counts.items()},
                           {w: base.log_prob(w) for w in terms}, 10, 10 * i, i, settings)
        sizes.append(max(len(s) for s in sets))
        if i % settings.delay == 0:
            assert max(len(s) for s in sets) <= settings.truncation
            for s in sets:                    # the real words rank above the junk and stay
                assert set(real) <= set(s.terms)
    assert max(sizes) <= settings.truncation + (settings.delay - 1) * 58
    assert max(sizes[-15:]) <= max(sizes[:15])          # no growth with the stream


def test_char_model_is_a_distribution_over_strings_of_each_length():
    base = CharNgramBase.fit(["ab", "ba", "abb", "b"], order=3)
    alphabet = ["a", "b", "z"]          # z: one character never seen stands for the unseen slot
    for length in (1, 2, 3, 4):
        total = sum(math.exp(base.log_chars("".join(s))) for s in itertools.product(alphabet, repeat=length))
        assert total == pytest.approx(1.0, abs=1e-12)
    # G_0 = p(length) * chars: summed over all strings of length <= 6 it is the length model's mass there
    mass = sum(math.exp(base.log_prob("".join(s))) for l in range(1, 7) for s in itertools.product(alphabet, repeat=l))
    assert mass == pytest.approx(sum(math.exp(base.log_length(l)) for l in range(1, 7)), rel=1e-10)
    assert base.log_prob("zzzzzzzzzzzzzzzzzzzz") > -math.inf       # a length and characters never seen


def test_length_fits():
    words = ["at", "to", "cat", "dog", "tree", "horse", "hat"]
    freq = np.array([9.0, 7, 5, 4, 2, 1, 3])
    base = CharNgramBase.fit(words, freq, lengths="kl")
    np.testing.assert_allclose(base.zeta[2:6], np.array([16, 12, 2, 1]) / 31.0)
    lengths = np.array([len(w) for w in words])
    p = freq / freq.sum()
    c = np.exp([base.log_chars(w) for w in words])
    zeta = fit_lengths(lengths, p, c)

    def objective(z):
        return float(np.sum((p - z[lengths - 2] * c) ** 2))

    best = minimize(objective, np.full(4, 0.25), method="SLSQP", bounds=[(0, 1)] * 4,
                    constraints=[{"type": "eq", "fun": lambda z: z.sum() - 1}], options={"ftol": 1e-16})
    assert objective(zeta[2:6]) <= best.fun + 1e-12
    assert zeta.sum() == pytest.approx(1.0)


def test_local_step_samples_7_2():
    """Documents of one token: q(z = k) ∝ alpha_k exp(word factor_k) exactly; the sampled phi follows it."""
    sets = [topic(["a", "b"], [50, 5], [60, 40]), topic(["b"], [80], [30]), topic([], [], [])]
    block = StringBlock.from_documents([(f"d{i}", ["a"]) for i in range(3000)] + [("x", ["b", "b", "c"])])
    log_g0 = np.array([-2.0, -2.0, -6.0])
    alpha = np.array([0.5, 1.0, 1.5])
    phi, doc_topics = sample_block(block, sets, log_g0, alpha, seed=1, minibatch=1, burn_in=2, samples=3)
    w = word_log_weights(np.array(["a"], dtype=object), sets, log_g0[:1])[0]
    want = alpha * np.exp(w - w.max())
    want /= want.sum()
    np.testing.assert_allclose(phi[0] / phi[0].sum(), want, atol=0.02)
    assert phi.sum() == pytest.approx(3003)
    assert doc_topics.sum() == 3003
    again, _ = sample_block(block, sets, log_g0, alpha, seed=1, minibatch=1, burn_in=2, samples=3)
    np.testing.assert_array_equal(phi, again)


def test_local_step_samples_the_collapsed_joint_of_a_document():
    """A document of three tokens (one in two topics' TOS, one in all three, one in none: (7.4) with G_0) over
    K = 3: the kept samples' phi of each token against its marginal under the enumerated joint the Gibbs sweep
    of (7.2) leaves invariant, p(z_d) ∝ prod_k Gamma(n_dk + alpha_k) prod_n exp(word factor(w_n, z_n))."""
    sets = [topic(["a", "b"], [40, 6], [300, 250]), topic(["b", "a"], [30, 2], [200, 150]),
            topic(["b"], [5], [400])]
    words = np.array(["a", "b", "new"], dtype=object)
    log_g0 = np.array([-4.0, -5.0, -3.0])
    alpha = np.array([0.1, 0.2, 0.3])
    factor = word_log_weights(words, sets, log_g0)
    joint = {}
    for z in itertools.product(range(3), repeat=3):
        n = np.bincount(z, minlength=3)
        joint[z] = math.exp(sum(math.lgamma(n[k] + alpha[k]) for k in range(3))
                            + sum(factor[u, z[u]] for u in range(3)))
    total = sum(joint.values())
    marginal = np.zeros((3, 3))
    for z, p in joint.items():
        for u in range(3):
            marginal[u, z[u]] += p / total
    copies = 3000
    block = StringBlock.from_documents([(f"d{i:05d}", ["new", "b", "a"]) for i in range(copies)])
    assert list(block.terms) == list(words)
    phi, _ = sample_block(block, sets, log_g0, alpha, seed=5, minibatch=2, burn_in=5, samples=10)
    np.testing.assert_allclose(phi / copies, marginal, atol=0.02)
    assert np.abs(marginal - marginal.mean(axis=0)).max() > 0.1     # the tokens' marginals differ: a real check


def test_expand_every_appends_missing_words_at_the_prior_and_changes_nothing_else():
    """expand_topic appends the words a TOS lacks (by string) at Beta(1, alpha^beta), R = 0, entered now; an
    update after it gives every other word the numbers it gets without the appended words (they had no counts)."""
    start = topic(["b", "a"], [3.0, 2.0], [40.0, 30.0], rank=[0.5, 0.25], since=[1, 1])
    grown = expand_topic(start, ["c", "a", "d", "c"], alpha_beta=30.0, minibatch=4)
    assert list(grown.terms) == ["b", "a", "c", "d"]
    np.testing.assert_array_equal(grown.nu1, [3, 2, 1, 1])
    np.testing.assert_array_equal(grown.nu2, [40, 30, 30, 30])
    np.testing.assert_array_equal(grown.rank, [0.5, 0.25, 0, 0])
    np.testing.assert_array_equal(grown.since, [1, 1, 4, 4])
    assert expand_topic(grown, ["a", "d"], 30.0, 5) is grown
    args = (np.array(["a", "b"], dtype=object), np.array([2.0, 5.0]), np.array([-1.0, -2.0]), 3.0, 0.2, 30.0, 4)
    plain, expanded = update_topic(start, *args), update_topic(grown, *args)
    for name in ("nu1", "nu2", "rank"):
        np.testing.assert_allclose(getattr(expanded, name)[:2], getattr(plain, name), rtol=1e-12)
    np.testing.assert_allclose(expanded.nu1[2:], 1.0)
    np.testing.assert_allclose(expanded.nu2[2:], 30.0)


def test_a_share_weighted_refresh_leaves_the_batch_its_share_of_the_documents_seen():
    """Session 26 (issue 30, ``--refresh-weight share``): one eps for a refresh's N steps, 1 - (1 - n/D)^(1/N), so
    the topics before the batch keep (1 - eps)^N = 1 - n/D of their evidence (7.6) and the batch's counts get n/D of
    the fixed point: a word only the old stream had (nu1 - 1 = 40) keeps 40 (1 - n/D), a word only the batch has
    reaches n/D of its (D/|S|) c. The schedule's eps_i over the same 60 steps (tau0 64, kappa 0.6, steps 61-120)
    would keep 4.9%."""
    from inference.infvoc.tos import TopicSet, share_step, step_size, update_topic

    n, D, N = 349, 1396, 60                                                 # the joined stream's last batch
    eps = share_step(n, D, N)
    assert abs((1 - eps) ** N - (1 - n / D)) < 1e-12
    assert share_step(10, 10, 5) == 1.0 and share_step(0, 10, 5) == 0.0
    old = TopicSet(np.array(["old"], dtype=object), np.array([41.0]), np.array([50.0]), np.array([1.0]),
                   np.zeros(1, dtype=np.int64))
    topic = old
    for i in range(N):
        topic = update_topic(topic, np.array(["new"], dtype=object), np.array([3.0]), np.zeros(1), 4.0, eps, 50.0, i)
    nu1 = dict(zip(topic.terms, topic.nu1))
    assert abs((nu1["old"] - 1) - 40 * (1 - n / D)) < 1e-9
    assert abs((nu1["new"] - 1) - 12 * n / D) < 1e-9
    kept = np.prod([1 - step_size(i, 64, 0.6) for i in range(61, 121)])
    assert 0.04 < kept < 0.06
