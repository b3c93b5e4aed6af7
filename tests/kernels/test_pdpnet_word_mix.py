"""A Pitman-Yor word vector with several parents mixed by rho on the Gibbs engine (issue 28): phi[topic] over a
per-topic Dirichlet root and a corpus-level Dirichlet root (or the uniform). One partition of the engine's sweep
(:func:`inference.pdpnet.word_mix.mix_word_sweep`) is the in-process network sampler's draw for draw (z, every
cell's customers and tables per edge); one engine partition through the model's hooks visits the network's joint
enumerated; two partitions keep the tables legal and move a and b."""
from __future__ import annotations

import json

import numpy as np
import pytest

from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_mix import CORPUS_ROOT, TOPIC_ROOT, UNIFORM, mix_word_sweep

V, K = 6, 3


def mix_spec(background: str = "dirichlet", weights: str = "dirichlet", a=0.4, b=1.5, sample=False) -> dict:
    """theta[document] Dirichlet; phi[topic] PYP over base[topic] (a Dirichlet root per topic, gamma 0.7) and bg
    (a corpus-level Dirichlet root or the uniform, gamma 1.3), or fixed weights 1/2."""
    def par(x):
        return {"value": x, "sample": True} if sample else x
    refs = [{"node": "base", "index": ["topic"], "gamma": 0.7}, {"node": "bg", "index": ["corpus"], "gamma": 1.3}]
    phi = {"index": ["topic"], "over": "word", "pyp": {"a": par(a), "b": par(b)}, "parents": refs}
    if weights == "uniform":
        phi["weights"] = "uniform"
        refs = [{k: v for k, v in r.items() if k != "gamma"} for r in refs]
        phi["parents"] = refs
    return {"name": "mix", "nodes": {
        "theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
        "bg": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if background == "dirichlet"
                                                        else {"uniform": True})},
        "base": {"index": ["topic"], "over": "word", "dirichlet": 0.2},
        "phi": phi}, "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def state_of(net, sm, Vn=V) -> list:
    """The kernel's word arrays from the in-process sampler's counts: n (V, K), s (P, V, K), N_k, T_k, S_ke,
    the corpus parent's customers per edge (P, V) and their totals."""
    fam = net.spec.order.index("phi")
    js = np.flatnonzero(net.family == fam)
    P = int(net.par_ptr[js[0] + 1] - net.par_ptr[js[0]])
    n, s = np.zeros((Vn, K), np.int64), np.zeros((P, Vn, K), np.int64)
    for j in js:
        k = int(net.key[j])
        n[:, k] = sm.n[net.off[j]:net.off[j + 1]]
        for e in range(P):
            x = net.par_ptr[j] + e
            s[e, :, k] = sm.s[net.eoff[x]:net.eoff[x + 1]]
    Sk = s.sum(axis=1)
    return [n, s, n.sum(axis=0), Sk.sum(axis=0), Sk, s.sum(axis=2), s.sum(axis=(1, 2))]


def run_against_the_network_sampler(background="dirichlet", weights="dirichlet", sweeps=4, gammas=None):
    rng = np.random.default_rng(11)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    spec = parse_network(mix_spec(background, weights))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=4)
    topic = compile_network(spec, layout, K, word_side=False)
    z = sm.z.copy()
    cnt = rebuild_counts(topic, z, np.zeros(int(topic.eoff[-1]), np.int64), word_side=False)
    anc_ptr, anc = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    n, s, Nk, Tk, Sk, rc, RC = state_of(net, sm)
    own_n, own_s = n.copy(), s.copy()
    kinds = np.array([TOPIC_ROOT, CORPUS_ROOT if background == "dirichlet" else UNIFORM], np.int64)
    alphas = np.array([0.2, 0.4 if background == "dirichlet" else 0.0])
    fixed = weights == "uniform"
    gam = np.array([0.5, 0.5] if fixed else [0.7, 1.3]) if gammas is None else np.asarray(gammas, np.float64)
    gsum = -1.0 if fixed else float(gam.sum())
    stack = StirlingStack(topic.a_values)
    moved = 0
    for _ in range(sweeps):
        seed = sm._seed(sm.iteration + 1, 1)
        before = z.copy()
        cnt["mx"][:] = n.max(), s.sum(axis=0).max()
        pos, reseed = 0, True
        while pos >= 0:
            stack.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = mix_word_sweep(
                pos, reseed, seed, topic.words.astype(np.int64), z, topic.topic_inst, anc_ptr, anc, topic.kind,
                topic.dim, topic.off, topic.alpha, topic.a_of, topic.b_of, topic.par_ptr, topic.par_node,
                topic.par_gamma, topic.gamma_sum, topic.a_values, topic.b_values, stack.L3, cnt["n"], cnt["tc"],
                cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], np.zeros(0, np.int64), cnt["Se"], topic.eoff, cnt["mx"],
                n, s, Nk, Tk, Sk, rc, RC, own_n, own_s, topic.a_names.index("phi.a"), topic.b_names.index("phi.b"),
                kinds, alphas, gam, gsum, V)
            reseed = False
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for got, want in zip([n, s, Nk, Tk, Sk, rc, RC], state_of(net, sm)):
            np.testing.assert_array_equal(got, want)
        assert np.all(s.sum(axis=0) <= n) and np.all((s.sum(axis=0) > 0) == (n > 0))
    assert moved > 10 and (s.sum(axis=0) < n).any() and (s[1] > 0).any() and (s[0] > 0).any()


@pytest.mark.parametrize("background,weights", [("dirichlet", "dirichlet"), ("uniform", "dirichlet"),
                                                ("dirichlet", "uniform")])
def test_one_partition_is_the_network_sampler_draw_for_draw(background, weights):
    run_against_the_network_sampler(background, weights)


def test_a_wrong_rho_weight_fails_it():
    """The same comparison with the edges' gammas swapped differs (the test can fail)."""
    with pytest.raises(AssertionError):
        run_against_the_network_sampler(gammas=[1.3, 0.7])
