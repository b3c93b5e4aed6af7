"""Tokens drawn from a shared Pitman-Yor topic vector under the multiplicity samplers (issue 28;
:mod:`inference.pdpnet.cmgs_shared_tokens`): the shared vector's cells in multiplicity form, each partition's own
tables. Under exact the chain's frequencies of every (z, s) match the enumerated joint (E12) with one partition and
a wrong removal (t/c) is rejected; under cmgs and exact the counts stay the recount, own = global, 0 < t <= c."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet.cmgs_shared_tokens import run_shared_tokens
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_mult import RIGHT, WRONG_REMOVAL
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_sampler import _chi_square

TOKENS_AT_PYP = {"nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.7},
                           "corpus": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.5, "b": 1.0},
                                      "parents": [{"node": "top", "index": ["corpus"]}]},
                           "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.6}},
                 "topic": {"node": "corpus", "index": ["corpus"]}, "word": {"node": "phi", "index": ["topic"]}}


def _start(docs, V, K, sampler):
    lay = CorpusLayout.of(docs, V)
    net = compile_network(parse_network(dict(TOKENS_AT_PYP, sampler=sampler)), lay, K, word_side=False)
    z = np.arange(len(lay.words), dtype=np.int64) % K
    s = np.zeros(int(net.eoff[-1]), np.int64)
    xs = int(np.flatnonzero(net.kind == KIND_PYP)[0])
    occupied = np.bincount(z, minlength=K) > 0
    s[net.eoff[net.par_ptr[xs]]:net.eoff[net.par_ptr[xs]] + K] = occupied      # one table per occupied cell
    cnt = rebuild_counts(net, z, s, False)
    shared = net.kind == KIND_PYP
    cnt["own"] = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    nwk, nk = np.zeros((V, K), np.int64), np.zeros(K, np.int64)
    np.add.at(nwk, (lay.words, z), 1)
    np.add.at(nk, z, 1)
    return lay, net, z, s, cnt, nwk, nk, StirlingStack(np.asarray(net.a_values, np.float64))


def _histogram(wrong, sweeps=20000):
    """The exact chain's visits (every 2nd cycle) of every legal (z, s): four tokens of two words, K = 2."""
    V = K = 2
    lay, net, z, s, cnt, nwk, nk, stack = _start([[[0, 0, 1]], [[1]]], V, K, "exact")
    states = enumerate_states(compile_network(parse_network(dict(TOKENS_AT_PYP, sampler="exact")), lay, K))
    index = {(zz, sv): r for r, (zz, sv, _) in enumerate(states)}
    obs = np.zeros(len(states))
    for it in range(sweeps):
        run_shared_tokens(net, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.6, None, 3 + it, stack, wrong)
        if it % 2 == 0:
            key = (tuple(int(x) for x in z), tuple(int(x) for x in s))
            assert key in index, f"the chain visited a state the enumeration calls illegal: {key}"
            obs[index[key]] += 1
    return states, obs


def test_exact_chain_samples_the_enumerated_joint():
    """Tokens at a corpus-level Pitman-Yor vector over a Dirichlet root (a = 0.5), four tokens, K = 2, 20,000 cycles,
    every 2nd kept: chi-square p > 1e-3 against the normalised (E12); the removal by t/c rejected (p < 1e-6)."""
    states, obs = _histogram(RIGHT)
    tv, pval = _chi_square(states, obs)
    assert pval > 1e-3, (len(states), tv, pval)
    states, obs = _histogram(WRONG_REMOVAL)
    assert _chi_square(states, obs)[1] < 1e-6


@pytest.mark.parametrize("sampler", ["cmgs", "exact"])
def test_counts_stay_the_recount(sampler):
    """30 documents, K = 4, 8 cycles, one partition: the counts equal a recount of (z, s), the own tables the global,
    0 < t <= c where the shared vector has customers, the word table the recount of z; t and z move."""
    rng = np.random.default_rng(2)
    docs = [[list(rng.integers(0, 7, rng.integers(2, 9)))] for _ in range(30)]
    V, K = 7, 4
    lay, net, z, s, cnt, nwk, nk, stack = _start(docs, V, K, sampler)
    z0 = z.copy()
    xs = int(np.flatnonzero(net.kind == KIND_PYP)[0])
    cells = np.arange(net.off[xs], net.off[xs + 1])
    for it in range(8):
        run_shared_tokens(net, z, s, cnt, net.a_values, net.b_values, nwk, nk, 0.6, None, 20 + it, stack)
        recount = rebuild_counts(net, z, s, False)
        for key in ("n", "tc", "tp", "Nn", "TC", "TP", "Se"):
            np.testing.assert_array_equal(cnt[key], recount[key], err_msg=key)
        np.testing.assert_array_equal(cnt["own"][2][cells], cnt["tp"][cells])
        c, t = cnt["n"][cells] + cnt["tc"][cells], cnt["tp"][cells]
        assert np.all(t <= c) and np.all((c == 0) | (t > 0))
        m = np.zeros((V, K), np.int64)
        np.add.at(m, (lay.words, z), 1)
        np.testing.assert_array_equal(nwk, m)
    assert (z != z0).any() and (cnt["tp"][cells] > 1).any()
