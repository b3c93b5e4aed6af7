"""Benchmark (issue 28): pdp-network specs through the Gibbs engine's hooks in this process (no Spark), on the WEB
chapters in sentences of ``bench_pdp_perplexity.py`` (run that first: it prepares the corpus), two partitions,
K = 20, the specs' iterations interleaved so that the machine's load falls on all alike. CPU seconds per iteration
(``time.process_time``) of each hook: the partitions' sweeps (``sweep_tables``), their table counts
(``table_counts``) and the merge, ``derive``, ``partition_stats``, the driver's ``update_hyper`` + ``global_step``
(the word side's a and b steps), ``loglik``, and a sample's ``accumulate_sample`` (every 20th iteration)::

    python tests/bench/bench_pdp_hooks.py [--iterations 30] [--profile SPEC] lda burst-lda pyp-lda-2 pyp-lda-3

``--profile SPEC``: cProfile of that spec's hooks (the 25 costliest functions by own time) after the table.
"""
import argparse
import cProfile
import pstats
import time

import numpy as np

from bench_common import CACHE  # noqa: E402  (first: puts the project on sys.path)
from drivers.corpora.in_process import load_segmented_corpus
from drivers.models.pdp_network.model import PdpNetwork
from inference.gibbs.tables import merge

HOOKS = ("sweep", "counts", "derive", "stats", "hyper", "loglik", "sample")


class Run:
    def __init__(self, name, train, K):
        self.name, self.model = name, PdpNetwork(K, len(train.vocab))
        self.hyper = self.model.initial_hyper(network=name)
        self.model.bind_hyper(self.hyper)
        self.blocks = [self.model.prepare_block(b) for _, b in train.blocks]
        self.states = [self.model.initial_state(b, self.hyper, 3 + p) for p, b in enumerate(self.blocks)]
        self.locs = [np.unique(b.words, return_inverse=True) for b in self.blocks]
        self.n_docs = sum(b.n_docs for b in self.blocks)
        self.acc = dict.fromkeys(HOOKS, 0.0)
        self.tables = self._tables()

    def _tables(self):
        m = self.model
        parts = [m.table_counts(b, st, loc) for b, st, loc in zip(self.blocks, self.states, self.locs)]
        return {t.name: merge(t, [c[t.name] for c in parts]) for t in m.count_tables()}

    def iteration(self, it, sample):
        m, acc = self.model, self.acc
        t0 = time.process_time(); der = m.derive(self.tables); acc["derive"] += time.process_time() - t0
        stats = []
        for p, (b, st) in enumerate(zip(self.blocks, self.states)):
            own = {k: v.copy() for k, v in self.tables.items()}
            own_der = {k: np.array(v, copy=True) for k, v in der.items()}
            t0 = time.process_time(); m.sweep_tables(b, st, self.hyper, own, own_der, 100 * it + p)
            acc["sweep"] += time.process_time() - t0
            t0 = time.process_time(); stats.append(m.partition_stats(b, st, self.hyper, 7 * it + p))
            acc["stats"] += time.process_time() - t0
            if sample:
                t0 = time.process_time(); m.accumulate_sample(b, st, self.hyper, {"samples": 0})
                acc["sample"] += time.process_time() - t0
        t0 = time.process_time(); self.tables = self._tables(); acc["counts"] += time.process_time() - t0
        t0 = time.process_time()
        self.hyper = m.update_hyper(self.hyper, np.sum(stats, axis=0), self.n_docs, it)
        self.tables, self.hyper, _ = m.global_step(self.tables, self.hyper, np.sum(stats, axis=0), 11 * it)
        acc["hyper"] += time.process_time() - t0
        t0 = time.process_time(); self.loglik = m.loglik(self.tables, m.derive(self.tables), self.hyper)
        acc["loglik"] += time.process_time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--profile", default=None)
    args = ap.parse_args()
    train = load_segmented_corpus(str(CACHE / "web-chapters-sentences-holdout20"), 2)
    runs = [Run(s, train, 20) for s in args.specs]
    prof = cProfile.Profile()
    for it in range(args.iterations + 2):
        if it == 2:
            for r in runs:
                r.acc = dict.fromkeys(HOOKS, 0.0)
        for r in runs:
            on = r.name == args.profile and it >= 2
            if on:
                prof.enable()
            r.iteration(it, sample=(it % 20 == 0))
            if on:
                prof.disable()
    n = args.iterations
    print("CPU s per iteration (%d iterations, %d tokens)" % (n, sum(b.n_tokens for b in runs[0].blocks)))
    print("%-12s" % "spec" + "".join("%9s" % h for h in HOOKS) + "%9s  loglik" % "total")
    for r in runs:
        print("%-12s" % r.name + "".join("%9.4f" % (r.acc[h] / n) for h in HOOKS)
              + "%9.4f  %.6e" % (sum(r.acc.values()) / n, r.loglik), flush=True)
    if args.profile:
        st = pstats.Stats(prof).sort_stats("tottime")
        st.print_stats(25)
        st.print_callers(8)


if __name__ == "__main__":
    main()
