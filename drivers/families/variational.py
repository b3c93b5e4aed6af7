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
import re
import time
from dataclasses import dataclass
from functools import partial

import numpy as np

from drivers import storage
from drivers.corpora.aligned import is_aligned, load_aligned_corpus
from drivers.corpora.bow import Corpus, check_topics, load_corpus
from drivers.corpora.files import CORPUS_JSON, DOCS, REJECTS, data_version, rejects_schema
from drivers.engines.variational.checkpoint import Checkpointer
from drivers.engines.variational.engine import VariationalEngine
from drivers.engines.variational.local_steps import EStep, HybridStep
from drivers.engines.variational.settings import EMSettings
from drivers.evaluation.heldout import heldout_elbo, score_topic_word, topic_coherence
from drivers.families import EvaluateRequest, InferRequest, ModelFamily, TrainRequest
from drivers.families.variational_refresh import refresh_model
from drivers.families.variational_shared import VariationalTraining, check_python_memory, write_doc_topics
from drivers.store import model_store
from drivers.store import topics_text
from drivers.store import tokenizer
from drivers.store import outputs
from drivers.store import publish
from drivers.store.model_store import load_model, require_same_vocabulary
from drivers.store.topic_model import TopicModel
from inference.errors import UsageError
from inference.estep import compile_kernels
from inference.heldout import fold_in, word_factor
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
        per language (the corpus' layout); a tree model its tree (:class:`drivers.models.tree.layout.TreeLayout`)."""
        return corpus.layout

    def describe(self, request: TrainRequest, corpus: Corpus, structure) -> dict:
        """What the model adds to model.json."""
        return {}

    def save(self, directory: str, meta: dict, corpus: Corpus, lambda_: np.ndarray, structure) -> None:
        """The model's parameter and vocabulary files (and model.json)."""
        model_store.save_model(directory, meta, corpus.vocab, lambda_, corpus.layout)


# --------------------------------------------------------------------------- settings

def _add_estep_flags(parser) -> None:
    parser.add_argument("--estep-tol", type=float, default=1e-3, help="per-document mean |delta gamma| tolerance")
    parser.add_argument("--estep-max-iter", type=int, default=100, help="cap on per-document phi/gamma passes")


class VariationalFamily(ModelFamily):
    name = "variational"
    kind = "variational"
    matrix_file = "lambda.npy"
    positive_parameters = True

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
                            help="the local step: the variational E-step, or hybrid variational-MCMC (each "
                                 "document's topics Gibbs-sampled given E[log beta], sparse averaged counts; "
                                 "thesis §4.2); default: %(default)s (the model's, README: why this default)")
        parser.add_argument("--hybrid-burn-in", type=int, default=5, help="hybrid: burn-in sweeps per document")
        parser.add_argument("--hybrid-samples", type=int, default=5,
                            help="hybrid: kept sweeps per document, averaged into the statistics")
        parser.add_argument("--hybrid-weights", choices=("mean", "digamma"), default="mean",
                            help="hybrid: the word factor of eq 4.9, E[beta] (mean: a collapsed sampler's "
                                 "(n_kw + eta) / (n_k + V eta) with the last iteration's counts; default, see the "
                                 "README) or exp(E[log beta]) (digamma, the thesis)")
        parser.add_argument("--hybrid-alpha-warmup", type=int, default=10, metavar="N",
                            help="hybrid: the first N EM iterations learn alpha from Psi of the kept samples' mean "
                                 "counts, later ones from the samples' mean of Psi (the unbiased E[log theta]; the "
                                 "first alone lets alpha drift upward); -1: the mean counts throughout (default 10)")

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
        try:
            result = engine.fit(corpus.blocks, corpus.num_partitions, V, resume=request.resume,
                                fingerprint=fingerprint)
        except FloatingPointError as exc:
            raise FloatingPointError(name_words(str(exc), corpus.vocab)) from None

        trace = [r.__dict__ for r in result.trace]
        meta = {
            "model": model.name, "topics": K, "vocab_size": V,
            "alpha": result.alpha.tolist(), "eta": result.prior.to_json(),
            "iterations": result.iterations, "converged": result.converged,
            "elbo": trace[-1]["elbo"] if trace else None, "elbo_trace": trace,
            "seed": request.seed, "partitions": result.num_partitions,
            "settings": {"tol": e.tol, "estep_tol": e.estep_tol, "estep_max_iter": e.estep_max_iter,
                         "estep_schedule": e.estep_schedule, "restarts": e.restarts,
                         "optimize_alpha": settings.optimize_alpha, "optimize_eta": settings.optimize_eta,
                         "inference": e.inference,
                         **({"hybrid_burn_in": e.hybrid_burn_in, "hybrid_samples": e.hybrid_samples,
                             "hybrid_weights": e.hybrid_weights, "hybrid_alpha_warmup": e.hybrid_alpha_warmup}
                            if e.inference == "hybrid" else {})},
            "data": {"corpus": storage.absolute(request.corpus), "version": data_version(corpus.meta),
                     "documents": corpus.num_documents, "tokens": corpus.meta.get("tokens")},
            "code": model_store.code_version(),
            "train_seconds": round(time.time() - started, 3),
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
        write_doc_topics(spark, corpus.blocks, result.gamma_dir, storage.join(request.output, "doc_topics.parquet"),
                         prior.topic_names, local_step, result.alpha)
        if trace:
            outputs.plot_elbo(storage.join(request.output, "elbo.png"), trace, hybrid=e.inference == "hybrid")
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

    def infer_summary(self, result: dict, request: InferRequest) -> str:
        return (f"inferred topic proportions of {result['documents']} documents -> {result['output']}\n"
                f"known tokens: {result['known_tokens']}; unknown tokens (not in the model's vocabulary, ignored): "
                f"{result['unknown_tokens']}; documents with no known words (theta = alpha / sum alpha, "
                f"flagged no_known_words): {result['no_known_words']}")

    # ---- evaluate
    def evaluate(self, spark, request: EvaluateRequest) -> dict:
        options = request.engine or EStepSettings()
        if len(request.model_dirs) > 1 or "=" in request.model_dirs[0]:
            if not is_aligned(request.corpus):
                raise UsageError("--language-models needs an aligned test corpus (prepare --lang-column)")
            return evaluate_aligned(spark, language_models(None, ",".join(request.model_dirs)), request.corpus,
                                    request.top_words, request.seed, options, request.partitions)
        return evaluate_model(spark, request.model_dirs[0], request.corpus, request.reference, request.top_words,
                              request.seed, options, request.partitions)

    def format_metrics(self, metrics: dict) -> str:
        return format_aligned_metrics(metrics) if metrics.get("aligned") else format_metrics(metrics)

    # ---- refresh
    def refresh(self, spark, spec, base, corpus_dir: str, request, history: dict, output: str) -> dict:
        return refresh_model(spark, spec, base, corpus_dir, request, history, output)


def name_words(message: str, vocab) -> str:
    """``message`` with every "word id N" followed by the word itself (and its language)."""
    terms = dict(zip(vocab["id"].astype(int), vocab["term"]))
    languages = dict(zip(vocab["id"].astype(int), vocab["lang"])) if "lang" in vocab.columns else {}

    def name(match):
        i = int(match.group(1))
        if i not in terms:
            return match.group(0)
        return f"word id {i} ({terms[i]!r}" + (f", {languages[i]})" if i in languages else ")")
    return re.sub(r"word id (\d+)", name, message)


# --------------------------------------------------------------------------- inference

def exp_elogbeta(model: TopicModel) -> tuple[np.ndarray, np.ndarray]:
    """The fold-in's word factor: exp(E_q[log beta_kv]) = exp(Psi(lambda_kv) - Psi(sum_v lambda_kv)), K x V (sums
    within a language), each word's column scaled to a maximum of 1, and the (V,) logs of the scales
    (:func:`inference.heldout.word_factor`; pass them to ``fold_in(log_scale=...)`` for the exact ELBO)."""
    return word_factor(model.layout.dirichlet_expectation(model.lambda_))


def open_model_and_corpus(spark, model: TopicModel | str, corpus_dir: str, partitions: int | None = None,
                          lang: str | None = None):
    """The model and the corpus as blocks, after checking that they share the vocabulary.

    A polylingual model reads either one language (``lang``: the model's view of that
    language, a monolingual corpus) or an aligned corpus (every language of a tuple).
    """
    model = load_model(model) if isinstance(model, str) else model
    if model.languages and lang is None and is_aligned(corpus_dir):
        corpus_langs = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))["languages"]
        corpus = load_aligned_corpus(spark, corpus_dir, partitions, [l for l in model.languages if l in corpus_langs])
        for language in corpus.layout.languages:
            require_same_vocabulary(model.language_view(language), language_vocabulary(corpus, language))
        if corpus.layout.languages != tuple(model.languages):  # a subset: the model's columns of those languages
            keep = np.concatenate([np.arange(model.layout.slice_of(l).start, model.layout.slice_of(l).stop)
                                   for l in corpus.layout.languages])
            model = type(model)(model.directory, dict(model.meta, languages=list(corpus.layout.languages)),
                                model.vocab.iloc[keep].reset_index(drop=True), model.lambda_[:, keep])
        return model, corpus
    if model.languages:
        if lang is None:
            raise UsageError(f"{model.directory} is polylingual ({', '.join(model.languages)}): pass --lang for "
                             f"documents in one language, or an aligned corpus (prepare --lang-column)")
        model = model.language_view(lang)
    elif lang is not None:
        raise UsageError(f"--lang applies to polylingual models; {model.directory} is monolingual")
    corpus = load_corpus(spark, corpus_dir, partitions)
    require_same_vocabulary(model, corpus)
    return model, corpus


def language_vocabulary(corpus: Corpus, language: str) -> Corpus:
    """A Corpus shell with one language's vocabulary of an aligned corpus (for vocabulary checks)."""
    part = corpus.vocab[corpus.vocab["lang"] == language]
    vocab = part.assign(id=part["local_id"]).reset_index(drop=True)
    return Corpus(storage.join(corpus.directory, language), {}, vocab, None, 0)


def _infer_task(items, bc_params, options: EStepSettings):
    """Spark task: gamma and theta of every document of the partition's block."""
    (topic_word, _), alpha = bc_params.value
    for _, block in items:
        fit = fold_in(block, topic_word, alpha, options.tol, options.max_iter)
        for doc_id, gamma, theta in zip(block.doc_ids, fit.gamma.tolist(), fit.theta.tolist()):
            yield str(doc_id), gamma, theta


def empty_documents(spark, corpus_dir: str):
    """Ids of the documents ``prepare`` rejected as ``empty`` (no known word), as a DataFrame."""
    from pyspark.sql import functions as F

    path = storage.join(corpus_dir, REJECTS)
    if not storage.exists(path):
        return spark.createDataFrame([], "doc_id string")
    return (spark.read.schema(rejects_schema()).json(path).where(F.col("reason") == "empty")
            .select(F.col("id").alias("doc_id")))


def infer_documents(spark, model: TopicModel | str, corpus_dir: str, output_dir: str,
                    options: EStepSettings | None = None, partitions: int | None = None,
                    lang: str | None = None) -> dict:
    """Topic proportions of every document of a prepared corpus; writes OUT_DIR/doc_topics.parquet.

    Returns the counts printed by the job: documents, known and unknown tokens,
    documents with no known words.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, StringType, StructField, StructType

    options = options or EStepSettings()
    model, corpus = open_model_and_corpus(spark, model, corpus_dir, partitions, lang)
    alpha = model.alpha
    sc = spark.sparkContext
    sc.setJobDescription("infer: E-step with the model's topics")
    bc_params = sc.broadcast((exp_elogbeta(model), alpha))
    schema = StructType([StructField("doc_id", StringType(), False),
                         StructField("gamma", ArrayType(DoubleType(), False), False),
                         StructField("theta", ArrayType(DoubleType(), False), False)])
    fitted = spark.createDataFrame(corpus.blocks.mapPartitions(partial(_infer_task, bc_params=bc_params,
                                                                       options=options)), schema)
    parts = ([storage.join(corpus_dir, l) for l in corpus.layout.languages] if corpus.layout is not None
             else [corpus_dir])
    sizes = None
    for part in parts:  # an aligned corpus: a tuple's tokens are summed over its languages
        s = spark.read.parquet(storage.join(part, DOCS)).select(
            "doc_id", F.col("n_tokens").cast("long"), F.col("n_oov").cast("long").alias("n_unknown"))
        sizes = s if sizes is None else sizes.unionByName(s)
    sizes = sizes.groupBy("doc_id").agg(F.sum("n_tokens").alias("n_tokens"), F.sum("n_unknown").alias("n_unknown"))
    known = fitted.join(sizes, "doc_id").withColumn("no_known_words", F.lit(False))
    prior_mean = (alpha / alpha.sum()).tolist()
    empty = None
    for part in parts:
        e = empty_documents(spark, part)
        empty = e if empty is None else empty.unionByName(e)
    unknown_only = (empty.distinct().join(sizes.select("doc_id"), "doc_id", "left_anti")
                    .select("doc_id", F.lit(alpha.tolist()).cast("array<double>").alias("gamma"),
                            F.lit(prior_mean).cast("array<double>").alias("theta"),
                            F.lit(0).cast("long").alias("n_tokens"),
                            F.lit(None).cast("long").alias("n_unknown"),
                            F.lit(True).alias("no_known_words")))
    path = storage.join(output_dir, "doc_topics.parquet")
    known.unionByName(unknown_only).orderBy("doc_id").write.mode("overwrite").parquet(path)
    bc_params.destroy()
    corpus.blocks.unpersist()
    sc.setJobDescription(None)

    written = spark.read.parquet(path).agg(
        F.count("*").alias("documents"), F.sum("n_tokens").alias("tokens"),
        F.sum("n_unknown").alias("unknown"), F.sum(F.col("no_known_words").cast("int")).alias("empty")).first()
    return {"documents": int(written.documents), "known_tokens": int(written.tokens or 0),
            "unknown_tokens": int(written.unknown or 0), "no_known_words": int(written.empty or 0),
            "output": path}


# --------------------------------------------------------------------------- evaluation

def evaluate_model(spark, model_dir: str, corpus_dir: str, reference_dir: str | None = None,
                   top_words: int = 10, seed: int = 0, options: EStepSettings | None = None,
                   partitions: int | None = None) -> dict:
    """All metrics of the model in ``model_dir`` on the test corpus ``corpus_dir``."""
    options = options or EStepSettings()
    if is_aligned(corpus_dir):
        return evaluate_aligned(spark, language_models(model_dir, None), corpus_dir, top_words, seed,
                                options, partitions)
    model, corpus = open_model_and_corpus(spark, model_dir, corpus_dir, partitions)
    if model.languages:
        raise UsageError(f"{model_dir} is a polylingual model: evaluate it on an aligned test corpus "
                         f"(prepare --lang-column ... --vocab {model_dir}, or the heldout/ of --holdout-fraction)")
    reference = corpus if reference_dir in (None, corpus_dir) else load_corpus(spark, reference_dir, partitions)
    try:
        metrics = topic_model_metrics(spark, model, corpus, reference, top_words, seed, options)
    finally:
        corpus.blocks.unpersist()
        reference.blocks.unpersist()
    return dict(metrics, model=model_dir, corpus=corpus_dir)


def topic_model_metrics(spark, model, corpus: Corpus, reference: Corpus, top_words: int, seed: int,
                        options: EStepSettings) -> dict:
    """Document-completion perplexity, held-out ELBO and NPMI of a (monolingual view of a) model."""
    completion = score_topic_word(spark, corpus, model.topic_word(), model.alpha, seed, options)
    elbo = heldout_elbo(spark, corpus, exp_elogbeta(model), model.alpha, options)
    npmi = topic_coherence(spark, model.vocab["term"].to_numpy(), model.topic_word(), reference, top_words)
    return {
        "model": model.directory, "corpus": corpus.directory, "reference": reference.directory, "seed": seed,
        "topics": model.num_topics, "documents": corpus.num_documents,
        "perplexity": completion.perplexity,
        "completion": {"loglik": completion.loglik, "heldout_tokens": completion.heldout_tokens,
                       "documents": completion.documents, "skipped_short_documents": completion.skipped},
        "heldout_elbo_per_token": elbo["per_token"], "heldout_elbo": elbo,
        "npmi": npmi["mean"], "npmi_per_topic": npmi["per_topic"],
        "npmi_settings": {"top_words": npmi["top_words"], "reference_documents": npmi["reference_documents"]},
        "estep": {"tol": options.tol, "max_iter": options.max_iter},
    }


def language_models(model_dir: str | None, language_dirs: str | None) -> dict:
    """language -> monolingual model: the views of one polylingual model, or one model per language."""
    if language_dirs:
        models = {}
        for item in language_dirs.split(","):
            lang, _, directory = item.partition("=")
            if not directory:
                raise UsageError(f"--language-models: {item!r} is not LANG=MODEL_DIR")
            models[lang.strip()] = load_model(directory.strip())
        return models
    if model_dir is None:
        raise UsageError("evaluate needs --model (or --language-models for an aligned test corpus)")
    model = load_model(model_dir)
    if not model.languages:
        raise UsageError(f"{model_dir} is monolingual: on an aligned test corpus evaluate a polylingual model, "
                         f"or give one model per language with --language-models, or evaluate one "
                         f"language's sub-corpus (CORPUS_DIR/<lang>)")
    return {language: model.language_view(language) for language in model.languages}


def document_thetas(spark, model, corpus: Corpus, options: EStepSettings) -> dict:
    """doc_id -> theta (posterior mean of the fold-in) for every document of the corpus."""
    sc = spark.sparkContext
    bc_params = sc.broadcast((exp_elogbeta(model), model.alpha))
    try:
        rows = corpus.blocks.mapPartitions(partial(_infer_task, bc_params=bc_params, options=options)).collect()
    finally:
        bc_params.destroy()
    return {doc_id: np.asarray(theta) for doc_id, _, theta in rows}


def evaluate_aligned(spark, models: dict, corpus_dir: str, top_words: int = 10, seed: int = 0,
                     options: EStepSettings | None = None, partitions: int | None = None) -> dict:
    """Per-language document completion (each language of a tuple alone) and cross-language retrieval.

    Retrieval: theta from each language alone; for every ordered language pair (A, B) and
    every tuple present in both, is the tuple's B document the nearest (Hellinger) to its
    A document among all B documents? (precision at 1, mean rank, mean aligned divergence.)
    """
    from itertools import permutations

    from inference.retrieval import retrieval_scores

    options = options or EStepSettings()
    corpus_langs = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))["languages"]
    languages = [l for l in models if l in corpus_langs]
    if not languages:
        raise UsageError(f"no language of the model(s) ({', '.join(models)}) is in {corpus_dir} "
                         f"({', '.join(corpus_langs)})")
    per_language, thetas = {}, {}
    for language in languages:
        model = models[language]
        corpus = load_corpus(spark, storage.join(corpus_dir, language), partitions)
        require_same_vocabulary(model, corpus)
        try:
            spark.sparkContext.setJobDescription(f"evaluate language {language}")
            per_language[language] = topic_model_metrics(spark, model, corpus, corpus, top_words, seed, options)
            thetas[language] = document_thetas(spark, model, corpus, options)
        finally:
            corpus.blocks.unpersist()
    retrieval = {}
    for a, b in permutations(languages, 2):
        ids = sorted(set(thetas[a]) & set(thetas[b]))
        if len(ids) >= 2:
            retrieval[f"{a}->{b}"] = retrieval_scores(np.stack([thetas[a][i] for i in ids]),
                                                      np.stack([thetas[b][i] for i in ids]))
    spark.sparkContext.setJobDescription(None)
    sources = {m.meta.get("polylingual_model", m.directory) for m in models.values()}
    cnpmi = crosslingual_topic_coherence(spark, models, corpus_dir, languages, top_words, partitions) \
        if len(sources) == 1 and len(languages) > 1 else {}
    return {"corpus": corpus_dir, "aligned": True, "languages": languages,
            "models": {l: m.meta.get("polylingual_model", m.directory) for l, m in models.items()},
            "per_language": per_language, "retrieval": retrieval, "cnpmi": cnpmi}


def crosslingual_topic_coherence(spark, views: dict, corpus_dir: str, languages: list, top_words: int,
                                 partitions: int | None) -> dict:
    """CNPMI of one multilingual model's topics (its language views) over the aligned tuples of ``corpus_dir``."""
    from drivers.evaluation.heldout import crosslingual_coherence
    from inference.heldout import top_word_ids

    aligned = load_aligned_corpus(spark, corpus_dir, partitions, languages)
    try:
        offsets = dict(zip(aligned.layout.languages, aligned.layout.offsets))
        tops = {l: top_word_ids(views[l].topic_word(), top_words) + offsets[l] for l in languages}
        result = crosslingual_coherence(spark, aligned, tops)
    finally:
        aligned.blocks.unpersist()
    return {pair: {"mean": r["mean"], "top_words": top_words} for pair, r in result.items()}


def format_aligned_metrics(metrics: dict) -> str:
    lines = []
    for language, m in metrics["per_language"].items():
        lines.append(f"[{language}] document-completion perplexity {m['perplexity']:.3f} "
                     f"({m['completion']['documents']} documents), held-out ELBO/token "
                     f"{m['heldout_elbo_per_token']:.4f}, NPMI {m['npmi']:.4f}")
    for pair, r in metrics["retrieval"].items():
        lines.append(f"retrieval {pair}: precision@1 {r['precision_at_1']:.3f} (chance {r['chance_precision']:.3f}), "
                     f"MRR {r['mean_reciprocal_rank']:.3f}, mean rank {r['mean_rank']:.1f} of {r['documents']}, "
                     f"Hellinger aligned {r['mean_aligned_divergence']:.3f} vs all pairs "
                     f"{r['mean_divergence_all_pairs']:.3f}")
    for pair, r in (metrics.get("cnpmi") or {}).items():
        lines.append(f"crosslingual coherence CNPMI {pair} (top {r['top_words']}, over the aligned tuples): "
                     f"{r['mean']:.4f}")
    return "\n".join(lines)


def format_metrics(metrics: dict) -> str:
    c = metrics["completion"]
    per_topic = " ".join(f"{v:.3f}" for v in metrics["npmi_per_topic"])
    return "\n".join([
        f"document-completion perplexity: {metrics['perplexity']:.3f} "
        f"({c['documents']} documents, {c['heldout_tokens']:.0f} held-out tokens, "
        f"{c['skipped_short_documents']} documents with < 2 tokens skipped)",
        f"held-out ELBO per token:        {metrics['heldout_elbo_per_token']:.4f}",
        f"NPMI coherence (top {metrics['npmi_settings']['top_words']}): {metrics['npmi']:.4f}",
        f"NPMI per topic: {per_topic}",
    ])
