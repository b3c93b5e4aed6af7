"""The cost curve in K: seconds per iteration and peak memory of `train`, variational and hybrid, with the
default settings, next to scikit-learn (batch VB) and Spark MLlib (online VB) at the K they reach.

Every run is its own process (``jobs.cli train`` exactly as a user types it, no ``--conf``: the job sizes the
driver's memory itself), watched every 0.2 s: the peak resident memory of the driver's Python process, of the
JVM (in local mode the driver and the executors: ``spark.driver.memory`` bounds its heap), and of the Python
workers (mappers and reducers, summed over the workers alive at one moment). Seconds per iteration: the median
of the iterations after the first two (model.json's trace). Peers run in a process of their own, watched
alike, for a few iterations of their own loop (``--peer-iterations``) on the same training corpus.

Beside the tests, not in the default run (the corpus of bench_corpus.py; sizes as in the README)::

    .venv/bin/python tests/bench/bench_scale.py --docs 100000 --topics 50 200 500 1000 --iterations 6
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench_common import CACHE, REPO  # noqa: E402  (first: puts the project on sys.path)

PY = sys.executable
MB = 1 << 20


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class PeakMemory:
    """Peaks of a process tree's resident memory: the root (Python driver), Java processes, other Python
    processes (Spark's workers), sampled every ``interval`` seconds."""

    def __init__(self, pid: int, interval: float = 0.2):
        self.pid, self.interval = pid, interval
        self.peaks = {"driver_python": 0, "jvm": 0, "workers": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        while not self._stop.is_set():
            tree, frontier = [], [self.pid]
            while frontier:
                pid = frontier.pop()
                tree.append(pid)
                frontier.extend(_children(pid))
            jvm = sum(_rss(p) for p in tree[1:] if "java" in _command(p).split(" ")[0])
            workers = sum(_rss(p) for p in tree[1:] if "java" not in _command(p).split(" ")[0])
            sample = {"driver_python": _rss(self.pid), "jvm": jvm, "workers": workers}
            for key, value in sample.items():
                self.peaks[key] = max(self.peaks[key], value)
            self._stop.wait(self.interval)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {k: round(v / MB) for k, v in self.peaks.items()}


def watched(command: list[str], log_path: Path, timeout: float) -> tuple[int, dict, float]:
    """(exit code, peak MB by part, seconds) of a command."""
    env = dict(os.environ, PYTHONPATH=str(REPO), SPARK_TOPICS_SPARK_LOG_LEVEL="ERROR")
    started = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        monitor = PeakMemory(proc.pid)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = -9
        peaks = monitor.stop()
    return code, peaks, time.time() - started


def run_ours(train_dir: str, mode: str, topics: int, iterations: int, timeout: float) -> dict:
    out = CACHE / "scale" / f"{mode}-K{topics}"
    flags = ["--inference", "hybrid" if mode == "hybrid" else "variational"]
    command = [PY, "-m", "jobs.cli", "train", "--model", "lda", *flags, "--corpus", train_dir, "--output", str(out),
               "--topics", str(topics), "--iterations", str(iterations), "--tol", "0", "--seed", "0",
               "--master", "local[2]"]
    code, peaks, seconds = watched(command, Path(f"{out}.log"), timeout)
    row = {"system": f"spark-topics {mode}", "K": topics, "exit": code, "wall_s": round(seconds, 1), **peaks}
    log_text = Path(f"{out}.log").read_text(errors="replace")
    row["oom"] = "OutOfMemoryError" in log_text
    row["driver_memory"] = next((line.split("spark.driver.memory=")[1].split()[0]
                                 for line in log_text.splitlines() if "spark.driver.memory=" in line), "1g (default)")
    if code == 0:
        meta = json.loads((out / "model.json").read_text())
        times = sorted(r["seconds"] for r in meta["elbo_trace"][2:]) or [r["seconds"] for r in meta["elbo_trace"]]
        row["s_per_iteration"] = round(times[len(times) // 2], 2)
    else:
        row["error"] = log_text.strip().splitlines()[-1][:200] if log_text.strip() else "?"
    return row


PEER_SCRIPT = """
import json, sys, time
sys.path[:0] = [{repo!r}, {repo!r} + "/tests", {repo!r} + "/tests/bench"]
from bench_lda import fit_mllib, fit_sklearn, mllib_features, sklearn_matrix
train_dir, vocab, topics, iterations, system = {args!r}
if system == "sklearn":
    fit = fit_sklearn(sklearn_matrix(train_dir, vocab), topics, iterations, 0)
else:
    from bench_common import bench_session
    spark = bench_session("scale-peer", driver_memory="{memory}")
    fit = fit_mllib(mllib_features(spark, train_dir, vocab, 2), "online", topics, iterations, 0)
print("RESULT", json.dumps({{"fit_seconds": fit["fit_seconds"]}}))
"""


def run_peer(system: str, train_dir: str, vocab: int, topics: int, iterations: int, timeout: float,
             memory: str) -> dict:
    script = PEER_SCRIPT.format(repo=str(REPO), args=(train_dir, vocab, topics, iterations, system), memory=memory)
    log_path = CACHE / "scale" / f"{system}-K{topics}.log"
    code, peaks, seconds = watched([PY, "-c", script], log_path, timeout)
    row = {"system": {"sklearn": "scikit-learn batch", "mllib": f"MLlib online ({memory})"}[system], "K": topics,
           "exit": code, "wall_s": round(seconds, 1), **peaks, "driver_memory": memory if system == "mllib" else "-"}
    text = log_path.read_text(errors="replace")
    row["oom"] = "OutOfMemoryError" in text
    result = [line for line in text.splitlines() if line.startswith("RESULT ")]
    if code == 0 and result:
        row["s_per_iteration"] = round(json.loads(result[-1][7:])["fit_seconds"] / iterations, 2)
    else:
        row["error"] = "timeout" if code == -9 else (text.strip().splitlines() or ["?"])[-1][:200]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100000)
    parser.add_argument("--topics", type=int, nargs="+", default=[50, 200, 500, 1000])
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--modes", nargs="+", default=["variational", "hybrid"])
    parser.add_argument("--peers", nargs="*", default=["sklearn", "mllib"])
    parser.add_argument("--peer-iterations", type=int, default=3)
    parser.add_argument("--mllib-memory", default="1g", help="spark.driver.memory of the MLlib runs")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a run may take")
    args = parser.parse_args()
    from bench_common import bench_session
    from bench_corpus import ensure_corpus

    spark = bench_session("spark-topics scale benchmark: corpus")
    train_dir, _ = ensure_corpus(spark, args.docs)
    spark.stop()
    meta = json.loads(Path(train_dir, "corpus.json").read_text())
    (CACHE / "scale").mkdir(parents=True, exist_ok=True)
    print(f"corpus: {meta['documents']} documents, {meta['tokens']} tokens, V={meta['vocab_size']}", flush=True)
    header = f"{'system':<28} {'K':>5} {'s/iter':>7} {'driver py MB':>12} {'JVM MB':>7} {'workers MB':>10} " \
             f"{'driver mem':>10}  note"
    print(header, flush=True)
    rows = []
    for topics in args.topics:
        runs = [lambda m=m: run_ours(train_dir, m, topics, args.iterations, args.timeout) for m in args.modes]
        runs += [lambda p=p: run_peer(p, train_dir, int(meta["vocab_size"]), topics, args.peer_iterations,
                                      args.timeout, args.mllib_memory) for p in args.peers]
        for run in runs:
            row = run()
            rows.append(row)
            note = "OutOfMemoryError" if row.get("oom") else row.get("error", "")
            print(f"{row['system']:<28} {row['K']:>5} {row.get('s_per_iteration', '-'):>7} "
                  f"{row['driver_python']:>12} {row['jvm']:>7} {row['workers']:>10} {row['driver_memory']:>10}  "
                  f"{note}", flush=True)
    path = CACHE / "scale" / f"results-D{args.docs}.json"
    path.write_text(json.dumps({"corpus": meta, "rows": rows}, indent=1, default=str))
    print(f"results: {path}")


if __name__ == "__main__":
    main()
