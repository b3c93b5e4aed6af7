"""``spark-topics infer`` for the Gibbs models (lda-gibbs, stm, seqlda, adatm): topic proportions of new documents.

Every new document is estimated as a held-out one (inference/gibbs/heldout.py):
the model's own sampler runs on it with the topics fixed to the trained
posterior mean phi-hat and the trained hyperparameters, ``--sweeps`` sweeps,
and the document and segment proportions (mu-hat, nu-hat: eqs 5.5/5.6, 6.8/6.9,
7.11/7.12; LDA: its document's) are averaged over ``--samples`` samples in the
second half. Written as in the model directory: ``doc_topics.parquet``
(doc_id, theta) and ``segment_topics.parquet`` (doc_id, segment, theta), one
Parquet part per partition, Arrow columns. Draws are seeded by (seed, sweep,
partition), so a retried task writes the same rows.

Raw text is first prepared with the model's vocabulary and its training
tokenizer, cut into segments as the training corpus was (``--segments``
overrides it). Documents without a known word are rejected by ``prepare``
(``OUT_DIR/corpus/rejects``, reason ``empty``) and counted, not written.
"""
from __future__ import annotations

import logging
from functools import partial

import numpy as np

from drivers import storage
from inference.gibbs.heldout import HeldoutSchedule, frozen_chain
from inference.gibbs.model import GibbsModel

log = logging.getLogger("spark_topics.infer")


def _infer_task(partition, items, model: GibbsModel, bc, schedule: HeldoutSchedule, seed: int):
    """(partition, item) with the sample sums of the partition's documents, for ``write_proportions``."""
    hyper, phi_vk = bc.value
    for _, orig in items:
        block = model.prepare_block(orig)
        if block.n_tokens == 0:          # an empty partition (prepare keeps no document without a known word)
            continue
        acc = {"doc": np.zeros((block.n_docs, model.num_topics)),
               "seg": np.zeros((block.n_segments, model.num_topics)), "samples": np.zeros(1)}
        for state in frozen_chain(model, block, hyper, phi_vk, schedule, seed, partition):
            acc["doc"] += model.doc_topic(block, state, hyper)
            acc["seg"] += model.segment_topic(block, state, hyper)
            acc["samples"] += 1
        yield partition, {"orig": orig, "block": block, "acc": acc}


def training_segments(meta: dict) -> str | None:
    """How the model's training corpus was cut into segments (``prepare --segments``), if it says."""
    corpus_dir = (meta.get("data") or {}).get("corpus")
    path = storage.join(corpus_dir, "corpus.json") if corpus_dir else None
    if path and storage.exists(path):
        return (storage.load_json(path).get("options") or {}).get("segments")
    return None


def infer_gibbs(spark, model_dir: str, corpus_dir: str, output_dir: str, sweeps: int = 50, samples: int = 5,
                seed: int = 0, partitions: int | None = None) -> dict:
    """Document and segment topic proportions of every document of a prepared corpus (see module doc)."""
    from jobs.infer import require_model_vocabulary
    from jobs.segments import load_segmented_corpus
    from jobs.train_gibbs import NEEDS_SEGMENTS, open_trained, write_proportions

    saved, model = open_trained(model_dir)
    meta = saved.meta
    corpus = load_segmented_corpus(spark, corpus_dir, partitions, require_segments=meta["model"] in NEEDS_SEGMENTS)
    sc = spark.sparkContext
    bc = None
    try:
        require_model_vocabulary(saved, corpus)
        schedule = HeldoutSchedule.default(sweeps, samples)
        sc.setJobDescription(f"infer ({meta['model']}): {sweeps} sweeps per document, topics fixed")
        bc = sc.broadcast((meta["hyper"], np.ascontiguousarray(saved.lambda_.T, dtype=np.float64)))
        items = corpus.blocks.mapPartitionsWithIndex(partial(_infer_task, model=model, bc=bc, schedule=schedule,
                                                             seed=seed))
        write_proportions(spark, model, items, output_dir)
    finally:
        if bc is not None:
            bc.destroy()
        corpus.blocks.unpersist()
        sc.setJobDescription(None)
    return {"documents": corpus.num_documents, "segments": corpus.num_segments, "tokens": corpus.num_tokens,
            "sweeps": sweeps, "samples": schedule.samples, "seed": seed,
            "output": storage.join(output_dir, "doc_topics.parquet"),
            "segment_output": storage.join(output_dir, "segment_topics.parquet")}
