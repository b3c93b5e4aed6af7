"""Benchmark: polylingual LDA against monolingual LDA on the same tokens (issue 3).

The aligned English/Spanish Bible (every chapter of the 66 books when ``mod2imp``
and the SWORD modules are installed, else the shipped sample) is prepared once;
then, on the same blocks, the same K, iterations and cores (``local[2]``):

* ``polylda``: per-language Dirichlets (the VocabLayout of the aligned corpus);
* ``lda-union``: the same documents and concatenated vocabulary as ONE Dirichlet per
  topic, i.e. monolingual LDA on the union of the tokens;
* ``lda-<lang>``: monolingual LDA on each language's sub-corpus alone.

Printed: seconds per iteration, tokens per second, and each ratio to ``polylda``.
Not part of the default test run::

    python tests/bench/bench_polylingual.py --topics 50 --iterations 20
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

from bench_common import CACHE, REPO  # noqa: E402  (first: puts the project on sys.path)

import pytest  # noqa: E402



def aligned_input() -> Path:
    """The full aligned Bible when the SWORD modules are installed, else the shipped sample."""
    full = CACHE / "bible_en_es_full.jsonl.gz"
    if full.exists():
        return full
    if shutil.which("mod2imp"):
        try:
            import make_aligned_sample as m
            by_lang = {lang: {d["id"]: d["text"] for d in m.chapters(m.dump_module(module))}
                       for lang, module in m.MODULES.items()}
            docs = [{"id": k, "lang": lang, "text": texts[k]} for lang, texts in by_lang.items() for k in texts
                    if all(k in by_lang[other] for other in by_lang)]
            CACHE.mkdir(parents=True, exist_ok=True)
            m.write_jsonl_gz(docs, full)
            return full
        except Exception as exc:  # a module missing: use the sample
            print(f"full aligned Bible unavailable ({exc}); using the sample")
    return REPO / "sample_data" / "bible_en_es.jsonl.gz"


def fit(spark, corpus, topics: int, iterations: int, layout, label: str) -> dict:
    from drivers.engines.variational.engine import VariationalEngine
    from drivers.engines.variational.settings import EMSettings
    from inference.mapper import EStepSettings
    from inference.priors import DirichletPrior, SymmetricPrior

    eta = 1.0 / topics
    prior = (DirichletPrior.per_language([eta] * len(layout.languages), layout) if layout is not None
             else SymmetricPrior(eta, corpus.vocab_size))
    settings = EMSettings(num_topics=topics, max_iterations=iterations, tol=0, estep=EStepSettings(), seed=0)
    engine = VariationalEngine(spark.sparkContext, settings, prior, str(CACHE / f"ckpt-{label}"), layout)
    started = time.perf_counter()
    result = engine.fit(corpus.blocks, corpus.num_partitions, corpus.vocab_size)
    seconds = time.perf_counter() - started
    tokens = float(corpus.meta["tokens"])
    return {"label": label, "seconds_per_iteration": seconds / iterations, "tokens": tokens,
            "tokens_per_second": tokens * iterations / seconds, "elbo": result.trace[-1].elbo}


def run(topics: int, iterations: int) -> list:
    from drivers.corpora.aligned import load_aligned_corpus
    from drivers.preparation.aligned import prepare_aligned
    from drivers.corpora.bow import load_corpus
    from jobs.spark import get_spark
    from inference.estep import compile_kernels

    spark = get_spark("bench-polylingual", "local[2]", [])
    source = aligned_input()
    corpus_dir = CACHE / f"aligned-{source.stem.split('.')[0]}"
    if not (corpus_dir / "corpus.json").exists():
        prepare_aligned(spark, str(source), str(corpus_dir), "lang", overwrite=True)
    compile_kernels()
    poly = load_aligned_corpus(spark, str(corpus_dir))
    rows = [fit(spark, poly, topics, iterations, poly.layout, "polylda"),
            fit(spark, poly, topics, iterations, None, "lda-union")]
    poly.blocks.unpersist()
    for lang in poly.layout.languages:
        mono = load_corpus(spark, str(corpus_dir / lang))
        rows.append(fit(spark, mono, topics, iterations, None, f"lda-{lang}"))
        mono.blocks.unpersist()
    base = rows[0]
    print(f"\ncorpus {source.name}: {poly.num_documents} tuples, {base['tokens']:.0f} tokens, "
          f"V = {poly.vocab_size} ({', '.join(f'{l}: {n}' for l, n in zip(poly.layout.languages, poly.layout.sizes()))}), "
          f"K = {topics}, {iterations} iterations, local[2]")
    print(f"{'model':>10} {'s/iter':>8} {'tokens/s':>10} {'tokens/s vs polylda':>20}")
    for r in rows:
        print(f"{r['label']:>10} {r['seconds_per_iteration']:8.3f} {r['tokens_per_second']:10.0f} "
              f"{r['tokens_per_second'] / base['tokens_per_second']:20.2f}")
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / f"polylingual-K{topics}-I{iterations}.json").write_text(json.dumps(rows, indent=2))
    return rows


@pytest.mark.benchmark
def test_polylingual_benchmark():
    rows = run(int(os.environ.get("BENCH_TOPICS", 20)), int(os.environ.get("BENCH_ITERATIONS", 5)))
    assert rows[0]["tokens_per_second"] > 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    run(args.topics, args.iterations)
