"""Crosslingual evaluation kernels against direct computation: CNPMI over aligned tuples, bilingual lexicon
induction, retrieval's mean reciprocal rank."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inference.blocks import DocBlock
from inference.heldout import (PairCounts, cooccurrence_counts, crosslingual_npmi, distinct_word_ids,
                               npmi_coherence, word_pairs)
from inference.retrieval import lexicon_induction, retrieval_scores


def test_cnpmi_is_the_mean_npmi_of_cross_language_pairs_by_document_frequency():
    rng = np.random.default_rng(0)
    n_docs, V = 60, 12                          # ids 0-5: language A, 6-11: language B
    incidence = rng.random((n_docs, V)) < 0.35
    docs = [(f"d{d}", np.flatnonzero(incidence[d]), rng.integers(1, 4, size=incidence[d].sum()).astype(float))
            for d in range(n_docs) if incidence[d].any()]
    block = DocBlock.from_documents(docs)
    top_a, top_b = np.array([[0, 2, 4], [1, 3, 5]]), np.array([[6, 7, 8], [9, 10, 11]])
    word_ids = distinct_word_ids(np.concatenate([top_a, top_b], axis=1))
    counts = cooccurrence_counts(block, word_ids)
    got = crosslingual_npmi(top_a, top_b, word_ids, counts, block.n_docs)
    present = incidence[incidence.any(axis=1)]
    N = present.shape[0]

    def npmi(i, j):                             # document frequencies (not token counts)
        both = np.sum(present[:, i] & present[:, j])
        if both == 0:
            return -1.0
        p_ij, p_i, p_j = both / N, present[:, i].mean(), present[:, j].mean()
        return math.log(p_ij / (p_i * p_j)) / -math.log(p_ij)

    expected = [np.mean([npmi(i, j) for i in a for j in b]) for a, b in zip(top_a, top_b)]
    np.testing.assert_allclose(got["per_topic"], expected, rtol=1e-12)
    assert got["mean"] == pytest.approx(np.mean(expected))
    # only the pairs NPMI needs, counted sparsely: the same numbers as the dense matrix
    ia, ib = np.searchsorted(word_ids, top_a), np.searchsorted(word_ids, top_b)
    pairs = word_pairs((np.repeat(ia, 3, axis=1), np.tile(ib, (1, 3))), (ia[:, [0, 0, 1]], ia[:, [1, 2, 2]]))
    sparse = PairCounts(len(word_ids), pairs, cooccurrence_counts(block, word_ids, pairs))
    assert crosslingual_npmi(top_a, top_b, word_ids, sparse, block.n_docs) == got
    assert npmi_coherence(top_a, word_ids, sparse, block.n_docs) == npmi_coherence(top_a, word_ids, counts,
                                                                                   block.n_docs)
    with pytest.raises(KeyError):
        sparse[np.array([0]), np.array([1])]                    # (words 0 and 1 of word_ids: never asked for)


def test_lexicon_induction_ranks_translations_by_topic_vectors():
    a = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]])
    b = np.array([[0.9, 0.1, 0], [0, 0, 1], [0.1, 0.9, 0], [0.5, 0.5, 0.1]])
    result = lexicon_induction(a, b, [(0, 0), (1, 2), (2, 1), (3, 0)])
    # queries 0, 1, 2 find their translation first; query 3's nearest is b[3], its translation b[0] second
    assert result == {"queries": 4, "accuracy_at_1": 0.75, "mean_reciprocal_rank": pytest.approx((3 + 0.5) / 4)}
    assert lexicon_induction(a, b, [(3, 0), (3, 3)])["accuracy_at_1"] == 1.0    # its best translation counts


def test_retrieval_reports_the_mean_reciprocal_rank():
    theta_a = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    theta_b = np.array([[0.6, 0.4], [0.1, 0.9], [0.95, 0.05]])   # partner ranks 2, 1 and 3 (no ties)
    scores = retrieval_scores(theta_a, theta_b)
    assert scores["mean_rank"] == pytest.approx(2.0)
    assert scores["mean_reciprocal_rank"] == pytest.approx((1 / 2 + 1 + 1 / 3) / 3)
