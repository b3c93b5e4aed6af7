"""The whole-network refresh's move of a kept state onto a grown block (issue 30, 2;
:mod:`drivers.models.pdp_network.whole_refresh`), without Spark: an empty batch over the same vocabulary leaves the
state as it was; a batch of new documents with new words keeps every old vector's counts at its cells in the grown
network (a [topic, document] family, whose keys move when documents are added, and a previous_word family, whose
start value moves with V), adds the batch's tokens as legal seatings, is deterministic, and the sampler sweeps it; a kept column's or list
column's vectors are found again by their value (old [ann, cat], grown [ann, bob, cat]: a by-position map fails),
the new value's vectors made empty and counted by the batch."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from drivers.models.pdp_network.whole_network import NetworkModel
from drivers.models.pdp_network import whole_refresh
from drivers.models.pdp_network.shared_roots import ColumnValues
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


def test_a_batch_losing_a_column_value_is_refused_in_one_line():
    """(A batch whose vocabulary does not extend the model's is refused by ``refresh_chain``'s one check, before
    ``continued_chain``, as in the split mode: tests/commands/test_refresh_pdp_whole.py.)"""
    model = SimpleNamespace(_raw=SPEC, name="pdp-network")
    assert whole_refresh.continued_chain(model, None, None, None, None, 3) is None
    sizes = {"corpus": 1, "previous_word": 4, "column:author": 3}
    with pytest.raises(RefusedError, match="'author' is gone"):
        whole_refresh.code_maps(sizes, sizes, ColumnValues({"author": ["ann", "cat"]}),
                                ColumnValues({"author": ["ann", "bob"]}))


#: documents DP over their author's Pitman-Yor vector (by[column:author]); words from a vector per topic and author
COLUMN = {"name": "by-author", "nodes": {
    "root": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
    "by": {"index": ["column:author"], "over": "topic", "pyp": PYP, "parents": [{"node": "root", "index": ["corpus"]}]},
    "theta": {"index": ["document"], "over": "topic", "dp": {"b": 2.0},
              "parents": [{"node": "by", "index": ["column:author"]}]},
    "base": {"index": ["corpus"], "over": "word", "uniform": True},
    "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.2, "b": 5.0},
            "parents": [{"node": "base", "index": ["corpus"]}]},
    "aphi": {"index": ["topic", "column:author"], "over": "word", "dp": {"b": 3.0},
             "parents": [{"node": "phi", "index": ["topic"]}]}},
    "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "aphi", "index": ["topic", "column:author"]}}


def _column_model(V, values, by_doc):
    model = NetworkModel(K, V)
    model._raw, model._columns = COLUMN, ColumnValues({"author": values}, {"author": by_doc})
    return model


def test_an_old_author_keeps_its_vectors_by_value_and_a_new_author_is_created_and_counted():
    """Old values [ann, cat]; the grown ones [ann, bob, cat] (bob new, put between: a vector moved by its code's
    position would land on bob's): every old vector (by[author], aphi[topic, author], the documents') keeps its
    counts and edges' s at the vector of the same value; bob's are created, empty before the batch, counted after;
    the batch's ann document adds to ann's."""
    block = _block(1, 8, V0, "a")
    old_codes = {f"a{i:02d}": i % 2 for i in range(8)}                  # ann, cat, ann, ...
    old_model = _column_model(V0, ["ann", "cat"], old_codes)
    old_net = compile_network(parse_network(COLUMN), old_model.corpus_layout(block), K)
    sampler = NetworkSampler(old_net, 5)
    for _ in range(3):
        sampler.sweep()
        sampler.sample_hyper()
    state = {"z": sampler.z.astype(np.int32), "s": sampler.s.copy(), "avals": sampler.avals.copy(),
             "bvals": sampler.bvals.copy(), "clock": np.array([5, 3], np.int64)}
    batch = _block(2, 4, V1, "b")
    grown = {d: 2 * c for d, c in old_codes.items()} | {"b00": 0, "b01": 1, "b02": 1, "b03": 1}   # ann bob bob bob
    model = _column_model(V1, ["ann", "bob", "cat"], grown)
    union = joined(block, batch)
    moved = _copy(state)
    grown_state(model, old_model, block, union, moved, 3)
    net = compile_network(parse_network(COLUMN), model.corpus_layout(union), K)
    N0, fam = block.n_tokens, {name: f for f, name in enumerate(old_net.spec.order)}
    old = rebuild_counts(old_net, state["z"].astype(np.int64), state["s"])
    sizes = [whole_refresh._sizes(n, m.corpus_layout(b)) for n, m, b in ((old_net, old_model, block),
                                                                           (net, model, union))]
    maps = whole_refresh.code_maps(*sizes, old_model._columns, model._columns)
    before = whole_refresh.moved_s(old_net, net, whole_refresh.instance_map(old_net, net, *sizes, maps), state["s"])
    kept = rebuild_counts(net, moved["z"][:N0].astype(np.int64), before)     # moved, before the batch's seating
    full = rebuild_counts(net, moved["z"].astype(np.int64), moved["s"])

    def vector(n, name, key):
        return int(np.flatnonzero((n.family == fam[name]) & (n.key == key))[0])

    def cells(n, cnt, j, width=None):        # (n + tc, tp) of vector j's cells (the first ``width``: the old words)
        hi = n.off[j + 1] if width is None else n.off[j] + width
        return (cnt["n"] + cnt["tc"])[n.off[j]:hi], cnt["tp"][n.off[j]:hi]

    for value, was, now in (("ann", 0, 0), ("cat", 1, 2)):
        pairs = [(vector(old_net, "by", was), vector(net, "by", now))] + [
            (vector(old_net, "aphi", k * 3 + was), vector(net, "aphi", k * 4 + now)) for k in range(K)]
        for j, nj in pairs:
            assert (old["n"] + old["tc"])[old_net.off[j]:old_net.off[j + 1]].sum() > 0, value
            width = old_net.off[j + 1] - old_net.off[j]
            assert not kept["n"][net.off[nj] + width:net.off[nj + 1]].any()     # (a new word's cells: empty)
            assert np.array_equal(old["n"][old_net.off[j]:old_net.off[j + 1]], kept["n"][net.off[nj]:][:width])
            for a, b in zip(cells(old_net, old, j), cells(net, kept, nj, width)):
                assert np.array_equal(a, b), (value, j)
            e, ne = old_net.par_ptr[j], net.par_ptr[nj]                         # (its one parent edge's s: the
            was = state["s"][old_net.eoff[e]:old_net.eoff[e + 1]]               # batch's ann document adds)
            assert np.array_equal(was, before[net.eoff[ne]:][:len(was)]), (value, j)
            assert np.all(moved["s"][net.eoff[ne]:][:len(was)] >= was) and not before[net.eoff[ne]:][
                len(was):net.eoff[ne + 1] - net.eoff[ne]].any()
    for d in range(8):        # a document's vector keeps its counts and its one parent: its author's by vector
        j, nj = vector(old_net, "theta", d), vector(net, "theta", d)
        assert net.par_node[net.par_ptr[nj]] == vector(net, "by", grown[f"a{d:02d}"])
        assert all(np.array_equal(a, b) for a, b in zip(cells(old_net, old, j), cells(net, kept, nj)))
    bob = [vector(net, "by", 1)] + [vector(net, "aphi", k * 4 + 1) for k in range(K)]
    assert sum(cells(net, kept, j)[0].sum() for j in bob) == 0
    assert cells(net, full, bob[0])[0].sum() > 0           # bob's documents' tables; every bob token in aphi[., bob]
    ptr = batch.token_ptr()
    assert sum(full["n"][net.off[j]:net.off[j + 1]].sum() for j in bob[1:]) == ptr[4] - ptr[1]
    ann = vector(net, "by", 0)
    assert cells(net, full, ann)[0].sum() > cells(old_net, old, vector(old_net, "by", 0))[0].sum()
    _legal(net, full)


#: documents' vectors over their authors' Pitman-Yor vectors (list:authors: one parent per author, rho uniform)
LISTS = {"name": "by-authors", "nodes": {
    "root": {"index": ["corpus"], "over": "topic", "dirichlet": 1.0},
    "author": {"index": ["list:authors"], "over": "topic", "pyp": PYP,
               "parents": [{"node": "root", "index": ["corpus"]}]},
    "doc": {"index": ["document"], "over": "topic", "dp": {"b": 1.3}, "weights": "uniform",
            "parents": [{"node": "author", "index": ["list:authors"]}]},
    "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.8}},
    "topic": {"node": "doc", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def test_a_list_column_keeps_every_document_s_authors_by_value():
    """Old authors [ann, cat] grown to [ann, bob, cat]: an old document keeps its parents (its authors, in order,
    found by value), the authors' vectors keep their counts before the batch; bob's vector is made and counted."""
    block = _block(3, 6, V0, "a")
    old_codes = {f"a{i:02d}": [(0,), (0, 1), (1,)][i % 3] for i in range(6)}
    old_model, model = NetworkModel(K, V0), NetworkModel(K, V1)
    old_model._raw = model._raw = LISTS
    old_model._columns = ColumnValues({"authors": ["ann", "cat"]}, {"authors": old_codes}, ["authors"])
    grown = {d: tuple(2 * c for c in codes) for d, codes in old_codes.items()} | {"b00": (1, 0), "b01": (1,)}
    model._columns = ColumnValues({"authors": ["ann", "bob", "cat"]}, {"authors": grown}, ["authors"])
    old_net = compile_network(parse_network(LISTS), old_model.corpus_layout(block), K)
    sampler = NetworkSampler(old_net, 7)
    for _ in range(3):
        sampler.sweep()
    state = {"z": sampler.z.astype(np.int32), "s": sampler.s.copy(), "avals": sampler.avals.copy(),
             "bvals": sampler.bvals.copy(), "clock": np.array([7, 3], np.int64)}
    union = joined(block, _block(4, 2, V1, "b"))
    moved = _copy(state)
    grown_state(model, old_model, block, union, moved, 3)
    net = compile_network(parse_network(LISTS), model.corpus_layout(union), K)
    sizes = [whole_refresh._sizes(n, m.corpus_layout(b)) for n, m, b in ((old_net, old_model, block),
                                                                           (net, model, union))]
    maps = whole_refresh.code_maps(*sizes, old_model._columns, model._columns)
    assert maps["list:authors"].tolist() == [0, 2, 3]
    before = whole_refresh.moved_s(old_net, net, whole_refresh.instance_map(old_net, net, *sizes, maps), state["s"])
    order = list(net.spec.order)

    def vector(n, name, key):
        return int(np.flatnonzero((n.family == order.index(name)) & (n.key == key))[0])

    for d in range(6):
        j = vector(net, "doc", d)
        parents = net.par_node[net.par_ptr[j]:net.par_ptr[j + 1]]
        assert [int(net.key[p]) for p in parents] == list(grown[f"a{d:02d}"]), d
    old = rebuild_counts(old_net, state["z"].astype(np.int64), state["s"])
    kept = rebuild_counts(net, moved["z"][:block.n_tokens].astype(np.int64), before)
    full = rebuild_counts(net, moved["z"].astype(np.int64), moved["s"])
    for was, now in ((0, 0), (1, 2)):
        j, nj = vector(old_net, "author", was), vector(net, "author", now)
        for key in ("tc", "tp"):
            assert old[key][old_net.off[j]:old_net.off[j + 1]].sum() > 0
            assert np.array_equal(old[key][old_net.off[j]:old_net.off[j + 1]], kept[key][net.off[nj]:net.off[nj + 1]])
    bob = vector(net, "author", 1)
    assert kept["tc"][net.off[bob]:net.off[bob + 1]].sum() == 0 < full["tc"][net.off[bob]:net.off[bob + 1]].sum()
    _legal(net, full)
