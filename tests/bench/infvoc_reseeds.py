"""What ``--reseed-below`` re-seeds, and what the re-seeded topics become (issue 30, session 25): a bench run's log
(the engine's ``re-seeded N starved topics (topic, document): [...]`` lines) and its final infvoc model.

* **Churn**: re-seeds per reordering; of the re-seeds after the first reordering, how many hit a topic re-seeded at
  the reordering just before (a topic that starts starved again is re-seeded again, U minibatches later).
* **The seed's size**: a re-seeded topic starts with evidence sum_t (nu1 - 1) = (D/|S|) x the document's tokens
  ((7.6) with eps = 1, :func:`inference.infvoc.reseed.seeded_topic`), while a topic's steady evidence is about
  (D/|S|) x the tokens it is given per minibatch, on average |S| x (mean tokens) / K: a seed of a document of n
  tokens starts at about K n / (|S| x mean n) of the mean. Printed from the log's detail lines (the engine's
  ``re-seed topic k: evidence/mean a -> b``): the replaced topics' and the seeds' evidence over the mean, and the
  share of seeds that start below ``f`` (starved at birth).
* **The re-seeded topics at the end** (if the run finished): per topic, its re-seeds, the last one's minibatch, its
  evidence share, NPMI (whole stream) and top words.

    .venv/bin/python tests/bench/infvoc_reseeds.py --corpus debian-changelogs \\
        --run out/bench/infvoc-debian-changelogs-K20-tau1-0-h30cu --log /tmp/run.log
"""
from __future__ import annotations

import argparse
import ast
import re
from collections import Counter

import bench_common  # noqa: F401  (first: puts the project on sys.path)
import numpy as np
from bench_infvoc import document_sets, npmi
from infvoc_corpora import CORPORA

EVENT = re.compile(r"minibatch (\d+): re-seeded \d+ starved topics \(topic, document\): (\[.*\])")
DETAIL = re.compile(r"minibatch \d+: re-seed topic \d+: evidence/mean ([\d.]+) -> ([\d.]+), (\d+) tokens")


def events(log: str) -> list:
    """(minibatch, topic, doc id) of every re-seed in a run's log, in order (the base, then each refresh: the
    minibatch counter runs on across them)."""
    out = []
    for line in open(log, encoding="utf-8", errors="replace"):
        match = EVENT.search(line)
        if match:
            out += [(int(match.group(1)), int(k), str(d)) for k, d in ast.literal_eval(match.group(2))]
    return out


def churn(seeded: list) -> tuple[int, int, int]:
    """(reorderings with a re-seed, re-seeds, re-seeds of a topic that the previous re-seeding reordering also
    re-seeded)."""
    by_minibatch = {}
    for minibatch, topic, _ in seeded:
        by_minibatch.setdefault(minibatch, set()).add(topic)
    order = sorted(by_minibatch)
    again = sum(len(by_minibatch[b] & by_minibatch[a]) for a, b in zip(order, order[1:]))
    return len(order), len(seeded), again


def main() -> None:
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.text import stopword_list
    from drivers.store import model_store

    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=sorted(CORPORA), required=True)
    parser.add_argument("--run", required=True, help="a bench run's folder")
    parser.add_argument("--log", required=True, help="the bench run's printed log")
    parser.add_argument("--below", type=float, default=0.25, help="the run's --reseed-below")
    options = parser.parse_args()
    rows = CORPORA[options.corpus]()
    stop = set(stopword_list("english"))
    seeded = events(options.log)
    reorderings, count, again = churn(seeded)
    print(f"{count} re-seeds at {reorderings} reorderings; {again} of them hit a topic re-seeded at the previous "
          f"re-seeding reordering too; topics re-seeded: {len({k for _, k, _ in seeded})}")
    details = np.array([[float(x) for x in m.groups()] for m in map(DETAIL.search, open(options.log, errors="replace"))
                        if m])
    if details.size:
        print(f"evidence over the mean: replaced topics median {np.median(details[:, 0]):.3f}; seeds median "
              f"{np.median(details[:, 1]):.3f}, below {options.below}: {np.mean(details[:, 1] < options.below):.2f}; "
              f"the seeds' documents: median {np.median(details[:, 2]):.0f} tokens")
    packages = Counter(next((r["package"] for r in rows if r["id"] == d), "?") for _, _, d in seeded[-30:])
    print("the last 30 re-seeds' documents by package: " + ", ".join(f"{p} {n}" for p, n in packages.most_common(8)))
    try:
        model = InfVocModel.load(model_store.resolve(f"{options.run}/inf-root"))
    except Exception as exc:      # a run stopped before its refreshes ended: the log's part only
        print(f"no final model ({exc})")
        return
    evidence = np.array([float((ts.nu1 - 1.0).sum()) for ts in model.sets])
    everything = document_sets(rows, stop)
    per_topic = Counter(k for _, k, _ in seeded)
    last = {k: b for b, k, _ in seeded}
    print(f"{'topic':>5} {'re-seeds':>8} {'last at':>7} {'evidence share':>14} {'NPMI':>7}  top words")
    for k, words in enumerate(model.top_words(10)):
        top = [w for w, _, _ in words]
        print(f"{k:>5} {per_topic.get(k, 0):>8} {last.get(k, '-'):>7} {evidence[k] / evidence.sum():>14.4f} "
              f"{npmi([top], everything):>7.3f}  " + " ".join(w + ("+" if m else "") for w, _, m in words))


if __name__ == "__main__":
    main()
