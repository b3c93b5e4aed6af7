"""Benchmark (issue 30, session 27): seconds of one infvoc online step as a Spark job against in this process
(``engine.run_minibatch``, ``in_process`` False / True; the limit ``engine.IN_PROCESS_TOKENS``), on the documents
and base model of a ``bench_infvoc.py`` run (its ``c0`` corpus, repeated under new ids up to the largest size, and
``inf-base``), each step from a fresh copy of the base, on ``local[2]``::

    python tests/bench/bench_infvoc_steps.py --run out/bench/infvoc-debian-changelogs-K20-tau1-0-h30e-s0 \
        --sizes 155,256,1024,2048,5000,10000,25000 --repeats 5
"""
from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from bench_common import bench_session  # noqa: E402  (first: puts the project on sys.path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="a bench_infvoc.py run's folder (c0/, inf-base/)")
    parser.add_argument("--sizes", default="155,256,1024,2048,5000,10000,25000", help="minibatch sizes")
    parser.add_argument("--repeats", type=int, default=5, help="steps timed at each size and engine")
    options = parser.parse_args()
    from drivers import storage
    from drivers.corpora.files import VOCAB
    from drivers.models.infvoc.commands import corpus_documents
    from drivers.models.infvoc.engine import run_minibatch
    from drivers.models.infvoc.model import InfVocModel

    sizes = [int(x) for x in options.sizes.split(",")]
    spark = bench_session("bench-infvoc-steps")
    sc = spark.sparkContext
    corpus = storage.join(options.run, "c0")
    docs = corpus_documents(spark, corpus, storage.read_vocab(storage.join(corpus, VOCAB)))
    copies = -(-max(sizes) // len(docs))
    docs = [(f"{d}-{i}", t) for i in range(copies) for d, t in docs]
    base = InfVocModel.load(storage.join(options.run, "inf-base"))
    print(f"{len(docs)} documents, {np.mean([len(t) for _, t in docs]):.1f} tokens each; "
          f"parallelism {sc.defaultParallelism}", flush=True)
    for in_process in (True, False):      # warm both (numba, the Python workers)
        run_minibatch(sc, copy.deepcopy(base), docs[:50], 2, nominal=50, in_process=in_process)
    print(f"{'documents':>9} {'tokens':>8} {'Spark job (s)':>14} {'in process (s)':>15}")
    for size in sizes:
        medians = []
        for in_process in (False, True):
            seconds = []
            for r in range(options.repeats):
                start = r * 997 % len(docs)
                chunk = (docs[start:] + docs[:start])[:size]
                model = copy.deepcopy(base)
                began = time.perf_counter()
                run_minibatch(sc, model, chunk, sc.defaultParallelism, nominal=size, in_process=in_process)
                seconds.append(time.perf_counter() - began)
            medians.append(float(np.median(seconds)))
        tokens = sum(len(t) for _, t in docs[:size])
        print(f"{size:>9} {tokens:>8} {medians[0]:>14.3f} {medians[1]:>15.3f}", flush=True)


if __name__ == "__main__":
    main()
