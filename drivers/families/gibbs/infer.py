"""Inference with a Gibbs model (``infer``): the model's own sampler on every new document with the topics fixed,
and the per-document outputs a run writes (document and segment topic proportions, the model's own tables)."""
from __future__ import annotations

from functools import partial

import numpy as np

from drivers import storage
from drivers.corpora.segmented import load_segmented_corpus
from drivers.families.variational.family import VariationalFamily
from drivers.families.gibbs.models import needs_order, needs_segments, open_trained
from drivers.store import model_store, outputs
from drivers.store.model_store import require_same_vocabulary
from inference.gibbs.heldout import HeldoutSchedule
from inference.gibbs.model import GibbsModel


def point_estimates():
    """The family that folds documents into fixed topics (variational E-steps): what ``infer`` and ``evaluate``
    use for a multilingual Gibbs model, whose posterior-mean topics (``PointTopicModel``) stand for E_q[beta]."""
    return VariationalFamily()


def write_proportions(spark, model: GibbsModel, states, directory: str) -> None:
    """doc_topics.parquet (doc_id, theta) and segment_topics.parquet (doc_id, segment, theta) (the model's
    ``document_proportions``), and the model's own per-document tables (``document_files``): each task writes its
    partition's rows (sorted by document, segments in order) as one Parquet part of each directory."""
    outputs.write_partition_tables(spark, states, proportion_paths(model, directory),
                                   partial(proportion_tables, model), "write document and segment topic proportions")


def proportion_paths(model: GibbsModel, directory: str) -> list:
    """The directories :func:`write_proportions` fills: doc_topics, segment_topics and the model's own tables."""
    files = ("doc_topics.parquet", "segment_topics.parquet") + tuple(model.document_files)
    return [storage.join(directory, name) for name in files]


def proportion_tables(model: GibbsModel, _partition, item) -> list:
    """The Arrow tables of one partition's ``item``, in the order of :func:`proportion_paths`."""
    own = model.document_outputs(item)
    return list(outputs.proportion_tables(item["orig"], *model.document_proportions(item))) + \
        [outputs.columns_table(own[name]) for name in model.document_files]


def write_model_files(spark, model, result, output: str, vocab, layout=None) -> None:
    """The model files of a finished run (``result``: the engine's GibbsResult): topic_word.npy and the
    vocabulary, the document and segment proportions, the model's own files and arrays."""
    if not np.allclose(result.topic_word.sum(axis=1), 1.0):
        raise RuntimeError("topic_word rows do not sum to 1")
    storage.makedirs(output)
    model_store.save_matrix(output, "topic_word", result.topic_word, vocab, layout, normalise=True)
    model.bind_result(result)        # what the outputs and the predictive need of the final state
    write_proportions(spark, model, result.states, output)
    model.save_files(output, result)
    arrays = model.saved_arrays()
    for name in model.array_files:
        storage.save_npy(storage.join(output, f"{name}.npy"), arrays[name])


def infer_task(partition, items, model: GibbsModel, bc, schedule: HeldoutSchedule, seed: int):
    """(partition, item) with the sample sums of the partition's documents, for ``write_proportions``."""
    hyper, phi_vk = bc.value
    for _, orig in items:
        block = model.prepare_block(orig)
        if block.n_tokens == 0:          # an empty partition (prepare keeps no document without a known word)
            continue
        yield partition, {"orig": orig, "block": block, "state": None,
                          "acc": model.infer_sums(block, hyper, phi_vk, schedule, seed, partition)}


def infer_gibbs(spark, trained, corpus_dir: str, output_dir: str, sweeps: int = 50, samples: int = 5,
                seed: int = 0, partitions: int | None = None, catalogue=None) -> dict:
    """Document and segment topic proportions of every document of a prepared corpus: the model's own
    sampler on each with the topics fixed to the trained phi-hat and the trained hyperparameters, ``sweeps``
    sweeps, proportions (mu-hat, nu-hat: eqs 5.5/5.6, 6.8/6.9, 7.11/7.12) averaged over ``samples`` samples
    in the second half; draws seeded by (seed, sweep, partition), so a retried task writes the same rows.
    ``catalogue``: the registry, where the model's spec is found."""
    saved, model = open_trained(trained, catalogue) if isinstance(trained, str) else trained
    meta = saved.meta
    spec = catalogue.of_meta(meta)
    corpus = load_segmented_corpus(spark, corpus_dir, partitions, require_segments=needs_segments(spec),
                                   ordered=needs_order(spec))
    sc = spark.sparkContext
    bc = None
    try:
        require_same_vocabulary(saved, corpus)
        schedule = HeldoutSchedule.default(sweeps, samples)
        sc.setJobDescription(f"infer ({meta['model']}): {sweeps} sweeps per document, topics fixed")
        bc = sc.broadcast((meta["hyper"], np.ascontiguousarray(saved.lambda_.T, dtype=np.float64)))
        items = corpus.blocks.mapPartitionsWithIndex(partial(infer_task, model=model, bc=bc, schedule=schedule,
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
