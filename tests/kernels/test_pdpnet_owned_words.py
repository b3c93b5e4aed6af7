"""A shared Pitman-Yor topic vector beside a Pitman-Yor word side (issue 28, hca's structure;
:mod:`inference.pdpnet.owned_words`): with one partition the sweep is the engine's pyp-lda sweep
(:func:`inference.pdpnet.word_bigram.bigram_word_sweep`, the network sampler) draw for draw; over two "partitions"
(the other's counts of the corpus vector fixed between synchronisations) both sides' own indicators stay within
their own customers."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import words_pyp
from inference.pdpnet import kernels
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.owned_words import owned_word_sweep
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.sweep import ratio_tables
from inference.pdpnet.word_bigram import bigram_word_sweep
from tests.kernels.test_pdpnet_owned import HDP_PYP, K, V, _corpus, _network

HCA = dict(HDP_PYP, name="hca-tiny", nodes=dict(
    HDP_PYP["nodes"], words={"index": ["corpus"], "over": "word", "dirichlet": 0.2},
    phi={"index": ["topic"], "over": "word", "pyp": {"a": 0.4, "b": 2.0},
         "parents": [{"node": "words", "index": ["corpus"]}]}))


def _start(docs, seed):
    """The network state after the initialising sweep, and the word side's arrays (one indicator per occupied
    cell) as the driver builds them (:func:`words_pyp.local_arrays`)."""
    spec = parse_network(HCA)
    net = compile_network(spec, CorpusLayout.of(docs, V), K, word_side=False)
    z = np.random.default_rng(seed).integers(0, K, len(net.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    cnt = rebuild_counts(net, np.zeros(0, np.int64), s, word_side=False)
    nwk = np.zeros((V, K), np.int32)
    _network(net, z, s, cnt, nwk, np.zeros(K, np.int64), 1, init=True)
    vocab, uidx = np.unique(net.words, return_inverse=True)
    own_n = words_pyp.own_customers(uidx, z, len(vocab), K)
    word_t = words_pyp.initial_tables(own_n)
    twk = np.zeros((V, K), np.int32)
    twk[vocab] = word_t
    der = dict(words_pyp.derived(twk), nk=nwk.sum(axis=0).astype(np.int64))
    loc = words_pyp.local_arrays(vocab.astype(np.int64), uidx.astype(np.int64), own_n, word_t, nwk, twk, der)
    words = [loc[k] for k in ("uidx", "pword", "pctx", "nloc", "tloc", "Nc", "Tc", "troot", "Troot", "own_n")]
    side = (net.a_names.index("phi.a"), net.b_names.index("phi.b"), 0.2)
    return net, z, s, cnt, words + [word_t], side


def _sweep(net, z, s, cnt, words, side, seed, own=None):
    """One cycle of ``bigram_word_sweep`` (``own`` None) or of ``owned_word_sweep`` with ``own`` = (own_c,
    own_t) at the corpus vector."""
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    shared = (net.kind == KIND_PYP) & (net.family == list(net.spec.order).index("corpus"))
    st = StirlingStack(net.a_values)
    pos, reseed = 0, True
    args = (net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
            net.gamma_sum, net.a_values, net.b_values)
    state = (cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"])
    while pos >= 0:
        st.ensure(max(cnt["mx"][0], words[3].max()) + 3, max(cnt["mx"][1], words[4].max()) + 3)
        if own is None:
            pos = bigram_word_sweep(pos, reseed, seed, *words[:3], z, net.topic_inst, anc_ptr, anc, *args, st.L3,
                                    *state, *words[3:], *side)
        else:
            pos = owned_word_sweep(pos, reseed, seed, *words[:3], z, net.topic_inst, anc_ptr, anc, *args,
                                   *ratio_tables(st.L3), open_exp_table(st.L3), *state, shared, *own, *words[3:],
                                   *side)
        reseed = False
    return shared


def _copy(x):
    if isinstance(x, dict):
        return {k: v.copy() for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x.copy() if isinstance(x, np.ndarray) else x


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_partition_is_the_pyp_lda_sweep_draw_for_draw(seed):
    a = _start(_corpus(seed), seed)
    b = (a[0],) + tuple(_copy(x) for x in a[1:])
    for it in range(4):
        _sweep(*a, seed=10 + it)
        _sweep(*b, seed=10 + it, own=(b[3]["tc"].copy(), b[3]["tp"].copy()))
        for x, y in zip(a[1:3] + tuple(a[4]), b[1:3] + tuple(b[4])):
            np.testing.assert_array_equal(x, y)
        for name in ("n", "tc", "tp", "Se"):
            np.testing.assert_array_equal(a[3][name], b[3][name])
    assert a[2].sum() > 0 and (a[4][4] < a[4][3]).any()        # corpus tables; word cells with fewer tables


def test_two_partitions_own_their_indicators_on_both_sides():
    """Two halves of a corpus, each swept with the other's (c, t) of the corpus vector added (fixed; the word
    cells each half's own): every own t within its own customers on both sides, the sums t <= c."""
    docs = _corpus(7, docs=16)
    parts = [_start(docs[p::2], p) for p in range(2)]
    net0, net1 = parts[0][0], parts[1][0]
    j0 = [int(np.flatnonzero(net.family == list(net.spec.order).index("corpus"))[0]) for net in (net0, net1)]
    for it in range(3):
        owns = [(p[3]["tc"].copy(), p[3]["tp"].copy()) for p in parts]
        cells = [slice(net.off[j], net.off[j + 1]) for net, j in zip((net0, net1), j0)]
        for me in range(2):
            other = 1 - me
            net, z, s, cnt, words, side = parts[me]
            cnt["tc"][cells[me]] += owns[other][0][cells[other]]
            cnt["tp"][cells[me]] += owns[other][1][cells[other]]
            cnt["TC"][j0[me]] = cnt["tc"][cells[me]].sum()
            cnt["TP"][j0[me]] = cnt["tp"][cells[me]].sum()
            cnt["Se"][net.par_ptr[j0[me]]] = cnt["TP"][j0[me]]
            cnt["mx"][0] = max(cnt["mx"][0], cnt["tc"].max())
            cnt["mx"][1] = max(cnt["mx"][1], cnt["tp"].max())
            own_c, own_t = owns[me][0].copy(), owns[me][1].copy()
            _sweep(net, z, s, cnt, words, side, 50 + 10 * it + me, own=(own_c, own_t))
            assert np.all(own_t[cells[me]] <= own_c[cells[me]]) and np.all(cnt["tp"] <= cnt["tc"] + cnt["n"])
            assert np.all(words[10] <= words[9]) and np.all(words[10] >= 0) and np.all(words[4] <= words[3])
            parts[me] = (net, z, s, rebuild_counts(net, z, s, word_side=False), words, side)
    assert all(p[2].sum() > 0 for p in parts)
