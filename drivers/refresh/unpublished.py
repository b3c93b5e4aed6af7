"""A refresh that publishes nothing (a dry run, a batch with nothing new, or none valid): its report, and the
batch's rejected rows kept where the user looks (``ROOT/rejects.unpublished/``)."""
from __future__ import annotations

from drivers import storage
from drivers.refresh.update import RefreshRequest
from inference.errors import UsageError


def unpublished(request: RefreshRequest, current: str | None, documents: dict, write_rejected) -> dict:
    """The report of a run that publishes nothing (a dry run, a batch with nothing new); the batch's rejected rows
    go to ``ROOT/rejects.unpublished/`` (``write_rejected(path)``; replaced by the next such run). A batch with no
    valid document at all (every row rejected, or none) is refused."""
    rejected = sum(documents["rejected"].values())
    reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(documents["rejected"].items()))
    kept = ""
    if rejected and not request.dry_run:
        path = storage.join(request.root, REJECTS_UNPUBLISHED)
        if storage.exists(path):
            storage.delete(path)
        write_rejected(path)
        kept = f"; the {rejected} rejected rows ({reasons}) are in {path}"
    latest = f"LATEST stays {current or '(none)'}"
    if documents["read"] == rejected and not request.dry_run:
        raise UsageError(f"no valid document in {request.input}: "
                         + (f"all {rejected} rows were rejected{kept}" if rejected else "it has no rows")
                         + f"; nothing was published, {latest}")
    ingest = documents["new"] + documents["revision"]
    message = (f"dry run: {ingest} documents would be ingested into {request.root}, {rejected} rows rejected"
               + (f" ({reasons})" if rejected else "") if request.dry_run else
               f"nothing new in {request.input}: all {documents['duplicate'] + documents['adopted']} valid "
               f"documents were ingested before{kept}; {latest}")
    return {"published": False, "documents": documents, "message": message, "version": current}


#: the rejected rows of the last refresh of a root that published nothing
REJECTS_UNPUBLISHED = "rejects.unpublished"


def write_rejects(rejected_rows, path: str, source: str) -> None:
    """Rejected rows (classified: doc_id, status = the reason, text) as ``prepare`` writes its rejects."""
    from pyspark.sql import functions as F

    rejected_rows.select(F.col("doc_id").alias("id"), F.col("status").alias("reason"), F.lit(source).alias("source"),
                         F.col("text").alias("raw")).write.option("ignoreNullFields", False).json(path)
