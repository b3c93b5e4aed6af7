"""CPU time per token of the left-to-right kernel (R = 20, resampling on and off) on 50 documents of a corpus
prepared with ``--ordered``, under a Gibbs LDA model trained on it (README: "Left-to-right evaluation"):

    python tests/bench/bench_left_to_right.py MODEL_DIR CORPUS_DIR
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from drivers.corpora.segmented import block_from_segments_table  # noqa: E402
from inference.left_to_right import LeftToRight, lda_scores  # noqa: E402


def main(model: str, corpus: str, documents: int = 50, particles: int = 20) -> None:
    phi_vk = np.ascontiguousarray(np.load(os.path.join(model, "topic_word.npy")).T)
    with open(os.path.join(model, "model.json")) as f:
        alpha = json.load(f)["hyper"]["alpha"]
    block = block_from_segments_table(pq.read_table(os.path.join(corpus, "ordered.parquet")))
    ptr = block.token_ptr()
    take = np.linspace(0, block.n_docs - 1, documents).astype(int)          # spread over the corpus
    docs = [block.words[ptr[d]:ptr[d + 1]] for d in take]
    sub_ptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    words, ids = np.concatenate(docs), block.doc_ids[take]
    lda_scores(ids[:1], sub_ptr[:2], words, alpha, phi_vk, LeftToRight(2, True, 0))      # compile
    for resample in (True, False):
        wall, cpu = time.perf_counter(), time.process_time()
        scores = lda_scores(ids, sub_ptr, words, alpha, phi_vk, LeftToRight(particles, resample, 0))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        n = scores[:, 2].sum()
        print(f"resample {'on ' if resample else 'off'}: {len(ids)} documents, {int(n)} tokens "
              f"(mean {n / len(ids):.0f}), CPU {cpu:.2f} s = {1e3 * cpu / n:.3f} ms per token (wall {wall:.2f} s), "
              f"{-scores[:, 0].sum() / (n * np.log(2)):.3f} bits per word")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
