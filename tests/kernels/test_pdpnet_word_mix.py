"""A Pitman-Yor word vector with several parents mixed by rho on the Gibbs engine (issue 28): phi[topic] over a
per-topic Dirichlet root and a corpus-level Dirichlet root (or the uniform). One partition of the engine's sweep
(:func:`inference.pdpnet.word_mix.mix_word_sweep`) is the in-process network sampler's draw for draw (z, every
cell's customers and tables per edge); one engine partition through the model's hooks visits the network's joint
enumerated; two partitions keep the tables legal and move a and b."""
from __future__ import annotations

import numpy as np
import pytest

from inference.pdpnet import kernels
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import NetworkSampler, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network
from inference.pdpnet.word_mix import CORPUS_ROOT, TOPIC_ROOT, UNIFORM, mix_word_sweep

V, K = 6, 3


def mix_spec(background: str = "dirichlet", weights: str = "dirichlet", a=0.4, b=1.5, sample=False) -> dict:
    """theta[document] Dirichlet; phi[topic] PYP over base[topic] (a Dirichlet root per topic, gamma 0.7) and bg
    (a corpus-level Dirichlet root or the uniform, gamma 1.3), or fixed weights 1/2."""
    def par(x):
        return {"value": x, "sample": True} if sample else x
    refs = [{"node": "base", "index": ["topic"], "gamma": 0.7}, {"node": "bg", "index": ["corpus"], "gamma": 1.3}]
    phi = {"index": ["topic"], "over": "word", "pyp": {"a": par(a), "b": par(b)}, "parents": refs}
    if weights == "uniform":
        phi["weights"] = "uniform"
        refs = [{k: v for k, v in r.items() if k != "gamma"} for r in refs]
        phi["parents"] = refs
    return {"name": "mix", "nodes": {
        "theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
        "bg": {"index": ["corpus"], "over": "word", **({"dirichlet": 0.4} if background == "dirichlet"
                                                        else {"uniform": True})},
        "base": {"index": ["topic"], "over": "word", "dirichlet": 0.2},
        "phi": phi}, "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def state_of(net, sm, Vn=V) -> list:
    """The kernel's word arrays from the in-process sampler's counts: n (V, K), s (P, V, K), N_k, T_k, S_ke,
    the corpus parent's customers per edge (P, V) and their totals."""
    fam = net.spec.order.index("phi")
    js = np.flatnonzero(net.family == fam)
    P = int(net.par_ptr[js[0] + 1] - net.par_ptr[js[0]])
    n, s = np.zeros((Vn, K), np.int64), np.zeros((P, Vn, K), np.int64)
    for j in js:
        k = int(net.key[j])
        n[:, k] = sm.n[net.off[j]:net.off[j + 1]]
        for e in range(P):
            x = net.par_ptr[j] + e
            s[e, :, k] = sm.s[net.eoff[x]:net.eoff[x + 1]]
    Sk = s.sum(axis=1)
    return [n, s, n.sum(axis=0), Sk.sum(axis=0), Sk, s.sum(axis=2), s.sum(axis=(1, 2))]


def run_against_the_network_sampler(background="dirichlet", weights="dirichlet", sweeps=4, gammas=None):
    rng = np.random.default_rng(11)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    layout = CorpusLayout.of(docs, V)
    spec = parse_network(mix_spec(background, weights))
    net = compile_network(spec, layout, K)
    sm = NetworkSampler(net, seed=4)
    topic = compile_network(spec, layout, K, word_side=False)
    z = sm.z.copy()
    cnt = rebuild_counts(topic, z, np.zeros(int(topic.eoff[-1]), np.int64), word_side=False)
    anc_ptr, anc = kernels.ancestor_lists(topic.par_ptr, topic.par_node)
    n, s, Nk, Tk, Sk, rc, RC = state_of(net, sm)
    own_n, own_s = n.copy(), s.copy()
    kinds = np.array([TOPIC_ROOT, CORPUS_ROOT if background == "dirichlet" else UNIFORM], np.int64)
    alphas = np.array([0.2, 0.4 if background == "dirichlet" else 0.0])
    fixed = weights == "uniform"
    gam = np.array([0.5, 0.5] if fixed else [0.7, 1.3]) if gammas is None else np.asarray(gammas, np.float64)
    gsum = -1.0 if fixed else float(gam.sum())
    stack = StirlingStack(topic.a_values)
    moved = 0
    for _ in range(sweeps):
        seed = sm._seed(sm.iteration + 1, 1)
        before = z.copy()
        cnt["mx"][:] = n.max(), s.sum(axis=0).max()
        pos, reseed = 0, True
        while pos >= 0:
            stack.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = mix_word_sweep(
                pos, reseed, seed, topic.words.astype(np.int64), z, topic.topic_inst, anc_ptr, anc, topic.kind,
                topic.dim, topic.off, topic.alpha, topic.a_of, topic.b_of, topic.par_ptr, topic.par_node,
                topic.par_gamma, topic.gamma_sum, topic.a_values, topic.b_values, stack.L3, cnt["n"], cnt["tc"],
                cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], np.zeros(0, np.int64), cnt["Se"], topic.eoff, cnt["mx"],
                n, s, Nk, Tk, Sk, rc, RC, own_n, own_s, topic.a_names.index("phi.a"), topic.b_names.index("phi.b"),
                kinds, alphas, gam, gsum, V)
            reseed = False
        sm.sweep()
        np.testing.assert_array_equal(z, sm.z)
        moved += int((before != z).sum())
        for got, want in zip([n, s, Nk, Tk, Sk, rc, RC], state_of(net, sm)):
            np.testing.assert_array_equal(got, want)
        assert np.all(s.sum(axis=0) <= n) and np.all((s.sum(axis=0) > 0) == (n > 0))
    assert moved > 10 and (s.sum(axis=0) < n).any() and (s[1] > 0).any() and (s[0] > 0).any()


@pytest.mark.parametrize("background,weights", [("dirichlet", "dirichlet"), ("uniform", "dirichlet"),
                                                ("dirichlet", "uniform")])
def test_one_partition_is_the_network_sampler_draw_for_draw(background, weights):
    run_against_the_network_sampler(background, weights)


def test_a_wrong_rho_weight_fails_it():
    """The same comparison with the edges' gammas swapped differs (the test can fail)."""
    with pytest.raises(AssertionError):
        run_against_the_network_sampler(gammas=[1.3, 0.7])


def _model(tmp_path, spec: dict, K_=K, V_=V):
    from pdp_hooks import spec_model

    return spec_model(tmp_path, spec, K_, V_, "mix.json")


def _summed(model, blocks, states):
    from pdp_hooks import summed

    return summed(model, blocks, states)


def test_one_engine_partition_samples_the_networks_joint(tmp_path):
    """One engine partition (the model's ``sweep_tables`` on its local copies, as one partition's synchronisations
    leave them) visits every (z, s) of a tiny network (K = 2, V = 2, 3 tokens, 72 states; phi[topic] over base[topic] and bg,
    gammas 0.3 and 2.0) with the frequencies of its corrected joint (E12) enumerated over all legal states
    (tests/kernels/pdpnet_reference.py): 12,000 sweeps, chi-square p > 1e-3, total variation < 0.06 (0.032). The
    same frequencies reject the joint with the two gammas swapped (a wrong rho weight: TV 0.77) and the literal
    (E12) (TV 0.37)."""
    from inference.gibbs.block import SegmentedBlock
    from tests.kernels.pdpnet_reference import enumerate_states
    from tests.kernels.test_pdpnet_sampler import _chi_square

    V2, K2 = 2, 2
    docs = [[0, 0], [1]]
    spec = mix_spec(a=0.3, b=1.2)
    spec["nodes"]["phi"]["parents"][0]["gamma"], spec["nodes"]["phi"]["parents"][1]["gamma"] = 0.3, 2.0
    model, hyper = _model(tmp_path, spec, K2, V2)
    assert hyper["word_pyp"]["mix"] == [["base", "topic", "dirichlet", 0.2, 0.3], ["bg", "corpus", "dirichlet", 0.4,
                                                                                  2.0]]
    block = SegmentedBlock.from_segments([(f"d{i}", [d]) for i, d in enumerate(docs)])
    state = model.initial_state(block, hyper, 3)
    tables = _summed(model, [block], [state])
    derived = model.derive(tables)
    net = compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V2), K2)
    states = enumerate_states(net)
    index = {(z, s): r for r, (z, s, _) in enumerate(states)}
    uidx = np.unique(block.words, return_inverse=True)[1].reshape(-1)
    obs = np.zeros(len(states))
    for it in range(12000):
        model.sweep_tables(block, state, hyper, tables, derived, 1000 + it)
        s = np.zeros(int(net.eoff[-1]), np.int64)
        for i, (u, w) in enumerate(zip(uidx, block.words)):
            for k in range(K2):
                j = net.word_inst[i, k]
                for e in range(2):
                    s[net.eoff[net.par_ptr[j] + e] + w] = state["word_ms"][e, u, k]
        obs[index[(tuple(int(k) for k in state["z"]), tuple(int(x) for x in s))]] += 1
    tv, pval = _chi_square(states, obs)
    assert tv < 0.06 and pval > 1e-3, (len(states), tv, pval)
    assert len(states) == 72 and (obs > 0).sum() >= 65
    spec["nodes"]["phi"]["parents"][0]["gamma"], spec["nodes"]["phi"]["parents"][1]["gamma"] = 2.0, 0.3
    wrong = compile_network(parse_network(spec), CorpusLayout.of([[d] for d in docs], V2), K2)
    tv_w, pval_w = _chi_square(enumerate_states(wrong), obs)
    assert pval_w < 1e-6, (tv_w, pval_w)
    tv_lit, pval_lit = _chi_square(enumerate_states(net, literal=True), obs)
    assert pval_lit < 1e-6, (tv_lit, pval_lit)


def test_two_partitions_through_the_engines_hooks(tmp_path):
    """Two partitions, two sweeps per synchronisation, 6 iterations (no Spark): the summed tables are the
    partitions' states (0 <= sum_e s^p <= n^p), t <= n per cell and t >= 1 where n > 0 but for races (on these 16
    tiny documents, 30 iterations: 5.8% of the occupied cells, pyp-lda's side 5.6%; at most a quarter here), both
    edges hold tables, a and b move, the topics sum to 1, the likelihood is finite."""
    from drivers.models.pdp_network import words_mix, words_pyp
    from inference.gibbs.block import SegmentedBlock

    V9 = 9
    rng = np.random.default_rng(3)
    docs = [(f"d{i:02d}", [list(rng.integers(0, V9, rng.integers(2, 12)))]) for i in range(16)]
    model, hyper = _model(tmp_path, mix_spec(sample=True), K, V9)
    blocks = [SegmentedBlock.from_segments(docs[p::2]) for p in range(2)]
    states = [model.initial_state(blk, hyper, 5 + p) for p, blk in enumerate(blocks)]
    start = (hyper["a_values"]["phi.a"], hyper["b_values"]["phi.b"])
    moved = 0
    for it in range(6):
        tables = _summed(model, blocks, states)
        before = [st["z"].copy() for st in states]
        for p, (blk, st) in enumerate(zip(blocks, states)):
            own = {name: np.array(tab, copy=True) for name, tab in tables.items() if isinstance(tab, np.ndarray)}
            derived = model.derive(own)
            model.sweep_tables(blk, st, hyper, own, derived, 100 * it + p)
            model.sweep_tables(blk, st, hyper, own, derived, 100 * it + p + 50)
        moved += sum(int((b0 != st["z"]).sum()) for b0, st in zip(before, states))
        new = _summed(model, blocks, states)
        n, s = new["nwk"].astype(np.int64), new[words_mix.TABLE].reshape(2, V9, K)
        t = s.sum(axis=0)
        assert np.all(t <= n) and ((n > 0) & (t == 0)).sum() <= (n > 0).sum() // 4     # (races: pyp-lda's rate)
        for blk, st in zip(blocks, states):
            vocab, uidx = np.unique(blk.words, return_inverse=True)
            own = words_pyp.own_customers(uidx.reshape(-1), st["z"], len(vocab), K)
            ms = st[words_mix.STATE]
            assert np.all(ms >= 0) and np.all(ms.sum(axis=0) <= own)
        hyper = model.global_step(new, hyper, model.partition_stats(blocks[0], states[0], hyper, it), it)[1]
        assert np.isfinite(model.loglik(new, model.derive(new), hyper))
    assert moved > 20 and (t < n).any() and s[0].sum() > 0 and s[1].sum() > 0
    assert (hyper["a_values"]["phi.a"], hyper["b_values"]["phi.b"]) != start and \
        hyper["a_values"]["phi.a"] != start[0] and hyper["b_values"]["phi.b"] != start[1]
    phi = model.sample_topic_word(new, model.derive(new), hyper)
    np.testing.assert_allclose(phi.sum(axis=1), 1.0)


@pytest.mark.parametrize("change,message", [
    (lambda sp: sp["nodes"].update(bg={"index": ["corpus"], "over": "word", "pyp": {"a": 0.5, "b": 1.0},
                                       "parents": [{"node": "uni", "index": ["corpus"]}]},
                                   uni={"index": ["corpus"], "over": "word", "uniform": True}),
     "node 'bg': a parent of the word vector 'phi' with several parents on the Gibbs engine is a Dirichlet root"),
    (lambda sp: sp["nodes"]["base"].update(index=["corpus"]), "node 'phi': 'base' expects a corpus index"),
])
def test_other_shapes_are_refused_in_one_line(change, message):
    from drivers.models.pdp_network import words_pyp
    from inference.errors import UsageError

    spec = mix_spec()
    change(spec)
    with pytest.raises(UsageError, match=message) as info:
        words_pyp.word_side(parse_network(spec))
    assert "\n" not in str(info.value)


def test_the_shipped_spec_runs_split_and_the_pypless_parent_shapes_too():
    """pyp-lda-mix.json (and the test's shapes) are not sent to whole-network mode: no refusal, any partitions; the
    registry's model answers the split model's hyperparameters (no ``whole_network`` entry)."""
    from drivers.models.pdp_network.whole_network import WHOLE, NetworkModel, split_refusal, spec_of

    assert split_refusal(spec_of({"network": "pyp-lda-mix"})) is None
    assert NetworkModel.corpus_partitions({"network": "pyp-lda-mix"}) is None
    for args in [("uniform", "dirichlet"), ("dirichlet", "uniform")]:
        assert NetworkModel.corpus_partitions({"network": mix_spec(*args)}) is None
    hyper = NetworkModel(3, 10).initial_hyper(network="pyp-lda-mix")
    assert WHOLE not in hyper and hyper["word_pyp"]["mix"][1][:3] == ["background", "corpus", "dirichlet"]
    assert hyper["word_pyp"]["gamma_sum"] == 2.0


def test_the_drivers_a_and_b_step_is_the_in_process_step():
    """Given the same state (the in-process sampler's after 3 sweeps) and the same random numbers, the word side's
    driver step (:func:`words_mix.sample_hyper`: q_k ~ Beta(b, N_k), slice steps of b and a on the cells' (c,
    t = sum_e s) and the topics' T) draws the a and b :func:`inference.pdpnet.sampler.step_hyper` draws."""
    from drivers.models.pdp_network import words_mix
    from inference.pdpnet.sampler import step_hyper

    rng = np.random.default_rng(11)
    docs = [[list(rng.integers(0, V, rng.integers(3, 12)))] for _ in range(10)]
    spec = mix_spec(sample=True)
    net = compile_network(parse_network(spec), CorpusLayout.of(docs, V), K)
    sm = NetworkSampler(net, seed=4)
    for _ in range(3):
        sm.sweep()
    n, s = state_of(net, sm)[:2]
    side = {"a": "phi.a", "b": "phi.b", "mix": [["base", "topic", "dirichlet", 0.2, 0.7],
                                                ["bg", "corpus", "dirichlet", 0.4, 1.3]], "gamma_sum": 2.0}
    got = words_mix.sample_hyper(side, {"nwk": n, words_mix.TABLE: s.reshape(-1, K)},
                                 {"a_values": {"phi.a": 0.4}, "b_values": {"phi.b": 1.5}},
                                 {"phi.a": True, "phi.b": True}, np.random.default_rng(7))
    avals, bvals = net.a_values.copy(), net.b_values.copy()
    step_hyper(net, {"n": sm.n, "tc": sm.tc, "tp": sm.tp, "Nn": sm.Nn, "TC": sm.TC, "TP": sm.TP}, avals, bvals,
               np.random.default_rng(7))
    assert got["a_values"]["phi.a"] == avals[net.a_names.index("phi.a")] != 0.4
    assert got["b_values"]["phi.b"] == bvals[net.b_names.index("phi.b")] != 1.5


MISLAID = '''
import json, sys, tempfile, pathlib
import numpy as np
from pdp_hooks import spec_model, summed
from drivers.models.pdp_network import words_mix
from inference.gibbs.block import SegmentedBlock

spec, mode = json.loads(sys.argv[1]), sys.argv[2]
V, K, P = 9, 3, 2
rng = np.random.default_rng(3)
docs = [(f"d{i:02d}", [[int(w) for w in rng.integers(0, V, rng.integers(20, 60))]]) for i in range(30)]
model, hyper = spec_model(pathlib.Path(tempfile.mkdtemp()), spec, K, V, "mix.json")
block = SegmentedBlock.from_segments(docs)
state = model.initial_state(block, hyper, 5)
tables = summed(model, [block], [state])
good = tables[words_mix.TABLE].reshape(P, V, K)
tables[words_mix.TABLE] = np.ascontiguousarray({
    "interleaved": lambda: good.transpose(1, 0, 2).reshape(P * V, K),      # rows w P + e (same shape)
    "transposed": lambda: good.reshape(P * V, K).T,                        # K x P V
    "old-vocabulary": lambda: good[:, :V - 2].reshape(P * (V - 2), K)}[mode]())
try:
    for it in range(3):
        model.sweep_tables(block, state, hyper, tables, model.derive(tables), 100 + it)
except ValueError as exc:
    print("ValueError:", exc)
else:
    print("no error")
'''


@pytest.mark.parametrize("mode,message", [
    ("interleaved", r"node 'phi': its table word_mix \(18 x 3\) is not laid out as rows e V \+ w of 2 edges over 9 "
                    r"words: \d+ cell\(s\) hold more tables than customers"),
    ("transposed", r"node 'phi': its table word_mix is 3 x 18, not 18 x 3 \(2 edges over 9 words at rows e V \+ w"),
    ("old-vocabulary", r"node 'phi': its table word_mix is 14 x 3, not 18 x 3 \(2 edges over 9 words"),
])
def test_a_mislaid_table_is_refused_before_the_sweep_reads_it(mode, message):
    """A ``word_mix`` table of another layout (rows w P + e: the same shape) or shape (transposed; a refresh's
    table not moved to the grown vocabulary) reaching a partition's sweep is refused in one line naming the node and
    the expected and actual shape (before: the sweep read other cells' counts and ran on, or failed later in the
    write-back; reported to hang). Run in a subprocess with a timeout, so the test cannot hang the suite."""
    import json
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(root / "tests")]))
    out = subprocess.run([sys.executable, "-c", MISLAID, json.dumps(mix_spec(sample=True)), mode], env=env,
                         cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip().splitlines()[-1]
    assert re.search(message, line) and "\n" not in line, line
