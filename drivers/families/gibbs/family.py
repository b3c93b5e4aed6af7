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
    chain/                  the chain of the last iteration (blocks, states, count tables, state.json), which
                            ``refresh`` continues (:mod:`drivers.engines.gibbs.chain`)

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
from dataclasses import replace


from drivers import storage
from drivers.corpora.aligned import is_aligned
from drivers.corpora.bow import check_topics
from drivers.corpora.files import data_version
from drivers.corpora.segmented import load_segmented_corpus
from drivers.engines.gibbs.chain import save_chain
from drivers.engines.gibbs.engine import GibbsEngine
from drivers.engines.gibbs.settings import GibbsSettings, SampleSchedule
from drivers.engines.gibbs.tables import TableLayout
from drivers.families import EvaluateRequest, InferRequest, ModelFamily, TrainRequest
from drivers.evaluation import left_to_right
from drivers.evaluation.standard_coherence import DOCUMENT_NPMI
from drivers.families.gibbs import evaluate as gibbs_evaluate
from drivers.families.gibbs.evaluate import evaluate, evaluate_left_to_right, evaluate_split
from drivers.corpora import in_process as local_corpus
from drivers.families.gibbs import infer_in_process as in_process
from drivers.families.gibbs.infer import infer_gibbs, point_estimates, write_heldout_proportions, write_model_files
from drivers.families.gibbs.refresh import check_refreshable, refresh_chain
from drivers.families.gibbs.refresh_counts import refresh_counts
from drivers.families.gibbs.models import (hyper_overrides, initial_hyper, make_model, needs_order, needs_segments,
                                           open_trained)
from drivers.families.gibbs.settings import GibbsEvaluation, GibbsInference, GibbsTraining, observed_fraction
from drivers.corpora import tokenizer
from drivers.store import model_store, outputs, topics_text
from inference.errors import UsageError


log = logging.getLogger("spark_topics.train")


# --------------------------------------------------------------------------- settings


# --------------------------------------------------------------------------- models


# --------------------------------------------------------------------------- the family

class GibbsFamily(ModelFamily):
    name = "gibbs"
    kind = "sampled"

    # ---- flags
    def add_train_flags(self, g) -> None:
        g.add_argument("--permute-segments", type=int, default=None, metavar="SEED",
                       help="randomly permute the segment order of every document, in training and in the "
                            "held-out split (to test whether the order matters); the permutation is a fixed function of (SEED, doc_id)")
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
                            "perplexity (0.2 is a common choice)")
        g.add_argument("--heldout-iterations", type=int, default=50,
                       help="sweeps per held-out document (samples over the second half)")
        g.add_argument("--heldout-samples", type=int, default=5, help="samples averaged per held-out token")
        g.add_argument("--heldout-observed", type=observed_fraction, default=0.5, metavar="F|all",
                       help="document completion (default 0.5): the sampler sees a random fraction F of every "
                            "test segment and the other words are scored (the likelihood of each unseen word, "
                            "Rosen-Zvi et al. 2004); 'all': every word is fitted and scored")

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
            model = make_model(spec, num_topics, vocab_size, self.catalogue)
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
        fixed = getattr(spec.model_class(), "corpus_partitions", None)   # the partitions a model must train on
        partitions = (fixed(request.options) if fixed else None) or request.partitions     # (pdp-network: 1 or any)
        corpus = load_segmented_corpus(spark, request.corpus, partitions, heldout_fraction=heldout,
                                       split="train" if heldout > 0 else "all",
                                       require_segments=needs_segments(spec, request.options),
                                       ordered=needs_order(spec, request.options), permute_seed=e.permute_segments,
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
        model = make_model(spec, K, V, self.catalogue, **{k: request.options.get(k)
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
            write_model_files(spark, model, result, request.output, corpus.vocab, corpus.layout,
                              False if e.heldout_fraction > 0 and corpus.layout is None else None)
            if model.latent:                 # what `refresh` continues (drivers.engines.gibbs.chain)
                save_chain(request.checkpoint, request.output, result.iterations, model.count_tables())
        finally:
            engine.release()
        meta = {
            "model": model.name, "inference": "gibbs", "segment_level": segment_level,
            "permute_segments": e.permute_segments, "topics": K, "vocab_size": V, **result.meta(),
            "initial_hyper": hyper0, **settings.schedule.to_json(),
            "seed": request.seed, "checkpoint_every": e.checkpoint_every, "sweeps_per_sync": e.sweeps_per_sync,
            "data": {"corpus": storage.absolute(request.corpus), "version": data_version(corpus.meta),
                     "documents": corpus.num_documents, "segments": corpus.num_segments,
                     "tokens": corpus.num_tokens, "segmented": corpus.segmented, "split": corpus.split,
                     "heldout_fraction": e.heldout_fraction},
        }
        if e.heldout_fraction > 0:
            meta["heldout"] = evaluate_split(spark, spec, model, result.hyper, topic_word, request, e)
            meta["doc_topics"] = write_heldout_proportions(spark, spec, model, result.hyper, topic_word, request,
                                                           e.heldout_fraction, e.permute_segments)
            h = meta["heldout"]
            log.info("held-out perplexity %.3f (%d documents, %d %s tokens)", h["perplexity"], h["documents"],
                     h["tokens"], "fitted and scored" if h["observed"] is None else f"unseen ({h['protocol']})"
                     if h.get("protocol") else f"unseen (observed {h['observed']:g} of every segment)")
        if corpus.layout is not None:
            meta.update(languages=list(corpus.layout.languages),
                        vocab_sizes=dict(zip(corpus.layout.languages, corpus.layout.sizes())),
                        documents_per=model.aligned_documents_per)
        meta.update(model.describe())
        meta.update(model_store.run_stamp(started))
        storage.save_json(storage.join(request.output, "model.json"), meta)
        if meta["trace"]:
            outputs.plot_trace(storage.join(request.output, "loglik.png"), meta["trace"], f"{display}: Gibbs sampler")
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
        return open_trained(model_dir, self.catalogue)

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
        settings = self._infer_settings(request, prepared)
        result = infer_gibbs(spark, trained, corpus_dir, request.output, settings.sweeps, settings.samples,
                             settings.seed, request.partitions, self.catalogue)
        return self._with_rejects(result, corpus_dir, prepared)

    def why_not_in_process(self, trained, corpus_dir: str, request: InferRequest) -> str | None:
        if not isinstance(trained, tuple):
            return point_estimates().why_not_in_process(trained, corpus_dir, replace(request, engine=None))
        return local_corpus.why_not_in_process(corpus_dir)

    def infer_in_process(self, trained, corpus_dir: str, request: InferRequest, prepared: dict | None = None) -> dict:
        if not isinstance(trained, tuple):
            return point_estimates().infer_in_process(trained, corpus_dir, replace(request, engine=None), prepared)
        settings = self._infer_settings(request, prepared)
        result = in_process.infer_in_process(trained, corpus_dir, request.output, settings.sweeps, settings.samples,
                                             settings.seed, request.partitions, self.catalogue)
        return self._with_rejects(result, corpus_dir, prepared)

    @staticmethod
    def _infer_settings(request: InferRequest, prepared: dict | None) -> GibbsInference:
        settings = request.engine or GibbsInference()
        if request.lang is not None:
            raise UsageError("--lang applies to polylingual models")
        if prepared is None and settings.segments:
            raise UsageError("--segments applies to raw input; a prepared corpus keeps its segments")
        return settings

    @staticmethod
    def _with_rejects(result: dict, corpus_dir: str, prepared: dict | None) -> dict:
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

    # ---- refresh
    def refresh(self, spark, spec, base, corpus_dir: str | None, request, history: dict, output: str) -> dict:
        """The chain continued on the old and the new documents (:mod:`drivers.families.gibbs.refresh`); a model
        without latent variables: the batch's counts added (:mod:`drivers.families.gibbs.refresh_counts`)."""
        if not spec.model_class().latent:
            return refresh_counts(spark, spec, base, corpus_dir, request, output, self.catalogue, history)
        return refresh_chain(spark, spec, base, corpus_dir, request, output, self.catalogue)

    def check_refreshable(self, spec, meta: dict | None = None) -> None:
        """Refuse (one line, naming why) a model (trained as model.json's ``meta`` says) whose chain cannot be
        continued."""
        check_refreshable(spec, meta)

    # ---- evaluate
    def evaluate(self, spark, request: EvaluateRequest) -> dict:
        """Held-out perplexity with the Gibbs estimator and NPMI; a multilingual model, or one model per language
        (``--language-models``), on an aligned test corpus: the variational family's per-language document
        completion, retrieval and CNPMI with the point-estimate topics (the same estimator for every mode)."""
        if len(request.model_dirs) != 1 or "=" in request.model_dirs[0] or \
                model_store.read_meta(request.model_dirs[0]).get("languages"):
            return point_estimates().evaluate(spark, replace(request, engine=None))
        if request.left_to_right is not None:
            return evaluate_left_to_right(spark, request.model_dirs[0], request.corpus, request.left_to_right,
                                          request.partitions, self.catalogue)
        e = request.engine or GibbsEvaluation()
        if spark is None and self.why_not_evaluate_in_process(request) is not None:
            raise UsageError(f"cannot evaluate without Spark: {self.why_not_evaluate_in_process(request)}")
        return evaluate(spark, request.model_dirs[0], request.corpus, request.reference, request.top_words,
                        request.seed, request.partitions, e.iterations, e.samples, e.observed, self.catalogue)

    def why_not_evaluate_in_process(self, request: EvaluateRequest) -> str | None:
        if len(request.model_dirs) != 1 or "=" in request.model_dirs[0] or \
                model_store.read_meta(request.model_dirs[0]).get("languages"):
            return "a multilingual model"
        return gibbs_evaluate.why_not_in_process(request.model_dirs[0], request.corpus, request.reference)

    def format_metrics(self, metrics: dict) -> str:
        if metrics.get("left_to_right"):
            return left_to_right.format_metrics(metrics)
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
            f"{DOCUMENT_NPMI} (top {metrics['npmi_settings']['top_words']}): {metrics['npmi']:.4f}",
            f"document-level NPMI per topic: {per_topic}",
        ])


# --------------------------------------------------------------------------- outputs



# --------------------------------------------------------------------------- infer


# --------------------------------------------------------------------------- evaluate
