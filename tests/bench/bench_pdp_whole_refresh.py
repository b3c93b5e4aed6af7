"""Benchmark (issue 30, 2; issue 28, 2): ``refresh`` of a network trained in whole-network mode on real text.

``tests/bench/pyp-lda-2-mix.json`` (the split engine refuses it) trained on the 944 training chapters of the WEB
corpus (sentences; ``bench_pdp_perplexity.py``'s corpus), then refreshed with the 245 held-out chapters' raw text
(a batch with new words: the held-out chapters' words outside the training vocabulary with df >= 3): the batch
joins the one partition, the chain continues. Reports the train's and the refresh's CPU seconds (cpuacct cgroup,
as ``bench_pdp_perplexity.py``), the vocabulary before and after, the documents and tokens, and the version's
topic-word log likelihood per token (model.json's trace) before and after. Not part of the test run::

    python tests/bench/bench_pdp_whole_refresh.py [--iterations 30] [--refresh-iterations 10] [--topics 20]
"""
from __future__ import annotations

import argparse
import gzip
import json

from bench_common import CACHE, REPO, bench_session  # noqa: E402  (first: puts the project on sys.path)
from bench_pdp_perplexity import cpu_seconds, segmented_corpus


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--refresh-iterations", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    spark = bench_session("bench pdp-network whole-network refresh")
    train_dir, test_dir = segmented_corpus(spark)
    import pandas as pd

    from conftest import train_args
    from drivers.store import model_store
    from jobs import refresh, train
    from test_refresh import args as refresh_args

    root = CACHE / f"pdp-whole-refresh-K{args.topics}-I{args.iterations}-S{args.seed}"
    if root.exists():
        import shutil

        shutil.rmtree(root)
    held = set(pd.read_parquet(f"{test_dir}/docs.parquet")["doc_id"].astype(str))
    batch = root / "batch.jsonl"
    root.mkdir(parents=True, exist_ok=True)
    with gzip.open(REPO / "sample_data" / "web_chapters.jsonl.gz", "rt") as f, open(batch, "w") as out:
        for line in f:
            if str(json.loads(line)["id"]) in held:
                out.write(line)
    spec = str(REPO / "tests" / "bench" / "pyp-lda-2-mix.json")
    cpu = cpu_seconds()
    meta = train.train(spark, train_args(train_dir, root / "base", "--model", "pdp-network", "--network", spec,
                                         "--topics", args.topics, "--iterations", args.iterations,
                                         "--seed", args.seed))
    train_cpu, cpu = cpu_seconds() - cpu, cpu_seconds()
    report = refresh.refresh_root(spark, refresh.request_from(refresh_args(
        "--model", root / "root", "--base", root / "base", "--input", batch, "--mode", "chain",
        "--iterations", args.refresh_iterations)))
    refresh_cpu = cpu_seconds() - cpu
    version = model_store.read_meta(model_store.resolve(str(root / "root")))
    row = {"train_cpu_seconds": train_cpu, "train_iterations": args.iterations, "refresh_cpu_seconds": refresh_cpu,
           "refresh_iterations": args.refresh_iterations, "documents": report["documents"],
           "vocab": [meta["vocab_size"], version["vocab_size"]], "partitions": version["partitions"],
           "tokens": [meta["data"]["tokens"], version["data"]["tokens"]],
           "loglik_per_token": [meta["trace"][-1]["loglik_per_token"], version["trace"][-1]["loglik_per_token"]],
           "refresh_seconds_per_iteration": [r["seconds"] for r in version["trace"][-args.refresh_iterations:]]}
    (root / "result.json").write_text(json.dumps(row, indent=2, default=str))
    print(json.dumps(row, default=str))


if __name__ == "__main__":
    main()
