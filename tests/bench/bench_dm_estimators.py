"""Benchmark: the seven Dirichlet-multinomial estimators of thesis ch. 2 on its synthetic grid (Table 2.1, §2.4.1).

Every type of data is a (K, D, N, alpha) of Table 2.1 (K items, D contexts, N observations per context,
concentration alpha); m is fixed per K, drawn from Dir(1.0 u). Each data set is drawn from the Dirichlet-multinomial
(:func:`inference.dm.synthetic.draw_counts`) and estimated by

    FP      Minka's fixed point (2.13), context by context (a digamma per nonzero count; ``estimate_contexts``)
    NR      Minka's Newton iteration (Alg. 2.1), context by context
    LOO     Minka's leave-one-out fixed point (2.28), context by context
    MP      MacKay & Peto (2.48), N_fk counted context by context
    Exact   the digamma recurrence (2.58, Alg. 2.2) on the histograms
    Apprx.  (2.61) on the histograms
    MP+H    MacKay & Peto with N_fk from the histograms (2.65)

from the same start (alpha = 1, m from the smoothed item totals), until every |Delta alpha m_k| < 1e-6, as the
thesis ran them. Reported per method: the time of the estimation itself (``fit``), the same plus building the
histograms from the D x K counts (``+hist``, the histogram methods), the speed-up over FP (geometric mean of the
per-data-set ratios), the types on which the method is faster than MP+H (the thesis: FP 30, LOO 95, Exact 134,
Apprx. 84 of 1,296), the KL divergence of the base measure in bits (2.66) and the relative error of alpha (2.67).
Everything runs on one core, in numba (the thesis: Java).

Not part of the default test run::

    python tests/bench/bench_dm_estimators.py --full --datasets 2   # all 1,296 types, 2 data sets each (4 minutes)
    python tests/bench/bench_dm_estimators.py                      # K, D, N in {5, 20, 100}, alpha in {0.5, 2, 10}
    pytest tests/bench/bench_dm_estimators.py -m benchmark         # a smaller grid

Results: the table on stdout and ``out/bench/dm-estimators-{grid}-n{datasets}-s{seed}.json``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import time

import numpy as np
import pytest

from bench_common import CACHE  # noqa: E402  (first: puts the project on sys.path)

from inference.dm import Contexts, CountHistograms, estimate, estimate_contexts  # noqa: E402
from inference.dm.synthetic import draw_base_measure, draw_counts  # noqa: E402

#: Table 2.1
GRID = {"K": (5, 10, 20, 50, 100, 200), "D": (50, 100, 200, 500, 1000, 2000), "N": (50, 100, 200, 500, 1000, 2000),
        "alpha": (0.5, 1.0, 2.0, 5.0, 10.0, 20.0)}
#: the default subset: every other value of each dimension
SUBSET = (0, 2, 4)
#: label -> (estimator, method)
METHODS = {"FP": ("contexts", "fixed-point"), "NR": ("contexts", "newton"), "LOO": ("contexts", "leave-one-out"),
           "MP": ("contexts", "mackay-peto"), "Exact": ("histograms", "exact"),
           "Apprx.": ("histograms", "approximate"), "MP+H": ("histograms", "mackay-peto")}
MAX_ITER = 20_000


def grid(full: bool, values=SUBSET):
    pick = (lambda v: v) if full else (lambda v: tuple(v[i] for i in values))
    return list(itertools.product(pick(GRID["K"]), pick(GRID["D"]), pick(GRID["N"]), pick(GRID["alpha"])))


def warm_up() -> None:
    """Compile every kernel before anything is timed."""
    counts = draw_counts(np.random.default_rng(0), np.full(4, 0.5), np.full(20, 10))
    for where, method in METHODS.values():
        run(where, method, counts)


def run(where: str, method: str, counts):
    """(estimate, seconds of the estimation, seconds of building its input); every method starts from the same
    alpha m, computed before the clock runs."""
    start = Contexts.of(counts).start
    t0 = time.perf_counter()
    data = Contexts.of(counts) if where == "contexts" else CountHistograms(counts.shape[1]).add_counts(counts)
    t1 = time.perf_counter()
    found = estimate_contexts(data, method, start, max_iter=MAX_ITER) if where == "contexts" else \
        estimate(data, method, start, max_iter=MAX_ITER)
    return found, time.perf_counter() - t1, t1 - t0


def run_benchmark(types, datasets: int, seed: int = 0) -> dict:
    warm_up()
    rng = np.random.default_rng(seed)
    base = {K: draw_base_measure(np.random.default_rng([seed, K]), K) for K in sorted({t[0] for t in types})}
    rows = []
    for K, D, N, alpha in types:
        m = base[K]
        for r in range(datasets):
            counts = draw_counts(rng, alpha * m, np.full(D, N))
            for label, (where, method) in METHODS.items():
                found, fit, build = run(where, method, counts)
                est_m = np.maximum(found.m, 1e-300)
                rows.append({"K": K, "D": D, "N": N, "alpha": alpha, "dataset": r, "method": label,
                             "fit_ms": 1e3 * fit, "hist_ms": 1e3 * build if where == "histograms" else 0.0,
                             "iterations": found.iterations, "converged": found.converged,
                             "kl_bits": float(np.sum(m * np.log2(m / est_m))),
                             "alpha_error": abs(found.alpha - alpha) / alpha})
    return {"types": len(types), "datasets": datasets, "seed": seed, "rows": rows,
            "load_average": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d")}


def summarise(report: dict) -> list[dict]:
    rows = report["rows"]
    by = {(r["K"], r["D"], r["N"], r["alpha"], r["dataset"], r["method"]): r for r in rows}
    keys = sorted({k[:5] for k in by})
    types = sorted({k[:4] for k in keys})
    out = []
    for label in METHODS:
        mine = [by[k + (label,)] for k in keys]
        fit = np.array([r["fit_ms"] for r in mine])
        total = fit + np.array([r["hist_ms"] for r in mine])
        fp = np.array([by[k + ("FP",)]["fit_ms"] for k in keys])
        mph = np.array([by[k + ("MP+H",)]["fit_ms"] + by[k + ("MP+H",)]["hist_ms"] for k in keys])
        faster = sum(np.mean([total[i] for i, k in enumerate(keys) if k[:4] == t]) <
                     np.mean([mph[i] for i, k in enumerate(keys) if k[:4] == t]) for t in types)
        out.append({"method": label, "fit_ms_median": float(np.median(fit)), "total_ms_median": float(np.median(total)),
                    "speedup_vs_fp": float(np.exp(np.mean(np.log(fp / fit)))),
                    "speedup_vs_fp_with_hist": float(np.exp(np.mean(np.log(fp / total)))),
                    "faster_than_mp_h": int(faster) if label != "MP+H" else None,
                    "kl_bits_mean": float(np.mean([r["kl_bits"] for r in mine])),
                    "kl_bits_median": float(np.median([r["kl_bits"] for r in mine])),
                    "alpha_error_mean": float(np.mean([r["alpha_error"] for r in mine])),
                    "alpha_error_median": float(np.median([r["alpha_error"] for r in mine])),
                    "not_converged": int(sum(not r["converged"] for r in mine))})
    return out


def speedups_by_contexts(report: dict, methods=("Exact", "MP", "MP+H")) -> dict:
    """D -> method -> (geometric mean of FP's time over the method's fit, the same with its histograms)."""
    by = {(r["K"], r["D"], r["N"], r["alpha"], r["dataset"], r["method"]): r for r in report["rows"]}
    keys = sorted({k[:5] for k in by})
    out = {}
    for D in sorted({k[1] for k in keys}):
        mine = [k for k in keys if k[1] == D]
        fp = np.array([by[k + ("FP",)]["fit_ms"] for k in mine])
        out[D] = {}
        for m in methods:
            fit = np.array([by[k + (m,)]["fit_ms"] for k in mine])
            total = fit + np.array([by[k + (m,)]["hist_ms"] for k in mine])
            out[D][m] = (float(np.exp(np.mean(np.log(fp / fit)))), float(np.exp(np.mean(np.log(fp / total)))))
    return out


def format_table(report: dict) -> str:
    summary = summarise(report)
    lines = [f"{report['types']} types of data x {report['datasets']} data sets (Table 2.1), one core, numba",
             f"{'method':7} {'fit ms':>9} {'+hist ms':>9} {'x FP':>7} {'x FP+h':>7} {'<MP+H':>6} "
             f"{'KL bits':>9} {'(median)':>9} {'alpha err':>9} {'(median)':>9} {'not conv':>8}"]
    for s in summary:
        faster = "-" if s["faster_than_mp_h"] is None else str(s["faster_than_mp_h"])
        lines.append(f"{s['method']:7} {s['fit_ms_median']:9.3f} {s['total_ms_median']:9.3f} "
                     f"{s['speedup_vs_fp']:7.1f} {s['speedup_vs_fp_with_hist']:7.1f} {faster:>6} "
                     f"{s['kl_bits_mean']:9.2e} {s['kl_bits_median']:9.2e} {s['alpha_error_mean']:9.3f} "
                     f"{s['alpha_error_median']:9.3f} {s['not_converged']:8d}")
    by_d = speedups_by_contexts(report)
    lines.append("x FP by the number of contexts D (fit / fit + histograms): " + "; ".join(
        f"D={D}: " + ", ".join(f"{m} {a:.1f}/{b:.1f}" for m, (a, b) in ratios.items()) for D, ratios in by_d.items()))
    lines.append("fit ms, +hist ms: medians over the data sets; x FP: geometric mean of FP's time over the method's "
                 "(fit, and fit + histograms); <MP+H: types on which the method is faster than MP+H (both with "
                 f"histograms); 1-minute load average at the end: {report['load_average']:.1f}")
    return "\n".join(lines)


@pytest.mark.benchmark
def test_benchmark():
    report = run_benchmark(grid(False, (0, 2)), datasets=1)
    print(format_table(report))
    summary = {s["method"]: s for s in summarise(report)}
    assert summary["Exact"]["speedup_vs_fp"] > 1 and summary["Exact"]["alpha_error_median"] < 0.5


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="all 1,296 types of Table 2.1 (default: a subset)")
    parser.add_argument("--values", default="0,2,4",
                        help="indices 0-5 of Table 2.1's values kept in every dimension (default 0,2,4)")
    parser.add_argument("--datasets", type=int, default=2, help="data sets per type (the thesis: 10 or 15)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    values = tuple(int(v) for v in args.values.split(","))
    report = run_benchmark(grid(args.full, values), args.datasets, args.seed)
    print(format_table(report))
    CACHE.mkdir(parents=True, exist_ok=True)
    name = "full" if args.full else "v" + "".join(map(str, values))
    path = CACHE / f"dm-estimators-{name}-n{args.datasets}-s{args.seed}.json"
    path.write_text(json.dumps(dict(report, summary=summarise(report),
                                    by_contexts=speedups_by_contexts(report)), indent=2))
    print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
