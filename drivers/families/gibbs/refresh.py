"""``refresh`` of a Gibbs model: its chain continued from the saved state, the new documents sampled in.

The model directory keeps the chain of its last iteration N (``chain/``, :mod:`drivers.engines.gibbs.chain`): the
P partitions' blocks and states and the count tables. A refresh with M iterations

1. copies the P blocks and states into a new checkpoint directory (untouched: the old documents keep their
   assignments, and their partitions keep their numbers, so their draws stay ``task_seed(seed, t, p)``), less
   the old copies of the batch's revised documents (:mod:`drivers.families.gibbs.revisions`: each id once, the
   tables then recounted from the kept states);
2. extends the count tables to the grown vocabulary (new words' rows start at zero: ids only grow) and puts the
   new documents in Q new partitions P..P+Q-1, each initialised as the engine initialises a partition
   (``model.initial_state(block, hyper, task_seed(seed, 0, p))``) and its counts added to the tables;
3. resumes the engine on the P+Q partitions at iteration N for iterations N+1..N+M (samples: the refresh's own
   schedule of M iterations, shifted by N; the samples of the first run are not reused).

Where the data are the same (no new document: ``refresh --mode chain`` with a batch that holds nothing new),
step 2 adds nothing and the refresh *is* the engine's resume: the chain equals an uninterrupted run of N+M
iterations with the same seed, burn-in N + the refresh's burn-in, the same lag and samples, bit for bit
(tests/commands/test_refresh_gibbs.py). Each iteration sweeps every document, old and new: a refresh costs M
iterations over the union.

A model with a driver-side global step (dp-mixture, cluster-lda: clusters renumbered, concentrations sampled;
tlm: Gibbs EM's M-step or the slice sampler; pdp-network: concentrations and discounts) has the step after
iteration N skipped by the first run (nothing samples after it). The chain keeps the partitions' statistics of
iteration N (``last_stats``), so the refresh takes that step first, with the model of the old vocabulary and the
seed the uninterrupted run would give it (``task_seed(seed, N, DRIVER_PARTITION, 4)``); its directive (cluster
ids renumbered) is applied to the old partitions' states as they are copied (the same state their next sweep
would see), then the tables and hyperparameters grow to the new vocabulary (the model's ``grown_chain``: tlm
re-keys its bigram table, dp-mixture pads its clusters' word columns).

A model whose tables are bound to more of the corpus than its size (the tree models: a table per edge of a
prior tree over the vocabulary) grows in ``continued_chain``: the tree grows with the vocabulary, the old
partitions' words and paths move onto it (:mod:`drivers.models.tree.chain_growth`) and the tables are recounted
from the moved states. A version's per-document tables (doc_topics, segment_topics, doc_clusters) hold the batch's
documents, written by the batch's partitions alone (``--reinfer-old``: every document's).

pdp-network in whole-network mode (one partition holding the whole network) takes the batch's documents into that
partition instead of new ones: its ``continued_chain`` returns a rewrite with the batch's ``doc_ids``
(:mod:`drivers.models.pdp_network.whole_refresh`); no new partition is made, the version's per-document tables hold
those ids' rows, and ``--chain-sweeps new`` is refused (nothing would sweep the batch).

cluster-lda's author variant keeps every document's authors and lets new authors in
(:mod:`drivers.models.cluster_lda.authors`; the refresh carries the input's author column into the batch's
corpus, :mod:`drivers.refresh.batch_columns`).

A model without latent variables (bigram-lm: its counts are the model) is refreshed by
:mod:`drivers.families.gibbs.refresh_counts` (the batch counted and added). Refused (one line, before the batch
is read): chains kept before the last iteration's statistics were.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from drivers import storage
from drivers.corpora import tokenizer
from drivers.corpora.aligned import aligned_vocab
from drivers.corpora.bow import open_corpus_meta
from drivers.corpora.files import CORPUS_JSON
from drivers.corpora.segmented import load_segmented_corpus
from drivers.engines.gibbs import chain, state as gibbs_state
from drivers.engines.gibbs.checkpoint import DriverCheckpoint
from drivers.engines.gibbs.engine import STATE_FORMAT, GibbsEngine
from drivers.engines.gibbs.settings import GibbsSettings, SampleSchedule
from drivers.engines.gibbs.tables import TableLayout, count_records, gather_tables, reduce_records
from drivers.families.gibbs.infer import proportion_paths, write_model_files
from drivers.families.gibbs.models import make_model, needs_order, needs_segments
from drivers.families.gibbs.revisions import RevisedOut
from drivers.refresh.triage import revised_ids
from drivers.spark_parquet import read_parquet
from drivers.store import model_store, outputs, publish, topics_text
from inference.errors import RefusedError
from inference.gibbs.model import DRIVER_PARTITION, GibbsModel, task_seed
from inference.gibbs.tables import KeyedCounts, merge
from inference.layout import VocabLayout
from partitioners.topic import STATISTICS_KEY

log = logging.getLogger("spark_topics.refresh")

WORK = "work-chain"


def refusal(spec, meta: dict | None = None) -> str | None:
    """Why the model of ``spec`` (trained as model.json's ``meta`` says, when given) cannot continue its chain
    (None: it can)."""
    cls = spec.model_class()
    why = cls.chain_refusal({k: (meta or {}).get(k) for k in cls.construction_options})
    return None if why is None else f"--model {spec.name} {why}: retrain on the union"


def check_refreshable(spec, meta: dict | None = None) -> None:
    why = refusal(spec, meta)
    if why is not None:
        raise RefusedError(f"refresh is not supported for {why}")


def has_global_step(model: GibbsModel, hyper: dict | None = None) -> bool:
    """Whether the model's global step can change its chain (under the chain's ``hyper``, when given: lda-gibbs
    steps only with --beta-update)."""
    return type(model).global_step is not GibbsModel.global_step and type(model).steps_globally(hyper)


def stepped_chain(model: GibbsModel, base_dir: str, N: int, tables: dict, hyper: dict, seed: int):
    """The driver's global step after the kept chain's last iteration N (skipped by the run that kept it):
    ``(tables, hyper, directive)`` as the uninterrupted run would have them before iteration N + 1."""
    if not has_global_step(model, hyper):
        return tables, hyper, None
    parts = chain.load_last_stats(base_dir, N)
    if parts is None:
        raise RefusedError(f"{base_dir}: its chain does not keep the statistics of its last iteration (kept before "
                           f"refresh took {model.name}'s driver-side step): retrain it to refresh it")
    stats = parts if model.stats_by_partition else GibbsEngine.summed_stats(parts)
    stepped, hyper, directive = model.global_step(tables, hyper, stats, task_seed(seed, N, DRIVER_PARTITION, 4))
    return stepped, hyper, directive


def continued_schedule(first_iterations: int, request) -> SampleSchedule:
    """The refresh's schedule: ``request.iterations`` more iterations after the chain's ``first_iterations``,
    the samples of a run of that many iterations (defaults as ``train``'s) shifted by ``first_iterations``."""
    own = SampleSchedule.resolve(request.iterations)
    return SampleSchedule(first_iterations + own.iterations, first_iterations + own.burn_in, own.lag, own.samples)


def sample_in_task(q, items, model: GibbsModel, hyper: dict, seed: int, offset: int, iteration: int,
                   directory: str, layout: TableLayout, run: str):
    """New partition ``offset + q``: its block staged, its state initialised as the engine initialises a
    partition and written as of ``iteration``; emits its counts and its record (as a synchronisation does)."""
    records = list(items)
    if len(records) != 1:
        raise RuntimeError(f"partition {q} expects one block, got {len(records)}")
    p, orig = offset + q, records[0][1]
    gibbs_state.save_block(directory, p, orig)
    item = gibbs_state.new_item(model, orig)
    block = item["block"]
    item["state"] = model.initial_state(block, hyper, task_seed(seed, 0, p))
    model.check_state(block, item["state"])
    gibbs_state.checkin(run, p, item, directory, iteration)
    yield from count_records(q, model.table_counts(block, item["state"], (item["vocab_ids"], item["local"])), layout)
    yield STATISTICS_KEY, (q, np.zeros(0), block.n_docs, block.n_tokens, 0.0, [])


def refresh_chain(spark, spec, base, corpus_dir: str | None, request, output: str, catalogue) -> dict:
    """Continue ``base``'s chain on its documents and those of the prepared batch ``corpus_dir`` (None: no new
    document) for ``request.iterations`` iterations; writes the model files and its chain into ``output``;
    returns model.json's content."""
    started = time.time()
    check_refreshable(spec, base.meta)
    chain_meta = chain.read_chain_meta(base.directory)
    N, P = int(chain_meta["iteration"]), int(chain_meta["fingerprint"]["partitions"])
    seed = int(chain_meta["fingerprint"]["seed"] if request.seed is None else request.seed)
    K, V_old = int(chain_meta["fingerprint"]["topics"]), int(base.meta["vocab_size"])
    batch = None if corpus_dir is None else BatchVocabulary.open(spark, corpus_dir, base.meta.get("languages"))
    vocab = base.vocab if batch is None else batch.vocab
    V = len(vocab)
    cls = spec.model_class()
    construction = {k: base.meta.get(k) for k in cls.construction_options}
    hyper = chain_meta["hyper"]
    old_model, model = (make_model(spec, K, size, catalogue, **construction) for size in (V_old, V))
    old_model.bind_hyper(hyper)
    model.bind_hyper(hyper)
    old_model.bind_directory(base.directory)
    if not model.continuation_moves_words and vocab["term"].astype(str).tolist()[:V_old] != \
            base.vocab["term"].astype(str).tolist()[:V_old]:      # (every mode's one check, before the chain moves)
        raise RefusedError(f"{corpus_dir}: its vocabulary does not extend the model's")
    rewrite = model.continued_chain(spark, old_model, base, batch, seed, N)
    taken = getattr(rewrite, "doc_ids", None)     # the batch's documents put in the old partition (whole-network mode)
    tables = chain.load_chain_tables(base.directory, old_model.count_tables(), N)
    tables, hyper, directive = stepped_chain(old_model, base.directory, N, tables, hyper, seed)
    if rewrite is None:
        tables, hyper = model.grown_chain(tables, hyper, V_old)
    declared = model.count_tables()
    work = storage.join(output, WORK)
    frozen = request.chain_sweeps == "new"
    if frozen and taken is not None:
        raise RefusedError(f"refresh --chain-sweeps new: {model.name} in whole-network mode sweeps its one partition")
    revised = revised_ids(output)
    revisions = RevisedOut(model, revised, rewrite) if revised else None
    chain.copy_chain(base.directory, work, N, P, frozen=frozen, apply_directive=None if directive is None else (
        lambda block, state: old_model.apply_directive(old_model.prepare_block(block), state, directive)),
        rewrite=revisions or rewrite)
    if rewrite is not None or revisions:   # the states moved onto the grown model or lost documents: recounted
        tables = recounted_tables(model, work, N, P)
    Q, documents, tokens = 0, int(chain_meta["documents"]), int(chain_meta["tokens"])
    if taken is not None:
        documents, tokens = documents + rewrite.documents, tokens + rewrite.tokens
    if revisions:
        documents, tokens = documents - revisions.documents, tokens - revisions.tokens
        log.info("%s: %d revised documents' old copies (%d tokens) taken out of the chain", model.name,
                 revisions.found, revisions.tokens)
    if corpus_dir is not None and taken is None:
        Q = request.partitions or max(1, min(P, math.ceil(P * int(batch.meta.get("tokens") or 1)
                                                         / max(1, tokens))))
        corpus = load_segmented_corpus(spark, corpus_dir, Q, require_segments=needs_segments(spec, hyper),
                                       ordered=needs_order(spec, hyper),
                                       separate_languages=cls.aligned_documents_per == "language")
        Q = corpus.num_partitions
        layout = TableLayout(declared, 1)
        spark.sparkContext.setJobDescription(f"refresh: the batch's documents into partitions {P}..{P + Q - 1}")
        try:
            records = corpus.blocks.mapPartitionsWithIndex(partial(
                sample_in_task, model=model, hyper=hyper, seed=seed, offset=P, iteration=N, directory=work,
                layout=layout, run=f"refresh-{N}")).collect()
        finally:
            corpus.blocks.unpersist()
        added, parts = gather_tables(reduce_records(records, layout), layout, Q)
        tables = {t.name: merge(t, [_rows(tables[t.name]), _rows(added[t.name])]) for t in declared}
        documents += sum(r[2] for r in parts)
        tokens += sum(r[3] for r in parts)
    schedule = continued_schedule(N, request)
    settings = GibbsSettings(schedule, seed=seed, checkpoint_every=int(base.meta.get("checkpoint_every") or 10),
                             sweeps_per_sync=int(base.meta.get("sweeps_per_sync") or 1))
    fingerprint = {"model": model.name, "topics": K, "vocab_size": V, "partitions": P + Q, "seed": seed,
                   "schedule": schedule.to_json(), "sweeps_per_sync": settings.sweeps_per_sync,
                   "state_format": STATE_FORMAT}
    DriverCheckpoint(work, settings).save(N, dict(chain_meta, fingerprint=fingerprint, hyper=hyper, samples=0,
                                                  documents=documents, tokens=tokens),
                                          TableLayout(declared, 1), tables, None, None)
    log.info("%s: continuing the chain of %s after iteration %d: %d old partitions, %d new (%d documents, %d "
             "tokens in all), V %d -> %d, iterations %d-%d", model.name, base.directory, N, P, Q, documents, tokens,
             V_old, V, N + 1, schedule.iterations)
    sc = spark.sparkContext
    blocks = sc.parallelize(range(P + Q), P + Q).map(lambda p: (p, gibbs_state.load_block(work, p)))
    engine = GibbsEngine(sc, model, settings, work)
    try:
        result = engine.fit(blocks, P + Q, hyper, resume=True, fingerprint={})
        write_model_files(spark, model, result, output, vocab, batch_layout(base.meta, batch),   # the batch's
                          first_partition=0 if request.reinfer_old or Q == 0 else P,     # partitions or documents
                          documents=None if request.reinfer_old else taken)
        publish.step("model-written")         # a test kills the run here: the version half written
        chain.save_chain(work, output, result.iterations, declared)
    finally:
        engine.release()
    if not request.reinfer_old and Q == 0 and taken is None:
        empty_document_tables(spark, model, output)
    storage.delete(work)
    meta = dict(base.meta)
    for key in ("heldout", "alpha"):
        meta.pop(key, None)
    layout = batch_layout(base.meta, batch)
    if layout is not None:
        meta["vocab_sizes"] = dict(zip(layout.languages, layout.sizes()))
    meta.update({"vocab_size": V, **result.meta(), **schedule.to_json(), "seed": seed,
                 **model_store.run_stamp(started),
                 "chain": {"continued_from": N, "old_partitions": P, "new_partitions": Q,
                           "swept": "new documents" if frozen else "all documents"},
                 "revised_out": revisions.found if revisions else 0})     # revised documents' old copies left
    meta["data"] = dict(base.meta.get("data") or {}, documents=result.num_documents, tokens=result.num_tokens,
                        split="all", heldout_fraction=0.0)
    meta.update(model.describe())
    storage.save_json(storage.join(output, "model.json"), meta)
    outputs.plot_trace(storage.join(output, "loglik.png"), meta["trace"], f"{model.display_name}: Gibbs sampler")
    copy_tokenizer(base.directory, output)
    topics_text.write_topics_file(output, 10)
    return meta


@dataclass(frozen=True)
class BatchVocabulary:
    """A prepared batch's corpus.json, vocabulary and (an aligned corpus) layout, read before its documents."""
    directory: str
    meta: dict
    vocab: pd.DataFrame
    layout: VocabLayout | None

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @classmethod
    def open(cls, spark, corpus_dir: str, languages: list | None) -> "BatchVocabulary":
        if languages:
            vocab, layout = aligned_vocab(corpus_dir, languages)
            return cls(corpus_dir, storage.load_json(storage.join(corpus_dir, CORPUS_JSON)), vocab, layout)
        meta, vocab = open_corpus_meta(spark, corpus_dir)
        return cls(corpus_dir, meta, vocab, None)


def batch_layout(meta: dict, batch: BatchVocabulary | None) -> VocabLayout | None:
    """The languages' vocabulary layout of the refreshed model (None: monolingual)."""
    if batch is not None or not meta.get("languages"):
        return None if batch is None else batch.layout
    return VocabLayout.from_sizes(meta["languages"], [meta["vocab_sizes"][l] for l in meta["languages"]])


def recounted_tables(model: GibbsModel, directory: str, iteration: int, partitions: int) -> dict:
    """The count tables of ``model`` as the sum of the ``partitions`` states of ``iteration`` kept in the checkpoint
    ``directory`` (each partition's ``table_counts``)."""
    declared = model.count_tables()
    contributions = {t.name: [] for t in declared}
    for p in range(partitions):
        item = gibbs_state.new_item(model, gibbs_state.load_block(directory, p))
        state = gibbs_state.read_state(directory, iteration, p)
        state.pop(chain.FROZEN, None)
        counted = model.table_counts(item["block"], state, (item["vocab_ids"], item["local"]))
        for name, value in counted.items():
            contributions[name].append(value)
    return {t.name: merge(t, contributions[t.name]) for t in declared}


def _rows(value) -> tuple:
    """A table's value as one contribution ``(row keys, counts)`` (:func:`inference.gibbs.tables.merge`)."""
    if isinstance(value, KeyedCounts):
        return value.keys, value.counts
    return np.arange(value.shape[0], dtype=np.int64), value


def empty_document_tables(spark, model: GibbsModel, output: str) -> None:
    """A version without a new document: its per-document tables (doc_topics.parquet, segment_topics.parquet and
    the model's own) keep their columns and no row (the root's table holds every version's rows; ``--reinfer-old``
    keeps every document's, re-estimated by the continued chain). The tables of a version with new documents hold
    theirs only: those of the batch's partitions (:func:`write_model_files`), without a job or the ids."""
    for path in proportion_paths(model, output):
        if not storage.exists(path):
            continue
        everything = path[:-len(".parquet")] + ".all.parquet"
        storage.move(path, everything)
        read_parquet(spark, everything).limit(0).coalesce(1).write.parquet(path)
        storage.delete(everything)


def copy_tokenizer(source: str, target: str) -> None:
    for name in storage.list_dir(source):
        if tokenizer.is_tokenizer_file(name):
            storage.copy_tree(storage.join(source, name), storage.join(target, name))
