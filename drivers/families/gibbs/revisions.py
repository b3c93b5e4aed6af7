"""A revised document leaves a Gibbs model's chain before its new text is sampled in (issue 30).

A revision (a known id with another text, :mod:`drivers.refresh.update`) is ingested as a new document of the batch;
its old copy sits in one of the kept partitions. As the chain is copied (:func:`drivers.engines.gibbs.chain.copy_chain`)
every old partition holding a revised id loses that document: its block, and its state by the model's
``state_axes`` (:meth:`inference.gibbs.continuation.ChainContinuation.without_documents`). The count tables are then
recounted from the kept states (each id once), so the old copy's tokens leave the word counts and its share of
every per-document, per-cluster and per-author statistic with them.
"""
from __future__ import annotations

import numpy as np


class RevisedOut:
    """``rewrite(partition, block, state)`` for :func:`copy_chain`: the ``revised`` documents taken out of each old
    partition (``model.without_documents``), then the model's own ``rewrite`` (None: none) on what remains. Counts
    what it took out (``documents``, ``tokens``: as the engine counts them, the blocks as the model sees them)."""

    def __init__(self, model, revised: frozenset, rewrite=None):
        self.model, self.revised, self.inner = model, revised, rewrite
        self.documents = self.tokens = self.found = 0

    def __call__(self, partition: int, block, state: dict):
        keep = np.array([str(d) not in self.revised for d in block.doc_ids], dtype=bool)
        cut = None
        if not keep.all():
            before = self.model.prepare_block(block)
            cut = self.model.without_documents(block, state, keep)
            after = self.model.prepare_block(cut)
            self.found += int((~keep).sum())
            self.documents += before.n_docs - after.n_docs
            self.tokens += before.n_tokens - after.n_tokens
        moved = None if self.inner is None else self.inner(partition, block if cut is None else cut, state)
        return moved if moved is not None else cut
