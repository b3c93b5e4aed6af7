"""The browser at scale: ``python tests/bench/bench_browse.py K V D OUT`` writes a synthetic model directory (K
topics over V words, D documents of 80 distinct words; pyarrow, no Spark; read as an unmarked 0.1.0 model), its
training corpus, builds the site with ``browse`` and times it, then opens it in headless Chromium and times the
page: ready, ``#topic-<K-1>`` opened, the slider moved."""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))


def write_model(K: int, V: int, D: int, out: str) -> str:
    rng = np.random.default_rng(0)
    model, corpus = os.path.join(out, "model"), os.path.join(out, "corpus")
    os.makedirs(model)
    os.makedirs(os.path.join(corpus, "docs.parquet"))
    np.save(os.path.join(model, "lambda.npy"), rng.gamma(0.05, 1.0, size=(K, V)) + 0.01)
    pq.write_table(pa.table({"term": [f"word{i}" for i in range(V)], "id": np.arange(V, dtype=np.int32)}),
                   os.path.join(model, "vocab.parquet"))
    ids = [f"doc{i:06d}" for i in range(D)]
    theta = rng.dirichlet(np.full(K, 0.05), size=D)
    pq.write_table(pa.table({"doc_id": ids, "theta": pa.array(list(theta))}), os.path.join(model, "doc_topics.parquet"))
    words = [np.unique(rng.integers(0, V, 80)).astype(np.int32) for _ in range(D)]
    pq.write_table(pa.table({"doc_id": ids, "term_ids": pa.array(words),
                             "counts": pa.array([np.ones(len(w), np.int32) for w in words]),
                             "n_tokens": np.array([len(w) for w in words], np.int32),
                             "n_oov": np.zeros(D, np.int32)}), os.path.join(corpus, "docs.parquet", "part-0.parquet"))
    with open(os.path.join(corpus, "corpus.json"), "w") as f:
        json.dump({"documents": D}, f)
    with open(os.path.join(model, "model.json"), "w") as f:
        json.dump({"model": "lda", "topics": K, "vocab_size": V, "alpha": [0.05] * K, "eta": 0.01,
                   "data": {"corpus": corpus}, "code": {"package": "0.1.0"}}, f)
    return model


def main(K: int, V: int, D: int, out: str) -> None:
    from drivers.browse.build import build
    from headless_browser import Browser

    model = write_model(K, V, D, out)
    result = build(model, os.path.join(out, "site"))
    print(f"browse: K={K} V={V} D={D}: {result['seconds']} s, {result['files']} files, data/model.js "
          f"{os.path.getsize(os.path.join(out, 'site', 'data', 'model.js')) // 1024} KB")
    with Browser() as b:
        start = time.perf_counter()
        b.open("file://" + os.path.join(out, "site", "index.html") + f"#topic-{K - 1}")
        ready = time.perf_counter() - start
        b.wait_for(f"document.querySelector('ol.words[data-topic=\"{K - 1}\"]') !== null")
        opened = time.perf_counter() - start
        start = time.perf_counter()
        b.evaluate("var s = document.getElementById('lambda'); s.value = 0.2; s.dispatchEvent(new Event('input'))")
        slider = time.perf_counter() - start
        print(f"page: ready {ready:.2f} s, topic {K - 1} open at {opened:.2f} s, slider {slider:.3f} s, "
              f"errors {b.errors()}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
