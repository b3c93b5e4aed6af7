"""Per-iteration checkpoints of the variational driver, so ``train --resume`` continues a killed run.

Layout under the checkpoint directory::

    state.json                 driver state after the last completed iteration (written last)
    lambda-<t>.npy             lambda after iteration t (K x V)
    gamma/iter-<t>/part-<p>.npy  per-partition gamma after the E-step of iteration t,
                               written by the executors; also the warm start of iteration t+1

``state.json`` is replaced atomically after everything it points to exists, so
a run killed at any moment resumes from the last complete iteration and ends
with the model an uninterrupted run gives.
"""
from __future__ import annotations

import numpy as np

from drivers import storage

KEEP_ITERATIONS = 2


class Checkpointer:
    def __init__(self, directory: str):
        self.directory = directory

    def gamma_dir(self, iteration: int) -> str:
        return storage.join(self.directory, "gamma", f"iter-{iteration:05d}")

    @staticmethod
    def gamma_file(gamma_dir: str, partition: int) -> str:
        return storage.join(gamma_dir, f"part-{partition:05d}.npy")

    def _lambda_file(self, iteration: int) -> str:
        return storage.join(self.directory, f"lambda-{iteration:05d}.npy")

    def save(self, iteration: int, state: dict, lambda_: np.ndarray) -> None:
        storage.save_npy(self._lambda_file(iteration), lambda_)
        storage.save_json(storage.join(self.directory, "state.json"), dict(state, iteration=iteration))
        self._prune(iteration)

    def load(self):
        """(state, lambda) of the last completed iteration, or None if there is no checkpoint."""
        path = storage.join(self.directory, "state.json")
        if not storage.exists(path):
            return None
        state = storage.load_json(path)
        return state, storage.load_npy(self._lambda_file(state["iteration"]))

    def _prune(self, iteration: int) -> None:
        stale = iteration - KEEP_ITERATIONS
        for name in storage.list_dir(self.directory):
            if name.startswith("lambda-") and int(name[7:12]) <= stale:
                storage.delete(storage.join(self.directory, name))
        for name in storage.list_dir(storage.join(self.directory, "gamma")):
            if name.startswith("iter-") and int(name[5:]) <= stale:
                storage.delete(storage.join(self.directory, "gamma", name))

    def clear(self) -> None:
        storage.delete(self.directory)


def check_fingerprint(saved: dict, current: dict) -> None:
    """Refuse ``--resume`` when the checkpoint was made with other settings than the current run."""
    diff = {k: (saved.get(k), v) for k, v in current.items() if saved.get(k) != v}
    if diff:
        raise SystemExit("cannot resume: the checkpoint was made with different settings "
                         + ", ".join(f"{k}: checkpoint {a!r} vs now {b!r}" for k, (a, b) in diff.items())
                         + ". Remove the checkpoint directory or drop --resume.")
