"""pyp-lda's Pitman-Yor word side under the multiplicity samplers (issue 28; :mod:`inference.pdpnet.word_mult`):
the word cells' table counts t_wk with no indicators. The topic factors against the ratios of the joint (E12) summed
over each sampler's completions and the table count's weights against its conditional (with two partitions the
binomials of the split), rtol 1e-9; under exact the chain's frequencies of every (z, t) against the enumerated
joint, and a wrong removal (t/c) rejected; a run resumed after the Stirling table grew is the same chain; on two
partitions the tables stay the recount, every t^p <= n^p, t <= n."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.special import gammaln

from drivers.models.pdp_network import words_pyp
from inference.errors import UsageError
from inference.pdpnet import word_mult
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.kernels import ancestor_lists
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_mult import RIGHT, WRONG_REMOVAL, mult_word_sweep
from tests.kernels.test_pdpnet_cmgs import SHIPPED
from tests.kernels.test_pdpnet_sampler import _chi_square
from tests.kernels.test_pdpnet_word_pyp import pyp_lda

ALPHA = 0.3        # pyp_lda's theta


def _log_joint(docs_z, words, nwk, twk, a, b, beta0, K):
    """log p(z, w, t): the documents' Dirichlet(ALPHA)-multinomials and the word side's (E12) (C^t_s = 1)."""
    out = 0.0
    for z in docs_z:
        nd = np.bincount(z, minlength=K)
        out += gammaln(K * ALPHA) - gammaln(K * ALPHA + len(z)) + float((gammaln(ALPHA + nd) - gammaln(ALPHA)).sum())
    return out + words_pyp.loglik(nwk, twk, a, b, beta0)


class State:
    """A compiled pyp-lda (topic side only) with the word side's arrays (one partition: own = global, or the
    ``own`` split given)."""

    def __init__(self, docs, V, K, z, twk, beta0=0.2, a=0.4, b=1.5, own=None, sampler="exact"):
        self.lay = CorpusLayout.of(docs, V)
        self.net = compile_network(parse_network(dict(pyp_lda(beta0, a, b), sampler=sampler)), self.lay, K,
                                   word_side=False)
        self.z = np.array(z, np.int64)
        self.s = np.zeros(int(self.net.eoff[-1]), np.int64)
        self.cnt = rebuild_counts(self.net, self.z, self.s, False)
        self.V, self.K, self.a, self.b, self.beta0 = V, K, a, b, beta0
        nwk = np.zeros((V, K), np.int64)
        np.add.at(nwk, (self.lay.words, self.z), 1)
        twk = np.asarray(twk, np.int64)
        self.nloc, self.tloc = nwk, twk.copy()
        self.Nc, self.Tc = nwk.sum(axis=0)[None].copy(), twk.sum(axis=0)[None].copy()
        self.troot, self.Troot = twk.sum(axis=1)[:, None].copy(), np.array([twk.sum()], np.int64)
        self.own_n, self.own_t = (nwk.copy(), twk.copy()) if own is None else (np.asarray(own[0], np.int64),
                                                                                np.asarray(own[1], np.int64))
        self.avals = np.asarray(self.net.a_values, np.float64)
        self.bvals = np.asarray(self.net.b_values, np.float64)
        self.pw, self.bw = self.net.a_names.index("phi.a"), self.net.b_names.index("phi.b")
        self.stack = StirlingStack(self.avals)
        self.anc = ancestor_lists(self.net.par_ptr, self.net.par_node)
        self.mx = np.array([nwk.max() + 2, twk.max() + 2], np.int64)

    def sweep(self, seed, exact=True, wrong=RIGHT, grow=True):
        """One cycle, resumed whenever the kernel asks for a larger Stirling table."""
        net, cnt = self.net, self.cnt
        pos, reseed = 0, True
        while pos >= 0:
            if grow:
                self.stack.ensure(self.mx[0], self.mx[1])
            pos = mult_word_sweep(pos, reseed, seed, self.lay.words, np.arange(self.V), np.zeros(self.V, np.int64),
                                  self.z, net.topic_inst, *self.anc, net.kind, net.dim, net.off, net.alpha, net.a_of,
                                  net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, self.avals,
                                  self.bvals, self.stack.L3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"],
                                  cnt["TC"], cnt["TP"], self.s, cnt["Se"], net.eoff, self.mx, self.nloc, self.tloc,
                                  self.Nc, self.Tc, self.troot, self.Troot, self.own_n, self.own_t, self.pw, self.bw,
                                  self.beta0,
                                  exact, wrong)
            reseed = False

    def log_h(self, nwk, twk):
        return words_pyp.loglik(nwk, twk, self.a, self.b, self.beta0)


def _random_state(seed, V=5, K=3, ndocs=6):
    rng = np.random.default_rng(seed)
    docs = [[list(rng.integers(0, V, rng.integers(3, 9)))] for _ in range(ndocs)]
    N = sum(len(d[0]) for d in docs)
    z = rng.integers(0, K, N)
    words = np.concatenate([d[0] for d in docs])
    nwk = np.zeros((V, K), np.int64)
    np.add.at(nwk, (words, z), 1)
    twk = np.where(nwk > 0, rng.integers(1, np.maximum(nwk, 1) + 1), 0)
    return docs, V, K, z, twk


def _arrangement(c, t, rng):
    """Table sizes of a random seating of c customers at t tables (each at least one)."""
    sizes = [1] * t
    for _ in range(c - t):
        sizes[int(rng.integers(t))] += 1
    return sizes


def _log_arrangement(sizes, N, T, a, b):
    """log of a restaurant's seating arrangement probability with the cell's tables ``sizes`` (the other cells'
    factors cancel in a ratio): (b|a)_T / (b)_N prod_tables (1 - a)_{m - 1}."""
    out = sum(math.log(b + a * i) for i in range(T)) - sum(math.log(b + i) for i in range(N))
    return out + sum(math.log(i - a) for m in sizes for i in range(1, m))


@pytest.mark.parametrize("beta0", [0.2, 0.0], ids=["dirichlet-root", "uniform-root"])
def test_topic_factors_and_table_weights_are_the_joints_ratios(beta0):
    """Every word cell (w, k) of random states: exact's F(k) = the seating arrangement's ratios (a random one of
    the cell's (c, t)) summed over joining each table or opening one (the predictive); cmgs's = H(after) / H(before)
    of joining, t unchanged, where t > 0, else of opening; the table count's weights over v are H's conditional, and with an own
    share of n^p < c customers that times binom(n^p, v^p) / binom(c, v) (rtol 1e-9)."""
    checked = redraws = 0
    rng = np.random.default_rng(9)
    for seed in range(3):
        docs, V, K, z, twk = _random_state(seed)
        st = State(docs, V, K, z, twk, beta0)
        st.stack.ensure(30, 30)
        SR = word_mult.stirling_steps(st.stack.L3[st.pw:st.pw + 1])[0]
        nwk = st.nloc
        base = st.log_h(nwk, twk)
        tw = twk.sum(axis=1)
        for w in range(V):
            nu = (beta0 + tw[w]) / (V * beta0 + tw.sum()) if beta0 > 0 else 1.0 / V
            for k in range(K):
                c, t, N, T = int(nwk[w, k]), int(twk[w, k]), int(nwk[:, k].sum()), int(twk[:, k].sum())
                n1 = nwk.copy()
                n1[w, k] += 1
                t1 = twk.copy()
                t1[w, k] += 1
                join = math.exp(st.log_h(n1, twk) - base) if t > 0 else 0.0
                opened = math.exp(st.log_h(n1, t1) - base)
                sizes = _arrangement(c, t, rng)           # the seating arrangement's joint: join each table, open
                seat = sum(math.exp(_log_arrangement(sizes[:j] + [m + 1] + sizes[j + 1:], N + 1, T, st.a, st.b)
                                    - _log_arrangement(sizes, N, T, st.a, st.b)) for j, m in enumerate(sizes))
                seat += math.exp(_log_arrangement(sizes + [1], N + 1, T + 1, st.a, st.b)
                                 - _log_arrangement(sizes, N, T, st.a, st.b)) * nu
                for exact, want in ((True, seat), (False, join if t > 0 else opened)):
                    got = word_mult.word_weight(c, t, N, T, st.a, st.b, nu, exact, SR)
                    np.testing.assert_allclose(got, want, rtol=1e-9)
                    checked += 1
        for (w, k), half in itertools.product(zip(*np.nonzero(nwk > 1)), (False, True)):
            c = int(nwk[w, k])
            own_n, own_t = nwk.copy(), twk.copy()
            if half:                               # two partitions: this one holds c - 1 customers, and t - 1
                own_n[w, k] = c - 1                # tables when t >= 2 (the other one holds one table)
                own_t[w, k] = max(twk[w, k] - 1, 0)
            to = int(twk[w, k] - own_t[w, k])
            wt = np.zeros(c + 2)
            tloc, Tc, troot, Troot, ot = twk.copy(), st.Tc.copy(), st.troot.copy(), st.Troot.copy(), own_t.copy()
            got = word_mult.word_table_redraw(w, 0, w, k, wt, st.a, st.b, beta0, SR, nwk, tloc, Tc, troot, Troot,
                                              own_n, ot, np.zeros(2, np.int64))
            lo, hi = max(0, 1 - to), int(own_n[w, k])
            assert got == (lo, hi)              # (small cells: no weight 1e-30 below the largest)
            want = []
            for v in range(lo, hi + 1):
                tv = twk.copy()
                tv[w, k] = to + v
                binom = math.log(math.comb(int(own_n[w, k]), v)) - math.log(math.comb(c, to + v)) if half else 0.0
                want.append(st.log_h(nwk, tv) + binom)
            want = np.exp(np.array(want) - max(want))
            np.testing.assert_allclose(wt[lo:hi + 1] / wt[lo:hi + 1].sum(), want / want.sum(), rtol=1e-9)
            redraws += 1
    assert checked == 2 * 3 * 5 * 3 and redraws > 10


def _states(docs, V, K, a, b, beta0):
    """Every legal (z, t) of pyp-lda on ``docs`` (t_wk in [1, n_wk] where n_wk > 0) with its log joint."""
    words = np.concatenate([d[0] for d in docs])
    lens = np.cumsum([0] + [len(d[0]) for d in docs])
    out = []
    for z in itertools.product(range(K), repeat=len(words)):
        z = np.array(z)
        nwk = np.zeros((V, K), np.int64)
        np.add.at(nwk, (words, z), 1)
        occ = list(zip(*np.nonzero(nwk)))
        for ts in itertools.product(*[range(1, nwk[c] + 1) for c in occ]):
            twk = np.zeros_like(nwk)
            for c, t in zip(occ, ts):
                twk[c] = t
            zd = [z[lens[d]:lens[d + 1]] for d in range(len(docs))]
            out.append((tuple(z), tuple(twk.ravel()), _log_joint(zd, words, nwk, twk, a, b, beta0, K)))
    return out


def _histogram(wrong, sweeps=40000):
    """The exact chain's visits (every 2nd cycle) of every legal (z, t) on two documents of one word, V = K = 2."""
    docs, V, K, a, b, beta0 = [[[0, 0, 0]], [[0, 0]]], 2, 2, 0.5, 1.0, 0.5
    states = _states(docs, V, K, a, b, beta0)
    z0 = np.arange(5) % 2
    st = State(docs, V, K, z0, np.array([[1, 1], [0, 0]]), beta0, a, b)
    index = {(zz, tt): r for r, (zz, tt, _) in enumerate(states)}
    obs = np.zeros(len(states))
    for it in range(sweeps):
        st.sweep(100 + it, True, wrong)
        if it % 2 == 0:
            key = (tuple(int(x) for x in st.z), tuple(int(x) for x in st.tloc.ravel()))
            assert key in index, f"the chain visited an illegal state {key}"
            obs[index[key]] += 1
    return states, obs


def test_exact_word_side_samples_the_enumerated_joint():
    """Two documents of one word (3 and 2 tokens), K = 2 (170 legal (z, t)), 40,000 cycles, every 2nd kept:
    chi-square p > 1e-3 against the normalised joint; the same run with the removal by t/c (the indicators'
    probability, wrong at a multiplicity cell) is rejected with p < 1e-10 (the table count's redraw after every token
    hides most of it: p 4e-5 on 20,000 cycles of two words)."""
    states, obs = _histogram(RIGHT)
    tv, pval = _chi_square(states, obs)
    assert pval > 1e-3, (len(states), tv, pval)
    states, obs = _histogram(WRONG_REMOVAL)
    assert _chi_square(states, obs)[1] < 1e-10


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "cmgs"])
def test_a_resumed_cycle_is_the_same_chain_and_tables_stay_legal(exact):
    """From a Stirling table of 4 x 4 (the kernel returns its position every time a cell outgrows it, the caller
    grows it and resumes without reseeding) the cycles equal those run on a table large from the start; the word
    side's totals stay the recount of (z, t), 1 <= t <= n in every occupied cell, and t moves."""
    docs, V, K, z, twk = _random_state(5, V=4, K=3, ndocs=10)
    runs = []
    for small in (True, False):
        st = State(docs, V, K, z, (twk > 0).astype(np.int64))
        st.stack = StirlingStack(st.avals, rows=4, cols=4) if small else StirlingStack(st.avals, rows=80, cols=80)
        st.mx[:] = 1                               # (the kernel raises it to the cells' largest c)
        for it in range(6):
            st.sweep(7 + it, exact)
            nwk = np.zeros((V, K), np.int64)
            np.add.at(nwk, (st.lay.words, st.z), 1)
            np.testing.assert_array_equal(st.nloc, nwk)
            np.testing.assert_array_equal(st.Nc[0], nwk.sum(axis=0))
            np.testing.assert_array_equal(st.Tc[0], st.tloc.sum(axis=0))
            np.testing.assert_array_equal(st.troot[:, 0], st.tloc.sum(axis=1))
            assert st.Troot[0] == st.tloc.sum() and np.array_equal(st.own_t, st.tloc)
            assert np.all(st.tloc <= nwk) and np.all((nwk == 0) | (st.tloc >= 1))
        runs.append((st.z.copy(), st.tloc.copy()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert (runs[0][1] > 1).any()


@pytest.mark.parametrize("sampler", ["cmgs", "exact"])
def test_two_partitions_tables_stay_the_recount_and_own_tables_legal(sampler):
    """pyp-lda.json under cmgs / exact on two partitions (the engine's hooks, no Spark), 6 synchronisations: each
    partition's private copy moved by its own changes only, every t^p <= n^p, the summed t <= n with t = 0 < n only
    in rare races, and the word side's a and b move."""
    from drivers.models.pdp_network.model import PdpNetwork
    from inference.gibbs.block import SegmentedBlock
    from inference.gibbs.tables import merge

    rng = np.random.default_rng(7)
    V, K = 9, 3
    docs = [(f"d{i:02d}", [list(rng.integers(0, V, rng.integers(2, 12)))]) for i in range(16)]
    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network="pyp-lda", sampler=sampler)
    assert hyper["word_pyp"]["multiplicity"] == sampler
    blocks = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    states = [model.initial_state(blk, hyper, 5 + p) for p, blk in enumerate(blocks)]

    def summed():
        parts = [model.table_counts(blk, st, np.unique(blk.words, return_inverse=True))
                 for blk, st in zip(blocks, states)]
        return {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}
    races = occupied = 0
    for it in range(6):
        tables = summed()
        race = (tables["nwk"] > 0) & (tables[words_pyp.TABLE] == 0)
        after, read = [], []
        for p, (blk, st) in enumerate(zip(blocks, states)):
            own = {name: np.array(tab, copy=True) for name, tab in tables.items()}
            vocab, uidx = np.unique(blk.words, return_inverse=True)
            held = np.zeros_like(race)
            held[vocab] = words_pyp.own_customers(uidx.reshape(-1), st["z"], len(vocab), K) == 0
            read.append((race & held).astype(np.int64))
            model.sweep_tables(blk, st, hyper, own, model.derive(own), 100 * it + p)
            after.append(own)
            n_own = words_pyp.own_customers(uidx.reshape(-1), st["z"], len(vocab), K)
            assert np.all(st["word_t"] >= 0) and np.all(st["word_t"] <= n_own)
        new = summed()
        for name in ("nwk", words_pyp.TABLE):
            delta = sum(own[name].astype(np.int64) - tables[name] - (r if name == words_pyp.TABLE else 0)
                        for own, r in zip(after, read))
            np.testing.assert_array_equal(tables[name] + delta, new[name], err_msg=name)
        n, t = new["nwk"], new[words_pyp.TABLE]
        assert np.all(t <= n)
        races += int(((n > 0) & (t == 0)).sum())
        occupied += int((n > 0).sum())
        hyper = model.global_step(new, hyper, model.partition_stats(blocks[0], states[0], hyper, it), it)[1]
    assert races <= occupied // 20, (races, occupied)
    assert hyper["a_values"]["phi.a"] != 0.5 and hyper["b_values"]["phi.b"] != 10.0


def test_other_pitman_yor_word_sides_are_refused_under_cmgs():
    """pyp-lda-2.json (a chain of word vectors) under cmgs is refused in one line naming the node; a Pitman-Yor
    topic vector beside pyp-lda's word side (stm's segments) is refused by the engine."""
    from drivers.models.pdp_network.model import PdpNetwork

    with pytest.raises(UsageError, match="node 'nu': sampler 'cmgs' runs a Pitman-Yor word side of pyp-lda's shape"):
        parse_network(dict(json.loads((SHIPPED / "pyp-lda-2.json").read_text()), sampler="cmgs"))
    raw = json.loads((SHIPPED / "pyp-lda.json").read_text())
    seg = {"index": ["segment"], "over": "topic", "pyp": {"a": 0.2, "b": 1.0},
           "parents": [{"node": "theta", "index": ["document"]}]}
    spec = dict(raw, sampler="exact", nodes=dict(raw["nodes"], seg=seg), topic={"node": "seg", "index": ["segment"]})
    with pytest.raises(UsageError, match="node 'seg': a Pitman-Yor word side under \"sampler\": \"exact\" runs beside Dirichlet"):
        words_pyp.word_side(parse_network(spec))
    assert PdpNetwork(3, 8).initial_hyper(network="pyp-lda", sampler="cmgs")["word_pyp"]["multiplicity"] == "cmgs"
