"""Held-out quality of the inference modes on real text against the peers, one estimator for all.

``--source web`` (default): the shipped sample, the 1,189 WEB Bible chapters; ``--source pydoc``: the 271 pages
of the Python library reference (Debian's python3-doc, as bench_orderings.py reads it); ``--source bench``: the
benchmark corpus of bench_lda.py (:mod:`bench_corpus`, ``--docs`` short documents, its own 90/10 split).
Documents are split 90/10 by a hash of their id; the training part is prepared with the default
options and the test part with its vocabulary; every model is scored by document completion with the same
estimator (:func:`drivers.evaluation.heldout.score_topic_word`: theta from half of each test document, the other half
scored). Peers (``--peers``): scikit-learn batch VB (50 iterations) and tomotopy's collapsed Gibbs LDA (2 workers,
300 iterations, then continued to 1000: a converged sampler). Seconds: the whole fit, reading the corpus
included for our jobs, not for the peers. Beside the tests, not in the default run::

    .venv/bin/python tests/bench/bench_heldout_sample.py --topics 20 [--source pydoc] [--peers sklearn tomotopy]
    .venv/bin/python tests/bench/bench_heldout_sample.py --source bench --docs 100000 --topics 50 \
        --peers sklearn tomotopy
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
    "variational (50 EM iterations)": ["--model", "lda", "--iterations", "50", "--tol", "0", "--inference",
                                       "variational"],
    "hybrid, mean weights (20)": ["--model", "lda", "--iterations", "20", "--tol", "0", "--inference", "hybrid"],
    "hybrid, mean weights (50)": ["--model", "lda", "--iterations", "50", "--tol", "0", "--inference", "hybrid"],
    "hybrid, digamma weights (50)": ["--model", "lda", "--iterations", "50", "--tol", "0", "--inference", "hybrid",
                                     "--hybrid-weights", "digamma"],
    "hybrid-meancounts alpha (20)": ["--model", "lda", "--iterations", "20", "--tol", "0", "--inference", "hybrid",
                                     "--hybrid-alpha-warmup", "-1"],
    "hybrid-meancounts alpha (50)": ["--model", "lda", "--iterations", "50", "--tol", "0", "--inference", "hybrid",
                                     "--hybrid-alpha-warmup", "-1"],
    "lda-gibbs (300 iterations)": ["--model", "lda-gibbs", "--iterations", "300"],
}


def documents(source: str) -> list[dict]:
    """``{"id", "text"}`` rows of a source."""
    if source == "web":
        return [json.loads(line) for line in gzip.open(SOURCE, "rt", encoding="utf-8")]
    from bench_orderings import python_docs_source

    rows = [json.loads(line) for line in gzip.open(python_docs_source(), "rt", encoding="utf-8")]
    return [{"id": r["id"], "text": "\n\n".join(r["segments"])} for r in rows]


def split_sample(spark, source: str = "web", docs: int = 100000) -> tuple[str, str]:
    """The prepared training and test corpora (cached under out/bench/)."""
    from drivers.preparation.corpus import prepare_corpus

    if source == "bench":
        from bench_corpus import ensure_corpus

        return ensure_corpus(spark, docs)
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


def peer_runs(train_dir: str, topics: int, seed: int, peers):
    """``(label, seconds, topic_word, alpha)`` of the peers, as they finish."""
    import pandas as pd

    vocab_size = len(pd.read_parquet(f"{train_dir}/vocab.parquet", columns=["id"]))
    if "sklearn" in peers:
        from bench_lda import fit_sklearn, sklearn_matrix

        fit = fit_sklearn(sklearn_matrix(train_dir, vocab_size), topics, 50, seed)
        yield "scikit-learn batch VB (50)", fit["fit_seconds"], fit["topic_word"], fit["alpha"]
    if "tomotopy" in peers:
        import numpy as np
        import tomotopy as tp
        from bench_gibbs import tomotopy_documents

        documents, _ = tomotopy_documents(train_dir)
        model = tp.LDAModel(k=topics, alpha=0.1, eta=0.01, seed=seed)
        for words in documents:
            model.add_doc(words)
        started, done = time.perf_counter(), 0
        for iterations in (300, 1000):
            model.train(iterations - done, workers=2)
            done = iterations
            topic_word = np.zeros((topics, vocab_size))
            columns = np.array([int(w) for w in model.used_vocabs])
            for k in range(topics):
                topic_word[k, columns] = model.get_topic_word_dist(k)
            yield (f"tomotopy Gibbs ({iterations})", time.perf_counter() - started, topic_word,
                   np.asarray(model.alpha, dtype=float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--source", choices=("web", "pydoc", "bench"), default="web")
    parser.add_argument("--docs", type=int, default=100000, help="--source bench: documents, train + test")
    parser.add_argument("--peers", nargs="*", default=[], choices=("sklearn", "tomotopy"))
    parser.add_argument("--runs", nargs="*", default=None, help="our runs to do (labels' first word), default all")
    args = parser.parse_args()
    spark = bench_session("spark-topics held-out sample benchmark")
    from drivers.corpora.bow import load_corpus
    from drivers.evaluation.heldout import score_topic_word
    from drivers.store.model_store import load_model
    from jobs import train

    train_dir, test_dir = split_sample(spark, args.source, args.docs)
    test = load_corpus(spark, test_dir)
    print(f"{'run':<32} {'perplexity':>10} {'train s':>8}", flush=True)
    runs = {label: flags for label, flags in RUNS.items()
            if args.runs is None or label.split(" ")[0].rstrip(",") in args.runs}
    for label, flags in runs.items():
        name = label.replace(" (", "-").rstrip(")").replace(" ", "-").replace(",", "")
        out = CACHE / f"{args.source}-heldout" / f"models-K{args.topics}" / name
        started = time.time()
        train.train(spark, train.parse_request(["--corpus", train_dir, "--output", str(out), "--topics",
                                                str(args.topics), "--seed", str(args.seed), *flags]))
        seconds = time.time() - started
        model = load_model(str(out))
        score = score_topic_word(spark, test, model.topic_word(), model.alpha, seed=0)
        print(f"{label:<32} {score.perplexity:>10.1f} {seconds:>8.1f}", flush=True)
    for label, seconds, topic_word, alpha in peer_runs(train_dir, args.topics, args.seed, args.peers):
        score = score_topic_word(spark, test, topic_word, alpha, seed=0)
        print(f"{label:<32} {score.perplexity:>10.1f} {seconds:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
