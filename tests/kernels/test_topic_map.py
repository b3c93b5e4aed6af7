"""The browser's numbers (inference/topic_map.py) against direct implementations of their definitions and of
pyLDAvis' ``_prepare.py`` formulas (written out here: pyLDAvis is not a dependency)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import entropy

from inference import topic_map


def random_topics(K, V, seed, concentration=0.05):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, concentration), size=K)
    phi = np.maximum(phi, 1e-300)          # Dirichlet draws underflow to 0 at this concentration
    return phi / phi.sum(axis=1, keepdims=True), rng


def test_js_divergence_is_pyldavis_jensen_shannon():
    phi, _ = random_topics(6, 500, seed=1)
    phi[0, :450] = 1e-250                  # tiny probabilities: log space must hold
    phi[0] /= phi[0].sum()
    got = topic_map.js_divergences(phi)
    for i in range(6):
        for j in range(6):
            m = 0.5 * (phi[i] + phi[j])
            direct = 0.5 * (entropy(phi[i], m) + entropy(phi[j], m))     # pyLDAvis _jensen_shannon
            assert got[i, j] == pytest.approx(direct, rel=1e-9, abs=1e-12)
    assert np.all(got <= np.log(2) + 1e-12) and np.allclose(np.diag(got), 0)


def pyldavis_pcoa(pair_dists, n_components=2):
    """pyLDAvis ``_pcoa`` as written there (np.linalg.eig of the double-centred matrix)."""
    n = pair_dists.shape[0]
    H = np.eye(n) - np.ones((n, n)) / n
    B = -H.dot(pair_dists ** 2).dot(H) / 2
    eigvals, eigvecs = np.linalg.eig(B)
    ix = eigvals.argsort()[::-1][:n_components]
    eigvals, eigvecs = eigvals[ix].real, eigvecs[:, ix].real
    eigvals[np.isclose(eigvals, 0)] = 0
    eigvecs[:, eigvals < 0] = 0
    eigvals[eigvals < 0] = 0
    return np.sqrt(eigvals) * eigvecs


def test_pcoa_matches_pyldavis_up_to_the_sign_of_each_axis():
    phi, _ = random_topics(12, 300, seed=2)
    d = topic_map.js_divergences(phi)
    ours, theirs = topic_map.pcoa(d), pyldavis_pcoa(d)
    for axis in range(2):
        sign = np.sign(ours[:, axis] @ theirs[:, axis])
        np.testing.assert_allclose(ours[:, axis], sign * theirs[:, axis], atol=1e-10)


def test_pcoa_recovers_points_of_the_plane():
    """Distances between points of a plane are embedded exactly: the coordinates reproduce them."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(9, 2)) * [5.0, 1.0]
    d = np.linalg.norm(points[:, None] - points[None], axis=-1)
    coords = topic_map.pcoa(d)
    np.testing.assert_allclose(np.linalg.norm(coords[:, None] - coords[None], axis=-1), d, atol=1e-9)
    assert topic_map.pcoa(np.zeros((1, 1))).shape == (1, 2)
    assert np.all(topic_map.pcoa(np.zeros((3, 3))) == 0)       # identical topics: all at the origin


def test_relevance_and_lift_are_sievert_shirley_eq_1():
    phi, _ = random_topics(4, 50, seed=4, concentration=0.5)
    shares = np.array([0.4, 0.3, 0.2, 0.1])
    p_w = shares @ phi
    lift = topic_map.log_lift(phi, p_w)
    for k in range(4):
        for w in range(50):
            assert lift[k, w] == pytest.approx(np.log(phi[k, w] / p_w[w]), rel=1e-12)
            for lam in (0.0, 0.3, 1.0):
                assert topic_map.relevance(np.log(phi), lift, lam)[k, w] == pytest.approx(
                    lam * np.log(phi[k, w]) + (1 - lam) * np.log(phi[k, w] / p_w[w]), rel=1e-12)


def test_relevance_candidates_hold_the_top_words_at_every_lambda_of_the_grid():
    phi, _ = random_topics(5, 400, seed=5, concentration=0.1)
    shares = np.full(5, 0.2)
    p_w = shares @ phi
    candidates = topic_map.relevance_candidates(phi, p_w, 10)
    for k in range(5):
        expected = set()
        for lam in topic_map.LAMBDA_GRID:
            score = [lam * np.log(phi[k, w]) + (1 - lam) * np.log(phi[k, w] / p_w[w]) for w in range(400)]
            expected.update(np.argsort(score)[::-1][:10].tolist())
        assert set(candidates[k].tolist()) == expected
        assert 10 <= len(candidates[k]) <= 10 * len(topic_map.LAMBDA_GRID)
    # lambda = 1 ranks by probability, lambda = 0 by lift: different words lead
    ids = candidates[0]
    by_phi = ids[np.argmax(phi[0, ids])]
    by_lift = ids[np.argmax(phi[0, ids] / p_w[ids])]
    assert by_phi in ids and by_lift in ids


def test_saliency_is_pyldavis_topic_info():
    phi, _ = random_topics(5, 60, seed=6, concentration=0.3)
    shares = np.array([0.35, 0.25, 0.2, 0.15, 0.05])
    p_w = shares @ phi
    got = topic_map.saliency(phi, shares, p_w)
    for w in range(60):
        given = phi[:, w] / phi[:, w].sum()          # pyLDAvis: topic_term_dists / topic_term_dists.sum()
        distinct = np.sum(given * np.log(given / shares))
        assert got[w] == pytest.approx(p_w[w] * distinct, rel=1e-10)


def test_topic_shares_weigh_documents_by_length():
    theta = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    lengths = np.array([10, 30, 60])
    expected = (10 * theta[0] + 30 * theta[1] + 60 * theta[2]) / 100
    np.testing.assert_allclose(topic_map.topic_shares(theta, lengths), expected)
    np.testing.assert_allclose(topic_map.topic_shares(theta), theta.mean(axis=0))


@pytest.mark.parametrize("batch", [1, 7, 1000])
def test_top_documents_over_batches_is_the_global_ranking(batch):
    rng = np.random.default_rng(7)
    theta = rng.dirichlet(np.full(4, 0.3), size=101)
    theta[50] = theta[3]                          # a tie: the earlier document first
    ids = np.array([f"d{i:03d}" for i in range(101)], dtype=object)
    batches = ((ids[s:s + batch], theta[s:s + batch]) for s in range(0, 101, batch))
    got = topic_map.top_documents(batches, 4, 6)
    for k in range(4):
        order = np.lexsort((np.arange(101), -theta[:, k]))[:6]
        assert got[k] == [(ids[i], theta[i, k]) for i in order]


def test_nearest_topics():
    d = np.array([[0, 3, 1, 2], [3, 0, 5, 1], [1, 5, 0, 1], [2, 1, 1, 0]], dtype=float)
    np.testing.assert_array_equal(topic_map.nearest_topics(d, 2), [[2, 3], [3, 0], [0, 3], [1, 2]])
    assert topic_map.nearest_topics(d, 10).shape == (4, 3)


def test_pyldavis_format_is_pyldavis_prepare():
    """``browse --format pyldavis`` = pyLDAvis 3.4.1's ``prepare(...).to_json()`` on the same inputs (recorded by
    tests/bench/pyldavis_golden.py): every column of mdsDat, tinfo and token.table, R, lambda.step, topic.order;
    the principal coordinates up to each axis' sign (an eigenvector's sign is arbitrary)."""
    import json
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    from pyldavis_golden import GOLDEN, inputs

    from drivers.browse.pyldavis import prepared_data

    phi, theta, lengths, vocab = inputs()
    ours = json.loads(json.dumps(prepared_data(phi, lengths @ theta, vocab)))
    with open(GOLDEN) as f:
        theirs = json.load(f)
    assert set(ours) == set(theirs)
    for key in ("R", "lambda.step", "topic.order", "plot.opts"):
        assert ours[key] == theirs[key], key
    for table in ("mdsDat", "tinfo", "token.table"):
        assert set(ours[table]) == set(theirs[table]), table
        for column, values in theirs[table].items():
            mine = ours[table][column]
            assert len(mine) == len(values), (table, column)
            if values and isinstance(values[0], str):
                assert mine == values, (table, column)
            elif table == "mdsDat" and column in ("x", "y"):
                sign = np.sign(np.dot(mine, values))
                np.testing.assert_allclose(sign * np.asarray(mine), values, atol=1e-12)
            else:
                np.testing.assert_allclose(mine, values, rtol=1e-12, atol=1e-12, err_msg=f"{table}.{column}")




def smoothed_topics(K, V, tokens, seed, eta=0.01):
    """Topics as a trained model's are: eta + counts of ``tokens`` tokens from a Zipf law over each topic's own
    order of the words."""
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, V + 1)
    phi = np.empty((K, V))
    for k in range(K):
        phi[k, rng.permutation(V)] = rng.multinomial(tokens, zipf / zipf.sum()) + eta
    return phi / phi.sum(axis=1, keepdims=True)


def test_truncated_divergences_bracket_the_exact_ones():
    """The intertopic map of large models, in K^2 x the words above each topic's floor: every divergence within its
    stated bound below the exact one; exact for smoothed topics (their floor is flat) with far fewer words than V;
    within the mass left out for topics without a floor; keeping every word gives the exact divergences."""
    smoothed = smoothed_topics(15, 5000, 2000, seed=5)
    sparse, _ = random_topics(15, 3000, seed=5, concentration=0.02)
    for phi, left_out, close in ((smoothed, 1e-6, 1e-12), (sparse, 0.01, 0.01 * np.log(2))):
        exact = topic_map.js_divergences(phi)
        approx, bound = topic_map.js_divergences_truncated(phi, left_out)
        assert np.all(approx <= exact + 1e-12) and np.all(exact - approx <= bound + 1e-12)
        assert (exact - approx).max() < close, (exact - approx).max()
        assert bound.max() < close, bound.max()              # the stated bound is as tight as the error's scale
        everything, _ = topic_map.js_divergences_truncated(phi, left_out=0.0)
        np.testing.assert_allclose(everything, exact, rtol=1e-9, atol=1e-13)
    offsets, _ = topic_map.kept_words(smoothed, 1e-6)
    assert np.diff(offsets).max() < 5000 / 3                  # the words with counts: K^2 x those, not K^2 V
    assert (exact - approx).max() > 0                         # the sparse topics: some mass was left out
    small, worst = topic_map.topic_divergences(sparse)
    assert worst == 0.0 and np.array_equal(small, topic_map.js_divergences(sparse))
