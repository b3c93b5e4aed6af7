"""``refresh`` of a network trained in whole-network mode (issue 30, 2; issue 28, 2:
:mod:`drivers.models.pdp_network.whole_network`).

The kept chain (``chain/``, as every Gibbs model's) holds the one partition's block and state: z, every edge's s,
the discounts and concentrations and the clock (seed, iteration). A refresh continues it through the refresh job's
machinery (:func:`drivers.families.gibbs.refresh.refresh_chain`: versions, atomic publication, the lease), with one
difference: the batch's documents join the old partition instead of partitions of their own (the state is the
whole network). :class:`BatchInChain` is ``continued_chain``'s rewrite of partition 0:

1. the block becomes the old documents followed by the batch's (their tokens after the old ones);
2. the network is compiled on it over the grown vocabulary; every old vector is found again by its family and its
   index values (document, segment, topic, previous word: the start-of-document word V_old becomes V; a kept
   column's value by its value, :func:`code_maps`: the old documents keep theirs, new values appended), and every
   old edge's s moves to its cells there (a word vector's cells w < V_old keep their word; new words' cells and
   the new documents' vectors start empty, as the split refresh grows its tables with zero rows);
3. the batch's tokens are added as a fresh run adds a document's (the initialisation of
   :meth:`WholeNetworkMode.initial_state`: a topic drawn uniformly, then the token seated along its paths), document
   d (its position in the new block) with topics from ``default_rng([seed, N, 2, d])`` and its paths' draws from
   ``SeedSequence([seed, N, 2, d])`` (seed: the clock's, the chain's own as every sweep's; N the kept chain's
   iteration);

the count tables are then recounted from the state (the job's path for a rewritten partition). With no batch the
state is untouched and the refresh is the engine's resume of the uninterrupted chain (the clock names the sweep).
The version's per-document tables hold the batch's documents (``doc_ids``), as every refresh's.
"""
from __future__ import annotations

import logging

import numpy as np

from drivers.corpora.segmented import load_segmented_corpus
from drivers.models.pdp_network.shared_roots import ColumnValues
from inference.errors import RefusedError
from inference.gibbs.block import SegmentedBlock
from inference.pdpnet import kernels, sweep
from inference.pdpnet.compile import CompiledNetwork, compile_network
from inference.pdpnet.sampler import NO_ENGINE, StirlingStack, rebuild_counts
from inference.pdpnet.spec import parse_network

log = logging.getLogger("spark_topics.refresh")
NO_DRIFT = np.zeros(0)
#: the purpose of the batch's draws in their seeds (the whole mode's: 0 initialisation, 1 sweep, 1000 the step)
BATCH = 2


def joined(old: SegmentedBlock, new: SegmentedBlock) -> SegmentedBlock:
    """The documents of ``old`` followed by those of ``new`` (one block)."""
    return SegmentedBlock(np.concatenate([np.asarray(old.doc_ids, object), np.asarray(new.doc_ids, object)]),
                          np.r_[old.doc_ptr, old.doc_ptr[-1] + new.doc_ptr[1:]].astype(np.int64),
                          np.r_[old.seg_ptr, old.seg_ptr[-1] + new.seg_ptr[1:]].astype(np.int64),
                          np.concatenate([old.words, new.words]).astype(np.int32))


def _sizes(net: CompiledNetwork, layout) -> dict:
    """Every index kind's size on ``layout`` (a kept column's: its values and the unseen one)."""
    out = {"corpus": 1, "document": len(layout.doc_ptr) - 1, "segment": len(layout.seg_ptr) - 1, "topic": net.K,
           "previous_word": net.V + 1}
    for name, col in layout.columns.items():
        out[("list:" if len(col) == 3 else "column:") + name] = int(col[-1])
    return out


def code_maps(old_sizes: dict, new_sizes: dict, old_columns, new_columns) -> dict:
    """Per index kind the new code of every old code: the same (an old document keeps its place), previous_word's
    start V_old becomes V_new, a kept column's value is found again by its value (``ColumnValues.values``; the
    unseen value stays last)."""
    maps = {kind: np.arange(size, dtype=np.int64) for kind, size in old_sizes.items()}
    maps["previous_word"][-1] = new_sizes["previous_word"] - 1
    for name, values in (old_columns.values.items() if old_columns is not None else ()):
        kind = ("list:" if name in old_columns.lists else "column:") + name
        index = {v: i for i, v in enumerate(new_columns.values[name])}
        if not set(values) <= set(index):
            raise RefusedError(f"refresh: a value of the kept column '{name}' is gone from the grown values")
        maps[kind] = np.array([index[v] for v in values] + [new_sizes[kind] - 1], np.int64)
    return maps


def instance_map(old: CompiledNetwork, new: CompiledNetwork, old_sizes: dict, new_sizes: dict,
                 maps: dict | None = None) -> np.ndarray:
    """(J_old,) the id in ``new`` of every vector of ``old`` (its family and index values moved by ``maps``,
    :func:`code_maps`; None: previous_word's start only); a vector missing there is refused (the old documents
    reach the same vectors)."""
    maps = code_maps(old_sizes, new_sizes, None, None) if maps is None else maps
    out = np.full(old.num_nodes, -1, np.int64)
    for f, name in enumerate(old.spec.order):
        kinds = old.spec.nodes[name].index
        at = np.flatnonzero(old.family == f)
        key, flat = old.key[at].copy(), np.zeros(len(at), np.int64)
        values = {}
        for kind in reversed(kinds):
            values[kind] = key % old_sizes[kind]
            key //= old_sizes[kind]
        for kind in kinds:
            flat = flat * new_sizes[kind] + maps[kind][values[kind]]
        mine = np.flatnonzero(new.family == f)
        pos = np.searchsorted(new.key[mine], flat)
        found = (pos < len(mine)) & (new.key[mine][np.minimum(pos, len(mine) - 1)] == flat)
        if not found.all():
            raise RuntimeError(f"whole-network refresh: a vector of '{name}' is missing from the grown network")
        out[at] = mine[pos]
    return out


def moved_s(old: CompiledNetwork, new: CompiledNetwork, inst: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The old edges' s at their cells in ``new`` (the same child and parent; a cell keeps its topic or word)."""
    out = np.zeros(int(new.eoff[-1]), np.int64)
    for j in range(old.num_nodes):
        lo, hi, nj = old.par_ptr[j], old.par_ptr[j + 1], inst[j]
        if new.par_ptr[nj + 1] - new.par_ptr[nj] != hi - lo:
            raise RuntimeError("whole-network refresh: an old vector's parents changed in the grown network")
        for r in range(hi - lo):
            e, ne = lo + r, new.par_ptr[nj] + r
            if new.par_node[ne] != inst[old.par_node[e]]:
                raise RuntimeError("whole-network refresh: an old vector's parents changed in the grown network")
            width = old.eoff[e + 1] - old.eoff[e]
            out[new.eoff[ne]:new.eoff[ne] + width] = s[old.eoff[e]:old.eoff[e + 1]]
    return out


def add_documents(net: CompiledNetwork, z: np.ndarray, s: np.ndarray, avals, bvals, tok_ptr: np.ndarray,
                  first: int, seed: int, iteration: int) -> None:
    """Tokens of documents ``first``.. (``tok_ptr``: the block's token ranges) added to the state (z of the tokens
    before them, s) as a fresh run adds a document's (module docstring, 3), in place on ``z`` and ``s``."""
    ancestors = kernels.ancestor_lists(net.par_ptr, net.par_node)
    start = int(tok_ptr[first])
    cnt = rebuild_counts(net, z[:start], s)
    stirling = StirlingStack(avals, sampled=[net.spec.params[n].sample for n in net.a_names])
    for d in range(first, len(tok_ptr) - 1):
        lo, hi = int(tok_ptr[d]), int(tok_ptr[d + 1])
        if hi == lo:
            continue
        z[lo:hi] = np.random.default_rng([int(seed), int(iteration), BATCH, d]).integers(0, net.K, hi - lo)
        draw = int(np.random.SeedSequence([int(seed), int(iteration), BATCH, d]).generate_state(1)[0])
        pos, reseed = lo, True
        while pos >= 0:
            stirling.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = sweep.network_sweep(
                pos, reseed, draw, False, net.words[:hi], z[:hi], net.topic_inst[:hi], net.word_inst[:hi],
                ancestors[0], ancestors[1], net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr,
                net.par_node, net.par_gamma, net.gamma_sum, avals, bvals, stirling.L3, cnt["n"], cnt["tc"],
                cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"], True, *NO_ENGINE,
                NO_DRIFT)
            reseed = False


def grown_state(model, old_model, old_block: SegmentedBlock, block: SegmentedBlock, state: dict,
                iteration: int) -> None:
    """``state`` (of ``old_block`` under ``old_model``) moved onto ``block`` (the old documents first) under
    ``model`` (the grown vocabulary), the rest of its documents added (module docstring), in place."""
    raw = model._raw
    old_layout, layout = old_model.corpus_layout(old_block), model.corpus_layout(block)
    old_net = compile_network(parse_network(raw), old_layout, old_model.num_topics)
    net = compile_network(parse_network(raw), layout, model.num_topics)
    N0 = old_block.n_tokens
    if len(state["z"]) != N0 or not np.array_equal(net.words[:N0], old_net.words):
        raise RuntimeError("whole-network refresh: the kept state does not fit its block")
    old_sizes, new_sizes = _sizes(old_net, old_layout), _sizes(net, layout)
    inst = instance_map(old_net, net, old_sizes, new_sizes, code_maps(old_sizes, new_sizes, old_model.column_values,
                                                                      model.column_values))
    s = moved_s(old_net, net, inst, np.asarray(state["s"], np.int64))
    z = np.zeros(block.n_tokens, np.int64)
    z[:N0] = state["z"]
    add_documents(net, z, s, np.asarray(state["avals"], np.float64), np.asarray(state["bvals"], np.float64),
                  block.token_ptr(), old_block.n_docs, int(state["clock"][0]), iteration)
    state.update(z=z.astype(np.int32), s=s)


class BatchInChain:
    """``rewrite(partition, block, state)`` of :func:`drivers.engines.gibbs.chain.copy_chain`: partition 0 takes
    the batch's documents (module docstring); ``doc_ids``, ``documents``, ``tokens``: the batch's."""

    def __init__(self, model, old_model, batch: SegmentedBlock, iteration: int):
        self.model, self.old_model, self.batch, self.iteration = model, old_model, batch, int(iteration)
        self.doc_ids = [str(d) for d in batch.doc_ids]
        self.documents, self.tokens = batch.n_docs, batch.n_tokens

    def __call__(self, partition: int, block: SegmentedBlock, state: dict):
        if partition != 0:
            raise RefusedError("refresh: a chain in whole-network mode has one partition; this one has more")
        union = joined(block, self.batch)
        grown_state(self.model, self.old_model, block, union, state, self.iteration)
        return union


def batch_block(spark, model, directory: str) -> SegmentedBlock:
    """The prepared batch's documents in one block (the corpus the network reads: segments, or text order)."""
    from drivers.corpora.kinds import ORDERED, SEGMENTED

    kind = model.corpus_kind({"network": model._raw})
    corpus = load_segmented_corpus(spark, directory, 1, require_segments=kind == SEGMENTED, ordered=kind == ORDERED)
    try:
        blocks = [b for _, b in corpus.blocks.collect()]
    finally:
        corpus.blocks.unpersist()
    block = blocks[0]
    for more in blocks[1:]:
        block = joined(block, more)
    return block


def continued_chain(model, spark, old_model, base, batch, iteration: int):
    """The whole mode's ``continued_chain``: None without a batch (the state stays; the engine resumes it), else
    :class:`BatchInChain` over the batch's documents. A spec indexed by kept columns: the old documents keep their
    values, the batch's bring theirs, values never seen are appended (:meth:`ColumnValues.kept`, ``grown``; the old
    model reads the kept ones, the grown model all). (The refresh's ``--seed`` is not read: the chain's draws are
    its clock's, as in training. A batch whose vocabulary does not extend the model's: refused before, by
    :func:`drivers.families.gibbs.refresh.refresh_chain`, as in every mode.)"""
    spec = parse_network(model._raw)
    if spec.columns:
        kept = ColumnValues.kept(base)
        old_model._columns, model._keeps_documents = kept, True
        model._columns = kept if batch is None else kept.grown(batch.directory)
    if batch is None:
        return None
    log.info("%s: whole-network mode: the batch's documents join its one partition, after the old ones",
             model.name)
    return BatchInChain(model, old_model, batch_block(spark, model, batch.directory), iteration)
