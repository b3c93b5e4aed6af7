"""The one registry of models: name -> family, model class, the corpus kind it needs.

Every job finds a model here and hands the work to the model's family
(:mod:`drivers.families`); nothing outside this file lists which model belongs
to which family. A model of an existing family is its own module plus one entry
of :data:`MODELS`: its flags are the ``options`` its class declares
(:class:`inference.options.ModelOption`), its family brings the rest.

Entries name their class as ``"module:Class"``, imported when first used, so
listing the models (``train --help``) imports no model code.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from functools import lru_cache

from drivers import storage
#: corpus kinds: what a model needs from ``spark-topics prepare``
from drivers.corpora.kinds import ALIGNED, BAG_OF_WORDS, ORDERED, SEGMENTED  # noqa: F401 (the registry's names)
from inference.errors import RefusedError, UsageError

#: family name -> "module:Class" of its :class:`drivers.families.ModelFamily`
FAMILIES = {
    "variational": "drivers.families.variational.family:VariationalFamily",
    "gibbs": "drivers.families.gibbs.family:GibbsFamily",
}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str
    model: str          # "module:Class" of the model
    corpus: str         # the corpus kind it needs
    summary: str
    #: other inference modes of the same model on another family: ((``--inference`` value, family,
    #: "module:Class"), ...); ``model(name, inference)`` gives that implementation's spec
    engines: tuple = ()
    #: the ``refresh --mode`` values the model supports (``spark-topics refresh``; empty: refresh refuses it)
    refresh_modes: tuple = ()
    #: its family's ``--inference`` when the flag is not given, if not the family's own default (README: "why this
    #: default"; ``None``: the family's, variational EM for the variational family)
    default_inference: str | None = None

    def model_class(self):
        return _load(self.model, f"model {self.name!r}")

    @property
    def options(self) -> tuple:
        """The model's own settings (``ModelOption``s), offered as ``train`` flags."""
        return tuple(getattr(self.model_class(), "options", ()))

    def family_object(self):
        return family(self.family)


#: a Gibbs model's refresh: its chain continued (drivers.families.gibbs.refresh, which refuses, naming why, a model
#: whose chain cannot be continued)
GIBBS_REFRESH = ("chain",)

MODELS = {spec.name: spec for spec in (
    ModelSpec("lda", "variational", "drivers.models.lda.model:LDA", BAG_OF_WORDS,
              "LDA by hybrid variational-MCMC EM (Mr. LDA's engine, sampled local steps; --inference variational: "
              "variational EM); --prior FILE for an informed prior",
              refresh_modes=("accumulate", "online", "batch"), default_inference="hybrid"),
    ModelSpec("polylda", "variational", "drivers.models.polylda:PolyLDA", ALIGNED,
              "polylingual LDA by hybrid variational-MCMC EM (--inference variational: variational EM), one "
              "topic-word Dirichlet per language", refresh_modes=("accumulate", "online", "batch"),
              default_inference="hybrid"),
    ModelSpec("tlda", "variational", "drivers.models.tree.model:TreeLDA", BAG_OF_WORDS,
              "tree LDA: topics over the paths of a prior tree (--tree, from bilingual dictionaries); "
              "--inference gibbs on the Gibbs engine",
              engines=(("gibbs", "gibbs", "drivers.models.tree.model:TreeLDAGibbs"),),
              refresh_modes=("accumulate", "batch")),
    ModelSpec("ptlda", "variational", "drivers.models.tree.model:PolylingualTreeLDA", ALIGNED,
              "polylingual tree LDA: aligned tuples, topics over a tree spanning the languages; --inference gibbs "
              "on the Gibbs engine",
              engines=(("gibbs", "gibbs", "drivers.models.tree.model:PolylingualTreeLDAGibbs"),),
              refresh_modes=("accumulate", "batch")),
    ModelSpec("lda-gibbs", "gibbs", "drivers.models.lda_gibbs.model:LdaGibbs", BAG_OF_WORDS,
              "LDA by collapsed Gibbs sampling (AD-LDA); --segment-level: segments as documents",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("stm", "gibbs", "drivers.models.stm:STM", SEGMENTED,
              "segmented topic model: a Pitman-Yor process per segment over its document's topics",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("seqlda", "gibbs", "drivers.models.seqlda.model:SeqLDA", SEGMENTED,
              "sequential LDA: each segment's topics drawn around the previous segment's",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("adatm", "gibbs", "drivers.models.adatm.model:AdaTM", SEGMENTED,
              "adaptive topic model: segments inherit from the document or the previous segment",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("dp-mixture", "gibbs", "drivers.models.dp_mixture.model:DPMixture", BAG_OF_WORDS,
              "word-based Dirichlet-process mixture of documents (Wallach 4.5): a cluster per document, --topics: "
              "the most clusters of the start",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("pdp-network", "gibbs", "drivers.models.pdp_network.whole_network:NetworkModel", SEGMENTED,
              "a topic model given as a network of Dirichlet/Pitman-Yor vectors (--network FILE or a shipped "
              "spec: --help lists them; segments only for a network that reads them)",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("cluster-lda", "gibbs", "drivers.models.cluster_lda.model:ClusterLDA", BAG_OF_WORDS,
              "cluster-based topic model (Wallach 5.3): documents in clusters found by a Dirichlet process",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("bigram-lm", "gibbs", "drivers.models.bigram_lm:BigramLM", ORDERED,
              "hierarchical Dirichlet bigram language model (MacKay & Peto; Wallach 2.2): no topics (--topics "
              "is not used), beta n by the fixed point",
              refresh_modes=GIBBS_REFRESH),
    ModelSpec("tlm", "gibbs", "drivers.models.tlm.model:TopicLM", ORDERED,
              "topic-based language model (Wallach 3.4): a word depends on its topic and the previous word; "
              "--prior-variant 1|2 (Gibbs EM) or h1|h2a|h2b|h3 (--path minimal|maximal, sampled concentrations)",
              refresh_modes=GIBBS_REFRESH),
)}


def model(name: str, inference: str | None = None) -> ModelSpec:
    """The spec of a model, or of its implementation for ``inference`` on another family (``engines``)."""
    spec = MODELS.get(name)
    if spec is None:
        raise UsageError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    for mode, family_name, implementation in spec.engines:
        if mode == inference:
            return ModelSpec(spec.name, family_name, implementation, spec.corpus, spec.summary,
                             refresh_modes=GIBBS_REFRESH if family_name == "gibbs" else ())
    return spec


def of_meta(meta: dict) -> ModelSpec:
    """The spec a model directory's model.json names (its model and the inference mode it was trained with)."""
    if meta.get("vocabulary") == "infinite":       # drivers/models/infvoc: its own topics, infer, evaluate, refresh
        raise RefusedError("a model trained with --vocabulary infinite: `topics`, `infer`, `evaluate` and `refresh "
                           "--vocabulary infinite` read it; the other refresh modes and jobs do not")
    return model(meta.get("model"), meta.get("inference"))


def inference_modes(name: str) -> tuple:
    """The ``--inference`` values that choose another family for the model."""
    return tuple(mode for mode, _, _ in model(name).engines)


def models_of(family_name: str) -> list[ModelSpec]:
    return [spec for spec in MODELS.values() if spec.family == family_name]


@lru_cache(maxsize=None)
def family(name: str):
    """The family object (one per process), given this registry to look its models up in (a family never imports
    the registry, which names it)."""
    return _load(FAMILIES[name], f"model family {name!r}")(catalogue=sys.modules[__name__])


def families() -> list:
    return [family(name) for name in FAMILIES]


def model_of_directory(model_dir: str) -> ModelSpec:
    """The spec of the model a model directory holds (``model.json``'s ``model``)."""
    path = storage.join(model_dir, "model.json")
    if not storage.exists(path):
        raise UsageError(f"{model_dir} is not a model directory (no model.json)")
    return of_meta(storage.load_json(path))


def _load(entry: str, what: str):
    module, attribute = entry.split(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise RefusedError(f"{what} is not available: {exc}") from None
