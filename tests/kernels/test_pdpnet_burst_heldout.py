"""Held-out documents under the burstiness side (issue 28, :mod:`drivers.models.pdp_network.burst_heldout`): a
test document's burst vectors start empty and are seated from its own tokens over phi[topic] frozen. Left to right:
the particles' products are unbiased for p(w | phi), checked against the sequential process enumerated on a tiny
document; document completion: the frozen sweep keeps phi and legal cells, the scored rows are the burst
predictive of the sample's cells."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models.pdp_network import burst_heldout, words_burst
from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.heldout import HeldoutSchedule, split_observed
from inference.pdpnet import kernels
from inference.pdpnet.bigram_left_to_right import bigram_particles
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import StirlingStack
from inference.pdpnet.sweep import ratio_tables
from tests.kernels.test_pdpnet_word_burst import burst_spec

V, K, ALPHA = 3, 2, 0.3
WORDS = [0, 2, 0, 0]
PHI = np.array([[0.5, 0.1], [0.3, 0.2], [0.2, 0.7]])        # (V, K) the trained topics, frozen


def _model(tmp_path, a, b, phi="dirichlet"):
    """burst_spec's network, or (``phi`` "pyp") its burst vectors over a Pitman-Yor phi[topic] over a corpus root
    (phi's a and b not the burst vectors': a held-out path reading the wrong ones is told apart)."""
    spec = burst_spec(0.4, a, b)
    if phi == "pyp":
        spec["nodes"]["base"] = {"index": ["corpus"], "over": "word", "dirichlet": 0.4}
        spec["nodes"]["phi"] = {"index": ["topic"], "over": "word", "pyp": {"a": 0.6, "b": 4.0},
                                "parents": [{"node": "base", "index": ["corpus"]}]}
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(spec))
    model = PdpNetwork(K, V)
    return model, model.initial_hyper(network=str(path))


def _sequential_log_p(a, b):
    """log p(w | phi) by the sequential process, every (topic, join or open) path enumerated: theta ~
    Dirichlet(ALPHA), the document's burst[k] a Chinese restaurant over phi_k (frozen)."""
    def rec(i, topics, n, t):
        if i == len(WORDS):
            return 1.0
        w, total = WORDS[i], 0.0
        for k in range(K):
            pz = (ALPHA + topics[k]) / (K * ALPHA + i)
            N, T = n[k].sum(), t[k].sum()
            for opened, weight in ((0, n[k, w] - a * t[k, w]), (1, (b + a * T) * PHI[w, k])):
                if weight <= 0:
                    continue
                n2, t2, top2 = n.copy(), t.copy(), topics.copy()
                n2[k, w] += 1
                t2[k, w] += opened
                top2[k] += 1
                total += pz * weight / (b + N) * rec(i + 1, top2, n2, t2)
        return total
    zero = np.zeros((K, V), np.int64)
    return float(np.log(rec(0, np.zeros(K, np.int64), zero, zero.copy())))


@pytest.mark.parametrize("a, b, phi", [(0.3, 1.2, "dirichlet"), (0.0, 1.5, "dirichlet"), (0.3, 1.2, "pyp")],
                         ids=["pyp", "dp", "pyp-over-pyp-phi"])
@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_particles_are_unbiased_for_the_likelihood_with_phi_frozen(tmp_path, a, b, phi, resample):
    """The mean of 20,000 particles' products is within 4 standard errors of the enumerated p(w | phi); every
    particle's p_1 is phi's mixture under theta's prior (1/K each): the burst vectors start empty. Over a
    Pitman-Yor phi[topic] (hca's full burstiness) the same with phi frozen, the burst vectors' a and b read."""
    model, hyper = _model(tmp_path, a, b, phi)
    doc = SegmentedBlock.from_segments([("t0", [WORDS])])
    net, cnt, avals, bvals, sampled = model.test_document_start(doc, hyper)
    a_name, b_name = words_burst.names(hyper["word_pyp"])
    words = burst_heldout.document_words(doc, burst_heldout.frozen_root(PHI), V, net.a_names.index(a_name),
                                         net.b_names.index(b_name))
    stirling = StirlingStack(avals, sampled=sampled)
    stirling.ensure(len(WORDS), len(WORDS))
    RJ, RO = ratio_tables(stirling.L3)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    probs = bigram_particles(np.arange(20000, dtype=np.int64) + 7, resample, *words, net.topic_inst, anc_ptr, anc,
                             net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
                             net.par_gamma, net.gamma_sum, avals, bvals, RJ, RO, open_exp_table(stirling.L3),
                             cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"],
                             np.zeros(int(net.eoff[-1]), np.int64), cnt["Se"], net.eoff,
                             np.zeros(net.num_nodes, np.bool_), cnt["tc"], cnt["tp"])
    exact = _sequential_log_p(a, b)
    weights = np.exp(np.log(probs).sum(axis=1) - exact)
    assert abs(weights.mean() - 1.0) < 4 * weights.std() / np.sqrt(len(weights)), (weights.mean(), weights.std())
    assert np.allclose(probs[:, 0], PHI[WORDS[0]].mean())
    wrong = _sequential_log_p(a, b + 1.0)        # the test tells another concentration apart
    assert abs(np.exp(np.log(probs).sum(axis=1) - wrong).mean() - 1.0) > 4 * weights.std() / np.sqrt(len(weights))


@pytest.mark.parametrize("phi", ["dirichlet", "pyp"])
def test_document_completion_keeps_phi_frozen_and_scores_the_burst_predictive(tmp_path, phi):
    """The held-out chain's sweeps (the topics frozen) leave ``nwk`` untouched and the cells legal (0 < t <= n);
    the scored rows are ((n - a t) + (b + a T) phi(w)) / (b + N) of the observed tokens' cells, token by token;
    the score is finite and not LDA's (the burst cells count). Over a Pitman-Yor phi[topic] likewise."""
    model, hyper = _model(tmp_path, 0.3, 1.2, phi)
    rng = np.random.default_rng(2)
    block = SegmentedBlock.from_segments([(f"t{i}", [list(rng.integers(0, V, 12))]) for i in range(3)])
    observed, scored = split_observed(block, 0.5, 4)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = model.init_state(observed, hyper, nwk, nk, 1)
    before = nwk.copy()
    for it in range(5):
        model.sweep(observed, state, hyper, nwk, nk, 10 + it, frozen_phi=PHI)
    np.testing.assert_array_equal(nwk, before)
    pairs, uidx = words_burst.local_pairs(model, observed)
    own_n = np.zeros((len(pairs), K), np.int64)
    np.add.at(own_n, (uidx, state["z"]), 1)
    t = state["word_t"]
    assert np.all((t <= own_n) & ((t > 0) == (own_n > 0))) and (t < own_n).any()
    rows = burst_heldout.scored_rows(model, observed, state, scored, PHI, 0.3, 1.2)
    starts = scored.token_ptr()
    for i, w in enumerate(scored.words):
        d = int(np.searchsorted(starts, i, side="right") - 1)
        cell = pairs == d * V + w
        for k in range(K):
            n = own_n[cell, k].sum()
            tt = t[cell, k].sum()
            mine = (pairs // V) == d
            N, T = own_n[mine, k].sum(), t[mine, k].sum()
            assert np.isclose(rows[i, k], ((n - 0.3 * tt) + (1.2 + 0.3 * T) * PHI[w, k]) / (1.2 + N))
    got = model.heldout_loglik(block, hyper, PHI, HeldoutSchedule.default(10, 3, 0.5), 4, 0)
    assert np.isfinite(got[0]) and got[1] == scored.n_tokens
