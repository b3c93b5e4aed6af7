"""A refresh's batch sorted by the ledger (:func:`drivers.refresh.update.classify`): the counts of the report, the
run that publishes nothing, the rejected rows kept, the documents to ingest; shared by the batches of every corpus
kind (``jobs.refresh.ingest_batch``, :mod:`drivers.refresh.aligned_batches`)."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from drivers import storage
from drivers.corpora.files import DOCS
from drivers.corpora.tokenizer import frequent_terms
from drivers.refresh import update as refresh
from drivers.refresh.unpublished import unpublished, write_rejects

log = logging.getLogger("spark_topics.refresh")

SEEN = ("new", "revision", "duplicate", "adopted")


@dataclass
class Triage:
    documents: dict             # the report's counts: read, new, revision, duplicate, adopted, rejected by reason
    report: dict | None         # a run that publishes nothing (nothing new, --dry-run): its report, else None
    ingested: object = None     # the rows to ingest (doc_id, text, content_hash, status)
    adopted: object = None      # the ledger rows of the base model's documents met again
    classified: object = None   # the cached rows sorted by the ledger (released by :meth:`release`)

    def write_input(self, path: str, columns: tuple = ()) -> None:
        """The rows to ingest as a Parquet input of ``prepare`` (id, text and the kept ``columns``)."""
        from pyspark.sql import functions as F

        self.ingested.select(F.col("doc_id").alias("id"), "text", *columns).write.parquet(path)

    def new_words(self, spark, base, options: dict, pending, request):
        """:func:`grown_words` of the rows to ingest: the words the model ``base`` does not know, less those its
        training corpus cut as too frequent."""
        return grown_words(spark, self.ingested, base.vocab["term"], options, pending, request, frequent_terms(base))

    def write_ledger(self, spark, corpus_dir: str | None, version: str, staging: str) -> None:
        """The version's ledger: the ingested rows whose id the prepared corpus in ``corpus_dir`` kept (all of
        them when None: a Gibbs chain continued on the same documents), and the base model's documents met
        again."""
        kept_ids = self.ingested.select("doc_id") if corpus_dir is None else \
            prepared_ids(spark, storage.join(corpus_dir, DOCS))
        write_ledger(self.ingested, kept_ids, self.adopted, version, staging)

    def release(self) -> None:
        if self.classified is not None:
            self.classified.unpersist()


def triage(classified, request, current: str | None, version: str, staging: str,
           nothing_new_goes_on: bool = False) -> Triage:
    """Count ``classified`` (cached by the caller) by status; a batch with nothing to ingest (unless
    ``nothing_new_goes_on``: a Gibbs chain continued on the same documents) or a dry run gets its report
    (:func:`drivers.refresh.unpublished.unpublished`, printed); otherwise the rejected rows are written to
    ``staging/rejects`` and the rows to ingest returned."""
    from pyspark.sql import functions as F

    counts = {r["status"]: r["count"] for r in classified.groupBy("status").count().collect()}
    read = sum(counts.values())
    documents = {"read": read, **{k: counts.get(k, 0) for k in SEEN}}
    documents["rejected"] = {k: v for k, v in sorted(counts.items()) if k not in SEEN}
    log.info("%s: %d documents read: %d new, %d revised, %d already ingested, %d rejected", request.input, read,
             documents["new"], documents["revision"], documents["duplicate"] + documents["adopted"],
             sum(documents["rejected"].values()))
    rejected_rows = classified.where(~F.col("status").isin(*SEEN))
    if (documents["new"] + documents["revision"] == 0 and not nothing_new_goes_on) or request.dry_run:
        report = unpublished(request, current, documents,
                             lambda path: write_rejects(rejected_rows, path, request.input))
        print(report["message"])
        return Triage(documents, report, classified=classified)
    if documents["rejected"]:
        write_rejects(rejected_rows, storage.join(staging, "rejects"), request.input)
    adopted = classified.where(F.col("status") == "adopted").select(
        "doc_id", "content_hash", "status", F.lit(version).alias("version"))
    return Triage(documents, None, classified.where(F.col("status").isin(*refresh.INGESTED)), adopted, classified)


def prepared_ids(spark, docs_path: str):
    """The ``doc_id`` column of a ``docs.parquet`` this run's prepare wrote (ids are strings there), read without
    the Spark job that infers a Parquet schema."""
    return spark.read.schema("doc_id string").parquet(docs_path)


def write_ledger(ingested, kept_ids, adopted, version: str, staging: str) -> None:
    """The version's ledger: the ingested rows whose id the prepared corpus kept (``kept_ids``: doc_id), and the
    base model's documents met again."""
    from pyspark.sql import functions as F

    rows = (ingested.join(kept_ids, "doc_id", "inner")
            .select("doc_id", "content_hash", "status", F.lit(version).alias("version")))
    rows.unionByName(adopted).coalesce(1).write.parquet(storage.join(staging, refresh.LEDGER))


def grown_words(spark, rows, known_terms, options: dict, pending, request, excluded=()):
    """``(new words, still pending)`` (:func:`drivers.refresh.update.grow_vocabulary`) of the documents ``rows``
    (doc_id, text) tokenised with ``options``: the words outside ``known_terms`` and ``excluded`` (the terms the
    base corpus cut as too frequent: never added, issue 30), by document frequency."""
    import pandas as pd
    from pyspark.sql import functions as F

    from drivers.preparation.corpus import document_terms

    left_out = pd.concat([pd.Series(known_terms, dtype=str), pd.Series(list(excluded), dtype=str)],
                         ignore_index=True)
    known = spark.createDataFrame(pd.DataFrame({"term": left_out.to_numpy()}))
    unknown = (document_terms(rows, **options).join(F.broadcast(known), "term", "left_anti")
               .groupBy("term").agg(F.count("*").alias("df")))
    batch_terms = unknown.toPandas()          # one action (an empty batch: no rows, the columns term and df)
    return refresh.grow_vocabulary(known_terms, batch_terms, pending, request.min_new_df, request.max_new_terms,
                                   excluded)


def revised_ids(directory: str) -> frozenset:
    """The ids the version being written in ``directory`` ingests as revisions (its ``ledger.parquet``; none when
    there is no ledger: the family's step run alone)."""
    import pyarrow.dataset as ds

    path = storage.join(directory, refresh.LEDGER)
    if not storage.exists(path):
        return frozenset()
    table = storage.read_table(path, columns=["doc_id"], filter=ds.field("status") == "revision")
    return frozenset(str(d) for d in table.column(0).to_pylist())
