"""``spark-topics train``: fit a topic model on a prepared corpus.

``--model lda`` runs variational EM as Mr. LDA structures it (see
``drivers/variational.py``) and writes a model directory (``jobs/model_store.py``).
"""
from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from drivers import storage
from drivers.checkpoint import Checkpointer
from drivers.variational import EMSettings, VariationalEngine
from inference.estep import compile_kernels
from inference.mapper import EStepSettings
from inference.priors import DirichletPrior, SymmetricPrior
from jobs import model_store
from jobs.aligned import is_aligned, load_aligned_corpus
from jobs.corpus import check_topics, load_corpus
from jobs.informed_prior import PriorError, read_prior
from jobs.informed_prior import build_prior as build_informed_prior
from jobs.spark import get_spark
from jobs.train_gibbs import REGISTRY as GIBBS_MODELS
from jobs.train_gibbs import add_gibbs_arguments

log = logging.getLogger("spark_topics.train")

MODELS = ("lda", "polylda") + tuple(GIBBS_MODELS)  # Gibbs models: jobs/train_gibbs.py


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", choices=MODELS, default="lda")
    parser.add_argument("--corpus", required=True, help="CORPUS_DIR written by `spark-topics prepare`")
    parser.add_argument("--output", required=True, help="MODEL_DIR to write")
    parser.add_argument("--topics", "-k", type=int, required=True, help="number of topics K")
    parser.add_argument("--iterations", type=int, default=50, help="maximum EM iterations")
    parser.add_argument("--tol", type=float, default=1e-5,
                        help="stop when the relative ELBO change is below this (0: run all iterations)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=None, help="initial symmetric alpha (default 1/K)")
    parser.add_argument("--fixed-alpha", action="store_true", help="do not optimise alpha (Newton-Raphson)")
    parser.add_argument("--eta", type=float, default=None, help="symmetric topic-word prior (default 1/K)")
    parser.add_argument("--optimize-eta", action="store_true", help="learn a symmetric eta by Newton-Raphson")
    parser.add_argument("--prior", default=None, metavar="FILE",
                        help="informed prior (--model lda): seed word lists per named topic (JSON, "
                             "'name: word prefix*' lines, or a LIWC .dic) or a sparse prior "
                             "(Parquet/CSV with topic, word, value); see jobs/informed_prior.py")
    parser.add_argument("--prior-high", type=float, default=10.0,
                        help="eta of a seeded topic for its seed words (default 10, as the thesis)")
    parser.add_argument("--prior-low", type=float, default=0.01,
                        help="eta of a seeded topic for every other word (default 0.01, as the thesis)")
    parser.add_argument("--languages", default=None,
                        help="polylda: comma-separated languages of the aligned corpus to use (default: all)")
    parser.add_argument("--eta-per-language", default=None, metavar="L=ETA,...",
                        help="polylda: topic-word prior per language (default: --eta for every language)")
    parser.add_argument("--estep-tol", type=float, default=1e-3,
                        help="per-document mean |delta gamma| tolerance (reached once EM converges, see "
                             "--estep-schedule)")
    parser.add_argument("--estep-max-iter", type=int, default=100, help="cap on per-document phi/gamma passes")
    parser.add_argument("--estep-schedule", choices=("auto", "fixed"), default="auto",
                        help="auto: a short first E-step from the random topics, then a per-document tolerance "
                             "that follows the EM progress (|relative ELBO change|, between --estep-tol and "
                             "10x it); fixed: --estep-tol and --estep-max-iter every iteration")
    parser.add_argument("--restarts", choices=("auto", "always", "never"), default="auto",
                        help="also fit documents from a cold start and keep the better fit: in the first "
                             "iterations and while it pays (auto), every iteration, or never")
    parser.add_argument("--partitions", type=int, default=None,
                        help="document partitions (default: from the corpus size, not the cluster, "
                             "so results are reproducible anywhere)")
    parser.add_argument("--reducers", type=int, default=None, help="topic reducers R (default: min(K, cores))")
    parser.add_argument("--checkpoint-dir", default=None, help="default: MODEL_DIR/_checkpoint")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument("--keep-checkpoint", action="store_true", help="keep the checkpoint after success")
    parser.add_argument("--top-words", type=int, default=10, help="words per topic in the printed summary")
    add_gibbs_arguments(parser)


def validate(args, vocab_size: int) -> None:
    check_topics(args.topics, vocab_size)
    if args.iterations < 1:
        raise SystemExit("--iterations must be at least 1")
    for name in ("alpha", "eta"):
        value = getattr(args, name)
        if value is not None and (not np.isfinite(value) or value <= 0):
            raise SystemExit(f"--{name} must be a positive number, got {value}")


def doc_topics_table(doc_ids, gamma: np.ndarray, topic_names: list | None = None):
    """Arrow table doc_id, gamma, theta (lists of K doubles) [, top_topic, theta_named] for a block."""
    import pyarrow as pa

    n, K = gamma.shape
    theta = gamma / gamma.sum(axis=1, keepdims=True)
    columns = {"doc_id": pa.array(list(doc_ids), pa.string()),
               "gamma": storage.list_column(gamma), "theta": storage.list_column(theta)}
    if topic_names is not None:
        names = np.asarray(topic_names, dtype=object)
        offsets = pa.array(np.arange(0, (n + 1) * K, K, dtype=np.int32))
        columns["top_topic"] = pa.array(names[np.argmax(theta, axis=1)].tolist(), pa.string())
        columns["theta_named"] = pa.MapArray.from_arrays(offsets, pa.array(np.tile(names, n).tolist(), pa.string()),
                                                         pa.array(theta.ravel()))
    return pa.table(columns)


def write_doc_topics(spark, blocks, gamma_dir: str, path: str, topic_names: list | None = None) -> int:
    """doc_id, gamma, theta for every training document, from the last E-step's gamma files.

    With named topics (an informed prior) also ``top_topic`` (the name of the
    largest proportion) and ``theta_named`` (topic name -> proportion). Each task
    writes its partition as one Parquet file of the ``path`` directory (Arrow
    columns, no per-row conversion); returns the number of rows written.
    """
    names = list(topic_names) if topic_names else None

    def write_part(partition, items):
        for _, block in items:
            gamma = storage.load_npy(Checkpointer.gamma_file(gamma_dir, partition))
            storage.write_parquet(storage.join(path, f"part-{partition:05d}.parquet"),
                                  doc_topics_table(block.doc_ids, gamma, names))
            yield block.n_docs

    if storage.exists(path):
        storage.delete(path)
    spark.sparkContext.setJobDescription("write per-document topic proportions")
    rows = sum(blocks.mapPartitionsWithIndex(write_part).collect())
    spark.sparkContext.setJobDescription(None)
    return rows


def topic_word_prior(args, corpus, K: int):
    """(prior, topic names or None, prior report or None) for the model and flags."""
    V = corpus.vocab_size
    eta = args.eta if args.eta is not None else 1.0 / K
    if args.model == "polylda":
        if args.prior:
            raise SystemExit("--prior applies to --model lda; polylingual models take --eta-per-language")
        if args.optimize_eta:
            raise SystemExit("--optimize-eta is available for --model lda only")
        etas = dict.fromkeys(corpus.layout.languages, eta)
        for item in filter(None, (args.eta_per_language or "").split(",")):
            lang, _, value = item.partition("=")
            if lang.strip() not in etas:
                raise SystemExit(f"--eta-per-language: {lang.strip()!r} is not a language of the corpus "
                                 f"({', '.join(etas)})")
            try:
                etas[lang.strip()] = float(value)
            except ValueError:
                raise SystemExit(f"--eta-per-language: {item!r} is not LANG=NUMBER") from None
            if not np.isfinite(etas[lang.strip()]) or etas[lang.strip()] <= 0:
                raise SystemExit(f"--eta-per-language: {item!r}: eta must be positive")
        return DirichletPrior.per_language([etas[l] for l in corpus.layout.languages], corpus.layout), None, None
    if args.prior:
        if args.optimize_eta:
            raise SystemExit("--optimize-eta cannot be combined with --prior (the informed prior is fixed)")
        try:
            prior, names, report = build_informed_prior(read_prior(args.prior), corpus.vocab, K, eta,
                                                        args.prior_high, args.prior_low)
        except PriorError as exc:
            raise SystemExit(f"--prior {args.prior}: {exc}") from None
        report["file"] = args.prior
        return prior, names, report
    return SymmetricPrior(eta, V), None, None


def open_training_corpus(spark, args):
    if args.model == "polylda":
        if not is_aligned(args.corpus):
            raise SystemExit(f"--model polylda needs an aligned corpus (prepare --lang-column); "
                             f"{args.corpus} is monolingual")
        languages = [l.strip() for l in args.languages.split(",")] if args.languages else None
        return load_aligned_corpus(spark, args.corpus, args.partitions, languages)
    if is_aligned(args.corpus):
        langs = storage.load_json(storage.join(args.corpus, "corpus.json"))["languages"]
        raise SystemExit(f"{args.corpus} is an aligned corpus ({', '.join(langs)}): train --model polylda on it, "
                         f"or --model lda on one language's sub-corpus, e.g. {storage.join(args.corpus, langs[0])}")
    return load_corpus(spark, args.corpus, args.partitions)


def train_lda(spark, args) -> dict:
    """Variational EM for ``lda`` (optionally with an informed prior) and ``polylda``."""
    corpus = open_training_corpus(spark, args)
    validate(args, corpus.vocab_size if corpus.layout is None else min(corpus.layout.sizes()))
    compile_kernels()
    K, V = args.topics, corpus.vocab_size
    if storage.exists(storage.join(args.output, "model.json")) and not args.resume:
        log.warning("overwriting the model in %s", args.output)
    checkpoint_dir = args.checkpoint_dir or storage.join(args.output, "_checkpoint")
    settings = EMSettings(num_topics=K, max_iterations=args.iterations, tol=args.tol,
                          estep=EStepSettings(args.estep_tol, args.estep_max_iter),
                          alpha=args.alpha, optimize_alpha=not args.fixed_alpha,
                          optimize_eta=args.optimize_eta, seed=args.seed, num_reducers=args.reducers,
                          restarts=args.restarts, schedule=args.estep_schedule)
    prior, topic_names, prior_report = topic_word_prior(args, corpus, K)
    engine = VariationalEngine(spark.sparkContext, settings, prior, checkpoint_dir, corpus.layout)
    log.info("training %s: K=%d, V=%d%s, %d documents, %d tokens, %d partitions", args.model.upper(),
             K, V, "" if corpus.layout is None else " (" + ", ".join(
                 f"{l}: {n}" for l, n in zip(corpus.layout.languages, corpus.layout.sizes())) + ")",
             corpus.num_documents, corpus.meta.get("tokens", -1), corpus.num_partitions)
    started = time.time()
    fingerprint = {"corpus": model_store.data_version(corpus.meta),
                   "estep": [args.estep_tol, args.estep_max_iter, args.restarts, args.estep_schedule],
                   "optimize": [settings.optimize_alpha, settings.optimize_eta],
                   "initial_alpha": args.alpha, "initial_eta": args.eta, "model": args.model,
                   "prior": None if prior_report is None else [args.prior, args.prior_high, args.prior_low],
                   "languages": None if corpus.layout is None else list(corpus.layout.languages)}
    result = engine.fit(corpus.blocks, corpus.num_partitions, V, resume=args.resume, fingerprint=fingerprint)

    trace = [r.__dict__ for r in result.trace]
    meta = {
        "model": args.model, "topics": K, "vocab_size": V,
        "alpha": result.alpha.tolist(), "eta": result.prior.to_json(),
        "iterations": result.iterations, "converged": result.converged,
        "elbo": trace[-1]["elbo"] if trace else None, "elbo_trace": trace,
        "seed": args.seed, "partitions": result.num_partitions,
        "settings": {"tol": args.tol, "estep_tol": args.estep_tol, "estep_max_iter": args.estep_max_iter,
                     "estep_schedule": args.estep_schedule, "restarts": args.restarts,
                     "optimize_alpha": settings.optimize_alpha, "optimize_eta": settings.optimize_eta},
        "data": {"corpus": args.corpus, "version": model_store.data_version(corpus.meta),
                 "documents": corpus.num_documents, "tokens": corpus.meta.get("tokens")},
        "code": model_store.code_version(),
        "train_seconds": round(time.time() - started, 3),
    }
    if topic_names is not None:
        meta["topic_names"] = topic_names
        meta["prior"] = prior_report
    if corpus.layout is not None:
        meta["languages"] = list(corpus.layout.languages)
        meta["vocab_sizes"] = dict(zip(corpus.layout.languages, corpus.layout.sizes()))
    model_store.save_model(args.output, meta, corpus.vocab, result.lambda_, corpus.layout)
    if prior_report is not None:
        model_store.save_prior(args.output, result.prior, topic_names, corpus.vocab)
    write_doc_topics(spark, corpus.blocks, result.gamma_dir, storage.join(args.output, "doc_topics.parquet"),
                     topic_names)
    if trace:
        model_store.plot_elbo(storage.join(args.output, "elbo.png"), trace)
    model = model_store.load_model(args.output)
    storage.write_bytes(storage.join(args.output, "topics.txt"),
                        (model_store.format_model_topics(model, args.top_words) + "\n").encode("utf-8"))
    if not args.keep_checkpoint:
        Checkpointer(checkpoint_dir).clear()
    corpus.blocks.unpersist()
    return meta


def run(args) -> dict:
    if args.model in GIBBS_MODELS:
        from jobs.train_gibbs import run as run_gibbs
        return run_gibbs(args)
    spark = get_spark("spark-topics train", args.master, args.conf)
    meta = train_lda(spark, args)
    print(storage.read_bytes(storage.join(args.output, "topics.txt")).decode("utf-8"), end="")
    print(f"model written to {args.output} ({meta['iterations']} iterations, ELBO {meta['elbo']:.6e})")
    return meta


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("train"))
