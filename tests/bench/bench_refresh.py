"""Refresh against a full retrain on real text: quality after the last refresh and the cost of each refresh.

A corpus is split 90/10 by a hash of the id (the test part), the training part sorted by id (or by a hash:
``--order hash``) into four batches (``--batches N``): the first trains the base model (``train``, 50 EM
iterations), the others refresh it one after the other (``refresh``, each mode in its own root: accumulate and
online 20 iterations over the batch, batch 10 over the union, auto the one or the other as its schedule says).
A retrain on the union of all batches (50 iterations) is the reference; each refresh's seconds are also given
as a share of the retrain's, with the mode it ran (a: accumulate, b: a guided batch pass). Every model is scored on the test part with one estimator (document completion,
:func:`drivers.families.variational.evaluate.evaluate_model`), the test part and the retrain prepared with the last
refreshed version's vocabulary, so all models share their words. Seconds: the whole job (reading and preparing
the documents included) for each refresh, preparing and training for the retrain; with ``--cpuacct`` also CPU
seconds of the whole process tree (Spark's JVM and Python workers included) from the cpuacct cgroup the shell was
put in, read around each step (the machine is shared: compare CPU, not wall). Beside the tests::

    .venv/bin/python tests/bench/bench_refresh.py --source web --topics 20
    .venv/bin/python tests/bench/bench_refresh.py --source web --modes auto --batches 11
    .venv/bin/python tests/bench/bench_refresh.py --source pydoc --topics 20
    .venv/bin/python tests/bench/bench_refresh.py --source pool --topics 50
    mkdir -p /sys/fs/cgroup/cpuacct/NAME && echo $$ > /sys/fs/cgroup/cpuacct/NAME/cgroup.procs
    .venv/bin/python tests/bench/bench_refresh.py --source pool --topics 50 --modes auto \
        --cpuacct /sys/fs/cgroup/cpuacct/NAME/cpuacct.usage [--batches 11]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import time

from bench_common import CACHE, bench_session  # noqa: E402  (first: puts the project on sys.path)


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"id": r["id"], "text": r["text"]}) + "\n")
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", choices=("web", "pydoc", "pool"), default="web",
                        help="web: WEB chapters (~1.2k); pydoc: Python library docs; pool: the 100k-document "
                             "benchmark pool (verses and commentary paragraphs of five works, tests/bench/bench_corpus.py)")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--modes", nargs="+", default=["auto", "accumulate", "batch"])
    parser.add_argument("--batches", type=int, default=4, help="the base model's batch and the refreshes' (default 4)")
    parser.add_argument("--refresh-iterations", type=int, default=20, help="accumulate and online")
    parser.add_argument("--batch-iterations", type=int, default=10, help="batch mode (over the union)")
    parser.add_argument("--retrain-iterations", type=int, default=50, help="the base model and the retrain")
    parser.add_argument("--order", choices=("id", "hash"), default="id",
                        help="batches by id order (the issue's split: non-stationary for a book-ordered corpus), or "
                             "by a hash of the id (stationary batches)")
    parser.add_argument("--cpuacct", help="the cpuacct.usage file of the cgroup this runs in: CPU seconds too")
    options = parser.parse_args()

    def cpu() -> float:
        if not options.cpuacct:
            return float("nan")
        with open(options.cpuacct) as f:
            return int(f.read()) / 1e9

    from bench_heldout_sample import documents
    from drivers.store import model_store
    from drivers.families.variational.evaluate import evaluate_model
    from jobs import refresh, train
    from drivers.preparation.corpus import prepare_corpus

    spark = bench_session("bench-refresh")
    work = CACHE / (f"refresh-{options.source}-{options.order}" + (f"-{options.batches}" if options.batches != 4 else ""))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows = pool_documents() if options.source == "pool" else documents(options.source)
    test = [r for r in rows if hashlib.sha256(r["id"].encode()).digest()[0] < 26]
    key = (lambda r: r["id"]) if options.order == "id" else (lambda r: hashlib.sha256(b"order" + r["id"].encode()).digest())
    training = sorted((r for r in rows if hashlib.sha256(r["id"].encode()).digest()[0] >= 26), key=key)
    n = options.batches
    quarter = (len(training) + n - 1) // n
    batches = [write_jsonl(work / f"batch{i}.jsonl", training[i * quarter:(i + 1) * quarter]) for i in range(n)]
    print(f"{options.source}: {len(training)} training documents in {n} batches of ~{quarter} (by {options.order}), "
          f"{len(test)} test documents; K={options.topics}")

    started, started_cpu = time.time(), cpu()
    prepare_corpus(spark, batches[0], str(work / "c0"))
    train.train(spark, train.parse_request(["--corpus", work / "c0", "--output", work / "base", "--topics",
                                            options.topics, "--iterations", options.retrain_iterations, "--tol", 0,
                                            "--seed", 0, "--inference", "variational"]))
    base_seconds, base_cpu = time.time() - started, cpu() - started_cpu
    results = {}
    for mode in options.modes:
        root = work / f"root-{mode}"
        seconds, cpus, chosen = [], [], []
        for i, batch in enumerate(batches[1:]):
            iterations = options.batch_iterations if mode == "batch" else options.refresh_iterations
            flags = ["--model", root, "--input", batch, "--mode", mode, "--iterations", iterations]
            if i == 0:
                flags += ["--base", work / "base"]
            parser_ = argparse.ArgumentParser()
            refresh.add_arguments(parser_)
            began, began_cpu = time.time(), cpu()
            report = refresh.refresh_root(spark, refresh.request_from(parser_.parse_args([str(f) for f in flags])))
            seconds.append(time.time() - began)
            cpus.append(cpu() - began_cpu)
            chosen.append(report["mode"][0])
            print(f"{mode} refresh {i + 1}: {seconds[-1]:.1f} s, {cpus[-1]:.1f} CPU s, mode {report['mode']}",
                  flush=True)
        results[mode] = (str(root), seconds, cpus, chosen)

    # one vocabulary for every score: the last accumulate version's (ids only grow, so it holds the base's)
    final = model_store.resolve(results[options.modes[0]][0])
    vocab = f"{final}/vocab.parquet"
    prepare_corpus(spark, write_jsonl(work / "test.jsonl", test), str(work / "test"), vocab=vocab)
    union = work / "union.jsonl"
    with open(union, "w") as out:
        for batch in batches:
            out.write(open(batch).read())
    began, began_cpu = time.time(), cpu()
    prepare_corpus(spark, str(union), str(work / "cu"), vocab=vocab)
    train.train(spark, train.parse_request(["--corpus", work / "cu", "--output", work / "retrain", "--topics",
                                            options.topics, "--iterations", options.retrain_iterations, "--tol", 0,
                                            "--seed", 0, "--inference", "variational"]))
    retrain_seconds, retrain_cpu = time.time() - began, cpu() - began_cpu
    retrain = evaluate_model(spark, str(work / "retrain"), str(work / "test"))["perplexity"]

    print(f"\nbase model (first batch): {base_seconds:.1f} s ({base_cpu:.1f} CPU s); retrain on the union: "
          f"{retrain_seconds:.1f} s ({retrain_cpu:.1f} CPU s), test perplexity {retrain:.1f}")
    print(f"{'mode':<12} {'perplexity':>10} {'vs retrain':>10}  seconds per refresh (x retrain; a/b: mode run)")
    for mode, (root, seconds, cpus, chosen) in results.items():
        model = model_store.load_model(root)
        view = _restricted(model, vocab)
        perplexity = evaluate_model(spark, view, str(work / "test"))["perplexity"]
        print(f"{mode:<12} {perplexity:>10.1f} {100 * (perplexity / retrain - 1):>+9.1f}% "
              f"  {' / '.join(f'{s:.1f} ({s / retrain_seconds:.2f}{c})' for s, c in zip(seconds, chosen))}")
        if options.cpuacct:
            print(f"{'':<12} {'':>10} {'':>10}  CPU s per refresh (x retrain's CPU s): "
                  f"{' / '.join(f'{s:.1f} ({s / retrain_cpu:.2f}{c})' for s, c in zip(cpus, chosen))}")
    spark.stop()


def pool_documents() -> list[dict]:
    import gzip

    from bench_corpus import build_pool

    path = CACHE / "pool.jsonl.gz"
    if not path.exists():
        build_pool(path)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [{"id": r["id"], "text": r["text"]} for r in map(json.loads, f)]


def _restricted(model, vocab_path):
    """The model over the words of ``vocab_path`` (a prefix of its vocabulary: versions only add words)."""
    from drivers.store import topic_model
    from drivers.storage import read_vocab

    V = len(read_vocab(vocab_path))
    assert model.vocab["term"].astype(str).tolist()[:V] == read_vocab(vocab_path)["term"].astype(str).tolist()
    return topic_model.TopicModel(model.directory, dict(model.meta, vocab_size=V), model.vocab.iloc[:V].copy(),
                                  model.lambda_[:, :V])


if __name__ == "__main__":
    main()
