"""Held-out quality of the inference modes on real text, one estimator for all.

``--source web`` (default): the shipped sample, the 1,189 WEB Bible chapters; ``--source pydoc``: the 271 pages
of the Python library reference (Debian's python3-doc, as bench_orderings.py reads it). Documents are split
90/10 by a hash of their id; the training part is prepared with the default
options and the test part with its vocabulary; every model is scored by document completion with the same
estimator (:func:`drivers.evaluation.score_topic_word`: theta from half of each test document, the other half
scored). Beside the tests, not in the default run::

    .venv/bin/python tests/bench/bench_heldout_sample.py --topics 20 [--source pydoc]
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import time

from bench_common import CACHE, REPO, bench_session  # noqa: E402  (first: puts the project on sys.path)

SOURCE = REPO / "sample_data" / "web_chapters.jsonl.gz"
RUNS = {
    "variational (50 EM iterations)": ["--model", "lda", "--iterations", "50", "--tol", "0"],
    "hybrid, mean weights (50)": ["--model", "lda", "--iterations", "50", "--tol", "0", "--inference", "hybrid"],
    "hybrid, digamma weights (50)": ["--model", "lda", "--iterations", "50", "--tol", "0", "--inference", "hybrid",
                                     "--hybrid-weights", "digamma"],
    "lda-gibbs (300 iterations)": ["--model", "lda-gibbs", "--iterations", "300"],
}


def documents(source: str) -> list[dict]:
    """``{"id", "text"}`` rows of a source."""
    if source == "web":
        return [json.loads(line) for line in gzip.open(SOURCE, "rt", encoding="utf-8")]
    from bench_orderings import python_docs_source

    rows = [json.loads(line) for line in gzip.open(python_docs_source(), "rt", encoding="utf-8")]
    return [{"id": r["id"], "text": "\n\n".join(r["segments"])} for r in rows]


def split_sample(spark, source: str = "web") -> tuple[str, str]:
    """The prepared training and test corpora (cached under out/bench/)."""
    from jobs.preparation.corpus import prepare_corpus

    root = CACHE / f"{source}-heldout"
    train_dir, test_dir = root / "train_corpus", root / "test_corpus"
    if not (test_dir / "corpus.json").exists():
        root.mkdir(parents=True, exist_ok=True)
        rows = documents(source)
        held = lambda r: int(hashlib.sha1(r["id"].encode()).hexdigest(), 16) % 10 == 0   # noqa: E731
        for name, keep in (("train", lambda r: not held(r)), ("test", held)):
            with open(root / f"{name}.jsonl", "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows if keep(r))
        prepare_corpus(spark, str(root / "train.jsonl"), str(train_dir), overwrite=True)
        prepare_corpus(spark, str(root / "test.jsonl"), str(test_dir), vocab=str(train_dir / "vocab.parquet"),
                       overwrite=True)
    return str(train_dir), str(test_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--source", choices=("web", "pydoc"), default="web")
    args = parser.parse_args()
    spark = bench_session("spark-topics held-out sample benchmark")
    from drivers.corpora.bow import load_corpus
    from drivers.evaluation import score_topic_word
    from drivers.model_store import load_model
    from jobs import train

    train_dir, test_dir = split_sample(spark, args.source)
    test = load_corpus(spark, test_dir)
    print(f"{'run':<32} {'perplexity':>10} {'train s':>8}")
    for label, flags in RUNS.items():
        out = CACHE / f"{args.source}-heldout" / "models" / label.split(" (")[0].replace(" ", "-").replace(",", "")
        started = time.time()
        train.train(spark, train.parse_request(["--corpus", train_dir, "--output", str(out), "--topics",
                                                str(args.topics), "--seed", str(args.seed), *flags]))
        seconds = time.time() - started
        model = load_model(str(out))
        score = score_topic_word(spark, test, model.topic_word(), model.alpha, seed=0)
        print(f"{label:<32} {score.perplexity:>10.1f} {seconds:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
