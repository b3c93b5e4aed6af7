"""The networks' exact multiplicity sampler (issue 28, route (1); ``inference/pdpnet/multiplicity.py``): draw for
draw the built-in ``seqlda --sampler exact`` kernel on the same state and random stream; its kept rows against a
recomputation; its moves against ratios of the multiplicity joint ((E12) with C^t_s); its stationary distribution
against enumeration over (z, t) (and a wrong removal probability rejected); lda.json is collapsed LDA."""
from __future__ import annotations

import copy
import json
import math

import numba
import numpy as np
import pytest

from drivers.models.lda_gibbs.model import lda_sweep
from drivers.models.seqlda.kernels import seqlda_init, seqlda_sweep
from inference.errors import UsageError
from inference.gibbs.pdp import stirling_table
from inference.pdpnet.cmgs_run import layout_arrays, run_cmgs, stirling_ratios
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.multiplicity import chain_rows, open_depth, remove_token, topic_weights
from inference.pdpnet.sampler import rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_cmgs import _layout, _log_joint, _network_state, _set_table, _spec
from tests.kernels.test_pdpnet_sampler import _chi_square


@pytest.mark.parametrize("seed,K,a", [(0, 3, 0.0), (1, 3, 0.0), (2, 6, 0.0), (3, 3, 0.4)])
def test_seqlda_exact_is_the_built_in_kernel_draw_for_draw(seed, K, a):
    """seqlda.json under exact and ``seqlda_sweep`` (exact, table_sweep on, every b_i = b) from the same (z, t) and
    seed: the same z, t and topic-word counts after every one of 8 sweeps (8 documents, one with an empty segment
    inside its chain)."""
    V, b = 7, 3.0
    raw = _spec("seqlda", sampler="exact", b_seg=b)
    raw["parameters"]["a_seg"] = {"kind": "a", "value": a, "sample": False}
    raw["nodes"]["seg"]["pyp"]["a"] = "a_seg"
    lay = _layout(seed, D=8)
    net = compile_network(parse_network(raw), lay, K, word_side=False)
    D = len(lay.doc_ptr) - 1
    nwk1, nk1 = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    z1, n1, t1 = seqlda_init(lay.doc_ptr, lay.seg_ptr, lay.words, K, nwk1, nk1, seed)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    mcap = int(np.diff(doc_tok).max()) + 1
    tab = stirling_table(a).ensure(int(np.diff(lay.seg_ptr).max()) + mcap + 2, mcap)
    z2 = z1.astype(np.int64)
    s2 = _network_state(net, lay, z2, t1)
    nwk2, nk2 = nwk1.copy(), nk1.copy()
    moved = opened = 0
    for it in range(8):
        seqlda_sweep(lay.doc_ptr, lay.seg_ptr, lay.words, z1, n1, t1, np.full(D, b), nwk1, nk1, np.full(K, 0.1),
                     0.01, a, tab.log, tab.ratio, tab.cratio, mcap, np.zeros((1, 1)), False, True, True, 300 + it)
        cnt = rebuild_counts(net, z2, s2, word_side=False)
        before, tables = z2.copy(), s2.sum()
        run_cmgs(net, doc_tok, z2, s2, cnt, np.array([a]), np.array([b]), nwk2, nk2, 0.01, None, 300 + it, False)
        moved += int(np.sum(before != z2))
        opened += int(s2.sum() != tables)
        assert np.array_equal(z1, z2), it
        assert np.array_equal(s2, _network_state(net, lay, z2, t1)), it
        assert np.array_equal(nwk1, nwk2) and np.array_equal(nk1, nk2), it
    assert moved > 0 and opened > 0 and t1.max() >= 2


def _chain(name, a, b, K, V, D, seed):
    raw = _spec(name, sampler="exact", b_seg=b)
    raw["parameters"]["a_seg"] = {"kind": "a", "value": a, "sample": False}
    raw["nodes"]["seg"]["pyp"]["a"] = "a_seg"
    lay = _layout(seed, D=D, V=V)
    return lay, compile_network(parse_network(raw), lay, K, word_side=False)


@pytest.mark.parametrize("name,a", [("seqlda", 0.0), ("seqlda", 0.3), ("stm", 0.2), ("hdp-lda", 0.0)])
def test_kept_rows_equal_a_recomputation(name, a):
    """The sweep's kept rows give the topic weights of a recomputation from the root at every token (relative
    1e-12) over 10 sweeps of 20 documents with K = 8."""
    K, V = 8, 9
    if name == "hdp-lda":
        lay = _layout(11, D=20, V=V)
        net = compile_network(parse_network(_spec(name, sampler="exact")), lay, K, word_side=False)
    else:
        lay, net = _chain(name, a, 2.0, K, V, 20, 11)
    z = np.random.default_rng(2).integers(0, K, len(lay.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    doc_tok = lay.seg_ptr[lay.doc_ptr]
    run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, 0.01, None,
             0, True)
    check = np.zeros(1)
    for it in range(10):
        run_cmgs(net, doc_tok, z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values, nwk, nk, 0.01,
                 None, 5 + it, False, check)
    cnt = rebuild_counts(net, z, s, False)
    pyp = np.repeat(net.kind, np.diff(net.off)) == KIND_PYP
    c, tp = (cnt["n"] + cnt["tc"])[pyp], cnt["tp"][pyp]
    assert np.all(tp <= c) and np.all((tp > 0) == (c > 0)) and tp.max() >= 2
    assert check[0] < 1e-12, check[0]
