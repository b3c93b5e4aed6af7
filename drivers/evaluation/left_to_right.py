"""``spark-topics evaluate --method left-to-right``: Wallach et al.'s (2009) left-to-right estimate of the test
documents' likelihood on Spark, for every family (the kernel: :mod:`inference.left_to_right`).

The training statistics are frozen and broadcast once (a Gibbs model with its trained tables and
hyperparameters, or LDA's E[beta] and alpha); every task scores its documents independently (each document's
particles are seeded by the run's seed, the document id and the particle), the driver collects one row per
document and sums them in document-id order, so the figures are the same for any partitioning, in local[1],
local[2] or on a cluster. This is the parallel form of the extract's §6.2: each test document on its own given
the training state (the thesis' sequential form also conditions on the earlier test documents).

Reported: bits per word R = -log2 p(w) / N (thesis 3.56; perplexity 2^R) by left-to-right and by importance
sampling (the mean of every particle's own product, unbiased for each document's p(w)), the scored tokens, the
out-of-vocabulary tokens skipped (those ``prepare`` removed from the test documents, recorded per document in
docs.parquet, plus any id outside the model's vocabulary), the time per scored token.
"""
from __future__ import annotations

import time

import numpy as np

from drivers import storage
from drivers.corpora.files import DOCS, keeps_text_order
from drivers.spark_parquet import read_parquet
from inference import left_to_right
from inference.left_to_right import IMPORTANCE, LEFT_TO_RIGHT, SCORED, SKIPPED, LeftToRight, bits_per_word


def _gibbs_scores(payload, block, settings: LeftToRight):
    model, hyper, phi_vk = payload
    return model.left_to_right(block, hyper, phi_vk, settings)


def _lda_scores(payload, block, settings: LeftToRight):
    alpha, phi_vk = payload
    return left_to_right.LeftToRightScores(
        left_to_right.lda_scores(block.doc_ids, block.token_ptr(), block.words, alpha, phi_vk, settings),
        left_to_right.LDA_PROTOCOL)


def gibbs_payload(model, hyper: dict, topic_word: np.ndarray, settings: LeftToRight) -> tuple:
    """What a Gibbs model's tasks need, broadcast once: the model (with its trained tables), its hyperparameters
    and phi as V x K; the hook runs once on an empty block here first, so a model that refuses does it on the
    driver, in one line."""
    from inference.gibbs.block import SegmentedBlock

    phi_vk = np.ascontiguousarray(np.asarray(topic_word, dtype=np.float64).T)
    empty = SegmentedBlock(np.zeros(0, dtype=object), np.zeros(1, np.int64), np.zeros(1, np.int64),
                           np.zeros(0, np.int32))
    model.left_to_right(empty, hyper, phi_vk, settings)
    return _gibbs_scores, (model, hyper, phi_vk)


def lda_payload(alpha, topic_word: np.ndarray) -> tuple:
    """LDA with fixed topics (a variational model's E[beta], rows normalised here) and its alpha."""
    topic_word = np.asarray(topic_word, dtype=np.float64)
    topic_word = topic_word / topic_word.sum(axis=1, keepdims=True)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (topic_word.shape[0],)).copy()
    return _lda_scores, (alpha, np.ascontiguousarray(topic_word.T))


def _task(items, bc, settings: LeftToRight):
    score, payload = bc.value
    for _, block in items:
        result = score(payload, block, settings)
        rows = np.asarray(result.per_document, dtype=np.float64)
        if rows.shape != (block.n_docs, left_to_right.COLUMNS):
            raise ValueError(f"left_to_right gave {rows.shape} scores for {block.n_docs} documents")
        for doc_id, row in zip(block.doc_ids, rows):
            yield str(doc_id), row, result.protocol


def score(spark, payload: tuple, blocks, settings: LeftToRight, description: str) -> dict:
    """Left-to-right figures of the documents of ``blocks`` (an RDD of ``(partition, SegmentedBlock)``; with
    ``spark`` None a list of them, scored in this process by the tasks' own code) under ``payload``
    (:func:`gibbs_payload` or :func:`lda_payload`)."""
    started = time.perf_counter()
    if spark is None:
        from drivers.corpora.in_process import Shared

        rows = list(_task(blocks, Shared(payload), settings))
    else:
        sc = spark.sparkContext
        sc.setJobDescription(f"{description}: left-to-right, {settings.particles} particles, resampling "
                             f"{'on' if settings.resample else 'off'}")
        bc = sc.broadcast(payload)
        try:
            rows = blocks.mapPartitions(lambda items: _task(items, bc, settings)).collect()
        finally:
            bc.destroy()
            sc.setJobDescription(None)
    seconds = time.perf_counter() - started
    rows.sort(key=lambda r: r[0])
    total = np.zeros(left_to_right.COLUMNS)
    for _, row, _ in rows:                       # in document-id order: the same sum for any partitioning
        total = total + row
    protocols = sorted({p for _, _, p in rows})
    tokens = int(total[SCORED])
    bpw = bits_per_word(total[LEFT_TO_RIGHT], tokens) if tokens else None
    bpw_is = bits_per_word(total[IMPORTANCE], tokens) if tokens else None
    return {"method": "left-to-right", "particles": settings.particles, "resample": settings.resample,
            "seed": settings.seed, "protocol": "; ".join(protocols),
            "loglik": float(total[LEFT_TO_RIGHT]), "loglik_importance": float(total[IMPORTANCE]),
            "bits_per_word": bpw, "perplexity": None if bpw is None else float(2.0 ** bpw),
            "bits_per_word_importance": bpw_is, "documents": len(rows), "tokens": tokens,
            "skipped_oov": int(total[SKIPPED]), "seconds": seconds,
            "seconds_per_token": seconds / tokens if tokens else None}


def removed_oov(spark, corpus_dir: str, where=None) -> int:
    """Out-of-vocabulary tokens ``prepare`` removed from the corpus' documents (docs.parquet ``n_oov``; ``where``:
    a Spark condition selecting the test documents; with ``spark`` None, every document, read in this process);
    0 for a corpus that does not record them."""
    path = storage.join(corpus_dir, DOCS)
    if not storage.exists(path):
        return 0
    if spark is None:
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        dataset = ds.dataset(path, format="parquet")
        if "n_oov" not in dataset.schema.names:
            return 0
        return int(pc.sum(dataset.to_table(columns=["n_oov"]).column(0)).as_py() or 0)
    from pyspark.sql import functions as F

    frame = read_parquet(spark, path)
    if "n_oov" not in frame.columns:
        return 0
    if where is not None:
        frame = frame.where(where)
    return int(frame.agg(F.sum("n_oov")).first()[0] or 0)


def with_removed_oov(result: dict, removed: int) -> dict:
    """The figures with the tokens ``prepare`` removed counted among the skipped ones."""
    return dict(result, skipped_oov=result["skipped_oov"] + int(removed), skipped_in_blocks=result["skipped_oov"],
                skipped_by_prepare=int(removed))


def token_order(segmented: bool) -> str:
    """How the test tokens were ordered: text order (a corpus with segments or ``prepare --ordered``), or grouped by
    word (a bag-of-words corpus: LDA's p(w) does not depend on the order, the estimate's variance does)."""
    return "text order" if segmented else "word order of the bag of words"


def format_metrics(metrics: dict) -> str:
    """The lines ``evaluate`` prints of the metrics of :func:`evaluate_topic_model` or the Gibbs family's."""
    model_type, r, test_documents = metrics["model_type"], metrics["left_to_right"], metrics["test_documents"]
    return "\n".join([
        f"left-to-right ({model_type}, {r['particles']} particles, resampling {'on' if r['resample'] else 'off'}, "
        f"{r['protocol']}): {r['bits_per_word']:.4f} bits per word, perplexity {r['perplexity']:.3f}",
        f"importance sampling (mean of the particles' products, unbiased for p(w_d)): "
        f"{r['bits_per_word_importance']:.4f} bits per word",
        f"{r['documents']} documents [{test_documents}], {r['tokens']} tokens scored in {r['token_order']}, "
        f"{r['skipped_oov']} out-of-vocabulary tokens skipped; {r['seconds']:.1f} s, "
        f"{1e3 * r['seconds_per_token']:.3f} ms per token",
    ])


def evaluate_topic_model(spark, model_dir: str, corpus_dir: str, settings: LeftToRight,
                         partitions: int | None = None) -> dict:
    """Left-to-right figures of a model of fixed topics (a variational model: LDA with E[beta], rows of lambda
    normalised, and its alpha) on every document of ``corpus_dir`` (tokens in text order when the corpus keeps
    it); with ``spark`` None in this process (the same blocks and figures)."""
    from drivers.corpora import in_process as local_corpus
    from drivers.corpora.aligned import is_aligned
    from drivers.corpora.segmented import load_segmented_corpus
    from drivers.store.model_store import load_model, require_same_vocabulary
    from inference.errors import UsageError

    model = load_model(model_dir)
    if model.languages or is_aligned(corpus_dir):
        raise UsageError("--method left-to-right scores monolingual models on monolingual corpora; "
                         f"{model_dir} is polylingual or {corpus_dir} is aligned")
    corpus_meta = storage.load_json(storage.join(corpus_dir, "corpus.json"))
    ordered = keeps_text_order(corpus_meta)
    test = local_corpus.load_segmented_corpus(corpus_dir, partitions, ordered=ordered) if spark is None else \
        load_segmented_corpus(spark, corpus_dir, partitions, ordered=ordered)
    try:
        require_same_vocabulary(model, test)
        result = score(spark, lda_payload(model.alpha, model.topic_word()), test.blocks, settings,
                       model.meta.get("model") or "lda")
    finally:
        local_corpus.release(test.blocks)
    result = with_removed_oov(result, removed_oov(spark, corpus_dir))
    result["token_order"] = token_order(test.segmented)
    return {"left_to_right": result, "model": model_dir, "model_type": model.meta.get("model") or "lda",
            "corpus": corpus_dir, "test_documents": "all", "seed": settings.seed, "topics": model.num_topics}
