"""Model families: what every job asks of a kind of inference, behind one small protocol.

A family (variational EM, Gibbs sampling; later hybrid and tree) trains any of
its registered models, opens a trained one, infers topic proportions of new
documents and evaluates a model on held-out text. Jobs parse flags into the
typed requests below and hand them over; a family never sees argparse, except
in ``add_*_flags`` / ``*_settings``, where it declares and reads its own flags.

Each request carries ``engine``: the family's own typed settings (built by the
family from its flags), and :class:`TrainRequest` also ``options``: the
model's own settings by name, as its class declares them. A request checks its
fields, and a train request the model's options, against their declared
constraints (:mod:`inference.constraints`) when it is made: a bad value is a
one-line :class:`inference.errors.UsageError` naming the flag, before anything runs.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from drivers import storage
from inference.constraints import AT_LEAST_1, POSITIVE, TOPICS, Constrained, validate_options
from inference.errors import RefusedError


@dataclass(frozen=True)
class TrainRequest(Constrained):
    model: str
    corpus: str
    output: str
    topics: int
    iterations: int = 50
    seed: int = 0
    alpha: float | None = None          # initial symmetric alpha (family default when None)
    fixed_alpha: bool = False
    partitions: int | None = None
    reducers: int | None = None
    checkpoint_dir: str | None = None
    resume: bool = False
    keep_checkpoint: bool = False
    top_words: int = 10
    engine: object = None               # the family's settings
    options: dict = field(default_factory=dict)   # the model's own settings, by ModelOption.name
    inference: str | None = None        # an inference mode that picks another family (registry ``engines``)
    final_output: str | None = None     # where the model is published; ``output`` is then the staging directory
    #: the model's own settings as it declares them (its ``ModelOption``s: the registry spec's ``options``), whose
    #: constraints ``options`` is checked against when the request is made
    model_options: tuple = field(default=(), repr=False, compare=False)

    parameter_constraints = {"topics": TOPICS, "iterations": AT_LEAST_1,
                             "alpha": POSITIVE, "partitions": AT_LEAST_1, "reducers": AT_LEAST_1}

    def __post_init__(self):
        super().__post_init__()
        validate_options(self.options, self.model_options)

    @property
    def destination(self) -> str:
        """The model directory the user named (``output`` itself, or where the staging directory is published)."""
        return self.final_output or self.output

    @property
    def checkpoint(self) -> str:
        """The run's own checkpoint folder, the only one it ever deletes: ``MODEL_DIR/_checkpoint``, or in a
        ``--checkpoint-dir`` DIR (which may hold other files) a subfolder named after the output."""
        if not self.checkpoint_dir:
            return storage.join(self.destination, "_checkpoint")
        output = self.destination if "://" in self.destination else os.path.abspath(self.destination)
        tag = hashlib.sha256(output.encode("utf-8")).hexdigest()[:12]
        return storage.join(self.checkpoint_dir, f"spark-topics-checkpoint-{tag}")

    def option(self, name: str, default=None):
        value = self.options.get(name)
        return default if value is None else value


@dataclass(frozen=True)
class InferRequest(Constrained):
    model_dir: str
    input: str                          # a prepared corpus directory, or raw text
    output: str
    format: str = "auto"                # raw text: as `prepare`
    id_column: str = "id"
    text_column: str = "text"
    lang: str | None = None             # polylingual model: the language of the input
    partitions: int | None = None
    engine: object = None
    runs_on: str = "auto"               # auto (this process when small) | spark | in-process (--master none)

    parameter_constraints = {"partitions": AT_LEAST_1}


@dataclass(frozen=True)
class EvaluateRequest(Constrained):
    model_dirs: tuple                   # one model, or (variational) one model per language as "L=DIR"
    corpus: str
    reference: str | None = None
    top_words: int = 10
    seed: int = 0
    partitions: int | None = None
    engine: object = None
    left_to_right: object = None        # inference.left_to_right.LeftToRight: --method left-to-right
    runs_on: str = "spark"              # spark | auto (this process when small: the CLI without --master) | in-process

    parameter_constraints = {"partitions": AT_LEAST_1}


class ModelFamily:
    """The protocol every family implements (see the module docstring)."""

    name = "abstract"
    kind = "abstract"                   # how its models are fitted, in words ("variational", "sampled")

    def __init__(self, catalogue=None):
        #: the registry that made the family (``drivers.registry``: ``of_meta``, ``models_of``, ...), where it
        #: looks its models up; given, not imported, since the registry imports the families it names
        self.catalogue = catalogue

    # ---- flags (the only place a family sees argparse)
    def add_train_flags(self, parser) -> None:
        """The family's ``train`` flags."""

    def train_settings(self, args) -> object:
        """The family's typed training settings from its flags."""

    def add_infer_flags(self, parser) -> None:
        """The family's ``infer`` flags (a group per family: infer's --model is a directory)."""

    def infer_settings(self, args) -> object:
        """The family's typed inference settings from its flags."""

    def add_evaluate_flags(self, parser) -> None:
        """The family's ``evaluate`` flags."""

    def evaluate_settings(self, args) -> object:
        """The family's typed evaluation settings from its flags."""

    # ---- the work
    def driver_bytes(self, num_topics: int, vocab_size: int, spec=None, tokens: int | None = None) -> int:
        """Driver JVM heap a K x V model of this family needs beyond Spark's own (:mod:`drivers.engines.memory`);
        ``spec``: the registered model, ``tokens``: the corpus' tokens, when known."""
        return 0

    def train(self, spark, spec, request: TrainRequest) -> dict:
        """Fit the model and write the model directory; returns model.json's content."""
        raise NotImplementedError

    def train_summary(self, meta: dict, request: TrainRequest) -> str:
        """The line ``train`` prints when it is done."""
        raise NotImplementedError

    def open(self, model_dir: str):
        """A trained model of this family (what ``infer`` and ``evaluate`` work with)."""
        raise NotImplementedError

    def raw_text_options(self, trained, request: InferRequest) -> dict:
        """``prepare_corpus`` options for raw ``infer`` input: the model's vocabulary, tokenizer, segments."""
        raise NotImplementedError

    def infer(self, spark, trained, corpus_dir: str, request: InferRequest, prepared: dict | None = None) -> dict:
        """Topic proportions of every document of the prepared corpus ``corpus_dir`` (``prepared``: its
        corpus.json when the job prepared it from raw text); writes ``request.output``."""
        raise NotImplementedError

    def why_not_in_process(self, trained, corpus_dir: str, request: InferRequest) -> str | None:
        """None when :meth:`infer_in_process` can infer the corpus without Spark (``infer`` then does, unless
        ``--master`` names a master); else why not, in a few words."""
        return f"{self.name} models infer on Spark only"

    def infer_in_process(self, trained, corpus_dir: str, request: InferRequest, prepared: dict | None = None) -> dict:
        """:meth:`infer` in this process, without Spark: the same ``doc_topics.parquet`` and counts."""
        raise NotImplementedError

    def infer_summary(self, result: dict, request: InferRequest) -> str:
        raise NotImplementedError

    def evaluate(self, spark, request: EvaluateRequest) -> dict:
        """The model's figures on ``request.corpus``; ``spark`` None: in this process (when
        :meth:`why_not_evaluate_in_process` says None)."""
        raise NotImplementedError

    def why_not_evaluate_in_process(self, request: EvaluateRequest) -> str | None:
        """None when :meth:`evaluate` can score the request without Spark; else why not, in a few words."""
        return f"{self.name} models evaluate on Spark only"

    def refresh(self, spark, spec, base, corpus_dir: str, request, history: dict, output: str) -> dict:
        """Fit the batch in ``corpus_dir`` from the trained model ``base`` as ``request.mode`` says (``spark-topics
        refresh``, :mod:`drivers.refresh.update`), writing the model files into ``output``; returns model.json's
        content.
        The registry's ``refresh_modes`` say which models get here."""
        raise RefusedError(f"refresh is not supported for --model {spec.name}: retrain with `spark-topics train`")

    def format_metrics(self, metrics: dict) -> str:
        raise NotImplementedError
