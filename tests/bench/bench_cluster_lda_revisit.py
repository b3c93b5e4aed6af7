"""Cost of cluster-lda's left-to-right revisits per particle against the document's length (README, "Chapter 5 on
real text"): token visits and CPU seconds of one particle (resampling on) on synthetic documents under T topics
and C trained clusters, the O(L^2) sweep against session 17's O(L^3) reference (every move scored by the direct
product), minimal path unless ``--maximal``:

    python tests/bench/bench_cluster_lda_revisit.py --lengths 250,500,1000,2000 --reference-up-to 1000
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from drivers.models.cluster_lda.left_to_right import cluster_lda_particles  # noqa: E402
from drivers.models.cluster_lda.revisit import CAPS  # noqa: E402


def synthetic(T: int, C: int, L: int, seed: int, V: int = 2000):
    """(scaled rows, frozen minimal-path levels) of an L-token document drawn from peaked topics."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, 0.05), T).T
    topics = rng.choice(T, L, p=rng.dirichlet(np.full(T, 0.3)))
    words = [rng.choice(V, p=phi[:, t] / phi[:, t].sum()) for t in topics]
    rows = phi[words]
    ctk = np.zeros((C + 1, T), np.int64)
    ctk[:C] = (rng.random((C, T)) < 0.5) * rng.integers(1, 40, (C, T))
    kt = (ctk[:C] > 0).sum(0).astype(np.int64)
    levels = (ctk, ctk.sum(1).astype(np.int64), np.append(rng.integers(5, 50, C), 0).astype(np.int64), kt,
              np.array([kt.sum()], np.int64))
    return np.ascontiguousarray(rows / rows.max(axis=1)[:, None]), levels


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", default="250,500,1000,2000")
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--clusters", type=int, default=5)
    p.add_argument("--reference-up-to", type=int, default=1000)
    p.add_argument("--maximal", action="store_true")
    args = p.parse_args(argv)
    print(f"{'L':>6} {'sweep':>9} {'visits':>12} {'visits/L^2':>10} {'CPU s':>8}  log prod p_n")
    for L in map(int, args.lengths.split(",")):
        scaled, levels = synthetic(args.topics, args.clusters, L, seed=1)
        for fast in (True, False):
            if not fast and L > args.reference_up_to:
                continue
            cluster_lda_particles(scaled[:3], *levels, 0.9, 2.0, 15.0, 100.0, args.maximal, True,
                                  np.array([0]), True, np.zeros(1, np.int64), CAPS, fast)      # compile
            work = np.zeros(1, np.int64)
            cpu = time.process_time()
            out = cluster_lda_particles(scaled, *levels, 0.9, 2.0, 15.0, 100.0, args.maximal, True, np.array([7]),
                                        True, work, CAPS, fast)
            cpu = time.process_time() - cpu
            print(f"{L:>6} {'O(L^2)' if fast else 'O(L^3)':>9} {work[0]:>12} {work[0] / L ** 2:>10.1f} {cpu:>8.3f}  "
                  f"{np.log(out).sum():.3f}", flush=True)


if __name__ == "__main__":
    main()
