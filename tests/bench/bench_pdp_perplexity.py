"""Benchmark (issue 28 targets): held-out perplexity of the shipped network specs against the built-in models on
real segmented text, and of pyp-lda.json against lda-gibbs on real text with bursty words.

Corpus: the 1,189 chapters of the World English Bible (``sample_data/web_chapters.jsonl.gz``) split into
sentences (``prepare --segments sentence --holdout-fraction 0.2``: 944 training and 245 held-out chapters; names
and rare words recur within a chapter, the burstiness a Pitman-Yor topic-word vector models). Pairs, each with the
same K, iterations, seed and priors (alpha 0.1 fixed, beta 0.01; b = 10 sampled, a = 0 for the segment vectors):

* ``stm`` vs ``pdp-network --network stm``; ``seqlda --fixed-alpha`` vs ``--network seqlda``; ``adatm`` vs
  ``--network adatm`` (target: within 3%);
* ``lda-gibbs --fixed-alpha`` vs ``--network pyp-lda`` (target: pyp-lda lower); and lda-gibbs with its alpha
  optimised (the default) for reference;
* ``hdp-pyp``: ``lda-gibbs --fixed-alpha``, ``--network hdp-lda`` (documents DP over a corpus Dirichlet root) and
  ``--network hdp-pyp-lda`` (documents DP over a corpus-level Pitman-Yor vector over a root; no target);
* ``pyp-lda-2``: ``lda-gibbs --fixed-alpha``, ``--network pyp-lda`` and ``--network pyp-lda-2`` (the topics'
  Pitman-Yor word vectors over a corpus-level Pitman-Yor word vector over the uniform, hca's; no target).
* ``hca``: ``--network pyp-lda``, ``--network hdp-pyp-lda`` and ``--network hca`` (the two combined: hca's
  structure; no target).
* ``hca-2``: ``--network pyp-lda-2``, ``--network hca`` and ``--network hca-2`` (hca's topic side with pyp-lda-2's
  word side: hca's full structure; no target).
* ``burst``: ``lda-gibbs --fixed-alpha``, ``--network lda``, ``--network pyp-lda`` and ``--network burst-lda`` (a
  Pitman-Yor word vector per topic per document over phi[topic]: DCMLDA's / hca's burstiness; no target).
* ``pyp-lda-3``: ``lda-gibbs --fixed-alpha``, ``--network pyp-lda-2``, ``--network pyp-lda-3`` (two Pitman-Yor
  levels per topic over pyp-lda-2's corpus-level vector) and ``tests/bench/pyp-lda-4.json`` (three levels per
  topic; no target).
* ``burst-pyp``: ``lda-gibbs --fixed-alpha``, ``--network burst-lda`` and ``--network burst-pyp-lda`` (the burst
  vectors over a Pitman-Yor phi[topic] over a corpus root: hca's full burstiness; no target).
* ``pyp-lda-mix``: ``lda-gibbs --fixed-alpha``, ``--network pyp-lda-2`` and ``--network pyp-lda-mix`` (the topics'
  Pitman-Yor word vectors over a rho-mixture of a Dirichlet base per topic and a corpus background; no target).
* ``whole``: ``lda-gibbs --fixed-alpha``, ``--network pyp-lda-2`` and ``tests/bench/pyp-lda-2-mix.json``
  (pyp-lda-2 with phi[topic] over two parents, a level per topic and the corpus-level vector, mixed by rho: the
  split engine refuses it, so it trains in whole-network mode on one partition; no target).

``--corpus FILE.jsonl[.gz]`` (one document per line, ``id`` and ``text``) replaces the default corpus: prepared with
``--holdout-fraction 0.2`` and no segments (the results file's name gets the file's stem), e.g. the manual pages of
sections 2 and 3 (``tests/bench/manpages_corpus.py``, then those lines whose id starts with ``2/`` or ``3/``).

Every model is scored by ``evaluate``'s default held-out estimator (document completion: half of every held-out
chapter observed, the model's own sampler with the topics fixed, eq 5.10). CPU seconds: the cpuacct cgroup of
this process (the JVM and Python workers included) around each train + evaluate; put the shell in its own group
first (README, "Measuring"). Not part of the test run::

    python tests/bench/bench_pdp_perplexity.py --topics 20 --iterations 100 [--only stm,pyp-lda] [--again]

Results: a table on stdout and ``out/bench/pdp-perplexity-K{K}-I{iterations}[-S{seed}].json`` (a seed other than
1 has its own file; runs already there are kept unless ``--again``). Training uses ``--sync auto`` (the default).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench_common import CACHE, REPO, bench_session  # noqa: E402  (first: puts the project on sys.path)

RUNS = {   # name -> (model, extra train flags)
    "stm": ("stm", ()),
    "stm.json": ("pdp-network", ("--network", "stm")),
    "seqlda": ("seqlda", ("--fixed-alpha",)),
    "seqlda.json": ("pdp-network", ("--network", "seqlda")),
    "adatm": ("adatm", ()),
    "adatm.json": ("pdp-network", ("--network", "adatm")),
    "lda-gibbs": ("lda-gibbs", ("--fixed-alpha",)),
    "pyp-lda.json": ("pdp-network", ("--network", "pyp-lda")),
    "lda-gibbs (alpha optimised)": ("lda-gibbs", ()),
    "hdp-lda.json": ("pdp-network", ("--network", "hdp-lda")),
    "hdp-pyp-lda.json": ("pdp-network", ("--network", "hdp-pyp-lda")),
    "pyp-lda-2.json": ("pdp-network", ("--network", "pyp-lda-2")),
    "hca.json": ("pdp-network", ("--network", "hca")),
    "hca-2.json": ("pdp-network", ("--network", "hca-2")),
    "lda.json": ("pdp-network", ("--network", "lda")),
    "burst-lda.json": ("pdp-network", ("--network", "burst-lda")),
    "pyp-lda-3.json": ("pdp-network", ("--network", "pyp-lda-3")),
    "pyp-lda-4": ("pdp-network", ("--network", str(REPO / "tests" / "bench" / "pyp-lda-4.json"))),
    "burst-pyp-lda.json": ("pdp-network", ("--network", "burst-pyp-lda")),
    "hca-burst.json": ("pdp-network", ("--network", "hca-burst")),
    "pyp-lda-mix.json": ("pdp-network", ("--network", "pyp-lda-mix")),
    "pyp-lda-2-mix (whole)": ("pdp-network", ("--network", str(REPO / "tests" / "bench" / "pyp-lda-2-mix.json"))),
}
GROUPS = {"stm": ["stm", "stm.json"], "seqlda": ["seqlda", "seqlda.json"], "adatm": ["adatm", "adatm.json"],
          "pyp-lda": ["lda-gibbs", "pyp-lda.json", "lda-gibbs (alpha optimised)"],
          "hdp-pyp": ["lda-gibbs", "hdp-lda.json", "hdp-pyp-lda.json"],
          "pyp-lda-2": ["lda-gibbs", "pyp-lda.json", "pyp-lda-2.json"],
          "hca": ["pyp-lda.json", "hdp-pyp-lda.json", "hca.json"],
          "hca-2": ["pyp-lda-2.json", "hca.json", "hca-2.json"],
          "burst": ["lda-gibbs", "lda.json", "pyp-lda.json", "burst-lda.json"],
          "burst-pyp": ["lda-gibbs", "burst-lda.json", "burst-pyp-lda.json"],
          "burst-pyp-only": ["burst-pyp-lda.json"], "hca-burst": ["hca.json", "hca-burst.json"],
          "pyp-lda-3": ["lda-gibbs", "pyp-lda-2.json", "pyp-lda-3.json", "pyp-lda-4"],
           "pyp-lda-mix": ["lda-gibbs", "pyp-lda-2.json", "pyp-lda-mix.json"],
           "whole": ["lda-gibbs", "pyp-lda-2.json", "pyp-lda-2-mix (whole)"],
           "slow-sides": ["lda.json", "burst-lda.json", "pyp-lda-2.json", "pyp-lda-3.json"]}   # (issue 28's speed)


def cpu_seconds() -> float:
    """CPU seconds of this process's cpuacct cgroup (children included)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return int(Path(f"/sys/fs/cgroup/cpuacct{path}/cpuacct.usage").read_text()) / 1e9
    raise SystemExit("no cpuacct cgroup")


def segmented_corpus(spark) -> tuple[str, str]:
    from drivers.preparation.heldout_corpus import prepare_with_holdout

    out = CACHE / "web-chapters-sentences-holdout20"
    if not (out / "corpus.json").exists():
        prepare_with_holdout(spark, str(REPO / "sample_data" / "web_chapters.jsonl.gz"), str(out), 0.2,
                             segments="sentence", overwrite=True)
    return str(out), str(out / "heldout")


def other_corpus(spark, path: str) -> tuple[str, str]:
    from drivers.preparation.heldout_corpus import prepare_with_holdout

    out = CACHE / f"{Path(path).name.split('.')[0]}-holdout20"
    if not (out / "corpus.json").exists():
        prepare_with_holdout(spark, path, str(out), 0.2, overwrite=True)
    return str(out), str(out / "heldout")


def run_one(spark, name: str, train_dir: str, test_dir: str, topics: int, iterations: int, seed: int,
            root: Path) -> dict:
    from conftest import train_args
    from jobs import train
    from jobs.evaluate import evaluate_model

    model, extra = RUNS[name]
    out = root / name.replace(" ", "_").replace("(", "").replace(")", "")
    cpu, wall = cpu_seconds(), time.perf_counter()
    meta = train.train(spark, train_args(train_dir, out, "--model", model, *extra, "--topics", topics,
                                         "--iterations", iterations, "--seed", seed))
    train_cpu = cpu_seconds() - cpu
    metrics = evaluate_model(spark, str(out), test_dir, seed=seed)
    hyper = meta.get("hyper", {})
    return {"run": name, "model": model, "flags": list(extra), "perplexity": metrics["perplexity"],
            "train_cpu_seconds": train_cpu, "cpu_seconds": cpu_seconds() - cpu,
            "wall_seconds": time.perf_counter() - wall, "tokens": meta["data"]["tokens"],
            "hyper": {k: hyper[k] for k in ("a_values", "b_values", "b") if k in hyper}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default=",".join(GROUPS), help="groups: " + ",".join(GROUPS))
    parser.add_argument("--again", action="store_true", help="run again what the results file has")
    parser.add_argument("--corpus", default=None, help="another corpus (module docstring)")
    args = parser.parse_args()
    spark = bench_session("bench pdp-network perplexity")
    train_dir, test_dir = segmented_corpus(spark) if args.corpus is None else other_corpus(spark, args.corpus)
    stem = f"pdp-perplexity-K{args.topics}-I{args.iterations}" + ("" if args.seed == 1 else f"-S{args.seed}") + (
        "" if args.corpus is None else "-" + Path(args.corpus).name.split(".")[0])
    root, result_file = CACHE / stem, CACHE / f"{stem}.json"
    rows = json.loads(result_file.read_text()) if result_file.exists() else {}
    for group in args.only.split(","):
        for name in GROUPS[group]:
            if name in rows and not args.again:
                continue
            rows[name] = run_one(spark, name, train_dir, test_dir, args.topics, args.iterations, args.seed, root)
            print(json.dumps(rows[name]), flush=True)
            result_file.write_text(json.dumps(rows, indent=2))
    print(f"\n{'run':30s} {'perplexity':>10s} {'train CPU s':>11s} {'CPU s':>8s}  hyper")
    for name, r in rows.items():
        print(f"{name:30s} {r['perplexity']:10.1f} {r['train_cpu_seconds']:11.1f} {r['cpu_seconds']:8.1f}  "
              f"{json.dumps(r['hyper'])}")
    for group, names in GROUPS.items():
        have = [n for n in names if n in rows]
        if len(have) >= 2:
            base = rows[have[0]]["perplexity"]
            print(f"{group}: " + ", ".join(f"{n} {rows[n]['perplexity'] / base - 1:+.1%}" for n in have[1:])
                  + f" against {have[0]}")


if __name__ == "__main__":
    main()
