"""The variational family's refresh: the previous version's model fitted further on a batch of new documents.

Only the engine's plug-in points change (:class:`drivers.engines.variational.engine.VariationalEngine`): the start is
the
previous lambda and alpha (:class:`WarmStart`, new words at their prior), and by mode

* ``accumulate`` (streaming variational Bayes, Broderick et al. 2013): the previous posterior is the batch's
  prior, eta' = lambda_old (:class:`inference.priors.MatrixPrior`), so lambda = lambda_old + the batch's
  statistics, exactly the posterior after both; alpha by Newton-Raphson on the sums of E[log theta] of every
  document ingested so far (kept in model.json);
* ``online`` (Hoffman et al. 2010, thesis §5): lambda <- (1 - rho_t) lambda + rho_t (eta + D/|S| S) each EM
  iteration (:class:`inference.reducer.OnlineUpdate`), t counting the model's steps over all refreshes, D the
  documents seen so far (or ``--corpus-size``); old documents are forgotten at the rate rho sets; alpha moves
  by rho_t towards the batch's optimum;
* ``batch``: EM over the union of every document ingested (the base model's training corpus and each version's
  batch) from a cold start guided by the previous topics (:class:`GuidedStart`, ``--guide-weight`` pseudo-tokens
  per topic): the topics re-form over all the data as in a retrain, topic k grown from topic k. Its cost per EM
  iteration is a retrain's; it needs fewer iterations (10 matched a 50-iteration retrain in the benchmark).

The local step is the variational E-step or hybrid sampling, as for ``train``.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from drivers import storage
from drivers.corpora.files import data_version
from drivers.engines.variational.checkpoint import Checkpointer
from drivers.engines.variational.engine import VariationalEngine
from drivers.engines.variational.local_steps import EStep, HybridStep
from drivers.engines.variational.settings import EMSettings
from drivers.engines.variational.starts import GuidedStart, NewtonAlpha, OnlineAlpha, WarmStart
from drivers.families import TrainRequest
from drivers.families.variational import revisions
from drivers.families.variational.shared import VariationalTraining, check_python_memory, write_doc_topics
from drivers.corpora import tokenizer
from drivers.refresh.triage import revised_ids
from drivers.corpora.aligned import word_columns
from drivers.store import model_store, outputs, publish, topic_model, topics_text
from inference.errors import RefusedError
from inference.estep import compile_kernels
from inference.mapper import EStepSettings
from inference.priors import DirichletPrior, MatrixPrior, SymmetricPrior
from inference.reducer import BatchUpdate, OnlineUpdate

log = logging.getLogger("spark_topics.refresh")


def base_prior(model, base: topic_model.TopicModel, vocab: pd.DataFrame):
    """The ``model``'s own topic-word prior eta over the grown vocabulary ``vocab`` (``term``, ``id``): symmetric, or
    the model's (:meth:`VariationalModel.refreshed_prior`: lda's informed prior re-applied from prior_spec.json); a
    model trained before prior_spec.json existed keeps prior.parquet's entries and its new words get the symmetric
    eta. Returns (prior, topic names or None)."""
    eta = base.meta.get("eta")
    if not isinstance(eta, (int, float)):
        raise RefusedError(f"{base.directory}: refresh needs a symmetric eta in model.json, found {eta!r}")
    V = len(vocab)
    own = model.refreshed_prior(base, vocab, float(eta))
    if own is not None:
        return own
    path = storage.join(base.directory, "prior.parquet")
    if not storage.exists(path):
        return SymmetricPrior(float(eta), V), None
    log.warning("%s has no %s (trained by an older version): the informed prior's entries are kept, its new "
                "words get the symmetric eta", base.directory, model_store.PRIOR_SPEC)
    entries = model_store.read_parquet(path)
    overrides = {}
    for k, rows in entries.groupby("topic"):
        overrides[int(k)] = (rows["id"].to_numpy(), rows["eta"].to_numpy())
    return DirichletPrior(np.full(V, float(eta)), overrides), base.topic_names()


def refresh_model(spark, spec, base: topic_model.TopicModel, corpus_dir: str, request, history: dict,
                  output: str) -> dict:
    """Fit the batch in ``corpus_dir`` (its vocabulary: the base's, then the new words) from ``base`` as
    ``request.mode`` says; writes the model files into ``output``; returns model.json's content.
    ``history``: ``steps`` (online steps so far), ``documents`` (documents ingested so far) and
    ``alpha_statistics`` (their sum of E[log theta]), or None."""
    model = spec.model_class()()
    K = base.num_topics
    seed = request.seed if request.seed is not None else int(base.meta.get("seed", 0))
    train_request = TrainRequest(model=spec.name, corpus=corpus_dir, output=output, topics=K,
                                 iterations=request.iterations, seed=seed, partitions=request.partitions)
    corpus = model.open_corpus(spark, train_request)
    try:
        return _refresh(spark, model, base, corpus, request, history, train_request, seed)
    finally:
        corpus.blocks.unpersist()


@dataclass
class GrownStart:
    """A model's start on the grown vocabulary: its topic-word ``structure`` (the engine's layout), ``prior`` over
    it, the previous lambda carried over (``lambda_``: the old entries kept, new ones at their prior), topic names,
    and what model.json's entries become (``describe``)."""
    structure: object
    prior: object
    lambda_: np.ndarray
    topic_names: list | None = None
    describe: dict = field(default_factory=dict)


def carried_over(base: topic_model.TopicModel, vocab: pd.DataFrame, prior) -> np.ndarray:
    """The previous lambda over the grown vocabulary ``vocab`` of a model whose lambda columns are its words: each
    old word's column where (language, word) puts it now, a new word's at its prior (lambda_kv = eta_kv)."""
    lambda_ = np.vstack([prior.row(k) for k in range(base.num_topics)])
    lambda_[:, word_columns(base.vocab, vocab)] = base.lambda_
    return lambda_


def word_start(model, base: topic_model.TopicModel, corpus) -> GrownStart:
    """lda's start: its own prior re-applied to the grown vocabulary (:func:`base_prior`), new words appended."""
    prior, names = base_prior(model, base, corpus.vocab)
    return GrownStart(corpus.layout, prior, carried_over(base, corpus.vocab, prior), names)


def _refresh(spark, model, base, corpus, request, history: dict, train_request, seed: int) -> dict:
    output = train_request.output
    K, V, V_old = base.num_topics, corpus.vocab_size, len(base.vocab)
    compile_kernels()
    check_python_memory(spark.sparkContext, corpus, K, None)
    saved = base.meta.get("settings") or {}
    defaults = VariationalTraining()
    inference = request.inference or saved.get("inference", "variational")
    grown = model.refresh_start(spark, base, corpus) or word_start(model, base, corpus)
    topic_prior, topic_names = grown.prior, grown.topic_names
    prior = topic_prior
    prior_rows = np.vstack([prior.row(k) for k in range(K)])          # eta_k over the grown structure
    lambda_old = grown.lambda_
    n_batch = corpus.num_documents
    documents_before = int(history.get("documents") or 0)
    steps_before = int(history.get("steps") or 0)
    settings = EMSettings(num_topics=K, max_iterations=request.iterations, tol=request.tol,
                          estep=EStepSettings(saved.get("estep_tol", defaults.estep_tol),
                                              saved.get("estep_max_iter", defaults.estep_max_iter)),
                          optimize_alpha=saved.get("optimize_alpha", True), seed=seed,
                          restarts=saved.get("restarts", defaults.restarts),
                          schedule=saved.get("estep_schedule", defaults.estep_schedule))
    old = revisions.OldCopies(revised=len(revised_ids(output))) if request.mode == "batch" else revisions.old_copies(
        spark, model, train_request, request, history, corpus, lambda_old, base.alpha, grown.structure, settings)
    update, alpha_rule = BatchUpdate(), NewtonAlpha()
    start = WarmStart(lambda_old, base.alpha)
    if request.mode == "batch":
        start = GuidedStart(lambda_old - prior_rows, request.guide_weight)
    elif request.mode == "accumulate":
        stats = history.get("alpha_statistics")
        if stats is not None and old.alpha_statistics is not None:
            stats = np.asarray(stats, dtype=np.float64) - old.alpha_statistics
        alpha_rule = NewtonAlpha(stats, documents_before - old.documents) if stats is not None else NewtonAlpha()
        prior = MatrixPrior(old.cleaned(lambda_old, prior_rows), base.meta.get("eta"))
    elif request.mode == "online":
        documents = documents_before - old.documents + n_batch
        corpus_size = documents if request.corpus_size == "cumulative" else int(request.corpus_size)
        update = OnlineUpdate(request.tau0, request.kappa, corpus_size / max(n_batch, 1), steps_before)
        alpha_rule = OnlineAlpha(update)
        start = WarmStart(old.cleaned(lambda_old, prior_rows), base.alpha)
    if inference == "hybrid":
        warmup = saved.get("hybrid_alpha_warmup", defaults.hybrid_alpha_warmup)
        local_step = HybridStep(seed, saved.get("hybrid_burn_in", defaults.hybrid_burn_in),
                                saved.get("hybrid_samples", defaults.hybrid_samples),
                                saved.get("hybrid_weights", defaults.hybrid_weights) == "mean",
                                None if warmup == -1 else warmup)
    else:
        local_step = EStep(settings)
    checkpoint = storage.join(output, "_checkpoint")
    engine = VariationalEngine(spark.sparkContext, settings, prior, checkpoint, grown.structure, local_step=local_step,
                               update=update, start=start, alpha_rule=alpha_rule)
    log.info("refresh (%s, %s): K=%d, V=%d (%d new words), %d new documents, %d tokens, %d partitions",
             request.mode, inference, K, V, V - V_old, n_batch, corpus.meta.get("tokens", -1), corpus.num_partitions)
    started = time.time()
    result = engine.fit(corpus.blocks, corpus.num_partitions, V)
    meta = {key: value for key, value in base.meta.items() if key not in ("refresh", "prior")}
    meta.update({
        "topics": K, "vocab_size": V, **result.meta(), "eta": base.meta.get("eta"), "seed": seed,
        "settings": dict(saved, inference=inference),
        "data": {"corpus": corpus.directory, "version": data_version(corpus.meta),
                 "documents": n_batch, "tokens": corpus.meta.get("tokens")},
        **model_store.run_stamp(started)}, **grown.describe)
    if old.revised:             # the old copies' share of alpha's sums and the document count leave with them
        meta.update(revisions=old.describe(request.mode), revised_out=old.documents, revised_out_alpha_statistics=None
                    if old.alpha_statistics is None else old.alpha_statistics.tolist())
    if corpus.layout is not None:
        meta.update(languages=list(corpus.layout.languages),
                    vocab_sizes=dict(zip(corpus.layout.languages, corpus.layout.sizes())))
    if "prior" in base.meta:
        meta["prior"] = base.meta["prior"]
    model.save(output, meta, corpus, result.lambda_, grown.structure)
    publish.step("model-written")          # a test kills the run here: the version half written
    if topic_names is not None:
        model_store.save_prior(output, topic_prior, topic_names, corpus.vocab)
    spec_path = storage.join(base.directory, model_store.PRIOR_SPEC)
    if storage.exists(spec_path):
        storage.write_bytes(storage.join(output, model_store.PRIOR_SPEC), storage.read_bytes(spec_path))
    write_doc_topics(spark, corpus.blocks, result.gamma_dir, storage.join(output, "doc_topics.parquet"),
                     meta.get("topic_names"), local_step, result.alpha)
    if meta["elbo_trace"]:
        outputs.plot_elbo(storage.join(output, "elbo.png"), meta["elbo_trace"], hybrid=inference == "hybrid")
    for name in storage.list_dir(base.directory):
        if tokenizer.is_tokenizer_file(name):
            storage.write_bytes(storage.join(output, name), storage.read_bytes(storage.join(base.directory, name)))
    topics_text.write_topics_file(output, 10)
    Checkpointer(checkpoint).clear()
    return meta
