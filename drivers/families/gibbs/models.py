"""The Gibbs family's models: made from the registry with their construction options, opened from a model directory,
their hyperparameters from the request, and the corpus kind each reads (segments, token order)."""
from __future__ import annotations

import json

from drivers import storage
from drivers.corpora.kinds import ORDERED, SEGMENTED
from drivers.families import TrainRequest
from drivers.store import model_store
from inference.errors import UsageError
from inference.gibbs.model import GibbsModel


def make_model(spec, num_topics: int, vocab_size: int, catalogue=None, **construction) -> GibbsModel:
    """The GibbsModel of a registry spec; ``construction``: its constructor options (e.g. segment_level), refused
    when the model takes none of that name, naming the models of ``catalogue`` (the registry) that do."""
    cls = spec.model_class()
    accepted = set(cls.construction_options)
    for key, value in construction.items():
        if value and key not in accepted:
            owners = [s.name for s in (catalogue.models_of("gibbs") if catalogue is not None else ())
                      if key in s.model_class().construction_options]
            raise UsageError(f"--{key.replace('_', '-')} applies to --model {', '.join(owners) or 'no model'} only")
    return cls(num_topics, vocab_size, **{k: v for k, v in construction.items() if k in accepted and v})


def open_trained(model_dir: str, catalogue):
    """A trained Gibbs model directory: ``(saved, model)``, the stored model (``meta``, ``vocab``, ``lambda_``
    = the K x V topic-word matrix) and the GibbsModel it was trained with, found in ``catalogue`` (the
    registry) by its model.json."""
    saved = model_store.load_model(model_dir)
    K, V = saved.lambda_.shape
    spec = catalogue.of_meta(saved.meta)
    cls = spec.model_class()
    construction = {k: saved.meta.get(k) for k in cls.construction_options}
    model = make_model(spec, K, V, catalogue, **construction)
    model.bind_directory(model_dir)
    model.bind_arrays({name: storage.load_npy(storage.join(saved.directory, f"{name}.npy"))
                       for name in model.array_files}, saved.meta)
    return saved, model


def hyper_overrides(request: TrainRequest, model: GibbsModel) -> dict:
    """The hyperparameters given on the command line, as ``initial_hyper`` keyword arguments."""
    construction = set(model.construction_options)
    overrides = {key: value for key, value in request.options.items()
                 if value is not None and key not in construction}
    if request.alpha is not None:
        overrides["alpha"] = request.alpha
    if request.fixed_alpha:
        overrides["optimize_alpha"] = False
    for item in (request.engine.hyper if request.engine else ()):
        if "=" not in item:
            raise UsageError(f"--hyper expects KEY=JSON, got {item!r}")
        key, value = item.split("=", 1)
        try:
            overrides[key.strip().replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key.strip().replace("-", "_")] = value
    return overrides


def initial_hyper(model: GibbsModel, overrides: dict) -> dict:
    try:
        hyper = model.initial_hyper(**overrides)
    except TypeError as exc:
        raise UsageError(f"--model {model.name} does not take these hyperparameters "
                         f"({', '.join(sorted(overrides))}): {exc}") from None
    except ValueError as exc:
        raise UsageError(f"--model {model.name}: {exc}") from None
    if "beta" not in hyper:
        raise TypeError(f"{model.name}.initial_hyper must set beta")
    json.dumps(hyper)  # the driver writes it to model.json: it must be JSON
    return hyper


def corpus_kind(spec, settings: dict | None = None) -> str:
    """The corpus kind the model of registry ``spec`` reads under ``settings`` (train's flags, or a trained
    model's ``hyper``): its own answer (``GibbsModel.corpus_kind``), else the registry's. Asked before the corpus
    loads."""
    own = spec.model_class().corpus_kind(settings or {})
    return spec.corpus if own is None else own


def needs_segments(spec, settings: dict | None = None) -> bool:
    """Whether the model reads segments (``prepare --segments``) under ``settings``."""
    return corpus_kind(spec, settings) == SEGMENTED


def needs_order(spec, settings: dict | None = None) -> bool:
    """Whether the model reads every document's tokens in text order (``prepare --ordered``) under ``settings``."""
    return corpus_kind(spec, settings) == ORDERED
