"""A Gibbs model's chain, kept in its model directory (``chain/``) so that ``spark-topics refresh`` continues it.

After the last iteration the engine's checkpoint directory holds everything a resumed run reads
(:mod:`drivers.engines.gibbs.checkpoint`, :mod:`drivers.engines.gibbs.state`): every partition's block
(``blocks/part-<p>.npz``), every partition's state of the last iteration t (``state/iter-<t>/part-<p>.npz``:
``z`` and whatever else the model keeps), the count tables of iteration t (``<table>-<t>.npy``) and
``state.json`` (iteration, hyperparameters, trace, documents, tokens, the run's fingerprint), and the partitions'
statistics of iteration t (``last_stats``: what the model's driver-side global step after t reads; the run skips
that step after its last iteration, a refresh takes it). ``chain/`` is a
copy of exactly those files in the same layout (``.npz`` = zipped ``.npy``, read with ``allow_pickle=False``;
no pickle anywhere), so a run started on a copy of it with ``resume`` continues the chain where it stopped. The
sums of the samples are not kept: a continuation takes its own samples.
"""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.engines.gibbs import state as gibbs_state
from drivers.engines.gibbs.checkpoint import LAST_STATS
from inference.errors import RefusedError
from inference.gibbs.tables import KeyedCounts

CHAIN = "chain"
STATE_JSON = "state.json"


def chain_dir(model_dir: str) -> str:
    return storage.join(model_dir, CHAIN)


def table_files(tables, iteration: int) -> list[str]:
    """The file names of the count tables of ``iteration`` in a checkpoint directory."""
    names = []
    for table in tables:
        parts = (f"{table.name}.keys", f"{table.name}.counts") if table.keyed else (table.name,)
        names += [f"{name}-{iteration:05d}.npy" for name in parts]
    return names


def save_chain(checkpoint_dir: str, model_dir: str, iteration: int, tables) -> None:
    """Copy the chain of ``iteration`` (the run's last: its checkpoint) from the engine's checkpoint directory to
    ``model_dir/chain``; ``tables``: the model's ``count_tables()``."""
    target = chain_dir(model_dir)
    storage.copy_tree(gibbs_state.blocks_dir(checkpoint_dir), gibbs_state.blocks_dir(target))
    storage.copy_tree(gibbs_state.state_dir(checkpoint_dir, iteration), gibbs_state.state_dir(target, iteration))
    for name in table_files(tables, iteration):
        storage.copy_tree(storage.join(checkpoint_dir, name), storage.join(target, name))
    for name in (f"{LAST_STATS}-{iteration:05d}.npy", f"{LAST_STATS}.sizes-{iteration:05d}.npy"):
        if storage.exists(storage.join(checkpoint_dir, name)):      # not in a checkpoint written before them
            storage.copy_tree(storage.join(checkpoint_dir, name), storage.join(target, name))
    meta = storage.load_json(storage.join(checkpoint_dir, STATE_JSON))
    if int(meta["iteration"]) != iteration:
        raise RuntimeError(f"the checkpoint in {checkpoint_dir} is of iteration {meta['iteration']}, not {iteration}")
    storage.save_json(storage.join(target, STATE_JSON), meta)


def read_chain_meta(model_dir: str) -> dict:
    """``chain/state.json`` of a model directory; refused (one line) for a model without a kept chain."""
    path = storage.join(chain_dir(model_dir), STATE_JSON)
    if not storage.exists(path):
        raise RefusedError(f"{model_dir} keeps no Gibbs chain (chain/state.json): it was trained before models "
                           f"kept their chain; retrain it with `spark-topics train` to refresh it")
    return storage.load_json(path)


def load_chain_tables(model_dir: str, tables, iteration: int) -> dict:
    """The count tables of the kept chain (``tables``: the ``count_tables()`` of the model as trained): dense
    arrays, keyed tables as :class:`KeyedCounts`."""
    def load(name):
        return storage.load_npy(storage.join(chain_dir(model_dir), f"{name}-{iteration:05d}.npy"))
    return {t.name: KeyedCounts(load(f"{t.name}.keys").astype(np.int64),
                                load(f"{t.name}.counts").astype(np.int32).reshape(-1, t.columns))
            if t.keyed else load(t.name) for t in tables}


def load_last_stats(model_dir: str, iteration: int) -> list | None:
    """The partitions' statistics of the kept chain's last iteration, in partition order (None: a chain kept
    before models kept them)."""
    path = storage.join(chain_dir(model_dir), f"{LAST_STATS}-{iteration:05d}.npy")
    if not storage.exists(path):
        return None
    sizes = storage.load_npy(storage.join(chain_dir(model_dir), f"{LAST_STATS}.sizes-{iteration:05d}.npy"))
    return np.split(storage.load_npy(path), np.cumsum(sizes)[:-1])


FROZEN = gibbs_state.FROZEN


def copy_chain(model_dir: str, work_dir: str, iteration: int, partitions: int, frozen: bool = False,
               apply_directive=None, rewrite=None) -> None:
    """The blocks and states of the kept chain's ``partitions`` into a new checkpoint directory ``work_dir``;
    ``frozen``: their states marked :data:`FROZEN` (else unmarked); ``apply_directive(block, state)``: the
    directive of the global step after ``iteration`` applied to each state (as a partition applies it before
    its next sweep); ``rewrite(partition, block, state)``: then the state changed in place for a grown model,
    returning the partition's new block (None: the block as it was)."""
    source = chain_dir(model_dir)
    storage.makedirs(gibbs_state.blocks_dir(work_dir))
    for p in range(partitions):
        name = f"part-{p:05d}.npz"
        arrays = gibbs_state.read_state(source, iteration, p)
        arrays.pop(FROZEN, None)
        block = gibbs_state.load_block(source, p) if apply_directive is not None or rewrite is not None else None
        if apply_directive is not None:
            apply_directive(block, arrays)
        rewritten = None if rewrite is None else rewrite(p, block, arrays)
        if rewritten is None:
            storage.copy_tree(storage.join(gibbs_state.blocks_dir(source), name),
                              storage.join(gibbs_state.blocks_dir(work_dir), name))
        else:
            gibbs_state.save_block(work_dir, p, rewritten)
        if frozen:
            arrays[FROZEN] = np.ones(1, dtype=np.int8)
        gibbs_state.write_state(work_dir, iteration, p, arrays)
