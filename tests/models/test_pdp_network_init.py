"""pdp-network's initialisation on the engine (issue 28, 3): the initialising sweep adds every token of the random
z to counts that hold none yet, so each customer is seated by the terms of the state before it, as the in-process
sampler's initialisation. Before, the engine's hook added the tokens to counts already rebuilt from z: at a
Pitman-Yor cell with n > 0 and no table the Stirling ratios were NaN and every cell's first customer opened a
table on the first parent edge."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network.model import PdpNetwork
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.models.test_pdp_network import _block


@pytest.mark.parametrize("name", ["stm", "seqlda", "adatm", "hdp-lda"])
def test_engine_init_seats_as_the_in_process_sampler_from_empty_counts(name):
    V, K, seed = 8, 3, 7
    blk = _block(3, D=8)
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network=name, sampler="indicators")    # (seqlda.json declares cmgs: its own init)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = m.init_state(blk, hyper, nwk, nk, seed)
    layout = CorpusLayout(blk.doc_ptr.astype(np.int64), blk.seg_ptr.astype(np.int64), blk.words.astype(np.int64), V)
    net = compile_network(parse_network(hyper["network"]), layout, K)       # with its own word side
    ref = NetworkSampler(net, seed=0, z=state["z"])
    for key in ("n", "tc", "tp", "Nn", "TC", "TP", "s", "Se", "mx"):        # start again from empty counts
        getattr(ref, key)[:] = 0
    ref._run(init=True, seed=seed)
    ref.check()
    assert np.array_equal(state["s"], ref.s)
    engine_net = m._compiled(blk, hyper)
    cnt = rebuild_counts(engine_net, state["z"].astype(np.int64), state["s"], word_side=False)
    pyp = np.repeat(engine_net.kind == 1, engine_net.dim)
    c = cnt["n"] + cnt["tc"]
    assert np.all(((cnt["tp"] > 0) == (c > 0))[pyp]) and np.all(cnt["tp"] <= c)
    if name == "adatm":         # a two-parent node: its first customers do not all go up the first edge
        firsts = [int(ref.Se[e]) for e in range(len(net.par_node))]
        assert sum(1 for x in firsts if x > 0) > len(set(net.par_node.tolist()))
    assert np.any(cnt["tp"][pyp & (c > 1)] < c[pyp & (c > 1)])           # some customers joined a table


def test_counts_memo_serves_the_swept_arrays_only():
    """The counts a sweep left are recalled for the same z and s arrays (O(1), drivers/models/pdp_network/block_memo.py) and
    equal their recount; a state whose arrays were replaced (restored, shipped, copied) is recounted."""
    V, K = 8, 3
    blk = _block(5, D=8)
    m = PdpNetwork(K, V)
    hyper = m.initial_hyper(network="seqlda")
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    state = m.init_state(blk, hyper, nwk, nk, 3)
    m.sweep(blk, state, hyper, nwk, nk, 4)
    net = m._compiled(blk, hyper)
    memo = m._memo("counts")
    got = memo.recall(blk, state)
    assert got is not None
    want = rebuild_counts(net, state["z"].astype(np.int64), state["s"], word_side=False)
    assert [k for k in want if k != "mx" and not np.array_equal(got[k], want[k])] == []
    assert np.all(got["mx"] >= want["mx"])          # running maxima: an upper bound (the Stirling table's size)
    other = {"z": state["z"].copy(), "s": state["s"].copy()}
    other["z"][0] = (other["z"][0] + 1) % K
    assert memo.recall(blk, other) is None and memo.recall(blk, dict(state, z=state["z"].copy())) is None
