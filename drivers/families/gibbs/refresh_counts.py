"""``refresh`` of a Gibbs model without latent variables (bigram-lm): its counts are the model, so a refresh
counts the batch's documents once, adds the kept counts of the model (re-keyed to the grown vocabulary) and
fits the hyperparameters to the sum as ``train`` fits them, from the same start (``train``'s initial
hyperparameters over the grown vocabulary: the default beta is V). The version is the model a retrain on the
union gives, bit for bit, at the cost of one counting pass over the batch (the old documents are not read
again: their counts are in the model; a revised document's old copy, read back from where the root keeps it, leaves
them). Its document table holds the batch's documents.
"""
from __future__ import annotations

import logging
import time

import numpy as np

from drivers import storage
from drivers.corpora.bow import open_corpus_meta
from drivers.corpora.segmented import load_segmented_corpus
from drivers.engines.gibbs.engine import GibbsEngine
from drivers.engines.gibbs.settings import GibbsSettings, SampleSchedule
from drivers.families.gibbs.infer import write_model_files
from drivers.families.gibbs.models import make_model, needs_order, needs_segments
from drivers.families.gibbs.refresh import copy_tokenizer
from drivers.refresh.triage import revised_ids
from drivers.refresh.reinfer import every_document, old_copies
from drivers.store import model_store, outputs, publish, topics_text
from inference.errors import RefusedError
from inference.gibbs.tables import KeyedCounts, merge_keyed

log = logging.getLogger("spark_topics.refresh")

WORK = "work-counts"


def rekeyed_bigrams(keys: np.ndarray, counts: np.ndarray, old_vocab_size: int, vocab_size: int) -> KeyedCounts:
    """Bigram counts keyed ``w' V_old + w`` (the start context ``V_old``) keyed for ``vocab_size`` words."""
    previous, word = keys // old_vocab_size, keys % old_vocab_size
    previous = np.where(previous == old_vocab_size, vocab_size, previous)
    return merge_keyed(1, previous * vocab_size + word, np.asarray(counts, np.int32).reshape(-1, 1))


def without_old_copies(spark, model, kept: KeyedCounts, corpus_dir: str, spec,
                       hyper: dict | None) -> tuple[KeyedCounts, dict]:
    """``kept`` less the bigrams of the documents of ``corpus_dir`` (revised documents' old copies: few, counted
    here; the staged corpus is deleted once read), and their numbers of documents and tokens."""
    corpus = load_segmented_corpus(spark, corpus_dir, 1, require_segments=needs_segments(spec, hyper),
                                   ordered=needs_order(spec, hyper))
    try:
        blocks = [block for _, block in corpus.blocks.collect()]
    finally:
        corpus.blocks.unpersist()
        storage.delete(corpus_dir)
    keys, counts = [kept.keys], [kept.counts.astype(np.int64)]
    for block in blocks:
        k, c = model.table_counts(model.prepare_block(block), None, None)["bigrams"]
        keys.append(np.asarray(k, np.int64))
        counts.append(-np.asarray(c, np.int64).reshape(-1, 1))
    out = merge_keyed(1, np.concatenate(keys), np.vstack(counts))
    if (out.counts < 0).any():
        raise RuntimeError("a revised document's old copy has bigrams the model never counted")
    return out, {"documents": sum(b.n_docs for b in blocks), "tokens": sum(b.n_tokens for b in blocks)}


def refresh_counts(spark, spec, base, corpus_dir: str | None, request, output: str, catalogue,
                   history: dict | None = None) -> dict:
    """bigram-lm: the batch ``corpus_dir`` counted and added to ``base``'s counts, the fit redone; writes the model
    files into ``output``; returns model.json's content. ``request.reinfer_old``: every document ingested (the
    root's ``history`` says where the base's training corpus is) and the batch counted instead, the model's counts
    left out: the same model (a retrain on the union), and the version's per-document tables (doc_perplexity,
    doc_topics) hold every document."""
    started = time.time()
    if corpus_dir is None:
        raise RefusedError(f"--model {spec.name}: the batch holds no new document, and its counts are the model: "
                           f"nothing would change")
    V_old = int(base.meta["vocab_size"])
    corpus_meta, vocab = open_corpus_meta(spark, corpus_dir)
    if vocab["term"].astype(str).tolist()[:V_old] != base.vocab["term"].astype(str).tolist()[:V_old]:
        raise RefusedError(f"{corpus_dir}: its vocabulary does not extend the model's")
    V = len(vocab)
    model = make_model(spec, 1, V, catalogue)
    start = dict(base.meta.get("initial_hyper") or {})
    if start.get("beta") == float(V_old):          # train's default beta is V: over the grown vocabulary
        start["beta"] = None
    hyper = model.initial_hyper(**{k: v for k, v in start.items() if k != "base_measure"})
    keys, counts = (storage.load_npy(storage.join(base.directory, f"{name}.npy"))
                    for name in ("bigram_keys", "bigram_counts"))
    counted, old, saved = corpus_dir, {"documents": 0, "tokens": 0}, base.meta.get("hyper")
    if request.reinfer_old:         # every document counted again: the per-document tables cover them all
        counted = every_document(spark, request.root, history or {}, corpus_dir, output)
    else:
        bigrams = rekeyed_bigrams(keys.astype(np.int64), counts, V_old, V)
        revised = revised_ids(output)
        if revised:                 # a revised document's old copy leaves the counts (its new text is counted)
            bigrams, old = without_old_copies(spark, model, bigrams, old_copies(
                spark, request.root, history or {}, corpus_dir, output, revised), spec, saved)
        model.kept_counts = {"bigrams": bigrams}
    corpus = load_segmented_corpus(spark, counted, request.partitions, require_segments=needs_segments(spec, saved),
                                   ordered=needs_order(spec, saved))
    seed = int(base.meta.get("seed") or 0) if request.seed is None else int(request.seed)
    settings = GibbsSettings(SampleSchedule.resolve(1), seed=seed)
    work = storage.join(output, WORK)
    engine = GibbsEngine(spark.sparkContext, model, settings, work)
    try:
        result = engine.fit(corpus.blocks, corpus.num_partitions, hyper)
        write_model_files(spark, model, result, output, vocab, None)
        publish.step("model-written")         # a test kills the run here: the version half written
    finally:
        engine.release()
        corpus.blocks.unpersist()
    storage.delete(work)
    if counted != corpus_dir:
        storage.delete(counted)
    data = base.meta.get("data") or {}
    meta = dict(base.meta)
    meta.update({"vocab_size": V, **result.meta(), "initial_hyper": hyper, "seed": seed,
                 **model_store.run_stamp(started), "revised_out": old["documents"]})
    kept = {"documents": 0, "tokens": 0} if counted != corpus_dir else data
    meta["data"] = dict(data, documents=int(kept.get("documents") or 0) - old["documents"] + result.num_documents,
                        tokens=int(kept.get("tokens") or 0) - old["tokens"] + result.num_tokens, split="all",
                        heldout_fraction=0.0)
    meta.pop("heldout", None)
    meta.update(model.describe())
    storage.save_json(storage.join(output, "model.json"), meta)
    outputs.plot_trace(storage.join(output, "loglik.png"), meta["trace"], f"{model.display_name}: counts")
    log.info("%s: the batch's %d documents (%d tokens) counted and added to the model's; V %d -> %d",
             model.name, result.num_documents, result.num_tokens, V_old, V)
    copy_tokenizer(base.directory, output)
    topics_text.write_topics_file(output, 10)
    return meta
