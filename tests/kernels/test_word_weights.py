"""Log word weights (inference/word_weights.py): weights whose exp underflows in every topic (tree edges with tiny
priors at V = 100k+) give the same phi and statistics as the same weights shifted into range, and the ELBO moves by
exactly the shift; a non-finite value is named where it appears. Each test fails on the engine that passed
exp(E_q[log beta]) itself (the statistics of such a word were 0, its tree split 0/0)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import digamma, logsumexp

from inference.tree_layout import TreeLayout
from inference.blocks import DocBlock
from inference.heldout import fold_in, word_factor
from inference.mapper import EStepSettings, hybrid_block, map_block
from inference.reducer import topic_weights
from inference.word_weights import document_offsets, scale_by_word_maximum

K = 4
#: the shift that sends a word's log weights below exp's range (exp(-2000) == 0.0)
SHIFT = 2000.0


def block_and_log_weights(seed=0, docs=15, vocab=12):
    rng = np.random.default_rng(seed)
    block = DocBlock.from_documents([(f"d{d}", rng.choice(vocab, size=6, replace=False),
                                      rng.integers(1, 5, size=6).astype(float)) for d in range(docs)])
    log_weights = np.log(rng.dirichlet(np.full(vocab, 0.5), size=K).T)[block.vocab_ids]     # (U, K)
    return block, log_weights


def statistics_of(records):
    return {first: values.toarray() if hasattr(values, "toarray") else values
            for first, (_, _, _, values) in records}


def test_scaling_by_the_word_maximum():
    log_weights = np.array([[-1e4, -1e4 - 1.0, -np.inf], [0.0, -2.0, -1.0], [-np.inf, -np.inf, -np.inf]])
    weights, scale = scale_by_word_maximum(log_weights, topic_axis=1)
    np.testing.assert_allclose(weights, [[1.0, np.exp(-1.0), 0.0], [1.0, np.exp(-2.0), np.exp(-1.0)], [0, 0, 0]])
    np.testing.assert_array_equal(scale, [-1e4, 0.0, 0.0])
    weights_t, scale_t = scale_by_word_maximum(log_weights.T, topic_axis=0)
    np.testing.assert_array_equal(weights_t, weights.T)
    np.testing.assert_array_equal(scale_t, scale)
    block, _ = block_and_log_weights()
    local_scale = np.arange(len(block.vocab_ids), dtype=float)
    expected = [sum(block.counts[j] * local_scale[block.local_terms[j]] for j in range(block.indptr[d],
                                                                                       block.indptr[d + 1]))
                for d in range(block.n_docs)]
    np.testing.assert_allclose(document_offsets(block.indptr, block.local_terms, block.counts, local_scale), expected)


def test_estep_is_invariant_to_shifting_a_word_out_of_exp_range():
    block, log_weights = block_and_log_weights()
    shifted = log_weights.copy()
    words = np.arange(0, len(block.vocab_ids), 2)          # every other word: all its topics' exp underflow
    shifted[words] -= SHIFT
    assert np.all(np.exp(shifted[words]) == 0.0)
    alpha = np.full(K, 0.3)
    settings = EStepSettings(tol=1e-10, max_iter=500)
    gamma, records, stats = map_block(0, block, None, log_weights, alpha, settings)
    gamma_s, records_s, stats_s = map_block(0, block, None, shifted, alpha, settings)
    np.testing.assert_allclose(gamma_s, gamma, rtol=1e-9)
    ours, theirs = statistics_of(records_s), statistics_of(records)
    for k in theirs:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-9, atol=1e-12)
    tokens_of_shifted = sum(block.counts[j] for j in range(len(block.counts)) if block.local_terms[j] in set(words))
    assert stats_s[K] == pytest.approx(stats[K] - SHIFT * tokens_of_shifted, rel=1e-12)   # doc ELBO terms
    np.testing.assert_allclose(stats_s[:K], stats[:K], rtol=1e-9)                         # alpha statistics


def test_hybrid_step_is_invariant_to_shifting_a_word_out_of_exp_range():
    block, log_weights = block_and_log_weights(1)
    shifted = log_weights.copy()
    shifted[1::2] -= SHIFT
    alpha = np.full(K, 0.3)
    z, records, stats = hybrid_block(0, block, None, log_weights, alpha, 5, 3, 2, 2)
    z_s, records_s, stats_s = hybrid_block(0, block, None, shifted, alpha, 5, 3, 2, 2)
    np.testing.assert_array_equal(z_s, z)
    ours, theirs = statistics_of(records_s), statistics_of(records)
    for k in theirs:
        np.testing.assert_array_equal(ours[k], theirs[k])
    tokens_of_shifted = sum(block.counts[j] for j in range(len(block.counts)) if block.local_terms[j] % 2 == 1)
    assert stats_s[K] == pytest.approx(stats[K] - SHIFT * tokens_of_shifted, rel=1e-9)   # sampled log joint


def test_fold_in_elbo_with_the_word_factor_is_exact_where_exp_underflows():
    block, log_weights = block_and_log_weights(2)
    V = int(block.vocab_ids.max()) + 1
    model_log = np.full((K, V), -5.0)
    model_log[:, block.vocab_ids] = log_weights.T
    alpha = np.full(K, 0.2)
    plain = fold_in(block, np.exp(model_log), alpha, 1e-10, 500)
    shifted = model_log - SHIFT
    weights, log_scale = word_factor(shifted)
    fit = fold_in(block, weights, alpha, 1e-10, 500, log_scale)
    np.testing.assert_allclose(fit.gamma, plain.gamma, rtol=1e-9)
    np.testing.assert_allclose(fit.doc_elbo, plain.doc_elbo - SHIFT * np.add.reduceat(block.counts, block.indptr[:-1]),
                               rtol=1e-12)


def underflowing_tree():
    """Word 0 in 40 concepts, one with each of the words 1..40; words 41..44 on the root. With eta = 1e-3 and link
    strength 1 a root -> concept edge has the prior 1e-3 (E_q[log pi] near -1000), word 0's leaf edges 2.5e-5."""
    concepts = np.array([[0, w] for w in range(1, 41)])
    return TreeLayout(45, concepts)


def test_tree_split_and_weights_where_every_path_underflows():
    tree = underflowing_tree()
    beta = tree.edge_priors(1e-3, 1.0)
    rng = np.random.default_rng(3)
    previous = beta + 0.0                                    # an edge without statistics keeps its prior
    previous[:tree.num_root_children - tree.num_concepts] += rng.gamma(1.0, 5.0, size=4)
    elog = tree.dirichlet_expectation_edges(previous)
    R0, R = tree.num_root_children - tree.num_concepts, tree.num_root_children
    log_paths = elog[R0:R][:, None] + elog[R:].reshape(-1, 2)                 # (C, 2)
    assert np.all(np.exp(log_paths) == 0.0)                                   # the failure's shape
    # log weights: log-sum-exp over each word's paths, by direct enumeration
    log_w = tree.log_word_weights(previous, elog, False)
    assert np.all(np.isfinite(log_w))
    assert log_w[0] == pytest.approx(logsumexp(log_paths[:, 0]), rel=1e-14)
    np.testing.assert_allclose(log_w[1:41], log_paths[:, 1], rtol=1e-14)
    np.testing.assert_allclose(log_w[41:], elog[:R0], rtol=1e-14)
    # the reducer's split: word 0's statistics over its 40 paths in proportion to exp(log path), as a softmax
    totals = tree.accumulator_start(beta)
    totals[0], totals[7] = 3.0, 2.0
    lam = tree.parameters_from(totals, beta, previous, False)
    assert np.all(np.isfinite(lam)) and np.all(lam > 0)
    share0 = np.exp(log_paths[:, 0] - logsumexp(log_paths[:, 0])) * 3.0
    np.testing.assert_allclose(lam[R:].reshape(-1, 2)[:, 0], beta[R:].reshape(-1, 2)[:, 0] + share0, rtol=1e-12)
    assert lam[R:].reshape(-1, 2)[6, 1] == pytest.approx(beta[R + 13] + 2.0)   # word 7: one path, all of it
    assert lam[R0:R].sum() == pytest.approx(beta[R0:R].sum() + 5.0)
    # the reducer's output for the mappers is finite too (it raised nothing)
    update = topic_weights(0, lam, beta, tree)
    assert np.all(np.isfinite(update.log_weight_row))


def test_reducer_names_the_first_non_finite_value():
    tree = underflowing_tree()
    beta = tree.edge_priors(1e-3, 1.0)
    lam = beta.copy()
    R = tree.num_root_children
    lam[R + 2 * 5 + 1] = np.nan
    with pytest.raises(FloatingPointError, match=r"topic 3: lambda of the edge concept 5 -> word id 6 is nan"):
        topic_weights(3, lam, beta, tree)
    with pytest.raises(FloatingPointError, match=r"partition 2: the ELBO terms of document 'd0'"):
        block, log_weights = block_and_log_weights()
        log_weights[block.local_terms[0], :] = np.nan
        map_block(2, block, None, log_weights, np.full(K, 0.3), EStepSettings())


def test_digamma_of_the_tree_priors_is_what_underflows():
    """Why a real tree meets this: eta = 1/K = 0.02 and a word with 30 translations on each side give a root ->
    concept prior of 0.02 * 2/30 and an E_q[log pi] below exp's range."""
    prior = 0.02 * 2 / 30
    assert np.exp(digamma(prior) - np.log(1e5)) == 0.0
