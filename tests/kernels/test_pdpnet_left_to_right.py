"""Left-to-right evaluation of a network (issue 28, 3; :mod:`inference.pdpnet.left_to_right`): the particles'
products are unbiased for the network's p(w | Phi), checked against an enumeration of every (z, s) of tiny
documents with the corrected joint (E12); the network of STM gives the hand-written STM estimator's p(w)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from inference.gibbs.franchise_left_to_right import estimate_franchise_document, star
from inference.left_to_right import DocumentEstimate
from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.left_to_right import network_particles
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.sweep import ratio_tables
from tests.kernels.pdpnet_reference import enumerate_states

UNIFORM_WORDS = {"index": ["topic"], "over": "word", "uniform": True}   # p(w | z) a constant: p(z, s) alone

ADAPTIVE = {     # segments over the previous segment and the document (rho integrated out), a PYP with a > 0
    "nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.7},
              "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                      "parents": [{"node": "seg", "index": ["previous_segment"], "gamma": 0.8},
                                  {"node": "doc", "index": ["document"], "gamma": 1.3}]},
              "phi": UNIFORM_WORDS},
    "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}

HDP = {          # a DP document vector over a corpus-level Dirichlet root, K = 3
    "nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
              "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.2},
                        "parents": [{"node": "top", "index": ["corpus"]}]},
              "phi": UNIFORM_WORDS},
    "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}

MIXTURE = {      # segments a mixture node (b infinite) of the document's and the corpus' roots, rho integrated out
    "nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
              "doc": {"index": ["document"], "over": "topic", "dirichlet": 0.7},
              "seg": {"index": ["segment"], "over": "topic", "mixture": True,
                      "parents": [{"node": "doc", "index": ["document"], "gamma": 0.8},
                                  {"node": "top", "index": ["corpus"], "gamma": 1.3}]},
              "phi": UNIFORM_WORDS},
    "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}

STM = {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.4},
                 "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.2, "b": 2.0},
                         "parents": [{"node": "doc", "index": ["document"]}]},
                 "phi": UNIFORM_WORDS},
       "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}


def _particles(net, phi_kv, seeds, resample):
    """(R, N) p_n^(r) of the network's one document (unscaled rows: phi is not tiny here)."""
    cnt = rebuild_counts(net, np.zeros(0, np.int64), np.zeros(int(net.eoff[-1]), np.int64), word_side=False)
    stirling = StirlingStack(net.a_values)
    stirling.ensure(len(net.words), len(net.words))
    RJ, RO = ratio_tables(stirling.L3)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    rows = np.ascontiguousarray(phi_kv[:, net.words].T)
    return network_particles(np.asarray(seeds, np.int64), resample, rows, net.topic_inst, anc_ptr, anc, net.kind,
                             net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
                             net.par_gamma, net.gamma_sum, net.a_values, net.b_values, RJ, RO,
                             open_exp_table(stirling.L3), cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                             cnt["TP"], np.zeros(int(net.eoff[-1]), np.int64), cnt["Se"], net.eoff,
                             np.zeros(net.num_nodes, np.bool_), cnt["tc"].copy(), cnt["tp"].copy())


def _exact_log_p(net, phi_kv):
    """log p(w | Phi) = log sum_{z, s} p(z, s) prod_n phi_{z_n, w_n}, p(z, s) the topic side's corrected joint (the
    uniform word side adds -N log V to every state); the enumeration's p(z, s) sums to one."""
    N, V = len(net.words), int(net.V)
    logs, topic_side = [], []
    for z, _, log_joint in enumerate_states(net):
        joint = log_joint + N * np.log(V)
        topic_side.append(joint)
        logs.append(joint + sum(np.log(phi_kv[k, w]) for k, w in zip(z, net.words)))
    assert abs(logsumexp(topic_side)) < 1e-9       # the enumeration is the whole distribution over (z, s)
    return float(logsumexp(logs))


@pytest.mark.parametrize("spec, docs, K", [(ADAPTIVE, [[[0, 1], [2], [1]]], 2), (HDP, [[[0, 2, 1]]], 3),
                                            (STM, [[[0, 1], [2, 0]]], 2), (MIXTURE, [[[0, 1], [2, 0]]], 2)],
                         ids=["adaptive", "hdp", "stm", "mixture"])
@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_particles_are_unbiased_for_the_networks_likelihood(spec, docs, K, resample):
    """The mean of 20,000 particles' products is within 4 standard errors of the enumerated p(w | Phi), and
    the first token's p_1 is the same for every particle: the prior predictive of the empty network."""
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, 3), K)
    phi_kv = np.random.default_rng(5).dirichlet(np.full(3, 0.5), size=K)
    exact = _exact_log_p(net, phi_kv)
    probs = _particles(net, phi_kv, np.arange(20000) + 7, resample)
    weights = np.exp(np.log(probs).sum(axis=1) - exact)         # p-hat_r / p(w): mean 1 when unbiased
    assert abs(weights.mean() - 1.0) < 4 * weights.std() / np.sqrt(len(weights)), (weights.mean(), weights.std())
    assert np.ptp(probs[:, 0]) < 1e-12
    est = DocumentEstimate.of_particles(probs, np.ones(probs.shape[1]))
    assert est.log_importance == pytest.approx(np.log(np.mean(np.exp(np.log(probs).sum(axis=1)))), rel=1e-12)


def test_the_network_of_stm_is_the_hand_written_stm_estimators_model():
    """stm.json's network and the STM franchise estimator (tests/kernels/test_left_to_right.py checks it against
    an enumeration of its own) estimate the same p(w | Phi) of a longer document: their importance estimates
    over 4,000 particles each agree within 4 combined standard errors."""
    docs = [[[0, 1, 2, 1], [2, 0, 3], [3, 3, 1, 0, 2]]]
    net = compile_network(parse_network(dict(STM, nodes=dict(STM["nodes"], doc=dict(STM["nodes"]["doc"],
                                                                                    dirichlet=0.4)))),
                          CorpusLayout.of(docs, 4), 3)
    phi_kv = np.random.default_rng(2).dirichlet(np.full(4, 0.5), size=3)
    words = net.words
    ours = np.log(_particles(net, phi_kv, np.arange(4000), True)).sum(axis=1)
    seg_ptr = np.array([0, 4, 7, 12])
    theirs = estimate_franchise_document(phi_kv[:, words].T, seg_ptr, star(3), np.full(3, 0.4), 0.2, 2.0,
                                         np.arange(4000) + 10 ** 6).particle_log_weight
    top = max(ours.max(), theirs.max())
    a, b = np.exp(ours - top), np.exp(theirs - top)
    se = np.sqrt(a.var() / len(a) + b.var() / len(b))
    assert abs(a.mean() - b.mean()) < 4 * se, (a.mean(), b.mean(), se)
    assert se < 0.05 * a.mean()          # the comparison can tell a 20% difference apart


def test_predictive_rows_sum_to_one_in_any_state():
    """After seating 40 customers by the sequential process, every ancestor's predictive row sums to one (the
    sampler's Z^+ rows do not: module docstring of inference.pdpnet.left_to_right)."""
    from inference.pdpnet.doc_restaurant import doc_add
    from inference.pdpnet.left_to_right import predictive_rows

    net = compile_network(parse_network(ADAPTIVE), CorpusLayout.of([[[0] * 10, [1] * 20, [2] * 10]], 3), 4)
    cnt = rebuild_counts(net, np.zeros(0, np.int64), np.zeros(int(net.eoff[-1]), np.int64), word_side=False)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    P, slot, Z = np.zeros((8, 4)), np.zeros(net.num_nodes, np.int64), np.zeros(net.num_nodes)
    none, cells, tables = np.zeros(net.num_nodes, np.bool_), np.zeros(net.num_cells, np.int64), np.zeros(1, np.int64)
    rng = np.random.default_rng(0)
    args = (net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
            net.gamma_sum, net.a_values, net.b_values)
    for i, jt in enumerate(net.topic_inst):
        row = predictive_rows(jt, 4, P, slot, anc_ptr, anc, *args, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"],
                              cnt["TC"], cnt["TP"], cnt["Se"])
        np.testing.assert_allclose(P[:row + 1].sum(axis=1), 1.0, rtol=1e-12)
        k = int(rng.integers(4))
        Z[anc[anc_ptr[jt]:anc_ptr[jt + 1]]] = P[slot[anc[anc_ptr[jt]:anc_ptr[jt + 1]]], k]
        doc_add(jt, k, True, True, Z, np.zeros(3), none, cells, cells, cells, tables, tables, tables, tables, *args,
                np.zeros((1, 1, 1)), np.zeros((1, 1, 1)), cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"])
    assert cnt["TP"].sum() > 3        # tables were opened along the chain
