"""Benchmark: the Gibbs engine's LDA against tomotopy's LDAModel, and the cost of every registered model.

1. LDA-Gibbs vs tomotopy, on the benchmark corpus of ``bench_lda.py`` (:mod:`bench_corpus`: SWORD Bible
   verses and commentary paragraphs, 90% train / 10% held out) with the same K, iterations and 2 cores:
   ``spark-topics train --model lda-gibbs`` on ``local[2]`` (AD-LDA, one synchronisation per iteration by the
   resident sampler and by a Spark job each, and with ``--sweeps-per-sync``), tomotopy ``LDAModel`` with 1 and 2
   workers. Throughput is tokens x
   iterations / seconds / cores, over the iterations after the first (the first includes Spark's start
   up of the job chain; tomotopy's initialisation is not timed either). Both models are scored by the
   same held-out estimator (``drivers.evaluation.heldout.score_heldout``: LDA sampler on half of every test document's
   words with the model's topics fixed, the other half scored, thesis eq 5.10).
2. Every registered Gibbs model (lda-gibbs, stm, seqlda, adatm) on a segmented corpus: the 1,189 chapters
   of the World English Bible (``sample_data``) split into sentences (``prepare --segments sentence``),
   tokens per second per core and the ratio to LDA-Gibbs on the same corpus (thesis: STM about 4x,
   SeqLDA about 5x LDA's cost), resident and with a Spark job per synchronisation.

Not part of the default test run::

    python tests/bench/bench_gibbs.py --docs 50000 --topics 50 --iterations 30
    pytest tests/bench/bench_gibbs.py -m benchmark     # reduced size

Results: tables on stdout and ``out/bench/gibbs-D{docs}-K{topics}-I{iterations}.json``.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bench_common import CORES, REPO  # noqa: E402  (first: puts the project on sys.path)

from bench_corpus import CACHE, ensure_corpus  # noqa: E402
from inference.errors import SparkTopicsError


log = logging.getLogger("spark_topics.bench")


def _args(corpus: str, output: Path, *extra):
    from conftest import train_args
    return train_args(corpus, output, *extra)


def fit_ours(spark, corpus: str, model: str, topics: int, iterations: int, seed: int, out: Path,
             sweeps_per_sync: int = 1, extra=()) -> dict:
    from jobs import train

    lag = sweeps_per_sync
    args = _args(corpus, out, "--model", model, "--topics", topics, "--iterations", iterations, "--seed", seed,
                 "--samples", 1, "--lag", lag, "--burn-in", iterations - lag, "--checkpoint-every", iterations,
                 "--sweeps-per-sync", sweeps_per_sync, *extra)
    started = time.perf_counter()
    meta = train.train(spark, args)
    wall = time.perf_counter() - started
    trace = meta["trace"]
    tokens = meta["data"]["tokens"]
    steady = trace[1:] if len(trace) > 1 else trace
    seconds_per_iteration = sum(r["seconds"] for r in steady) / (len(steady) * sweeps_per_sync)
    return {"model": model, "sweeps_per_sync": sweeps_per_sync, "tokens": tokens, "iterations": iterations,
            "seconds_per_iteration": seconds_per_iteration,
            "tokens_per_second_per_core": tokens / seconds_per_iteration / CORES,
            "sweep_tokens_per_second_per_core": statistics.median(r["sweep_tokens_per_second"] for r in steady),
            "train_seconds": wall, "loglik_per_token": trace[-1]["loglik_per_token"], "out": str(out)}


def tomotopy_documents(train_dir: str):
    """Every training document as a list of word-id strings (the same tokens our engine samples)."""
    import pyarrow.parquet as pq
    from drivers.corpora.segmented import block_from_docs_table

    block = block_from_docs_table(pq.read_table(Path(train_dir) / "docs.parquet"))
    ptr = block.token_ptr()
    words = block.words.astype(str)
    return [words[ptr[d]:ptr[d + 1]].tolist() for d in range(block.n_docs)], block.n_tokens


def fit_tomotopy(documents, n_tokens: int, topics: int, iterations: int, seed: int, workers: int,
                 vocab_size: int) -> dict:
    import tomotopy as tp

    model = tp.LDAModel(k=topics, alpha=0.1, eta=0.01, seed=seed)
    for words in documents:
        model.add_doc(words)
    model.train(0, workers=workers)                   # initialisation, not timed
    started = time.perf_counter()
    model.train(iterations, workers=workers)
    seconds = (time.perf_counter() - started) / iterations
    topic_word = np.zeros((topics, vocab_size))
    columns = np.array([int(w) for w in model.used_vocabs])
    for k in range(topics):
        topic_word[k, columns] = model.get_topic_word_dist(k)
    return {"model": f"tomotopy ({workers} worker{'s' if workers > 1 else ''})", "workers": workers,
            "seconds_per_iteration": seconds, "tokens_per_second_per_core": n_tokens / seconds / workers,
            "alpha": np.asarray(model.alpha, dtype=float).tolist(), "topic_word": topic_word}


def heldout(spark, test_dir: str, topic_word: np.ndarray, alpha, seed: int) -> float:
    from inference.gibbs.heldout import HeldoutSchedule
    from drivers.models.lda_gibbs.model import LdaGibbs
    from drivers.corpora.segmented import load_segmented_corpus
    from drivers.evaluation.heldout import score_heldout

    test = load_segmented_corpus(spark, test_dir)
    try:
        model = LdaGibbs(*topic_word.shape)
        return score_heldout(spark, model, model.initial_hyper(alpha=alpha), topic_word, test.blocks,
                             HeldoutSchedule.default(30, observed=0.5), seed)["perplexity"]
    finally:
        test.blocks.unpersist()


def segmented_corpus(spark) -> str:
    """The WEB Bible chapters split into sentences (cached under out/bench/)."""
    from drivers.preparation.corpus import prepare_corpus

    out = CACHE / "web-chapters-sentences"
    if not (out / "corpus.json").exists():
        prepare_corpus(spark, str(REPO / "sample_data" / "web_chapters.jsonl.gz"), str(out), segments="sentence",
                       overwrite=True)
    return str(out)


def run_benchmark(spark, docs: int, topics: int, iterations: int, seed: int = 0, sync: int = 5,
                  models=None, model_topics: int = 20, model_iterations: int = 20) -> dict:
    from drivers import registry

    train_dir, test_dir = ensure_corpus(spark, docs)
    vocab_size = json.loads((Path(train_dir) / "corpus.json").read_text())["vocab_size"]
    run_dir = CACHE / f"gibbs-run-D{docs}-K{topics}-I{iterations}"
    rows = []
    ours = fit_ours(spark, train_dir, "lda-gibbs", topics, iterations, seed, run_dir / "lda-gibbs",
                    extra=("--sync", "resident"))
    rows.append(dict(ours, label="lda-gibbs (resident, sync every sweep)"))
    jobs = fit_ours(spark, train_dir, "lda-gibbs", topics, iterations, seed, run_dir / "lda-gibbs-jobs",
                    extra=("--sync", "jobs"))
    rows.append(dict(jobs, label="lda-gibbs (a Spark job per sweep)"))
    if sync > 1 and iterations % sync == 0:
        fast = fit_ours(spark, train_dir, "lda-gibbs", topics, iterations, seed, run_dir / f"lda-gibbs-sync{sync}",
                        sweeps_per_sync=sync, extra=("--sync", "resident"))
        rows.append(dict(fast, label=f"lda-gibbs (resident, --sweeps-per-sync {sync})"))
    for row in rows:
        model_dir = Path(row["out"])
        meta = json.loads((model_dir / "model.json").read_text())
        row["perplexity"] = heldout(spark, test_dir, np.load(model_dir / "topic_word.npy"), meta["alpha"], seed)
    documents, n_tokens = tomotopy_documents(train_dir)
    for workers in (1, CORES):
        result = fit_tomotopy(documents, n_tokens, topics, iterations, seed, workers, vocab_size)
        result["perplexity"] = heldout(spark, test_dir, result.pop("topic_word"), result.pop("alpha"), seed)
        rows.append(dict(result, label=result["model"]))
    reference = next(r for r in rows if r["label"].startswith(f"tomotopy ({CORES}"))
    for row in rows:
        row["vs_tomotopy"] = row["tokens_per_second_per_core"] / reference["tokens_per_second_per_core"]

    segmented = segmented_corpus(spark)
    model_rows = []
    for name in models or sorted(s.name for s in registry.models_of("gibbs")):
        try:
            registry.model(name).model_class()
        except SparkTopicsError as exc:
            log.warning("skipping %s: %s", name, exc)
            continue
        for mode in ("resident", "jobs"):
            row = fit_ours(spark, segmented, name, model_topics, model_iterations, seed,
                           run_dir / f"segmented-{name}-{mode}", extra=("--sync", mode))
            model_rows.append(dict(row, sync=mode))
    for row in model_rows:
        lda = next((r for r in model_rows if r["model"] == "lda-gibbs" and r["sync"] == row["sync"]), None)
        row["cost_vs_lda"] = (lda["tokens_per_second_per_core"] / row["tokens_per_second_per_core"]) if lda else None
        row["kernel_cost_vs_lda"] = (lda["sweep_tokens_per_second_per_core"]
                                     / row["sweep_tokens_per_second_per_core"]) if lda else None
    return {"docs": docs, "topics": topics, "iterations": iterations, "seed": seed, "cores": CORES,
            "train": train_dir, "test": test_dir, "lda": rows, "segmented_corpus": segmented,
            "model_topics": model_topics, "model_iterations": model_iterations, "models": model_rows,
            "load_average": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d")}


def format_tables(report: dict) -> str:
    lines = [f"LDA on {report['train']} ({report['lda'][0]['tokens']} tokens), K={report['topics']}, "
             f"{report['iterations']} iterations, {report['cores']} cores",
             f"{'model':42} {'s/iter':>7} {'tokens/s/core':>14} {'x tomotopy':>10} {'kernel tok/s/core':>18} "
             f"{'perplexity':>10}"]
    for r in report["lda"]:
        kernel = f"{r['sweep_tokens_per_second_per_core']:.3g}" if "sweep_tokens_per_second_per_core" in r else "-"
        lines.append(f"{r['label']:42} {r['seconds_per_iteration']:7.3f} {r['tokens_per_second_per_core']:14.3g} "
                     f"{r['vs_tomotopy']:10.2f} {kernel:>18} {r['perplexity']:10.1f}")
    if report["models"]:
        lines += ["", f"Gibbs models on {report['segmented_corpus']} ({report['models'][0]['tokens']} tokens, "
                      f"sentences as segments), K={report['model_topics']}, {report['model_iterations']} iterations",
                  f"{'model':12} {'sync':>8} {'s/iter':>7} {'tokens/s/core':>14} {'cost x LDA':>10} "
                  f"{'kernel tok/s/core':>18} {'kernel cost x LDA':>18}"]
        for r in report["models"]:
            cost = f"{r['cost_vs_lda']:.2f}" if r["cost_vs_lda"] else "-"
            kcost = f"{r['kernel_cost_vs_lda']:.2f}" if r["kernel_cost_vs_lda"] else "-"
            lines.append(f"{r['model']:12} {r.get('sync', '-'):>8} {r['seconds_per_iteration']:7.3f} "
                         f"{r['tokens_per_second_per_core']:14.3g} "
                         f"{cost:>10} {r['sweep_tokens_per_second_per_core']:18.3g} {kcost:>18}")
    lines.append(f"(1-minute load average at the end: {report['load_average']:.1f})")
    return "\n".join(lines)


def write_report(report: dict) -> Path:
    path = CACHE / f"gibbs-D{report['docs']}-K{report['topics']}-I{report['iterations']}.json"
    path.write_text(json.dumps(report, indent=2, default=float))
    return path


@pytest.mark.benchmark
def test_benchmark(spark_session):
    report = run_benchmark(spark_session, int(os.environ.get("BENCH_DOCS", 5000)),
                           int(os.environ.get("BENCH_TOPICS", 20)), int(os.environ.get("BENCH_ITERATIONS", 10)),
                           model_iterations=4)
    print(format_tables(report))
    assert all(r["tokens_per_second_per_core"] > 0 for r in report["lda"] + report["models"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50000)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--sweeps-per-sync", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", default=None, help="comma-separated registered models (default: all)")
    parser.add_argument("--model-topics", type=int, default=20)
    parser.add_argument("--model-iterations", type=int, default=20)
    args = parser.parse_args(argv)
    from bench_common import bench_session
    spark = bench_session("spark-topics Gibbs benchmark")
    report = run_benchmark(spark, args.docs, args.topics, args.iterations, args.seed, args.sweeps_per_sync,
                           args.models.split(",") if args.models else None, args.model_topics,
                           args.model_iterations)
    print(format_tables(report))
    print(f"results written to {write_report(report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
