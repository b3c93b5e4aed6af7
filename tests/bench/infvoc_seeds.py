"""Five seeds of issue 30's targets read by the rule pre-registered in ``bench_infvoc.py`` (session 27, h30s).

Reads the printed output of ``bench_infvoc.py`` runs (the logs given; corpus from the first line, seed from the
run's folder) and adds the committed seeds 0 and 1 (``EARLIER``); prints per stream each seed's infvoc / fixvoc
pair of whole-stream NPMI and headline balanced accuracies (SVM, logistic; the changelogs' on the source-package
label), the mean paired difference, its standard error, the wins and the reading::

    .venv/bin/python tests/bench/infvoc_seeds.py out/bench/infvoc-*-h30s-s*/bench.log
"""
from __future__ import annotations

import json
import math
import re
import sys

MEASURES = ("npmi", "svm", "logistic")
# (infvoc, fixvoc) per seed: changelogs lead27-sN (2026-11-29), git-relnotes h30git, python-news-joined h30def
EARLIER = {
    "debian-changelogs": {0: {"npmi": (0.2469, 0.2578), "svm": (0.344, 0.358), "logistic": (0.349, 0.347)},
                          1: {"npmi": (0.2806, 0.2513), "svm": (0.376, 0.392), "logistic": (0.377, 0.357)}},
    "git-relnotes": {0: {"npmi": (0.027, 0.052), "svm": (0.380, 0.333), "logistic": (0.448, 0.410)},
                     1: {"npmi": (0.029, 0.052), "svm": (0.353, 0.361), "logistic": (0.404, 0.420)}},
    "python-news-joined": {0: {"npmi": (0.089, 0.099), "svm": (0.642, 0.645), "logistic": (0.598, 0.555)},
                           1: {"npmi": (0.087, 0.097), "svm": (0.634, 0.610), "logistic": (0.593, 0.542)}},
}


def read_run(text: str) -> tuple[str, int, dict] | None:
    """(corpus, seed, {measure: (infvoc, fixvoc)}) of one run's printed output; None if the run has not finished."""
    if not re.search(r"^accuracy \{", text, re.M):
        return None
    corpus = re.search(r"^(\S+): \d+ entries \(", text, re.M).group(1)
    seed = int(re.search(rf"infvoc-{re.escape(corpus)}-K\d+-tau[^-/]+-(\d+)", text).group(1))
    npmi = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(infvoc|fixvoc)\s+(-?\d+\.\d+)\s", text, re.M)}
    accuracy = json.loads(re.search(r"^accuracy (\{.*\})$", text, re.M).group(1))
    suffix = "-package" if corpus == "debian-changelogs" else ""
    pairs = {"npmi": (npmi["infvoc"], npmi["fixvoc"])}
    for name in ("svm", "logistic"):
        pairs[name] = tuple(accuracy[m + suffix][name + "_balanced"] for m in ("infvoc", "fixvoc"))
    return corpus, seed, pairs


def reading(runs: dict[int, dict]) -> dict:
    """The rule's reading over the seeds' (infvoc, fixvoc) pairs: mean difference, its standard error, wins."""
    out = {}
    for measure in MEASURES:
        diffs = [runs[s][measure][0] - runs[s][measure][1] for s in sorted(runs)]
        n = len(diffs)
        mean = sum(diffs) / n
        se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n) if n > 1 else float("nan")
        out[measure] = {"mean_difference": mean, "standard_error": se, "infvoc_wins": sum(d > 0 for d in diffs),
                        "fixvoc_wins": sum(d < 0 for d in diffs), "seeds": n}
    npmi = out["npmi"]
    if npmi["infvoc_wins"] >= 4 and npmi["mean_difference"] > 0:
        npmi["verdict"] = "holds"
    elif npmi["infvoc_wins"] < 4 and npmi["fixvoc_wins"] < 4:
        npmi["verdict"] = "level"
    else:
        npmi["verdict"] = "fails"
    for measure in ("svm", "logistic"):
        r = out[measure]
        r["verdict"] = "holds" if r["mean_difference"] >= -r["standard_error"] else "fails"
    return out


def main(paths: list[str]) -> None:
    streams = {corpus: dict(seeds) for corpus, seeds in EARLIER.items()}
    for path in paths:
        run = read_run(open(path, encoding="utf-8").read())
        if run is None:
            print(f"{path}: not finished, left out")
            continue
        corpus, seed, pairs = run
        streams.setdefault(corpus, {})[seed] = pairs
    for corpus, runs in streams.items():
        print(f"\n{corpus}: seeds {sorted(runs)}" + ("" if len(runs) >= 5 else " (partial)"))
        print(f"{'seed':>4} " + " ".join(f"{m + ' infvoc / fixvoc (diff)':>32}" for m in MEASURES))
        for seed in sorted(runs):
            print(f"{seed:>4} " + " ".join(f"{runs[seed][m][0]:>10.4f} / {runs[seed][m][1]:.4f} "
                                            f"({runs[seed][m][0] - runs[seed][m][1]:+.4f})" for m in MEASURES))
        for measure, r in reading(runs).items():
            print(f"  {measure}: mean difference {r['mean_difference']:+.4f} +- {r['standard_error']:.4f} (s.e.); "
                  f"infvoc wins {r['infvoc_wins']} of {r['seeds']}, fixvoc {r['fixvoc_wins']}: {r['verdict']}"
                  + ("" if r["seeds"] >= 5 else " (partial: the rule reads 5 seeds)"))


if __name__ == "__main__":
    main(sys.argv[1:])
