"""Check (issue 28, no target): E[p-hat]/p of left-to-right's particles under shared Pitman-Yor topic vectors frozen
at their trained tables, on the networks and documents of tests/kernels/test_pdpnet_shared_left_to_right.py with
200,000 particles (the test's 80,000 bound the standard error by 0.6%; this one sees 0.3%). Not part of the test
run::

    python tests/bench/bench_shared_left_to_right.py [--particles 200000]

Prints per network, document and resampling the mean of p-hat_r / p(w | trained tables) and its standard error.
"""
from __future__ import annotations

import argparse

import numpy as np
from bench_common import REPO  # noqa: F401  (first: puts the project on sys.path)

from tests.kernels.test_pdpnet_shared_left_to_right import _network, _particles, _sequential_log_p

CASES = [("hdp-pyp", [0, 2, 1]), ("hdp-pyp", [0, 0, 0, 0, 1]), ("hdp-pyp", [1, 1, 2, 2]),
         ("two-levels", [1, 1, 2, 0]), ("two-parents", [2, 1, 2])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=200000)
    args = parser.parse_args()
    phi_kv = np.random.default_rng(5).dirichlet(np.full(3, 0.5), size=3)
    for name, words in CASES:
        net, cnt, shared = _network(name, words)
        exact = _sequential_log_p(net, cnt, phi_kv)
        for resample in (True, False):
            probs = _particles(net, cnt, shared, phi_kv, np.arange(args.particles) + 7, resample)
            w = np.exp(np.log(probs).sum(axis=1) - exact)
            print(f"{name:12s} {' '.join(map(str, words)):10s} resample={resample!s:5s} E[p-hat]/p = "
                  f"{w.mean():.4f} +- {w.std() / np.sqrt(len(w)):.4f}")


if __name__ == "__main__":
    main()
