"""A partition's sampler state between two iterations of the Gibbs engine: files by iteration, kept in memory
by the Python worker that wrote them.

The engine first stages every partition's block: ``blocks/part-<p>.npz`` under the checkpoint directory
(:func:`stage`), and from then on its tasks run over a cached RDD of small handles ``(p, tokens)`` instead of
the blocks, so an iteration ships no corpus data from the JVM to Python. The task that sweeps partition p to
iteration t writes the partition's state (``z`` and whatever else the
model keeps) to ``state/iter-<t>/part-<p>.npz`` under the checkpoint directory and, on a sample iteration,
its sums of sampled topic proportions to ``samples/iter-<t>/part-<p>.npz`` (``.npz`` without pickle). The
task of the next iteration reads those and writes files of its own iteration: no task ever reads what it
(or an earlier attempt of it) has written, so a retried task, or one re-run after a lost executor or shuffle
output, reproduces its first result exactly. The driver deletes files that no later task and no retained
checkpoint needs (:meth:`drivers.engines.gibbs.checkpoint.DriverCheckpoint.prune`).

Reading is usually skipped: Spark reuses its Python workers between tasks (and schedules a handle's task
where the handle is cached, the executor that staged it), and the worker that ran a
partition keeps the partition's prepared block and its state in :data:`_CACHE`, keyed by the run and
the partition and tagged with the iteration of the state. A task that finds there the iteration it needs
uses it; any other (another worker, a new executor, a retry after a failure half-way) reads the files. A
task invalidates the tag before it changes the state and sets it when its files are written.

An item, as the engine's tasks and the job's outputs see it, is a dict: ``orig`` (the block as loaded),
``block`` (as the model sees it, ``model.prepare_block``), ``vocab_ids``/``local`` (the block's words
in a local vocabulary), ``state``, ``iteration`` (of the state), ``acc`` (sums over the samples) and
``acc_iteration`` (the sample iteration the sums end at, None before the first).
"""
from __future__ import annotations

import io

import numpy as np

from drivers import storage
from inference.gibbs.counts import local_vocabulary
from inference.gibbs.model import GibbsModel, SegmentedBlock

_CACHE: dict = {}   # (run, partition) -> item, in each Python worker

#: a state key marking a partition whose documents keep their assignments: the engine does not sweep it, its
#: counts stay in the tables (``refresh --chain-sweeps new``: o-LDA, Canini, Shi & Griffiths 2009)
FROZEN = "frozen"


# --------------------------------------------------------------------------- files

def blocks_dir(directory: str) -> str:
    return storage.join(directory, "blocks")


def state_dir(directory: str, iteration: int) -> str:
    return storage.join(directory, "state", f"iter-{iteration:05d}")


def samples_dir(directory: str, iteration: int) -> str:
    return storage.join(directory, "samples", f"iter-{iteration:05d}")


def _part(folder: str, partition: int) -> str:
    return storage.join(folder, f"part-{partition:05d}.npz")


def _save_arrays(path: str, arrays: dict) -> None:
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    for key, value in arrays.items():
        if value.dtype == object:
            raise TypeError(f"model state {key} is an object array: the state must be plain numeric arrays")
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    storage.write_bytes(path, buffer.getvalue())


def _load_arrays(path: str) -> dict:
    with np.load(io.BytesIO(storage.read_bytes(path)), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def save_block(directory: str, partition: int, block: SegmentedBlock) -> None:
    _save_arrays(_part(blocks_dir(directory), partition),
                 {"doc_ids": np.array([str(d) for d in block.doc_ids], dtype=str), "doc_ptr": block.doc_ptr,
                  "seg_ptr": block.seg_ptr, "words": block.words})


def load_block(directory: str, partition: int) -> SegmentedBlock:
    a = _load_arrays(_part(blocks_dir(directory), partition))
    return SegmentedBlock(a["doc_ids"].astype(object), a["doc_ptr"], a["seg_ptr"], a["words"])


def read_state(directory: str, iteration: int, partition: int) -> dict:
    """The state file of ``partition`` after ``iteration``."""
    return _load_arrays(_part(state_dir(directory, iteration), partition))


def write_state(directory: str, iteration: int, partition: int, arrays: dict) -> None:
    _save_arrays(_part(state_dir(directory, iteration), partition), arrays)


def iteration_dirs(directory: str, kind: str) -> dict[int, str]:
    """Iteration -> folder of every ``state`` or ``samples`` iteration under ``directory``."""
    parent = storage.join(directory, kind)
    return {int(name[5:]): storage.join(parent, name) for name in storage.list_dir(parent)
            if name.startswith("iter-")}


# --------------------------------------------------------------------------- items

def new_item(model: GibbsModel, orig: SegmentedBlock) -> dict:
    """An item without state: the block as the model sees it and its local vocabulary."""
    block = model.prepare_block(orig)
    if not np.array_equal(block.seg_ptr, orig.seg_ptr):
        raise ValueError(f"{model.name}.prepare_block must keep the segments (seg_ptr) of the block")
    vocab_ids, local = local_vocabulary(block.words)
    return {"orig": orig, "block": block, "vocab_ids": vocab_ids, "local": local,
            "state": None, "iteration": None, "acc": None, "acc_iteration": None}


def stage(run: str, partition: int, model: GibbsModel, orig: SegmentedBlock, directory: str) -> tuple:
    """Write the partition's block file and keep its item (without state) in this worker; returns the handle
    ``(partition, tokens)`` the engine's tasks run over. Running it again (a recomputed handle) rewrites the
    same file and forgets the cached state (the files hold it)."""
    save_block(directory, partition, orig)
    _CACHE[(run, partition)] = new_item(model, orig)
    return partition, orig.n_tokens


def checkout(run: str, partition: int, model: GibbsModel, directory: str, iteration: int | None,
             update: bool = True) -> dict:
    """The partition's item with the state of ``iteration`` (None: no state, for initialisation), from this
    worker's cache or the files. With ``update`` the cached tag is cleared: the caller changes the state."""
    _forget_stale(run, partition, iteration)
    item = _CACHE.get((run, partition))
    if item is None:
        item = _CACHE[(run, partition)] = new_item(model, load_block(directory, partition))
    if iteration is not None and item["iteration"] != iteration:
        item["iteration"] = None
        item["state"] = _load_arrays(_part(state_dir(directory, iteration), partition))
        model.check_state(item["block"], item["state"])
        item["iteration"] = iteration
    if update:
        item["iteration"] = None
    return item


def sample_sums(item: dict, directory: str, partition: int, acc_iteration: int | None) -> dict:
    """The sums over the samples up to ``acc_iteration`` (None: before the first sample), cached or read;
    a new dict (add to it without touching the cached one)."""
    if acc_iteration is None:
        return {"samples": np.zeros(1, dtype=np.int64)}
    if item["acc_iteration"] != acc_iteration:
        item["acc_iteration"] = None
        item["acc"] = _load_arrays(_part(samples_dir(directory, acc_iteration), partition))
        item["acc_iteration"] = acc_iteration
    return dict(item["acc"])


def checkin(run: str, partition: int, item: dict, directory: str, iteration: int,
            acc: dict | None = None) -> None:
    """Write the state of ``iteration`` (and the sums ``acc`` of a sample iteration); tag the cached item."""
    if acc is not None:
        _save_arrays(_part(samples_dir(directory, iteration), partition), acc)
        item["acc"], item["acc_iteration"] = acc, iteration
    _save_arrays(_part(state_dir(directory, iteration), partition), item["state"])
    item["iteration"] = iteration
    _CACHE[(run, partition)] = item


def _forget_stale(run: str, partition: int, iteration: int | None) -> None:
    """Drop what no task will use: other runs' items, and the state and sample sums of this run's other
    partitions whose state is older than ``iteration`` (their next iteration has run in another worker) or was
    left half-changed. Their blocks stay: when a partition's task comes back to this worker (Spark hands tasks
    to its idle Python workers in no fixed order) it reads only the state file. A worker thus holds at most
    the blocks of the partitions its executor runs."""
    for key, item in list(_CACHE.items()):
        if key[0] != run:
            del _CACHE[key]
        elif iteration is not None and key[1] != partition \
                and (item["iteration"] is None or item["iteration"] < iteration):
            item.update(state=None, iteration=None, acc=None, acc_iteration=None)
