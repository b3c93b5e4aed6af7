"""The variational family: models fitted by variational EM on
:class:`drivers.engines.variational.engine.VariationalEngine`.

A model of this family (:class:`VariationalModel`: ``lda``, ``polylda``; its own
module under ``drivers/models/``) says which corpus it reads and which
topic-word prior it puts on lambda; the family does the rest for all of them:

* ``train``: variational EM as Mr. LDA structures it, then the model directory
  (:mod:`drivers.store.model_store`): ``model.json``, ``vocab.parquet``/``lambda.npy``
  (per language for a polylingual model), ``doc_topics.parquet`` (written by the
  tasks from the last E-step's gamma), ``elbo.png``, ``topics.txt``;
* ``infer``: the E-step of Alg. 1 on new documents with the topics fixed (eq 3.4
  with exp E_q[log beta] from lambda and the model's alpha, from the cold start
  gamma_dk = alpha_k + N_d / K, :func:`inference.heldout.fold_in`), written to
  ``OUT_DIR/doc_topics.parquet``: ``doc_id``, ``gamma``, ``theta``, ``n_tokens``,
  ``n_unknown`` and ``no_known_words`` (documents ``prepare`` rejected as empty
  get gamma = alpha, theta = the prior mean);
* ``evaluate``: document-completion perplexity, held-out ELBO and NPMI
  (:mod:`drivers.evaluation.heldout`); on an aligned test corpus, per-language scores and
  cross-language retrieval (a polylingual model, or one model per language).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from drivers import storage
from drivers.corpora import in_process as local_corpus
from drivers.corpora.aligned import is_aligned
from drivers.corpora.bow import Corpus, check_topics
from drivers.corpora.files import data_version
from drivers.engines.variational.checkpoint import Checkpointer
from drivers.engines.variational.engine import OBJECTIVES, VariationalEngine
from drivers.engines.variational.local_steps import EStep, HybridStep
from drivers.engines.variational.settings import EMSettings
from drivers.evaluation import left_to_right
from drivers.families import EvaluateRequest, InferRequest, ModelFamily, TrainRequest
from drivers.families.variational.evaluate import (evaluate_aligned, evaluate_model, format_aligned_metrics,
                                                   format_metrics, language_models)
from drivers.families.variational import infer_in_process as in_process
from drivers.families.variational.infer import infer_documents, name_words
from drivers.families.variational.refresh import refresh_model
from drivers.families.variational.shared import (VariationalTraining, check_python_memory, doc_topics_writer,
                                                 write_doc_topics)
from drivers.corpora import tokenizer
from drivers.store import model_store, outputs, publish, topics_text
from drivers.store.model_store import load_model
from drivers.store.topic_model import TopicModel
from inference.errors import UsageError
from inference.estep import compile_kernels
from inference.mapper import EStepSettings


log = logging.getLogger("spark_topics.train")


# --------------------------------------------------------------------------- the models' plug-in points

@dataclass
class TopicWordPrior:
    """What a model puts on lambda: the prior (``row(k)``, see :mod:`inference.priors`), and for an informed
    prior the topic names, the report written to model.json and the prior as given (``spec``, written to
    prior_spec.json for a refresh's new words); ``fingerprint`` identifies it for --resume."""
    prior: object
    topic_names: list | None = None
    report: dict | None = None
    fingerprint: object = None
    spec: dict | None = None


class VariationalModel:
    """A model of the variational family: its corpus and its topic-word prior (subclass both hooks)."""

    name = "abstract"
    options: tuple = ()

    def open_corpus(self, spark, request: TrainRequest) -> Corpus:
        """The training corpus as blocks (``Corpus.layout``: the vocabulary layout of a polylingual one)."""
        raise NotImplementedError

    def topic_word_prior(self, request: TrainRequest, corpus: Corpus) -> TopicWordPrior:
        raise NotImplementedError

    def structure(self, request: TrainRequest, corpus: Corpus):
        """How lambda's columns form Dirichlets (the engine's ``layout``): one per topic over the vocabulary, or
        per language (the corpus' layout); a tree model its tree (:class:`inference.tree_layout.TreeLayout`)."""
        return corpus.layout

    def describe(self, request: TrainRequest, corpus: Corpus, structure) -> dict:
        """What the model adds to model.json."""
        return {}

    def save(self, directory: str, meta: dict, corpus: Corpus, lambda_: np.ndarray, structure) -> None:
        """The model's parameter and vocabulary files (and model.json)."""
        model_store.save_model(directory, meta, corpus.vocab, lambda_, corpus.layout)

    def refreshed_prior(self, base: TopicModel, vocab, eta: float):
        """Its own topic-word prior re-applied over a refresh's grown vocabulary ``vocab`` (``term``, ``id``) as
        (prior, topic names), or None: the family's (symmetric ``eta``; an older model's prior.parquet kept)."""
        return None

    def refresh_start(self, spark, base: TopicModel, corpus: Corpus):
        """A refresh's start over the batch's grown vocabulary (``corpus``), a
        :class:`drivers.families.variational.refresh.GrownStart`; None: lambda's columns are the words, new words
        enter at the model's prior (lda)."""
        return None


# --------------------------------------------------------------------------- settings

def _add_estep_flags(parser) -> None:
    parser.add_argument("--estep-tol", type=float, default=1e-3, help="per-document mean |delta gamma| tolerance")
    parser.add_argument("--estep-max-iter", type=int, default=100, help="cap on per-document phi/gamma passes")


class VariationalFamily(ModelFamily):
    name = "variational"
    kind = "variational"

    # ---- flags
    def add_train_flags(self, parser) -> None:
        parser.add_argument("--tol", type=float, default=1e-5,
                            help="stop when the relative ELBO change is below this (0: run all iterations)")
        parser.add_argument("--estep-tol", type=float, default=1e-3,
                            help="per-document mean |delta gamma| tolerance (reached once EM converges, see "
                                 "--estep-schedule)")
        parser.add_argument("--estep-max-iter", type=int, default=100, help="cap on per-document phi/gamma passes")
        parser.add_argument("--estep-schedule", choices=("auto", "fixed"), default="auto",
                            help="auto: a short first E-step from the random topics, then a per-document "
                                 "tolerance that follows the EM progress (|relative ELBO change|, between "
                                 "--estep-tol and 10x it); fixed: --estep-tol and --estep-max-iter every iteration")
        parser.add_argument("--restarts", choices=("auto", "always", "never"), default="auto",
                            help="also fit documents from a cold start and keep the better fit: in the first "
                                 "iterations and while it pays (auto), every iteration, or never")
        parser.add_argument("--inference", choices=("variational", "hybrid"), default="variational",
                            help="how each document's topics are fitted: variational (closed-form updates), or "
                                 "hybrid (Gibbs-sampled given the current topics, with sparse averaged "
                                 "counts); default: %(default)s (the model's, README: why this default)")
        parser.add_argument("--hybrid-burn-in", type=int, default=5, help="hybrid: burn-in sweeps per document")
        parser.add_argument("--hybrid-samples", type=int, default=5,
                            help="hybrid: kept sweeps per document, averaged into the statistics")
        parser.add_argument("--hybrid-weights", choices=("mean", "digamma"), default="mean",
                            help="hybrid: how the sampler weighs a word under a topic: mean (the topic's word "
                                 "probabilities from the last iteration's counts, as a collapsed Gibbs sampler does; "
                                 "default, see the README) or digamma (the variational estimate, as in the thesis)")
        parser.add_argument("--hybrid-alpha-warmup", type=int, default=10, metavar="N",
                            help="hybrid: the first N iterations learn the document-topic prior alpha from the "
                                 "samples' averaged counts (fast, but alone it lets alpha drift upward), later ones "
                                 "from each sample's counts (unbiased); -1: the averaged counts throughout "
                                 "(default: %(default)s)")

    def train_settings(self, args) -> VariationalTraining:
        return VariationalTraining(args.tol, args.estep_tol, args.estep_max_iter, args.estep_schedule, args.restarts,
                                   args.inference, args.hybrid_burn_in, args.hybrid_samples, args.hybrid_weights,
                                   args.hybrid_alpha_warmup)

    def add_infer_flags(self, parser) -> None:
        _add_estep_flags(parser)

    def infer_settings(self, args) -> EStepSettings:
        return EStepSettings(args.estep_tol, args.estep_max_iter)

    def add_evaluate_flags(self, parser) -> None:
        _add_estep_flags(parser)

    def evaluate_settings(self, args) -> EStepSettings:
        return EStepSettings(args.estep_tol, args.estep_max_iter)

    def driver_bytes(self, num_topics: int, vocab_size: int, spec=None, tokens: int | None = None) -> int:
        """No topic matrix passes through the JVM (the reducers write lambda and the mappers' weights to the topic
        files, :mod:`drivers.engines.variational.topic_store`): the driver collects K ELBO terms; in local mode its
        JVM also carries
        the shuffled statistics, in records of at most :data:`inference.mapper.RECORD_ENTRIES` numbers (16 MB),
        a few per running task. Measured: K = 1000, V = 25k runs in Spark's default 1g (README)."""
        return 256 * (1 << 20)

    # ---- train
    def train(self, spark, spec, request: TrainRequest) -> dict:
        """Variational EM for the model, then the model directory; returns model.json's content."""
        model = spec.model_class()()
        corpus = model.open_corpus(spark, request)
        try:
            return self._train(spark, model, corpus, request)
        finally:
            corpus.blocks.unpersist()

    def _train(self, spark, model: VariationalModel, corpus: Corpus, request: TrainRequest) -> dict:
        engine_settings = request.engine or VariationalTraining()
        check_topics(request.topics, corpus.vocab_size if corpus.layout is None else min(corpus.layout.sizes()))
        prior = model.topic_word_prior(request, corpus)
        compile_kernels()
        K, V = request.topics, corpus.vocab_size
        check_python_memory(spark.sparkContext, corpus, K, request.reducers)
        e = engine_settings
        optimize_eta = bool(request.option("optimize_eta", False))
        settings = EMSettings(num_topics=K, max_iterations=request.iterations, tol=e.tol,
                              estep=EStepSettings(e.estep_tol, e.estep_max_iter),
                              alpha=request.alpha, optimize_alpha=not request.fixed_alpha,
                              optimize_eta=optimize_eta, seed=request.seed, num_reducers=request.reducers,
                              restarts=e.restarts, schedule=e.estep_schedule)
        local_step = (HybridStep(request.seed, e.hybrid_burn_in, e.hybrid_samples, e.hybrid_weights == "mean",
                                 None if e.hybrid_alpha_warmup == -1 else e.hybrid_alpha_warmup)
                      if e.inference == "hybrid" else EStep(settings))
        structure = model.structure(request, corpus)
        engine = VariationalEngine(spark.sparkContext, settings, prior.prior, request.checkpoint, structure,
                                   local_step=local_step)
        log.info("training %s: K=%d, V=%d%s, %d documents, %d tokens, %d partitions", model.name.upper(),
                 K, V, "" if corpus.layout is None else " (" + ", ".join(
                     f"{l}: {n}" for l, n in zip(corpus.layout.languages, corpus.layout.sizes())) + ")",
                 corpus.num_documents, corpus.meta.get("tokens", -1), corpus.num_partitions)
        started = time.time()
        fingerprint = {"corpus": data_version(corpus.meta),
                       "estep": [e.estep_tol, e.estep_max_iter, e.restarts, e.estep_schedule],
                       "optimize": [settings.optimize_alpha, settings.optimize_eta],
                       "initial_alpha": request.alpha, "initial_eta": request.option("eta"), "model": model.name,
                       "prior": prior.fingerprint,
                       "languages": None if corpus.layout is None else list(corpus.layout.languages)}
        if e.inference == "hybrid":
            fingerprint["inference"] = [e.inference, e.hybrid_burn_in, e.hybrid_samples, e.hybrid_weights]
            if e.hybrid_alpha_warmup != -1:
                fingerprint["inference"].append(e.hybrid_alpha_warmup)
        doc_topics = storage.join(request.output, "doc_topics.parquet")
        storage.delete(doc_topics)          # the last iteration writes it, when its state is the model's gamma
        try:
            result = engine.fit(corpus.blocks, corpus.num_partitions, V, resume=request.resume,
                                fingerprint=fingerprint,
                                final_outputs=None if local_step.gamma_needs_alpha else
                                doc_topics_writer(doc_topics, prior.topic_names))
        except FloatingPointError as exc:
            raise FloatingPointError(name_words(str(exc), corpus.vocab)) from None

        meta = {
            "model": model.name, "topics": K, "vocab_size": V, **result.meta(), "eta": result.prior.to_json(),
            "objective": OBJECTIVES[local_step.objective_name],   # what "elbo" holds: hybrid's is not an ELBO
            "seed": request.seed,
            "settings": {"tol": e.tol, "estep_tol": e.estep_tol, "estep_max_iter": e.estep_max_iter,
                         "estep_schedule": e.estep_schedule, "restarts": e.restarts,
                         "optimize_alpha": settings.optimize_alpha, "optimize_eta": settings.optimize_eta,
                         "inference": e.inference,
                         **({"hybrid_burn_in": e.hybrid_burn_in, "hybrid_samples": e.hybrid_samples,
                             "hybrid_weights": e.hybrid_weights, "hybrid_alpha_warmup": e.hybrid_alpha_warmup}
                            if e.inference == "hybrid" else {})},
            "data": {"corpus": storage.absolute(request.corpus), "version": data_version(corpus.meta),
                     "documents": corpus.num_documents, "tokens": corpus.meta.get("tokens")},
            **model_store.run_stamp(started),
        }
        if prior.topic_names is not None:
            meta["topic_names"] = prior.topic_names
            meta["prior"] = prior.report
        if corpus.layout is not None:
            meta["languages"] = list(corpus.layout.languages)
            meta["vocab_sizes"] = dict(zip(corpus.layout.languages, corpus.layout.sizes()))
        meta.update(model.describe(request, corpus, structure))
        model.save(request.output, meta, corpus, result.lambda_, structure)
        publish.step("model-written")      # a test kills the run here: the model half written
        if prior.report is not None:
            model_store.save_prior(request.output, result.prior, prior.topic_names, corpus.vocab)
        if prior.spec is not None:
            storage.save_json(storage.join(request.output, model_store.PRIOR_SPEC), prior.spec)
        if not result.outputs_written:     # EM converged before the last iteration, or hybrid's gamma needs alpha
            write_doc_topics(spark, corpus.blocks, result.gamma_dir, doc_topics, prior.topic_names, local_step,
                             result.alpha)
        if meta["elbo_trace"]:
            outputs.plot_elbo(storage.join(request.output, "elbo.png"), meta["elbo_trace"], hybrid=e.inference == "hybrid")
        tokenizer.save_tokenizer(request.output, request.corpus,
                                   None if corpus.layout is None else corpus.layout.languages)
        topics_text.write_topics_file(request.output, request.top_words)
        if not request.keep_checkpoint:
            Checkpointer(request.checkpoint).clear()
        return meta

    def train_summary(self, meta: dict, request: TrainRequest) -> str:
        objective = "mean log joint" if meta.get("settings", {}).get("inference") == "hybrid" else "ELBO"
        return f"model written to {request.destination} ({meta['iterations']} iterations, {objective} {meta['elbo']:.6e})"

    # ---- open, infer
    def open(self, model_dir: str) -> TopicModel:
        return load_model(model_dir)

    def raw_text_options(self, trained: TopicModel, request: InferRequest) -> dict:
        model = trained
        if model.languages:
            if not request.lang:
                raise UsageError(f"{request.model_dir} is polylingual ({', '.join(model.languages)}): pass --lang "
                                 f"for raw text in one language, or prepare aligned input with --lang-column and "
                                 f"--vocab {request.model_dir} first")
            model = model.language_view(request.lang)
        language = model.meta.get("language")  # a language view of a polylingual model
        vocab = f"vocab.{language}.parquet" if language else "vocab.parquet"
        options = tokenizer.raw_text_options(model)
        options.pop("segments", None)         # bags of words: the segments of the training corpus do not matter
        return dict(options, format=request.format,
                    id_column=request.id_column, text_column=request.text_column,
                    vocab=storage.join(model.directory, vocab), overwrite=True)

    def infer(self, spark, trained: TopicModel, corpus_dir: str, request: InferRequest,
              prepared: dict | None = None) -> dict:
        return infer_documents(spark, trained, corpus_dir, request.output, request.engine, request.partitions,
                               request.lang)

    def why_not_in_process(self, trained: TopicModel, corpus_dir: str, request: InferRequest) -> str | None:
        return in_process.why_not_in_process(trained, corpus_dir, request.lang)

    def infer_in_process(self, trained: TopicModel, corpus_dir: str, request: InferRequest,
                         prepared: dict | None = None) -> dict:
        return in_process.infer_in_process(trained, corpus_dir, request.output, request.engine, request.lang)

    def infer_summary(self, result: dict, request: InferRequest) -> str:
        return (f"inferred topic proportions of {result['documents']} documents -> {result['output']}\n"
                f"known tokens: {result['known_tokens']}; unknown tokens (not in the model's vocabulary, ignored): "
                f"{result['unknown_tokens']}; documents with no known words (theta = alpha / sum alpha, "
                f"flagged no_known_words): {result['no_known_words']}")

    # ---- evaluate
    def evaluate(self, spark, request: EvaluateRequest) -> dict:
        if request.left_to_right is not None:
            if len(request.model_dirs) > 1 or "=" in request.model_dirs[0]:
                raise UsageError("--method left-to-right scores one monolingual --model")
            return left_to_right.evaluate_topic_model(spark, request.model_dirs[0], request.corpus,
                                                      request.left_to_right, request.partitions)
        options = request.engine or EStepSettings()
        if spark is None and self.why_not_evaluate_in_process(request) is not None:
            raise UsageError(f"cannot evaluate without Spark: {self.why_not_evaluate_in_process(request)}")
        if len(request.model_dirs) > 1 or "=" in request.model_dirs[0]:
            if not is_aligned(request.corpus):
                raise UsageError("--language-models needs an aligned test corpus (prepare --lang-column)")
            return evaluate_aligned(spark, language_models(None, ",".join(request.model_dirs)), request.corpus,
                                    request.top_words, request.seed, options, request.partitions)
        return evaluate_model(spark, request.model_dirs[0], request.corpus, request.reference, request.top_words,
                              request.seed, options, request.partitions)

    def why_not_evaluate_in_process(self, request: EvaluateRequest) -> str | None:
        if len(request.model_dirs) != 1 or "=" in request.model_dirs[0] or \
                model_store.read_meta(request.model_dirs[0]).get("languages"):
            return "a multilingual model"
        for directory in dict.fromkeys((request.corpus, request.reference or request.corpus)):
            why_not = local_corpus.why_not_in_process(directory)
            if why_not is not None:
                return why_not
        return None

    def format_metrics(self, metrics: dict) -> str:
        if metrics.get("left_to_right"):
            return left_to_right.format_metrics(metrics)
        return format_aligned_metrics(metrics) if metrics.get("aligned") else format_metrics(metrics)

    # ---- refresh
    def refresh(self, spark, spec, base, corpus_dir: str, request, history: dict, output: str) -> dict:
        return refresh_model(spark, spec, base, corpus_dir, request, history, output)


# --------------------------------------------------------------------------- inference


# --------------------------------------------------------------------------- evaluation
