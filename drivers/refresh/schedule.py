"""The default refresh (``--mode auto``): which mode a refresh runs, decided by the root's history.

A nightly ``accumulate`` refresh costs the batch only, but can only add to topics fitted to the documents of the
last full fit: its held-out perplexity falls behind a retrain on the union as the root grows (measured 10-27%).
A guided ``batch`` pass re-forms the topics over every document ingested (within 5% of a retrain or better) and
costs an EM pass over the union. ``auto`` runs the guided pass when the documents ingested reach ``growth`` times
the documents the last full fit covered (the base model's training, or the last guided pass), accumulate
otherwise: the union a guided pass reads at least doubles (default ``growth`` 2) between two passes, so the
guided passes over a root's life cost at most ``growth / (growth - 1)`` passes over its final union (a
geometric series) and the cost per ingested document stays constant however long the history.

The guided pass reads the batches as they were prepared (each version's ``corpus/``), never the raw text again.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from drivers.refresh import sources
from inference.errors import RefusedError

log = logging.getLogger("spark_topics.refresh")

GUIDED = "batch"
CHEAP = "accumulate"


@dataclass(frozen=True)
class Decision:
    mode: str            # the mode the refresh runs: accumulate or batch
    reason: str          # one line for the log and the report
    fitted: int          # documents the last full fit covered, before this refresh
    after: int           # documents ingested after this refresh


def fitted_documents(history: dict) -> int:
    """The documents of the root's last full fit: ``guided_documents`` as recorded by the last guided pass, else
    (a root whose last full fit is the base model) the base model's documents, else those ingested so far."""
    for key in ("guided_documents", "base_documents", "documents"):
        value = history.get(key)
        if value is not None:
            return int(value)
    return 0


def decide(history: dict, ingest: int, growth: float, guided_possible: bool, modes: tuple,
           revised: int = 0) -> Decision:
    """The mode of a ``--mode auto`` refresh ingesting ``ingest`` documents into a root with ``history`` (the
    previous version's ``model.json`` ``refresh`` block; the base model's counts on a first refresh);
    ``guided_possible``: the base model's training corpus is still readable; ``modes``: the model's refresh
    modes; ``revised``: how many of the ``ingest`` are revisions, which replace a document the root has (the union
    does not grow by them)."""
    fitted = fitted_documents(history)
    after = int(history.get("documents") or 0) + max(int(ingest) - int(revised), 0)
    if GUIDED not in modes:
        return Decision(CHEAP if CHEAP in modes else modes[0], f"the model has no guided pass ({', '.join(modes)})", fitted, after)
    if after < growth * max(fitted, 1):
        return Decision(CHEAP, f"{after} documents ingested < {growth:g} x {fitted} fitted by the last full fit",
                        fitted, after)
    if not guided_possible:
        return Decision(CHEAP, "a guided pass is due but the base model's training corpus is gone", fitted, after)
    return Decision(GUIDED, f"{after} documents ingested >= {growth:g} x {fitted} fitted by the last full fit",
                    fitted, after)


def recorded_fit(history: dict, mode: str, documents_total: int) -> int:
    """``guided_documents`` of the new version: all its documents after a guided pass, the last full fit's
    otherwise."""
    return int(documents_total) if mode == GUIDED else fitted_documents(history)


def guided_training(request, modes: tuple, root: str, chain_dirs: list, history: dict) -> str | None:
    """The base model's training corpus when this refresh may run a guided pass over the union (``--mode batch``:
    refused without it; ``--mode auto``: None without it, the refresh then accumulates)."""
    oldest = chain_dirs[-1] if chain_dirs else None
    if request.mode == "batch":
        return sources.training_corpus(root, oldest, history)
    if request.mode != "auto" or GUIDED not in modes:
        return None
    try:
        return sources.training_corpus(root, oldest, history)
    except RefusedError as e:
        log.warning("refresh --mode auto: no guided pass possible: %s", e)
        return None
