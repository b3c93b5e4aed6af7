"""A word side indexed by [topic, column:NAME] on the Gibbs engine (issue 28, differential topic models;
:mod:`inference.pdpnet.word_column`): with one partition the engine sweep is the in-process network sampler's, draw
for draw (phi[topic, column] over phi0[topic] over the uniform, over a Dirichlet root, over a corpus-level PYP)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_column import column_word_sweep

V, K, G = 7, 3, 2


def dtm_spec(root: str) -> dict:
    """theta[document] Dirichlet; phi[topic, column:c] PYP over phi0[topic] PYP over ``root``: the uniform, a
    Dirichlet, or a corpus-level PYP over the uniform."""
    nodes = {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
             "base": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if root == "dirichlet"
                                                               else {"uniform": True})},
             "phi0": {"index": ["topic"], "over": "word", "pyp": {"a": 0.3, "b": 2.0},
                      "parents": [{"node": "nu" if root == "pyp" else "base", "index": ["corpus"]}]},
             "phi": {"index": ["topic", "column:c"], "over": "word", "pyp": {"a": 0.4, "b": 1.5},
                     "parents": [{"node": "phi0", "index": ["topic"]}]}}
    if root == "pyp":
        nodes["nu"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.2, "b": 3.0},
                       "parents": [{"node": "base", "index": ["corpus"]}]}
    return {"name": "dtm", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic", "column:c"]}}


def _vec(net, name, key):
    js = np.flatnonzero(net.family == net.spec.order.index(name))
    return int(js[net.key[js] == key][0])


def _state(net, sm, gdoc, tokdoc, L):
    """The engine kernel's arrays (pairs = (g, w) for every g, w) from the in-process sampler's counts."""
    bottom = {}
    for i in range(len(net.words)):
        for k in range(K):
            bottom[(int(gdoc[tokdoc[i]]), k)] = int(net.word_inst[i, k])
    P = G * V
    bn, bt = np.zeros((P, K), np.int64), np.zeros((P, K), np.int64)
    BN, BT = np.zeros((G, K), np.int64), np.zeros((G, K), np.int64)
    for (g, k), j in bottom.items():
        bn[g * V:(g + 1) * V, k] = sm.n[net.off[j]:net.off[j + 1]]
        bt[g * V:(g + 1) * V, k] = sm.tp[net.off[j]:net.off[j + 1]]
        BN[g, k], BT[g, k] = sm.Nn[j], sm.TP[j]
    phi0 = [_vec(net, "phi0", k) for k in range(K)]
    nloc = np.stack([sm.tc[net.off[j]:net.off[j + 1]] for j in phi0], axis=1)
    tloc = np.stack([sm.tp[net.off[j]:net.off[j + 1]] for j in phi0], axis=1)
    cup, tup = np.zeros((V, L), np.int64), np.zeros((V, L), np.int64)
    if L:
        j = _vec(net, "nu", 0)
        cup[:, 0], tup[:, 0] = sm.tc[net.off[j]:net.off[j + 1]], sm.tp[net.off[j]:net.off[j + 1]]
    return [bn, bt, BN, BT, nloc, tloc, cup, tup]


@pytest.mark.parametrize("root", ["uniform", "dirichlet", "pyp"])
def test_one_partition_is_the_network_sampler_draw_for_draw(root):
    rng = np.random.default_rng(5)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    gdoc = np.arange(10) % G
    layout = dataclasses.replace(CorpusLayout.of(docs, V), columns={"c": (gdoc, G)})
    spec = parse_network(dtm_spec(root))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=2)
    topic = compile_network(spec, layout, K, word_side=False)
    tokdoc = np.repeat(np.arange(10), [len(d[0]) for d in docs])
    L = 1 if root == "pyp" else 0
    z = sm.z.copy()
    cnt = rebuild_counts(topic, z, np.zeros(int(topic.eoff[-1]), np.int64), word_side=False)
    anc_ptr, anc = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    bn, bt, BN, BT, nloc, tloc, cup, tup = _state(net, sm, gdoc, tokdoc, L)
    own = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    pidx = gdoc[tokdoc] * V + topic.words
    pword, pval = np.tile(np.arange(V), G), np.repeat(np.arange(G), V)
    a, b = topic.a_names.index, topic.b_names.index
    pl = np.array([a("phi0.a")] + ([a("nu.a")] if L else []), np.int64)
    bl = np.array([b("phi0.b")] + ([b("nu.b")] if L else []), np.int64)
    gl = np.ones(L + 1)
    beta0 = 0.4 if root == "dirichlet" else 0.0
    stack = StirlingStack(topic.a_values)
    Nk, Tk, Cup, Tup = nloc.sum(axis=0), tloc.sum(axis=0), cup.sum(axis=0), tup.sum(axis=0)
    moved = 0
    for _ in range(4):
        seed = sm._seed(sm.iteration + 1, 1)
        before = z.copy()
        cnt["mx"][:] = max(bn.max(), nloc.max(), cup.max(initial=0)), max(bt.max(), tloc.max(), tup.max(initial=0))
        pos, reseed = 0, True
        while pos >= 0:
            stack.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = column_word_sweep(
                pos, reseed, seed, pidx, pword, pval, z, topic.topic_inst, anc_ptr, anc, topic.kind, topic.dim,
                topic.off, topic.alpha, topic.a_of, topic.b_of, topic.par_ptr, topic.par_node, topic.par_gamma,
                topic.gamma_sum, topic.a_values, topic.b_values, stack.L3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"],
                cnt["TC"], cnt["TP"], np.zeros(0, np.int64), cnt["Se"], topic.eoff, cnt["mx"], bn, bt, BN, BT,
                own[0], own[1], nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own[2], own[3], own[4], own[5],
                a("phi.a"), b("phi.b"), 1.0, pl, bl, gl, gl.copy(), beta0, V)
            reseed = False
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], _state(net, sm, gdoc, tokdoc, L)):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(own, [bn, bt, nloc, tloc, cup, tup]):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(Tk, tloc.sum(axis=0))
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any()


def test_two_partitions_sum_to_the_recount_and_every_level_stays_legal(tmp_path):
    """Through the engine's hooks (no Spark): two partitions sweeping private copies of the summed tables for 8
    iterations; the summed tables are the partitions' states, 0 <= t^p <= c^p and t <= c at every level (phi0's
    customers the bottom's tables), every level's a and b move, phi0's rows and a value's rows sum to 1."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivers.models.pdp_network import words_column, words_pyp
    from drivers.models.pdp_network.model import PdpNetwork
    from inference.gibbs.block import SegmentedBlock
    from pdp_hooks import Partitions

    rng = np.random.default_rng(7)
    docs = [(f"d{i:02d}", [list(rng.integers(0, 9, rng.integers(2, 12)))]) for i in range(16)]
    (tmp_path / "docs.parquet").mkdir()
    pq.write_table(pa.table({"doc_id": [d for d, _ in docs], "c": [f"g{i % 3}" for i in range(16)]}),
                   tmp_path / "docs.parquet" / "part-0.parquet")
    spec = dtm_spec("pyp")
    for node in ("phi", "phi0", "nu"):
        spec["nodes"][node]["pyp"] = {k: {"value": v, "sample": True} for k, v in spec["nodes"][node]["pyp"].items()}
    (tmp_path / "dtm.json").write_text(__import__("json").dumps(spec))
    model = PdpNetwork(K, 9)
    model._corpus_dir = str(tmp_path)
    hyper = model.initial_hyper(network=str(tmp_path / "dtm.json"))
    run = Partitions(model, hyper, docs)
    blocks = run.blocks
    start = {k: dict(hyper[k]) for k in ("a_values", "b_values")}
    moved = 0
    for it in range(8):
        changed, new = run.sweep(it)
        moved += changed
        bn, bt = new[words_column.CUSTOMERS], new[words_column.TABLES]
        t0, tnu = new[words_pyp.TABLE], new["word_chain"][:, 0]
        np.testing.assert_array_equal(bn.reshape(4, 9, K).sum(axis=0), new["nwk"])     # G = 3 values + unseen
        assert np.all(bt <= bn) and np.all(t0 <= bt.reshape(4, 9, K).sum(axis=0)) and np.all(tnu <= t0.sum(axis=1))
        for blk, st in zip(blocks, run.states):
            pairs, pidx, pword, _, _ = words_column.local_pairs(model, blk, hyper["word_pyp"])
            own_bn = words_pyp.own_customers(pidx, st["z"], len(pairs), K)
            own0 = np.zeros_like(st["word_t"], dtype=np.int64)
            np.add.at(own0, pword, st["word_bt"])
            assert np.all((0 <= st["word_bt"]) & (st["word_bt"] <= own_bn))
            assert np.all((0 <= st["word_t"]) & (st["word_t"] <= own0))
            assert np.all((0 <= st["word_up"][:, 0]) & (st["word_up"][:, 0] <= st["word_t"].sum(axis=1)))
        hyper = run.step(new, it)
    assert moved > 20 and (bt < bn).any()
    for kind in ("a_values", "b_values"):
        assert all(hyper[kind][n] != v for n, v in start[kind].items()), (hyper[kind], start[kind])
    assert np.isfinite(model.loglik(new, model.derive(new), hyper))
    phi0 = run.trained(new)
    np.testing.assert_allclose(phi0.sum(axis=1), 1.0)
    rows = model.column_rows(blocks[0], hyper, phi0.T)
    full = model.column_rows(SegmentedBlock.from_segments([("d00", [list(range(9))])]), hyper, phi0.T)
    assert rows.shape == (blocks[0].n_tokens, K) and np.allclose(full.sum(axis=0), 1.0)


@pytest.mark.parametrize("change", ["two-parents", "corpus-middle"])
def test_what_the_engine_does_not_run_is_refused_in_one_line(change):
    from drivers.models.pdp_network import words_pyp
    from inference.errors import UsageError

    spec = dtm_spec("uniform")
    if change == "two-parents":         # phi[topic, column] over phi0[topic] and a corpus-level vector (a Dirichlet
        spec["nodes"]["phi"]["parents"].append({"node": "base", "index": ["corpus"]})    # root per topic runs: the
                                                                                         # bigram side's shape)
    else:                               # phi[topic, column] straight over a corpus-level vector
        spec["nodes"]["phi"]["parents"] = [{"node": "base", "index": ["corpus"]}]
        del spec["nodes"]["phi0"]
    # two parents: the several-parent word side's check (words_mix, session 26) names phi first
    with pytest.raises(UsageError, match="node 'phi': a word (side indexed by \\[topic, column\\]|vector with "
                                         "several parents on the Gibbs engine is a Pitman-Yor family indexed by "
                                         "\\[topic\\])") as info:
        words_pyp.word_side(parse_network(spec))
    assert "\n" not in str(info.value)
