"""The burst side beside a shared Pitman-Yor topic vector (issue 28; hca's topic side with burst vectors: the
documents DP over a corpus-level PYP over a root, :mod:`inference.pdpnet.owned_words` / :mod:`.owned_chain` with
the burst side's arguments). Over a Pitman-Yor phi[topic]: one engine partition is the in-process network
sampler draw for draw (both sides' state); over a Dirichlet root per topic: one engine partition against the
network's joint enumerated; held out: the frozen sweeps keep phi and the cells legal, both estimators finite."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers.models.pdp_network import words_burst
from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.heldout import HeldoutSchedule
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.spec import parse_network
from tests.kernels.test_pdpnet_owned_chain import TOPIC_SIDE
from tests.kernels.test_pdpnet_word_burst import _summed, burst_spec
from tests.kernels.test_pdpnet_word_burst_chain import _network_state, chain_spec


def hca_burst(spec: dict) -> dict:
    """``spec`` with hca's topic side (theta DP over a shared corpus-level PYP over a Dirichlet root)."""
    return dict(spec, nodes=dict(spec["nodes"], **json.loads(json.dumps(TOPIC_SIDE))))


def _model(tmp_path, spec, K, V):
    path = tmp_path / "hca-burst.json"
    path.write_text(json.dumps(spec))
    model = PdpNetwork(K, V)
    return model, model.initial_hyper(network=str(path))


@pytest.mark.parametrize("root, levels", [("dirichlet", 0), ("uniform", 0)])
def test_over_a_pitman_yor_phi_one_partition_is_the_network_sampler_draw_for_draw(tmp_path, root, levels):
    """One engine partition (``sweep_tables`` on the summed tables of its own state: the owned chain kernel with
    the burst cells the bottom level) from the network sampler's state, with its seed: the same z, topic-side
    table attributions and word-side indicators after every sweep; the shared vector seats several tables."""
    from inference.pdpnet.sampler import NetworkSampler

    V, K = 7, 3
    rng = np.random.default_rng(5)
    docs = [list(rng.integers(0, V, rng.integers(3, 12))) for _ in range(8)]
    spec = hca_burst(chain_spec(root, levels=levels))
    model, hyper = _model(tmp_path, spec, K, V)
    block = SegmentedBlock.from_segments([(f"d{i}", [d]) for i, d in enumerate(docs)])
    net = compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V), K)
    topic = compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V), K, word_side=False)
    sm = NetworkSampler(net, seed=2)
    E = int(topic.eoff[-1])

    def engine_state():
        return dict(_network_state(net, sm, model, block, levels), s=sm.s[:E].copy())   # (topic edges first)

    state = engine_state()
    moved = 0
    for _ in range(5):
        tables = _summed(model, block, state)           # (one partition: a synchronisation every sweep)
        before = state["z"].copy()
        model.sweep_tables(block, state, hyper, tables, model.derive(tables), sm._seed(sm.iteration + 1, 1))
        sm.sweep()
        for name, want in engine_state().items():
            np.testing.assert_array_equal(state[name], want, err_msg=name)
        moved += int((before != state["z"]).sum())
    corpus = tables["network_tc"][1], tables["network_tp"][1]
    assert moved > 20 and (corpus[1] < corpus[0]).any()


def test_over_a_dirichlet_root_one_partition_samples_the_networks_joint(tmp_path):
    """burst_spec's network (burst vectors over a Dirichlet root per topic) with hca's topic side: one engine
    partition's (z, burst indicators, the shared vector's tables) visited with the frequencies of the network's
    corrected joint (E12) enumerated: chi-square p > 1e-3, total variation < 0.06; the literal (E12) told apart."""
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    V, K = 2, 2
    docs = [[0, 1], [1]]
    spec = hca_burst(burst_spec())
    model, hyper = _model(tmp_path, spec, K, V)
    block = SegmentedBlock.from_segments([(f"d{i}", [d]) for i, d in enumerate(docs)])
    state = model.initial_state(block, hyper, 3)
    net = compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V), K)
    E = int(compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V), K,
                            word_side=False).eoff[-1])
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    pairs, uidx = words_burst.local_pairs(model, block)
    obs = np.zeros(len(states))
    for it in range(3000):
        tables = _summed(model, block, state)
        model.sweep_tables(block, state, hyper, tables, model.derive(tables), 1000 + it)
        s = np.zeros(int(net.eoff[-1]), np.int64)
        s[:E] = state["s"]
        for i, (u, w) in enumerate(zip(uidx, block.words)):
            for k in range(K):
                s[net.eoff[net.par_ptr[net.word_inst[i, k]]] + w] = state["word_t"][u, k]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in s))]] += 1
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3, (len(states), tv, pval)
    assert len(states) > 20          # the shared vector's and the burst cells' tables vary, not only z
    tv_lit, pval_lit = _chi_square(enumerate_states(net, literal=True), obs)
    assert tv_lit > 0.1 and pval_lit < 1e-6, (tv_lit, pval_lit)


@pytest.mark.parametrize("phi", ["dirichlet", "pyp"])
def test_held_out_beside_the_shared_vector(tmp_path, phi):
    """A model trained in process (one partition's sweeps) scores held-out documents: the frozen sweeps (the
    owned kernel with phi's pseudo-counts) leave the trained ``nwk``, the burst cells legal; document completion
    and left to right finite, the burst vectors counted (not the score with a = 0, b huge)."""
    from inference.left_to_right import LeftToRight

    V, K = 8, 3
    rng = np.random.default_rng(4)
    docs = [list(rng.integers(0, V, rng.integers(6, 16))) for _ in range(10)]
    spec = hca_burst(chain_spec() if phi == "pyp" else burst_spec())
    model, hyper = _model(tmp_path, spec, K, V)
    block = SegmentedBlock.from_segments([(f"d{i}", [d]) for i, d in enumerate(docs)])
    state = model.initial_state(block, hyper, 3)
    for it in range(10):
        tables = _summed(model, block, state)
        model.sweep_tables(block, state, hyper, tables, model.derive(tables), 50 + it)
    tables = _summed(model, block, state)
    phi_vk = np.ascontiguousarray(model.sample_topic_word(tables, model.derive(tables), hyper).T)
    model.bind_result(type("R", (), {"tables": tables, "hyper": hyper})())
    test = SegmentedBlock.from_segments([(f"t{i}", [list(rng.integers(0, V, 12))]) for i in range(3)])
    got = model.heldout_loglik(test, hyper, phi_vk, HeldoutSchedule.default(10, 3, 0.5), 4, 0)
    assert np.isfinite(got[0]) and got[1] > 0
    scores = model.left_to_right(test, hyper, phi_vk, LeftToRight(particles=4, resample=False, seed=1)).per_document
    assert np.all(np.isfinite(scores[:, :2])) and np.all(scores[:, 0] < 0)
