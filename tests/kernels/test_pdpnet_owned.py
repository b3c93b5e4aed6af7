"""Shared Pitman-Yor topic vectors on the Gibbs engine (issue 28; :mod:`inference.pdpnet.owned`): with one
partition the owned sweep is the network sampler's sweep on the engine's word table, draw for draw; split over two
"partitions" (the others' counts fixed between synchronisations), every partition's own indicators stay within its
own customers and the global tables are the sum of the own."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels, sweep
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.owned import owned_sweep
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network

V, K = 7, 3
HDP_PYP = {"name": "hdp-pyp",
           "nodes": {"base": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
                     "corpus": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                                "parents": [{"node": "base", "index": ["corpus"]}]},
                     "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                               "parents": [{"node": "corpus", "index": ["corpus"]}]},
                     "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.1}},
           "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def _corpus(seed, docs=8):
    rng = np.random.default_rng(seed)
    return [[list(rng.integers(0, V, rng.integers(2, 9)))] for _ in range(docs)]


def _start(docs, spec=HDP_PYP, seed=0):
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), K, word_side=False)
    z = np.random.default_rng(seed).integers(0, K, len(net.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    cnt = rebuild_counts(net, np.zeros(0, np.int64), s, word_side=False)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    _network(net, z, s, cnt, nwk, nk, 1, init=True)
    return net, z, s, cnt, nwk, nk


def _network(net, z, s, cnt, nwk, nk, seed, init=False):
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    st = StirlingStack(net.a_values)
    pos, reseed = 0, True
    while pos >= 0:
        st.ensure(cnt["mx"][0], cnt["mx"][1])
        pos = sweep.network_sweep(pos, reseed, seed, True, net.words, z, net.topic_inst, net.word_inst, anc_ptr, anc,
                                  net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr,
                                  net.par_node, net.par_gamma, net.gamma_sum, net.a_values, net.b_values, st.L3,
                                  cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"],
                                  net.eoff, cnt["mx"], init, True, nwk, nk, 0.1, np.zeros((1, 1)), False, np.zeros(0))
        reseed = False


def _owned(net, z, s, cnt, nwk, nk, seed, own_c, own_t):
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    shared = (net.kind == KIND_PYP) & (net.family == list(net.spec.order).index("corpus"))
    st = StirlingStack(net.a_values)
    pos, reseed = 0, True
    while pos >= 0:
        st.ensure(cnt["mx"][0], cnt["mx"][1])
        pos = owned_sweep(pos, reseed, seed, net.words, z, net.topic_inst, anc_ptr, anc, net.kind, net.dim, net.off,
                          net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
                          net.a_values, net.b_values, st.L3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                          cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"], nwk, nk, 0.1, np.zeros((1, 1)), False, shared,
                          own_c, own_t)
        reseed = False
    return shared


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_partition_is_the_network_sweep_draw_for_draw(seed):
    docs = _corpus(seed)
    a = _start(docs)
    b = tuple(x.copy() if isinstance(x, np.ndarray) else {k: v.copy() for k, v in x.items()} for x in a[1:])
    for it in range(4):
        _network(a[0], *a[1:], seed=10 + it)
        _owned(a[0], *b, seed=10 + it, own_c=b[2]["tc"].copy(), own_t=b[2]["tp"].copy())
        np.testing.assert_array_equal(a[1], b[0])
        np.testing.assert_array_equal(a[2], b[1])
    assert a[2].sum() > 0
