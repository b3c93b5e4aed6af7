"""Recovery of planted discounts and concentrations (issue 28, 3) from corpora drawn from a network by its
Chinese restaurant franchise (:mod:`inference.pdpnet.generate`): the in-process sampler from a random state, and
the Gibbs engine's driver steps (the summed histograms of :mod:`inference.pdpnet.engine_stats`) through the
model's hooks, without Spark."""
from __future__ import annotations

import json

import numpy as np

from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import merge
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.generate import draw_corpus
from inference.pdpnet.sampler import NetworkSampler
from inference.pdpnet.spec import parse_network


def _pyp_words(a, b):
    return {"nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.3},
                      "u": {"index": ["corpus"], "over": "word", "uniform": True},
                      "phi": {"index": ["topic"], "over": "word", "pyp": {"a": a, "b": b},
                              "parents": [{"node": "u", "index": ["corpus"]}]}},
            "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def _stm(a, b):
    return {"nodes": {"doc": {"index": ["document"], "over": "topic", "dirichlet": 0.5},
                      "seg": {"index": ["segment"], "over": "topic", "pyp": {"a": a, "b": b},
                              "parents": [{"node": "doc", "index": ["document"]}]},
                      "phi": {"index": ["topic"], "over": "word", "dirichlet": 0.05}},
            "topic": {"node": "seg", "index": ["segment"]}, "word": {"node": "phi", "index": ["topic"]}}


def test_pitman_yor_word_vectors_recover_a_and_b_from_a_random_state():
    """Topic-word vectors PYP(0.5, 5) over a uniform base (V = 200, K = 2, 3,000 tokens): from random topics and
    (a, b) = (0.1, 1), 150 cycles of the sweep and the hyper steps; the means of the last 75 are a = 0.5 +- 0.12
    and b within a factor 2.5 of 5 (b is weakly identified: its posterior sd here is ~2)."""
    docs, _, _ = draw_corpus(_pyp_words(0.5, 5.0), [[100]] * 30, 2, 200, seed=1)
    net = compile_network(parse_network(_pyp_words({"value": 0.1, "sample": True}, {"value": 1.0, "sample": True})),
                          CorpusLayout.of(docs, 200), 2)
    sm = NetworkSampler(net, seed=2)
    trace = []
    for _ in range(150):
        sm.sweep()
        sm.sample_hyper()
        trace.append((sm.avals[0], sm.bvals[0]))
    a, b = np.array(trace)[75:].mean(axis=0)
    assert abs(a - 0.5) < 0.12 and abs(np.log(b / 5.0)) < np.log(2.5), (a, b)


def _engine(raw, docs, K, V, state=None):
    path = json.dumps(raw)
    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network=_write(path))
    block = SegmentedBlock.from_segments([(f"d{i:04d}", d) for i, d in enumerate(docs)])
    local = np.unique(block.words, return_inverse=True)
    state = model.initial_state(block, hyper, 1) if state is None else state

    def tables():
        return {t.name: merge(t, [model.table_counts(block, state, local)[t.name]]) for t in model.count_tables()}
    return model, hyper, block, state, tables


def _write(text):
    import tempfile
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    f.write(text)
    f.close()
    return f.name


def test_engine_driver_steps_recover_a_and_b_of_segment_vectors():
    """Segments PYP(0.4, 3) over their document (60 documents x 6 segments x 40 tokens, K = 3). Given the drawn
    (z, s), 200 driver steps on the summed histograms (a and b from (0.1, 1)): means of the last 150 within 0.06
    of a and 25% of b. From a random state with a = 0.4 fixed, 120 engine iterations (sweeps and the b step):
    b within 35% of 3 (a and b together are weakly identified by three topics' segment counts)."""
    docs, z, s = draw_corpus(_stm(0.4, 3.0), [[40] * 6] * 60, 3, 40, seed=1)
    both = _stm({"value": 0.1, "sample": True}, {"value": 1.0, "sample": True})
    model, hyper, block, state, tables = _engine(both, docs, 3, 40, {"z": z.astype(np.int32), "s": s.copy()})
    tabs, trace = tables(), []
    for it in range(200):
        stats = model.partition_stats(block, state, hyper, 20 + it)
        tabs, hyper, _ = model.global_step(tabs, hyper, stats, 40 + it)
        trace.append((hyper["a_values"]["seg.a"], hyper["b_values"]["seg.b"]))
    a, b = np.array(trace)[50:].mean(axis=0)
    assert abs(a - 0.4) < 0.06 and abs(b / 3.0 - 1) < 0.25, (a, b)
    model, hyper, block, state, tables = _engine(_stm(0.4, {"value": 1.0, "sample": True}), docs, 3, 40)
    trace = []
    for it in range(120):
        tabs = tables()
        model.sweep_tables(block, state, hyper, tabs, model.derive(tabs), 10 + it)
        stats = model.partition_stats(block, state, hyper, 20 + it)
        hyper = model.update_hyper(hyper, stats, block.n_docs, 30 + it)
        tabs, hyper, _ = model.global_step(tables(), hyper, stats, 40 + it)
        trace.append(hyper["b_values"]["seg.b"])
    b = np.mean(trace[60:])
    assert abs(b / 3.0 - 1) < 0.35, b


def test_engine_pitman_yor_word_side_recovers_a_over_two_partitions():
    """pyp-lda on the engine's hooks (issue 28, pyp-lda): topic-word vectors PYP(0.5, 5) over a uniform base
    (V = 200, K = 2, 3,000 tokens) split into two partitions that sweep on private copies of the summed tables
    (each owning its tables); from a random state and (a, b) = (0.1, 1), 150 iterations of sweeps and the driver's
    word-side steps: the mean of a over the last 75 is 0.5 +- 0.12 and b within a factor 2.5 of 5."""
    docs, _, _ = draw_corpus(_pyp_words(0.5, 5.0), [[100]] * 30, 2, 200, seed=1)
    model = PdpNetwork(2, 200)
    hyper = model.initial_hyper(network=_write(json.dumps(
        _pyp_words({"value": 0.1, "sample": True}, {"value": 1.0, "sample": True}))))
    named = [(f"d{i:04d}", d) for i, d in enumerate(docs)]
    blocks = [SegmentedBlock.from_segments(named[p::2]) for p in range(2)]
    states = [model.initial_state(blk, hyper, 3 + p) for p, blk in enumerate(blocks)]

    def tables():
        parts = [model.table_counts(blk, st, np.unique(blk.words, return_inverse=True))
                 for blk, st in zip(blocks, states)]
        return {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}
    trace = []
    for it in range(150):
        tabs = tables()
        for p, (blk, st) in enumerate(zip(blocks, states)):
            own = {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in tabs.items()}
            model.sweep_tables(blk, st, hyper, own, model.derive(own), 10 * it + p)
        hyper = model.global_step(tables(), hyper, np.zeros(2), 40 + it)[1]
        trace.append((hyper["a_values"]["phi.a"], hyper["b_values"]["phi.b"]))
    a, b = np.array(trace)[75:].mean(axis=0)
    assert abs(a - 0.5) < 0.12 and abs(np.log(b / 5.0)) < np.log(2.5), (a, b)
