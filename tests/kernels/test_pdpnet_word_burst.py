"""The burstiness word side on the Gibbs engine (issue 28; DCMLDA / hca's burst vectors,
:mod:`drivers.models.pdp_network.words_burst`): burst[topic, document] ~ PYP(a, b, phi[topic]) over a Dirichlet
root per topic, the documents' cells local to their partition. One engine partition's sweeps against the network's
joint enumerated over every legal state; the bookkeeping: ``nwk`` is the tables t_dkw summed (phi's customers), the
recount of the kept state equals the sweeps' running copies, 0 < t <= n in every occupied cell."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from drivers.models.pdp_network import words_burst
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network
from pdp_hooks import one_block, spec_model, summed, swept


def burst_spec(beta0=0.4, a=0.3, b=1.5, sample=False):
    root = {"dirichlet": beta0} if beta0 > 0 else {"uniform": True}
    return {"name": "burst-net",
            "nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                      "phi": {"index": ["topic"], "over": "word", **root},
                      "burst": {"index": ["topic", "document"], "over": "word",
                                "pyp": {"a": {"value": a, "sample": sample}, "b": {"value": b, "sample": sample}},
                                "parents": [{"node": "phi", "index": ["topic"]}]}},
            "topic": {"node": "theta", "index": ["document"]},
            "word": {"node": "burst", "index": ["topic", "document"]}}


def _summed(model, block, state):
    """The tables of one partition's state (:func:`pdp_hooks.summed`)."""
    return summed(model, [block], [state])


def swept_burst(tmp_path, spec, V=8, K=3) -> SimpleNamespace:
    """Six documents (6-19 words of V) on one partition of ``spec``'s model after 30 sweeps: (docs, model, hyper,
    block, state, the tables recounted, the burst cells' pairs d V + w, each token's cell ``uidx``, the cells'
    customers ``n`` (pairs, K))."""
    rng = np.random.default_rng(6)
    docs = [list(rng.integers(0, V, rng.integers(6, 20))) for _ in range(6)]
    model, hyper = spec_model(tmp_path, spec, K, V)
    block = one_block(docs)
    state = model.initial_state(block, hyper, 3)
    tables = swept(model, hyper, block, state, 30, 50)
    pairs, uidx = words_burst.local_pairs(model, block)
    n = np.zeros((len(pairs), K), np.int64)
    np.add.at(n, (uidx, state["z"]), 1)
    return SimpleNamespace(docs=docs, model=model, hyper=hyper, block=block, state=state, tables=tables, pairs=pairs,
                           uidx=uidx, n=n)


def test_one_engine_partition_samples_the_networks_joint(tmp_path):
    """One engine partition (``sweep_tables`` on the local copies a single partition's synchronisations leave)
    visits every (z, t) of a tiny burst network with the frequencies of the network's corrected joint (E12)
    enumerated over all legal states (tests/kernels/pdpnet_reference.py): chi-square p > 1e-3, total variation
    < 0.06; the literal (E12) is told apart. A cell's own indicators at topic k are the table count s of the
    burst[k, d] cell w's edge to phi_k. (Not draw for draw: the bigram kernel's leaving indicator u n < t and its
    every-customer re-seating differ from the network sampler's, as for tlm.)"""
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    V, K = 2, 2
    docs = [[0, 1, 0, 0], [1, 1]]
    model, hyper = spec_model(tmp_path, burst_spec(), K, V)
    block = one_block(docs)
    state = model.initial_state(block, hyper, 3)
    tables = _summed(model, block, state)
    derived = model.derive(tables)
    net = compile_network(parse_network(burst_spec()), CorpusLayout.of([[d] for d in docs], V), K)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    pairs, uidx = words_burst.local_pairs(model, block)
    obs = np.zeros(len(states))
    for it in range(12000):
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
    assert tv_lit > 0.1 and pval_lit < 1e-6, (tv_lit, pval_lit)
    recount = _summed(model, block, state)      # the running copy of nwk is the recount of the kept state
    np.testing.assert_array_equal(recount["nwk"], tables["nwk"])


def test_driver_steps_from_the_histogram_are_the_cells_steps(tmp_path):
    """The side's likelihood and its a and b steps read the summed histogram ``burst_hist``: the same numbers as
    pyp-lda's steps on the cells and restaurants themselves (:func:`words_pyp.cells_loglik`, ``root_loglik``,
    ``sample_cells_hyper``, the same random numbers), on a model's own state after some sweeps."""
    from drivers.models.pdp_network import words_pyp

    V, K = 8, 3
    run = swept_burst(tmp_path, burst_spec(0.4, 0.3, 1.5, sample=True), V, K)
    docs, model, hyper, state = run.docs, run.model, run.hyper, run.state
    tables, pairs, n = run.tables, run.pairs, run.n
    t = state["word_t"]
    occ = n > 0
    N, T = words_burst.restaurants(pairs, n, len(docs), V), words_burst.restaurants(pairs, t, len(docs), V)
    a, b, beta0 = 0.3, 1.5, 0.4
    twk = np.zeros((V, K))
    np.add.at(twk, pairs % V, t)
    want = words_pyp.cells_loglik(n[occ], t[occ], N.ravel(), T.ravel(), a, b) + sum(
        words_pyp.root_loglik(twk[:, k], beta0, V) for k in range(K))
    np.testing.assert_allclose(model.loglik(tables, model.derive(tables), hyper), want, rtol=1e-12)
    np.testing.assert_array_equal(tables["nwk"], twk)
    _, _, _, Nh, Th, wr = words_burst.split(tables[words_burst.HIST])
    sampled = {"burst.a": True, "burst.b": True}
    got = words_burst.sample_hyper(hyper["word_pyp"], tables, hyper, sampled, np.random.default_rng(9))
    ref = words_pyp.sample_cells_hyper(hyper["word_pyp"], n[occ], t[occ], np.repeat(Nh, wr), np.repeat(Th, wr), hyper,
                                       sampled, np.random.default_rng(9))
    assert got == ref and got["a_values"]["burst.a"] != a and got["b_values"]["burst.b"] != b
