"""The bigram-topic word side on the Gibbs engine (issue 28, the topic-based language model as a network;
:mod:`inference.pdpnet.word_bigram`): its word factor against the network's own recursion
(:func:`inference.pdpnet.kernels.eval_zplus`, itself tested against the joint) on states of the in-process sampler
of the same spec, and the engine sweep's bookkeeping over two partitions: the keyed tables summed after every sweep
equal each partition's own moves added to the last sums, 0 <= t^p <= n^p in every partition, t <= n globally."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import words_bigram, words_pyp
from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import merge
from inference.pdpnet import kernels, word_bigram
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler
from inference.pdpnet.spec import parse_network


def tlm_spec(beta0=0.2, a=0.4, b=1.5):
    root = {"dirichlet": beta0} if beta0 > 0 else {"uniform": True}
    return {"name": "tlm-net",
            "nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                      "psi": {"index": ["topic"], "over": "word", **root},
                      "phi": {"index": ["topic", "previous_word"], "over": "word", "pyp": {"a": a, "b": b},
                              "parents": [{"node": "psi", "index": ["topic"]}]}},
            "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "phi", "index": ["topic", "previous_word"]}}


@pytest.mark.parametrize("beta0", [0.2, 0.0], ids=["dirichlet-root", "uniform-root"])
def test_word_factor_is_the_network_recursion(beta0):
    rng = np.random.default_rng(3)
    V, K, a, b = 5, 3, 0.4, 1.5
    docs = [[list(rng.integers(0, V, rng.integers(2, 8)))] for _ in range(5)]
    net = compile_network(parse_network(tlm_spec(beta0, a, b)), CorpusLayout.of(docs, V), K)
    block = SegmentedBlock.from_segments([(f"d{i}", d) for i, d in enumerate(docs)])
    pairs, uidx = words_bigram.local_pairs(block, V)
    sm = NetworkSampler(net, seed=2)
    Z, terms = np.zeros(net.num_nodes), np.zeros(4)
    inst = np.zeros((len(pairs), K), np.int64)       # the phi vector of every pair's context at every topic
    inst[uidx] = net.word_inst
    prev = pairs // V
    ctx_ids, pctx = np.unique(prev, return_inverse=True)
    checked = 0
    for _ in range(4):
        sm.sweep()
        sm.stirling.ensure(sm.mx[0] + 2, sm.mx[1] + 2)
        nloc = np.array([[sm.n[net.off[j] + p % V] for j in row] for p, row in zip(pairs, inst)])
        tloc = np.array([[sm.tp[net.off[j] + p % V] for j in row] for p, row in zip(pairs, inst)])
        Nc = np.zeros((len(ctx_ids), K), np.int64)
        Tc = np.zeros((len(ctx_ids), K), np.int64)
        troot = np.zeros((V, K), np.int64)
        for c in range(len(ctx_ids)):
            u = int(np.flatnonzero(pctx == c)[0])
            for k in range(K):
                j = inst[u, k]
                Nc[c, k] = sm.n[net.off[j]:net.off[j + 1]].sum()
                Tc[c, k] = sm.tp[net.off[j]:net.off[j + 1]].sum()
                troot[:, k] += sm.tp[net.off[j]:net.off[j + 1]]
        for u, p in enumerate(pairs):
            got = word_bigram.bigram_zplus(u, int(p % V), int(pctx[u]), nloc, tloc, Nc, Tc, troot,
                                           troot.sum(axis=0), a, b, beta0, 0, sm.stirling.L3)
            for k in range(K):
                want = kernels.eval_zplus(inst[u, k], int(p % V), Z, terms, sm.anc_ptr, sm.anc, net.kind, net.dim,
                                          net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
                                          net.par_gamma, net.gamma_sum, sm.avals, sm.bvals, sm.stirling.L3, sm.n,
                                          sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
                np.testing.assert_allclose(got[k], want, rtol=1e-12)
                checked += 1
    assert checked == 4 * len(pairs) * K and Tc.sum() > 0


def test_two_partitions_keyed_tables_stay_the_recount_and_own_tables_legal(tmp_path):
    V, K = 7, 3
    rng = np.random.default_rng(7)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V, rng.integers(3, 12)))]) for i in range(16)]
    spec = tmp_path / "tlm-net.json"
    spec.write_text(__import__("json").dumps(tlm_spec(0.1, 0.3, 2.0)))
    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network=str(spec))
    assert hyper["word_pyp"]["bigram"]
    blocks = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    states = [model.initial_state(blk, hyper, 5 + p) for p, blk in enumerate(blocks)]

    def summed():
        parts = [model.table_counts(blk, st, np.unique(blk.words, return_inverse=True))
                 for blk, st in zip(blocks, states)]
        return {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}
    moved = 0
    for it in range(200):
        tables = summed()
        before = [st["z"].copy() for st in states]
        for p, (blk, st) in enumerate(zip(blocks, states)):
            own = {name: tab.copy() for name, tab in tables.items()}
            derived = model.derive(own)
            pairs, uidx = words_bigram.local_pairs(blk, V)
            n0 = words_pyp.own_customers(uidx, st["z"], len(pairs), K)
            start = words_bigram.local_arrays(pairs, uidx, {"z": st["z"], "word_t": st["word_t"].copy()}, derived, V, K)
            t0 = st["word_t"] + ((start["tloc"] > 0) & (start["nloc"] > 0) & (n0 > 0) & (
                words_bigram.lookup(derived["bigram_keys"], derived["bigram_race"], pairs[:, None] * K + np.arange(K))))
            model.sweep_tables(blk, st, hyper, own, derived, 100 * it + p)
            model.sweep_tables(blk, st, hyper, own, derived, 100 * it + p + 50)   # two sweeps per synchronisation
            n_own = words_pyp.own_customers(uidx, st["z"], len(pairs), K)
            assert np.all(st["word_t"] >= 0) and np.all(st["word_t"] <= n_own)
            loc = derived[words_bigram.LOCAL]
            # the local copies: the last sums moved by exactly this partition's own changes
            np.testing.assert_array_equal(loc["nloc"], start["nloc"] + n_own - n0)
            np.testing.assert_array_equal(loc["tloc"], start["tloc"] + st["word_t"] - t0)
            assert np.all(loc["tloc"] <= loc["nloc"]) and np.all(loc["tloc"] >= 0)
            np.testing.assert_array_equal(loc["troot"].sum(axis=0), loc["Troot"])
            np.testing.assert_array_equal(loc["troot"] - start["troot"], np.zeros((V, K), np.int64)
                                          + _by_word(pairs, st["word_t"] - t0, V))
        moved += sum(int((b0 != st["z"]).sum()) for b0, st in zip(before, states))
        new = summed()
        der = model.derive(new)
        n, t = der["bigram_n"], der["bigram_t"]
        assert np.all(t <= n) and np.all(t >= 1) and int(n.sum()) == sum(b.n_tokens for b in blocks)
        assert n.sum() == der["bigram_ctx_n"].sum() and t.sum() == der["bigram_troot"].sum()
        hyper = model.global_step(new, hyper, model.partition_stats(blocks[0], states[0], hyper, it), it)[1]
        assert np.isfinite(model.loglik(new, der, hyper))
        np.testing.assert_allclose(model.sample_topic_word(new, der, hyper).sum(axis=1), 1.0)
    assert moved > 20
    # the held-out word factor (the side at its posterior mean given the state) is a distribution over the words
    # of every context: the start context and every previous word
    side = hyper["word_pyp"]
    a, b = hyper["a_values"][side["a"]], hyper["b_values"][side["b"]]
    first = words_bigram.predictive(SegmentedBlock.from_segments([(f"s{w}", [[w]]) for w in range(V)]), der, a, b,
                                  0.1, V, K)
    np.testing.assert_allclose(first.sum(axis=0), 1.0, rtol=1e-12)
    for prev in range(V):
        pairs = SegmentedBlock.from_segments([(f"p{w}", [[prev, w]]) for w in range(V)])
        rows = words_bigram.predictive(pairs, der, a, b, 0.1, V, K)[1::2]
        np.testing.assert_allclose(rows.sum(axis=0), 1.0, rtol=1e-12)
        assert np.all(rows > 0)


def _by_word(pairs, delta, V):
    out = np.zeros((V, delta.shape[1]), np.int64)
    np.add.at(out, pairs % V, delta)
    return out


def test_one_engine_partition_samples_the_networks_joint(tmp_path):
    """One engine partition (the model's ``sweep_tables``, every sweep on its local copies as a single partition's
    synchronisations leave them) visits every (z, t) of a tiny tlm network with the frequencies of the network's
    corrected joint (E12) enumerated over all legal states (tests/kernels/pdpnet_reference.py): 20,000 sweeps,
    chi-square p > 1e-3, total variation < 0.06 (the literal (E12): 0.43). The state maps onto the in-process
    network's: a pair's own indicators at topic k are the table count s of the phi[k, w'] cell w's edge to psi_k.
    (Not draw for draw: the engine's word side draws its leaving customer's indicator as u n < t, forced without
    a number at t = 0 or n, and re-seats every own customer of a cell; the network sampler draws u c >= c - t
    and re-seats one customer per cell.)"""
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    V, K = 2, 2
    docs = [[0, 1, 0, 1], [0, 1]]               # pairs (start, 0) twice, (0, 1) three times, (1, 0) once
    spec = tmp_path / "tlm-net.json"
    spec.write_text(__import__("json").dumps(tlm_spec(0.4, 0.3, 1.5)))
    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network=str(spec))
    block = SegmentedBlock.from_segments([(f"d{i}", [d]) for i, d in enumerate(docs)])
    state = model.initial_state(block, hyper, 3)
    tables = {name: value for name, value in model.table_counts(block, state, np.unique(
        block.words, return_inverse=True)).items()}
    tables = {t.name: merge(t, [tables[t.name]]) for t in model.count_tables()}
    derived = model.derive(tables)
    net = compile_network(parse_network(tlm_spec(0.4, 0.3, 1.5)), CorpusLayout.of([[d] for d in docs], V), K)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    pairs, uidx = words_bigram.local_pairs(block, V)
    obs = np.zeros(len(states))
    for it in range(20000):
        model.sweep_tables(block, state, hyper, tables, derived, 1000 + it)
        s = np.zeros(int(net.eoff[-1]), np.int64)
        for i, (u, w) in enumerate(zip(uidx, block.words)):
            for k in range(K):
                s[net.eoff[net.par_ptr[net.word_inst[i, k]]] + w] = state["word_t"][u, k]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in s))]] += 1
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3, (len(states), tv, pval)
    assert len(states) > 64                      # the word side's tables vary, not only z
    tv_lit, pval_lit = _chi_square(enumerate_states(net, literal=True), obs)
    assert tv_lit > 0.3 and pval_lit < 1e-6, (tv_lit, pval_lit)    # the paper's literal (E12): told apart
