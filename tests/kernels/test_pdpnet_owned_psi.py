"""A shared Pitman-Yor topic vector (hca's: documents DP over a corpus-level PYP over a root) beside the two word
sides of session 23 (issue 28): tlm-h2b's bigram side over a Pitman-Yor psi[topic]
(:func:`inference.pdpnet.owned_chain.owned_chain_sweep` with the previous word as the value: one partition = the
in-process network sampler draw for draw; two partitions through the engine's hooks legal at every level) and the
[topic, column:NAME] side over a Dirichlet root per topic (:func:`inference.pdpnet.owned_words.owned_word_sweep`
with the document's value as the context: one engine partition visits the network's enumerated joint; two
partitions legal)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models.pdp_network import words_bigram_psi, words_chain, words_pyp
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels import test_pdpnet_word_bigram_psi as psi
from tests.kernels.test_pdpnet_owned_chain import TOPIC_SIDE, owned_cycle, two_partitions

V, K = psi.V, psi.K


def with_topic_side(words: dict) -> dict:
    """``words``'s word side under hca's topic side (theta[document] DP over the corpus PYP over a Dirichlet)."""
    return dict(words, nodes=dict(words["nodes"], **json.loads(json.dumps(TOPIC_SIDE))))


@pytest.mark.parametrize("root,a", [("dirichlet", 0.0), ("pyp", 0.3)])
def test_beside_the_bigram_psi_side_one_partition_is_the_network_sampler_draw_for_draw(root, a):
    """phi[topic, previous_word] over psi[topic] over ``root`` beside the shared corpus vector: every cycle's z, both
    sides' counts and the own ones equal the sampler's (the value g of a token's restaurant its previous word)."""
    rng = np.random.default_rng(7)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    spec = parse_network(with_topic_side(psi.h2b_spec(root, a)))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=3)
    topic = compile_network(spec, layout, K, word_side=False)
    words = topic.words.astype(np.int64)
    prev = np.concatenate([[V], words[:-1]])
    prev[np.cumsum([0] + [len(d[0]) for d in docs])[:-1]] = V
    G, L = V + 1, 1 if root == "pyp" else 0
    z = sm.z.copy()
    s = sm.s[:topic.eoff[-1]].copy()
    cnt = rebuild_counts(topic, z, s, word_side=False)
    shared = (topic.kind == KIND_PYP) & (topic.family == list(spec.order).index("corpus"))
    own = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    bn, bt, BN, BT, nloc, tloc, cup, tup = psi._state(net, sm, prev, L, G)
    mine = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    an, bname = topic.a_names.index, topic.b_names.index
    pl = np.array([an("psi.a")] + ([an("nu.a")] if L else []), np.int64)
    bl = np.array([bname("psi.b")] + ([bname("nu.b")] if L else []), np.int64)
    gl = np.ones(L + 1)
    wargs = (nloc, tloc, nloc.sum(axis=0), tloc.sum(axis=0), cup, tup, cup.sum(axis=0), tup.sum(axis=0), *mine[2:],
             pl, bl, gl, gl.copy(), 0.4 if root == "dirichlet" else 0.0, V)
    bottom = ((bn, bt, BN, BT, mine[0], mine[1]), (an("phi.a"), bname("phi.b"), 1.0))
    cells = shared.repeat(np.diff(topic.off))
    moved = 0
    for _ in range(4):
        before = z.copy()
        cnt["mx"][:] = (max(cnt["mx"][0], bn.max(), nloc.max(), cup.max(initial=0)),
                        max(cnt["mx"][1], bt.max(), tloc.max(), tup.max(initial=0)))
        owned_cycle(topic, z, s, cnt, own, wargs, prev * V + words, np.tile(np.arange(V), G),
                    np.repeat(np.arange(G), V), bottom, sm._seed(sm.iteration + 1, 1))
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for name in ("n", "tc", "tp"):
            np.testing.assert_array_equal(cnt[name], getattr(sm, name)[:topic.off[-1]])
        np.testing.assert_array_equal(s, sm.s[:len(s)])
        np.testing.assert_array_equal(own[1][cells], cnt["tc"][cells])
        np.testing.assert_array_equal(own[2][cells], cnt["tp"][cells])
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], psi._state(net, sm, prev, L, G)):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(mine, [bn, bt, nloc, tloc, cup, tup]):
            np.testing.assert_array_equal(got, want)
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any() and (cnt["tp"][cells] < cnt["tc"][cells]).any()


def test_beside_the_bigram_psi_side_two_partitions_through_the_engine_hooks(tmp_path):
    """hca's topic side beside tlm-h2b's side over a Dirichlet root (every a and b of the word side sampled; a
    corpus-level PYP above psi as well would be 9 parameters, the engine's limit is 8) through the engine's hooks (no Spark): two partitions, 6 iterations; the bigram cells' customers are the
    tokens, t <= c at every level of both sides, every partition's own within its own customers, the word side's
    b move."""
    from drivers.models.pdp_network.model import PdpNetwork

    V9 = 9
    rng = np.random.default_rng(5)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V9, rng.integers(2, 12)))]) for i in range(16)]
    spec = with_topic_side(psi.h2b_spec("dirichlet", 0.2))
    for node in ("phi", "psi"):
        law = "pyp" if "pyp" in spec["nodes"][node] else "dp"
        spec["nodes"][node][law] = {k: {"value": v, "sample": True} for k, v in spec["nodes"][node][law].items()}
    (tmp_path / "hca-h2b.json").write_text(json.dumps(spec))
    model = PdpNetwork(K, V9)
    hyper = model.initial_hyper(network=str(tmp_path / "hca-h2b.json"))
    assert words_bigram_psi.is_psi(hyper["word_pyp"]) and hyper["global_families"] == ["tbase", "corpus"]
    start = {n: v for n, v in hyper["b_values"].items() if n.split(".")[0] in ("phi", "psi")}

    def check(new, blocks, states):
        der = model.derive(new)
        n, t = der["bigram_n"], der["bigram_t"]
        assert np.all(t <= n) and np.all(t >= 1) and int(n.sum()) == sum(b.n_tokens for b in blocks)
        assert np.all(new[words_pyp.TABLE] <= der["bigram_troot"]) and words_chain.TABLE not in new
        c, tp = new["network_tc"][1], new["network_tp"][1]      # (rows: tbase, corpus)
        assert np.all(tp <= c) and c.sum() >= 16 and np.array_equal(new["network_tc"][0], tp)
        for blk, st in zip(blocks, states):
            pairs, uidx, pword, vocab = words_bigram_psi.pair_words(model, blk)
            own_bn = words_pyp.own_customers(uidx, st["z"], len(pairs), K)
            assert np.all((0 <= st["word_bt"]) & (st["word_bt"] <= own_bn))
            assert np.all((0 <= st["word_t"]) & (st["word_t"] <= words_bigram_psi._own_psi(pword, st["word_bt"],
                                                                                             len(vocab))))
        assert np.isfinite(model.loglik(new, der, hyper))
        return (t < n).any() and (tp < c).any()
    hyper, new = two_partitions(model, hyper, docs, 6, check)
    assert all(hyper["b_values"][n] != v for n, v in start.items()), (hyper["b_values"], start)
    np.testing.assert_allclose(model.sample_topic_word(new, model.derive(new), hyper).sum(axis=1), 1.0)
