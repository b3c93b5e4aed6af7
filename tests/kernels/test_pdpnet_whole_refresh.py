"""The whole-network refresh's move of a kept state onto a grown block (issue 30, 2;
:mod:`drivers.models.pdp_network.whole_refresh`), without Spark: an empty batch over the same vocabulary leaves the
state as it was; a batch of new documents with new words keeps every old vector's counts at its cells in the grown
network (a [topic, document] family, whose keys move when documents are added, and a previous_word family, whose
start value moves with V), adds the batch's tokens as legal seatings, is deterministic, and the sampler sweeps it."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from drivers.models.pdp_network.whole_network import NetworkModel
from drivers.models.pdp_network import whole_refresh
from drivers.models.pdp_network.whole_refresh import grown_state, joined
from inference.errors import RefusedError
from inference.gibbs.block import SegmentedBlock
from inference.pdpnet import kernels
from inference.pdpnet.compile import KIND_PYP, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts, run_network
from inference.pdpnet.spec import parse_network

K, V0, V1 = 3, 10, 13
PYP = {"a": {"value": 0.3, "sample": True}, "b": {"value": 4.0, "sample": True}}
#: theta[document] over theta_w[previous_word] over a root; words from a vector per topic and document over phi[topic]
SPEC = {"name": "grown", "nodes": {
    "root": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
    "trans": {"index": ["previous_word"], "over": "topic", "pyp": PYP, "parents": [{"node": "root", "index": ["corpus"]}]},
    "theta": {"index": ["document"], "over": "topic", "dp": {"b": 2.0},
              "parents": [{"node": "root", "index": ["corpus"]}]},
    "tok": {"index": ["previous_word", "document"], "over": "topic", "dp": {"b": 3.0},
            "parents": [{"node": "trans", "index": ["previous_word"]}, {"node": "theta", "index": ["document"]}]},
    "base": {"index": ["corpus"], "over": "word", "uniform": True},
    "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.2, "b": 5.0},
            "parents": [{"node": "base", "index": ["corpus"]}]},
    "burst": {"index": ["topic", "document"], "over": "word", "pyp": {"a": 0.1, "b": 2.0},
              "parents": [{"node": "phi", "index": ["topic"]}]}},
    "topic": {"node": "tok", "index": ["previous_word", "document"]}, "word": {"node": "burst", "index": ["topic", "document"]}}


def _block(seed, n_docs, vocab, prefix):
    rng = np.random.default_rng(seed)
    return SegmentedBlock.from_segments([(f"{prefix}{i:02d}", [list(rng.integers(0, vocab, rng.integers(4, 9)))])
                                         for i in range(n_docs)])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A state of the old block after 3 sweeps and steps of the in-process sampler (the whole mode's chain)."""
    path = tmp_path_factory.mktemp("grown") / "grown.json"
    path.write_text(json.dumps(SPEC))
    models = {}
    for V in (V0, V1):
        models[V] = NetworkModel(K, V)
        models[V].initial_hyper(network=str(path))
    block = _block(1, 8, V0, "a")
    net = compile_network(parse_network(SPEC), models[V0].corpus_layout(block), K)
    sampler = NetworkSampler(net, 5)
    for _ in range(3):
        sampler.sweep()
        sampler.sample_hyper()
    state = {"z": sampler.z.astype(np.int32), "s": sampler.s.copy(), "avals": sampler.avals.copy(),
             "bvals": sampler.bvals.copy(), "clock": np.array([5, 3], np.int64)}
    return models, block, net, state


def _copy(state):
    return {k: v.copy() for k, v in state.items()}


def _legal(net, cnt):
    c = cnt["n"] + cnt["tc"]
    pyp = np.repeat(net.kind == KIND_PYP, net.dim)
    assert np.all(cnt["tp"] <= c) and np.all((cnt["tp"][pyp] == 0) == (c[pyp] == 0))


def test_an_empty_batch_leaves_the_state_as_it_was(trained):
    models, block, _, state = trained
    empty = SegmentedBlock(np.zeros(0, object), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int32))
    moved = _copy(state)
    grown_state(models[V0], models[V0], block, joined(block, empty), moved, 3)
    for key in state:
        assert np.array_equal(moved[key], state[key]), key


def test_new_documents_and_words_keep_the_old_counts_and_are_seated(trained):
    models, block, old_net, state = trained
    batch = _block(2, 5, V1, "b")
    union = joined(block, batch)
    moved = _copy(state)
    grown_state(models[V1], models[V0], block, union, moved, 3)
    net = compile_network(parse_network(SPEC), models[V1].corpus_layout(union), K)
    N0 = block.n_tokens
    assert np.array_equal(moved["z"][:N0], state["z"]) and len(moved["z"]) == union.n_tokens
    old = rebuild_counts(old_net, state["z"].astype(np.int64), state["s"])
    kept = rebuild_counts(net, moved["z"][:N0].astype(np.int64), moved["s"])   # the old tokens in the grown net
    fam = {name: f for f, name in enumerate(old_net.spec.order)}
    assert old_net.key[old_net.family == fam["burst"]].max() != net.key[net.family == fam["burst"]].max()
    inst = np.full(old_net.num_nodes, -1, np.int64)     # the old vectors in the grown net, by the tokens reaching
    inst[old_net.topic_inst] = net.topic_inst[:N0]      # them (then their parents, edge by edge)
    inst[old_net.word_inst.ravel()] = net.word_inst[:N0].ravel()
    for j in range(old_net.num_nodes - 1, -1, -1):
        for r in range(old_net.par_ptr[j + 1] - old_net.par_ptr[j]):
            inst[old_net.par_node[old_net.par_ptr[j] + r]] = net.par_node[net.par_ptr[inst[j]] + r]
    assert np.all(inst >= 0) and len(np.unique(inst)) == len(inst)
    own = np.isin(old_net.family, [fam["theta"], fam["tok"], fam["burst"]])     # an old document's vectors
    for j in range(old_net.num_nodes):      # every old vector's tokens at its cells in the grown network, its
        lo, hi = old_net.off[j], old_net.off[j + 1]     # edges' s there (a shared vector's: the batch's added)
        assert np.array_equal(kept["n"][net.off[inst[j]]:net.off[inst[j]] + hi - lo], old["n"][lo:hi]), j
        for r in range(old_net.par_ptr[j + 1] - old_net.par_ptr[j]):
            e, ne = old_net.par_ptr[j] + r, net.par_ptr[inst[j]] + r
            was = state["s"][old_net.eoff[e]:old_net.eoff[e + 1]]
            now = moved["s"][net.eoff[ne]:net.eoff[ne] + len(was)]
            assert np.array_equal(now, was) if own[j] else np.all(now >= was), (j, r)
            assert not own[j] or not moved["s"][net.eoff[ne] + len(was):net.eoff[ne + 1]].any()
    assert kept["n"].sum() == old["n"].sum() and state["s"].sum() > 0
    full = rebuild_counts(net, moved["z"].astype(np.int64), moved["s"])
    _legal(net, full)
    new_words = np.unique(batch.words[batch.words >= V0])
    phi = np.flatnonzero(net.family == fam["phi"])
    assert len(new_words) and (full["n"] + full["tc"])[net.off[phi][:, None] + new_words].sum() > 0
    cells = net.off[net.word_inst[N0:][np.arange(batch.n_tokens), moved["z"][N0:]]] + net.words[N0:]
    assert np.all(full["n"][cells] > 0) and full["Se"].sum() > old["Se"].sum()
    again = _copy(state)
    grown_state(models[V1], models[V0], block, union, again, 3)
    assert all(np.array_equal(again[k], moved[k]) for k in moved)
    z, s = moved["z"].astype(np.int64), moved["s"].copy()
    avals = moved["avals"].copy()
    stirling = StirlingStack(avals, sampled=[net.spec.params[n].sample for n in net.a_names])
    for t in range(2):                          # the sampler sweeps the grown state
        run_network(net, kernels.ancestor_lists(net.par_ptr, net.par_node), z, s, full, avals, moved["bvals"],
                    stirling, 11 + t, True, False, np.zeros(0))
    assert not np.array_equal(z, moved["z"])
    recount = rebuild_counts(net, z, s)
    for key in ("n", "tc", "tp", "Se"):
        assert np.array_equal(recount[key], full[key]), key
    _legal(net, recount)


def test_a_spec_indexed_by_a_kept_column_or_a_batch_not_extending_the_vocabulary_is_refused_in_one_line():
    spec = json.loads(json.dumps(SPEC))
    spec["nodes"]["theta"]["parents"] = [{"node": "by", "index": ["column:author"]}]
    spec["nodes"]["by"] = {"index": ["column:author"], "over": "topic", "dp": {"b": 1.0},
                           "parents": [{"node": "root", "index": ["corpus"]}]}
    model = SimpleNamespace(_raw=spec, name="pdp-network")
    with pytest.raises(RefusedError, match="indexed by a kept column is not continued"):
        whole_refresh.continued_chain(model, None, None, None, SimpleNamespace(directory="unread"), 3)
    model = SimpleNamespace(_raw=SPEC, name="pdp-network")
    assert whole_refresh.continued_chain(model, None, None, None, None, 3) is None
    base = SimpleNamespace(vocab=pd.DataFrame({"term": ["a", "b"]}))
    with pytest.raises(RefusedError, match="does not extend the model's"):
        whole_refresh.continued_chain(model, None, None, base, SimpleNamespace(
            directory="batch", vocab=pd.DataFrame({"term": ["b", "a", "c"]})), 3)
