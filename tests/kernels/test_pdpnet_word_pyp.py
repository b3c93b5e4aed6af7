"""The Pitman-Yor word side on the Gibbs engine (issue 28, pyp-lda; :mod:`inference.pdpnet.word_pyp`): its word
factor against the ratio of the augmented joint computed directly and against the network's own recursion
(:func:`inference.pdpnet.kernels.eval_zplus`) on states of the in-process sampler, and the engine sweep's
bookkeeping: after sweeps of two partitions on their private copies, each copy moved by its partition's changes
only (and its reading of cells left without tables as one table), every partition's indicators satisfy 0 <= t^p <= n^p, the summed t_wk <= n_wk, and cells left without a
table by both partitions at once (repaired before the next sweep) are rare."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammaln

from drivers.models.pdp_network import words_pyp
from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import merge
from inference.pdpnet import kernels, word_pyp
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler
from inference.pdpnet.spec import parse_network


def pyp_lda(beta0, a=0.4, b=1.5):
    base = {"dirichlet": beta0} if beta0 > 0 else {"uniform": True}
    return {"nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                      "base": {"index": ["corpus"], "over": "word", **base},
                      "phi": {"index": ["topic"], "over": "word", "pyp": {"a": a, "b": b},
                              "parents": [{"node": "base", "index": ["corpus"]}]}},
            "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def _augmented(nwk, twk, a, b, beta0):
    """log of the word side's joint (E12) times the table indicators' prod binom(c, t)^-1."""
    occ = nwk > 0
    c, t = nwk[occ], twk[occ]
    return (words_pyp.loglik(nwk, twk, a, b, beta0)
            + float((gammaln(t + 1.0) + gammaln(c - t + 1.0) - gammaln(c + 1.0)).sum()))


@pytest.mark.parametrize("beta0", [0.2, 0.0], ids=["dirichlet-root", "uniform-root"])
def test_word_factor_is_the_joint_ratio_and_the_network_recursion(beta0):
    rng = np.random.default_rng(3)
    V, K, a, b = 5, 3, 0.4, 1.5
    docs = [[list(rng.integers(0, V, rng.integers(2, 8)))] for _ in range(5)]
    net = compile_network(parse_network(pyp_lda(beta0, a, b)), CorpusLayout.of(docs, V), K)
    sm = NetworkSampler(net, seed=2)
    phi = [int(net.word_inst[0, k]) for k in range(K)]
    Z, terms = np.zeros(net.num_nodes), np.zeros(4)
    checked = 0
    for _ in range(5):
        sm.sweep()
        sm.stirling.ensure(sm.mx[0] + 2, sm.mx[1] + 2)
        nwk = np.stack([sm.n[net.off[j]:net.off[j + 1]] for j in phi], axis=1)
        twk = np.stack([sm.tp[net.off[j]:net.off[j + 1]] for j in phi], axis=1)
        tw = twk.sum(axis=1)
        base = _augmented(nwk, twk, a, b, beta0)
        for w in range(V):
            got = word_pyp.word_zplus(w, nwk.astype(np.int32), twk.astype(np.int32), nwk.sum(axis=0), twk.sum(axis=0),
                                      tw, int(tw.sum()), a, b, beta0, 0, sm.stirling.L3)
            for k in range(K):
                join, opened = nwk.copy(), nwk.copy()
                join[w, k] += 1
                opened[w, k] += 1
                t_open = twk.copy()
                t_open[w, k] += 1
                want = ((np.exp(_augmented(join, twk, a, b, beta0) - base) if nwk[w, k] else 0.0)
                        + np.exp(_augmented(opened, t_open, a, b, beta0) - base))
                np.testing.assert_allclose(got[k], want, rtol=1e-10)
                network = kernels.eval_zplus(phi[k], w, Z, terms, sm.anc_ptr, sm.anc, net.kind, net.dim, net.off,
                                             net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
                                             net.gamma_sum, sm.avals, sm.bvals, sm.stirling.L3, sm.n, sm.tc, sm.tp,
                                             sm.Nn, sm.TC, sm.TP, sm.Se)
                np.testing.assert_allclose(got[k], network, rtol=1e-12)
                checked += 1
    assert checked == 5 * V * K


def two_partitions(seed: int, V: int, K: int, n_docs: int, shortest: int):
    """pyp-lda's model, hyperparameters, and two partitions (every other document of ``n_docs`` random ones of
    ``shortest`` to 11 tokens) with their initial states: (model, hyper, blocks, states)."""
    rng = np.random.default_rng(seed)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V, rng.integers(shortest, 12)))]) for i in range(n_docs)]
    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network="pyp-lda")
    blocks = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    return model, hyper, blocks, [model.initial_state(blk, hyper, 5 + p) for p, blk in enumerate(blocks)]


def test_two_partitions_tables_stay_the_recount_and_own_tables_legal():
    V, K = 9, 3
    model, hyper, blocks, states = two_partitions(7, V, K, 16, 2)

    def summed():
        parts = [model.table_counts(blk, st, np.unique(blk.words, return_inverse=True))
                 for blk, st in zip(blocks, states)]
        return {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}
    moved = races = occupied = 0
    for it in range(8):
        tables = summed()
        before = [st["z"].copy() for st in states]
        after, read = [], []
        race = (tables["nwk"] > 0) & (tables[words_pyp.TABLE] == 0)
        for p, (blk, st) in enumerate(zip(blocks, states)):
            own = {name: np.array(tab, copy=True) if isinstance(tab, np.ndarray) else tab
                   for name, tab in tables.items()}
            held = np.zeros_like(race)          # race cells it reads as one table without customers there
            vocab, uidx = np.unique(blk.words, return_inverse=True)
            held[vocab] = words_pyp.own_customers(uidx.reshape(-1), st["z"], len(vocab), K) == 0
            read.append((race & held).astype(np.int64))
            model.sweep_tables(blk, st, hyper, own, model.derive(own), 100 * it + p)
            after.append(own)
        moved += sum(int((b0 != st["z"]).sum()) for b0, st in zip(before, states))
        new = summed()
        # a partition's private copy moved by exactly its own changes (and its reading of race cells)
        for name in ("nwk", words_pyp.TABLE):
            delta = sum(own[name].astype(np.int64) - tables[name] - (r if name == words_pyp.TABLE else 0)
                        for own, r in zip(after, read))
            np.testing.assert_array_equal(tables[name] + delta, new[name], err_msg=name)
        for blk, st in zip(blocks, states):
            vocab, uidx = np.unique(blk.words, return_inverse=True)
            n_own = words_pyp.own_customers(uidx.reshape(-1), st["z"], len(vocab), K)
            t_own = st["word_t"]
            assert np.all(t_own >= 0) and np.all(t_own <= n_own)
        n, t = new["nwk"], new[words_pyp.TABLE]
        assert np.all(t <= n)
        races += int(((n > 0) & (t == 0)).sum())
        occupied += int((n > 0).sum())
        hyper = model.global_step(new, hyper, model.partition_stats(blocks[0], states[0], hyper, it), it)[1]
    assert moved > 20 and races <= occupied // 20, (races, occupied)
    assert hyper["a_values"]["phi.a"] != 0.5 and hyper["b_values"]["phi.b"] != 10.0


def test_a_cell_left_without_tables_by_a_race_reads_as_one_table_in_every_partition():
    """Two partitions removed a cell's last indicators in one sweep (n_wk > 0, t_wk = 0 after the merge): a
    partition with customers of that word but none in the cell sweeps exactly as on the table read legally (t = 1,
    its totals with it), the driver's reading. Reading t = 0 made the cell's Stirling ratios S^{c+1}_0 / S^c_0 NaN
    and every token of the word drew topic 0 (the collapse of pyp-lda on two partitions, issue 28)."""
    V, K = 6, 3
    model, hyper, blocks, states = two_partitions(11, V, K, 12, 4)
    vocabs = [np.unique(blk.words, return_inverse=True) for blk in blocks]
    own_n = [words_pyp.own_customers(u.reshape(-1), st["z"], len(v), K) for (v, u), st in zip(vocabs, states)]
    # a cell (w, k) with customers only in partition 0, whose word partition 1 also has
    cells = [(int(w), k) for u0, w in enumerate(vocabs[0][0]) for k in range(K)
             if own_n[0][u0, k] > 0 and w in vocabs[1][0]
             and own_n[1][int(np.searchsorted(vocabs[1][0], w)), k] == 0]
    assert cells
    w, k = cells[0]
    states[0]["word_t"][int(np.searchsorted(vocabs[0][0], w)), k] = 0      # its last indicator left
    parts = [model.table_counts(blk, st, loc) for blk, st, loc in zip(blocks, states, vocabs)]
    tables = {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}
    assert tables["nwk"][w, k] > 0 and tables[words_pyp.TABLE][w, k] == 0
    legal = dict(tables)
    legal[words_pyp.TABLE] = words_pyp.legal(tables["nwk"], tables[words_pyp.TABLE])[1].astype(
        tables[words_pyp.TABLE].dtype)
    runs = []
    for tabs in (tables, legal):
        st = {name: np.array(v, copy=True) for name, v in states[1].items()}
        own = {name: np.array(tab, copy=True) for name, tab in tabs.items()}
        model.sweep_tables(blocks[1], st, hyper, own, model.derive(own), 3)
        runs.append((st, own))
    (st_raw, own_raw), (st_legal, own_legal) = runs
    np.testing.assert_array_equal(st_raw["z"], st_legal["z"])
    np.testing.assert_array_equal(st_raw["word_t"], st_legal["word_t"])
    np.testing.assert_array_equal(own_raw[words_pyp.TABLE], own_legal[words_pyp.TABLE])
    # the partition with customers in the cell opens a table for them (its own indicator)
    st0 = {name: np.array(v, copy=True) for name, v in states[0].items()}
    own = {name: np.array(tab, copy=True) for name, tab in tables.items()}
    model.sweep_tables(blocks[0], st0, hyper, own, model.derive(own), 4)
    n0 = words_pyp.own_customers(vocabs[0][1].reshape(-1), st0["z"], len(vocabs[0][0]), K)
    assert np.all(st0["word_t"] >= 0) and np.all(st0["word_t"] <= n0)
    assert np.all((own["nwk"] == 0) | (own[words_pyp.TABLE] >= 1))
