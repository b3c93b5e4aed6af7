"""The coherence figures other tools print, for any monolingual model, on Spark: gensim's ``u_mass``, ``c_npmi`` and
``c_v`` of each topic's top words over a reference corpus (:mod:`inference.coherence_measures`, the same numbers as
gensim's ``CoherenceModel`` on the corpus' tokens), topic diversity, the stability of the topics against other runs
(topics matched one to one), and whether the scored corpus is the one the model was trained on (in-sample).

``u_mass`` counts documents (``docs.parquet``); ``c_npmi`` and ``c_v`` slide windows over the tokens in text order,
which a corpus keeps when prepared with ``--ordered`` or ``--segments`` (``ordered.parquet``/``segments.parquet``);
without them those two are not computed, and the report says why. Counts are integers summed over partitions, so
the numbers do not depend on the cluster.
"""
from __future__ import annotations

import os
from functools import partial

import numpy as np

from drivers import storage
from drivers.corpora.bow import open_corpus_meta
from drivers.corpora.files import DOCS, SEGMENTS
from drivers.spark_parquet import read_parquet
from drivers.store import model_store
from inference import coherence_measures as measures
from inference.errors import UsageError
from inference.heldout import top_word_ids

#: how the report names our own document-level NPMI, to keep it apart from gensim's c_npmi
DOCUMENT_NPMI = "document-level NPMI (pairs counted per whole document; not gensim's c_npmi)"
NEEDS_ORDER = "needs the tokens in text order: prepare the corpus with --ordered (or --segments)"


def ordered_file(directory: str, meta: dict) -> str | None:
    """The corpus' file of tokens in text order, or None (a bag of words)."""
    name = (meta.get("ordered") or {}).get("file") or (SEGMENTS if meta.get("segmentation") else None)
    return storage.join(directory, name) if name and storage.exists(storage.join(directory, name)) else None


def _count_task(rows, nested: bool, word_ids, index, windows):
    keys_of = measures.topic_pairs(index, max(word_ids.size, 1))
    num_words = max(word_ids.size, 1)
    totals = {w: [np.zeros(num_words, np.int64), np.zeros(keys_of.size, np.int64), 0] for w in windows}
    for (tokens,) in rows:
        doc = np.concatenate([np.asarray(s, np.int64) for s in tokens] or [np.zeros(0, np.int64)]) if nested \
            else np.asarray(tokens, np.int64)
        positions = measures.relevant_positions(doc, word_ids)
        for w in windows:
            occ, joint, _ = totals[w]
            totals[w][2] += measures.window_counts(positions, w, num_words, keys_of, occ, joint)
    yield totals


def spark_counts(spark, path: str, column: str, nested: bool, word_ids, index, windows) -> dict:
    """window -> :class:`~inference.coherence_measures.WindowCounts` over the documents of ``path``'s ``column``
    (a list of word ids, or with ``nested`` a list of segments); window 0: one window per document."""
    task = partial(_count_task, nested=nested, word_ids=word_ids, index=index, windows=tuple(windows))
    if spark is None:       # in this process: the rows as one partition (the counts are integers: any order)
        import pyarrow.parquet as pq

        _, local = storage.resolve(path)
        parts = list(task((value,) for value in pq.read_table(local, columns=[column]).column(column).to_pylist()))
    else:
        parts = read_parquet(spark, path).select(column).rdd.mapPartitions(task).collect()
    keys = measures.topic_pairs(index, max(word_ids.size, 1))
    out = {}
    for w in windows:
        occ = sum((p[w][0] for p in parts), np.zeros(max(word_ids.size, 1), np.int64))
        joint = sum((p[w][1] for p in parts), np.zeros(keys.size, np.int64))
        out[w] = measures.WindowCounts(max(word_ids.size, 1), keys, occ, joint, sum(p[w][2] for p in parts))
    return out


def _summary(per_topic: np.ndarray) -> dict:
    finite = np.isfinite(per_topic)
    return {"mean": float(per_topic[finite].mean()) if finite.any() else None,
            "per_topic": [float(v) if np.isfinite(v) else None for v in per_topic],
            "topics_scored": int(finite.sum())}


def standard_coherence(spark, model_dir: str, reference_dir: str, top_words: int = 10) -> dict:
    """gensim's u_mass, c_npmi and c_v of the model's topics (their ``top_words`` most probable words, matched to
    the reference corpus by term) and the topic diversity. A top word the reference never holds makes its topic's
    c_npmi and c_v undefined (as in gensim): such topics are left out of the means and counted."""
    model = model_store.load_model(model_dir)
    if model.languages:
        return {"skipped": "a multilingual model: see the per-language and crosslingual figures"}
    phi = model.topic_word()
    top_terms = model.vocab["term"].to_numpy()[top_word_ids(phi, top_words)]
    meta, vocab = open_corpus_meta(spark, reference_dir)
    index_of = dict(zip(vocab["term"], vocab["id"].astype(np.int64)))
    absent = {t: len(vocab) + i for i, t in enumerate(sorted(set(top_terms.ravel()) - set(index_of)))}
    ids = np.vectorize(lambda t: index_of.get(t, absent.get(t)), otypes=[np.int64])(top_terms)
    word_ids = np.unique(ids)
    index = np.searchsorted(word_ids, ids)
    describe = spark.sparkContext.setJobDescription if spark is not None else (lambda text: None)
    result = {"top_words": int(top_words), "reference": reference_dir, "absent_top_words": sorted(absent),
              "topic_diversity": measures.topic_diversity(phi), "diversity_words": measures.DIVERSITY_WORDS}
    try:
        describe("evaluate: u_mass document counts")
        counts = spark_counts(spark, storage.join(reference_dir, DOCS), "term_ids", False, word_ids, index, (0,))
        result["u_mass"] = dict(_summary(measures.u_mass(index, counts[0])), documents=counts[0].windows)
        ordered = ordered_file(reference_dir, meta)
        if ordered is None:
            result["c_npmi"] = result["c_v"] = {"mean": None, "note": NEEDS_ORDER}
        else:
            describe("evaluate: sliding-window counts (c_npmi, c_v)")
            windows = (measures.WINDOWS["c_npmi"], measures.WINDOWS["c_v"])
            counts = spark_counts(spark, ordered, "segments", True, word_ids, index, windows)
            for name in ("c_npmi", "c_v"):
                w = measures.WINDOWS[name]
                result[name] = dict(_summary(measures.MEASURES[name](index, counts[w])), window=w,
                                    windows=counts[w].windows)
    finally:
        describe(None)
    return result


def stability(model_dir: str, others, top_words: int = 10) -> dict:
    """The model's topics matched one to one with each other run's (same vocabulary; e.g. other seeds): the mean
    Jensen-Shannon divergence and top-word Jaccard overlap of matched topics, per run and over all runs."""
    model = model_store.load_model(model_dir)
    runs = {}
    for other_dir in others:
        other = model_store.load_model(other_dir)
        if list(other.vocab["term"]) != list(model.vocab["term"]):
            raise UsageError(f"--stability-of {other_dir}: its vocabulary differs from {model_dir}'s; compare runs "
                             f"trained on the same corpus")
        match = measures.matched_topics(model.topic_word(), other.topic_word(), top_words)
        runs[other_dir] = {k: match[k] for k in ("mean_js_divergence", "mean_top_word_jaccard", "matching")}
    return {"runs": runs, "top_words": top_words,
            "mean_js_divergence": float(np.mean([r["mean_js_divergence"] for r in runs.values()])),
            "mean_top_word_jaccard": float(np.mean([r["mean_top_word_jaccard"] for r in runs.values()]))}


def _absolute(path: str) -> str:
    return path if "://" in path else os.path.realpath(path)


def in_sample(model_dir: str, corpus_dir: str, metrics: dict) -> bool:
    """Whether the scored documents are the model's training documents: ``corpus_dir`` is its training corpus and
    the family did not score a held-out split of it."""
    trained_on = (model_store.read_meta(model_dir).get("data") or {}).get("corpus")
    if not trained_on or _absolute(trained_on).rstrip("/") != _absolute(corpus_dir).rstrip("/"):
        return False
    return "held-out split" not in str(metrics.get("test_documents", ""))


IN_SAMPLE_WARNING = ("warning: {corpus} is the model's training corpus, so these figures are in-sample, not "
                     "held-out; score a held-out corpus (prepare --holdout-fraction F writes one to CORPUS_DIR/heldout)")


def format_standard(result: dict) -> str:
    """The lines ``evaluate`` prints for :func:`standard_coherence`."""
    if "skipped" in result:
        return f"standard coherence: not computed ({result['skipped']})"

    def figure(name: str) -> str:
        r = result[name]
        if r.get("mean") is None:
            return f"{name} n/a ({r.get('note', 'no topic scored')})"
        part = "" if r["topics_scored"] == len(r["per_topic"]) else f" over {r['topics_scored']} topics"
        return f"{name} {r['mean']:.4f}{part}"

    lines = [f"coherence as gensim computes it (top {result['top_words']} words, over {result['reference']}): "
             + ", ".join(figure(n) for n in ("c_npmi", "c_v", "u_mass")),
             f"topic diversity (distinct words among every topic's top {result['diversity_words']}): "
             f"{result['topic_diversity']:.3f}"]
    if result["absent_top_words"]:
        lines.append(f"top words absent from the reference corpus: {', '.join(result['absent_top_words'][:10])}")
    return "\n".join(lines)


def format_stability(result: dict) -> str:
    return (f"stability against {len(result['runs'])} other run(s) (topics matched one to one): mean Jensen-Shannon "
            f"divergence {result['mean_js_divergence']:.3f}, top-{result['top_words']} word overlap (Jaccard) "
            f"{result['mean_top_word_jaccard']:.3f}")
