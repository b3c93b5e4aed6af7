"""Ablations of LDA-Gibbs' quality against tomotopy, in one process without Spark (the engine's steps, simulated).

Runs ``lda-gibbs``'s kernels as the engine does (AD-LDA with P partitions: each partition sweeps a private copy of
the counts of the previous synchronisation, then the counts are summed and alpha updated) under variants of the
hyperparameter schedule, and tomotopy's ``LDAModel`` on the same tokens; every model is scored by the same
held-out estimator (:func:`inference.gibbs.heldout.heldout_loglik`: document completion, half of every test
document observed, the topics fixed). A tool for finding the cause of a quality gap, not a benchmark of speed::

    python tests/bench/ablate_gibbs.py --corpus out/bench/corpus-50000-h0.1-s0-df2-0.5-verses --iterations 300 \\
        --variants default,fixed,interval10,p1
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench_common import REPO  # noqa: E402,F401  (first: puts the project on sys.path)


def load_block(directory: str):
    import pyarrow.parquet as pq

    from drivers.corpora.segmented import block_from_docs_table
    return block_from_docs_table(pq.read_table(Path(directory) / "docs.parquet"))


def split_block(block, parts: int):
    """``parts`` contiguous blocks of (nearly) equal documents."""
    from inference.gibbs.model import SegmentedBlock
    bounds = np.linspace(0, block.n_docs, parts + 1).astype(int)
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        s0, s1 = block.doc_ptr[a], block.doc_ptr[b]
        t0, t1 = block.seg_ptr[s0], block.seg_ptr[s1]
        out.append(SegmentedBlock(block.doc_ids[a:b], block.doc_ptr[a:b + 1] - s0, block.seg_ptr[s0:s1 + 1] - t0,
                                  block.words[t0:t1]))
    return out


def run_ours(block, V: int, K: int, iterations: int, seed: int, partitions: int = 2, samples: int = 1,
             lag: int = 1, on_iteration=None, **hyper_args):
    """AD-LDA as the engine runs it; returns (topic_word K x V averaged over the samples, final hyper)."""
    from drivers.models.lda_gibbs.model import LdaGibbs
    from inference.gibbs.local import global_counts
    from inference.gibbs.model import DRIVER_PARTITION, task_seed

    model = LdaGibbs(K, V)
    hyper = model.initial_hyper(**hyper_args)
    parts = split_block(block, partitions)
    nwk = np.zeros((V, K), dtype=np.int32)
    nk = np.zeros(K, dtype=np.int64)
    states = [model.init_state(b, hyper, nwk, nk, task_seed(seed, 0, p)) for p, b in enumerate(parts)]
    burn_in = iterations - samples * lag
    acc = np.zeros((K, V))
    taken = 0
    for t in range(1, iterations + 1):
        stats = None
        for p, (b, st) in enumerate(zip(parts, states)):
            w, k = nwk.copy(), nk.copy()
            model.sweep(b, st, hyper, w, k, task_seed(seed, t, p))
            s = model.partition_stats(b, st, hyper, task_seed(seed, t, p, 2))
            stats = s if stats is None else stats + s
        z = np.concatenate([st["z"] for st in states])
        nwk, nk = global_counts(block, z, K, V)
        used = hyper
        hyper = model.update_hyper(hyper, stats, block.n_docs, task_seed(seed, t, DRIVER_PARTITION, 3))
        if t > burn_in and (t - burn_in) % lag == 0:
            acc += model.topic_word(nwk, nk, used)
            taken += 1
        if on_iteration is not None:
            on_iteration(t, model, nwk, nk, hyper)
    return acc / taken, hyper


def run_tomotopy(block, V: int, K: int, iterations: int, seed: int, workers: int = 1, **kwargs):
    import tomotopy as tp

    settings = {key: kwargs.pop(key) for key in ("optim_interval", "burn_in") if key in kwargs}
    model = tp.LDAModel(k=K, seed=seed, **kwargs)
    for key, value in settings.items():
        setattr(model, key, value)
    ptr = block.token_ptr()
    words = block.words.astype(str)
    for d in range(block.n_docs):
        model.add_doc(words[ptr[d]:ptr[d + 1]].tolist())
    model.train(0, workers=workers)
    model.train(iterations, workers=workers)
    topic_word = np.zeros((K, V))
    columns = np.array([int(w) for w in model.used_vocabs])
    for k in range(K):
        topic_word[k, columns] = model.get_topic_word_dist(k)
    return topic_word, {"alpha": np.asarray(model.alpha, dtype=float).tolist(), "beta": float(model.eta)}


def heldout_perplexity(test, topic_word, alpha, seed: int = 0, iterations: int = 30) -> float:
    from inference.gibbs.heldout import HeldoutSchedule, heldout_loglik, perplexity
    from drivers.models.lda_gibbs.model import LdaGibbs

    K, V = topic_word.shape
    model = LdaGibbs(K, V)
    phi = topic_word / topic_word.sum(axis=1, keepdims=True)
    total = np.zeros(3)
    for p, b in enumerate(split_block(test, 2)):   # as a 2-partition test corpus
        total += heldout_loglik(model, b, model.initial_hyper(alpha=alpha), np.ascontiguousarray(phi.T),
                                HeldoutSchedule.default(iterations, observed=0.5), seed, p)
    return perplexity(total[0], total[1])


VARIANTS = {
    # name: (kind, settings)
    "default": ("ours", {}),                                  # today's lda-gibbs: Minka step every cycle from 1
    "fixed": ("ours", {"optimize_alpha": False}),              # alpha = 0.1 fixed
    "burnin50": ("ours", {"alpha_burn_in": 50}),
    "p1": ("ours", {"partitions": 1}),                         # no AD-LDA staleness
    "avg5": ("ours", {"samples": 5, "lag": None}),             # the CLI's default estimate: 5 samples, lag N/10
    "p3": ("ours", {"partitions": 3}),                         # the default partitioning of 2-3M tokens
    "p3avg5": ("ours", {"partitions": 3, "samples": 5, "lag": None}),
    "tomotopy": ("tomotopy", {"alpha": 0.1, "eta": 0.01}),
    "tomotopy2": ("tomotopy", {"alpha": 0.1, "eta": 0.01, "workers": 2}),
    "tomotopy-fixed": ("tomotopy", {"alpha": 0.1, "eta": 0.01, "optim_interval": 0}),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a benchmark corpus root (train/ and test/)")
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", default="default,tomotopy")
    parser.add_argument("--hyper", action="append", default=[], metavar="NAME:KEY=JSON",
                        help="an extra variant of ours: NAME:key=json[,key=json]")
    args = parser.parse_args(argv)
    train, test = load_block(Path(args.corpus) / "train"), load_block(Path(args.corpus) / "test")
    V = json.loads((Path(args.corpus) / "train" / "corpus.json").read_text())["vocab_size"]
    variants = dict(VARIANTS)
    for item in args.hyper:
        name, spec = item.split(":", 1)
        variants[name] = ("ours", {k: json.loads(v) for k, v in (kv.split("=", 1) for kv in spec.split(","))})
    print(f"{args.corpus}: {train.n_docs} documents, {train.n_tokens} tokens ({train.n_tokens / train.n_docs:.1f} "
          f"per document), test {test.n_docs} documents; K={args.topics}, {args.iterations} iterations", flush=True)
    for name in args.variants.split(","):
        kind, settings = variants[name]
        settings = dict(settings)
        began = time.perf_counter()
        if kind == "ours":
            if settings.get("lag", 1) is None:
                settings["lag"] = max(1, args.iterations // 10)
            topic_word, hyper = run_ours(train, V, args.topics, args.iterations, args.seed, **settings)
        else:
            topic_word, hyper = run_tomotopy(train, V, args.topics, args.iterations, args.seed, **settings)
        seconds = time.perf_counter() - began
        ppl = heldout_perplexity(test, topic_word, hyper["alpha"], args.seed)
        print(f"{name:24} perplexity {ppl:9.1f}  alpha_sum {np.sum(hyper['alpha']):7.3f}  {seconds:6.1f} s",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
