"""What a Gibbs model does when its kept chain continues (``spark-topics refresh``,
:mod:`drivers.families.gibbs.refresh`): the hooks, declared with their defaults, that
:class:`inference.gibbs.model.GibbsModel` inherits.

A refresh reopens the chain of the last iteration N with the model built for the old vocabulary, takes the
driver's global step after N (which the first run skipped), then grows the count tables and hyperparameters to
the batch's vocabulary (``grown_chain``: word ids only grow, so an old word keeps its id and a new word has no
count yet) before the new documents are put in.
"""
from __future__ import annotations

import numpy as np

from inference.errors import RefusedError
from inference.gibbs.tables import KeyedCounts


def padded(name: str, table: np.ndarray, shape: tuple) -> np.ndarray:
    """A dense count table grown to ``shape`` (new rows/columns: zero counts)."""
    if table.shape[0] > shape[0] or table.shape[1] > shape[1]:
        raise RefusedError(f"the chain's table {name} of shape {table.shape} does not fit the model's {shape}")
    out = np.zeros(shape, dtype=table.dtype)
    out[:table.shape[0], :table.shape[1]] = table
    return out


class ChainContinuation:
    """The continuation hooks of a Gibbs model (defaults: a model whose tables are indexed by word id)."""

    #: how every array of a partition's state follows the block as the model sees it (``prepare_block``): its first
    #: axis runs over the block's "token"s, "segment"s or "document"s. A state holding an array not named here
    #: (seated tables over the partition's words) cannot lose a document: a revision is refused
    state_axes: dict = {"z": "token"}
    #: whether :meth:`continued_chain`'s rewrite moves the old words to other ids (a tree over an aligned
    #: corpus: every old word found by (language, word) in the batch's vocabulary); else the batch's vocabulary must
    #: extend the kept one, which ``refresh`` checks once before the chain is continued
    continuation_moves_words = False

    def without_documents(self, orig, state: dict, keep: np.ndarray):
        """A revised document's old copy taken out of the chain: the kept block ``orig`` without the documents
        where ``keep`` (a bool per document of ``orig``) is False, ``state`` cut alike in place by
        :attr:`state_axes` (the count tables are then recounted from the states)."""
        keep = np.asarray(keep, dtype=bool)
        block = self.prepare_block(orig)
        masks = {"token": np.repeat(keep, np.diff(orig.token_ptr())),
                 "segment": np.repeat(keep, np.diff(orig.doc_ptr))}
        first = np.minimum(block.doc_ptr[:-1], max(0, block.n_segments - 1))      # a document's first segment
        masks["document"] = keep if block.n_docs == orig.n_docs else masks["segment"][first]
        for key in state:
            axis = self.state_axes.get(key)
            if axis is None:
                raise RefusedError(f"--model {self.name} cannot take a revised document's old copy out of its chain "
                                   f"(its state {key!r} is not kept per token, segment or document): retrain on "
                                   f"the union, or refresh with new document ids")
            if state[key].shape[0] != masks[axis].shape[0]:
                raise ValueError(f"{self.name}: state {key!r} has {state[key].shape[0]} rows, not one per {axis}")
        for key in list(state):
            state[key] = np.ascontiguousarray(state[key][masks[self.state_axes[key]]])
        return orig.documents(keep)

    @classmethod
    def chain_refusal(cls, construction: dict) -> str | None:
        """Why a model built with ``construction`` (its constructor options, as in model.json) cannot continue its
        chain, as a clause after "--model NAME" (None: it can). Default: refused when the model binds its tables
        to the training corpus (a tree over its vocabulary)."""
        owner = next(c for c in cls.__mro__ if "bind_corpus" in vars(c))      # GibbsModel's default: none
        if owner.__module__ != "inference.gibbs.model":
            return "binds its tables to the training corpus (a tree)"
        return None

    def bind_hyper(self, hyper: dict) -> None:
        """Reopening a kept chain: what the model reads from its hyperparameters before its tables are declared
        (a network spec). Default: nothing."""

    def continued_chain(self, spark, old_model, base, batch, seed: int, iteration: int):
        """Reopening a kept chain: bind this model (over the batch's vocabulary) to what it needs beyond its size,
        from ``old_model`` (bound to the kept model's directory), the kept model ``base`` and the ``batch`` (None:
        no new document; else its ``directory``, ``vocab``, ``vocab_size`` and ``layout``). Returns how every old
        partition changes, ``rewrite(partition, block, state) -> new block or None`` (the state changed in place;
        the count tables are then recounted from the states), or None: the states stay, the tables grow by
        :meth:`grown_chain`. Default: None."""
        return None

    def grown_chain(self, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``(tables, hyper)`` of a chain of a model over ``old_vocab_size`` words for this model's (larger or equal)
        vocabulary, the counts unchanged. Default: dense tables padded with zero rows and columns to the declared
        shape, keyed tables' counts padded with zero columns (keys unchanged), the hyperparameters as they are."""
        out = {}
        for table in self.count_tables():
            value = tables[table.name]
            if table.keyed:
                counts = padded(table.name, value.counts, (value.counts.shape[0], table.columns))
                out[table.name] = KeyedCounts(value.keys, counts)
            else:
                out[table.name] = padded(table.name, value, (table.rows, table.columns))
        return out, hyper
