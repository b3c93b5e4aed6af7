"""``spark-topics evaluate``: held-out perplexity and NPMI coherence of a trained model.

The model directory says which model it holds; its family evaluates it with its
held-out estimator (:mod:`drivers.evaluation.heldout`): variational models by document
completion, held-out ELBO and NPMI (and, on an aligned test corpus,
per-language scores and cross-language retrieval); Gibbs models by the thesis'
held-out perplexity (the model's own sampler, topics fixed) and NPMI.
"""
from __future__ import annotations

import argparse
import json
import logging

from drivers import registry, storage
from drivers.failures import one_line
from drivers.evaluation import report as evaluation_report
from drivers.evaluation import standard_coherence as standard
from drivers.families import EvaluateRequest
from drivers.models.infvoc import model as infinite_model, scoring as infinite_scoring
from drivers.spark_progress import watching
from drivers.store import model_store
from inference.errors import UsageError
from inference.left_to_right import DEFAULT_PARTICLES, LeftToRight
from jobs.flags import add_model_dir
from jobs.spark import engine_of, fold_in_conf, local_path, path_list, path_map, positive_int, sized_session

log = logging.getLogger("spark_topics.evaluate")


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    add_model_dir(parser, "MODEL_DIR written by `spark-topics train`, or a model ROOT (its LATEST version)",
                  required=False)
    parser.add_argument("--version", default=None,
                        help="a model root's version to read (default: its LATEST; a number like 000003 is enough)")
    parser.add_argument("--language-models", default=None, metavar="L=DIR,...", type=path_map,
                        help="aligned test corpus only: one monolingual model per language (the baseline of "
                             "cross-language retrieval) instead of one polylingual --model")
    parser.add_argument("--corpus", required=True, type=local_path,
                        help="test CORPUS_DIR prepared with the model's vocabulary "
                             "(`spark-topics prepare ... --vocab MODEL_DIR/vocab.parquet`)")
    parser.add_argument("--reference", default=None, type=local_path,
                        help="CORPUS_DIR whose document co-occurrences define NPMI (default: the test corpus)")
    parser.add_argument("--top-words", type=int, default=10,
                        help="top words per topic for every coherence figure (default: %(default)s)")
    parser.add_argument("--stability-of", default=None, metavar="DIR[,DIR...]", type=path_list,
                        help="other runs of the same model on the same corpus (e.g. other --seed): also report how "
                             "well their topics match this model's, topics paired one to one")
    parser.add_argument("--seed", type=int, default=0, help="seed of the observed/held-out token split (left-to-right: of the particles)")
    parser.add_argument("--json", default=None, type=local_path, metavar="FILE",
                        help="also write the figures it prints to FILE as JSON (written whole): perplexity, NPMI, "
                             "token counts, the model's and the method's settings (drivers/evaluation/report.py)")
    parser.add_argument("--output", default=None, type=local_path,
                        help="also write every metric, with its internal names, to this JSON file")
    parser.add_argument("--partitions", type=positive_int, default=None, help="document partitions (default: by size)")
    parser.add_argument("--method", choices=("heldout", "left-to-right"), default="heldout",
                        help="heldout: the family's held-out perplexity and NPMI (default); left-to-right: bits per "
                             "word by Wallach et al.'s (2009) left-to-right estimator, topics frozen, for every "
                             "monolingual model (drivers/evaluation/left_to_right.py)")
    parser.add_argument("--particles", type=positive_int, default=DEFAULT_PARTICLES,
                        help=f"left-to-right: particles per document (default {DEFAULT_PARTICLES})")
    parser.add_argument("--resample", choices=("on", "off"), default="on",
                        help="left-to-right: resample every particle's earlier topics before each token (default on)")
    for family in registry.families():
        family.add_evaluate_flags(parser.add_argument_group(
            f"{family.name} models ({', '.join(s.name for s in registry.models_of(family.name))})"))


def family_of(model_dirs) -> object:
    """The family of the model(s): of the first directory (``L=DIR`` items name a directory after ``=``)."""
    return registry.model_of_directory(model_dirs[0].split("=", 1)[-1].strip()).family_object()


def evaluate(spark, request: EvaluateRequest) -> dict:
    return family_of(request.model_dirs).evaluate(spark, request)


def evaluate_model(spark, model_dir: str, corpus_dir: str, reference: str | None = None, top_words: int = 10,
                   seed: int = 0, partitions: int | None = None, engine=None,
                   left_to_right: LeftToRight | None = None) -> dict:
    """All metrics of the model in ``model_dir`` on ``corpus_dir``, with the family's default settings
    (or ``engine``); with ``left_to_right``, the left-to-right figures instead."""
    return evaluate(spark, EvaluateRequest((model_dir,), corpus_dir, reference, top_words, seed, partitions, engine,
                                           left_to_right))


def format_metrics(metrics: dict) -> str:
    """The metrics as the job prints them (by the family of the model they are of)."""
    model = metrics.get("model") or next(iter(metrics["models"].values()))
    return family_of([model]).format_metrics(metrics)


def left_to_right_settings(args) -> LeftToRight | None:
    """``--method left-to-right``: its settings (``--particles``, ``--resample``, ``--seed``); None otherwise."""
    if getattr(args, "method", "heldout") != "left-to-right":
        return None
    return LeftToRight(args.particles, args.resample == "on", args.seed)


def add_standard_figures(spark, args, model_dir: str, metrics: dict) -> None:
    """gensim's coherence measures, topic diversity, stability against other runs (``--stability-of``) and the
    in-sample warning, added to ``metrics`` and printed (drivers/evaluation/standard_coherence.py)."""
    try:
        metrics["standard_coherence"] = standard.standard_coherence(spark, model_dir, args.reference or args.corpus,
                                                                    args.top_words)
    except Exception as exc:    # the family's figures above stand; this one says in one line why it is missing
        if getattr(args, "verbose", False):
            raise
        metrics["standard_coherence"] = {"skipped": one_line(exc)}
    print(standard.format_standard(metrics["standard_coherence"]))
    if args.stability_of:
        others = [model_store.resolve(d.strip()) for d in args.stability_of.split(",") if d.strip()]
        metrics["stability"] = standard.stability(model_dir, others, args.top_words)
        print(standard.format_stability(metrics["stability"]))
    metrics["in_sample"] = standard.in_sample(model_dir, args.corpus, metrics)
    if metrics["in_sample"]:
        print(standard.IN_SAMPLE_WARNING.format(corpus=args.corpus))


def run(args) -> dict:
    if args.language_models:
        model_dirs = tuple(item.strip() for item in args.language_models.split(","))
    elif args.model is None:
        raise UsageError("evaluate needs --model-dir MODEL_DIR")
    else:
        model_dirs = (model_store.resolve(args.model, getattr(args, "version", None)),)     # one version for the job
        if infinite_model.is_infinite(model_store.read_meta(model_dirs[0])):
            return evaluate_infinite(args, model_dirs[0])
    family = family_of(model_dirs)
    request = EvaluateRequest(model_dirs, args.corpus, args.reference, args.top_words, args.seed, args.partitions,
                              engine=family.evaluate_settings(args), left_to_right=left_to_right_settings(args),
                              runs_on=engine_of(args.master))
    spark = None
    why_not = "--master names a Spark master" if request.runs_on == "spark" else \
        family.why_not_evaluate_in_process(request)
    if why_not is None:
        log.info("evaluating in this process (no Spark job)")
    elif request.runs_on == "in-process":
        raise UsageError(f"spark-topics evaluate: --master none: cannot evaluate without Spark: {why_not}")
    else:
        spark = sized_session("spark-topics evaluate", args,
                              lambda conf, active: fold_in_conf(model_dirs, conf, active))
    with watching(spark, "evaluate"):
        metrics = family.evaluate(spark, request)
    print(family.format_metrics(metrics))
    if not args.language_models and request.left_to_right is None:
        add_standard_figures(spark, args, model_dirs[0], metrics)
    if args.output:
        storage.write_bytes(args.output, (json.dumps(metrics, indent=2) + "\n").encode("utf-8"))
        print(f"metrics written to {args.output}")
    if args.json:
        evaluation_report.write(args.json, metrics)
        print(f"figures written to {args.json}")
    return metrics


def evaluate_infinite(args, model_dir: str) -> dict:
    """A ``--vocabulary infinite`` model: document completion and NPMI over the corpus' own words
    (:mod:`drivers.models.infvoc.scoring`); in this process when the corpus is small, else on Spark."""
    if left_to_right_settings(args) is not None:
        raise UsageError("evaluate --method left-to-right: not for a --vocabulary infinite model (its document "
                         "completion is the estimator)")
    spark = None if engine_of(args.master) == "in-process" else \
        (lambda: sized_session("spark-topics evaluate", args, lambda conf, active: conf))
    metrics = infinite_scoring.evaluate(spark, model_dir, args.corpus, args.reference, args.top_words, args.seed,
                                        args.partitions)
    print(infinite_scoring.format_metrics(metrics))
    if args.output:
        storage.write_bytes(args.output, (json.dumps(metrics, indent=2) + "\n").encode("utf-8"))
        print(f"metrics written to {args.output}")
    return metrics


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("evaluate"))
