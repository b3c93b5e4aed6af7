"""CPU cost of Wallach's models next to lda-gibbs (README, "Cost of Wallach's models"): the engine's steps of one
synchronisation run in this process on one block (one partition, one core, no Spark), each timed by this process'
CPU clock: the sweep (``sweep_tables``), the partition's hyperparameter statistics (``local_hyper_update``,
``partition_stats``), the count tables (``table_counts`` and their sum) and the driver's hyperparameter step
(``update_hyper``, ``global_step``: Minka's fixed point for lda-gibbs, Gibbs EM's M-step for tlm, the slice
sampler and the cluster ids for cluster-lda and dp-mixture, the fixed point of bigram-lm's one counting pass).
Tokens per CPU second are tokens x iterations / CPU seconds of the whole iteration; the hyperparameter share is
(statistics + driver step) / iteration. The first ``--warm`` iterations (numba compiles) are not counted.

    python tests/bench/bench_wallach_cost.py CORPUS_DIR --topics 20 --iterations 20
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from drivers import registry  # noqa: E402
from drivers.corpora.segmented import block_from_segments_table  # noqa: E402
from inference.gibbs.counts import local_vocabulary  # noqa: E402
from inference.gibbs.tables import merge  # noqa: E402

MODELS = ("lda-gibbs", "tlm", "bigram-lm", "cluster-lda", "dp-mixture")


def summed(model, block, state, local) -> dict:
    counts = model.table_counts(block, state, local)
    return {t.name: merge(t, [counts[t.name]]) for t in model.count_tables()}


def measure(name: str, block, vocab_size: int, topics: int, iterations: int, warm: int, seed: int) -> dict:
    model = registry.model(name).model_class()(topics, vocab_size)
    block = model.prepare_block(block)
    hyper = model.initial_hyper()
    local = local_vocabulary(block.words)
    clock = time.process_time
    spent = {"sweep": 0.0, "stats": 0.0, "tables": 0.0, "hyper": 0.0}
    if not model.latent:        # bigram-lm: one counting pass, then the driver's fit
        for _ in range(warm + 1):
            began = clock()
            tables = summed(model, block, {}, local)
            counted = clock()
            model.global_step(tables, hyper, np.zeros(0), seed)
            spent = {"sweep": 0.0, "stats": 0.0, "tables": counted - began, "hyper": clock() - counted}
        return dict(spent, iterations=1)
    state = model.initial_state(block, hyper, seed)
    tables = summed(model, block, state, local)
    directive = None
    for it in range(1, warm + iterations + 1):
        t0 = clock()
        if directive is not None:
            model.apply_directive(block, state, directive)
        private = {k: v.copy() for k, v in tables.items()}
        derived = model.derive(tables)
        model.sweep_tables(block, state, hyper, private, derived, seed * 1000 + it)
        t1 = clock()
        model.local_hyper_update(block, state, hyper, seed * 1000 + it)
        stats = np.asarray(model.partition_stats(block, state, hyper, seed * 1000 + it), np.float64)
        if model.stats_by_partition:        # the engine lists the partitions' statistics for such a model
            stats = [stats]
        t2 = clock()
        tables = summed(model, block, state, local)
        t3 = clock()
        hyper = model.update_hyper(hyper, stats, block.n_docs, seed * 1000 + it)
        tables, hyper, directive = model.global_step(tables, hyper, stats, seed * 1000 + it)
        t4 = clock()
        if it > warm:
            for key, value in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                spent[key] += value
    out = dict(spent, iterations=iterations)
    if "clusters" in tables or "cluster_docs" in tables:
        out["clusters"] = (tables.get("clusters") or tables["cluster_docs"]).nnz
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", help="a corpus prepared with --ordered")
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args(argv)
    block = block_from_segments_table(pq.read_table(os.path.join(args.corpus, "ordered.parquet")))
    vocab_size = pq.read_table(os.path.join(args.corpus, "vocab.parquet")).num_rows
    print(f"{args.corpus}: {block.n_docs} documents, {block.n_tokens} tokens, V={vocab_size}; K={args.topics}, "
          f"{args.iterations} iterations after {args.warm}, one core, CPU seconds of this process")
    print(f"{'model':12} {'CPU s/iter':>10} {'tok/CPU-s':>10} {'x lda-gibbs':>11} {'sweep':>7} {'tables':>7} "
          f"{'hyper':>7}  notes")
    lda = None
    for name in args.models.split(","):
        r = measure(name, block, vocab_size, args.topics, args.iterations, args.warm, args.seed)
        total = r["sweep"] + r["stats"] + r["tables"] + r["hyper"]
        per_iter = total / r["iterations"]
        rate = block.n_tokens / per_iter
        lda = rate if name == "lda-gibbs" else lda
        note = "one counting pass and the fit, no sampling" if name == "bigram-lm" else ""
        if "clusters" in r:
            note = f"{r['clusters']} clusters at the end"
        print(f"{name:12} {per_iter:10.3f} {rate:10.3g} {lda / rate if lda else float('nan'):11.2f} "
              f"{r['sweep'] / total:7.1%} {r['tables'] / total:7.1%} {(r['stats'] + r['hyper']) / total:7.1%}  {note}",
              flush=True)
    print("x lda-gibbs: CPU per iteration relative to lda-gibbs; sweep, tables, hyper: shares of the iteration "
          "(hyper: the partition statistics and the driver's hyperparameter step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
