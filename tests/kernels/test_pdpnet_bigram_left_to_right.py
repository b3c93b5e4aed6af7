"""Left-to-right of a network with a bigram-topic word side (issue 28, tlm.json; :mod:`inference.pdpnet.
bigram_left_to_right`): each particle's earlier tokens enter the word side's counts; the particles' products are
unbiased for p(w | the trained state), checked against the sequential process enumerated on a tiny document; the
first token's predictive is the trained posterior mean's (:func:`drivers.models.pdp_network.words_bigram.predictive`)."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import words_bigram
from drivers.models.pdp_network.engine_specs import read_spec_file
from inference.gibbs.tables import KeyedCounts
from inference.pdpnet import kernels
from inference.pdpnet.bigram_left_to_right import bigram_particles
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.sweep import ratio_tables
from tests.kernels.test_pdpnet_shared_left_to_right import _paths, shared_network

V, K, ALPHA = 3, 2, 0.6
WORDS = [0, 2, 0, 2]        # pairs (start, 0), (0, 2), (2, 0), (0, 2): the document's own customers rejoin
#: trained cells ((w', w, k): (n, t)); w' = V the start context; the contexts hold other words' customers too
TRAINED = {(V, 0, 0): (2, 1), (0, 2, 0): (3, 2), (0, 2, 1): (1, 1), (2, 0, 1): (4, 1), (0, 1, 0): (2, 2),
           (1, 0, 1): (3, 1)}


def _spec(word):
    raw = read_spec_file("tlm")
    shipped = {k: v for k, v in raw["nodes"].items() if k != "alpha_m"}     # theta a fixed symmetric Dirichlet
    nodes = dict(shipped, theta={"index": ["document"], "over": "topic", "dirichlet": ALPHA}, phi=dict(
        {k: v for k, v in raw["nodes"]["phi"].items() if k != "dp"}, **word["phi"]), psi=dict(
        {k: v for k, v in raw["nodes"]["psi"].items() if k != "dirichlet"}, **word["psi"]))
    return dict(raw, nodes=nodes)


def _trained():
    keys = np.array(sorted((p * V + w) * K + k for p, w, k in TRAINED), np.int64)
    cell = {(p * V + w) * K + k: v for (p, w, k), v in TRAINED.items()}
    n = np.array([[cell[key][0]] for key in keys], np.int32)
    t = np.array([[cell[key][1]] for key in keys], np.int32)
    return words_bigram.derived({words_bigram.CUSTOMERS: KeyedCounts(keys, n), words_bigram.TABLES: KeyedCounts(keys, t)},
                              V, K)


def _sequential_log_p(trained, a, b, beta0, topic_side=None):
    """log p(w | trained) by the sequential process, every (topic, join or open) path enumerated (module
    docstring of inference.pdpnet.bigram_left_to_right); the topic side theta ~ Dirichlet(ALPHA), or
    ``topic_side`` = (network, its counts): its every seating path (tests/kernels/test_pdpnet_shared_left_to_right.
    py)."""
    n0 = {(int(key) // K, int(key) % K): (int(n), int(t)) for key, n, t in
          zip(trained["bigram_keys"], trained["bigram_n"], trained["bigram_t"])}
    ctx0 = {(int(c) // K, int(c) % K): (int(N), int(T)) for c, N, T in
            zip(trained["bigram_ctx"], trained["bigram_ctx_n"], trained["bigram_ctx_t"])}
    prevs = [V] + WORDS[:-1]

    def topic_paths(i, k, topics):
        if topic_side is not None:
            return _paths(topic_side[0], topic_side[0].topic_inst[i], k, True, topics)
        return [((ALPHA + topics[k]) / (K * ALPHA + i), topics + np.eye(K, dtype=int)[k])]

    def rec(i, topics, cells, ctx, root):
        if i == len(WORDS):
            return 1.0
        total, pair, prev, w = 0.0, prevs[i] * V + WORDS[i], prevs[i], WORDS[i]
        for k, (pz, topics2) in ((k, p) for k in range(K) for p in topic_paths(i, k, topics)):
            n, t = cells.get((pair, k), (0, 0))
            N, T = ctx.get((prev, k), (0, 0))
            psi = 1.0 / V if beta0 <= 0 else (beta0 + root[w, k]) / (V * beta0 + root[:, k].sum())
            for opened, weight in ((False, n - a * t), (True, (b + a * T) * psi)):
                if weight <= 0:
                    continue
                cells2 = dict(cells)
                cells2[(pair, k)] = (n + 1, t + opened)
                ctx2 = dict(ctx)
                ctx2[(prev, k)] = (N + 1, T + opened)
                root2 = root.copy()
                root2[w, k] += opened
                total += pz * weight / (b + N) * rec(i + 1, topics2, cells2, ctx2, root2)
        return total

    start = np.zeros(K, int) if topic_side is None else {x: topic_side[1][x] for x in ("n", "tc", "tp", "Nn", "TC",
                                                                                     "TP", "Se")}
    return float(np.log(rec(0, start, n0, ctx0, trained["bigram_troot"].copy())))


def _particles(spec, trained, beta0, seeds, resample, topic_side=None):
    """(R, N) p_n^(r) of the document under ``spec``'s topic side (or ``topic_side``: (network, counts, shared
    vectors)) and the trained word side."""
    doc = CorpusLayout.of([[WORDS]], V)
    net = compile_network(parse_network(spec), doc, K, word_side=False)
    block = _Block(np.array(WORDS, np.int64))
    side = words_bigram.document_side(block, trained, V, K)
    cnt = rebuild_counts(net, np.zeros(0, np.int64), np.zeros(int(net.eoff[-1]), np.int64), word_side=False)
    shared = np.zeros(net.num_nodes, np.bool_)
    if topic_side is not None:
        net, cnt, shared = topic_side
    stirling = StirlingStack(net.a_values)
    stirling.ensure(len(WORDS) + int(side[3].max()), len(WORDS) + int(side[4].max()))
    RJ, RO = ratio_tables(stirling.L3)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    pw, bw = net.a_names.index("phi.a"), net.b_names.index("phi.b")
    return bigram_particles(np.asarray(seeds, np.int64), resample, *side, V, pw, bw, beta0, net.topic_inst, anc_ptr,
                            anc, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
                            net.par_gamma, net.gamma_sum, net.a_values, net.b_values, RJ, RO,
                            open_exp_table(stirling.L3), cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                            cnt["TP"], np.zeros(int(net.eoff[-1]), np.int64), cnt["Se"], net.eoff, shared,
                            np.zeros_like(cnt["tc"]), np.zeros_like(cnt["tp"]))


class _Block:
    """One document's tokens in text order (what words_bigram.pair_keys reads)."""

    def __init__(self, words):
        self.words = words

    def token_ptr(self):
        return np.array([0, len(self.words)], np.int64)


CASES = {"dp-dirichlet": ({"phi": {"dp": {"b": 1.5}}, "psi": {"dirichlet": 0.4}}, 0.0, 1.5, 0.4),
         "pyp-dirichlet": ({"phi": {"pyp": {"a": 0.3, "b": 1.2}}, "psi": {"dirichlet": 0.4}}, 0.3, 1.2, 0.4),
         "pyp-uniform": ({"phi": {"pyp": {"a": 0.3, "b": 1.2}}, "psi": {"uniform": True}}, 0.3, 1.2, 0.0)}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_particles_are_unbiased_for_the_likelihood_given_the_trained_state(case, resample):
    """The mean of 20,000 particles' products is within 4 standard errors of the enumerated p(w | trained), and
    every particle's p_1 is the trained posterior mean's mixture sum_k P(k) p(w_1 | start, k)."""
    word, a, b, beta0 = CASES[case]
    spec, trained = _spec(word), _trained()
    exact = _sequential_log_p(trained, a, b, beta0)
    probs = _particles(spec, trained, beta0, np.arange(20000) + 7, resample)
    weights = np.exp(np.log(probs).sum(axis=1) - exact)
    assert abs(weights.mean() - 1.0) < 4 * weights.std() / np.sqrt(len(weights)), (weights.mean(), weights.std())
    first = words_bigram.predictive(_Block(np.array(WORDS, np.int64)), trained, a, b, beta0, V, K)[0]
    assert np.allclose(probs[:, 0], first.mean())          # theta's prior predictive: 1/K each


@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_particles_under_a_shared_pitman_yor_topic_vector(resample):
    """The bigram side under hdp-pyp-lda's topic side (tlm-hdp-pyp: theta DP over a corpus-level PYP frozen at its
    trained tables (c, t) = ([3, 1], [2, 1]) over a Dirichlet root): the mean of 40,000 particles' products is
    within 4 standard errors of the sequential process enumerated on both sides."""
    word, a, b, beta0 = CASES["pyp-dirichlet"]
    raw = _spec(word)
    spec = dict(raw, nodes=dict(raw["nodes"], top={"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
                                mid={"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                                     "parents": [{"node": "top", "index": ["corpus"]}]},
                                theta={"index": ["document"], "over": "topic", "dp": {"b": 1.2},
                                       "parents": [{"node": "mid", "index": ["corpus"]}]}))
    topic_side = shared_network(spec, [WORDS], V, K, {"mid": ([3, 1], [[2, 1]])}, word_side=False)
    trained = _trained()
    exact = _sequential_log_p(trained, a, b, beta0, topic_side[:2])
    probs = _particles(spec, trained, beta0, np.arange(40000) + 7, resample, topic_side)
    weights = np.exp(np.log(probs).sum(axis=1) - exact)
    assert abs(weights.mean() - 1.0) < 4 * weights.std() / np.sqrt(len(weights)), (weights.mean(), weights.std())
