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


def write_proportions(spark, model: GibbsModel, states, directory: str, heldout: bool | None = None,
                      documents=None) -> None:
    """doc_topics.parquet (doc_id, theta) and segment_topics.parquet (doc_id, segment, theta) (the model's
    ``document_proportions``), and the model's own per-document tables (``document_files``): each task writes its
    partition's rows (sorted by document, segments in order) as one Parquet part of each directory. ``heldout``
    (a model trained with a held-out split): every table gets a ``heldout`` column of that value, and True adds
    the parts (``heldout-<partition>.parquet``) to the directories the training documents' parts are in.
    ``documents``: the rows of those ids only (None: every document's)."""
    outputs.write_partition_tables(spark, states, proportion_paths(model, directory),
                                   partial(proportion_tables, model, heldout=heldout, documents=documents),
                                   "write document and segment topic proportions", "heldout" if heldout else "part")


def proportion_paths(model: GibbsModel, directory: str) -> list:
    """The directories :func:`write_proportions` fills: doc_topics, segment_topics and the model's own tables."""
    files = ("doc_topics.parquet", "segment_topics.parquet") + tuple(model.document_files)
    return [storage.join(directory, name) for name in files]


def proportion_tables(model: GibbsModel, _partition, item, heldout: bool | None = None, documents=None) -> list:
    """The Arrow tables of one partition's ``item``, in the order of :func:`proportion_paths` (``heldout``: with
    a ``heldout`` column of that value; ``documents``: the rows of those ids only)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    own = model.document_outputs(item)
    tables = list(outputs.proportion_tables(item["orig"], *model.document_proportions(item))) + \
        [outputs.columns_table(own[name]) for name in model.document_files]
    if documents is not None:
        keep = pa.array(sorted(documents), pa.string())
        tables = [t.filter(pc.is_in(t["doc_id"].cast(pa.string()), value_set=keep)) if "doc_id" in t.column_names
                  else t for t in tables]
    if heldout is None:
        return tables
    return [t.append_column("heldout", pa.array([heldout] * t.num_rows, pa.bool_())) for t in tables]


def write_model_files(spark, model, result, output: str, vocab, layout=None, heldout: bool | None = None,
                      first_partition: int = 0, documents=None) -> None:
    """The model files of a finished run (``result``: the engine's GibbsResult): topic_word.npy and the
    vocabulary, the document and segment proportions (``heldout`` False: a column saying these documents are
    the training split's; of the partitions from ``first_partition`` on, or of the ids ``documents``: a refresh's
    batch), the model's own files and arrays."""
    if not np.allclose(result.topic_word.sum(axis=1), 1.0):
        raise RuntimeError("topic_word rows do not sum to 1")
    storage.makedirs(output)
    model_store.save_matrix(output, "topic_word", result.topic_word, vocab, layout, normalise=True)
    model.bind_result(result)        # what the outputs and the predictive need of the final state
    states = result.states if not first_partition else result.states.mapPartitionsWithIndex(
        lambda p, items: items if p >= first_partition else iter(()), preservesPartitioning=True)
    write_proportions(spark, model, states, output, heldout, documents)      # an earlier partition: its state never read
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
    model.bind_scored_corpus(corpus_dir)
    meta = saved.meta
    spec = catalogue.of_meta(meta)
    corpus = load_segmented_corpus(spark, corpus_dir, partitions, require_segments=needs_segments(spec, meta["hyper"]),
                                   ordered=needs_order(spec, meta["hyper"]))
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


def write_heldout_proportions(spark, spec, model: GibbsModel, hyper: dict, topic_word: np.ndarray, request,
                              fraction: float, permute_seed: int | None = None, sweeps: int = 50,
                              samples: int = 5) -> dict:
    """The held-out split of a model trained with ``--heldout-fraction`` added to its doc_topics (and
    segment_topics, its own tables), ``heldout`` True: each whole document inferred as ``infer`` does (the
    model's sampler with the topics fixed, ``sweeps`` sweeps, ``samples`` samples, seeded by the training seed).
    An aligned corpus' split is not added (multilingual models infer by point estimates); returns what
    model.json says of the table."""
    test = load_segmented_corpus(spark, request.corpus, None, heldout_fraction=fraction, split="test",
                                 require_segments=needs_segments(spec, hyper), ordered=needs_order(spec, hyper),
                                 permute_seed=permute_seed,
                                 separate_languages=model.aligned_documents_per == "language")
    if test.layout is not None:
        test.blocks.unpersist()
        return {"covers": "the training split only", "heldout_documents_not_in_it": test.num_documents}
    sc = spark.sparkContext
    schedule = HeldoutSchedule.default(sweeps, samples)
    bc = sc.broadcast((hyper, np.ascontiguousarray(topic_word.T, dtype=np.float64)))
    try:
        items = test.blocks.mapPartitionsWithIndex(partial(infer_task, model=model, bc=bc, schedule=schedule,
                                                           seed=request.seed))
        write_proportions(spark, model, items, request.output, heldout=True)
    finally:
        bc.destroy()
        test.blocks.unpersist()
    return {"covers": "every document: the training split (heldout false) and the held-out split (heldout true)",
            "heldout_documents": test.num_documents,
            "heldout_theta": f"each whole document inferred with the topics fixed, as infer does ({sweeps} sweeps, "
                             f"{schedule.samples} samples, seed {request.seed})"}
