"""adatm.json and seqlda.json (table indicators) against the hand-written AdaTM and SeqLDA kernels (issue 28).

AdaTM's BTIGS (thesis ch. 7) and the network's table-indicator sampler draw from the same conditionals, so on the
same state the built-in's p(z = k, u) (its topic conditional and table attribution, (7.8)-(7.10)) must equal the
network's increment path weights term for term. SeqLDA's exact sampler conditions on another augmentation (the
seating arrangement, collapsed: removal by S^{c-1}_{t-1} / S^c_t, seating by the CRP predictive) than the network's
labelled table indicators (removal by t/c, terms (E14/E15) in indicator form), so its per-token topic weights are
not the network's; both leave the posterior (6.3) invariant, which the enumeration test below checks for both
chains on one corpus."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.adatm.model import AdaTM
from drivers.models.seqlda.kernels import seqlda_sweep
from inference.gibbs.model import SegmentedBlock
from inference.gibbs.pdp import stirling_table
from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler
from inference.pdpnet.spec import parse_network
from tests.kernels.pdpnet_reference import enumerate_states
from tests.kernels.test_pdpnet_sampler import _chain_histogram, _chi_square, _paths, _remove_token


def _adatm_spec(a, b, lam_t, lam_s, alpha, beta):
    return {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": alpha},
                      "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": a, "b": b},
                              "parents": [{"node": "seg", "index": ["previous_segment"], "gamma": lam_t},
                                          {"node": "doc", "index": ["document"], "gamma": lam_s}]},
                      "phi": {"index": ["topic"], "over": "word", "dirichlet": beta}},
            "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}


def _segment_nodes(net):
    """Compiled ids of the seg vectors in corpus segment order (one per segment, ids ascend along a chain)."""
    names = [net.spec.order[f] for f in net.family]
    return [j for j, nm in enumerate(names) if nm == "seg"]


def _builtin_arrays(net, sm, segs, K):
    """AdaTM's (n, t, s) (S x K): t the tables sent to the previous segment, s those sent to the document."""
    S = len(segs)
    n, t, s = (np.zeros((S, K), np.int32) for _ in range(3))
    for g, j in enumerate(segs):
        n[g] = sm.n[net.off[j]:net.off[j] + K]
        for e in range(net.par_ptr[j], net.par_ptr[j + 1]):
            target = s if net.spec.order[net.family[net.par_node[e]]] == "doc" else t
            target[g] = sm.s[net.eoff[e]:net.eoff[e] + K]
    return n, t, s


def _slot(path, g, sg0, is_doc):
    """The built-in's column (:func:`drivers.models.adatm.token_steps._topic_terms`) of a network increment path
    [(vector, edge taken or -1)] from segment g: with p tables sent to previous segments it ends at the document
    (u1 = -1, u2 = g - p: column 1 + 2(u2 - sg0)) or joins a table of segment g - p (u1 = 1, u2 = g - p + 1:
    column 2 + 2(u2 - sg0)); joining at g is column 0."""
    if len(path) == 1:
        return 0
    p = sum(1 for _, e in path if e >= 0) - (1 if is_doc(path[-1][0]) else 0)
    if is_doc(path[-1][0]):
        return 1 + 2 * (g - p - sg0)
    return 2 + 2 * (g - p + 1 - sg0)


@pytest.mark.parametrize("a,b", [(0.0, 1.7), (0.3, 2.2)])
def test_adatm_spec_conditionals_equal_the_builtin_btigs_terms(a, b):
    """Every token of 5 states of a 2-document corpus (3 and 4 segments, K = 3): after the network's removal
    (skipped when it leaves a cell with customers and no table: the network then restores the token, the built-in
    re-inserts it on a restricted chain), the built-in AdaTM kernel's joint weights p(z = k, u) of every topic and
    indicator (u1, u2) (``AdaTM.conditional``: (7.8)-(7.10) times the word factor) equal the network's path weight
    (the product of its increment terms, topic side times word side), and its topic totals equal
    Z^+_topic(k) Z^+_word(k); rtol 1e-9. lambda_T = 0.8 (previous segment) and lambda_S = 1.3 (document) differ,
    so a swapped pairing fails."""
    K, V, alpha, beta, lam_t, lam_s = 3, 5, 0.4, 0.3, 0.8, 1.3
    docs = [[[0, 1, 1], [2, 1], [4, 0, 1, 3]], [[3, 3], [0, 4, 4], [1], [2, 2, 0]]]
    net = compile_network(parse_network(_adatm_spec(a, b, lam_t, lam_s, alpha, beta)), CorpusLayout.of(docs, V), K)
    segs = _segment_nodes(net)
    is_doc = {j for j in range(net.num_nodes) if net.spec.order[net.family[j]] == "doc"}.__contains__
    block = SegmentedBlock.from_segments([(f"d{d}", [np.asarray(s) for s in doc]) for d, doc in enumerate(docs)])
    assert np.array_equal(block.words, net.words)
    model = AdaTM(K, V)
    hyper = model.initial_hyper(alpha=alpha, beta=beta, a=a, b=b, lambda_s=lam_s, lambda_t=lam_t, sample_b=False)
    sm = NetworkSampler(net, seed=4)
    checked = 0
    for _ in range(5):
        sm.sweep()
        sm.check()
        for i in range(len(net.words)):
            saved = [x.copy() for x in (sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.s, sm.Se, sm.z)]
            if _remove_token(sm, i):
                n, t, s = _builtin_arrays(net, sm, segs, K)
                keep = np.arange(len(sm.z)) != i
                nwk = np.zeros((V, K), np.int32)
                np.add.at(nwk, (net.words[keep], sm.z[keep]), 1)
                nk = nwk.sum(axis=0).astype(np.int64)
                state = {"z": sm.z.astype(np.int32), "n": n, "t": t, "s": s}
                terms, totals = model.conditional(block, state, hyper, nwk, nk, i)
                g = int(np.searchsorted(block.seg_ptr, i, side="right") - 1)
                sg0 = int(block.doc_ptr[np.searchsorted(block.doc_ptr, g, side="right") - 1])
                for k in range(K):
                    Z, Zw = np.zeros(net.num_nodes), np.zeros(net.num_nodes)
                    zt = _zplus(sm, net.topic_inst[i], k, Z)
                    zw = _zplus(sm, net.word_inst[i, k], net.words[i], Zw)
                    assert totals[k] == pytest.approx(zt * zw, rel=1e-9), (i, k)
                    ours = np.zeros(terms.shape[1])
                    for wt, path in _paths(sm, net.topic_inst[i], k, Z):
                        ours[_slot(path, g, sg0, is_doc)] += wt * zw
                    np.testing.assert_allclose(terms[k], ours, rtol=1e-9, atol=1e-300, err_msg=f"token {i} k {k}")
                    checked += int((ours > 0).sum())
            sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.s, sm.Se, sm.z = saved
    assert checked > 400


def _zplus(sm, j, v, Z):
    net = sm.net
    return kernels.eval_zplus(j, v, Z, np.zeros(8), sm.anc_ptr, sm.anc, net.kind, net.dim, net.off, net.alpha,
                              net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, sm.avals,
                              sm.bvals, sm.stirling.L3, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)


@pytest.mark.parametrize("a,b,segments", [(0.0, 1.5, ([0, 1], [1, 0, 0])), (0.3, 1.0, ([0, 1], [1], [0, 1]))])
def test_seqlda_spec_and_the_builtin_exact_sampler_visit_the_same_posterior(a, b, segments):
    """One document, K = 2, V = 2, the Dirichlet word side of both (beta = 0.4): seqlda.json's shape under the
    table indicators (``network_sweep``) and the built-in ``seqlda_sweep`` with ``exact=True`` (table sweep on),
    40,000 cycles each (every 2nd kept), visit (z, t) with the network's enumerated (E12) = SeqLDA's (6.3):
    chi-square p > 1e-3 and total variation < 0.05 for both, and their z-marginals within 0.03 of each other.
    (Their per-token topic weights differ by design, see the module docstring.)"""
    from drivers.models.seqlda.model import SeqLDA
    K, V, alpha, beta = 2, 2, 0.6, 0.4
    spec = {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": alpha},
                      "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": a, "b": b},
                              "parents": [{"node": "seg", "index": ["previous_segment"],
                                           "if_missing": {"node": "doc", "index": ["document"]}}]},
                      "phi": {"index": ["topic"], "over": "word", "dirichlet": beta}},
            "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}
    net = compile_network(parse_network(spec), CorpusLayout.of([[list(x) for x in segments]], V), K)
    segs = _segment_nodes(net)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    ours = np.zeros(len(states))
    for key, c in _chain_histogram(net, 40000, 2, seed=7).items():
        ours[index[key]] = c
    block = SegmentedBlock.from_segments([("d", [np.asarray(x) for x in segments])])
    model = SeqLDA(K, V)
    hyper = model.initial_hyper(alpha=alpha, beta=beta, a=a, b=b, sample_b=False, optimize_alpha=False,
                                sampler="exact")
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    st = model.init_state(block, hyper, nwk, nk, 1)
    tab = stirling_table(a).ensure(30, 20)
    theirs = np.zeros(len(states))
    s = np.zeros(int(net.eoff[-1]), np.int64)
    for it in range(40000):
        seqlda_sweep(block.doc_ptr, block.seg_ptr, block.words, st["z"], st["n"], st["t"], np.array([b]), nwk, nk,
                     np.full(K, alpha), beta, a, tab.log, tab.ratio, tab.cratio, 20, np.zeros((1, 1)), False, True,
                     True, it + 5)
        if it % 2 == 0:
            for g, j in enumerate(segs):
                s[net.eoff[net.par_ptr[j]]:net.eoff[net.par_ptr[j]] + K] = st["t"][g]
            theirs[index[(tuple(int(x) for x in st["z"]), tuple(int(x) for x in s))]] += 1
    results = [_chi_square(states, ours), _chi_square(states, theirs)]
    for tv, pval in results:
        assert tv < 0.05 and pval > 1e-3, results
    zmarg = {}
    for r, (z, _, _) in enumerate(states):
        zmarg.setdefault(z, []).append(r)
    rows = list(zmarg.values())
    diff = sum(abs(ours[r].sum() / ours.sum() - theirs[r].sum() / theirs.sum()) for r in rows) / 2
    assert diff < 0.03, (diff, results)


MIXTURE = {"nodes": {"top": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
                     "doc": {"index": ["document"], "over": "topic", "dirichlet": 0.7},
                     "seg": {"index": ["segment"], "over": "topic", "mixture": True,
                             "parents": [{"node": "doc", "index": ["document"], "gamma": 0.8},
                                         {"node": "top", "index": ["corpus"], "gamma": 1.3}]},
                     "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.4}},
           "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}


def test_a_mixture_nodes_terms_are_ratios_of_the_joint_and_it_never_shares_a_table():
    """A mixture node (b infinite; rho ~ Dirichlet(0.8, 1.3) integrated out) over a document root and a corpus
    root: every increment path's terms equal p(after)/p(before) of the table-indicator joint (the join term is
    0 and a path opens a table sent to one parent), and after every sweep t = c at every cell of the node."""
    from tests.kernels.test_pdpnet_sampler import check_increment_ratios
    net = compile_network(parse_network(MIXTURE), CorpusLayout.of([[[0, 1], [2, 0, 1]], [[1], [2, 2]]], 3), 2)
    assert check_increment_ratios(net, 2) > 50
    sm = NetworkSampler(net, seed=3)
    segs = _segment_nodes(net)
    for _ in range(20):
        sm.sweep()
        sm.check()
        for j in segs:
            cells = slice(net.off[j], net.off[j + 1])
            assert np.array_equal(sm.tp[cells], sm.n[cells] + sm.tc[cells])
    assert "mixture (b infinite, rho dirichlet) of doc[document] gamma 0.8, top[corpus] gamma 1.3" in net.describe()


@pytest.mark.parametrize("change,message", [
    ({"mixture": 1}, "'mixture' must be true"),
    ({"index": ["corpus"]}, "a mixture node is indexed by document or segment"),
    ({"dp": {"b": 1.0}}, "give exactly one of"),
    ({"weights": "uniform", "parents": [{"node": "doc", "index": ["document"], "gamma": 2.0}]}, "take no gamma")])
def test_mixture_node_refusals(change, message):
    from inference.errors import UsageError
    raw = {**MIXTURE, "nodes": {**MIXTURE["nodes"], "seg": {**MIXTURE["nodes"]["seg"], **change}}}
    with pytest.raises(UsageError, match=message):
        parse_network(raw)
    one = {**MIXTURE, "sampler": "cmgs", "nodes": {k: v for k, v in MIXTURE["nodes"].items() if k != "top"}}
    one["nodes"]["seg"] = {**MIXTURE["nodes"]["seg"], "parents": [{"node": "doc", "index": ["document"]}]}
    with pytest.raises(UsageError, match="sampler 'cmgs' does not run a mixture node"):
        parse_network(one)
    word = {**MIXTURE, "nodes": {**MIXTURE["nodes"], "phi": {"index": ["topic"], "over": "word", "mixture": True,
                                                             "parents": [{"node": "top", "index": ["corpus"]}]}}}
    with pytest.raises(UsageError, match="a mixture node is over topics"):
        parse_network(word)
