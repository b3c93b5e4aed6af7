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


def test_versions_with_other_numbers_of_rows_are_matched_row_by_row_and_drawn(tmp_path):
    """A cluster model's versions (issue 30, 4): 3 rows, then 4 (the 3 permuted, one born), then 2 (two ended).
    Each newer row continues the older row the matching gives it (a born row: its nearest), its drift is the
    distance to that row, the rows born and ended are named, tracks run through them and the heat map is drawn
    along the newest rows' tracks."""
    from drivers.refresh.drift_report import plot, track_drift

    rng = np.random.default_rng(7)
    v0 = rng.dirichlet(np.full(6, 0.3), size=3)
    born = rng.dirichlet(np.full(7, 0.3))
    v1 = np.vstack([np.hstack([v0[[2, 0, 1]] * 0.97, np.full((3, 1), 0.03)]), born])
    v2 = v1[[1, 3]] * 0.9 + 0.1 / 7
    history = drift_history([v0, v1, v2], first_vocab=6, words_per_topic=1)
    first, second = history["steps"]
    p = v0 / v0.sum(axis=1, keepdims=True)
    q = v1[:, :6] / v1[:, :6].sum(axis=1, keepdims=True)
    nearest = int(np.argmin([np.sqrt(1 - np.sum(np.sqrt(p[i] * q[3]))) for i in range(3)]))
    assert first["matching"] == [2, 0, 1, nearest] and first["new_rows"] == [3] and first["ended_rows"] == []
    assert np.allclose(first["hellinger"], [np.sqrt(max(0.0, 1 - np.sum(np.sqrt(p[i] * q[j]))))
                                            for j, i in enumerate(first["matching"])], atol=1e-6)
    assert second["matching"] == [1, 3] and second["ended_rows"] == [0, 2] and second["new_rows"] == []
    assert not first["identity"] and not second["identity"]
    assert history["tracks"] == [[0, 1, 0], [nearest, 3, 1]]
    report = {"versions": ["000000", "000001", "000002"], "labels": ["a", "b"], **history}
    drift = track_drift(report)
    assert drift.tolist() == [[first["hellinger"][1], first["hellinger"][3]],       # (step, newest row's track)
                              [second["hellinger"][0], second["hellinger"][1]]]
    for w in history["new_words"][0]:
        w["term"] = f"w{w.pop('id')}"
    for w in history["new_words"][1]:
        w["term"] = f"w{w.pop('id')}"
    plot(str(tmp_path / "drift.png"), report, 6)
    assert (tmp_path / "drift.png").read_bytes()[:4] == b"\x89PNG"
