"""The Gibbs engine's settings and results: the sample schedule, the run's settings, a synchronisation's plan,
an iteration's record and the run's result."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inference.constraints import AT_LEAST_1, StrOptions, check, validate
from inference.errors import UsageError

#: the run's settings a user gives (``train`` flags), declared once: checked by the family's request and here
SETTING_CONSTRAINTS = {"sweeps_per_sync": AT_LEAST_1, "checkpoint_every": AT_LEAST_1,
                       "sync": StrOptions(("auto", "resident", "jobs"))}


@dataclass
class SampleSchedule:
    """Burn-in, then ``samples`` samples ``lag`` iterations apart: iterations burn_in + j * lag, j = 1..samples."""
    iterations: int
    burn_in: int
    lag: int
    samples: int

    @classmethod
    def resolve(cls, iterations: int, burn_in: int | None = None, lag: int | None = None,
                samples: int | None = None) -> "SampleSchedule":
        """Fill unset values: 5 samples (at most ``iterations``), lag N/10 (or what fits after the
        burn-in), burn-in = what is left before the samples, e.g. N = 1000 gives 500 + 5 x 100."""
        check("--iterations", iterations, AT_LEAST_1)
        S = check("--samples", samples if samples is not None else min(5, iterations), AT_LEAST_1)
        if lag is None:
            room = iterations - (burn_in if burn_in is not None else iterations // 2)
            lag = max(1, room // S) if burn_in is not None else max(1, min(iterations // 10, room // S))
        check("--lag", lag, AT_LEAST_1)
        B = burn_in if burn_in is not None else iterations - S * lag
        if B < 0 or B + S * lag > iterations:
            raise UsageError(f"burn-in {B} + {S} samples x lag {lag} = {B + S * lag} iterations, "
                             f"more than --iterations {iterations}")
        return cls(iterations, B, lag, S)

    def is_sample(self, t: int) -> bool:
        return t > self.burn_in and (t - self.burn_in) % self.lag == 0 and (t - self.burn_in) // self.lag <= self.samples

    def last_sample(self, t: int) -> int | None:
        """The last sample iteration up to ``t`` (None before the first)."""
        j = min(self.samples, (t - self.burn_in) // self.lag) if t > self.burn_in else 0
        return self.burn_in + j * self.lag if j >= 1 else None

    def to_json(self) -> dict:
        return {"iterations": self.iterations, "burn_in": self.burn_in, "lag": self.lag, "samples": self.samples}


@dataclass
class GibbsSettings:
    schedule: SampleSchedule
    seed: int = 0
    num_reducers: int | None = None
    checkpoint_every: int = 10
    sweeps_per_sync: int = 1          # local sweeps between two synchronisations of the counts (AD-LDA: 1)
    sync: str = "auto"                # "resident" (one barrier stage), "jobs" (a Spark job each), "auto"

    def __post_init__(self):
        m, sched = int(self.sweeps_per_sync), self.schedule
        validate(self, SETTING_CONSTRAINTS)
        bad = [f"{name} {value}" for name, value in (("iterations", sched.iterations), ("burn-in", sched.burn_in),
                                                      ("lag", sched.lag), ("checkpoint-every", self.checkpoint_every))
               if value % m]
        if bad:
            raise UsageError(f"with --sweeps-per-sync {m}, iterations, burn-in, lag and checkpoint-every must be "
                             f"multiples of {m} (samples and checkpoints fall on synchronisations): "
                             + ", ".join(bad))


@dataclass
class GibbsRecord:
    iteration: int
    seconds: float
    tokens_per_second: float        # tokens of the corpus / wall seconds of the iteration
    sweep_tokens_per_second: float  # tokens / summed sweep seconds of the tasks (kernel speed per core)
    loglik: float                   # log p(w | z, beta), Phi integrated out
    loglik_per_token: float
    sample: bool
    hyper: dict                     # scalars of the hyperparameters after the update (vectors: their sum)


@dataclass
class GibbsResult:
    topic_word: np.ndarray          # K x V posterior mean over the samples
    hyper: dict
    trace: list
    iterations: int
    samples: int
    states: object                  # RDD of (partition, item) after the last iteration, read on demand
    num_partitions: int
    num_tokens: int
    num_documents: int              # documents as the model sees them (LDA_P: segments)
    counts_summed_on: str = "reducers"   # "driver": one Spark stage per synchronisation
    tables: dict | None = None      # the model's count tables after the last iteration (name -> value)
    sync: str = "jobs"              # how partitions synchronised: "resident", "jobs", "resident, then jobs"

    def meta(self) -> dict:
        """What model.json records of the chain, the same for ``train`` and ``refresh``."""
        trace = [r.__dict__ for r in self.trace]
        return {**({"alpha": self.hyper["alpha"]} if "alpha" in self.hyper else {}),
                "beta": self.hyper.get("beta"), "hyper": self.hyper, "samples_taken": self.samples,
                "loglik": trace[-1]["loglik"] if trace else None, "trace": trace,
                "partitions": self.num_partitions, "counts_summed_on": self.counts_summed_on, "sync": self.sync}


def hyper_summary(hyper: dict) -> dict:
    """The numbers of ``hyper`` worth a log line: floats as they are, vectors by their sum."""
    out = {}
    for key, value in hyper.items():
        if isinstance(value, bool) or key == "cycles":
            continue
        if isinstance(value, float):
            out[key] = value
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
            out[f"{key}_sum"] = float(np.sum(value))
    return out


@dataclass(frozen=True)
class SyncPlan:
    """What every partition does in one synchronisation (one Spark job, or one message pair)."""
    iterations: tuple               # iteration numbers to sweep, consecutive; () initialises instead
    sample: bool = False            # the last one is a sample: add the proportions to the sums
    previous_sample: int | None = None   # the sample iteration whose sums this sample adds to

    @property
    def last(self) -> int:
        return self.iterations[-1] if self.iterations else 0
