"""The Gibbs family's settings (``train``, ``infer`` and ``evaluate`` flags), checked against their declared
constraints when made."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from drivers.engines.gibbs.settings import SETTING_CONSTRAINTS
from inference.constraints import AT_LEAST_0, AT_LEAST_1, Constrained, Interval, Real, UNIT_LEFT


@dataclass(frozen=True)
class GibbsTraining(Constrained):
    """The family's training settings (``train`` flags), checked against their declared constraints when made."""
    burn_in: int | None = None
    lag: int | None = None
    samples: int | None = None
    hyper: tuple = ()                   # "KEY=JSON" items for the model's initial_hyper
    checkpoint_every: int = 10
    sweeps_per_sync: int = 1
    heldout_fraction: float = 0.0
    heldout_iterations: int = 50
    heldout_samples: int = 5
    heldout_observed: float | None = 0.5
    permute_segments: int | None = None
    sync: str = "auto"                  # resident | jobs | auto (GibbsSettings.sync)

    parameter_constraints = {**SETTING_CONSTRAINTS, "burn_in": AT_LEAST_0, "lag": AT_LEAST_1, "samples": AT_LEAST_1,
                             "heldout_fraction": UNIT_LEFT, "heldout_iterations": AT_LEAST_1,
                             "heldout_samples": AT_LEAST_1,
                             "heldout_observed": Interval(Real, 0, 1, closed="neither")}


@dataclass(frozen=True)
class GibbsInference:
    """``infer`` settings of the family."""
    segments: str | None = None         # raw input: how to cut documents (default: as the training corpus)
    sweeps: int = 50
    samples: int = 5
    seed: int = 0


@dataclass(frozen=True)
class GibbsEvaluation:
    """``evaluate`` settings of the family: the held-out protocol (``"model"``: the one it was trained with)."""
    observed: float | None | str = "model"
    iterations: int | None = None
    samples: int | None = None


def observed_fraction(text: str) -> float | None:
    """``--heldout-observed``: a fraction in (0, 1), or ``all`` (None: the same-words estimator)."""
    if text.strip().lower() == "all":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) or 'all', got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) or 'all', got {text!r}")
    return value
