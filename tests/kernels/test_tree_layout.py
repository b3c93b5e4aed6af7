"""The tree structure (inference/tree_layout.py) against direct enumeration of paths, per-group Dirichlet terms
and the
joint (topic, path) phi of eq 5.5; a tree without concepts is flat LDA bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import digamma

from inference.tree_layout import TreeLayout
from inference.elbo import dirichlet_prior_term, neg_entropy
from inference.layout import VocabLayout

V = 7
CONCEPTS = np.array([[1, 4], [1, 5], [2, 4]])     # word 1 and word 4 in two concepts each; 0, 3, 6 on the root


def paths(tree: TreeLayout):
    """Every path as (word, [edge indices]) by direct enumeration."""
    R0 = tree.num_root_children - tree.num_concepts
    out = [(int(w), [r]) for r, w in enumerate(tree.root_words)]
    for c, (a, b) in enumerate(tree.concept_words):
        out.append((int(a), [R0 + c, tree.num_root_children + 2 * c]))
        out.append((int(b), [R0 + c, tree.num_root_children + 2 * c + 1]))
    return out


def groups(tree: TreeLayout):
    R = tree.num_root_children
    return [np.arange(R)] + [np.array([R + 2 * c, R + 2 * c + 1]) for c in range(tree.num_concepts)]


def test_shape_and_edge_priors():
    tree = TreeLayout(V, CONCEPTS)
    assert list(tree.root_words) == [0, 3, 6] and tree.num_root_children == 6 and tree.parameter_size == 12
    assert list(tree.word_degree()) == [0, 2, 1, 0, 2, 1, 0]
    beta = tree.edge_priors(0.1, 100)
    np.testing.assert_allclose(beta[:3], 0.1)                                    # root -> root words
    np.testing.assert_allclose(beta[3:6], [0.1 * (1 / 2 + 1 / 2), 0.1 * (1 / 2 + 1), 0.1 * (1 + 1 / 2)])
    np.testing.assert_allclose(beta[6:], [5, 5, 5, 10, 10, 5])                    # 100 * 0.1 / deg(word)
    flat = TreeLayout(V, np.zeros((0, 2), dtype=int))
    np.testing.assert_array_equal(flat.edge_priors(0.1), np.full(V, 0.1))
    with pytest.raises(ValueError, match="itself"):
        TreeLayout(V, np.array([[2, 2]]))


def test_word_weights_and_topic_word_are_sums_over_paths():
    tree = TreeLayout(V, CONCEPTS)
    lam = np.random.default_rng(0).gamma(2.0, 1.0, size=tree.parameter_size)
    elog = np.empty_like(lam)
    mean = np.empty_like(lam)
    for g in groups(tree):
        elog[g] = digamma(lam[g]) - digamma(lam[g].sum())
        mean[g] = lam[g] / lam[g].sum()
    expected_digamma, expected_mean = np.zeros(V), np.zeros(V)
    for word, edges in paths(tree):
        expected_digamma[word] += np.exp(elog[edges].sum())
        expected_mean[word] += np.prod(mean[edges])
    got_elog, prior_term, entropy_term = tree.topic_terms(lam, tree.edge_priors(0.1))
    np.testing.assert_allclose(got_elog, elog, rtol=1e-13)
    np.testing.assert_allclose(np.exp(tree.log_word_weights(lam, got_elog, False)), expected_digamma, rtol=1e-13)
    np.testing.assert_allclose(np.exp(tree.log_word_weights(lam, got_elog, True)), expected_mean, rtol=1e-13)
    np.testing.assert_allclose(tree.normalise(lam[None, :])[0], expected_mean, rtol=1e-13)
    assert tree.normalise(lam).sum() == pytest.approx(1.0)
    np.testing.assert_allclose(np.exp(tree.dirichlet_expectation(lam)), expected_digamma, rtol=1e-13)
    beta = tree.edge_priors(0.1)
    assert prior_term == pytest.approx(sum(dirichlet_prior_term(beta[g], elog[g]) for g in groups(tree)), rel=1e-12)
    assert entropy_term == pytest.approx(-sum(neg_entropy(lam[g], elog[g]) for g in groups(tree)), rel=1e-12)


@pytest.mark.parametrize("mean_weights", [False, True])
def test_split_statistics_are_the_joint_topic_path_phi_of_eq_5_5(mean_weights):
    """The reducer's lambda from word statistics (the E-step run on the word weights W) equals beta + the
    statistics of the joint (topic, path) phi computed path by path."""
    tree = TreeLayout(V, CONCEPTS)
    rng = np.random.default_rng(1)
    K = 3
    previous = rng.gamma(2.0, 1.0, size=(K, tree.parameter_size))
    beta = tree.edge_priors(0.1, 100)
    exp_elog_theta = rng.random(K) + 0.1          # one document, its exp(E[log theta])
    counts = rng.integers(0, 4, size=V).astype(float)
    edge_values = tree.mean_edges(previous) if mean_weights else np.exp(tree.dirichlet_expectation_edges(previous))
    # direct: phi over (k, path) for each word, normalised over every topic and every path ending at the word
    direct = np.tile(beta, (K, 1))
    for w in range(V):
        weights = [(k, edges, exp_elog_theta[k] * np.prod(edge_values[k, edges]))
                   for k in range(K) for word, edges in paths(tree) if word == w]
        norm = sum(x for _, _, x in weights)
        for k, edges, x in weights:
            direct[k, edges] += counts[w] * x / norm
    # the engine: E-step on W, word statistics per topic, split by the reducer
    W = np.stack([np.exp(tree.log_word_weights(previous[k], tree.dirichlet_expectation_edges(previous[k]),
                                               mean_weights))
                  for k in range(K)])
    word_stats = counts[None, :] * exp_elog_theta[:, None] * W / (exp_elog_theta @ W)[None, :]
    for k in range(K):
        totals = tree.accumulator_start(beta) + word_stats[k]
        np.testing.assert_allclose(tree.parameters_from(totals, beta, previous[k], mean_weights), direct[k],
                                   rtol=1e-12)


def test_a_tree_without_concepts_is_flat_lda_bit_for_bit():
    flat, lda = TreeLayout(V, np.zeros((0, 2), dtype=int)), VocabLayout.monolingual(V)
    rng = np.random.default_rng(2)
    lam, eta = rng.gamma(2.0, 1.0, size=V), np.full(V, 0.1)
    for a, b in zip(flat.topic_terms(lam, eta), lda.topic_terms(lam, eta)):
        np.testing.assert_array_equal(a, b)
    elog = lda.topic_terms(lam, eta)[0]
    for mean in (False, True):
        np.testing.assert_array_equal(flat.log_word_weights(lam, elog, mean), lda.log_word_weights(lam, elog, mean))
    totals = flat.accumulator_start(eta) + rng.random(V)
    np.testing.assert_array_equal(flat.parameters_from(totals, eta, lam, False), totals)
    assert flat.parameter_size == V
