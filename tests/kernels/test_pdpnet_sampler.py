"""The network sampler (issue 28, 2) against the corrected joint (E12) computed directly, exact enumeration, the
collapsed LDA kernel and the hand-written STM kernel."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from drivers.models.lda_gibbs.model import lda_sweep
from drivers.models.stm import stm_table_weights, stm_topic_weights
from inference.gibbs.pdp import stirling_table
from inference.pdpnet import kernels, sweep
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import NO_ENGINE, NetworkSampler
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import counts_of, enumerate_states, reference_log_joint

TINY_ADATM = {   # a multi-parent node (rho integrated out) and a PYP word side: 5 vectors
    "nodes": {
        "doc": {"index": ["document"], "over": "topic", "dirichlet": 0.7},
        "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                "parents": [{"node": "seg", "index": ["previous_segment"], "gamma": 0.8},
                            {"node": "doc", "index": ["document"], "gamma": 1.3}]},
        "base": {"index": ["corpus"], "over": "word", "dirichlet": 0.9},
        "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.2, "b": 0.9},
                "parents": [{"node": "base", "index": ["corpus"]}]}},
    "topic": {"node": "seg", "index": ["segment"]},
    "word": {"node": "phi", "index": ["topic"]}}

TINY_HDP = {     # a DP over a corpus-level root, a PYP word side over a fixed uniform base, K = 3
    "nodes": {
        "top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
        "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.2},
                  "parents": [{"node": "top", "index": ["corpus"]}]},
        "u": {"index": ["corpus"], "over": "word", "uniform": True},
        "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.4, "b": 0.6},
                "parents": [{"node": "u", "index": ["corpus"]}]}},
    "topic": {"node": "theta", "index": ["document"]},
    "word": {"node": "phi", "index": ["topic"]}}


def _net(spec, docs, V, K):
    return compile_network(parse_network(spec), CorpusLayout.of(docs, V), K)


def _paths(sm, j, v, Z):
    """Every increment path from cell (j, v): list of (weight from the kernel's terms, [(node, edge or -1)])."""
    net = sm.net
    terms = np.zeros(8)
    kernels.node_terms(j, v, Z, terms, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr,
                       net.par_node, net.par_gamma, net.gamma_sum, sm.avals, sm.bvals, sm.stirling.L3, sm.n, sm.tc,
                       sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
    if net.kind[j] != KIND_PYP:
        return [(terms[0], [(j, -1)])]
    out = [(terms[0], [(j, -1)])] if terms[0] > 0 else []
    for m, e in enumerate(range(net.par_ptr[j], net.par_ptr[j + 1])):
        local = terms[1 + m] / Z[net.par_node[e]]
        for w, rest in _paths(sm, net.par_node[e], v, Z):
            out.append((local * w, [(j, e)] + rest))
    return out


def _apply(net, s, path, v):
    s = list(s)
    for _, e in path:
        if e >= 0:
            s[net.eoff[e] + v] += 1
    return s


def _remove_token(sm, i):
    """Take token i out with the kernel's decrement; None when the rest is illegal (then put back)."""
    net = sm.net
    J = net.num_nodes
    pn, pe = np.empty(J + 1, np.int64), np.empty(J + 1, np.int64)
    args = (net.kind, net.off, net.par_ptr, net.par_node, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.s, sm.Se,
            net.eoff, sm.mx)
    k0 = sm.z[i]
    da, ia = kernels.remove_path(net.topic_inst[i], k0, True, pn, pe, *args)
    qn, qe = np.empty(J + 1, np.int64), np.empty(J + 1, np.int64)
    db, ib = kernels.remove_path(net.word_inst[i, k0], net.words[i], True, qn, qe, *args)
    return not (ia or ib)


@pytest.mark.parametrize("spec,docs,V,K", [(TINY_ADATM, [[[0, 1], [1, 0, 1]], [[2], [0]]], 3, 2),
                                           (TINY_HDP, [[[0, 1, 1]], [[2, 0]]], 3, 3)])
def test_increment_terms_are_ratios_of_the_corrected_joint(spec, docs, V, K):
    """For every token of several states, every topic k and every increment path on both sides: the product of
    the kernel's terms equals p(after) / p(before) of the table-indicator joint computed directly from (z, s);
    and the paths' total is the Z^+ the recursion gives (E14/E15)."""
    assert check_increment_ratios(_net(spec, docs, V, K), K) > 100


def check_increment_ratios(net, K) -> int:
    """:func:`test_increment_terms_are_ratios_of_the_corrected_joint` on ``net``; returns the paths checked."""
    sm = NetworkSampler(net, seed=5)
    checked = 0
    for _ in range(6):
        sm.sweep()
        sm.check()
        for i in range(len(net.words)):
            z_before, s_before = sm.z.copy(), sm.s.copy()
            n0 = (sm.n.copy(), sm.tc.copy(), sm.tp.copy(), sm.Nn.copy(), sm.TC.copy(), sm.TP.copy(), sm.Se.copy())
            if _remove_token(sm, i):
                rest_s = sm.s.copy()
                for k in range(K):
                    Z = np.zeros(net.num_nodes)
                    terms = np.zeros(8)
                    zt = kernels.eval_zplus(net.topic_inst[i], k, Z, terms, sm.anc_ptr, sm.anc, net.kind, net.dim,
                                            net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
                                            net.par_gamma, net.gamma_sum, sm.avals, sm.bvals, sm.stirling.L3, sm.n,
                                            sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
                    tpaths = _paths(sm, net.topic_inst[i], k, Z)
                    Zw = np.zeros(net.num_nodes)
                    zw = kernels.eval_zplus(net.word_inst[i, k], net.words[i], Zw, terms, sm.anc_ptr, sm.anc,
                                            net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr,
                                            net.par_node, net.par_gamma, net.gamma_sum, sm.avals, sm.bvals,
                                            sm.stirling.L3, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
                    wpaths = _paths(sm, net.word_inst[i, k], net.words[i], Zw)
                    assert sum(w for w, _ in tpaths) == pytest.approx(zt, rel=1e-12)
                    assert sum(w for w, _ in wpaths) == pytest.approx(zw, rel=1e-12)
                    for wt, tpath in tpaths:
                        for ww, wpath in wpaths:
                            z_new = z_before.copy()
                            z_new[i] = k
                            s_new = _apply(net, _apply(net, rest_s, tpath, k), wpath, net.words[i])
                            ratio = _ratio_with_token(net, z_before, rest_s, i, z_new, s_new)
                            assert wt * ww == pytest.approx(ratio, rel=1e-9), (i, k, tpath, wpath)
                            checked += 1
            sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se = n0
            sm.z, sm.s = z_before, s_before
    return checked


def _ratio_with_token(net, z_before, rest_s, i, z_new, s_new):
    """p(z_new, s_new) / p(rest) in the table-indicator joint, where the rest has token i removed: the rest's
    joint is that of the network without token i (a copy of the compiled arrays minus the token)."""
    keep = np.arange(len(z_before)) != i
    rest = _without_token(net, i)
    lo_new = reference_log_joint(net, z_new, s_new, indicators=True)
    lo_rest = reference_log_joint(rest, z_before[keep], rest_s, indicators=True)
    return math.exp(lo_new - lo_rest)


def _without_token(net, i):
    import copy
    rest = copy.copy(net)
    keep = np.arange(len(net.words)) != i
    rest.words = net.words[keep]
    rest.topic_inst = net.topic_inst[keep]
    rest.word_inst = net.word_inst[keep]
    return rest


def _chain_histogram(net, sweeps, thin, seed):
    sm = NetworkSampler(net, seed=seed)
    sm.stirling.ensure(len(net.words) + 2, len(net.words) + 2)
    counts = {}
    for it in range(sweeps):
        pos = sweep.network_sweep(
            0, it == 0, seed, True, net.words, sm.z, net.topic_inst, net.word_inst, sm.anc_ptr, sm.anc, net.kind,
            net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
            sm.avals, sm.bvals, sm.stirling.L3, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.s, sm.Se, net.eoff,
            sm.mx, False, *NO_ENGINE, sm.drift)
        assert pos == -1
        if it % thin == 0:
            key = (tuple(int(x) for x in sm.z), tuple(int(x) for x in sm.s))
            counts[key] = counts.get(key, 0) + 1
    sm.check()
    return counts


def _chi_square(states, obs):
    logp = np.array([lp for _, _, lp in states])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    total = obs.sum()
    big = p * total >= 5
    f_obs = np.append(obs[big], obs[~big].sum())
    f_exp = np.append(p[big] * total, p[~big].sum() * total)
    keep = f_exp > 0
    return 0.5 * np.abs(obs / total - p).sum(), stats.chisquare(f_obs[keep], f_exp[keep]).pvalue


@pytest.mark.parametrize("spec,docs,V,K", [(TINY_ADATM, [[[0, 1], [1]], [[0]]], 2, 2),
                                           (TINY_HDP, [[[0, 1]], [[1, 0]]], 2, 2)])
def test_stationary_distribution_matches_enumeration(spec, docs, V, K):
    """The sampler's long-run frequencies of every (z, s) (60,000 cycles, every 2nd kept) against the normalised
    corrected joint (E12) over all legal states: chi-square p > 1e-3 and total variation < 0.05; the same
    frequencies reject the paper's literal (E12) (denominator (b)_{N_j + sum_k t^p_jk}) with p < 1e-6."""
    net = _net(spec, docs, V, K)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    counts = _chain_histogram(net, 60000, 2, seed=11)
    assert set(counts) <= set(index), "the chain visited a state the enumeration calls illegal"
    obs = np.zeros(len(states))
    for key, c in counts.items():
        obs[index[key]] = c
    tv, pval = _chi_square(states, obs)
    assert tv < 0.05 and pval > 1e-3, (len(states), tv, pval)
    tv_lit, pval_lit = _chi_square(enumerate_states(net, literal=True), obs)
    assert pval_lit < 1e-6, (tv_lit, pval_lit)


def test_lda_spec_is_collapsed_lda_draw_for_draw():
    """lda.json: the network's conditional is (4.3) and, from the same state and seed, the sampler makes the same
    draws as the collapsed LDA kernel (the network's roots draw no random number)."""
    rng = np.random.default_rng(3)
    V, K = 7, 3
    docs = [[list(rng.integers(0, V, rng.integers(2, 9)))] for _ in range(6)]
    spec = {"nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                      "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
            "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}
    net = _net(spec, docs, V, K)
    sm = NetworkSampler(net, seed=2)
    words = net.words
    token_ptr = np.concatenate([[0], np.cumsum([len(d[0]) for d in docs])]).astype(np.int64)
    z = sm.z.astype(np.int32).copy()
    nwk = np.zeros((V, K), np.int32)
    nk = np.zeros(K, np.int32)
    np.add.at(nwk, (words, z), 1)
    np.add.at(nk, z, 1)
    for cycle in range(5):
        lda_sweep(token_ptr, words.astype(np.int32), z, nwk, nk, np.full(K, 0.3), 0.05, np.zeros((1, 1)), False,
                  100 + cycle)
        sweep.network_sweep(0, True, 100 + cycle, True, net.words, sm.z, net.topic_inst, net.word_inst,
                            sm.anc_ptr, sm.anc, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of,
                            net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, sm.avals, sm.bvals,
                            sm.stirling.L3, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.s, sm.Se, net.eoff, sm.mx,
                            False, *NO_ENGINE, sm.drift)
        assert np.array_equal(z, sm.z), cycle
    assert len(set(z.tolist())) > 1


def test_stm_spec_against_the_hand_written_stm_kernel():
    """On the same STM state, the hand-written kernel's conditionals are ratios of the compiled network's joint:
    the table-count conditional (5.4) (stm_table_weights) over its whole support and the topic conditional (5.3)
    (stm_topic_weights: join without a new table when n_ijk > 0, open one when n_ijk = 0)."""
    spec = {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.4},
                      "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.35, "b": 2.5},
                              "parents": [{"node": "doc", "index": ["document"]}]},
                      "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.2}},
            "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}
    V, K = 5, 3
    docs = [[[0, 1, 1, 2, 1, 0], [3, 1, 1, 1], [4, 4, 0]]]
    net = _net(spec, docs, V, K)
    sm = NetworkSampler(net, seed=9)
    for _ in range(5):
        sm.sweep()
    sm.check()
    a, b, alpha, beta = 0.35, 2.5, 0.4, 0.2
    seg_nodes = [j for j in range(net.num_nodes) if net.kind[j] == KIND_PYP]
    tab = stirling_table(a).ensure(20, 20)
    # (5.4): p(t_jk = v) for every occupied cell
    checked = 0
    for j in seg_nodes:
        e = net.par_ptr[j]
        for k in range(K):
            cell = net.off[j] + k
            nn = int(sm.n[cell])
            if nn < 2:
                continue
            doc = net.par_node[e]
            tsum = sm.tc[net.off[doc]:net.off[doc] + K]
            tk = int(sm.tp[cell])
            wt = np.zeros(nn + 1)
            tot = stm_table_weights(wt, nn, alpha, K * alpha, int(tsum[k]) - tk, int(tsum.sum()) - tk,
                                    int(sm.TP[j]) - tk, a, b, tab.cratio, nn)
            ref = []
            for v in range(1, nn + 1):
                s2 = sm.s.copy()
                s2[net.eoff[e] + k] = v
                ref.append(reference_log_joint(net, sm.z, s2))
            ref = np.exp(np.array(ref) - max(ref))
            np.testing.assert_allclose(wt[1:] / tot, ref / ref.sum(), rtol=1e-10)
            checked += 1
    assert checked >= 2
    # (5.3): the topic of each token, with its table removed only when forced (t > n)
    for i in range(len(net.words)):
        j = int(net.topic_inst[i])
        w = int(net.words[i])
        z0 = int(sm.z[i])
        e = net.par_ptr[j]
        s_rest = sm.s.copy()
        cell = net.off[j] + z0
        if sm.tp[cell] > sm.n[cell] - 1:
            s_rest[net.eoff[e] + z0] -= 1
        z_rest = sm.z.copy()
        rest = _without_token(net, i)
        keep = np.arange(len(sm.z)) != i
        lo_rest = reference_log_joint(rest, z_rest[keep], s_rest)
        n_rest, _, t_rest = counts_of(rest, z_rest[keep], s_rest)
        seg = slice(net.off[j], net.off[j] + K)
        doc = net.par_node[e]
        tsum = np.zeros(K, np.int64)
        for ee in range(len(net.par_node)):
            if net.par_node[ee] == doc:
                tsum += np.asarray(s_rest[net.eoff[ee]:net.eoff[ee] + K])
        nwk = np.zeros((V, K), np.int64)
        np.add.at(nwk, (rest.words, z_rest[keep]), 1)
        inv = 1.0 / (nwk.sum(axis=0) + V * beta)
        p = np.zeros(K)
        tot = stm_topic_weights(p, n_rest[seg], t_rest[seg], tsum, int(tsum.sum()), int(t_rest[seg].sum()),
                                np.full(K, alpha), K * alpha, a, b, tab.ratio, w, nwk, inv, beta, np.zeros((1, 1)),
                                False)
        ref = []
        for k in range(K):
            z_new = sm.z.copy()
            z_new[i] = k
            s_new = s_rest.copy()
            if n_rest[net.off[j] + k] == 0:
                s_new[net.eoff[e] + k] += 1
            ref.append(reference_log_joint(net, z_new, s_new) - lo_rest)
        ref = np.exp(np.array(ref))
        np.testing.assert_allclose(p / tot, ref / ref.sum(), rtol=1e-10)




def test_seqlda_spec_against_the_hand_written_seqlda_table_conditional():
    """On a SeqLDA state of the compiled seqlda network (segments PYP over the previous segment, the first over
    the document), the hand-written kernel's table-count conditional (6.7) (seqlda_table_weights, over the
    support seqlda_table_support) equals the normalised ratios of the network's joint for every occupied cell."""
    from drivers.models.seqlda.token_steps import seqlda_table_support, seqlda_table_weights
    a, b, alpha = 0.25, 1.7, 0.3
    spec = {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": alpha},
                      "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": a, "b": b},
                              "parents": [{"node": "seg", "index": ["previous_segment"],
                                           "if_missing": {"node": "doc", "index": ["document"]}}]},
                      "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.2}},
            "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}
    V, K = 5, 3
    net = _net(spec, [[[0, 1, 1, 2], [1, 3, 1], [4, 4, 0, 1, 2], [2, 2]]], V, K)
    sm = NetworkSampler(net, seed=3)
    tab = stirling_table(a).ensure(30, 30)
    names = [net.spec.order[f] for f in net.family]
    segs = [j for j, nm in enumerate(names) if nm == "seg"]
    checked = 0
    for _ in range(4):
        sm.sweep()
        sm.check()
        n_d = np.array([sm.n[net.off[j]:net.off[j] + K] for j in segs])
        t_d = np.array([sm.tp[net.off[j]:net.off[j] + K] for j in segs])
        N, T = n_d.sum(axis=1), t_d.sum(axis=1)
        for r, j in enumerate(segs):
            e = net.par_ptr[j]
            for k in range(K):
                lo, hi = seqlda_table_support(r, k, n_d, t_d, 100)
                if hi <= lo:
                    continue
                wt = np.zeros(hi + 1)
                tot = seqlda_table_weights(wt, r, k, lo, hi, n_d, t_d, N, T, np.full(K, alpha), K * alpha, a, b,
                                           tab.ratio, tab.cratio)
                ref = []
                for v in range(lo, hi + 1):
                    s2 = sm.s.copy()
                    s2[net.eoff[e] + k] = v
                    ref.append(reference_log_joint(net, sm.z, s2))
                ref = np.exp(np.array(ref) - max(ref))
                np.testing.assert_allclose(wt[lo:] / tot, ref / ref.sum(), rtol=1e-10)
                checked += 1
    assert checked >= 4
