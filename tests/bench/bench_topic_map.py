"""The browser's intertopic map at scale: ``python tests/bench/bench_topic_map.py K V TOKENS_PER_TOPIC`` draws K
topics as a trained LDA's are (lambda = eta + counts: each topic TOKENS_PER_TOPIC tokens from a Zipf law over its
own permutation of V words, eta 0.01), then times ``inference.topic_map.topic_divergences`` (CPU seconds of this
process, the peak of numpy's allocations beyond phi by tracemalloc) and compares 200 random pairs with the exact
divergence (the full sum over V words)."""
from __future__ import annotations

import json
import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from inference import topic_map  # noqa: E402


def smoothed_topics(K: int, V: int, tokens: int, eta: float = 0.01, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, V + 1)
    zipf /= zipf.sum()
    phi = np.empty((K, V))
    for k in range(K):
        counts = np.zeros(V)
        counts[rng.permutation(V)] = rng.multinomial(tokens, zipf)
        phi[k] = counts + eta
        phi[k] /= phi[k].sum()
    return phi


def main(K: int, V: int, tokens: int) -> dict:
    phi = smoothed_topics(K, V, tokens)
    tracemalloc.start()
    cpu = time.process_time()
    divergences, below = topic_map.topic_divergences(phi)
    cpu = time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rng = np.random.default_rng(1)
    pairs = rng.choice(K, size=(200, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    exact = np.array([topic_map._js_terms(phi[i], phi[j]).sum() for i, j in pairs])
    got = divergences[pairs[:, 0], pairs[:, 1]]
    return {"K": K, "V": V, "tokens_per_topic": tokens, "cpu_seconds": round(cpu, 1),
            "peak_mb_beyond_phi": round(peak / 2**20, 1), "phi_mb": round(phi.nbytes / 2**20, 1),
            "stated_bound": below, "pairs": len(pairs), "max_error": float(np.max(exact - got)),
            "max_relative_error": float(np.max((exact - got) / exact)), "mean_divergence": float(exact.mean())}


if __name__ == "__main__":
    print(json.dumps(main(*map(int, sys.argv[1:4]))))
