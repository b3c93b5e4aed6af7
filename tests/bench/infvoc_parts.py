"""NPMI of a bench run's final models per part of the stream (the base quarter, then each batch), over their 10
top words and over their 10 top words that the base part has (issue 30: do a model's topics forget the early
parts?). The parts as :mod:`bench_infvoc` cuts them (3 batches).

    .venv/bin/python tests/bench/infvoc_parts.py --corpus python-news-joined \\
        --run out/bench/infvoc-python-news-joined-K50-tau64-0-h30def --models inf-root fix-root inf-retrain fix-retrain
"""
from __future__ import annotations

import argparse
from collections import Counter

import bench_common  # noqa: F401  (first: puts the project on sys.path)
from bench_infvoc import document_sets, npmi
from infvoc_corpora import CORPORA


def main() -> None:
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.text import stopword_list
    from drivers.store import model_store

    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="python-news-joined")
    parser.add_argument("--run", required=True, help="a bench run's folder")
    parser.add_argument("--models", nargs="+", default=["inf-root", "fix-root"])
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--per-topic", action="store_true",
                        help="also each topic's NPMI over the stream: quantiles, and the least coherent topics' words "
                             "with their document frequencies")
    options = parser.parse_args()
    rows = CORPORA[options.corpus]()
    sets = document_sets(rows, set(stopword_list("english")))
    quarter = len(rows) // 4
    size = -(-(len(rows) - quarter) // options.batches)
    bounds = [(0, quarter)] + [(quarter + i * size, quarter + (i + 1) * size) for i in range(options.batches)]
    known = set().union(*sets[:quarter])
    for name in options.models:
        path = model_store.resolve(f"{options.run}/{name}")
        if name.startswith("inf"):
            longer = [[w for w, _, _ in t] for t in InfVocModel.load(path).top_words(60)]
        else:
            longer = [[w for w, _ in t] for t in model_store.load_model(path).top_words(60)]
        top = [t[:10] for t in longer]
        in_base = [[w for w in t if w in known][:10] for t in longer]
        print(f"{name}: NPMI whole {npmi(top, sets):.4f}; "
              f"per part {[round(npmi(top, sets[a:b]), 4) for a, b in bounds]}; "
              f"words the base has, per part {[round(npmi(in_base, sets[a:b]), 4) for a, b in bounds]}", flush=True)
        if options.per_topic:
            import numpy as np

            df = Counter(w for d in sets for w in d)
            per = np.array([npmi([t], sets) for t in top])
            quantiles = np.round(np.quantile(per, [0, .1, .25, .5, .75, 1]), 3)
            print(f"  per topic: quantiles 0/10/25/50/75/100% {quantiles}, "
                  f"{int((per < 0).sum())} topics below 0")
            for k in np.argsort(per, kind="stable")[:4]:
                print(f"    {per[k]:.3f} " + " ".join(f"{w}({df[w]})" for w in top[k]))


if __name__ == "__main__":
    main()
