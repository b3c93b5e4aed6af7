"""Benchmark (issue 28, no target): a word side indexed by [topic, column:testament] (differential topic models:
phi[topic, testament] PYP over phi0[topic] PYP over the uniform) against pyp-lda-2.json (phi[topic] PYP over a
corpus-level PYP over the uniform) and lda-gibbs, on the World English Bible's chapters with each chapter's
testament (OT/NT, from its book) kept as a column; held-out perplexity by ``evaluate``'s default estimator
(document completion), same K, iterations, seed, alpha 0.1 fixed. Not part of the test run::

    python tests/bench/bench_pdp_dtm.py --topics 20 --iterations 100 [--seed 2]

Results: a table on stdout and ``out/bench/pdp-dtm-K{K}-I{iterations}-S{seed}.json`` (runs already there are
kept).
"""
from __future__ import annotations

import argparse
import gzip
import json

from bench_common import CACHE, REPO, bench_session  # noqa: E402  (first: puts the project on sys.path)

NT = {"Matt", "Mark", "Luke", "John", "Acts", "Rom", "1Cor", "2Cor", "Gal", "Eph", "Phil", "Col", "1Thess", "2Thess",
      "1Tim", "2Tim", "Titus", "Phlm", "Heb", "Jas", "1Pet", "2Pet", "1John", "2John", "3John", "Jude", "Rev"}
DTM = {"name": "dtm-testament",
       "nodes": {"theta": {"index": ["document"], "over": "topic", "dirichlet": 0.1},
                 "base": {"index": ["corpus"], "over": "word", "uniform": True},
                 "phi0": {"index": ["topic"], "over": "word", "parents": [{"node": "base", "index": ["corpus"]}],
                          "pyp": {"a": {"value": 0.5, "sample": True}, "b": {"value": 10.0, "sample": True}}},
                 "phi": {"index": ["topic", "column:testament"], "over": "word",
                         "parents": [{"node": "phi0", "index": ["topic"]}],
                         "pyp": {"a": {"value": 0.5, "sample": True}, "b": {"value": 10.0, "sample": True}}}},
       "topic": {"node": "theta", "index": ["document"]},
       "word": {"node": "phi", "index": ["topic", "column:testament"]}}


def corpus(spark) -> tuple[str, str]:
    from drivers.preparation.heldout_corpus import prepare_with_holdout

    out = CACHE / "web-chapters-testament-holdout20"
    if not (out / "corpus.json").exists():
        rows = CACHE / "web-chapters-testament.jsonl"
        with gzip.open(REPO / "sample_data" / "web_chapters.jsonl.gz", "rt") as src, open(rows, "w") as dst:
            for line in src:
                row = json.loads(line)
                row["testament"] = "NT" if row["id"].rsplit(".", 1)[0] in NT else "OT"
                dst.write(json.dumps(row) + "\n")
        prepare_with_holdout(spark, str(rows), str(out), 0.2, keep_columns=("testament",), overwrite=True)
    return str(out), str(out / "heldout")


def main() -> None:
    from bench_pdp_perplexity import RUNS, run_one

    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    spark = bench_session("bench pdp-network dtm")
    train_dir, test_dir = corpus(spark)
    stem = f"pdp-dtm-K{args.topics}-I{args.iterations}-S{args.seed}"
    root, result_file = CACHE / stem, CACHE / f"{stem}.json"
    root.mkdir(parents=True, exist_ok=True)
    (root / "spec-dtm.json").write_text(json.dumps(DTM))
    RUNS["dtm.json"] = ("pdp-network", ("--network", str(root / "spec-dtm.json")))
    rows = json.loads(result_file.read_text()) if result_file.exists() else {}
    for name in ("lda-gibbs", "pyp-lda-2.json", "dtm.json"):
        if name in rows:        # kept from an earlier run of this file
            continue
        rows[name] = run_one(spark, name, train_dir, test_dir, args.topics, args.iterations, args.seed, root)
        print(json.dumps(rows[name]), flush=True)
        result_file.write_text(json.dumps(rows, indent=2))
    base = rows["lda-gibbs"]["perplexity"]
    for name, r in rows.items():
        print(f"{name:16s} {r['perplexity']:10.1f} {r['train_cpu_seconds']:8.1f}  {r['perplexity'] / base - 1:+.1%}  "
              f"{json.dumps(r['hyper'])}")


if __name__ == "__main__":
    main()
