"""Benchmark (issue 28): one sweep of the network's exact multiplicity kernel (:mod:`inference.pdpnet.multiplicity`)
against the built-in ``seqlda_sweep`` (exact and CMGS) and the network's CMGS kernel, all from the same state: the
bench corpus of ``bench_pdp_perplexity.py`` (WEB chapters in sentences) after N iterations of seqlda.json under
``"sampler": "exact"`` in process, every document's b_i the network's b (then the built-in exact kernel makes the
network's draws). CPU seconds per sweep (``time.process_time``), the least of ``--repeat`` runs, alternated::

    python tests/bench/bench_pdp_exact_kernel.py [--iterations 100] [--topics 20] [--seed 3] [--repeat 3]
        [--only exact|cmgs]
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import bench_common  # noqa: F401  (first: puts the project on sys.path)
import numpy as np
from bench_pdp_pairs import model_of
from bench_pdp_partitions import common_arguments, web_sentences


def main() -> None:
    from drivers.models.seqlda.kernels import seqlda_sweep
    from inference.gibbs.local import run_local_tables
    from inference.gibbs.pdp import stirling_table
    from inference.pdpnet import cmgs_run
    from inference.pdpnet.sampler import rebuild_counts

    parser = argparse.ArgumentParser()
    common_arguments(parser)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["exact", "cmgs"], help="time only this sampler's network/built-in pair")
    args = parser.parse_args()
    train, _ = web_sentences()
    block = train.blocks[0][1]
    K = args.topics
    model, hyper = model_of("seqlda.json-exact", K, train.vocab_size)
    prepared = model.prepare_block(block)
    _, state, hyper, _, _ = run_local_tables(model, prepared, args.iterations, seed=args.seed, hyper=hyper)
    net = model._compiled(prepared, hyper)
    z0, s0 = state["z"].astype(np.int64), state["s"].copy()
    b = float(hyper["b_values"]["b_seg"])
    avals = np.array([hyper["a_values"][nm] for nm in net.a_names], np.float64)
    beta = float(hyper["beta"])
    V = train.vocab_size
    nwk0 = np.zeros((V, K), np.int32)
    np.add.at(nwk0, (net.words, z0), 1)
    nk0 = nwk0.sum(axis=0).astype(np.int64)
    nseg = len(prepared.seg_ptr) - 1
    t0 = np.zeros((nseg, K), np.int64)                  # the built-in's per-segment tables from the edges' s
    seg = net.spec.order.index("seg")
    for x in np.flatnonzero(net.family == seg):
        e = net.par_ptr[x]
        t0[net.key[x]] = s0[net.eoff[e]:net.eoff[e + 1]]
    n0 = np.zeros((nseg, K), np.int64)
    np.add.at(n0, (np.repeat(np.arange(nseg), np.diff(prepared.seg_ptr)), z0), 1)
    D = len(prepared.doc_ptr) - 1
    mcap = 1000
    tab = stirling_table(0.0).ensure(int(np.diff(prepared.seg_ptr).max()) + mcap + 2, mcap)
    spec = net.spec
    doc_tok = prepared.seg_ptr[prepared.doc_ptr]

    def network(sampler, seed):
        net.spec = dataclasses.replace(spec, sampler=sampler)
        z, s = z0.copy(), s0.copy()
        cnt = rebuild_counts(net, z, s, False)
        nwk, nk = nwk0.copy(), nk0.copy()
        cpu = time.process_time()
        cmgs_run.run_cmgs(net, doc_tok, z, s, cnt, avals, np.array([b]), nwk, nk, beta, None, seed, False)
        return time.process_time() - cpu

    def built_in(exact, seed):
        z, n, t = z0.astype(np.int32), n0.copy(), t0.copy()
        nwk, nk = nwk0.copy(), nk0.copy()
        cpu = time.process_time()
        seqlda_sweep(prepared.doc_ptr, prepared.seg_ptr, prepared.words, z, n, t, np.full(D, b), nwk, nk,
                     np.full(K, 0.1), beta, 0.0, tab.log, tab.ratio, tab.cratio, mcap, np.zeros((1, 1)), False, True,
                     exact, seed)
        return time.process_time() - cpu

    runs = {"network exact": lambda r: network("exact", 100 + r), "built-in exact": lambda r: built_in(True, 100 + r),
            "network cmgs": lambda r: network("cmgs", 100 + r), "built-in cmgs": lambda r: built_in(False, 100 + r)}
    if args.only:
        runs = {name: f for name, f in runs.items() if name.endswith(args.only)}
    for f in runs.values():                             # compile
        f(0)
    best = {name: min(f(r) for r in range(args.repeat)) for name, f in runs.items()}
    print(f"after {args.iterations} iterations (seed {args.seed}), b {b:.2f}, {len(z0)} tokens, {nseg} segments")
    for name, sec in best.items():
        print(f"{name:16s} {sec:.4f} s per sweep")
    net.spec = spec


if __name__ == "__main__":
    main()
