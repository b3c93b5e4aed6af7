"""What the engines' checkpoints share: a resumed run's settings must be the checkpoint's."""
from __future__ import annotations

from inference.errors import RefusedError


def check_fingerprint(saved: dict, current: dict) -> None:
    """Refuse ``--resume`` when the checkpoint was made with other settings than the current run."""
    diff = {k: (saved.get(k), v) for k, v in current.items() if saved.get(k) != v}
    if diff:
        raise RefusedError("cannot resume: the checkpoint was made with different settings "
                           + ", ".join(f"{k}: checkpoint {a!r} vs now {b!r}" for k, (a, b) in diff.items())
                           + ". Remove the checkpoint directory or drop --resume.")
