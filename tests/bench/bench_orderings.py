"""Benchmark: the thesis' orderings of held-out perplexity on real segmented text (issue 4).

On the 1,189 chapters of the World English Bible (``sample_data/web_chapters.jsonl.gz``, one verse per line),
every chapter is cut into segments of ``--verses-per-segment`` consecutive verses (a list column, prepared
with ``prepare --segments segments``; ``--verses-per-segment 0`` uses ``prepare --segments sentence``
instead). With ``--unit book`` the documents are the 66 books instead (chapters grouped by book in canonical
order, verses in order) and the segments are runs of N consecutive verses through the book, across chapter
boundaries (``--verses-per-segment 0``: whole chapters); the book corpus reuses the chapter corpus'
vocabulary (``prepare --vocab``), so both hold the same tokens and only the grouping differs (a vocabulary
pruned over 66 books, ``max_df`` 0.5, would drop every word used in more than 33 of them). The corpus is
prepared once and cached under ``out/bench/``. Then, with the same K, seed,
iterations, sample schedule and the same 20% held-out documents (hash of the id), it trains

    LDA_D        lda-gibbs                    (documents)
    LDA_P        lda-gibbs --segment-level    (segments as documents)
    STM          stm
    SeqLDA       seqlda                       (original segment order)
    SeqLDA-perm  seqlda --permute-segments S  (every document's segments randomly permuted, train and test:
                                               the thesis' PTrTe)
    AdaTM        adatm

and scores each by the same held-out estimator (``drivers.evaluation.heldout.score_heldout``, thesis eq 5.10: the
model's own sampler on each test document with the topics fixed; what ``spark-topics evaluate`` reports).
It prints model, held-out perplexity, seconds and training tokens/s, and whether each ordering holds:
STM < LDA_D, SeqLDA < SeqLDA-perm, AdaTM <= STM. Same settings for every model: nothing is tuned per model
(``--hyper MODEL:KEY=JSON`` sets a hyperparameter of every run of one model). With several K
(``--topics 10,20,30``) every ordering is also judged as in the thesis (Tables 5.4, 7.3): the per-K
perplexities paired, one-tail paired t-tests both ways.

Not part of the default test run::

    python tests/bench/bench_orderings.py --topics 20 --iterations 200
    python tests/bench/bench_orderings.py --unit book --verses-per-segment 5 --topics 20 --iterations 150
    python tests/bench/bench_orderings.py --unit book --verses-per-segment 5 --topics 10,20,30,40,50 --iterations 150
    pytest tests/bench_orderings.py -m benchmark      # reduced size

Results: the table on stdout and ``out/bench/orderings-v{verses}-K{topics}-I{iterations}-s{seed}.json``
(``orderings-book-v...`` with ``--unit book``).
"""
from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import sys
import time
from pathlib import Path

import pytest

from bench_common import CACHE, CORES, REPO  # noqa: E402,F401  (first: puts the project on sys.path)


log = logging.getLogger("spark_topics.bench")
SOURCE = REPO / "sample_data" / "web_chapters.jsonl.gz"

#: label, model, extra train flags ("{permute}" is replaced by the permutation seed)
RUNS = [
    ("LDA_D", "lda-gibbs", ()),
    ("LDA_P", "lda-gibbs", ("--segment-level",)),
    ("STM", "stm", ()),
    ("SeqLDA", "seqlda", ()),
    ("SeqLDA-perm", "seqlda", ("--permute-segments", "{permute}")),
    ("AdaTM", "adatm", ()),
]
#: (better, worse, strict): the thesis' orderings of held-out perplexity
ORDERINGS = [("STM", "LDA_D", True), ("SeqLDA", "SeqLDA-perm", True), ("AdaTM", "STM", False)]


def segmented_corpus(spark, verses_per_segment: int) -> str:
    """The WEB chapters cut into segments of N verses (N = 0: sentences), prepared once under out/bench/."""
    from drivers.preparation.corpus import prepare_corpus

    if verses_per_segment <= 0:
        out = CACHE / "web-chapters-sentences"
        if not (out / "corpus.json").exists():
            prepare_corpus(spark, str(SOURCE), str(out), segments="sentence", overwrite=True)
        return str(out)
    out = CACHE / f"web-chapters-{verses_per_segment}verses"
    if not (out / "corpus.json").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        grouped = CACHE / f"web-chapters-{verses_per_segment}verses.jsonl.gz"
        with gzip.open(SOURCE, "rt", encoding="utf-8") as src, gzip.open(grouped, "wt", encoding="utf-8") as dst:
            for line in src:
                row = json.loads(line)
                verses = [v for v in row["text"].split("\n") if v.strip()]
                segments = ["\n".join(verses[i:i + verses_per_segment])
                            for i in range(0, len(verses), verses_per_segment)]
                dst.write(json.dumps({"id": row["id"], "segments": segments}, ensure_ascii=False) + "\n")
        prepare_corpus(spark, str(grouped), str(out), segments="segments", overwrite=True)
    return str(out)


def book_corpus(spark, verses_per_segment: int) -> str:
    """The WEB books as documents: chapters grouped by book (ids ``Book.chapter``) in chapter order, cut into
    segments of N consecutive verses running across chapter boundaries (N = 0: one segment per chapter);
    prepared once under out/bench/ with the vocabulary of the chapter corpus (the same tokens)."""
    from drivers.preparation.corpus import prepare_corpus

    name = "chapters" if verses_per_segment <= 0 else f"{verses_per_segment}verses"
    out = CACHE / f"web-books-{name}"
    if not (out / "corpus.json").exists():
        vocab = segmented_corpus(spark, 3)   # any chapter-level corpus: the vocabulary is the same
        CACHE.mkdir(parents=True, exist_ok=True)
        books: dict[str, list] = {}          # book -> [(chapter, verses)], books in first-seen order
        with gzip.open(SOURCE, "rt", encoding="utf-8") as src:
            for line in src:
                row = json.loads(line)
                book, chapter = row["id"].rsplit(".", 1)
                books.setdefault(book, []).append(
                    (int(chapter), [v for v in row["text"].split("\n") if v.strip()]))
        grouped = CACHE / f"web-books-{name}.jsonl.gz"
        with gzip.open(grouped, "wt", encoding="utf-8") as dst:
            for book, chapters in books.items():
                chapters.sort(key=lambda c: c[0])
                if verses_per_segment <= 0:
                    segments = ["\n".join(verses) for _, verses in chapters]
                else:
                    verses = [v for _, vs in chapters for v in vs]
                    segments = ["\n".join(verses[i:i + verses_per_segment])
                                for i in range(0, len(verses), verses_per_segment)]
                dst.write(json.dumps({"id": book, "segments": segments}, ensure_ascii=False) + "\n")
        prepare_corpus(spark, str(grouped), str(out), segments="segments", vocab=vocab, overwrite=True)
    return str(out)


PYDOC = "/usr/share/doc/python3*/html/library/*.html"


def python_docs_source() -> str:
    """The Python library reference (Debian's ``python3-doc``, PSF licence) as documents with segments: one
    document per page with at least 10 paragraphs, its ``<p>`` paragraphs of 5 words or more in page order
    (code, ``pre`` and inline ``code`` left out). Technical prose in long documents of many short paragraphs:
    the nearest freely available relative of the thesis' patents. Written once to out/bench/."""
    import glob
    from pydoc_pages import Paragraphs

    out = CACHE / "python-library.jsonl.gz"
    if out.exists():
        return str(out)
    pages = sorted({Path(p).stem: Path(p).resolve() for p in sorted(glob.glob(PYDOC))}.values())  # symlinked dirs
    if not pages:
        raise SystemExit(f"no {PYDOC}: install Debian's python3-doc (apt-get install python3-doc)")

    CACHE.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as dst:
        for page in pages:
            parser = Paragraphs()
            parser.feed(Path(page).read_text(encoding="utf-8"))
            found = [p for p in parser.found if len(p.split()) >= 5]
            if len(found) >= 10:
                dst.write(json.dumps({"id": Path(page).stem, "segments": found}) + "\n")
    return str(out)


def source_corpus(spark, source: str) -> str:
    """Any JSON-lines file of documents with an ``id`` and a ``segments`` list (in order), prepared once under
    out/bench/ with the default vocabulary pruning."""
    from drivers.preparation.corpus import prepare_corpus

    name = Path(source).name.split(".")[0]
    out = CACHE / f"source-{name}"
    if not (out / "corpus.json").exists():
        prepare_corpus(spark, str(source), str(out), segments="segments", overwrite=True)
    return str(out)


def segment_stats(spark, corpus: str) -> dict:
    """Segments per document and tokens per segment (min, median, mean, max) of a segmented corpus."""
    import numpy as np

    rows = spark.read.parquet(str(Path(corpus) / "segments.parquet")).select("segments").collect()
    per_doc = np.array([len(r["segments"]) for r in rows])
    per_seg = np.array([len(s) for r in rows for s in r["segments"]])
    summary = lambda a: {"min": int(a.min()), "median": float(np.median(a)), "mean": float(a.mean()),
                         "max": int(a.max())}
    return {"segments_per_document": summary(per_doc), "tokens_per_segment": summary(per_seg)}


def train_one(spark, corpus: str, label: str, model: str, extra, topics: int, iterations: int, seed: int,
              permute: int, heldout_iterations: int, out: Path, hyper=(), heldout_observed=0.5,
              reuse: bool = False) -> dict:
    """Train one model (``hyper``: ``--hyper KEY=JSON`` values for it) and score its held-out split; with
    ``reuse`` a model already trained in ``out`` is only scored again (e.g. with another held-out protocol)."""
    from conftest import train_args
    from drivers import registry
    from drivers.families.gibbs import family as gibbs
    from jobs import train

    samples, lag = min(5, max(1, iterations // 4)), max(1, iterations // 20)
    extra = [permute if e == "{permute}" else e for e in extra]
    extra += [flag for item in hyper for flag in ("--hyper", item)]
    args = train_args(corpus, out / label, "--model", model, "--topics", topics, "--iterations", iterations,
                      "--seed", seed, "--samples", samples, "--lag", lag, "--burn-in", iterations - samples * lag,
                      "--checkpoint-every", iterations, "--heldout-fraction", 0.2,
                      "--heldout-iterations", heldout_iterations,
                      "--heldout-observed", "all" if heldout_observed is None else heldout_observed, *extra)
    started = time.perf_counter()
    if reuse and (out / label / "model.json").exists():
        saved, model_object = gibbs.open_trained(str(out / label), registry)
        meta = saved.meta
        meta["heldout"] = gibbs.evaluate_split(spark, registry.of_meta(meta), model_object, meta["hyper"],
                                               saved.lambda_, args, args.engine)
        wall = float(meta.get("train_seconds", 0.0))
    else:
        meta = train.train(spark, args)
        wall = time.perf_counter() - started
    trace = meta["trace"]
    sampling = sum(r["seconds"] for r in trace)
    tokens = meta["data"]["tokens"]
    return {"label": label, "model": model, "flags": [str(e) for e in extra], "hyper": meta["hyper"],
            "perplexity": meta["heldout"]["perplexity"], "heldout_documents": meta["heldout"]["documents"],
            "heldout_tokens": meta["heldout"]["tokens"], "seconds": wall, "sampling_seconds": sampling,
            "train_tokens": tokens, "train_documents": meta["data"]["documents"],
            "train_segments": meta["data"]["segments"],
            "tokens_per_second": tokens * len(trace) / sampling if sampling else None,
            "loglik_per_token": trace[-1]["loglik_per_token"], "out": str(out / label)}


def run_benchmark(spark, topics: int = 20, iterations: int = 200, seed: int = 0, permute: int = 1,
                  verses_per_segment: int = 3, heldout_iterations: int = 50, labels=None,
                  unit: str = "chapter", hyper: dict | None = None, source: str | None = None,
                  heldout_observed: float | None = 0.5, reuse: bool = False) -> dict:
    """One K: every run of RUNS (or of ``labels``) on the same corpus, split and schedule; ``hyper`` maps a
    model name to its ``--hyper KEY=JSON`` values (the same for every run of that model)."""
    hyper = hyper or {}
    if source:
        corpus, unit, verses_per_segment = source_corpus(spark, source), "source", 0
    elif unit == "book":
        corpus = book_corpus(spark, verses_per_segment)
    else:
        corpus = segmented_corpus(spark, verses_per_segment)
    stats = segment_stats(spark, corpus)
    out = CACHE / f"orderings-run-{run_tag(unit, corpus, verses_per_segment, topics, iterations, seed, hyper)}"
    rows = []
    for label, model, extra in RUNS:
        if labels and label not in labels:
            continue
        log.info("=== %s", label)
        rows.append(train_one(spark, corpus, label, model, extra, topics, iterations, seed, permute,
                              heldout_iterations, out, hyper.get(model, ()), heldout_observed, reuse))
    by = {r["label"]: r["perplexity"] for r in rows}
    orderings = [{"better": a, "worse": b, "strict": strict,
                  "holds": (by[a] < by[b] if strict else by[a] <= by[b]) if a in by and b in by else None}
                 for a, b, strict in ORDERINGS]
    corpus_meta = json.loads((Path(corpus) / "corpus.json").read_text())
    return {"corpus": corpus, "unit": unit, "verses_per_segment": verses_per_segment, **stats,
            "documents": corpus_meta["documents"],
            "segments": corpus_meta["segmentation"]["segments"], "tokens": corpus_meta["tokens"],
            "vocab_size": corpus_meta["vocab_size"], "topics": topics, "iterations": iterations, "seed": seed,
            "permute_seed": permute, "heldout_fraction": 0.2, "heldout_iterations": heldout_iterations,
            "heldout_observed": heldout_observed,
            "cores": CORES, "rows": rows, "orderings": orderings, "load_average": os.getloadavg()[0],
            "date": time.strftime("%Y-%m-%d"), "hyper": hyper}


def corpus_tag(unit: str, corpus: str) -> str:
    """The corpus part of output names: "" (chapters), "book-", or "<corpus directory>-" (--source)."""
    return {"book": "book-", "source": f"{Path(corpus).name}-"}.get(unit, "")


def run_tag(unit: str, corpus: str, verses: int, topics, iterations: int, seed: int, hyper: dict,
            heldout_iterations: int = 50, heldout_observed: float | None = 0.5) -> str:
    """What names every output of a run: ``book-v5-K20-I150-s0-adatm.lambda_t0.1-H200-Oall`` (corpus,
    segments, topics, iterations, seed, ``--hyper`` overrides, held-out sweeps and observed fraction when not the
    defaults 50 and 0.5; ``Oall``: the same-words estimator)."""
    overrides = "".join(f"-{m}.{v}" for m, vs in sorted(hyper.items()) for v in vs)
    overrides = overrides.replace("=", "").replace('"', "")
    held = f"-H{heldout_iterations}" if heldout_iterations != 50 else ""
    if heldout_observed != 0.5:
        held += "-Oall" if heldout_observed is None else f"-O{heldout_observed:g}"
    return f"{corpus_tag(unit, corpus)}v{verses}-K{topics}-I{iterations}-s{seed}{overrides}{held}"


def paired_tests(reports: list) -> list:
    """The thesis' test of an ordering over several K (Tables 5.4, 7.3): the per-K perplexities of the two
    models paired, one-tail paired t-test of "better < worse" (p small: significantly better) and of the
    reverse (p small: significantly worse); ``mean_difference`` = mean(better - worse)."""
    import numpy as np
    from scipy.stats import ttest_rel

    by_k = [{row["label"]: row["perplexity"] for row in r["rows"]} for r in reports]
    out = []
    for a, b, _ in ORDERINGS:
        if len(reports) < 2 or any(a not in p or b not in p for p in by_k):
            continue
        x, y = np.array([p[a] for p in by_k]), np.array([p[b] for p in by_k])
        out.append({"better": a, "worse": b, "topics": [r["topics"] for r in reports],
                    "mean_difference": float((x - y).mean()),
                    "relative": float(((x - y) / y).mean()), "wins": int((x < y).sum()),
                    "p_better": float(ttest_rel(x, y, alternative="less").pvalue),
                    "p_worse": float(ttest_rel(x, y, alternative="greater").pvalue)})
    return out


def format_over_k(reports: list) -> str:
    """Held-out perplexity of every run (columns) at every K (rows)."""
    labels = [r["label"] for r in reports[0]["rows"]]
    lines = ["K     " + " ".join(f"{label:>11}" for label in labels)]
    for report in reports:
        by = {r["label"]: r["perplexity"] for r in report["rows"]}
        lines.append(f"{report['topics']:<5} " + " ".join(f"{by[label]:11.1f}" for label in labels))
    return "\n".join(lines)


def format_paired(tests: list) -> str:
    lines = ["paired over K (one-tail paired t-tests, thesis Table 7.3):"]
    for t in tests:
        verdict = ("significantly better" if t["p_better"] < 0.05 else
                   "significantly worse" if t["p_worse"] < 0.05 else "comparable")
        lines.append(f"{t['better']} vs {t['worse']} over K={t['topics']}: mean difference "
                     f"{t['mean_difference']:+.1f} ({100 * t['relative']:+.1f}%), lower at {t['wins']} of "
                     f"{len(t['topics'])} K; p(better) = {t['p_better']:.3g}, p(worse) = {t['p_worse']:.3g}: "
                     f"{t['better']} is {verdict}")
    return "\n".join(lines)


def format_table(report: dict) -> str:
    book, source = report.get("unit") == "book", report.get("unit") == "source"
    if source:
        seg = "the source's"
    elif report["verses_per_segment"] <= 0:
        seg = "chapters" if book else "sentences"
    else:
        seg = f"{report['verses_per_segment']} verses"
    spd, tps = report["segments_per_document"], report["tokens_per_segment"]
    observed = report.get("heldout_observed")
    protocol = ("every word fitted and scored" if observed is None else
                f"document completion, {observed:g} of every segment observed")
    what = "documents" if source else "books as documents" if book else "chapters as documents"
    lines = [f"{report['corpus']}: {report['documents']} {what}, "
             f"{report['segments']} segments ({seg}), "
             f"{report['tokens']} tokens, V={report['vocab_size']}; K={report['topics']}, "
             f"{report['iterations']} iterations, seed {report['seed']}, 20% held out "
             f"({report['rows'][0]['heldout_documents']} documents, {report['rows'][0]['heldout_tokens']} tokens "
             f"scored: {protocol}), local[{report['cores']}]",
             f"segments per document: min {spd['min']}, median {spd['median']:g}, mean {spd['mean']:.1f}, "
             f"max {spd['max']}; tokens per segment: min {tps['min']}, median {tps['median']:g}, "
             f"mean {tps['mean']:.1f}, max {tps['max']}",
             f"{'model':12} {'perplexity':>10} {'seconds':>8} {'tokens/s':>9}"]
    for r in report["rows"]:
        lines.append(f"{r['label']:12} {r['perplexity']:10.1f} {r['seconds']:8.1f} {r['tokens_per_second']:9.3g}")
    for o in report["orderings"]:
        op = "<" if o["strict"] else "<="
        verdict = "n/a" if o["holds"] is None else ("holds" if o["holds"] else "does NOT hold")
        lines.append(f"{o['better']} {op} {o['worse']}: {verdict}")
    lines.append(f"(tokens/s: training tokens x iterations / sampling seconds; seconds: the whole train call "
                 f"including held-out scoring; 1-minute load average at the end: {report['load_average']:.1f})")
    return "\n".join(lines)


def report_tag(report: dict, topics) -> str:
    return run_tag(report.get("unit"), report["corpus"], report["verses_per_segment"], topics, report["iterations"],
                   report["seed"], report.get("hyper") or {}, report.get("heldout_iterations", 50),
                   report.get("heldout_observed"))


def write_report(report: dict) -> Path:
    path = CACHE / f"orderings-{report_tag(report, report['topics'])}.json"
    path.write_text(json.dumps(report, indent=2, default=float))
    return path


@pytest.mark.benchmark
def test_benchmark(spark_session):
    report = run_benchmark(spark_session, topics=int(os.environ.get("BENCH_TOPICS", 10)),
                           iterations=int(os.environ.get("BENCH_ITERATIONS", 20)), heldout_iterations=20)
    print(format_table(report))
    assert len(report["rows"]) == len(RUNS)
    assert all(r["perplexity"] > 1 for r in report["rows"])


def main(argv=None) -> int:
    from drivers.families.gibbs.settings import observed_fraction

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", default="20",
                        help="K, or several comma-separated K: then every ordering is also tested by a one-tail "
                             "paired t-test over the K (the thesis' protocol)")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--permute-seed", type=int, default=1)
    parser.add_argument("--unit", choices=("chapter", "book"), default="chapter",
                        help="documents: the 1,189 chapters (default) or the 66 books")
    parser.add_argument("--verses-per-segment", type=int, default=None,
                        help="verses per segment (default 3 with --unit chapter, 5 with --unit book); 0: "
                             "split the chapters into sentences (--unit chapter) or one segment per chapter "
                             "(--unit book)")
    parser.add_argument("--source", default=None,
                        help="instead of the Bible: a JSON-lines file (.gz) of documents with 'id' and a "
                             "'segments' list in order; 'pydoc': the Python library reference, one document "
                             "per page, paragraphs as segments (needs Debian's python3-doc)")
    parser.add_argument("--heldout-iterations", type=int, default=50)
    parser.add_argument("--heldout-observed", type=observed_fraction, default=0.5, metavar="F|all",
                        help="held-out protocol: document completion with F of every test segment observed "
                             "(default 0.5), or 'all' (every word fitted and scored)")
    parser.add_argument("--reuse", action="store_true",
                        help="score models already trained by an earlier run with the same settings instead of "
                             "training them again (e.g. with another --heldout-observed)")
    parser.add_argument("--only", default=None, help="comma-separated labels to run (default: all)")
    parser.add_argument("--hyper", action="append", default=[], metavar="MODEL:KEY=JSON",
                        help="a hyperparameter for every run of MODEL, e.g. adatm:lambda_t=0.1 (repeatable)")
    args = parser.parse_args(argv)
    from bench_common import bench_session
    spark = bench_session("spark-topics orderings benchmark")
    verses = args.verses_per_segment
    if verses is None:
        verses = 5 if args.unit == "book" else 3
    hyper: dict = {}
    for item in args.hyper:
        model, _, value = item.partition(":")
        if "=" not in value:
            parser.error(f"--hyper expects MODEL:KEY=JSON, got {item!r}")
        hyper.setdefault(model, []).append(value)
    if args.source == "pydoc":
        args.source = python_docs_source()
    reports = []
    for topics in [int(k) for k in args.topics.split(",")]:
        report = run_benchmark(spark, topics, args.iterations, args.seed, args.permute_seed,
                               verses, args.heldout_iterations,
                               args.only.split(",") if args.only else None, args.unit, hyper, args.source,
                               args.heldout_observed, args.reuse)
        print(format_table(report), flush=True)
        print(f"results written to {write_report(report)}", flush=True)
        reports.append(report)
    if len(reports) > 1:
        tests = paired_tests(reports)
        print(format_over_k(reports))
        print(format_paired(tests))
        path = CACHE / f"orderings-paired-{report_tag(reports[0], args.topics.replace(',', '_'))}.json"
        path.write_text(json.dumps({"reports": reports, "paired": tests}, indent=2, default=float))
        print(f"paired results written to {path}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
