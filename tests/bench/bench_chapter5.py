"""Benchmark: Wallach's chapter-5 comparison (cluster-lda against lda-gibbs and dp-mixture, stop words removed) by
left-to-right bits per word, several seeds, CPU seconds of every command (README, "Chapter 5 on real text").

Each corpus is prepared once (``prepare --ordered --min-df 3``: the default English stop words removed); then for
every seed and model ``train --topics K --iterations I --heldout-fraction 0.1 --seed S`` and ``evaluate --method
left-to-right --particles P --seed S --json``. The held-out documents are the same for every seed (a salted hash
of the id); the seed changes the chain and the particles. Every command runs in a cpuacct cgroup of its own
(``--cgroup``, default /sys/fs/cgroup/cpuacct/w27), so its CPU seconds count the driver, the JVM and the Python
workers; ``--jobs`` commands run side by side. Results: one JSON line per run in ``OUT/runs.jsonl`` (kept: a run
already there is not repeated) and the table on stdout.

    python tests/bench/pydoc_pages.py /tmp/pydoc.jsonl
    python tests/bench/bench_chapter5.py --out /tmp/ch5 --corpus webch=sample_data/web_chapters.jsonl.gz \\
        --corpus pydoc=/tmp/pydoc.jsonl --seeds 1,2 --topics 20 --iterations 200 --jobs 2
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODELS = ("lda-gibbs", "cluster-lda", "dp-mixture")
CLI = str(Path(sys.executable).with_name("spark-topics"))
REPO = Path(__file__).resolve().parents[2]


def run_in_cgroup(cmd: list[str], cgroup: Path, log: Path) -> float:
    """Run ``cmd`` in a fresh cpuacct cgroup; its CPU seconds (every process it started)."""
    cgroup.mkdir(parents=True, exist_ok=True)

    def enter():
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))
    before = int((cgroup / "cpuacct.usage").read_text())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    with open(log, "w") as out:      # this checkout's code, not the one the environment was installed from
        subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=True, preexec_fn=enter, env=env, cwd=REPO)
    return (int((cgroup / "cpuacct.usage").read_text()) - before) / 1e9


def one_run(corpus: str, corpus_dir: Path, model: str, seed: int, args, lock) -> dict:
    name = f"{corpus}-{model}{args.tag}-K{args.topics}-s{seed}"
    run_dir = args.out / name
    group = Path(args.cgroup) / name
    extra = args.extra.get(model, [])
    train = [CLI, "train", "--model", model, "--topics", str(args.topics), "--corpus", str(corpus_dir), "--output",
             str(run_dir / "model"), "--iterations", str(args.iterations), "--heldout-fraction", "0.1",
             "--seed", str(seed)] + extra
    train_cpu = run_in_cgroup(train, group, args.out / f"{name}.train.log")
    figures = run_dir / "l2r.json"
    evaluate = [CLI, "evaluate", "--model-dir", str(run_dir / "model"), "--corpus", str(corpus_dir), "--method",
                "left-to-right", "--particles", str(args.particles), "--seed", str(seed), "--json", str(figures)]
    eval_cpu = run_in_cgroup(evaluate, group, args.out / f"{name}.eval.log")
    meta = json.loads((run_dir / "model" / "model.json").read_text())
    hyper = meta.get("hyper", {})
    keep = {k: hyper[k] for k in ("alpha_doc", "alpha1", "alpha0", "zeta", "beta") if k in hyper}
    keep.update({"mean_" + k: v for k, v in mean_hyper(run_dir / "model", list(keep)).items()})
    if isinstance(hyper.get("alpha"), list):
        keep["alpha_sum"] = float(sum(hyper["alpha"]))
    record = {"corpus": corpus, "model": model + args.tag, "seed": seed, "topics": args.topics, "iterations": args.iterations,
              "extra": extra, "figures": json.loads(figures.read_text()), "train_cpu_s": train_cpu,
              "eval_cpu_s": eval_cpu, "hyper": keep, "cluster_sizes": meta.get("cluster_sizes")}
    with lock:
        with open(args.out / "runs.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
    print(f"{name}: {record['figures'].get('bits_per_word')} bits/word, train {train_cpu:.0f} CPU s, "
          f"evaluate {eval_cpu:.0f} CPU s", flush=True)
    return record


def mean_hyper(model_dir: Path, keys) -> dict:
    """The mean of every scalar hyperparameter over the second half of the chain (model.json's trace)."""
    rows = [r.get("hyper") or {} for r in json.loads((model_dir / "model.json").read_text()).get("trace", [])]
    rows = rows[len(rows) // 2:]
    return {k: sum(r[k] for r in rows) / len(rows) for k in keys
            if rows and all(isinstance(r.get(k), (int, float)) for r in rows)}


def table(records) -> str:
    lines = [f"{'corpus':8} {'model':16} {'topics':>6} {'iter':>5} {'seed':>4} {'bits/word':>10} {'importance':>10} {'train CPU s':>11} "
             f"{'l2r CPU s':>9}  hyperparameters, clusters"]
    for r in sorted(records, key=lambda r: (r["corpus"], r["topics"], r["model"], r.get("iterations", 200), r["seed"])):
        f = r["figures"]
        sizes = r["cluster_sizes"]
        lines.append(f"{r['corpus']:8} {r['model']:16} {r['topics']:>6} {r.get('iterations', 200):>5} {r['seed']:>4} {f.get('bits_per_word', float('nan')):>10.4f} "
                     f"{f.get('bits_per_word_importance', float('nan')):>10.4f} {r['train_cpu_s']:>11.1f} "
                     f"{r['eval_cpu_s']:>9.1f}  "
                     + " ".join(f"{k}={v:.3g}" for k, v in r["hyper"].items())
                     + (f"  {len(sizes)} clusters (largest {', '.join(map(str, sizes[:3]))})" if sizes else ""))
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--corpus", action="append", required=True, help="NAME=JSONL (prepared once under OUT/NAME)")
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--particles", type=int, default=5)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--cgroup", default="/sys/fs/cgroup/cpuacct/w27")
    p.add_argument("--extra", action="append", default=[], help="MODEL:ARGS, extra train arguments of one model")
    p.add_argument("--tag", default="", help="appended to the model's name in the runs' names and the table (a "
                                            "variant: --tag=-beta with --extra 'lda-gibbs:--beta-update sample')")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    args.extra = {m: a.split() for m, a in (e.split(":", 1) for e in args.extra)}
    corpora = {}
    for spec in args.corpus:
        name, source = spec.split("=", 1)
        corpora[name] = args.out / name
        if not (corpora[name] / "docs.parquet").exists():
            cpu = run_in_cgroup([CLI, "prepare", "--input", source, "--output", str(corpora[name]), "--ordered",
                                 "--min-df", "3"], Path(args.cgroup) / f"prepare-{name}", args.out / f"{name}.log")
            print(f"prepared {name} ({cpu:.0f} CPU s)", flush=True)
    done = set()
    if (args.out / "runs.jsonl").exists():
        done = {(r["corpus"], r["model"], r["seed"], r["topics"], r.get("iterations", 200), tuple(r["extra"]))
                for r in map(json.loads, (args.out / "runs.jsonl").read_text().splitlines())}
    todo = [(c, m, int(s)) for s, c, m in itertools.product(args.seeds.split(","), corpora, args.models.split(","))
            if (c, m + args.tag, int(s), args.topics, args.iterations, tuple(args.extra.get(m, []))) not in done]
    lock = threading.Lock()
    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda job: one_run(job[0], corpora[job[0]], job[1], job[2], args, lock), todo))
    records = [json.loads(line) for line in (args.out / "runs.jsonl").read_text().splitlines()]
    print(table(records))


if __name__ == "__main__":
    main()
