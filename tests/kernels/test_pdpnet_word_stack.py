"""A chain of word vectors with more than one level per topic (issue 28): phi[topic] over phi1[topic] over ...
over phi_B[topic] over a root or a corpus-level chain. One partition of the engine's sweep
(:func:`inference.pdpnet.word_stack.stack_word_sweep`, B bottom levels, every token's value 0) is the in-process
network sampler's, draw for draw (z and every level's customers and indicators), over a Dirichlet root, the uniform
and a corpus-level PYP, B = 2 and 3."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_stack import stack_word_sweep

V, K = 6, 3
#: the per-topic levels' (a, b), phi first
LEVELS = [(0.4, 1.5), (0.3, 2.0), (0.2, 2.5), (0.35, 1.0)]


def deep_spec(root: str, depth: int) -> dict:
    """theta[document] Dirichlet; phi[topic] PYP over phi1[topic] PYP over ... phi_{depth-1}[topic] PYP over
    ``root``: a Dirichlet, the uniform, or a corpus-level PYP over the uniform."""
    names = ["phi"] + [f"phi{i}" for i in range(1, depth)]
    top = "nu" if root == "pyp" else "m"
    nodes = {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
             "m": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if root == "dirichlet"
                                                            else {"uniform": True})}}
    for i, name in enumerate(names):
        a, b = LEVELS[i]
        parent = {"node": names[i + 1], "index": ["topic"]} if i + 1 < depth else {"node": top, "index": ["corpus"]}
        nodes[name] = {"index": ["topic"], "over": "word", "pyp": {"a": a, "b": b}, "parents": [parent]}
    if root == "pyp":
        nodes["nu"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.25, "b": 3.0},
                       "parents": [{"node": "m", "index": ["corpus"]}]}
    return {"name": "deep-chain", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic"]}}


def _rows(net, sm, name, counts):
    """(V, K) the per-topic vector ``name``'s cells of ``counts`` (one of the sampler's per-cell arrays)."""
    fam = net.spec.order.index(name)
    out = np.zeros((V, K), np.int64)
    for j in np.flatnonzero(net.family == fam):
        out[:, int(net.key[j])] = counts[net.off[j]:net.off[j + 1]]
    return out


def state_of(net, sm, depth: int, L: int) -> list:
    """The kernel's arrays from the in-process sampler's counts: bottom levels phi..phi_{depth-2} (B, V, K), their
    restaurants (B, 1, K), phi0 = phi_{depth-1}, the corpus level."""
    names = ["phi"] + [f"phi{i}" for i in range(1, depth)]
    bn = np.stack([_rows(net, sm, "phi", sm.n)] + [_rows(net, sm, nm, sm.tc) for nm in names[1:-1]])
    bt = np.stack([_rows(net, sm, nm, sm.tp) for nm in names[:-1]])
    nloc, tloc = _rows(net, sm, names[-1], sm.tc), _rows(net, sm, names[-1], sm.tp)
    cup, tup = np.zeros((V, L), np.int64), np.zeros((V, L), np.int64)
    if L:
        j = int(np.flatnonzero(net.family == net.spec.order.index("nu"))[0])
        cup[:, 0], tup[:, 0] = sm.tc[net.off[j]:net.off[j + 1]], sm.tp[net.off[j]:net.off[j + 1]]
    return [bn, bt, bn.sum(axis=1, keepdims=True), bt.sum(axis=1, keepdims=True), nloc, tloc, cup, tup]


def run_against_the_network_sampler(root: str, depth: int, sweeps: int = 4, shuffle=None) -> None:
    rng = np.random.default_rng(11)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    spec = parse_network(deep_spec(root, depth))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=4)
    topic = compile_network(spec, layout, K, word_side=False)
    words = topic.words
    L = 1 if root == "pyp" else 0
    z = sm.z.copy()
    cnt = rebuild_counts(topic, z, np.zeros(int(topic.eoff[-1]), np.int64), word_side=False)
    anc_ptr, anc = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    bn, bt, BN, BT, nloc, tloc, cup, tup = state_of(net, sm, depth, L)
    own = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    an, bname = topic.a_names.index, topic.b_names.index
    names = ["phi"] + [f"phi{i}" for i in range(1, depth)]
    pbs = np.array([an(f"{nm}.a") for nm in names[:-1]], np.int64)
    bbs = np.array([bname(f"{nm}.b") for nm in names[:-1]], np.int64)
    if shuffle is not None:
        pbs, bbs = shuffle(pbs), shuffle(bbs)
    pl = np.array([an(f"{names[-1]}.a")] + ([an("nu.a")] if L else []), np.int64)
    bl = np.array([bname(f"{names[-1]}.b")] + ([bname("nu.b")] if L else []), np.int64)
    gl = np.ones(L + 1)
    beta0 = 0.4 if root == "dirichlet" else 0.0
    stack = StirlingStack(topic.a_values)
    Nk, Tk, Cup, Tup = nloc.sum(axis=0), tloc.sum(axis=0), cup.sum(axis=0), tup.sum(axis=0)
    moved = 0
    for _ in range(sweeps):
        seed = sm._seed(sm.iteration + 1, 1)
        before = z.copy()
        cnt["mx"][:] = max(bn.max(), nloc.max(), cup.max(initial=0)), max(bt.max(), tloc.max(), tup.max(initial=0))
        pos, reseed = 0, True
        while pos >= 0:
            stack.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = stack_word_sweep(
                pos, reseed, seed, words.astype(np.int64), np.arange(V), np.zeros(V, np.int64), z, topic.topic_inst,
                anc_ptr, anc, topic.kind, topic.dim, topic.off, topic.alpha, topic.a_of, topic.b_of, topic.par_ptr,
                topic.par_node, topic.par_gamma, topic.gamma_sum, topic.a_values, topic.b_values, stack.L3, cnt["n"],
                cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], np.zeros(0, np.int64), cnt["Se"], topic.eoff,
                cnt["mx"], bn, bt, BN, BT, own[0], own[1], nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own[2], own[3],
                own[4], own[5], pbs, bbs, np.ones(depth - 1), pl, bl, gl, gl.copy(), beta0, V)
            reseed = False
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], state_of(net, sm, depth, L)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(Tk, tloc.sum(axis=0))
        assert np.all(bt <= bn) and np.all(tloc <= nloc)
        np.testing.assert_array_equal(bn[1:], bt[:-1])      # a level's customers are the tables one level down
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any()


@pytest.mark.parametrize("root,depth", [("dirichlet", 3), ("uniform", 3), ("pyp", 3), ("pyp", 4)])
def test_one_partition_is_the_network_sampler_draw_for_draw(root, depth):
    run_against_the_network_sampler(root, depth)


def test_the_levels_parameters_in_another_order_fail_it():
    """The same comparison with the two bottom levels' discounts and concentrations swapped differs (the test can
    fail)."""
    with pytest.raises(AssertionError):
        run_against_the_network_sampler("pyp", 3, shuffle=lambda x: x[::-1].copy())


def test_three_levels_per_topic_on_the_engine_two_partitions(tmp_path):
    """phi[topic] over phi1[topic] over phi2[topic] over a corpus-level PYP through the engine's hooks (no Spark):
    two partitions, two sweeps per synchronisation, 6 iterations; the summed tables are the partitions' states
    (0 <= t^p <= c^p at every level, a level's own customers its own indicators one level down), t <= c at every
    level of the summed tables, every a and b moves, the topics sum to 1, a held-out document's rows are
    distributions."""

    from drivers.models.pdp_network import words_column, words_pyp, words_stack
    from inference.gibbs.block import SegmentedBlock
    from pdp_hooks import Partitions, spec_model

    V9 = 9
    rng = np.random.default_rng(3)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V9, rng.integers(2, 12)))]) for i in range(16)]
    spec = deep_spec("pyp", 3)
    for node in ("phi", "phi1", "phi2", "nu"):
        spec["nodes"][node]["pyp"] = {k: {"value": v, "sample": True} for k, v in spec["nodes"][node]["pyp"].items()}
    model, hyper = spec_model(tmp_path, spec, K, V9, "deep.json")
    side = hyper["word_pyp"]
    assert side["column"] == words_pyp.ONE_VALUE and side["bottom"][2] == "phi" and side["middle"][0][2] == "phi1"
    assert side["a"] == "phi2.a" and side["chain"][0][2] == "nu"
    run = Partitions(model, hyper, docs)
    start = dict(hyper["b_values"], **hyper["a_values"])
    moved = 0
    for it in range(6):
        changed, new = run.sweep(it, sweeps=2)
        moved += changed
        bn, bt = new[words_column.CUSTOMERS], new[words_column.TABLES]
        mid = new[words_stack.MID]
        np.testing.assert_array_equal(bn, new["nwk"])               # one value: phi's cells are (w, k)
        assert np.all(bt <= bn) and np.all(mid <= bt) and np.all(new[words_pyp.TABLE] <= mid)
        assert np.all(new["word_chain"][:, 0] <= new[words_pyp.TABLE].sum(axis=1))
        for blk, st in zip(run.blocks, run.states):
            vocab, uidx = np.unique(blk.words, return_inverse=True)
            bst = st[words_stack.STATE]
            own = words_pyp.own_customers(uidx.reshape(-1), st["z"], len(vocab), K)
            assert np.all((0 <= bst[0]) & (bst[0] <= own)) and np.all((0 <= bst[1]) & (bst[1] <= bst[0]))
            assert np.all((0 <= st["word_t"]) & (st["word_t"] <= bst[1]))
        hyper = run.step(new, it)
        assert np.isfinite(model.loglik(new, model.derive(new), hyper))
    assert moved > 20 and (mid < bt).any() and (bt < bn).any()
    now = dict(hyper["b_values"], **hyper["a_values"])
    assert all(now[name] != value for name, value in start.items() if name != "theta"), (now, start)
    phi2 = run.trained(new)
    np.testing.assert_allclose(phi2.sum(axis=1), 1.0)
    full = model.column_rows(SegmentedBlock.from_segments([("d00", [list(range(V9))])]), hyper, phi2.T)
    np.testing.assert_allclose(full.sum(axis=0), 1.0)


def test_a_level_per_topic_over_a_root_per_topic_stays_refused():
    """Three levels per topic whose top is over a Dirichlet root per topic (not a corpus root): one line."""
    from drivers.models.pdp_network import words_pyp
    from inference.errors import UsageError

    spec = deep_spec("dirichlet", 3)
    spec["nodes"]["m"]["index"] = ["topic"]
    spec["nodes"]["phi2"]["parents"] = [{"node": "m", "index": ["topic"]}]
    with pytest.raises(UsageError, match="node 'phi1': a word vector per topic under 'phi'") as info:
        words_pyp.word_side(parse_network(spec))
    assert "\n" not in str(info.value)
