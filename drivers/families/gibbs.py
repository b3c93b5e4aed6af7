"""The Gibbs family: models sampled on :class:`drivers.engines.gibbs.engine.GibbsEngine` (lda-gibbs, stm, seqlda,
adatm, tree models).

A model of this family is a :class:`inference.gibbs.model.GibbsModel` (numba
kernels and a few hooks, :mod:`inference.gibbs`); the family loads the corpus as
segmented blocks (:mod:`drivers.corpora.segmented`), runs the engine and writes
the model directory::

    model.json              model, K, V, alpha and every hyperparameter (hyper), the schedule
                            (iterations, burn-in, lag, samples), the per-iteration trace, seed,
                            partitions, held-out perplexity (when asked), data and code versions
    vocab.parquet           term, id (+ df, cf)
    topic_word.npy          K x V posterior-mean topic-word probabilities (rows sum to 1)
    doc_topics.parquet      doc_id, theta (K): document topic proportions averaged over the samples
    segment_topics.parquet  doc_id, segment (position among the document's kept segments, after
                            --permute-segments when given), theta (K)
    loglik.png              log p(w | z) per token against iteration
    topics.txt              the top words of every topic

``infer`` estimates every new document as a held-out one (the model's own sampler with the topics fixed
to the trained phi-hat, :func:`inference.gibbs.heldout.frozen_chain`), ``evaluate`` scores held-out
perplexity with the thesis' estimator (:func:`drivers.evaluation.heldout.score_heldout`, the same for every Gibbs
model) and NPMI coherence as for the variational models.
"""
from __future__ import annotations

import argparse
import json
import logging
import time
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from drivers import registry, storage
from drivers.corpora.aligned import is_aligned
from drivers.corpora.bow import check_topics, load_corpus
from drivers.corpora.files import data_version
from drivers.corpora.segmented import load_segmented_corpus
from drivers.engines.gibbs.engine import GibbsEngine
from drivers.engines.gibbs.settings import SETTING_CONSTRAINTS, GibbsSettings, SampleSchedule
from drivers.engines.gibbs.tables import TableLayout
from drivers.evaluation.heldout import score_heldout, topic_coherence
from drivers.families import EvaluateRequest, InferRequest, ModelFamily, TrainRequest
from drivers.store import model_store
from drivers.store import topics_text
from drivers.store import tokenizer
from drivers.store import outputs
from drivers.store.model_store import require_same_vocabulary
from inference.constraints import AT_LEAST_0, AT_LEAST_1, UNIT_LEFT, Constrained, Interval, Real
from inference.errors import UsageError
from inference.gibbs.heldout import HeldoutSchedule
from inference.gibbs.model import GibbsModel

log = logging.getLogger("spark_topics.train")


# --------------------------------------------------------------------------- settings

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


# --------------------------------------------------------------------------- models

def make_model(name, num_topics: int, vocab_size: int, **construction) -> GibbsModel:
    """The GibbsModel of a registered name (or spec); ``construction``: its constructor options (e.g.
    segment_level)."""
    cls = (name if isinstance(name, registry.ModelSpec) else registry.model(name)).model_class()
    accepted = set(cls.construction_options)
    for key, value in construction.items():
        if value and key not in accepted:
            owners = [s.name for s in registry.models_of("gibbs")
                      if key in s.model_class().construction_options]
            raise UsageError(f"--{key.replace('_', '-')} applies to --model {', '.join(owners) or 'no model'} only")
    return cls(num_topics, vocab_size, **{k: v for k, v in construction.items() if k in accepted and v})


def open_trained(model_dir: str):
    """A trained Gibbs model directory: ``(saved, model)``, the stored model (``meta``, ``vocab``, ``lambda_``
    = the K x V topic-word matrix) and the GibbsModel it was trained with."""
    saved = model_store.load_model(model_dir)
    K, V = saved.lambda_.shape
    spec = registry.of_meta(saved.meta)
    cls = spec.model_class()
    construction = {k: saved.meta.get(k) for k in cls.construction_options}
    model = make_model(spec, K, V, **construction)
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


def needs_segments(name: str) -> bool:
    return registry.model(name).corpus == registry.SEGMENTED


def needs_order(name: str) -> bool:
    return registry.model(name).corpus == registry.ORDERED


# --------------------------------------------------------------------------- the family

class GibbsFamily(ModelFamily):
    name = "gibbs"
    kind = "sampled"
    matrix_file = "topic_word.npy"
    positive_parameters = False

    # ---- flags
    def add_train_flags(self, g) -> None:
        g.add_argument("--permute-segments", type=int, default=None, metavar="SEED",
                       help="randomly permute the segment order of every document, in training and in the "
                            "held-out split (thesis PTrTe); the permutation is a fixed function of (SEED, doc_id)")
        g.add_argument("--burn-in", type=int, default=None,
                       help="iterations before the first sample (default: iterations - samples x lag)")
        g.add_argument("--lag", type=int, default=None, help="iterations between samples (default: iterations/10)")
        g.add_argument("--samples", type=int, default=None,
                       help="samples averaged into the point estimates (default 5)")
        g.add_argument("--hyper", action="append", default=[], metavar="KEY=JSON",
                       help="any other hyperparameter of the model's initial_hyper, e.g. --hyper sample_b=false")
        g.add_argument("--checkpoint-every", type=int, default=10,
                       help="write the sampler state every N iterations (also truncates the RDD lineage)")
        g.add_argument("--sweeps-per-sync", type=int, default=1,
                       help="local sweeps of every partition between two synchronisations of the topic-word "
                            "counts (default 1: AD-LDA; more amortises Spark's per-job cost, with staler counts)")
        g.add_argument("--sync", choices=("auto", "resident", "jobs"), default="auto",
                       help="how partitions synchronise: 'resident' runs every partition's sampler as one task of "
                            "a barrier stage for the whole run, trading counts with the driver over TCP (executors "
                            "must reach the driver's host); 'jobs' runs a Spark job per synchronisation; 'auto' "
                            "(default): resident when the cluster runs all partitions at once and the counts fit "
                            "the driver, else jobs. The same model either way")
        g.add_argument("--heldout-fraction", type=float, default=0.0,
                       help="hold out this fraction of documents (by a hash of doc_id) and report their "
                            "perplexity (thesis: 0.2)")
        g.add_argument("--heldout-iterations", type=int, default=50,
                       help="sweeps per held-out document (samples over the second half)")
        g.add_argument("--heldout-samples", type=int, default=5, help="samples averaged per held-out token")
        g.add_argument("--heldout-observed", type=observed_fraction, default=0.5, metavar="F|all",
                       help="document completion (default 0.5): the sampler sees a random fraction F of every "
                            "test segment and the other words are scored (the thesis' 'likelihood of each unseen "
                            "word', Rosen-Zvi et al. 2004); 'all': every word is fitted and scored")

    def train_settings(self, args) -> GibbsTraining:
        return GibbsTraining(args.burn_in, args.lag, args.samples, tuple(args.hyper or ()), args.checkpoint_every,
                             args.sweeps_per_sync, float(args.heldout_fraction or 0.0), args.heldout_iterations,
                             args.heldout_samples, args.heldout_observed, args.permute_segments, args.sync)

    def add_infer_flags(self, g) -> None:
        g.add_argument("--segments", default=None,
                       help="raw input: how to cut documents into segments, as `prepare --segments` (default: as "
                            "the model's training corpus was)")
        g.add_argument("--sweeps", type=int, default=50, help="sweeps of the model's sampler per document")
        g.add_argument("--samples", type=int, default=5,
                       help="samples averaged over the second half of the sweeps")
        g.add_argument("--seed", type=int, default=0, help="seed of the sampler")

    def infer_settings(self, args) -> GibbsInference:
        return GibbsInference(args.segments, args.sweeps, args.samples, args.seed)

    def add_evaluate_flags(self, g) -> None:
        g.add_argument("--heldout-observed", default="model", metavar="F|all",
                       help="document completion with a fraction F of every test segment observed, or 'all' "
                            "(every word fitted and scored); default: the protocol the model was trained with "
                            "(0.5 if it records none)")

    def evaluate_settings(self, args) -> GibbsEvaluation:
        observed = args.heldout_observed
        if observed != "model":
            try:
                observed = observed_fraction(observed)
            except argparse.ArgumentTypeError as exc:
                raise UsageError(f"--heldout-observed: {exc}") from None
        return GibbsEvaluation(observed)

    def driver_bytes(self, num_topics: int, vocab_size: int, spec=None, tokens: int | None = None) -> int:
        """The model's count tables, broadcast and summed back (:meth:`TableLayout.driver_bytes`: a dense table's
        cells, a keyed table's nonzeros bounded by the corpus' ``tokens``), and the topic-word sums (K x V
        float64, two). Without a spec, or for a model whose tables follow its corpus (a tree's edges, known once
        the tree is read), LDA's V x K table."""
        layout = None
        if spec is not None:
            model = make_model(spec, num_topics, vocab_size)
            try:
                layout = TableLayout(model.count_tables(), 1)
            except AttributeError:      # the tables need bind_corpus (a tree model's)
                layout = None
        tables = 3 * 4 * num_topics * vocab_size if layout is None else layout.driver_bytes(tokens)
        return tables + 2 * 8 * num_topics * vocab_size

    # ---- train
    def train(self, spark, spec, request: TrainRequest) -> dict:
        """Train a Gibbs model and write the model directory; returns model.json's content."""
        started = time.time()
        e = request.engine or GibbsTraining()
        heldout = e.heldout_fraction
        per = spec.model_class().aligned_documents_per
        if is_aligned(request.corpus) and per is None:
            raise UsageError(f"{request.corpus} is an aligned corpus: --model {spec.name} reads one vocabulary; "
                             f"train it on one language's sub-corpus ({request.corpus}/<lang>)")
        corpus = load_segmented_corpus(spark, request.corpus, request.partitions, heldout_fraction=heldout,
                                       split="train" if heldout > 0 else "all",
                                       require_segments=needs_segments(spec.name), ordered=needs_order(spec.name),
                                       permute_seed=e.permute_segments,
                                       separate_languages=per == "language", power_of_two=True)
        try:
            return self._train(spark, spec, request, e, corpus, started)
        finally:
            corpus.blocks.unpersist()

    def _train(self, spark, spec, request: TrainRequest, e: GibbsTraining, corpus, started: float) -> dict:
        K, V = request.topics, corpus.vocab_size
        check_topics(K, V)
        schedule = SampleSchedule.resolve(request.iterations, e.burn_in, e.lag, e.samples)
        cls = spec.model_class()
        model = make_model(spec, K, V, **{k: request.options.get(k)
                                          for k in cls.construction_options})
        model.bind_corpus(corpus, request)   # a model that needs more of the corpus than its size (a tree)
        hyper0 = initial_hyper(model, hyper_overrides(request, model))
        settings = GibbsSettings(schedule, seed=request.seed, num_reducers=request.reducers,
                                 checkpoint_every=e.checkpoint_every, sweeps_per_sync=e.sweeps_per_sync, sync=e.sync)
        engine = GibbsEngine(spark.sparkContext, model, settings, request.checkpoint)
        segment_level = bool(model.segment_level)
        fingerprint = {"corpus": data_version(corpus.meta), "heldout_fraction": e.heldout_fraction,
                       "segment_level": segment_level, "initial_hyper": hyper0}
        if e.permute_segments is not None:
            fingerprint["permute_segments"] = e.permute_segments
        display = model.display_name
        log.info("training %s: K=%d, V=%d, %d documents, %d segments, %d tokens, %d partitions, hyper %s",
                 display, K, V, corpus.num_documents, corpus.num_segments, corpus.num_tokens,
                 corpus.num_partitions, json.dumps(hyper0))
        try:
            result = engine.fit(corpus.blocks, corpus.num_partitions, hyper0, resume=request.resume,
                                fingerprint=fingerprint)
            topic_word = result.topic_word
            if not np.allclose(topic_word.sum(axis=1), 1.0):
                raise RuntimeError("topic_word rows do not sum to 1")
            storage.makedirs(request.output)
            model_store.save_matrix(request.output, "topic_word", topic_word, corpus.vocab, corpus.layout,
                                    normalise=True)
            model.bind_result(result)        # what the outputs and the predictive need of the final state
            write_proportions(spark, model, result.states, request.output)
            model.save_files(request.output, result)
            arrays = model.saved_arrays()
            for name in model.array_files:
                storage.save_npy(storage.join(request.output, f"{name}.npy"), arrays[name])
        finally:
            engine.release()
        trace = [r.__dict__ for r in result.trace]
        meta = {
            "model": model.name, "inference": "gibbs", "segment_level": segment_level,
            "permute_segments": e.permute_segments, "topics": K, "vocab_size": V,
            **({"alpha": result.hyper["alpha"]} if "alpha" in result.hyper else {}),
            "beta": result.hyper.get("beta"), "hyper": result.hyper,
            "initial_hyper": hyper0, **settings.schedule.to_json(), "samples_taken": result.samples,
            "loglik": trace[-1]["loglik"] if trace else None, "trace": trace,
            "seed": request.seed, "partitions": result.num_partitions, "checkpoint_every": e.checkpoint_every,
            "sweeps_per_sync": e.sweeps_per_sync, "counts_summed_on": result.counts_summed_on, "sync": result.sync,
            "data": {"corpus": storage.absolute(request.corpus), "version": data_version(corpus.meta),
                     "documents": corpus.num_documents, "segments": corpus.num_segments,
                     "tokens": corpus.num_tokens, "segmented": corpus.segmented, "split": corpus.split,
                     "heldout_fraction": e.heldout_fraction},
            "code": model_store.code_version(),
        }
        if e.heldout_fraction > 0:
            meta["heldout"] = evaluate_split(spark, model, result.hyper, topic_word, request, e)
            observed = meta["heldout"]["observed"]
            log.info("held-out perplexity %.3f (%d documents, %d %s tokens)", meta["heldout"]["perplexity"],
                     meta["heldout"]["documents"], meta["heldout"]["tokens"],
                     "fitted and scored" if observed is None else f"unseen (observed {observed:g} of every segment)")
        if corpus.layout is not None:
            meta.update(languages=list(corpus.layout.languages),
                        vocab_sizes=dict(zip(corpus.layout.languages, corpus.layout.sizes())),
                        documents_per=model.aligned_documents_per)
        meta.update(model.describe())
        meta["train_seconds"] = round(time.time() - started, 3)
        storage.save_json(storage.join(request.output, "model.json"), meta)
        if trace:
            outputs.plot_trace(storage.join(request.output, "loglik.png"), trace, f"{display}: Gibbs sampler")
        tokenizer.save_tokenizer(request.output, request.corpus,
                                   corpus.layout.languages if corpus.layout is not None else None)
        topics_text.write_topics_file(request.output, request.top_words)
        if not request.keep_checkpoint:
            engine.clear_checkpoint()
        return meta

    def train_summary(self, meta: dict, request: TrainRequest) -> str:
        held = f", held-out perplexity {meta['heldout']['perplexity']:.3f}" if "heldout" in meta else ""
        return (f"model written to {request.destination} ({meta['iterations']} iterations, {meta['samples_taken']} "
                f"samples, log p(w|z) per token {meta['trace'][-1]['loglik_per_token']:.4f}{held})")

    # ---- open, infer
    def open(self, model_dir: str):
        if model_store.read_meta(model_dir).get("languages"):
            return point_estimates().open(model_dir)
        return open_trained(model_dir)

    def raw_text_options(self, trained, request: InferRequest) -> dict:
        if not isinstance(trained, tuple):
            return point_estimates().raw_text_options(trained, replace(request, engine=None))
        saved, _ = trained
        if request.lang is not None:
            raise UsageError("--lang applies to polylingual models")
        settings = request.engine or GibbsInference()
        options = tokenizer.raw_text_options(saved)
        options["segments"] = settings.segments or options.get("segments")
        log.info("raw input is cut into segments: %s", options["segments"] or "one per document")
        return dict(options, format=request.format, id_column=request.id_column, text_column=request.text_column,
                    vocab=storage.join(saved.directory, "vocab.parquet"), overwrite=True)

    def infer(self, spark, trained, corpus_dir: str, request: InferRequest, prepared: dict | None = None) -> dict:
        if not isinstance(trained, tuple):
            return point_estimates().infer(spark, trained, corpus_dir, replace(request, engine=None), prepared)
        settings = request.engine or GibbsInference()
        if request.lang is not None:
            raise UsageError("--lang applies to polylingual models")
        if prepared is None and settings.segments:
            raise UsageError("--segments applies to raw input; a prepared corpus keeps its segments")
        result = infer_gibbs(spark, trained, corpus_dir, request.output, settings.sweeps, settings.samples,
                             settings.seed, request.partitions)
        result["no_known_words"] = int(((prepared or {}).get("rejected") or {}).get("empty", 0))
        result["rejects"] = storage.join(corpus_dir, "rejects")
        return result

    def infer_summary(self, result: dict, request: InferRequest) -> str:
        if "sweeps" not in result:
            return point_estimates().infer_summary(result, request)
        lines = [f"inferred topic proportions of {result['documents']} documents ({result['segments']} segments, "
                 f"{result['tokens']} known tokens; {result['sweeps']} sweeps, {result['samples']} samples) -> "
                 f"{result['output']}, {result['segment_output']}"]
        if result["no_known_words"]:
            lines.append(f"documents with no known words (not inferred, listed in {result['rejects']}): "
                         f"{result['no_known_words']}")
        return "\n".join(lines)

    # ---- evaluate
    def evaluate(self, spark, request: EvaluateRequest) -> dict:
        """Held-out perplexity with the Gibbs estimator and NPMI; a multilingual model, or one model per language
        (``--language-models``), on an aligned test corpus: the variational family's per-language document
        completion, retrieval and CNPMI with the point-estimate topics (the same estimator for every mode)."""
        if len(request.model_dirs) != 1 or "=" in request.model_dirs[0] or \
                model_store.read_meta(request.model_dirs[0]).get("languages"):
            return point_estimates().evaluate(spark, replace(request, engine=None))
        e = request.engine or GibbsEvaluation()
        return evaluate(spark, request.model_dirs[0], request.corpus, request.reference, request.top_words,
                        request.seed, request.partitions, e.iterations, e.samples, e.observed)

    def format_metrics(self, metrics: dict) -> str:
        if not metrics.get("gibbs"):
            return point_estimates().format_metrics(metrics)
        h = metrics["heldout"]
        per_topic = " ".join(f"{v:.3f}" for v in metrics["npmi_per_topic"])
        protocol = ("every word fitted and scored" if h.get("observed") is None else
                    f"document completion: {h['observed']:g} of every segment observed, the rest scored")
        protocol = h.get("protocol") or (f"thesis eq 5.10, topics fixed, {h['iterations']} sweeps, {h['samples']} "
                                         f"samples, {protocol}")
        return "\n".join([
            f"held-out perplexity ({metrics['model_type']}, {protocol}): {metrics['perplexity']:.3f} "
            f"({h['documents']} documents [{metrics['test_documents']}], {h['tokens']} tokens)",
            f"NPMI coherence (top {metrics['npmi_settings']['top_words']}): {metrics['npmi']:.4f}",
            f"NPMI per topic: {per_topic}",
        ])


def point_estimates():
    """The family that folds documents into fixed topics (variational E-steps): what ``infer`` and ``evaluate``
    use for a multilingual Gibbs model, whose posterior-mean topics (``PointTopicModel``) stand for E_q[beta]."""
    return registry.family("variational")


# --------------------------------------------------------------------------- outputs

def write_proportions(spark, model: GibbsModel, states, directory: str) -> None:
    """doc_topics.parquet (doc_id, theta) and segment_topics.parquet (doc_id, segment, theta) (the model's
    ``document_proportions``), and the model's own per-document tables (``document_files``): each task writes its
    partition's rows (sorted by document, segments in order) as one Parquet part of each directory."""
    files = ("doc_topics.parquet", "segment_topics.parquet") + tuple(model.document_files)
    paths = [storage.join(directory, name) for name in files]

    def tables_of(_, item):
        own = model.document_outputs(item)
        return list(outputs.proportion_tables(item["orig"], *model.document_proportions(item))) + \
            [outputs.columns_table(own[name]) for name in model.document_files]

    outputs.write_partition_tables(spark, states, paths, tables_of, "write document and segment topic proportions")


def evaluate_split(spark, model: GibbsModel, hyper: dict, topic_word, request: TrainRequest,
                   e: GibbsTraining) -> dict:
    """Held-out perplexity of the test split of the training corpus (``--heldout-fraction``)."""
    test = load_segmented_corpus(spark, request.corpus, None, heldout_fraction=e.heldout_fraction, split="test",
                                 require_segments=needs_segments(model.name), ordered=needs_order(model.name),
                                 permute_seed=e.permute_segments,
                                 separate_languages=model.aligned_documents_per == "language")
    try:
        schedule = HeldoutSchedule.default(e.heldout_iterations, e.heldout_samples, e.heldout_observed)
        score = score_heldout(spark, model, hyper, topic_word, test.blocks, schedule, seed=request.seed)
    finally:
        test.blocks.unpersist()
    return dict(score, fraction=e.heldout_fraction)


# --------------------------------------------------------------------------- infer

def _infer_task(partition, items, model: GibbsModel, bc, schedule: HeldoutSchedule, seed: int):
    """(partition, item) with the sample sums of the partition's documents, for ``write_proportions``."""
    hyper, phi_vk = bc.value
    for _, orig in items:
        block = model.prepare_block(orig)
        if block.n_tokens == 0:          # an empty partition (prepare keeps no document without a known word)
            continue
        yield partition, {"orig": orig, "block": block, "state": None,
                          "acc": model.infer_sums(block, hyper, phi_vk, schedule, seed, partition)}


def infer_gibbs(spark, trained, corpus_dir: str, output_dir: str, sweeps: int = 50, samples: int = 5,
                seed: int = 0, partitions: int | None = None) -> dict:
    """Document and segment topic proportions of every document of a prepared corpus: the model's own
    sampler on each with the topics fixed to the trained phi-hat and the trained hyperparameters, ``sweeps``
    sweeps, proportions (mu-hat, nu-hat: eqs 5.5/5.6, 6.8/6.9, 7.11/7.12) averaged over ``samples`` samples
    in the second half; draws seeded by (seed, sweep, partition), so a retried task writes the same rows."""
    saved, model = open_trained(trained) if isinstance(trained, str) else trained
    meta = saved.meta
    corpus = load_segmented_corpus(spark, corpus_dir, partitions, require_segments=needs_segments(meta["model"]),
                                   ordered=needs_order(meta["model"]))
    sc = spark.sparkContext
    bc = None
    try:
        require_same_vocabulary(saved, corpus)
        schedule = HeldoutSchedule.default(sweeps, samples)
        sc.setJobDescription(f"infer ({meta['model']}): {sweeps} sweeps per document, topics fixed")
        bc = sc.broadcast((meta["hyper"], np.ascontiguousarray(saved.lambda_.T, dtype=np.float64)))
        items = corpus.blocks.mapPartitionsWithIndex(partial(_infer_task, model=model, bc=bc, schedule=schedule,
                                                             seed=seed))
        write_proportions(spark, model, items, output_dir)
    finally:
        if bc is not None:
            bc.destroy()
        corpus.blocks.unpersist()
        sc.setJobDescription(None)
    return {"documents": corpus.num_documents, "segments": corpus.num_segments, "tokens": corpus.num_tokens,
            "sweeps": sweeps, "samples": schedule.samples, "seed": seed,
            "output": storage.join(output_dir, "doc_topics.parquet"),
            "segment_output": storage.join(output_dir, "segment_topics.parquet")}


# --------------------------------------------------------------------------- evaluate

def evaluate(spark, model_dir: str, corpus_dir: str, reference_dir: str | None = None, top_words: int = 10,
             seed: int = 0, partitions: int | None = None, iterations: int | None = None,
             samples: int | None = None, observed: float | None | str = "model") -> dict:
    """Held-out perplexity and NPMI of a Gibbs model. The test documents are the held-out split of the
    training corpus when ``corpus_dir`` is the corpus it was trained on (same data version) with
    ``--heldout-fraction``, otherwise every document of ``corpus_dir`` (prepared with the model's vocabulary,
    and with ``--segments`` for the structured models)."""
    saved, model = open_trained(model_dir)
    meta = saved.meta
    topic_word = saved.lambda_
    K = topic_word.shape[0]
    data = meta.get("data") or {}
    fraction = float(data.get("heldout_fraction") or 0.0)
    corpus_meta_path = storage.join(corpus_dir, "corpus.json")
    same_corpus = fraction > 0 and storage.exists(corpus_meta_path) and \
        data_version(storage.load_json(corpus_meta_path)) == data.get("version")
    test = load_segmented_corpus(spark, corpus_dir, partitions, heldout_fraction=fraction if same_corpus else 0.0,
                                 split="test" if same_corpus else "all",
                                 require_segments=needs_segments(meta["model"]), ordered=needs_order(meta["model"]),
                                 permute_seed=meta.get("permute_segments"))
    reference = None
    try:
        require_same_vocabulary(saved, test)
        trained = meta.get("heldout") or {}
        schedule = HeldoutSchedule.default(iterations or trained.get("iterations") or 50,
                                           samples or trained.get("samples") or 5,
                                           heldout_observed(observed, trained))
        score = score_heldout(spark, model, meta["hyper"], topic_word, test.blocks, schedule, seed)
        reference = load_corpus(spark, reference_dir or corpus_dir, partitions)
        npmi = topic_coherence(spark, saved.vocab["term"].to_numpy(), topic_word, reference, top_words)
    finally:
        test.blocks.unpersist()
        if reference is not None:
            reference.blocks.unpersist()
    return {
        "gibbs": True, "model": model_dir, "model_type": meta["model"], "corpus": corpus_dir,
        "test_documents": "held-out split of the training corpus" if same_corpus else "all",
        "reference": reference_dir or corpus_dir, "seed": seed, "topics": K,
        "perplexity": score["perplexity"], "heldout": score,
        "npmi": npmi["mean"], "npmi_per_topic": npmi["per_topic"],
        "npmi_settings": {"top_words": npmi["top_words"], "reference_documents": npmi["reference_documents"]},
    }


def heldout_observed(observed, trained: dict) -> float | None:
    """The held-out protocol of ``evaluate``: ``observed`` as given (a fraction, or None for the same-words
    estimator), or with ``"model"`` the one the model was trained with (document completion of half of every
    segment, 0.5, when it records none)."""
    if observed != "model":
        return observed
    return trained["observed"] if "observed" in trained else 0.5
