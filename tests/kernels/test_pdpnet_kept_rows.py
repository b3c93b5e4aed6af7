"""The network sweep's kept Z^+ rows (issue 28, 1: :mod:`inference.pdpnet.kept_rows`) against the rows recomputed
from scratch at every token (the sweep's ``drift`` self-check), for the shipped segment-chain specs, in process
(the network's own word side) and on the engine's contract (its word table); fails when a path's change of an
ancestor does not make its row and the rows below it stale (tried: the bookkeeping switched off gives 8-30)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models.pdp_network import model as network_model
from drivers.models.pdp_network.model import PdpNetwork
from drivers.models.pdp_network.engine_specs import read_spec_file
from inference.gibbs.block import SegmentedBlock
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler
from inference.pdpnet.spec import parse_network


def _docs(seed, D=8, V=12):
    rng = np.random.default_rng(seed)
    return [[list(rng.integers(0, V, rng.integers(1, 8))) for _ in range(rng.integers(1, 9))] for _ in range(D)], V


def _spec(name, a):
    raw = json.loads(json.dumps(read_spec_file(name)))
    raw["nodes"]["seg"]["pyp"]["a"] = a
    return raw


@pytest.mark.parametrize("name", ["seqlda", "adatm"])
def test_kept_rows_equal_the_rows_recomputed_in_process(name):
    docs, V = _docs(1)
    net = compile_network(parse_network(_spec(name, 0.3)), CorpusLayout.of(docs, V), 4)
    sm = NetworkSampler(net, seed=2)
    sm.drift = np.zeros(1)
    for _ in range(30):
        sm.sweep()
    sm.check()
    assert sm.TP.sum() > 100              # tables all along the chains: paths change the kept ancestors
    assert sm.drift[0] < 1e-13, sm.drift[0]


def _engine_state(name, seed, K=5):
    """A shipped network on the engine contract with its initial state: (model, block, hyper, state, nwk, nk, V)."""
    docs, V = _docs(seed)
    blk = SegmentedBlock.from_segments([(f"d{i}", segs) for i, segs in enumerate(docs)])
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network=name)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    return m, blk, hyper, m.init_state(blk, hyper, nwk, nk, 3), nwk, nk, V


@pytest.mark.parametrize("name", ["seqlda", "adatm"])
def test_kept_rows_equal_the_rows_recomputed_on_the_engine_contract(name, monkeypatch):
    m, blk, hyper, state, nwk, nk, V = _engine_state(name, 4)
    drift = np.zeros(1)
    monkeypatch.setattr(network_model, "NO_DRIFT", drift)
    for it in range(20):
        m.sweep(blk, state, hyper, nwk, nk, 10 + it)
    assert drift[0] < 1e-13, drift[0]
    want = np.zeros_like(nwk)
    np.add.at(want, (blk.words, state["z"]), 1)
    assert np.array_equal(nwk, want)


@pytest.mark.parametrize("name", ["seqlda", "adatm"])
def test_fast_topic_rows_equal_the_general_loop(name):
    """kept_topic_row's fast loops (chain_row: one Pitman-Yor parent; chain_doc_row: a Pitman-Yor parent and the
    document) give the general loop's row, weights and document predictive bit for bit, on every kept vector and
    word of a state the engine's sweeps left (fails if a fast loop differs in one operation's order)."""
    from inference.pdpnet import kept_rows, kernels, sweep
    from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP
    from inference.pdpnet.sampler import StirlingStack

    m, blk, hyper, state, nwk, nk, V = _engine_state(name, 6)
    K = nk.shape[0]
    for it in range(8):
        m.sweep(blk, state, hyper, nwk, nk, 10 + it)
    net = m._compiled(blk, hyper)
    c = m._counts(net, blk, state, hyper, None)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    avals, bvals = m._values(net, hyper)
    stirling = StirlingStack(avals)
    stirling.ensure(c["mx"][0], c["mx"][1])
    RJ, RO = sweep.ratio_tables(stirling.L3)
    beta = float(hyper["beta"])
    inv = 1.0 / (nk + V * beta)
    J, A = net.num_nodes, int(np.diff(anc_ptr).max())
    P = int(np.diff(net.par_ptr).max()) + 1
    fast_shapes = 0
    for jt in np.flatnonzero(net.kind == KIND_PYP):
        parents = net.par_node[net.par_ptr[jt]:net.par_ptr[jt + 1]]
        if len(parents) == 1 and net.kind[parents[0]] == KIND_DIRICHLET:
            continue                                # not a kept vector (its own fused loop)
        fast_shapes += 1
        for w in range(V):
            got = []
            for fast in (False, True):
                kept_node, slot = np.full(A, -1, np.int64), np.zeros(J, np.int64)
                JR, OR, ZA, ZB, SC = (np.zeros((A, K)), np.zeros((A, K)), np.zeros((A, K)), np.zeros((A, K)),
                                      np.zeros((A, P)))
                zr, row, cum = np.zeros(K), np.zeros(K), np.zeros(K)
                _, rf, _ = kept_rows.enter_vector(jt, -1, 0, -1, kept_node, slot, anc_ptr, anc, net.kind,
                                                  net.par_ptr, net.par_node)
                last = anc_ptr[jt + 1] - anc_ptr[jt] - 1
                kept_rows.raw_rows(0, last + 1, K, JR, OR, kept_node, net.kind, net.off, net.a_of, RJ, RO, c["n"],
                                   c["tc"], c["tp"])
                total = kept_rows.kept_topic_row(
                    jt, K, 0, rf, ZA, ZB, zr, SC, row, JR, OR, kept_node, slot, anc_ptr, net.kind, net.dim, net.off,
                    net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, avals,
                    bvals, RJ, RO, c["n"], c["tc"], c["tp"], c["Nn"], c["TC"], c["TP"], c["Se"], True, w, nwk, inv,
                    beta, np.zeros((1, 1)), False, cum, fast)
                got.append((total, row, cum, zr))
            (t0, r0, c0, z0), (t1, r1, c1, z1) = got
            assert t0 == t1 and np.array_equal(r0, r1) and np.array_equal(c0, c1) and np.array_equal(z0, z1)
    assert fast_shapes > 10
