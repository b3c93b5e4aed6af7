"""A chain of Pitman-Yor word vectors on the Gibbs engine (issue 28, hca's word side; :mod:`inference.pdpnet.
word_chain`): with one partition the engine sweep is the in-process network sampler's, draw for draw (depths 2 and
3, Dirichlet and uniform roots); split over two partitions (the others' counts fixed between synchronisations),
the summed tables equal the recount of the partitions' states, 0 <= t^p <= c^p and t <= c at every level, and the
driver's steps move every level's a and b; the refusals of what the engine does not run."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import word_sides, words_chain, words_pyp
from drivers.models.pdp_network.model import PdpNetwork
from inference.errors import UsageError
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import merge
from inference.pdpnet import kernels, word_chain
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network

V, K = 7, 3


def chain_spec(depth: int, beta0: float) -> dict:
    """theta[document] Dirichlet; phi[topic] PYP over nu1 PYP over ... nu_{depth-1} over the root."""
    root = {"dirichlet": beta0} if beta0 > 0 else {"uniform": True}
    nodes = {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
             "base": {"index": ["corpus"], "over": "word", **root}}
    parent = "base"
    for lv in range(depth - 1, 0, -1):
        nodes[f"nu{lv}"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.1 * lv, "b": 1.0 + lv},
                            "parents": [{"node": parent, "index": ["corpus"]}]}
        parent = f"nu{lv}"
    nodes["phi"] = {"index": ["topic"], "over": "word", "pyp": {"a": 0.4, "b": 1.5},
                    "parents": [{"node": parent, "index": ["corpus"]}]}
    return {"name": f"chain-{depth}", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic"]}}


def _cells(net, sm, name):
    js = np.flatnonzero(net.family == net.spec.order.index(name))
    return [(sm.n[net.off[j]:net.off[j + 1]] + sm.tc[net.off[j]:net.off[j + 1]], sm.tp[net.off[j]:net.off[j + 1]])
            for j in js[np.argsort(net.key[js])]]


def _word_state(net, sm, depth):
    """(n, t) V x K of phi and (c, t) V x L of nu1..nu_L from the in-process sampler's counts."""
    phi = _cells(net, sm, "phi")
    up = [_cells(net, sm, f"nu{lv}")[0] for lv in range(1, depth)]
    return (np.stack([c for c, _ in phi], axis=1), np.stack([t for _, t in phi], axis=1),
            np.stack([c for c, _ in up], axis=1), np.stack([t for _, t in up], axis=1))


@pytest.mark.parametrize("depth,beta0", [(2, 0.0), (2, 0.3), (3, 0.0)], ids=["2-uniform", "2-dirichlet", "3-uniform"])
def test_one_partition_is_the_network_sampler_draw_for_draw(depth, beta0):
    rng = np.random.default_rng(5)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(8)]
    spec = parse_network(chain_spec(depth, beta0))
    side = words_pyp.word_side(spec)
    net = compile_network(spec, CorpusLayout.of(docs, V), K)
    sm = NetworkSampler(net, seed=2)
    topic = compile_network(spec, CorpusLayout.of(docs, V), K, word_side=False)
    z = sm.z.copy()
    cnt = rebuild_counts(topic, z, np.zeros(int(topic.eoff[-1]), np.int64), word_side=False)
    topic.ancestors = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    n, t, cup, tup = (x.astype(np.int64) for x in _word_state(net, sm, depth))
    vocab = np.arange(V)
    own_n, own_t, own_up = n.copy(), t.copy(), tup.copy()
    loc = words_chain.local_arrays(vocab, topic.words, own_n, own_t, own_up, n, t, tup,
                                 dict(nk=n.sum(axis=0), **words_chain.derived({"nwk": n, words_pyp.TABLE: t,
                                                                            words_chain.TABLE: tup})))
    wargs = words_chain.kernel_args(loc, side, topic.a_names, topic.b_names, V)
    avals, bvals = topic.a_values.copy(), topic.b_values.copy()
    stack = StirlingStack(avals)
    moved = 0
    for _ in range(4):
        seed = sm._seed(sm.iteration + 1, 1)
        before = z.copy()
        cnt["mx"][:] = max(cnt["mx"][0], loc["nloc"].max(), loc["cup"].max()), max(loc["tloc"].max(),
                                                                                 loc["tup"].max())
        pos, reseed = 0, True
        while pos >= 0:
            stack.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = word_chain.chain_word_sweep(pos, reseed, seed, loc["uidx"], *word_sides.topic_args(topic, z, avals, bvals),
                                              stack.L3, *word_sides.count_args(topic, cnt, np.zeros(0, np.int64)), *wargs)
            reseed = False
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        n2, t2, cup2, tup2 = _word_state(net, sm, depth)
        for got, want in ((loc["nloc"], n2), (loc["tloc"], t2), (loc["cup"], cup2), (loc["tup"], tup2),
                          (loc["own_t"], t2), (loc["own_c"], cup2), (loc["own_up"], tup2)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(loc["Tk"], t2.sum(axis=0))
        np.testing.assert_array_equal(loc["Cup"], cup2.sum(axis=0))
        np.testing.assert_array_equal(loc["Tup"], tup2.sum(axis=0))
    assert moved > 10 and (tup2 < cup2).any() and (t2 < n2).any()


def two_partitions(seed: int, network="pyp-lda-2"):
    rng = np.random.default_rng(seed)
    docs = [(f"d{i:02d}", [list(rng.integers(0, 9, rng.integers(2, 12)))]) for i in range(16)]
    model = PdpNetwork(K, 9)
    hyper = model.initial_hyper(network=network)
    blocks = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    return model, hyper, blocks, [model.initial_state(blk, hyper, 5 + p) for p, blk in enumerate(blocks)]


def test_two_partitions_sum_to_the_recount_and_every_level_stays_legal():
    model, hyper, blocks, states = two_partitions(7)
    L = words_chain.levels(hyper["word_pyp"])

    def summed():
        parts = [model.table_counts(blk, st, np.unique(blk.words, return_inverse=True))
                 for blk, st in zip(blocks, states)]
        return {tb.name: merge(tb, [c[tb.name] for c in parts]) for tb in model.count_tables()}
    moved = races = occupied = 0
    for it in range(8):
        tables = summed()
        before = [st["z"].copy() for st in states]
        for p, (blk, st) in enumerate(zip(blocks, states)):
            own = {name: np.array(tab, copy=True) for name, tab in tables.items() if isinstance(tab, np.ndarray)}
            model.sweep_tables(blk, st, hyper, own, model.derive(own), 100 * it + p)
        moved += sum(int((b0 != st["z"]).sum()) for b0, st in zip(before, states))
        new = summed()
        n, t, tch = new["nwk"], new[words_pyp.TABLE], new[words_chain.TABLE]
        np.testing.assert_array_equal(n.sum(), sum(blk.n_tokens for blk in blocks))
        c = t.sum(axis=1)
        assert np.all(t <= n)
        for lv in range(L):     # level l's customers are level l-1's tables; t <= c
            assert np.all(tch[:, lv] <= c)
            c = tch[:, lv]
        for blk, st in zip(blocks, states):     # the partition's own: 0 <= t^p <= c^p at every level
            vocab, uidx = np.unique(blk.words, return_inverse=True)
            own_c = words_pyp.own_customers(uidx.reshape(-1), st["z"], len(vocab), K)
            assert np.all(st["word_t"] >= 0) and np.all(st["word_t"] <= own_c)
            own_c = st["word_t"].sum(axis=1)
            for lv in range(L):
                assert np.all(st["word_up"][:, lv] >= 0) and np.all(st["word_up"][:, lv] <= own_c)
                own_c = st["word_up"][:, lv]
        races += int(((n > 0) & (t == 0)).sum() + ((t.sum(axis=1) > 0) & (tch[:, 0] == 0)).sum())
        occupied += int((n > 0).sum())
        hyper = model.global_step(new, hyper, model.partition_stats(blocks[0], states[0], hyper, it), it)[1]
    assert moved > 20 and races <= occupied // 20, (races, occupied)
    for name in ("phi.a", "phi.b", "nu.a", "nu.b"):
        kind = "a_values" if name.endswith(".a") else "b_values"
        assert hyper[kind][name] != (0.5 if kind == "a_values" else 10.0), name
    phi = model.sample_topic_word(new, model.derive(new), hyper)
    np.testing.assert_allclose(phi.sum(axis=1), 1.0)
    assert np.isfinite(model.loglik(new, model.derive(new), hyper))


@pytest.mark.parametrize("change,message", [
    (lambda s: s["nodes"]["nu1"].update(index=["topic"], parents=[{"node": "base", "index": ["corpus"]}]),
     "node 'phi'"),
    (lambda s: s.update(parameters={"A": {"kind": "a", "value": 0.3, "sample": False}})
     or s["nodes"]["nu1"]["pyp"].update(a="A") or s["nodes"]["phi"]["pyp"].update(a="A"), "shares a discount"),
], ids=["per-topic-middle", "shared-discount"])
def test_refusals(change, message):
    spec = chain_spec(2, 0.0)
    change(spec)
    with pytest.raises(UsageError, match=message):
        words_pyp.word_side(parse_network(spec))


def test_kernel_refuses_illegal_tables():
    """A token whose topic weights are not finite and positive raises (as word_pyp's)."""
    assert word_chain.level_terms(0, 0, 5, 2, 0.5, 1.0, 1.0, 1.0, 0.0, 1.0, 0.25)[0] == 0.0
