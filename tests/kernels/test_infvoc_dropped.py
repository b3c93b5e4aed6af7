"""Words dropped from a truncation ordered set (thesis §7.4.1, inference/infvoc/dropped.py and tos.py): the Bloom
filter against its definition and its error rate, the reset score of a returning word against a direct
simulation of the TOS, and bounded memory under a stream of unique junk words with the filter on; the ranking by
counts alone (the thesis' code) against the same simulation."""
from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from inference.infvoc import dropped
from inference.infvoc.base_measure import CharNgramBase
from inference.infvoc.tos import OnlineSettings, TopicSet, update_sets, with_filters
from test_infvoc import junk_stream


def test_bloom_filter_positions_hold_every_added_word_and_few_others():
    word = "vuvuzela"
    digest = hashlib.blake2b(word.encode(), digest_size=4 * dropped.HASHES).digest()
    direct = [int.from_bytes(digest[4 * i:4 * i + 4], "little") % dropped.BITS for i in range(dropped.HASHES)]
    assert dropped.positions([word])[0].tolist() == direct
    added = [f"w{i}x" for i in range(15000)]
    bits = dropped.add(dropped.empty_filter(), added)
    assert bits.shape == (dropped.BITS // 8,) and dropped.contains(bits, added).all()
    direct_bits = np.zeros(dropped.BITS, dtype=bool)                  # the filter as a plain bit array
    direct_bits[dropped.positions(added).ravel()] = True
    assert np.array_equal(np.unpackbits(bits, bitorder="little").astype(bool), direct_bits)
    others = [f"o{i}y" for i in range(40000)]
    rate = dropped.contains(bits, others).mean()
    theory = (1 - math.exp(-dropped.HASHES * len(added) / dropped.BITS)) ** dropped.HASHES
    assert 0.5 * theory < rate < 1.5 * theory                          # 1.8% at 15,000 words
    assert not dropped.contains(dropped.empty_filter(), others).any()


def slow_tos(batches, truncation, delay, remember):
    """The TOS of one topic by the thesis' rules with a plain set of dropped words (G_0 = 1, D/|S| = 1,
    eps_i = 1/(1 + i)): [(terms in order, their R)] after each minibatch."""
    tos, rank, gone, out = [], {}, set(), []
    for i, batch in enumerate(batches, 1):
        eps = 1.0 / (1 + i)
        smallest = min(rank[w] for w in tos) if tos else 0.0
        for w in sorted((w for w in batch if w not in tos), key=lambda w: (-batch[w], w)):
            tos.append(w)
            rank[w] = smallest if remember and w in gone else 0.0
        for w in tos:
            rank[w] = (1 - eps) * rank[w] + eps * batch.get(w, 0.0)
        if i % delay == 0:
            ordered = sorted(tos, key=lambda w: -rank[w])           # stable: ties keep their order
            tos, cut = ordered[:truncation], ordered[truncation:]
            gone.update(cut)
            for w in cut:
                del rank[w]
        out.append((list(tos), [rank[w] for w in tos]))
    return out


@pytest.mark.parametrize("mode", ["forget", "bloom"])
def test_a_dropped_word_returns_with_the_smallest_score_only_when_remembered(mode):
    settings = OnlineSettings(alpha_beta=1.0, truncation=3, delay=2, tau0=1.0, kappa=1.0, corpus_size=1,
                              dropped_words=mode)
    batches = [{"a": 1, "b": 5, "c": 3}, {"d": 9, "a": 1}, {"e": 1}, {"a": 30, "f": 0.5}, {"b": 1, "e": 2},
               {"c": 4}, {"e": 3}]
    sets = with_filters([TopicSet.empty()], settings)
    assert (sets[0].dropped is not None) == (mode == "bloom")
    expected = slow_tos(batches, 3, 2, mode == "bloom")
    for i, batch in enumerate(batches, 1):
        terms = np.array(sorted(batch), dtype=object)
        sets = update_sets(sets, {0: (terms, np.array([float(batch[w]) for w in terms]))},
                           {w: 0.0 for w in terms}, 1, i, i, settings)
        assert list(sets[0].terms) == expected[i - 1][0]
        np.testing.assert_allclose(sets[0].rank, expected[i - 1][1], rtol=1e-12)
    # "a" (dropped at 2) comes back at 4 with the TOS' smallest R (e's, 1/4) when remembered, from 0 otherwise
    a_at_4 = dict(zip(*expected[3]))["a"]
    assert a_at_4 == pytest.approx((1 - 1 / 5) * (0.25 if mode == "bloom" else 0.0) + 30 / 5)
    if mode == "bloom":
        assert dropped.contains(sets[0].dropped, ["a", "d", "e"]).tolist() == [True, False, True]


def test_memory_stays_bounded_with_the_filter_of_dropped_words():
    rng = np.random.default_rng(3)
    settings = OnlineSettings(alpha_beta=100.0, truncation=40, delay=3, tau0=4.0, kappa=0.7, dropped_words="bloom")
    real = ["river", "water", "stone", "forest", "mountain", "valley", "rain", "snow"]
    base = CharNgramBase.fit(real)
    sets = with_filters([TopicSet.empty(), TopicSet.empty()], settings)
    sizes, first_junk = [], None
    for i, junk, terms, counts in junk_stream(rng, real):
        first_junk = first_junk or junk
        sets = update_sets(sets, {k: (terms, c) for k, c in counts.items()},
                           {w: base.log_prob(w) for w in terms}, 10, 10 * i, i, settings)
        sizes.append(max(len(s) for s in sets))
        assert all(s.dropped.shape == (dropped.BITS // 8,) for s in sets)       # a fixed size, whatever was seen
        if i % settings.delay == 0:
            assert max(len(s) for s in sets) <= settings.truncation
            assert all(set(real) <= set(s.terms) for s in sets)
    assert max(sizes) <= settings.truncation + (settings.delay - 1) * 58
    assert max(sizes[-15:]) <= max(sizes[:15])
    gone = [w for w in first_junk if w not in set(sets[0].terms)]
    assert gone and dropped.contains(sets[0].dropped, gone).all()


def test_ranking_by_counts_alone_ignores_g0():
    """ranking="counts" gives the TOS of G_0 = 1 whatever log G_0 is passed; "base" weighs R by G_0 (7.5)."""
    batches = [{"a": 1, "b": 5, "c": 3}, {"d": 9, "a": 1}, {"e": 1}, {"a": 30, "f": 0.5}, {"b": 1, "e": 2}]
    log_g0 = {"a": -1.0, "b": -9.0, "c": -2.0, "d": -12.0, "e": -0.5, "f": -3.0}
    expected = slow_tos(batches, 3, 2, False)
    final = {}
    for ranking in ("counts", "base"):
        settings = OnlineSettings(alpha_beta=1.0, truncation=3, delay=2, tau0=1.0, kappa=1.0, corpus_size=1,
                                  ranking=ranking)
        sets = [TopicSet.empty()]
        for i, batch in enumerate(batches, 1):
            terms = np.array(sorted(batch), dtype=object)
            sets = update_sets(sets, {0: (terms, np.array([float(batch[w]) for w in terms]))}, log_g0, 1, i, i,
                               settings)
            if ranking == "counts":
                assert list(sets[0].terms) == expected[i - 1][0]
                np.testing.assert_allclose(sets[0].rank, expected[i - 1][1], rtol=1e-12)
        final[ranking] = dict(zip(sets[0].terms, sets[0].rank))
    assert final["base"] != final["counts"]                      # G_0 weighs R (7.5): another TOS
    with pytest.raises(ValueError, match="ranking"):
        OnlineSettings(ranking="g0").check()

