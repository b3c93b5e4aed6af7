"""Which ``--inference`` should ``lda`` and ``polylda`` have by default? Both modes, as a user runs them, on short,
longer and long documents, monolingual and aligned, against scikit-learn and tomotopy, one held-out estimator.

Corpora (built from Debian's SWORD packages with ``mod2imp``, cached under ``out/bench/inference-default/``):

* ``verses``: every verse of the World English Bible (``engWEB2015eb``): ~31k short documents;
* ``paragraphs``: the paragraphs of three commentaries (``TDavid``, ``MHCC``, ``Scofield``): longer documents;
* ``chapters``: the shipped sample, the 1,189 WEB chapters (``sample_data/web_chapters.jsonl.gz``): long documents;
* ``aligned-verses``: the WEB and the Reina-Valera 1909 (``spaRV1909eb``, ``sword-text-sparv``) aligned by verse:
  short aligned tuples (en + es);
* ``aligned-chapters``: the same two Bibles aligned by chapter (``bench_polylingual.aligned_input``).

Monolingual corpora: documents split 90/10 by a hash of their id, the training part prepared with ``prepare``'s
defaults and the test part with its vocabulary. Aligned corpora: ``prepare --lang-column lang --holdout-fraction
0.2``. ``--max-docs`` keeps the first N documents (tuples) in hash order.

Ours: ``train --model lda|polylda --topics K --seed S --iterations I`` exactly as a user runs it (default
``--tol``), once with ``--inference variational`` and once with ``--inference hybrid``. Peers (``--peers``):
scikit-learn's batch VB (50 iterations) and tomotopy's collapsed Gibbs LDA (2 workers, 300 then 1000 iterations,
converged); on an aligned corpus they fit one monolingual model per language (the per-language reference; they have
no polylingual model). Every model is scored by document completion with the estimator ``evaluate`` reports
(:func:`drivers.evaluation.heldout.score_topic_word`: theta from half of each held-out document, the other half scored;
per language for the aligned corpora). Polylingual runs also report ``evaluate``'s cross-language retrieval
(precision@1 of the held-out partner, mean of en->es and es->en). Seconds: the whole ``train`` job (reading the
corpus included) for ours, the fit for the peers. Beside the tests, not in the default run::

    .venv/bin/python tests/bench/bench_inference_default.py --topics 50 --peers sklearn tomotopy
    .venv/bin/python tests/bench/bench_inference_default.py --corpora verses chapters --runs variational hybrid

Rows are kept in ``out/bench/inference-default/results.json`` (a re-run replaces the rows it repeats) and the
table printed at the end has every kept row: perplexity and seconds, and the ratios to the variational run of the
same corpus (x var) and to tomotopy-1000 (x tomotopy).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import time
from collections import defaultdict

from bench_common import CACHE, REPO, bench_session  # noqa: E402  (first: puts the project on sys.path)

ROOT = CACHE / "inference-default"
MONOLINGUAL = ("verses", "paragraphs", "chapters")
ALIGNED = ("aligned-verses", "aligned-chapters")
COMMENTARIES = ("TDavid", "MHCC", "Scofield")
SPANISH = "spaRV1909eb"


def _hashed(doc_id: str) -> int:
    return int(hashlib.sha1(doc_id.encode("utf-8")).hexdigest(), 16)


def source_rows(name: str) -> list[dict]:
    """The documents of a corpus: ``{"id", "text"}`` (+ ``"lang"`` for the aligned ones)."""
    from bench_corpus import MODULES, ensure_modules, module_documents

    if name == "chapters":
        return [json.loads(line) for line in gzip.open(REPO / "sample_data" / "web_chapters.jsonl.gz", "rt",
                                                       encoding="utf-8")]
    if name == "aligned-chapters":
        from bench_polylingual import aligned_input

        return [json.loads(line) for line in gzip.open(aligned_input(), "rt", encoding="utf-8")]
    ensure_modules()
    if name == "verses":
        return [{"id": i, "text": t} for i, t in module_documents("engWEB2015eb", "verse")]
    if name == "paragraphs":
        seen, rows = set(), []
        for module in COMMENTARIES:
            for doc_id, text in module_documents(module, MODULES[module][1]):
                digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
                if digest not in seen:           # a commentary repeats an entry under every verse it covers
                    seen.add(digest)
                    rows.append({"id": doc_id, "text": text})
        return rows
    if name == "aligned-verses":
        by_lang = {}
        for lang, module in (("en", "engWEB2015eb"), ("es", SPANISH)):
            by_lang[lang] = {doc_id.split(":", 1)[1]: text for doc_id, text in module_documents(module, "verse")}
        keys = [k for k in by_lang["en"] if k in by_lang["es"]]
        return [{"id": k, "lang": lang, "text": by_lang[lang][k]} for k in keys for lang in ("en", "es")]
    raise ValueError(name)


def prepared(spark, name: str, max_docs: int | None) -> dict:
    """``{"train": dir, "test": dir, "languages": [...] or None}`` of a corpus (built and cached when missing)."""
    from drivers.preparation.aligned import prepare_aligned
    from drivers.preparation.corpus import prepare_corpus

    root = ROOT / "corpora" / (name + (f"-{max_docs}" if max_docs else ""))
    if name in ALIGNED:
        if not (root / "corpus" / "corpus.json").exists():
            rows = source_rows(name)
            ids = sorted({r["id"] for r in rows}, key=_hashed)[:max_docs]
            keep = set(ids)
            root.mkdir(parents=True, exist_ok=True)
            with open(root / "aligned.jsonl", "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if r["id"] in keep)
            prepare_aligned(spark, str(root / "aligned.jsonl"), str(root / "corpus"), "lang", holdout_fraction=0.2,
                            overwrite=True)
        return {"train": str(root / "corpus"), "test": str(root / "corpus" / "heldout"), "languages": ["en", "es"]}
    train_dir, test_dir = root / "train_corpus", root / "test_corpus"
    if not (test_dir / "corpus.json").exists():
        rows = sorted(source_rows(name), key=lambda r: _hashed(r["id"]))[:max_docs]
        root.mkdir(parents=True, exist_ok=True)
        held = lambda r: _hashed("split\x00" + r["id"]) % 10 == 0   # noqa: E731
        for part, keep in (("train", lambda r: not held(r)), ("test", held)):
            with open(root / f"{part}.jsonl", "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if keep(r))
        prepare_corpus(spark, str(root / "train.jsonl"), str(train_dir), overwrite=True)
        prepare_corpus(spark, str(root / "test.jsonl"), str(test_dir), vocab=str(train_dir / "vocab.parquet"),
                       overwrite=True)
    return {"train": str(train_dir), "test": str(test_dir), "languages": None}


def describe(corpus: dict) -> str:
    """documents, tokens, V of the training corpus (per language for an aligned one)."""
    def one(directory):
        meta = json.loads(open(f"{directory}/corpus.json").read())
        return f"{meta['documents']} docs, {meta['tokens']} tokens ({meta['tokens'] / meta['documents']:.0f}/doc), " \
               f"V={meta['vocab_size']}"
    if corpus["languages"] is None:
        return one(corpus["train"])
    return "; ".join(f"{l}: {one(corpus['train'] + '/' + l)}" for l in corpus["languages"])


def ours(spark, corpus: dict, name: str, inference: str, topics: int, iterations: int, seed: int) -> dict:
    """Train as a user does and score; a row of the table."""
    from drivers.corpora.bow import load_corpus
    from drivers.evaluation.heldout import score_topic_word
    from drivers.families.variational.evaluate import evaluate_model
    from drivers.store.model_store import load_model
    from jobs import train

    model = "lda" if corpus["languages"] is None else "polylda"
    out = ROOT / "models" / f"{name}-{model}-{inference}-K{topics}-I{iterations}-s{seed}"
    started = time.time()
    meta = train.train(spark, train.parse_request(["--model", model, "--corpus", corpus["train"], "--output", str(out),
                                                   "--topics", str(topics), "--iterations", str(iterations),
                                                   "--seed", str(seed), "--inference", inference]))
    seconds = time.time() - started
    row = {"run": f"{model} --inference {inference}", "seconds": seconds, "iterations": meta["iterations"]}
    trained = load_model(str(out))
    if corpus["languages"] is None:
        test = load_corpus(spark, corpus["test"])
        row["perplexity"] = score_topic_word(spark, test, trained.topic_word(), trained.alpha, seed=0).perplexity
        test.blocks.unpersist()
        return row
    for language in corpus["languages"]:
        view = trained.language_view(language)
        test = load_corpus(spark, f"{corpus['test']}/{language}")
        row[f"perplexity_{language}"] = score_topic_word(spark, test, view.topic_word(), view.alpha,
                                                         seed=0).perplexity
        test.blocks.unpersist()
    retrieval = evaluate_model(spark, str(out), corpus["test"])["retrieval"]
    row["p@1"] = sum(r["precision_at_1"] for r in retrieval.values()) / len(retrieval)
    return row


def peers(spark, corpus: dict, topics: int, seed: int, which) -> list[dict]:
    """Rows of scikit-learn and tomotopy (per language on an aligned corpus)."""
    from bench_heldout_sample import peer_runs
    from drivers.corpora.bow import load_corpus
    from drivers.evaluation.heldout import score_topic_word

    parts = [(None, corpus["train"], corpus["test"])] if corpus["languages"] is None else \
        [(l, f"{corpus['train']}/{l}", f"{corpus['test']}/{l}") for l in corpus["languages"]]
    rows = {}
    for language, train_dir, test_dir in parts:
        test = load_corpus(spark, test_dir)
        for label, seconds, topic_word, alpha in peer_runs(train_dir, topics, seed, which):
            row = rows.setdefault(label, {"run": label, "seconds": 0.0})
            row["seconds"] += seconds
            key = "perplexity" if language is None else f"perplexity_{language}"
            row[key] = score_topic_word(spark, test, topic_word, alpha, seed=0).perplexity
            print(f"  {label:<28} {key}={row[key]:.1f} ({seconds:.1f} s)", flush=True)
        test.blocks.unpersist()
    return list(rows.values())


def table(results: list[dict]) -> str:
    groups = defaultdict(list)
    for r in results:
        groups[(r["corpus"], r["K"], r["I"], r["seed"])].append(r)
    lines = []
    for (name, k, iterations, seed), rows in groups.items():
        lines.append(f"\n{name}: {rows[0]['describe']}; K={k}, --iterations {iterations}, seed {seed}")
        keys = [c for c in ("perplexity", "perplexity_en", "perplexity_es") if any(c in r for r in rows)]
        var = next((r for r in rows if r["run"].endswith("variational")), None)
        tomo = next((r for r in rows if r["run"] == "tomotopy Gibbs (1000)"), None)
        mean = lambda r: sum(r[c] for c in keys) / len(keys)   # noqa: E731  (both languages: their mean)
        lines.append(f"{'run':<32} " + " ".join(f"{c:>14}" for c in keys)
                     + f" {'x var':>6} {'x tomotopy':>10} {'iters':>5} {'seconds':>8} {'x var':>6}"
                     + (f" {'p@1':>5}" if len(keys) > 1 else ""))
        for r in rows:
            cells = " ".join(f"{r[c]:>14.1f}" for c in keys)
            ratio = f"{mean(r) / mean(var):>6.3f}" if var else f"{'-':>6}"
            vs_tomo = f"{mean(r) / mean(tomo):>10.3f}" if tomo else f"{'-':>10}"
            time_ratio = f"{r['seconds'] / var['seconds']:>6.2f}" if var else f"{'-':>6}"
            lines.append(f"{r['run']:<32} {cells} {ratio} {vs_tomo} {str(r.get('iterations', '-')):>5} "
                         f"{r['seconds']:>8.1f} {time_ratio}"
                         + (f" {r['p@1']:>5.3f}" if "p@1" in r else (f" {'-':>5}" if len(keys) > 1 else "")))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=list(MONOLINGUAL + ALIGNED), choices=MONOLINGUAL + ALIGNED)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=50, help="train --iterations (50: train's default)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-docs", type=int, default=None,
                        help="keep the first N documents (aligned: tuples) of each corpus in hash order")
    parser.add_argument("--runs", nargs="*", default=["variational", "hybrid"], choices=("variational", "hybrid"))
    parser.add_argument("--peers", nargs="*", default=[], choices=("sklearn", "tomotopy"))
    args = parser.parse_args()
    spark = bench_session("spark-topics inference default benchmark")
    ROOT.mkdir(parents=True, exist_ok=True)
    store = ROOT / "results.json"
    for name in args.corpora:
        max_docs = None if name in ("chapters", "aligned-chapters") else args.max_docs
        corpus = prepared(spark, name, max_docs)
        label = name + (f"-{max_docs}" if max_docs else "")
        about = describe(corpus)
        print(f"\n{label}: {about}", flush=True)
        new = [ours(spark, corpus, name, inference, args.topics, args.iterations, args.seed)
               for inference in args.runs]
        for row in new:
            print(f"  {row}", flush=True)
        new += peers(spark, corpus, args.topics, args.seed, args.peers) if args.peers else []
        for row in new:
            row.update(corpus=label, describe=about, K=args.topics, I=args.iterations, seed=args.seed)
        key = lambda r: (r["corpus"], r["K"], r["I"], r["seed"], r["run"])   # noqa: E731
        replaced = {key(r) for r in new}
        results = json.loads(store.read_text()) if store.exists() else []   # (another run may have added rows)
        results = [r for r in results if key(r) not in replaced] + new
        store.write_text(json.dumps(results, indent=1))
    results = json.loads(store.read_text())
    print(table(results), flush=True)


if __name__ == "__main__":
    main()
