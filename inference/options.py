"""A model's own settings, declared beside the model: the registry offers each as a ``train`` flag.

A model class lists its settings in ``options`` (a tuple of :class:`ModelOption`);
``spark-topics train --model NAME --help`` shows exactly those (with the common
flags and the flags of the model's family), and the values given reach the
model as a dict keyed by ``ModelOption.name``. Nothing here knows argparse. A setting may declare a
``constraint`` (:mod:`inference.constraints`): the family checks the value given against it before anything runs.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelOption:
    """One setting of a model: ``--NAME`` on the command line (``_`` written as ``-``)."""
    name: str                   # key in the model's options dict, e.g. "beta", "lambda_s", "segment_level"
    help: str
    type: type = float          # float, int or str; bool makes a switch (``--NAME`` sets True)
    default: object = None      # None: not given (the model decides)
    metavar: str | None = None
    path: bool = False          # a file or directory: made absolute on the driver (executors run elsewhere)
    constraint: object = None   # what a given value must be (inference.constraints), e.g. POSITIVE

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")
