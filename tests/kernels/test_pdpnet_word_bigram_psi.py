"""The bigram side with psi[topic] a Pitman-Yor (or DP) vector over a corpus-level root (issue 28; Wallach's
hierarchical prior 2b, Table 3.3: phi_{w't} ~ Dir(beta m_t), m_t ~ Dir(beta1 m), m ~ Dir(beta0 u), as a network):
one partition of the engine's sweep (:func:`inference.pdpnet.word_column.column_word_sweep` with the restaurant's
value g the previous word, its pairs (w', w)) is the in-process network sampler's, draw for draw, over a Dirichlet
root, the uniform and a corpus-level PYP (a chain above psi). The same kernel with one value (G = 1) is a chain of
word vectors with a level per topic, phi[topic] over phi1[topic] over a root or corpus-level chain: draw for draw
likewise."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_column import column_word_sweep

V, K = 6, 3


def h2b_spec(root: str, a: float = 0.0) -> dict:
    """theta[document] Dirichlet; phi[topic, previous_word] DP (a = 0) or PYP over psi[topic] DP over ``root``: a
    Dirichlet (h2b), the uniform, or a corpus-level PYP over the uniform."""
    bottom = {"pyp": {"a": a, "b": 1.5}} if a > 0 else {"dp": {"b": 1.5}}
    nodes = {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
             "m": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if root == "dirichlet"
                                                            else {"uniform": True})},
             "psi": {"index": ["topic"], "over": "word", "dp": {"b": 2.0},
                     "parents": [{"node": "nu" if root == "pyp" else "m", "index": ["corpus"]}]},
             "phi": {"index": ["topic", "previous_word"], "over": "word", **bottom,
                     "parents": [{"node": "psi", "index": ["topic"]}]}}
    if root == "pyp":
        nodes["nu"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.2, "b": 3.0},
                       "parents": [{"node": "m", "index": ["corpus"]}]}
    return {"name": "tlm-h2b", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic", "previous_word"]}}


def topic_chain_spec(root: str) -> dict:
    """theta[document] Dirichlet; phi[topic] PYP over phi1[topic] PYP over ``root`` (a Dirichlet, or a corpus-level
    PYP over the uniform): a chain of word vectors with a level per topic."""
    nodes = {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
             "m": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if root == "dirichlet"
                                                            else {"uniform": True})},
             "psi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.3, "b": 2.0},
                     "parents": [{"node": "nu" if root == "pyp" else "m", "index": ["corpus"]}]},
             "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.4, "b": 1.5},
                     "parents": [{"node": "psi", "index": ["topic"]}]}}
    if root == "pyp":
        nodes["nu"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.2, "b": 3.0},
                       "parents": [{"node": "m", "index": ["corpus"]}]}
    return {"name": "topic-chain", "nodes": nodes, "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic"]}}


def _vec(net, name, key):
    js = np.flatnonzero(net.family == net.spec.order.index(name))
    return int(js[net.key[js] == key][0])


def _state(net, sm, prev, L, G=V + 1):
    """The kernel's arrays (pairs (g, w) for every g in 0..G-1, w in 0..V-1; g the token's ``prev``) from the
    in-process sampler's counts."""
    bn, bt = np.zeros((G * V, K), np.int64), np.zeros((G * V, K), np.int64)
    BN, BT = np.zeros((G, K), np.int64), np.zeros((G, K), np.int64)
    for i in range(len(net.words)):
        for k in range(K):
            j, g = int(net.word_inst[i, k]), int(prev[i])
            bn[g * V:(g + 1) * V, k] = sm.n[net.off[j]:net.off[j + 1]]
            bt[g * V:(g + 1) * V, k] = sm.tp[net.off[j]:net.off[j + 1]]
            BN[g, k], BT[g, k] = sm.Nn[j], sm.TP[j]
    psi = [_vec(net, "psi", k) for k in range(K)]
    nloc = np.stack([sm.tc[net.off[j]:net.off[j + 1]] for j in psi], axis=1)
    tloc = np.stack([sm.tp[net.off[j]:net.off[j + 1]] for j in psi], axis=1)
    cup, tup = np.zeros((V, L), np.int64), np.zeros((V, L), np.int64)
    if L:
        j = _vec(net, "nu", 0)
        cup[:, 0], tup[:, 0] = sm.tc[net.off[j]:net.off[j + 1]], sm.tp[net.off[j]:net.off[j + 1]]
    return [bn, bt, BN, BT, nloc, tloc, cup, tup]


@pytest.mark.parametrize("root,a", [("dirichlet", 0.0), ("uniform", 0.3), ("pyp", 0.0)])
def test_one_partition_is_the_network_sampler_draw_for_draw(root, a):
    run_against_the_network_sampler(h2b_spec(root, a), root, bigram=True)


@pytest.mark.parametrize("root", ["dirichlet", "pyp"])
def test_a_level_per_topic_is_the_column_kernel_with_one_value(root):
    """phi[topic] over phi1[topic] over a root or corpus chain: the same kernel, every token's value 0 (G = 1)."""
    run_against_the_network_sampler(topic_chain_spec(root), root, bigram=False)


def run_against_the_network_sampler(spec_json: dict, root: str, bigram: bool) -> None:
    rng = np.random.default_rng(11)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    spec = parse_network(spec_json)
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=4)
    topic = compile_network(spec, layout, K, word_side=False)
    words = topic.words
    starts = np.cumsum([0] + [len(d[0]) for d in docs])[:-1]
    prev = np.concatenate([[V], words[:-1]])
    prev[starts] = V
    G = V + 1
    if not bigram:
        prev[:], G = 0, 1
    L = 1 if root == "pyp" else 0
    z = sm.z.copy()
    cnt = rebuild_counts(topic, z, np.zeros(int(topic.eoff[-1]), np.int64), word_side=False)
    anc_ptr, anc = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    bn, bt, BN, BT, nloc, tloc, cup, tup = _state(net, sm, prev, L, G)
    own = [bn.copy(), bt.copy(), nloc.copy(), tloc.copy(), cup.copy(), tup.copy()]
    pidx = prev * V + words
    pword, pval = np.tile(np.arange(V), G), np.repeat(np.arange(G), V)
    an, bname = topic.a_names.index, topic.b_names.index
    pl = np.array([an("psi.a")] + ([an("nu.a")] if L else []), np.int64)
    bl = np.array([bname("psi.b")] + ([bname("nu.b")] if L else []), np.int64)
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
                an("phi.a"), bname("phi.b"), 1.0, pl, bl, gl, gl.copy(), beta0, V)
            reseed = False
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for got, want in zip([bn, bt, BN, BT, nloc, tloc, cup, tup], _state(net, sm, prev, L, G)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(Tk, tloc.sum(axis=0))
    assert moved > 10 and (bt < bn).any() and (tloc < nloc).any()
