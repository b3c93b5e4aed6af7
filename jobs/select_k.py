"""``spark-topics select-k``: train the model once per number of topics K on a corpus, score each on its held-out
part (held-out perplexity; gensim's c_v, c_npmi, u_mass; document-level NPMI; topic diversity) in one run, and write
the table and the curves (:mod:`drivers.evaluation.k_curves`).

The held-out part is ``CORPUS_DIR/heldout`` (``prepare --holdout-fraction F``) unless ``--heldout`` names another
corpus prepared with the corpus' vocabulary. Every model is kept in ``OUTPUT/k<K>``."""
from __future__ import annotations

import argparse
import logging
import shlex
import time

from drivers import progress, registry, storage
from drivers.corpora.files import CORPUS_JSON
from drivers.evaluation import k_curves
from drivers.evaluation import standard_coherence as standard
from inference.errors import UsageError
from jobs import evaluate, train
from jobs.spark import local_path, sized_session

log = logging.getLogger("spark_topics.select_k")


def topic_counts(text: str) -> tuple:
    try:
        counts = tuple(sorted({int(k) for k in text.split(",") if k.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers of topics like 10,20,50, got {text!r}") from None
    if not counts or counts[0] < 2:
        raise argparse.ArgumentTypeError(f"every number of topics must be at least 2, got {text!r}")
    return counts


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    parser.add_argument("--model", choices=list(registry.MODELS), default=train.DEFAULT_MODEL,
                        help="the model to fit (default: %(default)s)")
    parser.add_argument("--corpus", required=True, type=local_path, help="CORPUS_DIR to train on")
    parser.add_argument("--topics", required=True, type=topic_counts, metavar="K,K,...",
                        help="the numbers of topics to try, e.g. 10,20,50,100")
    parser.add_argument("--output", required=True, type=local_path, metavar="DIR",
                        help="where the models (DIR/k<K>), select_k.csv, select_k.json and select_k.png go")
    parser.add_argument("--heldout", default=None, type=local_path, metavar="CORPUS_DIR",
                        help="the held-out documents to score (default: CORPUS_DIR/heldout, written by prepare "
                             "--holdout-fraction F)")
    parser.add_argument("--iterations", type=int, default=50, help="training iterations per K (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every run (default: %(default)s)")
    parser.add_argument("--top-words", type=int, default=10,
                        help="top words per topic for the coherence figures (default: %(default)s)")
    parser.add_argument("--train-args", default="", metavar="'FLAGS'",
                        help="more `train` flags for every run, quoted, e.g. '--inference variational --tol 0' "
                             "(default: none)")


def heldout_corpus(args) -> str:
    path = args.heldout or storage.join(args.corpus, "heldout")
    if not storage.exists(storage.join(path, CORPUS_JSON)):
        raise UsageError(f"select-k scores held-out documents, and {path} holds no corpus: prepare the corpus with "
                         f"--holdout-fraction F (it writes CORPUS_DIR/heldout) or pass --heldout CORPUS_DIR")
    return path


def train_request(args, k: int):
    return train.parse_request(["--model", args.model, "--corpus", args.corpus, "--topics", k,
                                "--output", storage.join(args.output, f"k{k}"), "--iterations", args.iterations,
                                "--seed", args.seed, "--top-words", args.top_words, *shlex.split(args.train_args)])


def run(args) -> list[dict]:
    heldout = heldout_corpus(args)
    requests = [train_request(args, k) for k in args.topics]          # bad flags refused before Spark starts
    spark = sized_session("spark-topics select-k", args,
                          lambda conf, active: train.driver_memory(requests[-1], conf, active))
    rows, began = [], time.perf_counter()
    for n, request in enumerate(requests, 1):
        started = time.perf_counter()
        print(f"select-k: K={request.topics} ({n} of {len(requests)}): training {args.model}", flush=True)
        train.train(spark, request)
        metrics = evaluate.evaluate_model(spark, request.output, heldout, top_words=args.top_words, seed=args.seed)
        metrics["standard_coherence"] = standard.standard_coherence(spark, request.output, heldout, args.top_words)
        rows.append(k_curves.row(request.topics, metrics, request.output, time.perf_counter() - started))
        print("select-k: " + progress.line(n, len(requests), time.perf_counter() - began, what="K",
                                           figure=f"K={request.topics} held-out perplexity "
                                                  f"{rows[-1]['heldout_perplexity']:.2f}"), flush=True)
    settings = {"model": args.model, "corpus": args.corpus, "heldout": heldout, "topics": list(args.topics),
                "iterations": args.iterations, "seed": args.seed, "top_words": args.top_words,
                "train_args": args.train_args}
    paths = k_curves.write(args.output, rows, settings)
    print(k_curves.format_table(rows))
    print(f"table {paths[k_curves.TABLE]}, curves {paths[k_curves.PLOT]}")
    return rows


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("select-k"))
