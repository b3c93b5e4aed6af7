"""Issue 28's speed work on the slow word sides (session 26: burst-lda.json's training, pyp-lda-3.json's levels)
keeps the chain: a few engine iterations of tiny corpora through the model's hooks as the Gibbs engine calls them
(two partitions' ``table_counts`` merged, ``derive``, ``sweep_tables`` on private copies, the driver's
``global_step`` with every a and b sampled) end in the very state, tables and hyperparameters the code before it
left (the digests below were recorded with the code of d24a63b), and the same with every remembered count forgotten
between the hooks (the kept counts equal the recount)."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import merge

#: sha256 (first 16 hex digits) of the run below with the code of d24a63b
BEFORE = {"burst-lda": "24dd43d3610569b6", "pyp-lda": "6eca06d78e448b6d", "pyp-lda-3": "e710f09d1b449bc9",
          "burst-pyp-lda": "7845f0878d15be30"}
V, K = 40, 3


def _blocks():
    rng = np.random.default_rng(5)
    blocks = []
    for p in range(2):
        docs = []
        for d in range(6):
            own = rng.choice(V, 4, replace=False)            # bursty: a document's own few words recur
            words = np.where(rng.random(30) < 0.5, rng.choice(own, 30), rng.integers(0, V, 30))
            docs.append((f"p{p}d{d}", [list(map(int, words[:14])), list(map(int, words[14:]))]))
        blocks.append(SegmentedBlock.from_segments(docs))
    return blocks


def _run(network: str, forget: bool) -> str:
    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network=network)
    model.bind_hyper(hyper)
    blocks = _blocks()
    states = [model.initial_state(b, hyper, 3 + p) for p, b in enumerate(blocks)]

    def summed():
        if forget:
            model.__dict__.pop("_memos", None)
        parts = [model.table_counts(b, st, np.unique(b.words, return_inverse=True)) for b, st in zip(blocks, states)]
        return {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}

    tables = summed()
    for it in range(4):
        derived = model.derive(tables)
        for p, (b, st) in enumerate(zip(blocks, states)):
            if forget:
                model.__dict__.pop("_memos", None)
            model.sweep_tables(b, st, hyper, {k: v.copy() for k, v in tables.items()},
                               {k: np.array(v, copy=True) for k, v in derived.items()}, 100 * it + p)
        tables = summed()
        stats = np.sum([model.partition_stats(b, st, hyper, 7 * it + p)
                        for p, (b, st) in enumerate(zip(blocks, states))], axis=0)
        hyper = model.update_hyper(hyper, stats, 12, it)
        tables, hyper, _ = model.global_step(tables, hyper, stats, 11 * it)
    h = hashlib.sha256()
    for st in states:
        for key in sorted(st):
            h.update(key.encode() + np.ascontiguousarray(st[key], np.int64).tobytes())
    for name in sorted(tables):
        t = tables[name]
        for arr in ((t.keys, t.counts) if hasattr(t, "keys") else (t,)):
            h.update(name.encode() + np.ascontiguousarray(arr, np.int64).tobytes())
    for kind in ("a_values", "b_values"):
        h.update(repr(sorted((k, float(v).hex()) for k, v in hyper[kind].items())).encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("network", sorted(BEFORE))
def test_the_chain_is_the_code_befores(network):
    got = _run(network, forget=False)
    assert got == BEFORE[network], (network, got)
    assert _run(network, forget=True) == got


def test_a_held_out_sweep_of_burst_pyp_lda_leaves_its_word_side_object_as_it_was():
    """The frozen (held-out) sweep's kernels are the burst side's (the bigram kernel), chosen by ``kernels``
    without changing the object: a word side object kept across sweeps trains with the column kernel after it."""
    from drivers.models.pdp_network import burst_heldout, word_sides, words_burst
    from inference.pdpnet import word_bigram, word_column

    model = PdpNetwork(K, V)
    hyper = model.initial_hyper(network="burst-pyp-lda")
    model.bind_hyper(hyper)
    side = word_sides.of(hyper["word_pyp"])
    block = _blocks()[0]
    state = {"z": np.zeros(block.n_tokens, np.int32)}
    frozen = (None, {words_burst.FROZEN: burst_heldout.frozen_root(np.full((V, K), 1.0 / V))}, None)
    before = dict(vars(side))
    (head, tail), _ = side.sweep_args(model, block, state, model._compiled(block, hyper), np.zeros((V, K), np.int32),
                                      frozen, np.zeros(2, np.int64))
    assert vars(side) == before and side.kernel is word_column.column_word_sweep
    assert side.kernels(frozen)[0] is word_bigram.burst_word_sweep
    assert side.kernels((None, {}, None))[0] is word_column.column_word_sweep
    assert len(tail) == 11 and "word_t" in state        # the burst side's arguments, its indicators seated
