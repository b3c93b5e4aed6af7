"""Re-seeding starved topics of the infinite-vocabulary model (inference.infvoc.reseed; issue 30), against the
update written out by hand."""
from __future__ import annotations

import numpy as np
import pytest

from inference.infvoc.reseed import evidence, reseed_starved, seeded_topic, starved
from inference.infvoc.tos import OnlineSettings, TopicSet


def topic(terms, nu1, alpha_beta=10.0):
    n = len(terms)
    return TopicSet(np.asarray(terms, dtype=object), np.asarray(nu1, dtype=np.float64), np.full(n, alpha_beta),
                    np.arange(n, 0, -1, dtype=np.float64), np.zeros(n, dtype=np.int64))


def log_g0(terms):
    """A G_0 that prefers short words: log G_0(w) = -len(w)."""
    return -np.array([len(str(t)) for t in terms], dtype=np.float64)


def test_seeded_topic_is_one_full_step_of_7_6_to_7_8_from_the_document():
    scale, alpha_beta = 3.0, 10.0
    ts = seeded_topic(["bb", "a", "bb", "ccc", "bb", "a"], log_g0, scale, alpha_beta, 7, 100)
    # counts a 2, bb 3, ccc 1; R = G_0 scale c: a e^-1 6, bb e^-2 9, ccc e^-3 3 -> a (2.207), bb (1.218), ccc
    assert ts.terms.tolist() == ["a", "bb", "ccc"]
    np.testing.assert_allclose(ts.rank, [np.exp(-1) * 6, np.exp(-2) * 9, np.exp(-3) * 3])
    np.testing.assert_allclose(ts.nu1, [1 + 6, 1 + 9, 1 + 3])
    # nu2 = alpha^beta + scale x the counts after t in the order the update appended them (bb 3, a 2, ccc 1)
    np.testing.assert_allclose(ts.nu2, [alpha_beta + scale * 1, alpha_beta + scale * 3, alpha_beta])
    assert ts.since.tolist() == [7, 7, 7]
    assert len(seeded_topic(["a", "bb", "ccc"], log_g0, scale, alpha_beta, 7, 2)) == 2      # cut to T


def test_only_topics_below_the_fraction_of_the_mean_evidence_are_reseeded_and_the_draw_is_seeded():
    sets = [topic(["x", "y"], [41.0, 41.0]), topic(["x"], [3.0]), topic(["y", "z"], [31.0, 21.0]),
            topic(["z"], [1.5])]
    np.testing.assert_allclose(evidence(sets), [80.0, 2.0, 50.0, 0.5])      # mean 33.125
    assert starved(sets, 0.25).tolist() == [1, 3]
    assert starved(sets, 0.0).size == 0
    assert starved([topic(["x"], [1.0])], 0.5).size == 0                   # all at the prior: nothing to compare
    documents = [("d0", ["a", "b", "a"]), ("d1", ["c"]), ("d2", ["d", "e", "f", "g"]), ("d3", [])]
    out, pairs = reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 100, seed=3, minibatch=20)
    assert [k for k, _ in pairs] == [1, 3]
    assert len({d for _, d in pairs}) == 2 and "d3" not in {d for _, d in pairs}     # distinct, never empty
    assert out[0] is sets[0] and out[2] is sets[2]
    for k, doc_id in pairs:
        tokens = dict(documents)[doc_id]
        expected = seeded_topic(tokens, log_g0, 2.0, 10.0, 20, 100)
        assert out[k].terms.tolist() == expected.terms.tolist()
        np.testing.assert_allclose(out[k].nu1, expected.nu1)
    again, same = reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 100, seed=3, minibatch=20)
    assert same == pairs
    draws = {tuple(reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 100, seed=s, minibatch=m)[1])
             for s in range(4) for m in range(4)}
    assert len(draws) > 1                                                  # the draw depends on (seed, minibatch)
    unchanged, none = reseed_starved(sets, documents, log_g0, 0.0, 2.0, 10.0, 100, seed=3, minibatch=20)
    assert none == [] and unchanged is sets


def test_the_draw_weighs_documents_by_distinct_words_or_uniformly():
    """h30b: one starved topic, a document of 96 distinct words beside four of one word and an empty one; over
    (seed, minibatch) the long document is drawn with probability 96/100 by words and 1/5 uniformly (binomial sd over
    1,200 draws <= 0.012), the empty one never."""
    sets = [topic(["x"], [41.0]), topic(["y"], [41.0]), topic(["z"], [1.5])]
    documents = [("long", [f"w{i}" for i in range(96)]), ("a", ["a"]), ("b", ["b", "b"]), ("c", ["c"]),
                 ("d", ["d"]), ("empty", [])]
    for draw, expected in (("words", 96 / 100), ("uniform", 1 / 5)):
        drawn = [reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 3, seed=s, minibatch=m, draw=draw)[1]
                 for s in range(40) for m in range(30)]
        assert all(len(p) == 1 and p[0][0] == 2 for p in drawn)
        docs = [p[0][1] for p in drawn]
        assert "empty" not in docs
        assert abs(docs.count("long") / len(docs) - expected) < 0.05, (draw, docs.count("long"))
    # the same (seed, minibatch) gives the same draw; the two draws are different draws
    assert reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 3, 1, 2, draw="uniform")[1] == \
        reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 3, 1, 2, draw="uniform")[1]
    with pytest.raises(ValueError, match="draw"):
        reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 3, 1, 2, draw="length")


def test_reseed_setting_is_checked():
    OnlineSettings(reseed=0.25).check()
    OnlineSettings(reseed=0.25, reseed_draw="uniform").check()
    with pytest.raises(ValueError, match="reseed"):
        OnlineSettings(reseed=1.5).check()
    with pytest.raises(ValueError, match="reseed draw"):
        OnlineSettings(reseed=0.25, reseed_draw="length").check()


def test_against_document_the_fraction_is_of_one_average_document_of_the_minibatch():
    """h30c: ``against="document"`` re-seeds a topic holding less than f x (D/|S|) x the documents' mean tokens,
    whatever the topics' mean: evidence [80, 2, 50, 0.5] (mean 33.125), scale 2, documents of 3, 1, 4, 0 tokens (mean
    2, one document = 4): f = 0.25 re-seeds only the topic below 1 (against the mean: below 8.28, topics 1 and 3);
    f = 0.75, below 3: topics 1 and 3. A seed of a 4-token document holds 8 = 2 documents."""
    sets = [topic(["x", "y"], [41.0, 41.0]), topic(["x"], [3.0]), topic(["y", "z"], [31.0, 21.0]),
            topic(["z"], [1.5])]
    assert starved(sets, 0.25, reference=4.0).tolist() == [3]
    assert starved(sets, 0.75, reference=4.0).tolist() == [1, 3]
    documents = [("d0", ["a", "b", "a"]), ("d1", ["c"]), ("d2", ["d", "e", "f", "g"]), ("d3", [])]
    _, pairs = reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 100, seed=3, minibatch=20, against="document")
    assert [k for k, _ in pairs] == [3]
    _, pairs = reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 100, seed=3, minibatch=20)
    assert [k for k, _ in pairs] == [1, 3]
    _, pairs = reseed_starved(sets, documents, log_g0, 0.75, 2.0, 10.0, 100, seed=3, minibatch=20, against="document")
    assert [k for k, _ in pairs] == [1, 3]
    np.testing.assert_allclose(evidence([seeded_topic(["d", "e", "f", "g"], log_g0, 2.0, 10.0, 20, 100)]), [8.0])
    with pytest.raises(ValueError, match="against"):
        reseed_starved(sets, documents, log_g0, 0.25, 2.0, 10.0, 100, seed=3, minibatch=20, against="median")
    OnlineSettings(reseed=0.5, reseed_against="document").check()
    with pytest.raises(ValueError, match="reseed against"):
        OnlineSettings(reseed=0.5, reseed_against="median").check()


def test_the_document_reference_is_of_the_streams_minibatch_size_not_a_short_last_one():
    """Session 26 (a defect h30c found): against one document, the reference is (D/|S|) x the mean tokens with |S|
    the stream's minibatch size (``nominal``), not the current minibatch's: a pass's short last minibatch of 4
    documents in a stream cut in 16 has scale D/4, four times the scale at which the topics' evidence was gathered.
    Evidence [80, 2, 50, 8]; D = 32, documents of 3, 1, 4, 0 tokens (mean 2): with |S| 16 one document is 4, so
    f = 0.75 re-seeds the topics below 3 (topic 1); read at the short minibatch's |S| 4 the reference was 16 and
    f = 0.75 re-seeded the topics below 12 (topics 1 and 3)."""
    sets = [topic(["x", "y"], [41.0, 41.0]), topic(["x"], [3.0]), topic(["y", "z"], [31.0, 21.0]),
            topic(["z"], [9.0])]                                            # evidence [80, 2, 50, 8]
    documents = [("d0", ["a", "b", "a"]), ("d1", ["c"]), ("d2", ["d", "e", "f", "g"]), ("d3", [])]
    scale = 32 / len(documents)                                             # D/|S| of the short minibatch: 8
    short = reseed_starved(sets, documents, log_g0, 0.75, scale, 10.0, 100, seed=3, minibatch=20, against="document")
    assert [k for k, _ in short[1]] == [1, 3]                               # reference 16: below 12
    _, pairs = reseed_starved(sets, documents, log_g0, 0.75, scale, 10.0, 100, seed=3, minibatch=20,
                              against="document", nominal=16)
    assert [k for k, _ in pairs] == [1]                                     # reference 32/16 x 2 = 4: below 3
    full = [(f"e{i}", ["a", "b"]) for i in range(16)]                       # a full minibatch: nominal changes nothing
    assert reseed_starved(sets, full, log_g0, 0.75, 2.0, 10.0, 100, 3, 20, against="document", nominal=16)[1] == \
        reseed_starved(sets, full, log_g0, 0.75, 2.0, 10.0, 100, 3, 20, against="document")[1]
