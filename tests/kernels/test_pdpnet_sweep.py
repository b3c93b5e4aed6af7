"""The network sweep's all-topics rows (issue 28, 1: the fast path, with the Stirling ratio tables) against the
scalar Z^+ recursion of :func:`inference.pdpnet.kernels.eval_zplus` (exp of log Stirling differences), on states
visited by the sampler, and the counts kernel against a recount with numpy."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels, sweep
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels.test_pdpnet_sampler import TINY_ADATM, TINY_HDP

STM = {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.4},
                 "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.25, "b": 2.0},
                         "parents": [{"node": "doc", "index": ["document"]}]},
                 "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.1}},
       "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}


def _docs(rng, D=5, V=6):
    return [[list(rng.integers(0, V, rng.integers(1, 7))) for _ in range(rng.integers(1, 4))] for _ in range(D)], V


@pytest.mark.parametrize("spec", [TINY_ADATM, TINY_HDP, STM], ids=["adatm", "hdp", "stm"])
def test_topic_rows_equal_the_scalar_recursion(spec):
    rng = np.random.default_rng(5)
    docs, V = _docs(rng)
    K = 4
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), K)
    sm = NetworkSampler(net, seed=3)
    J = net.num_nodes
    Zb = np.zeros((J, K))
    slot = np.zeros(J, np.int64)
    Z = np.zeros(J)
    terms = np.zeros(4)
    checked = 0
    for _ in range(6):
        sm.sweep()
        sm.stirling.ensure(sm.mx[0] + 2, sm.mx[1] + 2)
        args = (net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
                net.gamma_sum, sm.avals, sm.bvals, sm.stirling.L3, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
        RJ, RO = sweep.ratio_tables(sm.stirling.L3)
        fast = args[:12] + (RJ, RO) + args[13:]
        for jt in np.unique(net.topic_inst):
            r = sweep.topic_zplus_rows(jt, K, Zb, slot, sm.anc_ptr, sm.anc, *fast)
            row = Zb[r].copy()
            if net.kind[jt] == KIND_DIRICHLET:      # left unnormalised: (alpha + c_k)
                row /= net.alpha[jt] * K + sm.Nn[jt] + sm.TC[jt]
            want = [kernels.eval_zplus(jt, k, Z, terms, sm.anc_ptr, sm.anc, *args) for k in range(K)]
            np.testing.assert_allclose(row, want, rtol=1e-12)
            checked += 1
    assert checked >= 30


def test_count_kernel_equals_a_numpy_recount():
    rng = np.random.default_rng(8)
    docs, V = _docs(rng)
    net = compile_network(parse_network(TINY_ADATM), CorpusLayout.of(docs, V), 3)
    sm = NetworkSampler(net, seed=1)
    for _ in range(4):
        sm.sweep()
    cnt = rebuild_counts(net, sm.z, sm.s)
    for name in ("n", "tc", "tp", "Nn", "TC", "TP", "Se"):
        assert np.array_equal(cnt[name], getattr(sm, name)), name
    assert sm.s.sum() > 0
    pyp = np.repeat(net.kind == KIND_PYP, net.dim)        # the Stirling table's cells
    c = (sm.n + sm.tc)[pyp]
    assert list(cnt["mx"]) == [c.max(), sm.tp[pyp].max()]
