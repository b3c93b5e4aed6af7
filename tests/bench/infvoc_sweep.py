"""A fast grid over the infinite-vocabulary model's settings on the pinned streams of ``bench_infvoc.py``, in this
process, without Spark (issue 30): the stream is tokenised in Python as ``prepare`` does (letters, lower-cased,
at least 2 characters, the English stop words; the base quarter keeps the words of document frequency 2 to 50%,
the batches every word) and fed through the same kernels as ``train``/``refresh --vocabulary infinite``
(:func:`inference.infvoc.local_step.sample_block` and :func:`inference.infvoc.tos.update_sets`, the minibatches cut
per part as ``run_stream`` cuts them; draws seeded by (seed, minibatch, document) as on Spark). Scored as the bench
scores: NPMI of each topic's 10 top words against the whole stream, its last batch and the reference corpus, and
the SVM and logistic balanced accuracies of theta inferred under the final model (the last 40% of the stream as
the test set). A screening tool: the README's figures come from ``bench_infvoc.py``, which runs the commands.

    .venv/bin/python tests/bench/infvoc_sweep.py --corpus python-news --topics 50 --minibatch-size 155 \
        --tau0 64 --kappa 0.6 --grid alpha_beta=100,1000 truncation=2000 [--base-words /usr/share/dict/words]
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import time
from collections import Counter

import bench_common  # noqa: F401  (first: puts the project on sys.path)
import numpy as np
import pandas as pd
from bench_infvoc import classification_accuracy, document_sets, npmi
from infvoc_corpora import CORPORA
from infvoc_reference import REFERENCES

TOKEN = re.compile(r"[^\W\d_]+(?:'(?!s\b)[^\W\d_]+)*")


def tokens_of(text: str, stop: set) -> list[str]:
    return [t for t in (m.group(0) for m in TOKEN.finditer(text.replace("\u2019", "'").lower()))
            if len(t) >= 2 and t not in stop]


def stream_parts(rows, batches: int, stop: set):
    """(base vocabulary, [part: [(id, tokens)]]): the base quarter cut to words of df 2..50%, then the batches."""
    quarter = len(rows) // 4
    size = -(-(len(rows) - quarter) // batches)
    base = [(r["id"], tokens_of(r["text"], stop)) for r in rows[:quarter]]
    df = Counter(w for _, t in base for w in set(t))
    vocab = sorted(w for w, n in df.items() if 2 <= n <= 0.5 * len(base))
    keep = set(vocab)
    parts = [[(d, [w for w in t if w in keep]) for d, t in base]]
    for i in range(batches):
        parts.append([(r["id"], tokens_of(r["text"], stop)) for r in rows[quarter + i * size: quarter + (i + 1) * size]])
    return vocab, [[(d, t) for d, t in part if t] for part in parts]


def run_model(parts, base, settings, K: int, minibatch_size: int, seed: int, burn_in: int = 5, samples: int = 10,
              start=None, auto_passes: bool = False):
    """(the sets, alpha^theta) after the stream (the kernels of ``drivers.models.infvoc.engine.run_minibatch``, in
    process), from ``start`` (K TopicSets) or empty sets; ``auto_passes``: each part as ``--passes auto`` passes
    it (:func:`drivers.models.infvoc.commands.passes_of`; D counts a document once), else one pass."""
    from types import SimpleNamespace

    from drivers.models.infvoc.commands import passes_of
    from inference.infvoc.doc_prior import online_step
    from inference.infvoc.local_step import StringBlock, sample_block
    from inference.infvoc.tos import TopicSet, expand_topic, step_size, update_sets, with_filters

    sets = start if start is not None else with_filters([TopicSet.empty() for _ in range(K)], settings)
    alpha = np.full(K, 1.0 / K)
    minibatch, seen = 0, 0
    steps = []                      # (a minibatch's documents, new: its first pass) in stream order
    for part in parts:
        minibatches = [part[i:i + minibatch_size] for i in range(0, len(part), minibatch_size)]
        passes = passes_of(SimpleNamespace(minibatch_size=minibatch_size), len(part)) if auto_passes else 1
        steps.extend((chunk, p == 0) for p in range(passes) for chunk in minibatches)
    for chunk, new in steps:
        minibatch += 1
        seen += len(chunk) if new else 0
        if settings.expand == "every":
            words = {w for _, t in chunk for w in t}
            sets = [expand_topic(ts, words, settings.alpha_beta, minibatch, settings.discount) for ts in sets]
        block = StringBlock.from_documents(chunk)
        log_base = base.log_probs(block.terms)
        fit = settings.alpha_theta == "fit"     # alpha^theta learned online (engine.run_minibatch's step)
        phi, _, *stats = sample_block(block, sets, log_base, alpha, seed, minibatch, burn_in, samples,
                                      alpha_statistics=fit)
        if fit:
            alpha = online_step(alpha, stats[0].sum(axis=0), block.n_docs, settings.corpus_size or seen,
                                step_size(minibatch, settings.tau0, settings.kappa))
        kept = np.rint(phi * samples) / samples
        counts = {k: (block.terms[np.flatnonzero(kept[:, k])], kept[np.flatnonzero(kept[:, k]), k])
                  for k in range(K) if np.any(kept[:, k])}
        sets = update_sets(sets, counts, dict(zip(block.terms, log_base)), len(chunk), seen, minibatch, settings)
    return sets, alpha


def infer_thetas(model, documents) -> pd.DataFrame:
    """theta of every (id, tokens) under the final model (``infer``'s fold-in over every word)."""
    from drivers.models.infvoc.scoring import topic_word_over
    from inference.blocks import DocBlock
    from inference.heldout import fold_in

    terms = sorted({w for _, t in documents for w in t})
    lookup = {w: i for i, w in enumerate(terms)}
    topic_word = topic_word_over(model, terms)
    topic_word /= topic_word.sum(axis=1, keepdims=True)
    indptr, ids, counts = [0], [], []
    docs = sorted((d, t) for d, t in documents if t)
    for _, t in docs:
        u, n = np.unique([lookup[w] for w in t], return_counts=True)
        ids.extend(u.tolist())
        counts.extend(n.tolist())
        indptr.append(len(ids))
    block = DocBlock.from_csr(np.array([d for d, _ in docs], dtype=object), np.array(indptr, dtype=np.int64),
                              np.array(ids, dtype=np.int64), np.array(counts, dtype=np.float64))
    fit = fold_in(block, topic_word, model.alpha)
    theta = fit.gamma / fit.gamma.sum(axis=1, keepdims=True)
    return pd.DataFrame({"doc_id": block.doc_ids, "theta": list(theta)})


def scoring_sets(rows, stop, options) -> tuple:
    """``(the whole stream's, its last batch's, the reference corpus' document word sets (or None), labels, test
    ids)`` as the bench scores them: NPMI references, and the classification's labels and test split (the last 40%
    of the stream; the changelogs: sections of 200 entries, a hashed 8% of the packages)."""
    quarter = len(rows) // 4
    size = -(-(len(rows) - quarter) // options.batches)
    everything = document_sets(rows, stop)
    last = document_sets(rows[quarter + (options.batches - 1) * size:], stop)
    reference = None
    if options.corpus in REFERENCES:
        reference = document_sets([{"text": t} for t in REFERENCES[options.corpus]()[0]], stop)
    labels = {r["id"]: r["label"] for r in rows if r["label"]}
    test_ids = {r["id"] for r in rows[int(0.6 * len(rows)):]}
    if options.corpus == "debian-changelogs":
        counted = Counter(r["label"] for r in rows)
        labels = {i: s for i, s in labels.items() if counted[s] >= 200}
        test_ids = {r["id"] for r in rows if hashlib.sha256(r["package"].encode()).digest()[0] < 52}
    return everything, last, reference, labels, test_ids


def stream_arguments(corpus: str) -> argparse.ArgumentParser:
    """The stream's flags of the in-process screens (this one and :mod:`infvoc_ladder`)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=sorted(CORPORA), default=corpus)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--minibatch-size", type=int, default=155)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tau0", type=float, default=64.0)
    parser.add_argument("--kappa", type=float, default=0.6)
    return parser


def main() -> None:
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.text import stopword_list
    from inference.infvoc.base_measure import CharNgramBase
    from inference.infvoc.tos import OnlineSettings

    parser = stream_arguments("python-news")
    parser.add_argument("--base-words", default=None, help="fit G_0 on this word list (one word a line) instead of "
                                                          "the base corpus' vocabulary")
    parser.add_argument("--grid", nargs="*", default=[],
                        help="NAME=V1,V2 over OnlineSettings' fields (alpha_beta, truncation, delay, tau0, kappa, "
                             "expand, ranking, alpha_theta, discount); every combination is run")
    parser.add_argument("--no-classify", action="store_true")
    parser.add_argument("--product", action="store_true",
                        help="the product's defaults besides the grid: --expand every and --passes auto (without it "
                             "expand sampled and one pass, the grid's rows before session 21)")
    options = parser.parse_args()

    rows = CORPORA[options.corpus]()
    stop = set(stopword_list("english"))
    vocab, parts = stream_parts(rows, options.batches, stop)
    if options.base_words:
        words = [w.strip().lower() for w in open(options.base_words, encoding="utf-8")]
        words = sorted({w for w in words if TOKEN.fullmatch(w) and len(w) >= 2 and w not in stop})
        base = CharNgramBase.fit(words)
    else:
        base = CharNgramBase.fit(vocab)
    everything, last, reference, labels, test_ids = scoring_sets(rows, stop, options)
    every_doc = [(r["id"], tokens_of(r["text"], stop)) for r in rows]
    grid = [(name, value.split(",")) for name, value in (g.split("=", 1) for g in options.grid)]
    print(f"{options.corpus}: {len(rows)} entries, base vocabulary {len(vocab)}, G_0 from "
          f"{options.base_words or 'the base corpus'}; K={options.topics} S={options.minibatch_size} "
          f"seed {options.seed}", flush=True)
    for combination in itertools.product(*[values for _, values in grid]):
        fields = dict(alpha_beta=1000.0, truncation=2000, delay=10, tau0=options.tau0, kappa=options.kappa,
                      expand="every" if options.product else "sampled")    # sampled: the README's grid rows
        for (name, _), value in zip(grid, combination):
            default = getattr(OnlineSettings(), name)
            fields[name] = type(default)(value) if not isinstance(default, str) else value
        settings = OnlineSettings(**fields)
        began = time.time()
        sets, alpha = run_model(parts, base, settings, options.topics, options.minibatch_size, options.seed,
                                auto_passes=options.product)
        model = InfVocModel(sets, base, alpha, settings, pd.Index(vocab, dtype=object))
        top = [[w for w, _, _ in t] for t in model.top_words(10)]
        scores = {"whole": npmi(top, everything), "last": npmi(top, last),
                  "reference": npmi(top, reference) if reference is not None else float("nan")}
        if not options.no_classify:
            accuracy = classification_accuracy(infer_thetas(model, every_doc), labels, test_ids)
            scores.update(svm_balanced=accuracy["svm_balanced"], logistic_balanced=accuracy["logistic_balanced"])
        new = sum(m for t in model.top_words(10) for _, _, m in t)
        print("RESULT " + json.dumps({**{k: v for k, v in fields.items()}, "seed": options.seed,
                                      **{k: round(v, 4) for k, v in scores.items()}, "new_top_words": new,
                                      "seconds": round(time.time() - began, 1)}), flush=True)
        print("  alpha^theta sorted: " + " ".join(f"{a:.3f}" for a in np.sort(alpha)[::-1]), flush=True)
        shown = np.argsort(-alpha, kind="stable")[:3] if settings.alpha_theta == "fit" else range(8)
        for k in shown:
            print(f"  topic {k} (alpha {alpha[k]:.3f}): "
                  + " ".join(w + ("+" if m else "") for w, _, m in model.top_words(10)[k]))


if __name__ == "__main__":
    main()
