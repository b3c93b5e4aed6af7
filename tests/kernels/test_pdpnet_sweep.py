"""The network sweep's all-topics rows (issue 28, 1: the fast path, with the Stirling ratio tables) against the
scalar Z^+ recursion of :func:`inference.pdpnet.kernels.eval_zplus` (exp of log Stirling differences), on states
visited by the sampler, and the counts kernel against a recount with numpy."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels, sweep
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, rebuild_counts
from inference.pdpnet.spec import parse_network
from tests.kernels.test_pdpnet_sampler import TINY_ADATM, TINY_HDP

STM = {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.4},
                 "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": 0.25, "b": 2.0},
                         "parents": [{"node": "doc", "index": ["document"]}]},
                 "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.1}},
       "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}


def _docs(rng, D=5, V=6):
    return [[list(rng.integers(0, V, rng.integers(1, 7))) for _ in range(rng.integers(1, 4))] for _ in range(D)], V


@pytest.mark.parametrize("spec", [TINY_ADATM, TINY_HDP, STM], ids=["adatm", "hdp", "stm"])
def test_topic_rows_equal_the_scalar_recursion(spec):
    rng = np.random.default_rng(5)
    docs, V = _docs(rng)
    K = 4
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), K)
    sm = NetworkSampler(net, seed=3)
    J = net.num_nodes
    Zb = np.zeros((J, K))
    slot = np.zeros(J, np.int64)
    Z = np.zeros(J)
    terms = np.zeros(4)
    checked = 0
    for _ in range(6):
        sm.sweep()
        sm.stirling.ensure(sm.mx[0] + 2, sm.mx[1] + 2)
        args = (net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
                net.gamma_sum, sm.avals, sm.bvals, sm.stirling.L3, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
        RJ, RO = sweep.ratio_tables(sm.stirling.L3)
        fast = args[:12] + (RJ, RO) + args[13:]
        for jt in np.unique(net.topic_inst):
            r = sweep.topic_zplus_rows(jt, K, Zb, slot, sm.anc_ptr, sm.anc, *fast)
            row = Zb[r].copy()
            if net.kind[jt] == KIND_DIRICHLET:      # left unnormalised: (alpha + c_k)
                row /= net.alpha[jt] * K + sm.Nn[jt] + sm.TC[jt]
            want = [kernels.eval_zplus(jt, k, Z, terms, sm.anc_ptr, sm.anc, *args) for k in range(K)]
            np.testing.assert_allclose(row, want, rtol=1e-12)
            checked += 1
    assert checked >= 30


def test_count_kernel_equals_a_numpy_recount():
    rng = np.random.default_rng(8)
    docs, V = _docs(rng)
    net = compile_network(parse_network(TINY_ADATM), CorpusLayout.of(docs, V), 3)
    sm = NetworkSampler(net, seed=1)
    for _ in range(4):
        sm.sweep()
    cnt = rebuild_counts(net, sm.z, sm.s)
    for name in ("n", "tc", "tp", "Nn", "TC", "TP", "Se"):
        assert np.array_equal(cnt[name], getattr(sm, name)), name
    assert sm.s.sum() > 0
    pyp = np.repeat(net.kind == KIND_PYP, net.dim)        # the Stirling table's cells
    c = (sm.n + sm.tc)[pyp]
    assert list(cnt["mx"]) == [c.max(), sm.tp[pyp].max()]


def _direct_means(net, cnt, avals, bvals):
    """(7.12) vector by vector with numpy (the reference of the numba kernel)."""
    out = np.zeros(net.num_cells)
    c_all = (cnt["n"] + cnt["tc"]).astype(np.float64)
    for j in range(net.num_nodes):
        lo, hi = net.off[j], net.off[j + 1]
        C = float(cnt["Nn"][j] + cnt["TC"][j])
        if net.kind[j] == KIND_PYP:
            a, b, T = avals[net.a_of[j]], bvals[net.b_of[j]], float(cnt["TP"][j])
            rho = [(net.par_gamma[e] + cnt["Se"][e]) / (net.gamma_sum[j] + T) for e in
                   range(net.par_ptr[j], net.par_ptr[j + 1])]
            mix = sum(r * out[net.off[q]:net.off[q + 1]] for r, q in
                      zip(rho, net.par_node[net.par_ptr[j]:net.par_ptr[j + 1]]))
            out[lo:hi] = ((c_all[lo:hi] - a * cnt["tp"][lo:hi]) + (b + a * T) * mix) / (b + C)
        elif net.dim[j] > 0 and net.alpha[j] > 0:
            out[lo:hi] = (net.alpha[j] + c_all[lo:hi]) / (net.alpha[j] * net.dim[j] + C)
        else:
            out[lo:hi] = 1.0 / net.dim[j]
    return out


@pytest.mark.parametrize("spec", [TINY_ADATM, TINY_HDP, STM], ids=["adatm", "hdp", "stm"])
def test_posterior_means_kernel_equals_numpy(spec):
    """The numba posterior means (thesis (7.12), every vector, parents first) equal numpy's, and every vector's
    mean sums to one."""
    from inference.pdpnet.sampler import posterior_means

    rng = np.random.default_rng(4)
    docs, V = _docs(rng)
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), 3)
    sm = NetworkSampler(net, seed=2)
    for _ in range(3):
        sm.sweep()
        cnt = rebuild_counts(net, sm.z, sm.s)
        got = posterior_means(net, cnt, sm.avals, sm.bvals)
        np.testing.assert_allclose(got, _direct_means(net, cnt, sm.avals, sm.bvals), rtol=1e-14, atol=0)
        sums = np.add.reduceat(got, net.off[:-1])
        np.testing.assert_allclose(sums[net.dim > 0], 1.0, rtol=1e-12)


@pytest.mark.parametrize("frozen", [False, True], ids=["engine-table", "frozen-phi"])
def test_pyp_over_root_row_is_the_rows_times_the_word_factor(frozen):
    """The one-loop path of a Pitman-Yor topic vector over a Dirichlet root (stm.json) equals, bit for bit,
    :func:`sweep.topic_zplus_rows` times the engine's word factor (n_wk + beta) / (n_k + V beta) or the frozen
    phi, and leaves the same rows in Zb."""
    rng = np.random.default_rng(6)
    docs, V = _docs(rng)
    K = 4
    net = compile_network(parse_network(STM), CorpusLayout.of(docs, V), K)
    sm = NetworkSampler(net, seed=5)
    J = net.num_nodes
    Zb, Zb2 = np.zeros((J, K)), np.zeros((J, K))
    slot, slot2 = np.zeros(J, np.int64), np.zeros(J, np.int64)
    cum = np.zeros(K)
    nwk = rng.integers(0, 5, (V, K)).astype(np.int32)
    beta = 0.1
    inv = 1.0 / (nwk.sum(axis=0) + V * beta)
    phi = rng.dirichlet(np.ones(K), V)
    checked = 0
    for _ in range(4):
        sm.sweep()
        sm.stirling.ensure(sm.mx[0] + 2, sm.mx[1] + 2)
        RJ, RO = sweep.ratio_tables(sm.stirling.L3)
        args = (net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
                net.gamma_sum, sm.avals, sm.bvals, RJ, RO, sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
        for jt in np.unique(net.topic_inst):
            assert net.kind[jt] == KIND_PYP
            for w in range(V):
                total = sweep.pyp_over_root_row(jt, w, K, Zb, slot, cum, *args, nwk, inv, beta, phi, frozen)
                r = sweep.topic_zplus_rows(jt, K, Zb2, slot2, sm.anc_ptr, sm.anc, *args)
                want = np.cumsum(Zb2[r] * phi[w] if frozen else Zb2[r] * (nwk[w] + beta) * inv)
                assert np.array_equal(cum, want) and total == want[-1]
                for x in sm.anc[sm.anc_ptr[jt]:sm.anc_ptr[jt + 1]]:
                    assert np.array_equal(Zb[slot[x]], Zb2[slot2[x]])
                checked += 1
    assert checked >= 40


@pytest.mark.parametrize("spec", [TINY_ADATM, TINY_HDP, STM], ids=["adatm", "hdp", "stm"])
def test_ratio_table_moves_are_the_log_stirling_moves_bit_for_bit(spec):
    """:mod:`inference.pdpnet.ratio_path` (the sweeps' increment moves, from ratio tables) against
    :mod:`inference.pdpnet.kernels` (exp of log Stirling differences): every cell's node terms and Z^+ equal bit
    for bit, and from the same seed the path draws leave the same counts and attributions."""
    import numba

    from inference.pdpnet import ratio_path

    @numba.njit
    def seed(x):
        np.random.seed(x)

    rng = np.random.default_rng(9)
    docs, V = _docs(rng)
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), 3)
    sm = NetworkSampler(net, seed=4)
    J = net.num_nodes
    checked = 0
    for sweep_no in range(4):
        sm.sweep()
        sm.stirling.ensure(sm.mx[0] + 3, sm.mx[1] + 3)
        L3 = sm.stirling.L3
        RJ, _ = sweep.ratio_tables(L3)
        EO = ratio_path.open_exp_table(L3)
        head = (net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
                net.par_gamma, net.gamma_sum, sm.avals, sm.bvals)
        for j in range(J):
            for v in range(net.dim[j]):
                Z1, Z2, t1, t2 = np.zeros(J), np.zeros(J), np.zeros(8), np.zeros(8)
                counts = (sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.Se)
                z1 = kernels.eval_zplus(j, v, Z1, t1, sm.anc_ptr, sm.anc, *head, L3, *counts)
                z2 = ratio_path.eval_zplus_r(j, v, Z2, t2, sm.anc_ptr, sm.anc, *head, RJ, EO, *counts)
                assert z1 == z2 and np.array_equal(Z1, Z2) and np.array_equal(t1, t2), (j, v)
                outs = []
                for fn, tables in ((kernels.add_path, (L3,)), (ratio_path.add_path_r, (RJ, EO))):
                    c = [np.array(x, copy=True) for x in (sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP)]
                    s_, Se, mx = sm.s.copy(), sm.Se.copy(), sm.mx.copy()
                    seed(100 * sweep_no + j)
                    fn(j, v, True, Z1.copy(), np.zeros(8), *head, *tables, *c, s_, Se, net.eoff, mx)
                    outs.append(c + [s_, Se, mx])
                assert all(np.array_equal(a, b) for a, b in zip(*outs)), (j, v)
                checked += 1
    assert checked >= 100


@pytest.mark.parametrize("spec", [TINY_ADATM, TINY_HDP], ids=["adatm", "hdp"])
def test_forced_draws_take_no_random_number(spec):
    """Issue 28: a removal from a Pitman-Yor cell whose customers all hold tables at one parent, and a seating at
    an empty cell of a one-parent vector, use no random number (the next draw is the one the seed gives first);
    a removal with t < c, or with tables at two parents, and a seating at an occupied cell do use one."""
    import numba

    @numba.njit
    def seeded_next(x):
        np.random.seed(x)
        return np.random.random()

    @numba.njit
    def next_draw():
        return np.random.random()

    @numba.njit
    def seed(x):
        np.random.seed(x)

    rng = np.random.default_rng(5)
    docs, V = _docs(rng)
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), 3)
    sm = NetworkSampler(net, seed=2)
    seen = {"removal forced": 0, "removal drawn": 0, "seat forced": 0, "seat drawn": 0}
    for _ in range(3):
        sm.sweep()
        for j in np.flatnonzero(net.kind == KIND_PYP):
            e0, e1 = net.par_ptr[j], net.par_ptr[j + 1]
            for v in range(net.dim[j]):
                cell = net.off[j] + v
                c, t = sm.n[cell] + sm.tc[cell], sm.tp[cell]
                at = [sm.s[net.eoff[e] + v] for e in range(e0, e1)]
                state = [np.array(x, copy=True) for x in (sm.n, sm.tc, sm.tp, sm.Nn, sm.TC, sm.TP, sm.s, sm.Se,
                                                          sm.mx)]
                n, tc, tp, Nn, TC, TP, s_, Se, mx = state
                first = seeded_next(7)
                seed(7)
                if c > 0:
                    kernels.remove_path(j, v, sm.n[cell] > 0, np.empty(net.num_nodes + 1, np.int64),
                                        np.empty(net.num_nodes + 1, np.int64), net.kind, net.off, net.par_ptr,
                                        net.par_node, n, tc, tp, Nn, TC, TP, s_, Se, net.eoff, mx)
                    # the removal's first node draws unless t = c with every table at one parent; a parent it
                    # reaches may draw too, so only the forced case at a root parent is exact here
                    forced = t == c and max(at) == t
                    up_is_root = all(net.kind[net.par_node[e]] != KIND_PYP for e in range(e0, e1))
                    if forced and up_is_root:
                        assert next_draw() == first, (j, v)
                        seen["removal forced"] += 1
                    elif not forced:
                        assert next_draw() != first, (j, v)
                        seen["removal drawn"] += 1
                terms = np.array([0.0 if c == 0 else 0.5] + [0.25] * (e1 - e0) + [0.0] * 4)
                seed(7)
                n, tc, tp, Nn, TC, TP, s_, Se, mx = [np.array(x, copy=True) for x in state]
                if c == 0:
                    n[cell] = tc[cell] = tp[cell] = 0
                kernels.seat_at_node(j, v, cell, False, terms, terms.sum(), net.par_ptr, net.par_node, n, tc, tp,
                                     Nn, TC, TP, s_, Se, net.eoff, mx)
                one = c == 0 and e1 - e0 == 1
                assert (next_draw() == first) == one, (j, v)
                seen["seat forced" if one else "seat drawn"] += 1
    assert min(seen.values()) > 0, seen
