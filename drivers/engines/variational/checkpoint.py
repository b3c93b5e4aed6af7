"""Per-iteration checkpoints of the variational driver, so ``train --resume`` continues a killed run.

Layout under the checkpoint directory::

    state.json                 driver state after the last completed iteration (written last)
    topics/iter-<t>/           lambda and the mappers' word weights after iteration t, written by the
                               reducers (:mod:`.topic_store`; iter-0: the start, by the driver)
    gamma/iter-<t>/part-<p>.npy  per-partition gamma after the E-step of iteration t,
                               written by the executors; also the warm start of iteration t+1

``state.json`` is replaced atomically after everything it points to exists, so
a run killed at any moment resumes from the last complete iteration and ends
with the model an uninterrupted run gives.
"""
from __future__ import annotations

from drivers import storage
from drivers.engines.checkpoint import DriverState
from inference.errors import RefusedError

KEEP_ITERATIONS = 2
#: the checkpoint layout this code writes (1: lambda-<t>.npy written by the driver)
FORMAT = 2


class Checkpointer(DriverState):
    def gamma_dir(self, iteration: int) -> str:
        return storage.join(self.directory, "gamma", f"iter-{iteration:05d}")

    @staticmethod
    def gamma_file(gamma_dir: str, partition: int) -> str:
        return storage.join(gamma_dir, f"part-{partition:05d}.npy")

    def topics_dir(self, iteration: int) -> str:
        return storage.join(self.directory, "topics", f"iter-{iteration:05d}")

    def save(self, iteration: int, state: dict) -> None:
        """Commit iteration ``iteration`` (its topic and gamma files are written): state.json, then prune."""
        self.write_state(iteration, dict(state, format=FORMAT))
        self._prune(iteration)

    def load(self) -> dict | None:
        """The driver state of the last completed iteration, or None if there is no checkpoint."""
        state = self.read_state()
        if state is not None and state.get("format") != FORMAT:
            raise RefusedError(f"cannot resume: the checkpoint in {self.directory} was written by an older "
                               f"spark-topics. Remove the checkpoint directory or drop --resume.")
        return state

    def _prune(self, iteration: int) -> None:
        stale = iteration - KEEP_ITERATIONS
        for folder in ("gamma", "topics"):
            for name in storage.list_dir(storage.join(self.directory, folder)):
                if name.startswith("iter-") and int(name[5:]) <= stale:
                    storage.delete(storage.join(self.directory, folder, name))
