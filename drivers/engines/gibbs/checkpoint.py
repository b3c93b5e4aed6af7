"""The Gibbs engine's driver checkpoint: the model's count tables, its summary of the samples (LDA: the sum of their
topic-word estimates), the pending directive of the global step and ``state.json`` (last), every
``checkpoint_every`` iterations; and the pruning of files no task and no retained checkpoint needs.

Files (``.npy`` without pickle, ``t`` the iteration as 5 digits): a dense table ``<name>-t.npy`` (LDA's
``nwk-t.npy``, as before named tables), a keyed table ``<name>.keys-t.npy`` and ``<name>.counts-t.npy``,
``topic_word_sum-t.npy`` (the model's summary of the samples: LDA's sum of their K x V topic-word estimates;
none before the first sample), and a directive's arrays ``directive.<key>-t.npy`` (its JSON values in
``state.json``). The partitions' own files (state, sample sums) are :mod:`drivers.engines.gibbs.state`'s.
"""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.engines.checkpoint import DriverState
from drivers.engines.gibbs import state as gibbs_state
from drivers.engines.gibbs.settings import GibbsSettings
from inference.gibbs.tables import KeyedCounts

#: the checkpoints whose files stay
KEEP_CHECKPOINTS = 2
#: the partitions' statistics of the run's last iteration (``last_stats-t.npy``, their sizes ``last_stats.sizes-t.npy``)
LAST_STATS = "last_stats"


class DriverCheckpoint(DriverState):
    """The driver's files of one run's checkpoint directory."""

    def __init__(self, directory: str, settings: GibbsSettings):
        super().__init__(directory)
        self.settings = settings

    def file(self, name: str, t: int) -> str:
        return storage.join(self.directory, f"{name}-{t:05d}.npy")

    def is_checkpoint(self, t: int) -> bool:
        return t > 0 and (t % max(1, int(self.settings.checkpoint_every)) == 0
                          or t == self.settings.schedule.iterations)

    def save(self, t: int, meta: dict, layout, tables: dict, summary: np.ndarray | None,
             directive: dict | None, last_stats: list | None = None) -> None:
        """The tables, the model's summary of the samples (none before the first) and the directive of iteration
        ``t``, then ``state.json``; after the last iteration also the partitions' statistics of it
        (``last_stats``, in partition order: what the global step the run skips would read, so that a refresh
        takes it, :mod:`drivers.families.gibbs.refresh`)."""
        if last_stats is not None:
            storage.save_npy(self.file(LAST_STATS, t), np.concatenate([np.zeros(0)] + list(last_stats)))
            storage.save_npy(self.file(f"{LAST_STATS}.sizes", t), np.array([s.shape[0] for s in last_stats], np.int64))
        for table in layout.tables:
            value = tables[table.name]
            if table.keyed:
                storage.save_npy(self.file(f"{table.name}.keys", t), value.keys)
                storage.save_npy(self.file(f"{table.name}.counts", t), value.counts)
            else:
                storage.save_npy(self.file(table.name, t), value)
        if summary is not None:
            storage.save_npy(self.file("topic_word_sum", t), summary)
        arrays = sorted(k for k, v in (directive or {}).items() if isinstance(v, np.ndarray))
        for key in arrays:
            storage.save_npy(self.file(f"directive.{key}", t), directive[key])
        pending = None if directive is None else {"json": {k: v for k, v in directive.items() if k not in arrays},
                                                  "arrays": arrays}
        self.write_state(t, dict(meta, directive=pending, summary=summary is not None))

    def load(self, layout):
        """``(meta, tables, summary of the samples or None, directive)`` of the last checkpoint, None without
        one."""
        meta = self.read_state()
        if meta is None:
            return None
        t = meta["iteration"]
        tables = {}
        for table in layout.tables:
            if table.keyed:
                tables[table.name] = KeyedCounts(
                    storage.load_npy(self.file(f"{table.name}.keys", t)).astype(np.int64),
                    storage.load_npy(self.file(f"{table.name}.counts", t)).astype(np.int32).reshape(-1, table.columns))
            else:
                tables[table.name] = storage.load_npy(self.file(table.name, t)).astype(np.int32)
        pending = meta.get("directive")
        directive = None if pending is None else dict(
            pending["json"], **{k: storage.load_npy(self.file(f"directive.{k}", t)) for k in pending["arrays"]})
        summary = storage.load_npy(self.file("topic_word_sum", t)) if meta.get("summary", True) else None
        return meta, tables, summary, directive

    def prune(self, t: int, last_checkpoint: int) -> None:
        """Delete the files that neither a task after iteration ``t`` nor a retained checkpoint (the last
        KEEP_CHECKPOINTS) needs."""
        stale = last_checkpoint - KEEP_CHECKPOINTS * self.settings.checkpoint_every
        keep = {t} | {c for c in range(stale + 1, last_checkpoint + 1) if self.is_checkpoint(c)}
        for u, folder in gibbs_state.iteration_dirs(self.directory, "state").items():
            if u < t and u not in keep:
                storage.delete(folder)
        sums = {self.settings.schedule.last_sample(u) for u in keep}
        for u, folder in gibbs_state.iteration_dirs(self.directory, "samples").items():
            if u < t and u not in sums:
                storage.delete(folder)
        for name in storage.list_dir(self.directory):
            if name.endswith(".npy") and "-" in name and int(name.rsplit("-", 1)[1][:5]) <= stale:
                storage.delete(storage.join(self.directory, name))
