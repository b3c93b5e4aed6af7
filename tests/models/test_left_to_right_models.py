"""Every model's ``left_to_right`` hook (inference/gibbs/model.py) on tiny trained states, no Spark: the exact
models (dp-mixture, bigram-lm) against a slow left-to-right chain of predictives, the default (LDA) against the
kernel, LDA_P's segment documents summed back, the segmented models' document-level approximation said, and
out-of-vocabulary ids skipped and counted by every model."""
from __future__ import annotations

import math

import numpy as np
import pytest

from drivers.models.bigram_lm import BigramLM
from drivers.models.dp_mixture.model import DPMixture
from drivers.models.lda_gibbs.model import LdaGibbs
from inference.gibbs.model import SegmentedBlock
from drivers.models.seqlda.model import SeqLDA
from drivers.models.stm import STM
from drivers.models.adatm.model import AdaTM
from inference.left_to_right import LeftToRight, lda_scores

V = 6
TEST = SegmentedBlock.from_segments([("a", [[0, 1, 1], [3, 5]]), ("b", [[2, 2, 4, 0]])])
SETTINGS = LeftToRight(particles=4, resample=True, seed=3)


def _with_oov(block: SegmentedBlock) -> SegmentedBlock:
    """The block with an id V after the first token of every segment and -1 at the end of the last."""
    segments = {}
    for d, doc_id in enumerate(block.doc_ids):
        segs = []
        for s in range(block.doc_ptr[d], block.doc_ptr[d + 1]):
            words = block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]].tolist()
            segs.append(words[:1] + [V] + words[1:])
        segs[-1].append(-1)
        segments[doc_id] = segs
    return SegmentedBlock.from_segments(list(segments.items()))


def _check_oov(model, hyper, phi_vk):
    """The block with out-of-vocabulary ids scores as without them; they are counted per document."""
    clean = model.left_to_right(TEST, hyper, phi_vk, SETTINGS).per_document
    dirty = model.left_to_right(_with_oov(TEST), hyper, phi_vk, SETTINGS).per_document
    np.testing.assert_array_equal(dirty[:, :3], clean[:, :3])
    np.testing.assert_array_equal(dirty[:, 3], [3, 2])
    np.testing.assert_array_equal(clean[:, 2], [5, 4])


def test_dp_mixture_is_the_left_to_right_chain_with_the_cluster_summed_out():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 5, (3, V)).astype(np.int32)
    docs = np.array([4, 2, 1], dtype=np.int64)
    beta, zeta = 0.3, 0.7
    model = DPMixture(3, V)
    model.bind_arrays({"cluster_words": words, "cluster_docs": docs}, {"hyper": {"beta": beta, "zeta": zeta}})
    result = model.left_to_right(TEST, {"beta": beta, "zeta": zeta}, None, SETTINGS)
    assert result.protocol.startswith("exact")

    def chain(doc):
        """sum_n log p(w_n | w_<n) with p(c | w_<n) updated token by token (C trained clusters and a new one)."""
        counts = np.vstack([words, np.zeros(V)]).astype(float)
        log_post = np.log(np.append(docs, zeta) / (docs.sum() + zeta))
        total = 0.0
        for w in doc:
            pred = (counts[:, w] + beta) / (counts.sum(axis=1) + V * beta)
            joint = log_post + np.log(pred)
            step = np.logaddexp.reduce(joint)
            total += step
            log_post = joint - step
            counts[:, w] += 1
        return total

    ptr = TEST.token_ptr()
    expected = [chain(TEST.words[ptr[d]:ptr[d + 1]]) for d in range(2)]
    np.testing.assert_allclose(result.per_document[:, 0], expected, rtol=1e-12)
    np.testing.assert_array_equal(result.per_document[:, 0], result.per_document[:, 1])
    _check_oov(model, {"beta": beta, "zeta": zeta}, None)


def test_bigram_lm_is_its_predictive_chain():
    rng = np.random.default_rng(1)
    model = BigramLM(1, V)
    keys = np.unique(rng.integers(0, (V + 1) * V, 20)).astype(np.int64)
    model._bind(keys, rng.integers(1, 5, keys.shape[0]), rng.uniform(0.1, 1.0, V))
    result = model.left_to_right(TEST, {}, None, SETTINGS)
    assert result.protocol.startswith("exact")
    np.testing.assert_allclose(result.per_document[:, 0], model.document_logliks(TEST), rtol=1e-12)
    np.testing.assert_array_equal(result.per_document[:, 0], result.per_document[:, 1])
    _check_oov(model, {}, None)


def _lda_inputs(K=3, seed=2):
    rng = np.random.default_rng(seed)
    return {"alpha": rng.uniform(0.1, 1.0, K).tolist(), "beta": 0.1}, rng.dirichlet(np.ones(V), K).T.copy()


def test_tree_models_on_the_gibbs_engine_take_the_default():
    """tlda/ptlda --inference gibbs: LDA's document side, the tree's marginal p(w | k) as phi (topic_word.npy)."""
    from drivers.models.tree.model import TreeLDAGibbs
    from inference.gibbs.model import GibbsModel

    assert TreeLDAGibbs.left_to_right is GibbsModel.left_to_right


def test_default_is_lda_and_lda_p_sums_its_segment_documents():
    hyper, phi_vk = _lda_inputs()
    ptr = TEST.token_ptr()
    result = LdaGibbs(3, V).left_to_right(TEST, hyper, phi_vk, SETTINGS)
    np.testing.assert_array_equal(result.per_document,
                                  lda_scores(TEST.doc_ids, ptr, TEST.words, hyper["alpha"], phi_vk, SETTINGS))
    assert result.protocol.startswith("particles")
    segments = TEST.as_segment_documents()
    per_segment = lda_scores(segments.doc_ids, segments.token_ptr(), segments.words, hyper["alpha"], phi_vk,
                             SETTINGS)
    lda_p = LdaGibbs(3, V, segment_level=True).left_to_right(TEST, hyper, phi_vk, SETTINGS).per_document
    np.testing.assert_allclose(lda_p, [per_segment[0] + per_segment[1], per_segment[2]], rtol=1e-15)
    _check_oov(LdaGibbs(3, V), hyper, phi_vk)


def test_adatm_seats_adaptive_segments():
    hyper, phi_vk = _lda_inputs()
    hyper = dict(hyper, a=0.0, b=10.0, lambda_s=1.0, lambda_t=1.0)
    result = AdaTM(3, V).left_to_right(TEST, hyper, phi_vk, SETTINGS)
    assert result.protocol.startswith("particles") and "adaptive" in result.protocol
    assert np.all(np.isfinite(result.per_document)) and math.isclose(result.per_document[:, 2].sum(), 9)
    _check_oov(AdaTM(3, V), hyper, phi_vk)


def test_seqlda_seats_a_chain_with_the_training_documents_mean_b():
    hyper, phi_vk = _lda_inputs()
    model = SeqLDA(3, V)
    hyper = dict(hyper, a=0.0, b=10.0, b_mean=3.5)
    result = model.left_to_right(TEST, hyper, phi_vk, SETTINGS)
    assert result.protocol.startswith("particles") and "b_i = 3.5" in result.protocol
    _check_oov(model, hyper, phi_vk)
    fixed = model.left_to_right(TEST, dict(hyper, sample_b=False), phi_vk, SETTINGS)
    assert "b_i = 10" in fixed.protocol and not np.array_equal(fixed.per_document, result.per_document)


def test_stm_seats_particles_in_its_segments():
    """The STM's hook is its seating estimator (tests/kernels/test_left_to_right.py checks it against (5.2)); a
    large b makes every segment follow its document: LDA's importance estimate within 0.05 nats (400 particles)."""
    hyper, phi_vk = _lda_inputs()
    model = STM(3, V)
    result = model.left_to_right(TEST, dict(hyper, a=0.0, b=10.0), phi_vk, SETTINGS)
    assert result.protocol.startswith("particles: every particle seats")
    _check_oov(model, dict(hyper, a=0.0, b=10.0), phi_vk)
    lda = LdaGibbs(3, V).left_to_right(TEST, hyper, phi_vk, LeftToRight(400, True, 3)).per_document
    stm = model.left_to_right(TEST, dict(hyper, a=0.0, b=1e9), phi_vk, LeftToRight(400, True, 3)).per_document
    np.testing.assert_allclose(stm[:, 1], lda[:, 1], atol=0.05)


def test_dp_mixture_is_exact_on_long_documents_over_a_huge_vocabulary():
    """Extreme shapes (a 3,000-token document, V = 40,000, beta = 1e-4, 60 clusters of up to 10^5 tokens: each
    p(w_d | c) far below the smallest double) against the closed form, log sum_c pi_c DM(w_d | N_c + beta), by
    lnGamma ratios in log space."""
    from scipy.special import gammaln, logsumexp
    rng = np.random.default_rng(5)
    C, Vbig, beta, zeta = 60, 40_000, 1e-4, 2.5
    words = np.zeros((C, Vbig), dtype=np.int32)
    for c in range(C):
        support = rng.choice(Vbig, 2_000, replace=False)
        words[c, support] = rng.integers(0, 100, support.shape[0])
    docs = rng.integers(1, 50, C).astype(np.int64)
    doc = np.concatenate([rng.choice(np.flatnonzero(words[7]), 2_900), rng.integers(0, Vbig, 100)]).astype(np.int32)
    model = DPMixture(C, Vbig)
    model.bind_arrays({"cluster_words": words, "cluster_docs": docs}, {"hyper": {"beta": beta, "zeta": zeta}})
    block = SegmentedBlock.from_segments([("long", [doc.tolist()])])
    got = model.left_to_right(block, {"beta": beta, "zeta": zeta}, None, SETTINGS).per_document[0, 0]
    counts = np.vstack([words, np.zeros((1, Vbig), np.int32)]).astype(np.float64)
    ids, n = np.unique(doc, return_counts=True)
    log_prior = np.log(np.append(docs, zeta) / (docs.sum() + zeta))
    per = [log_prior[c] + np.sum(gammaln(counts[c, ids] + n + beta) - gammaln(counts[c, ids] + beta))
           - gammaln(counts[c].sum() + n.sum() + Vbig * beta) + gammaln(counts[c].sum() + Vbig * beta)
           for c in range(C + 1)]
    assert np.isfinite(got) and got < -20_000
    assert got == pytest.approx(logsumexp(per), rel=1e-11)
