"""What both engines' driver loops share: the checkpoint's ``state.json`` (written last, after every file it names),
the resume from it (a resumed run's settings must be the checkpoint's), and the trace of iterations (each
iteration's record, its progress line, the records saved in ``state.json`` and read back on ``--resume``)."""
from __future__ import annotations

import dataclasses
import logging

from drivers import progress, storage
from inference.errors import RefusedError

log = logging.getLogger("spark_topics.train")

STATE_JSON = "state.json"


class DriverState:
    """A checkpoint directory and its driver state ``state.json``: replaced whole after the files of the iteration
    it names are written, so a run killed at any moment resumes from the last complete iteration."""

    def __init__(self, directory: str):
        self.directory = directory

    def write_state(self, iteration: int, state: dict) -> None:
        storage.save_json(storage.join(self.directory, STATE_JSON), dict(state, iteration=iteration))

    def read_state(self) -> dict | None:
        """The driver state of the last checkpoint, or None without one."""
        path = storage.join(self.directory, STATE_JSON)
        return storage.load_json(path) if storage.exists(path) else None

    def clear(self) -> None:
        storage.delete(self.directory)


def check_fingerprint(saved: dict, current: dict) -> None:
    """Refuse ``--resume`` when the checkpoint was made with other settings than the current run."""
    diff = {k: (saved.get(k), v) for k, v in current.items() if saved.get(k) != v}
    if diff:
        raise RefusedError("cannot resume: the checkpoint was made with different settings "
                           + ", ".join(f"{k}: checkpoint {a!r} vs now {b!r}" for k, (a, b) in diff.items())
                           + ". Remove the checkpoint directory or drop --resume.")


def resumed(state: dict | None, resume: bool, directory: str, fingerprint: dict) -> bool:
    """Whether the run goes on from the checkpoint ``state`` (the driver state read when ``resume`` asked for it):
    its settings checked against ``fingerprint`` and said in the log; a ``--resume`` without a checkpoint starts
    from scratch, with a warning."""
    if state is None:
        if resume:
            log.warning("--resume: no checkpoint in %s, starting from scratch", directory)
        return False
    check_fingerprint(state.get("fingerprint", {}), fingerprint)
    log.info("resuming from checkpoint %s after iteration %d", directory, int(state["iteration"]))
    return True


class Trace:
    """The records of the iterations run so far (dataclasses of one kind, e.g. the ELBO or the log likelihood and
    the seconds of each), as ``state.json`` keeps them."""

    def __init__(self, record_type, saved: list | None = None):
        self.record_type = record_type
        self.records = [record_type(**r) for r in saved or ()]

    def add(self, record, total: int, figure: str) -> None:
        """Append an iteration's record and log its progress line (``figure``: the objective)."""
        self.records.append(record)
        log.info("%s", progress.line(record.iteration, total, self.seconds(), figure=figure))
        progress.stepped()

    def seconds(self) -> float:
        return sum(r.seconds for r in self.records)

    def to_json(self) -> list:
        return [dataclasses.asdict(r) for r in self.records]
