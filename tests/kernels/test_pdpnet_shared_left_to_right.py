"""Left-to-right under shared Pitman-Yor topic vectors frozen at their trained tables (issue 28; :mod:`inference.
pdpnet.doc_restaurant`): the particles' products are unbiased for p(w | the trained tables) with and without
resampling, checked against the sequential process (the restaurant continued from the trained counts at the
shared vectors) enumerated on tiny documents, for a DP or Pitman-Yor document vector, two shared levels and a
shared vector with two parents, tokens drawn from the shared vector itself. With resampling the engine's indicators (:mod:`inference.pdpnet.owned`) gave
E[p-hat]/p = 0.9485 +- 0.0027 on ``HDP_PYP``'s document 1 1 2 2 (200,000 particles; this test fails on it)."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.left_to_right import network_particles
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.rho import rho_den, rho_num
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.sweep import ratio_tables
from tests.kernels.test_pdpnet_left_to_right import UNIFORM_WORDS

HDP_PYP = {      # a DP document vector over a corpus-level PYP over a Dirichlet root (hdp-pyp-lda.json's shape)
    "nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
              "mid": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                      "parents": [{"node": "top", "index": ["corpus"]}]},
              "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.2},
                        "parents": [{"node": "mid", "index": ["corpus"]}]},
              "phi": UNIFORM_WORDS},
    "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}

TWO_LEVELS = {   # a PYP document vector over a corpus PYP over another corpus PYP over a Dirichlet root
    "nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
              "upper": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.4, "b": 0.8},
                        "parents": [{"node": "top", "index": ["corpus"]}]},
              "mid": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                      "parents": [{"node": "upper", "index": ["corpus"]}]},
              "theta": {"index": ["document"], "over": "topic", "pyp": {"a": 0.2, "b": 1.0},
                        "parents": [{"node": "mid", "index": ["corpus"]}]},
              "phi": UNIFORM_WORDS},
    "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}

TWO_PARENTS = {  # a DP document vector over a corpus PYP over a Dirichlet root and a uniform vector (rho)
    "nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
              "flat": {"index": ["corpus"], "over": "topic", "uniform": True},
              "mid": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                      "parents": [{"node": "top", "index": ["corpus"], "gamma": 0.8},
                                  {"node": "flat", "index": ["corpus"], "gamma": 1.3}]},
              "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.2},
                        "parents": [{"node": "mid", "index": ["corpus"]}]},
              "phi": UNIFORM_WORDS},
    "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}

#: tokens drawn from the shared vector itself (no document vector)
PYP_TOPICS = dict(HDP_PYP, topic={"node": "mid", "index": ["corpus"]},
                  nodes={k: v for k, v in HDP_PYP["nodes"].items() if k != "theta"})

#: per network: the shared vectors and their trained state: the other documents' customers per value and the
#: trained tables per parent edge (their customers at the parent are added there)
TRAINED = {"hdp-pyp": (HDP_PYP, {"mid": ([3, 1, 0], [[2, 1, 0]])}),
           "two-levels": (TWO_LEVELS, {"mid": ([3, 1, 0], [[2, 1, 0]]), "upper": ([1, 0, 2], [[2, 1, 1]])}),
           "two-parents": (TWO_PARENTS, {"mid": ([4, 1, 0], [[1, 1, 0], [1, 0, 0]])}),
           "pyp-topics": (PYP_TOPICS, {"mid": ([3, 1, 0], [[2, 1, 0]])})}


def _network(name, words):
    """(compiled network of one document, its starting counts with the trained tables, shared mask)."""
    spec, trained = TRAINED[name]
    return shared_network(spec, [words], 3, 3, trained)


def shared_network(spec, doc, V, K, trained, word_side=True):
    """:func:`_network` of any spec, one document of segments ``doc``, ``trained`` as in ``TRAINED``."""
    net = compile_network(parse_network(spec), CorpusLayout.of([doc], V), K, word_side=word_side)
    order = list(net.spec.order)
    node = {n: int(np.flatnonzero(net.family == order.index(n))[0]) for n in trained}
    s = np.zeros(int(net.eoff[-1]), np.int64)
    for n, (_, per_edge) in trained.items():
        for e, tables in zip(range(net.par_ptr[node[n]], net.par_ptr[node[n] + 1]), per_edge):
            s[net.eoff[e]:net.eoff[e + 1]] = tables
    cnt = rebuild_counts(net, np.zeros(0, np.int64), s, word_side=False)
    shared = np.zeros(net.num_nodes, np.bool_)
    for n, (others, _) in trained.items():
        j = node[n]
        shared[j] = True
        cnt["tc"][net.off[j]:net.off[j + 1]] += others
        cnt["TC"][j] += sum(others)
    return net, cnt, shared


def _paths(net, j, k, data, c):
    """Every way the sequential process seats a customer of value k at vector j: (probability, counts after)."""
    cell = net.off[j] + k
    C = c["Nn"][j] + c["TC"][j]
    if net.kind[j] != KIND_PYP:
        after = {x: v.copy() for x, v in c.items()}
        after["tc"][cell] += 1
        after["TC"][j] += 1
        if net.kind[j] == KIND_DIRICHLET:
            return [((net.alpha[j] + c["n"][cell] + c["tc"][cell]) / (net.alpha[j] * net.dim[j] + C), after)]
        return [(1.0 / net.dim[j], after)]
    a, b, T = net.a_values[net.a_of[j]], net.b_values[net.b_of[j]], c["TP"][j]
    out = []
    after = {x: v.copy() for x, v in c.items()}
    after["n" if data else "tc"][cell] += 1
    after["Nn" if data else "TC"][j] += 1
    if c["n"][cell] + c["tc"][cell] > 0:
        out.append(((c["n"][cell] + c["tc"][cell] - a * c["tp"][cell]) / (b + C), after))
    for e in range(net.par_ptr[j], net.par_ptr[j + 1]):
        opened = {x: v.copy() for x, v in after.items()}
        opened["tp"][cell] += 1
        opened["TP"][j] += 1
        opened["Se"][e] += 1
        rho = rho_num(net.par_gamma[e], c["Se"][e], net.gamma_sum[j]) / rho_den(net.gamma_sum[j], T)
        out.extend(((b + a * T) / (b + C) * rho * p, up) for p, up in _paths(net, net.par_node[e], k, False, opened))
    return out


def _sequential_log_p(net, cnt, phi_kv):
    """log p(w | the trained tables): the sequential process' every seating path enumerated."""
    def rec(i, c):
        if i == len(net.words):
            return 1.0
        return sum(phi_kv[k, net.words[i]] * p * rec(i + 1, after) for k in range(phi_kv.shape[0])
                   for p, after in _paths(net, net.topic_inst[i], k, True, c))

    return float(np.log(rec(0, {x: cnt[x] for x in ("n", "tc", "tp", "Nn", "TC", "TP", "Se")})))


def _particles(net, cnt, shared, phi_kv, seeds, resample):
    stirling = StirlingStack(net.a_values)
    stirling.ensure(10, 10)
    RJ, RO = ratio_tables(stirling.L3)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    zero = np.zeros(net.num_cells, np.int64)
    return network_particles(np.asarray(seeds, np.int64), resample, np.ascontiguousarray(phi_kv[:, net.words].T),
                             net.topic_inst, anc_ptr, anc, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of,
                             net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, net.a_values, net.b_values, RJ,
                             RO, open_exp_table(stirling.L3), cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                             cnt["TP"], np.zeros(int(net.eoff[-1]), np.int64), cnt["Se"], net.eoff, shared, zero, zero)


@pytest.mark.parametrize("name, words", [("hdp-pyp", [0, 2, 1]), ("hdp-pyp", [1, 1, 2, 2]),
                                         ("two-levels", [1, 1, 2, 0]), ("two-parents", [2, 1, 2]),
                                         ("pyp-topics", [1, 1, 2, 2])])
@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_particles_are_unbiased_given_the_trained_tables(name, words, resample):
    """The mean of 80,000 particles' products is within 4 standard errors of the enumerated p(w | trained tables)
    (the standard error under 0.6% of it: the old form's -5% on 1 1 2 2 is over 8 of them away), and every particle's
    p_1 is the trained posterior predictive's."""
    net, cnt, shared = _network(name, words)
    phi_kv = np.random.default_rng(5).dirichlet(np.full(3, 0.5), size=3)
    exact = _sequential_log_p(net, cnt, phi_kv)
    probs = _particles(net, cnt, shared, phi_kv, np.arange(80000) + 7, resample)
    weights = np.exp(np.log(probs).sum(axis=1) - exact)
    se = weights.std() / np.sqrt(len(weights))
    assert abs(weights.mean() - 1.0) < 4 * se, (weights.mean(), se)
    assert se < 0.006
    first = sum(p * phi_kv[k, words[0]] for k in range(3) for p, _ in _paths(net, net.topic_inst[0], k, True, cnt))
    np.testing.assert_allclose(probs[:, 0], first, rtol=1e-12)
