"""The network sweep's kept Z^+ rows (issue 28, 1: :mod:`inference.pdpnet.kept_rows`) against the rows recomputed
from scratch at every token (the sweep's ``drift`` self-check), for the shipped segment-chain specs, in process
(the network's own word side) and on the engine's contract (its word table); fails when a path's change of an
ancestor does not make its row and the rows below it stale (tried: the bookkeeping switched off gives 8-30)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models import pdp_network
from drivers.models.pdp_network import PdpNetwork
from drivers.models.pdp_specs import read_spec_file
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


@pytest.mark.parametrize("name", ["seqlda", "adatm"])
def test_kept_rows_equal_the_rows_recomputed_on_the_engine_contract(name, monkeypatch):
    docs, V = _docs(4)
    K = 5
    blk = SegmentedBlock.from_segments([(f"d{i}", segs) for i, segs in enumerate(docs)])
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network=name)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = m.init_state(blk, hyper, nwk, nk, 3)
    drift = np.zeros(1)
    monkeypatch.setattr(pdp_network, "NO_DRIFT", drift)
    for it in range(20):
        m.sweep(blk, state, hyper, nwk, nk, 10 + it)
    assert drift[0] < 1e-13, drift[0]
    want = np.zeros_like(nwk)
    np.add.at(want, (blk.words, state["z"]), 1)
    assert np.array_equal(nwk, want)
