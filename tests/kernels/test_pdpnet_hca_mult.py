"""hca.json under the multiplicity samplers (issue 28; :mod:`inference.pdpnet.cmgs_owned_words`): hdp-pyp-lda's
topic side as the hybrid (documents in multiplicity form, the shared vector's indicators owned) and pyp-lda's word
side in multiplicity form. Under exact the chain's frequencies of every (z, s, t) match the enumerated joint with
one partition and a wrong removal is rejected; on two partitions (the engine's hooks) the tables stay the recount,
t^p <= n^p, t <= n on both sides."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import gammaln

from drivers.models.pdp_network import words_pyp
from inference.pdpnet.cmgs_owned import RIGHT, WRONG_REMOVAL
from inference.pdpnet.cmgs_owned_words import run_hybrid_words
from inference.pdpnet.cmgs_run import run_cmgs
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_cmgs import SHIPPED
from tests.kernels.test_pdpnet_cmgs_owned import _tables
from tests.kernels.test_pdpnet_exact import TINY_HDP
from tests.kernels.test_pdpnet_sampler import _chi_square

A, B = 0.4, 1.5
TINY_HCA = dict(TINY_HDP, nodes=dict(TINY_HDP["nodes"], base={"index": ["corpus"], "over": "word", "uniform": True},
                                     phi={"index": ["topic"], "over": "word", "pyp": {"a": A, "b": B},
                                          "parents": [{"node": "base", "index": ["corpus"]}]}))


def _dirichlet_words(nwk, beta):
    """log of TINY_HDP's Dirichlet(beta) word side given the counts (taken out of its enumerated joint)."""
    V = nwk.shape[0]
    n_k = nwk.sum(axis=0)
    return float((gammaln(V * beta) - gammaln(V * beta + n_k)).sum() + (gammaln(beta + nwk) - gammaln(beta)).sum())


def _states(lay, words, V, K):
    """Every legal (z, s, t) of TINY_HCA with its log joint: TINY_HDP's enumerated (z, s) with its Dirichlet word
    side replaced by the Pitman-Yor one over the uniform, summed over nothing (every legal t its own state)."""
    beta = TINY_HDP["nodes"]["phi"]["dirichlet"]
    out = []
    for z, s, lp in enumerate_states(compile_network(parse_network(dict(TINY_HDP, sampler="exact")), lay, K)):
        nwk = np.zeros((V, K), np.int64)
        np.add.at(nwk, (words, np.array(z)), 1)
        occ = list(zip(*np.nonzero(nwk)))
        for ts in np.ndindex(*[int(nwk[c]) for c in occ]):
            twk = np.zeros_like(nwk)
            for c, t in zip(occ, ts):
                twk[c] = t + 1
            out.append((z, s + tuple(int(x) for x in twk.ravel()),
                        lp - _dirichlet_words(nwk, beta) + words_pyp.loglik(nwk, twk, A, B, 0.0)))
    return out


def _start(raw, docs, V, K, sampler, z=None):
    """The compiled topic side, CMGS's initial (z, s), its counts with the own tables, and the word side's arrays
    (one partition: own = global; one table per occupied word cell)."""
    lay = CorpusLayout.of(docs, V)
    net = compile_network(parse_network(dict(raw, sampler=sampler)), lay, K, word_side=False)
    z = np.random.default_rng(0).integers(0, K, len(lay.words)).astype(np.int64) if z is None else z
    s = np.zeros(int(net.eoff[-1]), np.int64)
    run_cmgs(net, lay.seg_ptr[lay.doc_ptr], z, s, rebuild_counts(net, z, s, False), net.a_values, net.b_values,
             np.zeros((V, K), np.int32), np.zeros(K, np.int64), 0.6, None, 0, True)
    cnt = rebuild_counts(net, z, s, False)
    shared = (net.kind == KIND_PYP) & (net.family == list(net.spec.order).index("mid" if "mid" in raw["nodes"]
                                                                                 else "corpus"))
    cnt["own"] = (shared, cnt["tc"].copy(), cnt["tp"].copy())
    nwk = np.zeros((V, K), np.int64)
    np.add.at(nwk, (lay.words, z), 1)
    twk = (nwk > 0).astype(np.int64)
    word = {"head": (lay.words.astype(np.int64), np.arange(V, dtype=np.int64), np.zeros(V, np.int64)),
            "tail": (nwk, twk, nwk.sum(axis=0)[None].copy(), twk.sum(axis=0)[None].copy(),
                     twk.sum(axis=1)[:, None].copy(), np.array([twk.sum()]), nwk.copy(), twk.copy(),
                     net.a_names.index("phi.a"), net.b_names.index("phi.b"),
                     float(raw["nodes"][raw["nodes"]["phi"]["parents"][0]["node"]].get("dirichlet", 0.0)))}
    return lay, net, z, s, cnt, word


def _cycle(net, z, s, cnt, word, seed, wrong=RIGHT):
    avals = np.asarray(net.a_values, np.float64)
    stack = word.setdefault("stack", StirlingStack(avals[[word["tail"][8]]]))
    run_hybrid_words(net, z, s, cnt, avals, np.asarray(net.b_values, np.float64), seed, _tables(avals),
                     word["head"], word["tail"], stack, wrong)


def _histogram(wrong, sweeps=20000):
    """The exact chain's visits (every 2nd cycle) of every legal (z, s, t) on two documents of one word (2 and 1
    tokens: its word cells reach 3 customers, where t/c and S^{c-1}_{t-1}/S^c_t differ), V = K = 2."""
    V = K = 2
    lay, net, z, s, cnt, word = _start(TINY_HCA, [[[0, 0]], [[0]]], V, K, "exact")
    states = _states(lay, lay.words, V, K)
    index = {(zz, sv): r for r, (zz, sv, _) in enumerate(states)}
    obs = np.zeros(len(states))
    for it in range(sweeps):
        _cycle(net, z, s, cnt, word, 5 + it, wrong)
        if it % 2 == 0:
            key = (tuple(int(x) for x in z), tuple(int(x) for x in s) + tuple(int(x) for x in word["tail"][1].ravel()))
            assert key in index, f"the chain visited a state the enumeration calls illegal: {key}"
            obs[index[key]] += 1
    return states, obs


def test_exact_hca_samples_the_enumerated_joint():
    """TINY_HDP's topic side (document DPs over a shared Pitman-Yor vector over a uniform root) with a Pitman-Yor
    word side over the uniform (58 legal (z, s, t)), 20,000 cycles, every 2nd kept: chi-square p > 1e-3 against the
    normalised joint (p 0.04; two documents of two distinct words, 30,000 cycles: p > 1e-3 too, where the wrong
    removal cannot show: no cell reaches 3 customers); the removal by t/c (wrong at a multiplicity cell) rejected
    with p < 1e-6 (1e-9)."""
    states, obs = _histogram(RIGHT)
    tv, pval = _chi_square(states, obs)
    assert pval > 1e-3, (len(states), tv, pval)
    states, obs = _histogram(WRONG_REMOVAL)
    assert _chi_square(states, obs)[1] < 1e-6


@pytest.mark.parametrize("sampler", ["cmgs", "exact"])
def test_counts_stay_the_recount_on_both_sides(sampler):
    """hca.json (its shipped spec), 12 documents, K = 4, 8 cycles, one partition: the topic side's counts equal a
    recount of (z, s), the shared cells' own (c, t) the global, 0 < t <= c at every Pitman-Yor cell with customers;
    the word side's totals the recount of (z, t), 1 <= t_wk <= n_wk where n_wk > 0, own = global; t and z move."""
    raw = json.loads((SHIPPED / "hca.json").read_text())
    rng = np.random.default_rng(3)
    docs = [[list(rng.integers(0, 9, rng.integers(2, 12)))] for _ in range(12)]
    V, K = 9, 4
    lay, net, z, s, cnt, word = _start(raw, docs, V, K, sampler)
    z0 = z.copy()
    shared = cnt["own"][0]
    cells = np.concatenate([np.arange(net.off[x], net.off[x + 1]) for x in np.flatnonzero(shared)])
    pyp = np.concatenate([np.arange(net.off[x], net.off[x + 1]) for x in np.flatnonzero(net.kind == KIND_PYP)])
    nloc, tloc, Nc, Tc, troot, Troot, own_n, own_t = word["tail"][:8]
    for it in range(8):
        _cycle(net, z, s, cnt, word, 40 + it)
        recount = rebuild_counts(net, z, s, False)
        for key in ("n", "tc", "tp", "Nn", "TC", "TP", "Se"):
            np.testing.assert_array_equal(cnt[key], recount[key], err_msg=key)
        np.testing.assert_array_equal(cnt["own"][1][cells], cnt["tc"][cells])
        np.testing.assert_array_equal(cnt["own"][2][cells], cnt["tp"][cells])
        c, t = cnt["n"][pyp] + cnt["tc"][pyp], cnt["tp"][pyp]
        assert np.all(t <= c) and np.all((c == 0) | (t > 0))
        nwk = np.zeros((V, K), np.int64)
        np.add.at(nwk, (lay.words, z), 1)
        np.testing.assert_array_equal(nloc, nwk)
        np.testing.assert_array_equal(own_n, nwk)
        np.testing.assert_array_equal(own_t, tloc)
        np.testing.assert_array_equal(Nc[0], nwk.sum(axis=0))
        np.testing.assert_array_equal(Tc[0], tloc.sum(axis=0))
        np.testing.assert_array_equal(troot[:, 0], tloc.sum(axis=1))
        assert Troot[0] == tloc.sum() and np.all(tloc <= nwk) and np.all((nwk == 0) | (tloc >= 1))
    assert (z != z0).any() and (tloc > 1).any() and (cnt["tp"][cells] < cnt["tc"][cells]).any()
