"""Tree models against polylingual LDA and LDA per language on the aligned English/Spanish Bible.

Data: every chapter of the World English Bible and of the Reina-Valera 1909 (``sword-text-web``,
``sword-text-sparv``; the shipped 597-chapter sample when they are missing), prepared as an aligned corpus with 20%
of the chapter tuples held out (``prepare --lang-column --holdout-fraction 0.2``). Dictionary: FreeDict eng-spa and
spa-eng (``dict-freedict-eng-spa``, ``dict-freedict-spa-eng``) as ``spark-topics tree`` reads them; the concepts are
split 80/20 by a hash of the pair: the tree is built from 80%, the other 20% are the bilingual lexicon induction
queries (never seen by any model).

Models, each in every inference mode it has (variational EM, hybrid; Gibbs sampling on the Gibbs engine with
``--modes gibbs``, ``--gibbs-iterations``), for every K and seed: ``lda`` per language (its own corpus;
``lda-gibbs`` in Gibbs mode), ``polylda`` (no Gibbs mode), ``tlda`` (each language's chapters separate, coupled
only by the tree), ``ptlda`` (tuples + tree). Every mode is scored with one estimator (a Gibbs model's
posterior-mean topics stand for E[beta] in the fold-in). Metrics on the held-out tuples (``evaluate``): per-language
document-completion perplexity and NPMI, cross-language retrieval (precision@1, MRR, both directions, theta from
one language), CNPMI over the held-out aligned tuples; bilingual lexicon induction on the held-out pairs (words
ranked by the cosine of their topic vectors p(k | w)); seconds per iteration. Mean and spread over the seeds.
Beside the tests, not in the default run::

    .venv/bin/python tests/bench/bench_trees.py --topics 10 20 50 --seeds 1 2 3 --iterations 40

Rows of earlier runs with other settings are kept in ``out/bench/trees/results.json`` and join the table (a
third seed can be added later with ``--seeds 3``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench_common import CACHE, bench_session  # noqa: E402  (first: puts the project on sys.path)

DICTIONARIES = ["/usr/share/dictd/freedict-eng-spa.index", "/usr/share/dictd/freedict-spa-eng.index"]
ROOT = CACHE / "trees"


def held_out(pair) -> bool:
    return int(hashlib.sha1("\t".join(pair).encode()).hexdigest(), 16) % 5 == 0


def prepare(spark):
    """(corpus dir, tree dir, held-out pairs [(en word, es word)]) (cached under out/bench/trees/)."""

    from bench_polylingual import aligned_input
    from drivers.models.tree.prior_tree import build_concepts, coverage_report, save_tree
    from drivers.preparation.aligned import prepare_aligned
    from drivers.models.tree.dictionaries import read_dictionaries
    from jobs.tree import corpus_vocabulary, spark_tokenizer

    corpus = ROOT / "corpus"
    if not (corpus / "corpus.json").exists():
        prepare_aligned(spark, str(aligned_input()), str(corpus), "lang", holdout_fraction=0.2, overwrite=True)
    tree_dir, queries = ROOT / "tree", ROOT / "bli_pairs.json"
    if not queries.exists():
        vocabulary, languages, options = corpus_vocabulary(str(corpus))
        concepts, report = build_concepts(list(read_dictionaries(DICTIONARIES)), spark_tokenizer(spark, options),
                                          vocabulary, languages)
        test = np.array([held_out((a, b)) for a, b in zip(concepts["word_a"], concepts["word_b"])])
        train = concepts[~test].reset_index(drop=True)
        train["concept"] = np.arange(len(train))
        from collections import Counter

        save_tree(str(tree_dir), train, {"languages": list(languages), "report": coverage_report(
            train, report["pairs_read"], Counter(report["dropped"]), languages), "held_out_pairs": int(test.sum())})
        queries.write_text(json.dumps(list(zip(concepts["word_a"][test], concepts["word_b"][test]))))
        print(f"tree: {len(train)} concepts, {int(test.sum())} pairs held out for lexicon induction", flush=True)
    return str(corpus), str(tree_dir), [tuple(p) for p in json.loads(queries.read_text())]


def lexicon_scores(model, pairs) -> dict:
    from inference.retrieval import lexicon_induction

    views = {l: model.language_view(l) for l in ("en", "es")}
    vectors = {}
    for language, view in views.items():
        p = view.topic_word()                                   # K x V_L: p(w | k, L)
        vectors[language] = (p / p.sum(axis=0, keepdims=True)).T  # V_L x K: p(k | w) with uniform topics
    index = {l: {t: i for i, t in enumerate(v.vocab["term"])} for l, v in views.items()}
    queries = [(index["en"][a], index["es"][b]) for a, b in pairs if a in index["en"] and b in index["es"]]
    return lexicon_induction(vectors["en"], vectors["es"], queries)


def model_dirs(row) -> list:
    out = ROOT / "models" / f"{row['model']}-{row['inference']}-K{row['K']}-s{row['seed']}"
    return [f"{out}-{language}" for language in ("en", "es")] if row["model"] == "lda" else [str(out)]


def tokens_per_second(row) -> float:
    """Training tokens over the median seconds of an iteration (after the first two), from the model
    directories (lda: its two languages' models together)."""
    tokens = seconds = 0.0
    for directory in model_dirs(row):
        meta = json.loads((Path(directory) / "model.json").read_text())
        trace = meta.get("trace") or meta["elbo_trace"]
        tokens += meta["data"]["tokens"]
        seconds += float(np.median([r["seconds"] for r in trace[2:]]))
    return tokens / seconds


def run_one(spark, corpus, tree, pairs, model, inference, topics, seed, iterations) -> dict:
    from drivers.families import EvaluateRequest
    from drivers.store.model_store import load_model
    from jobs import evaluate, train

    name = f"{model}-{inference}-K{topics}-s{seed}"
    out = ROOT / "models" / name
    flags = ["--topics", str(topics), "--seed", str(seed), "--iterations", str(iterations)]
    if inference == "gibbs":
        flags += ["--inference", "gibbs"] if model != "lda" else []
    else:
        flags += ["--tol", "0", "--inference", inference]
    trace = (lambda meta: meta["trace"][2:]) if inference == "gibbs" else (lambda meta: meta["elbo_trace"][2:])
    row = {"model": model, "inference": inference, "K": topics, "seed": seed, "iterations": iterations}
    if model == "lda":                                          # one model per language, its own sub-corpus
        for language in ("en", "es"):
            meta = train.train(spark, train.parse_request(["--corpus", f"{corpus}/{language}", "--output",
                                                           f"{out}-{language}", "--model",
                                                           "lda-gibbs" if inference == "gibbs" else "lda", *flags]))
            # the same estimator for every mode: the fold-in of the variational family (a Gibbs model's
            # posterior-mean topics stand for E[beta]), through the per-language route for a Gibbs model
            metrics = evaluate.evaluate(spark, EvaluateRequest((f"{language}={out}-{language}",),
                                                               f"{corpus}/heldout"))["per_language"][language] \
                if inference == "gibbs" else evaluate.evaluate_model(spark, f"{out}-{language}",
                                                                     f"{corpus}/heldout/{language}")
            row[f"perplexity_{language}"], row[f"npmi_{language}"] = metrics["perplexity"], metrics["npmi"]
            row.setdefault("seconds", []).extend(r["seconds"] for r in trace(meta))
        row["s_per_iteration"] = float(np.median(row.pop("seconds")))
        return row
    extra = ["--tree", tree] if model in ("tlda", "ptlda") else []
    meta = train.train(spark, train.parse_request(["--corpus", corpus, "--output", str(out), "--model", model,
                                                   *extra, *flags]))
    metrics = evaluate.evaluate_model(spark, str(out), f"{corpus}/heldout")
    for language in ("en", "es"):
        row[f"perplexity_{language}"] = metrics["per_language"][language]["perplexity"]
        row[f"npmi_{language}"] = metrics["per_language"][language]["npmi"]
    for pair in ("en->es", "es->en"):
        row[f"p@1 {pair}"] = metrics["retrieval"][pair]["precision_at_1"]
        row[f"mrr {pair}"] = metrics["retrieval"][pair]["mean_reciprocal_rank"]
    row["cnpmi"] = metrics["cnpmi"]["en-es"]["mean"]
    bli = lexicon_scores(load_model(str(out)), pairs)
    row["bli acc@1"], row["bli mrr"], row["bli queries"] = bli["accuracy_at_1"], bli["mean_reciprocal_rank"], \
        bli["queries"]
    row["s_per_iteration"] = float(np.median([r["seconds"] for r in trace(meta)]))
    return row


COLUMNS = ["perplexity_en", "perplexity_es", "p@1 en->es", "p@1 es->en", "mrr en->es", "mrr es->en", "cnpmi",
           "npmi_en", "npmi_es", "bli acc@1", "bli mrr", "s_per_iteration", "ktokens/s"]


def table(rows) -> str:
    groups = defaultdict(list)
    for r in rows:
        if "ktokens/s" not in r:
            try:
                r["ktokens/s"] = tokens_per_second(r) / 1000
            except (OSError, KeyError):
                pass
        groups[(r["K"], r["model"], r["inference"])].append(r)
    header = f"{'K':>3} {'model':<8} {'mode':<11} " + " ".join(f"{c:>15}" for c in COLUMNS)
    lines = [header]
    for (k, model, inference), rs in sorted(groups.items()):
        cells = []
        for c in COLUMNS:
            values = [r[c] for r in rs if c in r]
            cells.append(f"{np.mean(values):>9.3f}±{np.std(values):<5.3f}" if values else f"{'-':>15}")
        lines.append(f"{k:>3} {model:<8} {inference:<11} " + " ".join(cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[10, 20, 50])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--models", nargs="+", default=["lda", "polylda", "tlda", "ptlda"])
    parser.add_argument("--modes", nargs="+", default=["variational", "hybrid"],
                        help="variational, hybrid, gibbs (lda: lda-gibbs per language; polylda has no Gibbs mode)")
    parser.add_argument("--gibbs-iterations", type=int, default=300, help="iterations of the Gibbs mode")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_TOPICS_SPARK_LOG_LEVEL", "ERROR")
    spark = bench_session("spark-topics tree benchmark")
    corpus, tree, pairs = prepare(spark)
    results = ROOT / "results.json"           # runs of earlier invocations (other seeds) join the table
    key = lambda r: (r["K"], r["model"], r["inference"], r["seed"])   # noqa: E731
    mine = {(k, m, i, s) for k in args.topics for m in args.models for i in args.modes for s in args.seeds}
    rows = [r for r in (json.loads(results.read_text()) if results.exists() else []) if key(r) not in mine]
    for topics in args.topics:
        for seed in args.seeds:
            for model in args.models:
                for inference in args.modes:
                    if inference == "gibbs" and model == "polylda":
                        continue
                    started = time.time()
                    rows.append(run_one(spark, corpus, tree, pairs, model, inference, topics, seed,
                                        args.gibbs_iterations if inference == "gibbs" else args.iterations))
                    print(json.dumps(rows[-1]), f"({time.time() - started:.0f} s)", flush=True)
                    results.write_text(json.dumps(rows, indent=1))
        print(table(rows), flush=True)
    results.write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
