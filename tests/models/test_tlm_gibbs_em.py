"""Gibbs EM of the topic-based language model (Wallach Alg. 3.1) with S samples per M-step (``em_samples``),
without Spark: the M-step waits for S samples, then maximises the sum of their joints sum_s log P(w, z^(s) | U)
(3.26) + (3.27), computed here directly from dense counts, not one sample's; a resumed run whose checkpoint lies
inside a pool refuses in one line."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import gammaln

from drivers.models.tlm.model import TopicLM
from inference.errors import RefusedError
from inference.gibbs.model import SegmentedBlock
from inference.gibbs.tables import merge
from test_tlm import sample_tlm

V, K, S = 5, 3, 3


def drawn(seed):
    """A block drawn from the TLM with prior 2 (:func:`test_tlm.sample_tlm`: alpha 0.3, beta 2) and S samples of z:
    the drawn topics with a quarter of them drawn again uniformly (so every sample differs and the joint's maximum
    in alpha m and beta n stays finite)."""
    docs, z, _ = sample_tlm(n_docs=8, length=20, V=V, K=K, alpha=0.3, beta=2.0, seed=seed)
    rng = np.random.default_rng(seed)
    samples = [np.where(rng.random(z.shape[0]) < 0.25, rng.integers(0, K, z.shape[0]), z).astype(np.int32)
               for _ in range(S)]
    return SegmentedBlock.from_segments(docs), samples


def tables_of(model, block, z):
    counts = model.table_counts(block, {"z": z}, None)
    return {t.name: merge(t, [counts[t.name]]) for t in model.count_tables()}


def direct_joint(block, z, alpha_m, bn):
    """log P(w, z | alpha m, beta n_t), (3.26) + (3.27), from dense counts N[w', t, w] and N[d, t]."""
    N = np.zeros((V + 1, K, V))
    ndk = np.zeros((block.n_docs, K))
    n = 0
    for d in range(block.n_docs):
        for s in range(block.doc_ptr[d], block.doc_ptr[d + 1]):
            previous = V
            for w in block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]]:
                N[previous, z[n], w] += 1
                ndk[d, z[n]] += 1
                previous, n = int(w), n + 1
    value = 0.0
    for previous, t in itertools.product(range(V + 1), range(K)):
        value += gammaln(bn[t].sum()) - gammaln(N[previous, t].sum() + bn[t].sum()) + np.sum(
            gammaln(N[previous, t] + bn[t]) - gammaln(bn[t]))
    a = np.asarray(alpha_m)
    return value + np.sum(gammaln(a.sum()) - gammaln(ndk.sum(axis=1) + a.sum()) + np.sum(gammaln(ndk + a) - gammaln(a),
                                                                                       axis=1))


def pooled_objective(block, zs, hyper, model):
    return sum(direct_joint(block, z, hyper["alpha"], model.prior(hyper).bn) for z in zs)


@pytest.mark.parametrize("variant", ["1", "2"])
def test_the_m_step_waits_for_its_samples_and_maximises_their_summed_joint(variant):
    block, zs = drawn(5)
    pooled_model = TopicLM(K, V)
    hyper = start = pooled_model.initial_hyper(prior_variant=variant, alpha=0.5, beta=2.0, em_samples=S)
    for s, z in enumerate(zs):
        _, hyper, _ = pooled_model.global_step(tables_of(pooled_model, block, z), hyper, np.zeros(0), s)
        if s < S - 1:       # the E-step goes on: nothing fitted yet
            assert hyper["alpha"] == start["alpha"] and hyper["beta_n"] is None and hyper["em_pooled"] == s + 1
    assert hyper["em_pooled"] == 0 and hyper["beta_n"] is not None

    # one sample per M-step (the old schedule) fits the last sample alone: a different, worse value of the pool's
    # objective
    single_model = TopicLM(K, V)
    single = single_model.initial_hyper(prior_variant=variant, alpha=0.5, beta=2.0)
    _, single, _ = single_model.global_step(tables_of(single_model, block, zs[-1]), single, np.zeros(0), 0)
    best = pooled_objective(block, zs, hyper, pooled_model)
    assert best > pooled_objective(block, zs, single, single_model) + 1e-3
    assert not np.allclose(hyper["alpha"], single["alpha"], rtol=1e-3)

    # a stationary point of the summed joint: every coordinate of alpha m and beta n moved by +-0.1% lowers it
    # (rows of beta n are tied under prior 1)
    base_alpha, base_bn = np.asarray(hyper["alpha"]), np.asarray(pooled_model.prior(hyper).bn)
    for k, sign in itertools.product(range(K), (-1, 1)):
        alpha = base_alpha.copy()
        alpha[k] *= 1 + sign * 1e-3
        assert pooled_objective(block, zs, dict(hyper, alpha=alpha.tolist()), pooled_model) < best
    rows = [slice(None)] if variant == "1" else range(K)
    for row, w, sign in itertools.product(rows, range(V), (-1, 1)):
        bn = base_bn.copy()
        bn[row, w] *= 1 + sign * 1e-3
        moved = dict(hyper, beta_n=bn[0].tolist() if variant == "1" else bn.tolist())
        assert pooled_objective(block, zs, moved, pooled_model) < best


def test_a_run_resumed_inside_a_pool_refuses_in_one_line():
    block, _ = drawn(6)
    model = TopicLM(K, V)
    hyper = model.initial_hyper(prior_variant="2", em_samples=S)
    z = np.zeros(block.n_tokens, np.int32)
    _, hyper, _ = model.global_step(tables_of(model, block, z), hyper, np.zeros(0), 0)
    resumed = TopicLM(K, V)     # a new driver: the pooled sample was not in the checkpoint
    with pytest.raises(RefusedError, match="middle of Gibbs EM's pool of 3 samples") as caught:
        resumed.global_step(tables_of(resumed, block, z), hyper, np.zeros(0), 1)
    assert "\n" not in str(caught.value)
