"""Benchmark (issue 28, 3): ``stm`` against ``stm.json`` through the Gibbs engine's hooks in this process (no Spark),
on the WEB chapters in sentences of ``bench_pdp_perplexity.py`` (run that first: it prepares the corpus), two
partitions, K = 20, the two models' iterations interleaved so that the machine's load falls on both alike. CPU
seconds per iteration (``time.process_time``) of the sweeps, the tables' counts, the partition statistics and a
sample's proportions (every 20th iteration), and their ratio::

    python tests/bench/bench_pdp_stm_hooks.py [ITERATIONS]
"""
import sys
import time

import numpy as np

from bench_common import CACHE  # noqa: E402  (first: puts the project on sys.path)
from drivers.corpora.in_process import load_segmented_corpus
from drivers.models.pdp_network.model import PdpNetwork
from drivers.models.stm import STM
from inference.gibbs.tables import merge
C = str(CACHE / 'web-chapters-sentences-holdout20')
train = load_segmented_corpus(C, 2)
V, K = len(train.vocab), 20
ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
class Run:
    def __init__(self, name):
        self.name = name
        self.model = STM(K, V) if name == 'stm' else PdpNetwork(K, V)
        self.hyper = self.model.initial_hyper() if name == 'stm' else self.model.initial_hyper(network='stm')
        self.blocks = [self.model.prepare_block(b) for _, b in train.blocks]
        self.states = [self.model.initial_state(b, self.hyper, 3 + p) for p, b in enumerate(self.blocks)]
        self.locs = [np.unique(b.words, return_inverse=True) for b in self.blocks]
        self.acc = dict(sweep=0.0, counts=0.0, stats=0.0, sample=0.0)
    def iteration(self, it, sample):
        m, acc = self.model, self.acc
        t0 = time.process_time()
        parts = [m.table_counts(b, st, loc) for b, st, loc in zip(self.blocks, self.states, self.locs)]
        tabs = {t.name: merge(t, [c[t.name] for c in parts]) for t in m.count_tables()}
        acc['counts'] += time.process_time() - t0
        stats = []
        for p, (b, st) in enumerate(zip(self.blocks, self.states)):
            own = {k: np.array(v, copy=True) for k, v in tabs.items()}
            der = m.derive(own)
            t0 = time.process_time(); m.sweep_tables(b, st, self.hyper, own, der, 100 * it + p)
            acc['sweep'] += time.process_time() - t0
            t0 = time.process_time(); stats.append(m.partition_stats(b, st, self.hyper, 7 * it + p)); acc['stats'] += time.process_time() - t0
            if sample:
                t0 = time.process_time(); m.accumulate_sample(b, st, self.hyper, {'samples': 0}); acc['sample'] += time.process_time() - t0
        self.hyper = m.update_hyper(self.hyper, np.sum(stats, axis=0), 944, it)
runs = [Run('stm'), Run('stm.json')]
for it in range(ITERS + 2):
    if it == 2:
        for r in runs: r.acc = {k: 0.0 for k in r.acc}
    for r in runs:
        r.iteration(it, sample=(it % 20 == 0))
for r in runs:
    print(r.name, {k: round(v / ITERS, 4) for k, v in r.acc.items()}, 'total %.4f s/iter' % (sum(r.acc.values()) / ITERS), flush=True)
a, b = [sum(r.acc.values()) for r in runs]
print('ratio %.2f (sweeps only %.2f)' % (b / a, runs[1].acc['sweep'] / runs[0].acc['sweep']))
