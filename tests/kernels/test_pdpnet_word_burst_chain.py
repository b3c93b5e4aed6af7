"""hca's full burstiness on the Gibbs engine (issue 28, :mod:`drivers.models.pdp_network.words_burst_chain`):
burst[topic, document] ~ PYP over a Pitman-Yor phi[topic] over a corpus-level Dirichlet root or the uniform. One
engine partition's sweeps against the network's joint enumerated over every legal state (a wrong count at either
level fails it); the bookkeeping: ``nwk`` phi's customers (the burst tables summed), the recount of the kept state
equals the sweeps' running copies, 0 < t <= n at every level; the driver's steps from the histogram."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import words_burst, words_burst_chain, words_chain, words_pyp
from inference.errors import UsageError
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network
from pdp_hooks import one_block, spec_model
from tests.kernels.test_pdpnet_word_burst import _summed, burst_spec, swept_burst


def chain_spec(root="dirichlet", sample=False, levels=0):
    """burst[topic, document] PYP over phi[topic] PYP over ``root`` (a corpus Dirichlet or the uniform), with
    ``levels`` corpus-level Pitman-Yor vectors between."""
    spec = burst_spec(sample=sample)
    spec["nodes"]["base"] = {"index": ["corpus"], "over": "word",
                             **({"dirichlet": 0.4} if root == "dirichlet" else {"uniform": True})}
    above = "base"
    for lv in range(levels):
        spec["nodes"][f"nu{lv}"] = {"index": ["corpus"], "over": "word", "pyp": {"a": 0.2, "b": 3.0},
                                    "parents": [{"node": above, "index": ["corpus"]}]}
        above = f"nu{lv}"
    spec["nodes"]["phi"] = {"index": ["topic"], "over": "word",
                            "pyp": {"a": {"value": 0.4, "sample": sample}, "b": {"value": 2.0, "sample": sample}},
                            "parents": [{"node": above, "index": ["corpus"]}]}
    return spec


def _edge(net, inst, w):
    """The index in s of instance ``inst``'s (first) parent edge at word ``w``, and the parent instance."""
    e = net.par_ptr[inst]
    return net.eoff[e] + w, net.par_node[e]


def _network_state(net, sm, model, block, L):
    """The engine partition's state (z, the burst cells' ``word_bt``, phi's ``word_t``, the corpus level's
    ``word_up``) from the in-process network sampler's (z, s)."""
    pairs, uidx = words_burst.local_pairs(model, block)
    vocab = model._local_vocab(block)[0]
    K = net.word_inst.shape[1]
    bt, t, up = (np.zeros((n, m), np.int32) for n, m in ((len(pairs), K), (len(vocab), K), (len(vocab), L)))
    for i, (u, w) in enumerate(zip(uidx, block.words)):
        v = np.searchsorted(vocab, w)
        for k in range(K):
            at, phi = _edge(net, net.word_inst[i, k], w)
            bt[u, k] = sm.s[at]
            at, nu = _edge(net, phi, w)
            t[v, k] = sm.s[at]
            if L:
                up[v, 0] = sm.s[_edge(net, nu, w)[0]]
    return {"z": sm.z.astype(np.int32), "s": np.zeros(0, np.int64), "word_bt": bt, "word_t": t,
            **({"word_up": up} if L else {})}


@pytest.mark.parametrize("root, levels", [("dirichlet", 0), ("uniform", 0), ("dirichlet", 1)])
def test_one_engine_partition_is_the_network_sampler_draw_for_draw(tmp_path, root, levels):
    """One engine partition's sweep (``sweep_tables``: the [topic, column] kernel with the document as the value)
    from the in-process network sampler's state, with its seed, is its sweep draw for draw: the same z, burst
    cells, phi's and the corpus level's indicators after every sweep (over a Dirichlet root, the uniform, a
    corpus-level Pitman-Yor vector between)."""
    from inference.pdpnet.sampler import NetworkSampler

    V, K = 7, 3
    rng = np.random.default_rng(5)
    docs = [list(rng.integers(0, V, rng.integers(3, 12))) for _ in range(6)]
    spec = chain_spec(root, levels=levels)
    model, hyper = spec_model(tmp_path, spec, K, V)
    block = one_block(docs)
    net = compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V), K)
    sm = NetworkSampler(net, seed=2)
    state = _network_state(net, sm, model, block, levels)
    tables = _summed(model, block, state)
    derived = model.derive(tables)
    moved = 0
    for _ in range(5):
        before = state["z"].copy()
        model.sweep_tables(block, state, hyper, tables, derived, sm._seed(sm.iteration + 1, 1))
        sm.sweep()
        for name, want in _network_state(net, sm, model, block, levels).items():
            np.testing.assert_array_equal(state[name], want, err_msg=name)
        moved += int((before != state["z"]).sum())
    assert moved > 20 and (state["word_t"] < tables["nwk"][model._local_vocab(block)[0]]).any()


ITERATIONS = 6000


def test_one_engine_partition_samples_the_networks_joint(tmp_path, root="dirichlet"):
    """(A check beside the draw-for-draw test above, whose reference sampler is tested against enumerations.) One
    engine partition (``sweep_tables`` on the local copies a single partition's synchronisations leave)
    visits every (z, t) of a tiny hca-burst network with the frequencies of the network's corrected joint (E12)
    enumerated over all legal states (tests/kernels/pdpnet_reference.py): chi-square p > 1e-3, total variation
    < 0.06; the literal (E12) is told apart. A burst cell's own indicators are the table count s of its edge to
    phi_k, phi's the count of phi_k's edge to the root."""
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    V, K = 2, 2
    docs = [[0, 1, 0], [1]]
    spec = chain_spec(root)
    model, hyper = spec_model(tmp_path, spec, K, V)
    block = one_block(docs)
    state = model.initial_state(block, hyper, 3)
    tables = _summed(model, block, state)
    derived = model.derive(tables)
    net = compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V), K)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    pairs, uidx = words_burst.local_pairs(model, block)
    vocab = model._local_vocab(block)[0]
    obs, shared, pword = np.zeros(len(states)), 0, np.searchsorted(vocab, pairs % V)
    for it in range(ITERATIONS):
        model.sweep_tables(block, state, hyper, tables, derived, 1000 + it)
        s = np.zeros(int(net.eoff[-1]), np.int64)
        for i, (u, w) in enumerate(zip(uidx, block.words)):
            for k in range(K):
                at, phi = _edge(net, net.word_inst[i, k], w)
                s[at] = state["word_bt"][u, k]
                s[_edge(net, phi, w)[0]] = state["word_t"][np.searchsorted(vocab, w), k]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in s))]] += 1
        shared += (state["word_t"] < words_burst_chain.phi_customers(pword, state["word_bt"], len(vocab))).any()
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3, (len(states), tv, pval)
    assert shared > 100 and len(states) > 40       # phi's tables vary, not only z and the burst cells'
    tv_lit, pval_lit = _chi_square(enumerate_states(net, literal=True), obs)
    assert tv_lit > 0.1 and pval_lit < 1e-6, (tv_lit, pval_lit)
    recount = _summed(model, block, state)      # the running copies are the recount of the kept state
    for name in ("nwk", words_pyp.TABLE):
        np.testing.assert_array_equal(recount[name], tables[name])


def test_sweeps_keep_every_level_legal_and_the_steps_read_the_histogram(tmp_path):
    """After sweeps with a corpus-level Pitman-Yor vector between phi and the root: ``nwk`` is the burst tables
    summed, 0 < t <= n at the burst cells, phi's and the corpus level's; the likelihood is the burst cells' part
    (pyp-lda's cells_loglik on the cells themselves) plus words_chain's over phi; the a and b steps move every
    level's parameters."""
    V, K = 8, 3
    run = swept_burst(tmp_path, chain_spec(sample=True, levels=1), V, K)
    docs, model, hyper, state = run.docs, run.model, run.hyper, run.state
    tables, pairs, n = run.tables, run.pairs, run.n
    side = hyper["word_pyp"]
    assert side["bottom"][:2] == ["burst.a", "burst.b"] and side["a"] == "phi.a" and len(side["chain"]) == 1
    t = np.asarray(state["word_bt"], np.int64)
    assert np.all((t <= n) & ((t > 0) == (n > 0))) and (t < n).any()
    twk = np.zeros((V, K), np.int64)
    np.add.at(twk, pairs % V, t)
    np.testing.assert_array_equal(tables["nwk"], twk)
    up = tables[words_pyp.TABLE]
    assert np.all((up <= twk) & ((up > 0) == (twk > 0))) and (up < twk).any()
    top = tables[words_chain.TABLE][:, 0]
    assert np.all((top <= up.sum(axis=1)) & ((top > 0) == (up.sum(axis=1) > 0)))
    N, T = words_burst.restaurants(pairs, n, len(docs), V), words_burst.restaurants(pairs, t, len(docs), V)
    occ = n > 0
    want = words_pyp.cells_loglik(n[occ], t[occ], N.ravel(), T.ravel(), 0.3, 1.5) + words_chain.loglik(
        words_burst_chain.upper(tables), side, hyper)
    np.testing.assert_allclose(model.loglik(tables, model.derive(tables), hyper), want, rtol=1e-12)
    got = model.word_side.sample_hyper(model, tables, hyper, {n: True for n in
                                                               ("burst.a", "burst.b", "phi.a", "phi.b",
                                                                "nu0.a", "nu0.b")}, np.random.default_rng(9))
    for kind, name in [("a", "burst.a"), ("b", "burst.b"), ("a", "phi.a"), ("b", "phi.b"), ("b", "nu0.b")]:
        assert got[kind + "_values"][name] != hyper[kind + "_values"][name], name
    np.testing.assert_allclose(model.sample_topic_word(tables, model.derive(tables), hyper).sum(axis=1), 1.0)


def test_what_the_engine_does_not_run_is_refused_in_one_line(tmp_path):
    """phi[topic] over a vector per topic, and a Pitman-Yor phi[topic] sharing the burst vectors' discount: one
    line naming the node."""
    spec = chain_spec()
    spec["nodes"]["base"]["index"] = ["topic"]
    spec["nodes"]["phi"]["parents"][0]["index"] = ["topic"]
    with pytest.raises(UsageError, match="node 'phi': a Pitman-Yor phi\\[topic\\] under a word side indexed"):
        spec_model(tmp_path, spec, 2, 3)
    shared = chain_spec()
    shared["parameters"] = {"A": {"kind": "a", "value": 0.3, "sample": False}}
    shared["nodes"]["phi"]["pyp"]["a"] = shared["nodes"]["burst"]["pyp"]["a"] = "A"
    with pytest.raises(UsageError, match="shares a discount"):
        spec_model(tmp_path, shared, 2, 3)
