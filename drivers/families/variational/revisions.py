"""A revised document's old copy leaves a variational refresh (issue 30).

A revision (a known id with another text, :mod:`drivers.refresh.update`) is ingested with the batch; its old copy
(the id's latest text among the base model's training corpus and the committed versions' batches) is in the
parent's lambda and in the sums of E[log theta] and the document count kept in model.json. By mode:

* ``batch`` (and ``--reinfer-old``): the union holds each id's latest text only
  (:func:`drivers.refresh.sources.union_corpus`): exact, nothing here;
* ``accumulate``: the old copy's expected counts S_old leave the prior, eta' = max(lambda_old - S_old, eta), and its
  E[log theta] leaves alpha's sums (the document counted once);
* ``online``: the step starts from max(lambda_old - S_old, eta), the old copy's counts at the weight one document
  has in the posterior of the D documents seen (D counting the id once), then the usual steps.

S_old is an approximation: the old copy's expected counts **under the parent model** (lambda_old, alpha_old), one
variational E-step (the E-step of ``infer``, whatever the local step), not the counts as they were added. Those
came from the E-step of the last EM iteration of the fit that ingested the copy, under that iteration's lambda,
which no version keeps (a version keeps its result and its parent's; the base model's training kept neither), so
they cannot be recomputed without re-running that fit (for a base document: the base model's training). The
difference is the topics' movement since: small once EM converged. Recorded in model.json's ``revisions``.

An aligned corpus' revised tuple is read back per language (:func:`drivers.refresh.aligned_batches.union_corpus`)
and leaves as one document of the model's structure.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from drivers import storage
from drivers.engines.variational.engine import VariationalEngine
from drivers.engines.variational.local_steps import EStep
from drivers.engines.variational.starts import WarmStart
from drivers.refresh.triage import revised_ids
from drivers.refresh import reinfer
from inference.errors import RefusedError
from inference.priors import MatrixPrior
from inference.reducer import BatchUpdate

log = logging.getLogger("spark_topics.refresh")

#: model.json ``revisions.old_copies``: how the old copies left the model
HOW = {"batch": "not read: the union holds each id's latest text (exact)",
       "accumulate": "expected counts under the parent model taken out of the prior, clipped at eta (approximate: "
                     "not the counts as they were added)",
       "online": "expected counts under the parent model taken out of the start of the step, clipped at eta "
                 "(approximate)"}


@dataclass
class OldCopies:
    """What the batch's revisions take out: ``statistics`` (the old copies' expected counts over the model's
    parameters, None: none), ``alpha_statistics`` (their sum of E[log theta]), ``documents`` found, ``revised``
    (ids the ledger marks as revisions)."""
    statistics: np.ndarray | None = None
    alpha_statistics: np.ndarray | None = None
    documents: int = 0
    revised: int = 0
    kept_because: str | None = None       # why the old copies stay in the model (none found)

    def cleaned(self, lambda_: np.ndarray, prior_rows: np.ndarray) -> np.ndarray:
        """``lambda_`` without the old copies' counts, never below the prior."""
        if self.statistics is None:
            return lambda_
        return np.maximum(lambda_ - self.statistics, prior_rows)

    def describe(self, mode: str) -> dict:
        if mode != "batch" and self.statistics is None:
            return {"revised": self.revised, "old_copies_out": 0, "old_copies": f"kept: {self.kept_because}"}
        return {"revised": self.revised, "old_copies_out": self.documents if mode != "batch" else self.revised,
                "old_copies": HOW[mode]}


class _Recorded:
    """alpha's M-step of the old copies' E-step: alpha kept, the E-step's sums of E[log theta] recorded."""

    def __init__(self):
        self.alpha_statistics, self.documents = None, 0

    def __call__(self, iteration, alpha, alpha_stats, n_docs):
        self.alpha_statistics, self.documents = np.array(alpha_stats, dtype=np.float64), int(round(n_docs))
        return alpha


def old_copies(spark, model, train_request, request, history: dict, corpus, lambda_old: np.ndarray,
               alpha: np.ndarray, structure, settings) -> OldCopies:
    """The old copies of the documents the staged version (``train_request.output``) ingests as revisions (its
    ledger), their expected counts and E[log theta] under (``lambda_old``, ``alpha``) by one E-step on Spark (the
    refresh's engine, fixed: every document fitted to ``settings.estep``'s tolerance, no restarts). Not found (the
    base model's training corpus gone, or a copy the root no longer holds): kept, with a warning."""
    output = train_request.output
    revised = revised_ids(output)
    if not revised:
        return OldCopies()
    try:
        old_dir = reinfer.old_copies(spark, request.root, history, corpus.directory, output, revised)
    except RefusedError as e:
        log.warning("%d revised document(s): their old copies stay in the model (%s)", len(revised), e)
        return OldCopies(revised=len(revised), kept_because=str(e))
    opened = None
    try:
        opened = model.open_corpus(spark, replace(train_request, corpus=old_dir, iterations=1))
        if opened.num_documents == 0:
            return OldCopies(revised=len(revised), kept_because="no old copy found in the root's corpora")
        fixed = replace(settings, max_iterations=1, tol=0.0, schedule="fixed", restarts="never",
                        optimize_alpha=True, optimize_eta=False)
        recorded = _Recorded()
        engine = VariationalEngine(spark.sparkContext, fixed, MatrixPrior(lambda_old), storage.join(
            output, "_checkpoint-old-copies"), structure, local_step=EStep(fixed), update=BatchUpdate(),
            start=WarmStart(lambda_old, alpha), alpha_rule=recorded)
        result = engine.fit(opened.blocks, opened.num_partitions, opened.vocab_size)
        statistics = np.clip(result.lambda_ - lambda_old, 0.0, None)
        engine.checkpointer.clear()
        log.info("%d revised document(s): %d old copies (%d tokens) leave the model", len(revised),
                 recorded.documents, int(opened.meta.get("tokens") or 0))
        return OldCopies(statistics, recorded.alpha_statistics, recorded.documents, len(revised))
    finally:
        if opened is not None:
            opened.blocks.unpersist()
        storage.delete(old_dir)
