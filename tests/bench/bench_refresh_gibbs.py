"""Refresh of an lda-gibbs model against a retrain on the union, in CPU seconds (issue 30, item 2).

WEB chapters (real text, ~1.2k documents): 10% held out by a hash of the id; the rest, by a hash of the id, in a
base (the first ``--base-share``, default 3/4) and one batch. The base model is trained (``--iterations``), then
refreshed with two batches (the rest, halved), in two roots: ``--chain-sweeps all`` (the chain continued over
every document) and ``--chain-sweeps new`` (the batches sampled given the old assignments), ``--refresh-iterations``
each (the first refresh of a root also publishes the base as version 0).
The retrain fits the union from a random start with the base's iterations. All are scored on the held-out part
(prepared with the refreshed vocabulary: one vocabulary for all) by ``evaluate`` (the Gibbs estimator). CPU
seconds: of the whole process tree (Spark's JVM and Python workers included), from the cpuacct cgroup the shell
was put in (``--cpuacct``), read around each step; the machine is shared, so wall seconds are shown but mean
little. ::

    mkdir -p /sys/fs/cgroup/cpuacct/NAME && echo $$ > /sys/fs/cgroup/cpuacct/NAME/cgroup.procs
    .venv/bin/python tests/bench/bench_refresh_gibbs.py --cpuacct /sys/fs/cgroup/cpuacct/NAME/cpuacct.usage
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import time

from bench_common import CACHE, bench_session  # noqa: E402  (first: puts the project on sys.path)
from bench_refresh import write_jsonl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpuacct", required=True, help="the cpuacct.usage file of the cgroup this runs in")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=100, help="the base model and the retrain")
    parser.add_argument("--refresh-iterations", type=int, default=50)
    parser.add_argument("--base-share", type=float, default=0.75,
                        help="the base's share of the training documents; the rest: two batches of equal size")
    parser.add_argument("--source", choices=("web", "pool"), default="web",
                        help="web: WEB chapters (~1.2k); pool: the benchmark pool (tests/bench/bench_corpus.py)")
    parser.add_argument("--documents", type=int, default=None, help="at most this many documents of the source")
    options = parser.parse_args()

    from bench_heldout_sample import documents
    from bench_refresh import pool_documents
    from drivers.preparation.corpus import prepare_corpus
    from drivers.store import model_store
    from jobs import evaluate, refresh, train

    def cpu() -> float:
        with open(options.cpuacct) as f:
            return int(f.read()) / 1e9

    spark = bench_session("bench-refresh-gibbs")
    work = CACHE / f"refresh-gibbs-{options.source}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows = pool_documents() if options.source == "pool" else documents("web")
    if options.documents:
        rows = sorted(rows, key=lambda r: hashlib.sha256(b"pick" + r["id"].encode()).digest())[:options.documents]
    digest = {r["id"]: hashlib.sha256(r["id"].encode()).digest() for r in rows}
    test = [r for r in rows if digest[r["id"]][0] < 26]
    training = sorted((r for r in rows if digest[r["id"]][0] >= 26), key=lambda r: digest[r["id"]][1:])
    cut = int(len(training) * options.base_share)
    half = cut + (len(training) - cut) // 2
    base_raw = write_jsonl(work / "base.jsonl", training[:cut])
    batches = [write_jsonl(work / "batch1.jsonl", training[cut:half]), write_jsonl(work / "batch2.jsonl", training[half:])]
    union_raw = write_jsonl(work / "union.jsonl", training)
    print(f"{options.source}: {cut} base documents, two batches of {half - cut}, {len(test)} held out; "
          f"K={options.topics}, {options.iterations} iterations, refresh {options.refresh_iterations}")
    common = ["--model", "lda-gibbs", "--topics", options.topics, "--seed", 0, "--partitions", 2]

    def timed(step):
        wall, began = time.time(), cpu()
        step()
        return cpu() - began, time.time() - wall

    costs = {}
    costs["base"] = timed(lambda: (prepare_corpus(spark, base_raw, str(work / "c0")), train.train(
        spark, train.parse_request(common + ["--corpus", work / "c0", "--output", work / "base",
                                             "--iterations", options.iterations]))))
    for i, batch in enumerate(batches):
        for sweeps in ("all", "new"):
            flags = ["--model", work / f"root-{sweeps}", "--input", batch, "--iterations", options.refresh_iterations,
                     "--chain-sweeps", sweeps] + (["--base", work / "base"] if i == 0 else [])
            p = argparse.ArgumentParser()
            refresh.add_arguments(p)
            request = refresh.request_from(p.parse_args([str(f) for f in flags]))
            costs[f"refresh {i + 1} --chain-sweeps {sweeps}"] = timed(lambda: refresh.refresh_root(spark, request))
    vocab = f"{model_store.resolve(str(work / 'root-all'))}/vocab.parquet"
    costs["retrain on the union"] = timed(lambda: (
        prepare_corpus(spark, union_raw, str(work / "cu"), vocab=vocab),
        train.train(spark, train.parse_request(common + ["--corpus", work / "cu", "--output", work / "retrain",
                                                         "--iterations", options.iterations]))))
    prepare_corpus(spark, write_jsonl(work / "test.jsonl", test), str(work / "test"), vocab=vocab)
    models = {"refresh 2 --chain-sweeps all": model_store.resolve(str(work / "root-all")),
              "refresh 2 --chain-sweeps new": model_store.resolve(str(work / "root-new")),
              "retrain on the union": work / "retrain"}
    print(f"\n{'run':<30} {'CPU s':>8} {'x retrain':>9} {'wall s':>8} {'held-out perplexity':>20}")
    retrain_cpu = costs["retrain on the union"][0]
    for name, (cpu_s, wall_s) in costs.items():
        perplexity = evaluate.evaluate_model(spark, str(models[name]), str(work / "test"))["perplexity"] \
            if name in models else float("nan")
        print(f"{name:<30} {cpu_s:>8.1f} {cpu_s / retrain_cpu:>9.2f} {wall_s:>8.1f} {perplexity:>20.1f}")
    spark.stop()


if __name__ == "__main__":
    main()
