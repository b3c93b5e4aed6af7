"""``infer`` of a small corpus with a Gibbs model in this process, without Spark: the corpus cut into the blocks
Spark makes (:mod:`drivers.corpora.in_process`: the partition of every document by Spark's murmur3 hash of its id,
sorted by id inside a block), each block sampled by the task the Spark job runs
(:func:`drivers.families.gibbs.infer.infer_task`, draws seeded by (seed, sweep, partition)) and written as the same
Parquet parts, so the tables are the Spark job's number for number (``tests/commands/test_conformance.py``
compares the two for every Gibbs model)."""
from __future__ import annotations

import logging

import numpy as np

from drivers import storage
from drivers.corpora import in_process as local_corpus
from drivers.families.gibbs.infer import infer_task, proportion_paths, proportion_tables
from drivers.families.gibbs.models import needs_order, needs_segments
from drivers.progress import ticking
from drivers.store.model_store import require_same_vocabulary
from inference.gibbs.heldout import HeldoutSchedule

log = logging.getLogger("spark_topics.infer")


def infer_in_process(trained, corpus_dir: str, output_dir: str, sweeps: int, samples: int, seed: int,
                     partitions: int | None, catalogue) -> dict:
    """As :func:`drivers.families.gibbs.infer.infer_gibbs`, in this process."""
    saved, model = trained
    spec = catalogue.of_meta(saved.meta)
    corpus = local_corpus.load_segmented_corpus(corpus_dir, partitions, needs_segments(spec, saved.meta["hyper"]),
                                                needs_order(spec, saved.meta["hyper"]))
    require_same_vocabulary(saved, corpus)
    schedule = HeldoutSchedule.default(sweeps, samples)
    bc = local_corpus.Shared((saved.meta["hyper"], np.ascontiguousarray(saved.lambda_.T, dtype=np.float64)))
    paths = proportion_paths(model, output_dir)
    for path in paths:
        if storage.exists(path):
            storage.delete(path)
    for p, block in ticking(corpus.blocks, len(corpus.blocks), "infer: blocks", log):
        for partition, item in infer_task(p, [(p, block)], model, bc, schedule, seed):
            for path, part in zip(paths, proportion_tables(model, partition, item)):
                storage.write_parquet(storage.join(path, f"part-{partition:05d}.parquet"), part)
    return {"documents": corpus.num_documents, "segments": corpus.num_segments, "tokens": corpus.num_tokens,
            "sweeps": sweeps, "samples": schedule.samples, "seed": seed,
            "output": storage.join(output_dir, "doc_topics.parquet"),
            "segment_output": storage.join(output_dir, "segment_topics.parquet")}
