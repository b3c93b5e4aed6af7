"""pdp-network driven through the engine's hooks without Spark (the word sides' kernel tests): a spec written to a
file and its model (:func:`spec_model`), the tables a synchronisation sums from partitions' states (:func:`summed`),
one partition's documents (:func:`one_block`) and its sweeps on the local copies a single partition's
synchronisations leave (:func:`swept`), several partitions synchronised in turn (:class:`Partitions`)."""
from __future__ import annotations

import json

import numpy as np

from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.block import SegmentedBlock
from inference.gibbs.tables import merge


def spec_model(tmp_path, spec: dict, K: int, V: int, name: str = "net.json") -> tuple:
    """(the model, its initial hyperparameters) of ``spec`` written to ``tmp_path/name``."""
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    model = PdpNetwork(K, V)
    return model, model.initial_hyper(network=str(path))


def summed(model, blocks, states) -> dict:
    """The engine's tables: every partition's ``table_counts`` merged."""
    parts = [model.table_counts(blk, st, np.unique(blk.words, return_inverse=True)) for blk, st in zip(blocks, states)]
    return {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}


def one_block(docs) -> SegmentedBlock:
    """One partition of ``docs`` (a list of word ids each, one segment: documents d0, d1, ..)."""
    return SegmentedBlock.from_segments([(f"d{i}", [d]) for i, d in enumerate(docs)])


def swept(model, hyper, block, state, sweeps: int, seed: int) -> dict:
    """``sweeps`` sweeps (seeds ``seed``, ``seed`` + 1, ..) of one partition on one copy of its summed tables (no
    synchronisation between: it is the only partition), then the tables summed anew from its state."""
    tables = summed(model, [block], [state])
    derived = model.derive(tables)
    for it in range(sweeps):
        model.sweep_tables(block, state, hyper, tables, derived, seed + it)
    return summed(model, [block], [state])


class Partitions:
    """``docs`` dealt to ``parts`` partitions (document i to i mod parts), their initial states (seeds ``seed`` + p);
    :meth:`sweep` one synchronisation's sweeps, :meth:`step` the driver's step, :meth:`trained` the result."""

    def __init__(self, model, hyper: dict, docs, parts: int = 2, seed: int = 5):
        self.model, self.hyper = model, hyper
        self.blocks = [SegmentedBlock.from_segments(docs[p::parts]) for p in range(parts)]
        self.states = [model.initial_state(blk, hyper, seed + p) for p, blk in enumerate(self.blocks)]

    def summed(self) -> dict:
        return summed(self.model, self.blocks, self.states)

    def sweep(self, it: int, sweeps: int = 1) -> tuple[int, dict]:
        """Every partition's ``sweeps`` sweeps (seeds 100 it + p + 50 j) on its own copy of the summed tables, then
        the tables summed anew: (how many tokens changed topic, the new tables)."""
        tables = self.summed()
        before = [st["z"].copy() for st in self.states]
        for p, (blk, st) in enumerate(zip(self.blocks, self.states)):
            own = {name: (np.array(tab, copy=True) if isinstance(tab, np.ndarray) else tab)
                   for name, tab in tables.items()}
            derived = self.model.derive(own)
            for j in range(sweeps):
                self.model.sweep_tables(blk, st, self.hyper, own, derived, 100 * it + p + 50 * j)
        return sum(int((b0 != st["z"]).sum()) for b0, st in zip(before, self.states)), self.summed()

    def step(self, tables: dict, it: int) -> dict:
        """The driver's global step on ``tables`` (partition 0's statistics): the new hyperparameters, kept."""
        stats = self.model.partition_stats(self.blocks[0], self.states[0], self.hyper, it)
        self.hyper = self.model.global_step(tables, self.hyper, stats, it)[1]
        return self.hyper

    def trained(self, tables: dict):
        """The topics of ``tables`` (K, V), the model bound to them as a training's result (its held-out rows read
        them)."""
        topics = self.model.sample_topic_word(tables, self.model.derive(tables), self.hyper)
        self.model.bind_result(type("Result", (), {"tables": tables, "hyper": self.hyper})())
        return topics
