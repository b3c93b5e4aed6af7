"""The tree LDA Gibbs kernel (drivers/models/tree/gibbs.py): the conditional of eq 5.2 against the joint (5.1)
enumerated on a tiny tree; a tree without concepts samples exactly what LDA's kernel samples."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammaln

from drivers.models.lda_gibbs.model import lda_init, lda_sweep
from drivers.models.tree.gibbs import edge_counts, log_joint_words, path_tables, token_weights, tree_init, tree_sweep
from inference.tree_layout import TreeLayout

ETA, LINK = 0.3, 4.0


def joint(tree, beta, alpha, docs, words, z, y, tables):
    """log p(w, z, y | alpha, beta): documents' Dirichlet-multinomials and the tree's (5.1)."""
    path_ptr, root_edge, leaf_edge, _ = tables
    K = alpha.shape[0]
    nek = edge_counts(words, z, y, path_ptr, root_edge, leaf_edge, tree.parameter_size, K).astype(np.int64)
    total = log_joint_words(tree, nek, beta)
    for start, end in zip(docs[:-1], docs[1:]):
        n = np.bincount(z[start:end], minlength=K)
        total += gammaln(alpha.sum()) - gammaln(alpha.sum() + n.sum()) + np.sum(gammaln(alpha + n) - gammaln(alpha))
    return total


def test_the_conditional_is_the_joint_enumerated():
    tree = TreeLayout(5, np.array([[0, 3], [1, 3]]))       # word 3: two paths; 2 and 4 on the root
    beta = tree.edge_priors(ETA, LINK)
    tables = path_tables(tree)
    path_ptr, root_edge, leaf_edge, concept = tables
    concept_mass = beta[tree.num_root_children:].reshape(-1, 2).sum(axis=1)
    rng = np.random.default_rng(0)
    K, alpha = 3, np.array([0.2, 0.5, 0.9])
    words = np.array([3, 0, 3, 2, 1, 4, 3, 3, 0], dtype=np.int32)
    docs = np.array([0, 4, 9])
    z = rng.integers(0, K, size=words.size).astype(np.int32)
    y = np.array([rng.integers(0, path_ptr[w + 1] - path_ptr[w]) for w in words], dtype=np.int32)
    for i in range(words.size):
        w = words[i]
        paths = path_ptr[w + 1] - path_ptr[w]
        # the kernel's weights, the token removed
        rest = np.ones(words.size, bool)
        rest[i] = False
        nek = edge_counts(words[rest], z[rest], y[rest], path_ptr, root_edge, leaf_edge, tree.parameter_size, K)
        nk = np.bincount(z[rest], minlength=K)
        d = int(np.searchsorted(docs, i, side="right") - 1)
        ndk = np.bincount(z[docs[d]:docs[d + 1]][rest[docs[d]:docs[d + 1]]], minlength=K)
        out = np.empty(K * paths)
        token_weights(out, w, ndk, nek, 1.0 / (nk + ETA * tree.vocab_size), alpha, beta, concept_mass, path_ptr,
                      root_edge, leaf_edge, concept)
        # the joint with every (topic, path) of the token
        logs = []
        for k in range(K):
            for p in range(paths):
                zz, yy = z.copy(), y.copy()
                zz[i], yy[i] = k, p
                logs.append(joint(tree, beta, alpha, docs, words, zz, yy, tables))
        expected = np.exp(np.array(logs) - max(logs))
        np.testing.assert_allclose(out / out.sum(), expected / expected.sum(), rtol=1e-10)


def test_a_tree_without_concepts_samples_what_lda_samples():
    V, K = 12, 4
    tree = TreeLayout(V, np.zeros((0, 2), dtype=np.int64))
    beta = tree.edge_priors(ETA)
    path_ptr, root_edge, leaf_edge, concept = path_tables(tree)
    rng = np.random.default_rng(3)
    words = rng.integers(0, V, size=300).astype(np.int32)
    token_ptr = np.array([0, 40, 90, 200, 300])
    alpha = np.full(K, 0.3)
    nwk, nk = np.zeros((V, K), dtype=np.int32), np.zeros(K, dtype=np.int64)
    nek, nk_tree = np.zeros((V, K), dtype=np.int32), np.zeros(K, dtype=np.int64)
    z_lda = lda_init(words, K, nwk, nk, 7)
    z_tree, y = tree_init(words, K, path_ptr, root_edge, leaf_edge, nek, nk_tree, 7)
    np.testing.assert_array_equal(z_tree, z_lda)
    for sweep in range(5):
        lda_sweep(token_ptr, words, z_lda, nwk, nk, alpha, ETA, np.zeros((1, 1)), False, 100 + sweep)
        tree_sweep(token_ptr, words, z_tree, y, nek, nk_tree, alpha, beta, V * ETA, np.zeros(0), path_ptr,
                   root_edge, leaf_edge, concept, 100 + sweep)
        np.testing.assert_array_equal(z_tree, z_lda)
    np.testing.assert_array_equal(nek, nwk)
    np.testing.assert_array_equal(nek, edge_counts(words, z_tree, y, path_ptr, root_edge, leaf_edge, V, K))


def test_sweeps_keep_the_counts_of_the_state():
    tree = TreeLayout(6, np.array([[0, 3], [1, 3], [2, 5]]))
    beta = tree.edge_priors(ETA, LINK)
    path_ptr, root_edge, leaf_edge, concept = path_tables(tree)
    concept_mass = beta[tree.num_root_children:].reshape(-1, 2).sum(axis=1)
    words = np.random.default_rng(4).integers(0, 6, size=200).astype(np.int32)
    K = 3
    nek, nk = np.zeros((tree.parameter_size, K), dtype=np.int32), np.zeros(K, dtype=np.int64)
    z, y = tree_init(words, K, path_ptr, root_edge, leaf_edge, nek, nk, 1)
    for sweep in range(4):
        tree_sweep(np.array([0, 120, 200]), words, z, y, nek, nk, np.full(K, 0.5), beta, 6 * ETA, concept_mass,
                   path_ptr, root_edge, leaf_edge, concept, sweep)
    np.testing.assert_array_equal(nek, edge_counts(words, z, y, path_ptr, root_edge, leaf_edge,
                                                   tree.parameter_size, K))
    assert nk.sum() == 200 and set(np.unique(y[words == 3])) <= {0, 1}
    assert beta[:tree.num_root_children].sum() == pytest.approx(6 * ETA)     # the root's mass is eta * V
    # the engine rebuilds nk from the shared (edge, topic) table: the root's edges count every token once (a
    # concept path's leaf edge must not count it again)
    from drivers.models.tree.gibbs import TreeGibbs

    model = TreeGibbs(K, 6)
    model.set_tree(tree)
    np.testing.assert_array_equal(model.topic_totals(nek), nk)
    np.testing.assert_array_equal(nk, np.bincount(z, minlength=K))
