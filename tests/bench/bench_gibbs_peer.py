"""Benchmark: lda-gibbs against tomotopy's LDAModel at equal iterations, quality and throughput per core, on
short and longer documents, in one run.

For every corpus (``--corpora KIND:DOCS``, :func:`bench_corpus.ensure_corpus`: ``paragraph`` = commentary
paragraphs, about 40 tokens per document after stop words; ``verse`` = Bible verses, about 11; ``mixed`` = both,
the corpus of ``bench_lda.py``), with the same K and iterations:

* ``spark-topics train --model lda-gibbs`` with its defaults (AD-LDA on ``local[2]``, 2 partitions, the resident
  sampler, the default hyperparameter schedule and estimate);
* tomotopy ``LDAModel(alpha=0.1, eta=0.01)`` (its defaults otherwise: alpha optimised every 10 iterations) with 1
  and 2 workers.

All are scored by one held-out estimator (``drivers.evaluation.heldout.score_heldout``: document completion, half of
every
test document observed, the topics fixed). Throughput is tokens x iterations / seconds / cores, two ways: by the
wall clock (cores = 2 for ours, the workers for tomotopy), and by CPU time (user + system seconds of every process
of the run: for ours the driver, the JVM and its Python workers, read from /proc; for tomotopy its process), which
stays comparable while other jobs share the machine. Iterations after the first are timed (the first includes
the start of the resident stage; tomotopy's initialisation is not timed either). Printed ratios: perplexity and
throughput of lda-gibbs over tomotopy's (2 workers)::

    python tests/bench/bench_gibbs_peer.py --corpora paragraph:35000 mixed:100000 --topics 50 --iterations 300
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench_common import CACHE, CORES  # noqa: E402  (first: puts the project on sys.path)

from bench_corpus import ensure_corpus  # noqa: E402
from bench_gibbs import heldout, tomotopy_documents  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int | None = None) -> float:
    """User + system CPU seconds of process ``root`` (default: this one) and all its descendants (/proc)."""
    root = os.getpid() if root is None else root
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / TICK
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack += children.get(pid, [])
    return total


def fit_ours(spark, train_dir: str, topics: int, iterations: int, seed: int, out: Path, extra=()) -> dict:
    """``train --model lda-gibbs`` with its defaults; per iteration the wall clock and the CPU seconds of the run's
    process tree (recorded by the engine's ``on_iteration`` hook)."""
    from conftest import train_args
    from drivers.engines.gibbs import engine as gibbs
    from jobs import train

    marks = []
    fit = gibbs.GibbsEngine.fit

    def recording_fit(self, *args, **kwargs):
        kwargs["on_iteration"] = lambda record: marks.append((time.perf_counter(), tree_cpu_seconds()))
        return fit(self, *args, **kwargs)

    gibbs.GibbsEngine.fit = recording_fit
    try:
        meta = train.train(spark, train_args(train_dir, out, "--model", "lda-gibbs", "--topics", topics,
                                             "--iterations", iterations, "--seed", seed, "--sync", "resident",
                                             *extra))
    finally:
        gibbs.GibbsEngine.fit = fit
    tokens, n = meta["data"]["tokens"], len(marks) - 1
    wall, cpu = marks[-1][0] - marks[0][0], marks[-1][1] - marks[0][1]
    topic_word = np.load(out / "topic_word.npy")
    return {"label": f"lda-gibbs ({meta['partitions']} partitions, {meta['sync']})", "cores": CORES,
            "tokens": tokens, "partitions": meta["partitions"],
            "seconds_per_iteration": wall / n, "cpu_per_iteration": cpu / n, "alpha": meta["alpha"],
            "topic_word": topic_word, "alpha_sum": float(np.sum(meta["alpha"]))}


def fit_tomotopy(documents, n_tokens: int, vocab_size: int, topics: int, iterations: int, seed: int,
                 workers: int) -> dict:
    import tomotopy as tp

    model = tp.LDAModel(k=topics, alpha=0.1, eta=0.01, seed=seed)
    for words in documents:
        model.add_doc(words)
    model.train(0, workers=workers)
    model.train(1, workers=workers)            # as for ours, the first iteration is not timed
    wall, cpu = time.perf_counter(), time.process_time()
    model.train(iterations - 1, workers=workers)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    topic_word = np.zeros((topics, vocab_size))
    columns = np.array([int(w) for w in model.used_vocabs])
    for k in range(topics):
        topic_word[k, columns] = model.get_topic_word_dist(k)
    alpha = np.asarray(model.alpha, dtype=float)
    return {"label": f"tomotopy ({workers} worker{'s' if workers > 1 else ''})", "cores": workers,
            "tokens": n_tokens, "seconds_per_iteration": wall / (iterations - 1),
            "cpu_per_iteration": cpu / (iterations - 1), "alpha": alpha.tolist(), "topic_word": topic_word,
            "alpha_sum": float(alpha.sum())}


def run_corpus(spark, kind: str, docs: int, topics: int, iterations: int, seed: int, extra=(),
               heldout_fraction: float = 0.1) -> dict:
    train_dir, test_dir = ensure_corpus(spark, docs, heldout_fraction, kind=None if kind == "mixed" else kind)
    corpus = json.loads((Path(train_dir) / "corpus.json").read_text())
    vocab_size = corpus["vocab_size"]
    rows = [fit_ours(spark, train_dir, topics, iterations, seed,
                     CACHE / f"peer-run-{kind}{docs}-K{topics}-I{iterations}" / "lda-gibbs", extra)]
    documents, n_tokens = tomotopy_documents(train_dir)
    for workers in (1, CORES):
        rows.append(fit_tomotopy(documents, n_tokens, vocab_size, topics, iterations, seed, workers))
    for row in rows:
        row["perplexity"] = heldout(spark, test_dir, row.pop("topic_word"), row.pop("alpha"), seed)
        row["tokens_per_second_per_core"] = row["tokens"] / row["seconds_per_iteration"] / row["cores"]
        row["tokens_per_cpu_second"] = row["tokens"] / row["cpu_per_iteration"]
    return {"kind": kind, "docs": docs, "train": train_dir, "documents": corpus.get("documents"),
            "tokens": n_tokens, "rows": rows}


def format_report(report: dict) -> str:
    lines = []
    for c in report["corpora"]:
        tokens_per_doc = c["tokens"] / c["documents"] if c.get("documents") else float("nan")
        lines += [f"{c['kind']} ({c['train']}): {c['tokens']} tokens, {tokens_per_doc:.1f} per document; "
                  f"K={report['topics']}, {report['iterations']} iterations",
                  f"{'model':36} {'s/iter':>7} {'tok/s/core':>11} {'tok/cpu-s':>10} {'perplexity':>10} "
                  f"{'alpha_sum':>9}"]
        for r in c["rows"]:
            lines.append(f"{r['label']:36} {r['seconds_per_iteration']:7.3f} {r['tokens_per_second_per_core']:11.3g} "
                         f"{r['tokens_per_cpu_second']:10.3g} {r['perplexity']:10.1f} {r['alpha_sum']:9.3f}")
        ours, peer = c["rows"][0], next(r for r in c["rows"] if r["cores"] == CORES and r is not c["rows"][0])
        lines.append(f"lda-gibbs / tomotopy ({CORES} workers): perplexity "
                     f"{ours['perplexity'] / peer['perplexity']:.3f}, throughput per core "
                     f"{ours['tokens_per_second_per_core'] / peer['tokens_per_second_per_core']:.2f} (wall), "
                     f"{ours['tokens_per_cpu_second'] / peer['tokens_per_cpu_second']:.2f} (CPU time)")
        lines.append("")
    lines.append(f"(1-minute load average at the end: {report['load_average']:.1f})")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=["paragraph:35000", "mixed:100000"],
                        help="KIND:DOCS[:HELDOUT], KIND one of paragraph, verse, mixed; HELDOUT the test fraction "
                             "(default 0.1; mixed:102993:0.05 is the whole pool, 2.05M training tokens)")
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-flag", action="append", default=[], metavar="FLAG",
                        help="an extra flag of ours (repeat, e.g. --train-flag=--fixed-alpha)")
    args = parser.parse_args(argv)
    from bench_common import bench_session
    spark = bench_session("spark-topics Gibbs vs tomotopy")
    report = {"topics": args.topics, "iterations": args.iterations, "seed": args.seed, "corpora": [],
              "date": time.strftime("%Y-%m-%d %H:%M"), "extra": args.train_flag}
    for item in args.corpora:
        kind, docs, *heldout = item.split(":")
        report["corpora"].append(run_corpus(spark, kind, int(docs), args.topics, args.iterations, args.seed,
                                            args.train_flag, float(heldout[0]) if heldout else 0.1))
    report["load_average"] = os.getloadavg()[0]
    print(format_report(report))
    path = CACHE / f"gibbs-peer-K{args.topics}-I{args.iterations}.json"
    path.write_text(json.dumps(report, indent=2, default=float))
    print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
