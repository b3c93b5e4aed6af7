"""Shared Pitman-Yor topic vectors on the Gibbs engine (issue 28; :mod:`inference.pdpnet.owned`): with one
partition the owned sweep is the network sampler's sweep on the engine's word table, draw for draw; split over two
"partitions" (the others' counts fixed between synchronisations), every partition's own indicators stay within its
own customers and the global tables are the sum of the own."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels, sweep
from inference.pdpnet.compile import KIND_PYP, CorpusLayout, compile_network
from inference.pdpnet.owned import owned_sweep
from inference.pdpnet.ratio_path import open_exp_table
from inference.pdpnet.sampler import StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network

V, K = 7, 3
HDP_PYP = {"name": "hdp-pyp",
           "nodes": {"base": {"index": ["corpus"], "over": "topic", "dirichlet": 0.5},
                     "corpus": {"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
                                "parents": [{"node": "base", "index": ["corpus"]}]},
                     "theta": {"index": ["document"], "over": "topic", "dp": {"b": 1.0},
                               "parents": [{"node": "corpus", "index": ["corpus"]}]},
                     "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.1}},
           "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


#: tokens drawn from the shared vector itself (no document vector)
PYP_TOPICS = dict(HDP_PYP, name="pyp-topics", topic={"node": "corpus", "index": ["corpus"]},
                  nodes={k: v for k, v in HDP_PYP["nodes"].items() if k != "theta"})

#: the corpus vector over a rho-mixture of two corpus-level roots (several parents)
TWO_PARENTS = dict(HDP_PYP, name="two-parents", nodes=dict(
    HDP_PYP["nodes"], base2={"index": ["corpus"], "over": "topic", "dirichlet": 0.2},
    corpus={"index": ["corpus"], "over": "topic", "pyp": {"a": 0.3, "b": 1.5},
            "parents": [{"node": "base", "index": ["corpus"], "gamma": 1.0},
                        {"node": "base2", "index": ["corpus"], "gamma": 0.5}]}))

#: the corpus vector's parent with an ``if_missing`` fallback (a second root reached only through it): a reference
#: from a corpus- or column-indexed vector always has a value (a document without a column's value has the value
#: "", a vector of its own), so the fallback never applies and the graph is HDP_PYP's
IF_MISSING = dict(HDP_PYP, name="if-missing", nodes=dict(
    HDP_PYP["nodes"], base2={"index": ["corpus"], "over": "topic", "dirichlet": 0.2},
    corpus=dict(HDP_PYP["nodes"]["corpus"], parents=[{"node": "base", "index": ["corpus"],
                                                      "if_missing": {"node": "base2", "index": ["corpus"]}}])))


def _corpus(seed, docs=8):
    rng = np.random.default_rng(seed)
    return [[list(rng.integers(0, V, rng.integers(2, 9)))] for _ in range(docs)]


def _start(docs, spec=HDP_PYP, seed=0):
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), K, word_side=False)
    z = np.random.default_rng(seed).integers(0, K, len(net.words)).astype(np.int64)
    s = np.zeros(int(net.eoff[-1]), np.int64)
    cnt = rebuild_counts(net, np.zeros(0, np.int64), s, word_side=False)
    nwk, nk = np.zeros((V, K), np.int32), np.zeros(K, np.int64)
    _network(net, z, s, cnt, nwk, nk, 1, init=True)
    return net, z, s, cnt, nwk, nk


def _network(net, z, s, cnt, nwk, nk, seed, init=False):
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    st = StirlingStack(net.a_values)
    pos, reseed = 0, True
    while pos >= 0:
        st.ensure(cnt["mx"][0], cnt["mx"][1])
        pos = sweep.network_sweep(pos, reseed, seed, True, net.words, z, net.topic_inst, net.word_inst, anc_ptr, anc,
                                  net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr,
                                  net.par_node, net.par_gamma, net.gamma_sum, net.a_values, net.b_values, st.L3,
                                  cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"],
                                  net.eoff, cnt["mx"], init, True, nwk, nk, 0.1, np.zeros((1, 1)), False, np.zeros(0))
        reseed = False


def _owned(net, z, s, cnt, nwk, nk, seed, own_c, own_t):
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    shared = (net.kind == KIND_PYP) & (net.family == list(net.spec.order).index("corpus"))
    st = StirlingStack(net.a_values)
    pos, reseed = 0, True
    while pos >= 0:
        st.ensure(cnt["mx"][0], cnt["mx"][1])
        pos = owned_sweep(pos, reseed, seed, net.words, z, net.topic_inst, anc_ptr, anc, net.kind, net.dim, net.off,
                          net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
                          net.a_values, net.b_values, *sweep.ratio_tables(st.L3), open_exp_table(st.L3), cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                          cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"], nwk, nk, 0.1, np.zeros((1, 1)), False, shared,
                          own_c, own_t)
        reseed = False
    return shared


@pytest.mark.parametrize("seed,spec", [(0, HDP_PYP), (1, HDP_PYP), (2, HDP_PYP), (3, PYP_TOPICS), (4, PYP_TOPICS),
                                       (5, TWO_PARENTS), (6, TWO_PARENTS), (7, IF_MISSING)])
def test_one_partition_is_the_network_sweep_draw_for_draw(seed, spec):
    docs = _corpus(seed)
    a = _start(docs, spec)
    b = tuple(x.copy() if isinstance(x, np.ndarray) else {k: v.copy() for k, v in x.items()} for x in a[1:])
    for it in range(4):
        _network(a[0], *a[1:], seed=10 + it)
        _owned(a[0], *b, seed=10 + it, own_c=b[2]["tc"].copy(), own_t=b[2]["tp"].copy())
        np.testing.assert_array_equal(a[1], b[0])
        np.testing.assert_array_equal(a[2], b[1])
    assert a[2].sum() > 0


def test_an_if_missing_parent_of_a_shared_vector_never_applies():
    """IF_MISSING compiles to HDP_PYP's graph (its fallback root has no vector): the engine runs it as HDP_PYP."""
    docs = _corpus(7)
    a, b = (compile_network(parse_network(spec), CorpusLayout.of(docs, V), K, word_side=False)
            for spec in (HDP_PYP, IF_MISSING))
    for name in ("kind", "off", "par_ptr", "par_node", "par_gamma", "topic_inst"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.any(b.family == list(b.spec.order).index("base2"))


def _engine_rounds(docs, rounds, parts=2, race=False):
    """AD-LDA over ``parts`` partitions in process, as the engine runs it: every partition's counts are its own
    (z, s) with the shared vectors' rows the sums of every partition's own (``network_tc``/``network_tp``);
    returns per round the global (c, t) of the corpus vector and the partitions' own (c, t)."""
    order = list(parse_network(HDP_PYP).order)
    states = [_start(docs[p::parts], seed=p) for p in range(parts)]
    nwk = sum(st[4] for st in states)
    out = []
    for it in range(rounds):
        owns = []
        for net, z, s, *_ in states:
            cnt = rebuild_counts(net, z, s, word_side=False)
            j = {order[f]: int(np.flatnonzero(net.family == f)[0]) for f in range(len(order)) if f < 3}
            owns.append((cnt, j))
        c = sum(cnt["tc"][net.off[j["corpus"]]:net.off[j["corpus"] + 1]] for (cnt, j), (net, *_) in zip(owns, states))
        t = sum(cnt["tp"][net.off[j["corpus"]]:net.off[j["corpus"] + 1]] for (cnt, j), (net, *_) in zip(owns, states))
        if race and it == 0:            # every partition's corpus tables of topic 0 gone at once
            t = t.copy()
            t[0] = 0
            for (cnt, j), (net, z, s, *_) in zip(owns, states):
                e = net.par_ptr[j["corpus"]]
                s[net.eoff[e]] = 0
                cnt.update(rebuild_counts(net, z, s, word_side=False))
        out.append((c.copy(), t.copy(), [(cnt["tc"][net.off[j["corpus"]]:net.off[j["corpus"] + 1]].copy(),
                                          cnt["tp"][net.off[j["corpus"]]:net.off[j["corpus"] + 1]].copy())
                                         for (cnt, j), (net, *_) in zip(owns, states)]))
        base_c = sum(cnt["tc"][net.off[j["base"]]:net.off[j["base"] + 1]] for (cnt, j), (net, *_) in zip(owns, states))
        nwk_all = nwk.copy()
        for (cnt, j), (net, z, s, _, _, _) in zip(owns, states):
            jc, jb = j["corpus"], j["base"]
            own_c, own_t = cnt["tc"].copy(), cnt["tp"].copy()
            cnt["tc"][net.off[jc]:net.off[jc + 1]] = c
            cnt["tp"][net.off[jc]:net.off[jc + 1]] = t
            cnt["tc"][net.off[jb]:net.off[jb + 1]] = base_c
            for x in (jc, jb):
                cnt["TC"][x] = cnt["tc"][net.off[x]:net.off[x + 1]].sum()
            cnt["TP"][jc] = t.sum()
            cnt["Se"][net.par_ptr[jc]] = t.sum()
            cnt["mx"][0], cnt["mx"][1] = max(cnt["mx"][0], c.max()), max(cnt["mx"][1], t.max())
            mine = nwk_all.copy()
            before = mine.copy()
            _owned(net, z, s, cnt, mine, mine.sum(axis=0).astype(np.int64), 100 * it + len(owns), own_c, own_t)
            nwk += mine - before
    return out


def test_two_partitions_own_their_indicators_and_the_global_tables_are_their_sums():
    rounds = _engine_rounds(_corpus(5, docs=16), 6)
    for c, t, own in rounds:
        assert np.array_equal(c, sum(oc for oc, _ in own)) and np.array_equal(t, sum(ot for _, ot in own))
        assert all(np.all(ot <= oc) for oc, ot in own) and np.all(t <= c)
    assert rounds[-1][1].sum() > 0 and any((oc > ot).any() for oc, ot in rounds[-1][2])


def test_a_race_that_took_a_cells_last_tables_is_repaired_before_the_sweep():
    rounds = _engine_rounds(_corpus(6, docs=16), 2, race=True)
    c0, t0, _ = rounds[0]
    assert c0[0] > 0 and t0[0] == 0                    # the race: customers of topic 0, no table
    c1, t1, own = rounds[1]
    assert t1[0] >= 1 and all(ot[0] >= 1 for oc, ot in own if oc[0] > 0) and np.all(t1 <= c1)


def test_a_repaired_table_of_a_vector_with_two_parents_goes_to_a_parent_by_its_open_terms():
    """:func:`inference.pdpnet.owned.draw_parent` (the race repair's parent edge): 20,000 draws at every topic
    against (gamma_e + S_e) Z^+_parent(v), within 4 standard errors."""
    import numba

    from inference.pdpnet.owned import draw_parent
    from inference.pdpnet.ratio_path import eval_zplus_r
    from inference.pdpnet.rho import rho_num

    net, z, s, cnt, nwk, nk = _start(_corpus(9), TWO_PARENTS)
    _network(net, z, s, cnt, nwk, nk, 3)
    anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
    st = StirlingStack(net.a_values)
    st.ensure(cnt["mx"][0] + 2, cnt["mx"][1] + 2)
    RJ, _ = sweep.ratio_tables(st.L3)
    EO = open_exp_table(st.L3)
    x = int(np.flatnonzero(net.family == list(net.spec.order).index("corpus"))[0])
    edges = range(net.par_ptr[x], net.par_ptr[x + 1])
    args = (anc_ptr, anc, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
            net.par_gamma, net.gamma_sum, net.a_values, net.b_values, RJ, EO, cnt["n"], cnt["tc"], cnt["tp"],
            cnt["Nn"], cnt["TC"], cnt["TP"], cnt["Se"])
    numba.njit(lambda sd: np.random.seed(sd))(4)
    Z, terms = np.zeros(net.num_nodes), np.zeros(4)
    assert len(edges) == 2 and min(cnt["Se"][e] for e in edges) > 0
    for v in range(K):
        w = np.array([rho_num(net.par_gamma[e], cnt["Se"][e], net.gamma_sum[x])
                      * eval_zplus_r(net.par_node[e], v, Z, terms, *args) for e in edges])
        draws = np.array([draw_parent(x, v, Z, terms, *args) for _ in range(20000)])
        p = w[0] / w.sum()
        got = np.mean(draws == edges[0])
        assert set(draws.tolist()) <= set(edges) and abs(got - p) < 4 * np.sqrt(p * (1 - p) / 20000), (v, got, p)
