"""Held-out perplexity of the Gibbs models (inference/gibbs/heldout.py): the document-completion split and the
estimator against a slow reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from drivers.models.lda_gibbs.model import LdaGibbs
from drivers.models.stm import STM
from inference.gibbs.heldout import HeldoutSchedule, heldout_loglik, perplexity, split_observed
from inference.gibbs.model import SegmentedBlock, task_seed


def _block(seed=0, docs=6, V=30):
    rng = np.random.default_rng(seed)
    return SegmentedBlock.from_segments([
        (f"doc{d}", [rng.integers(0, V, size=rng.integers(1, 12)).tolist() for _ in range(rng.integers(1, 6))])
        for d in range(docs)])


def _segment_words(block, s):
    return sorted(block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]].tolist())


def test_split_keeps_every_segment_and_word():
    """Per segment: ceil(F L) words observed (at least one), the others scored; together they are the segment's
    words; documents and segments are kept in order."""
    block = _block()
    for fraction in (0.2, 0.5, 0.8):
        observed, scored = split_observed(block, fraction, seed=3)
        for part in (observed, scored):
            assert list(part.doc_ids) == list(block.doc_ids) and np.array_equal(part.doc_ptr, block.doc_ptr)
        for s in range(block.n_segments):
            length = block.seg_ptr[s + 1] - block.seg_ptr[s]
            n_obs = observed.seg_ptr[s + 1] - observed.seg_ptr[s]
            assert n_obs == max(1, math.ceil(fraction * length))
            assert sorted(_segment_words(observed, s) + _segment_words(scored, s)) == _segment_words(block, s)


def test_split_depends_on_seed_and_document_only():
    """The same document gets the same split in any block (any partitioning), another seed another split."""
    block = _block(docs=8)
    observed, _ = split_observed(block, 0.5, seed=3)
    d = 5
    alone = SegmentedBlock.from_segments([(block.doc_ids[d], [
        block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]] for s in range(block.doc_ptr[d], block.doc_ptr[d + 1])])])
    observed_alone, _ = split_observed(alone, 0.5, seed=3)
    tokens = slice(observed.seg_ptr[observed.doc_ptr[d]], observed.seg_ptr[observed.doc_ptr[d + 1]])
    assert np.array_equal(observed.words[tokens], observed_alone.words)
    other, _ = split_observed(block, 0.5, seed=4)
    assert not np.array_equal(other.words, observed.words)


@pytest.mark.parametrize("model_class", [LdaGibbs, STM])
def test_completion_estimator_matches_slow_reference(model_class):
    """heldout_loglik with ``observed``: the model's sampler runs on the observed words only (same seeds), and
    every scored word w of segment s adds log mean_samples sum_k nu-hat[s, k] phi[w, k], computed here by loops."""
    K, V = 3, 30
    block = _block(seed=1, V=V)
    phi_vk = np.random.default_rng(2).dirichlet(np.ones(K), size=V)    # any positive V x K matrix will do
    model = model_class(K, V)
    hyper = model.initial_hyper()
    schedule = HeldoutSchedule.default(12, 3, observed=0.5)
    got = heldout_loglik(model, block, hyper, phi_vk, schedule, seed=7, partition=2)

    observed, scored = split_observed(block, 0.5, 7)
    nwk, nk = np.zeros((V, K), dtype=np.int32), np.zeros(K, dtype=np.int64)
    state = model.init_state(observed, hyper, nwk, nk, task_seed(7, 0, 2, 10))
    samples = []
    for t in range(1, schedule.iterations + 1):
        model.sweep(observed, state, hyper, nwk, nk, task_seed(7, t, 2, 10), frozen_phi=phi_vk)
        model.local_hyper_update(observed, state, hyper, task_seed(7, t, 2, 11))
        if schedule.is_sample(t):
            samples.append(model.segment_topic(observed, state, hyper).copy())
    loglik = 0.0
    for s in range(scored.n_segments):
        for w in scored.words[scored.seg_ptr[s]:scored.seg_ptr[s + 1]]:
            loglik += math.log(sum(sum(nu[s, k] * phi_vk[w, k] for k in range(K)) for nu in samples) / len(samples))
    assert len(samples) == 3
    assert got[1] == scored.n_tokens and got[2] == block.n_docs
    assert got[0] == pytest.approx(loglik, rel=1e-10)


def test_completion_is_a_prediction():
    """On LDA data with the true topics, the unseen words are predicted better than by shuffled topics, and worse
    than when the same words are fitted and scored (that estimator is optimistic)."""
    K, V = 4, 60
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.full(V, 0.1), size=K)
    docs = []
    for d in range(40):
        theta = rng.dirichlet(np.full(K, 0.3))
        docs.append((f"d{d:02d}", [[int(rng.choice(V, p=phi[k])) for k in rng.choice(K, size=10, p=theta)]
                                   for _ in range(4)]))
    block = SegmentedBlock.from_segments(docs)
    model = LdaGibbs(K, V)
    hyper = model.initial_hyper(alpha=0.3)
    phi_vk = np.ascontiguousarray(phi.T)
    score = lambda phi, observed: perplexity(*heldout_loglik(
        model, block, hyper, phi, HeldoutSchedule.default(30, observed=observed), seed=0, partition=0)[:2])
    true = score(phi_vk, 0.5)
    shuffled = score(np.ascontiguousarray(phi_vk[np.random.default_rng(1).permutation(V)]), 0.5)
    same_words = score(phi_vk, None)
    assert same_words < true < 0.8 * shuffled, (same_words, true, shuffled)
    with pytest.raises(ValueError):
        HeldoutSchedule.default(30, observed=1.0)
