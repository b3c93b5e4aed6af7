"""``refresh --reinfer-old``: the new version's topic proportions for every document ingested so far, not only the
batch's, so the document-topic table's newest partition describes every document under the newest topics.

The earlier documents are read as they were prepared (the base model's training corpus and each committed
version's ``corpus/``, each id's latest text: :func:`drivers.refresh.sources.union_corpus`) and inferred with the
new version's topics (the variational E-step, as ``spark-topics infer``); the batch's own rows are inferred again
with the rest, so every row of the version comes from one inference. Its cost follows the history: it is a
request, not the default.
"""
from __future__ import annotations

import logging

from drivers import storage
from drivers.corpora.aligned import is_aligned
from drivers.refresh import aligned_batches, sources as refresh_sources
from drivers.store import model_root, model_store
from inference.errors import RefusedError

log = logging.getLogger("spark_topics.refresh")

DOC_TOPICS = "doc_topics.parquet"


def every_document(spark, root: str, history: dict, batch: str, staging: str) -> str:
    """Every document ``root`` has ingested and the prepared ``batch``, each id's latest text, as one corpus in
    ``staging`` (:func:`drivers.refresh.sources.union_corpus`); refused in one line when the base model's training
    corpus is not there any more."""
    chain_dirs = [model_root.version_dir(root, v) for v in model_root.chain(root)]
    oldest = chain_dirs[-1] if chain_dirs else None
    try:
        training = refresh_sources.training_corpus(root, oldest, history)
    except RefusedError as e:
        raise RefusedError(f"--reinfer-old: {str(e).split(';')[0]}; drop --reinfer-old") from None
    union_of = aligned_batches.union_corpus if is_aligned(batch) else refresh_sources.union_corpus
    return union_of(spark, training, chain_dirs, batch, staging)


def old_copies(spark, root: str, history: dict, batch: str, staging: str, ids) -> str:
    """The documents ``ids`` as the root held them before ``batch`` (revised documents' old copies: each id's latest
    text among the base model's training corpus and the committed versions' batches) as one corpus in ``staging``,
    prepared as ``batch`` (its vocabulary: ids only grow); refused in one line when the training corpus is gone."""
    chain_dirs = [model_root.version_dir(root, v) for v in model_root.chain(root)]
    try:
        training = refresh_sources.training_corpus(root, chain_dirs[-1] if chain_dirs else None, history)
    except RefusedError as e:
        raise RefusedError(f"a revised document's old copy: {str(e).split(';')[0]}; refresh with new document "
                           f"ids, or retrain on the union") from None
    union_of = aligned_batches.union_corpus if is_aligned(batch) else refresh_sources.union_corpus
    return union_of(spark, training, chain_dirs, batch, staging, output=storage.join(staging, "work-old-copies"),
                    ids=sorted(ids))


def reinfer_all(spark, root: str, staging: str, infer) -> int:
    """Replace ``staging``'s doc_topics.parquet (the batch's) by the proportions of every document the root has
    ingested, inferred under the staged version's topics by ``infer(model, corpus_dir, output_dir)`` (the
    family's ``infer``, writing output_dir/doc_topics.parquet); returns their number."""
    meta = storage.load_json(storage.join(staging, "model.json"))
    union = every_document(spark, root, meta.get("refresh") or {}, storage.join(staging, "corpus"), staging)
    out = storage.join(staging, "work-reinfer")
    try:
        model = model_store.read_model_files(staging)
        result = infer(model, union, out)
        target = storage.join(staging, DOC_TOPICS)
        storage.delete(target)
        storage.move(storage.join(out, DOC_TOPICS), target)
    finally:
        for path in (union, out):
            if storage.exists(path):
                storage.delete(path)
    log.info("--reinfer-old: topic proportions of %d documents under the new version", result["documents"])
    return int(result["documents"])
