"""The drift report across a root's versions (issue 30, 4): topics matched over time, each topic's drift, the new
words' rank trajectories (thesis Figure 7.1), checked against direct loops on a known sequence of versions."""
from __future__ import annotations

import numpy as np

from drivers.refresh.drift_report import drift_history, hellinger_matrix, labels, ranks


def _versions():
    """Three versions of K=3 topics over 6, 7, 8 words; version 2 swaps topics 0 and 1; the new words (ids 6, 7)
    climb in topic 2."""
    rng = np.random.default_rng(5)
    v0 = rng.dirichlet(np.full(6, 0.3), size=3)
    v1 = np.hstack([v0 * 0.95 + 0.002, np.array([[0.001], [0.001], [0.05]])])
    v2 = np.hstack([v1[[1, 0, 2]] * 0.8, np.array([[0.001], [0.001], [0.3]])])
    v2[2, 6] = 0.5                       # the first new word climbs to the top of topic 2
    return [p / p.sum(axis=1, keepdims=True) for p in (v0, v1, v2)]


def test_ranks_and_distances_are_the_direct_ones():
    phis = _versions()
    r = ranks(phis[2])
    for k in range(3):
        for v in range(8):
            assert r[k, v] == 1 + sum(phis[2][k, u] > phis[2][k, v] or (phis[2][k, u] == phis[2][k, v] and u < v)
                                      for u in range(8))
    H = hellinger_matrix(phis[0], phis[0])
    assert np.allclose(np.diag(H), 0.0, atol=1e-7) and H[0, 1] == np.sqrt(1 - np.sum(np.sqrt(phis[0][0] * phis[0][1])))


def test_topics_are_matched_over_time_and_new_words_ranked_in_the_matched_topic():
    phis = _versions()
    history = drift_history(phis, first_vocab=6, words_per_topic=2)
    first, second = history["steps"]
    assert first["identity"] and first["matching"] == [0, 1, 2]
    assert not second["identity"] and second["matching"] == [1, 0, 2]      # new topic 0 continues old topic 1
    p = phis[1] / phis[1].sum(axis=1, keepdims=True)
    q = phis[2][:, :7] / phis[2][:, :7].sum(axis=1, keepdims=True)
    assert np.allclose(second["hellinger"], [np.sqrt(1 - np.sum(np.sqrt(p[k] * q[k]))) for k in range(3)])
    assert history["tracks"] == [[1, 1, 0], [0, 0, 1], [2, 2, 2]]
    words = history["new_words"][2]
    assert [w["id"] for w in words] == [6, 7]
    assert words[0]["ranks"] == [None, int(ranks(phis[1])[2, 6]), 1]
    assert words[1]["ranks"] == [None, None, int(ranks(phis[2])[2, 7])]
    assert labels(phis[2], [f"w{v}" for v in range(8)], top=1)[2] == "w6"
    assert labels(phis[2], [f"w{v}" for v in range(8)], names=["a", "", None])[0] == "a"
