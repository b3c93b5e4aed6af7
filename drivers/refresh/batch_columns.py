"""A refreshed root's batches keep the columns its model's training corpus kept (``prepare --keep-columns``: a
document's authors, date, ...): the refresh reads them with the batch's rows (in this process or with Spark, as
``prepare --keep-columns`` reads them: :func:`drivers.refresh.batch_in_process.read_batch`,
:func:`drivers.refresh.update.classify`) and writes them into the batch's prepared corpus, so the model reads them
there as it read its training corpus' (cluster-lda's ``--author-column``) and the version's doc_topics carries
them as ``train``'s does (:func:`drivers.store.kept_columns.carry_kept_columns`)."""
from __future__ import annotations


def columns_to_keep(meta: dict) -> list[str]:
    """The input columns a batch of the model of ``meta`` (model.json) keeps: its ``kept_columns`` and the author
    variant's ``author_column``."""
    columns = list(meta.get("kept_columns") or ())
    if meta.get("author_column") and meta["author_column"] not in columns:
        columns.append(meta["author_column"])
    return columns
