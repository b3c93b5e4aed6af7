"""A refresh's batch read, sorted by the root's ledger and counted in this process, without a Spark job, when it is
small (an input ``prepare`` would read in process: :func:`drivers.preparation.in_process.corpus.eligible`).

The same statuses as :func:`drivers.refresh.update.classify` (new, revision, duplicate, adopted, or the reader's
reject reason; the content hash is SHA-256 of the text's UTF-8 bytes, as Spark's ``sha2``), the same counts, rejects,
new words and ledger rows as :class:`drivers.refresh.triage.Triage` (``tests/commands/test_refresh_in_process.py``
publishes one batch both ways and compares the versions). At 23k documents this took the batch's reading,
classifying and counting of new words from about 24 CPU s of Spark jobs to a few (README, "Scheduled refresh").
"""
from __future__ import annotations

import collections
import hashlib
import logging
import os

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from drivers import storage
from drivers.corpora.files import DOCS
from drivers.corpora.tokenizer import frequent_terms
from drivers.preparation.corpus import stopwords_of
from drivers.preparation.in_process import corpus as corpus_in_process
from drivers.preparation.in_process.reading import NeedsSpark, read_rows
from drivers.preparation.in_process.tokens import Tokenizer
from drivers.preparation.options import PrepareOptions
from drivers.preparation.reading import resolve_format
from drivers.refresh import update as refresh
from drivers.refresh.triage import SEEN
from drivers.refresh.unpublished import unpublished
from drivers.store.base_link import training_rows

log = logging.getLogger("spark_topics.refresh")


def read_batch(request, staging: str, keep: tuple = ()):
    """The batch's rows (:class:`drivers.preparation.in_process.reading.InputRow`, input order, with the ``keep``
    columns, as ``prepare --keep-columns`` reads them) and the Arrow types of those columns, when this process can
    read it as ``prepare`` would; None (and why, logged) when it needs Spark."""
    opts = PrepareOptions(format=request.format, id_column=request.id_column, text_column=request.text_column,
                          keep_columns=tuple(keep))
    fmt = resolve_format(None, request.input, opts.format)
    why = corpus_in_process.eligible(request.input, staging, fmt, opts)
    if why is None:
        try:
            return read_rows(request.input, fmt, opts)
        except NeedsSpark as reason:
            why = str(reason)
    log.info("refresh: the batch is read with Spark: %s", why)
    return None


def committed_ledger(chain_dirs: list[str], base_dir: str, current: str | None) -> dict:
    """doc_id -> (content_hash, status) of the root's ledger (every document's latest entry over the chain,
    :func:`drivers.refresh.update.read_ledger`), or of the base model's training documents before the first
    refresh (hash unknown, status ``base``: :func:`drivers.refresh.update.base_ledger`)."""
    if current is None:
        path = storage.join(base_dir, "doc_topics.parquet")
        if not storage.exists(path):
            return {}
        dataset, keep = training_rows(path)
        ids = dataset.to_table(columns=["doc_id"], filter=keep).column(0).cast(pa.string()).to_pylist()
        return dict.fromkeys(ids, (None, "base"))
    tables = []
    for directory in chain_dirs:
        path = storage.join(directory, refresh.LEDGER)
        if storage.exists(path):
            filesystem, p = storage.resolve(path)
            tables.append(ds.dataset(p, filesystem=filesystem, format="parquet").to_table(
                columns=["doc_id", "content_hash", "status", "version"]))
    if not tables:
        return {}
    rows = pa.concat_tables(tables).to_pandas().sort_values("version", ascending=False, kind="stable")
    rows = rows.drop_duplicates("doc_id", keep="first")
    return dict(zip(rows["doc_id"], zip(rows["content_hash"], rows["status"])))


class BatchInProcess:
    """The batch sorted by the ledger, as :class:`drivers.refresh.triage.Triage` holds it on Spark: ``documents``
    (the report's counts), ``report`` (a run that publishes nothing), and the rows to ingest."""

    def __init__(self, rows, ledger: dict, request, current: str | None, staging: str, nothing_new_goes_on: bool,
                 kept_types: dict | None = None):
        self.source, self.kept_types = request.input, dict(kept_types or {})
        valid, self.rejected = [], []
        for row in rows:
            if row.reason is not None:
                self.rejected.append(row)
                continue
            content_hash = hashlib.sha256(row.text.encode("utf-8")).hexdigest()
            known_hash, known_status = ledger.get(row.doc_id, (None, None))
            status = ("new" if known_status is None else "adopted" if known_hash is None else
                      "duplicate" if known_hash == content_hash else "revision")
            valid.append((row.doc_id, row.text, content_hash, status, row.kept))
        counts = collections.Counter(row[3] for row in valid)
        reasons = collections.Counter(row.reason for row in self.rejected)
        self.documents = {"read": len(rows), **{k: counts.get(k, 0) for k in SEEN},
                          "rejected": dict(sorted(reasons.items()))}
        log.info("%s: %d documents read: %d new, %d revised, %d already ingested, %d rejected", request.input,
                 len(rows), counts["new"], counts["revision"], counts["duplicate"] + counts["adopted"],
                 len(self.rejected))
        self.ingested = [row for row in valid if row[3] in refresh.INGESTED]
        self.adopted = [row for row in valid if row[3] == "adopted"]
        self.report = None
        if (not self.ingested and not nothing_new_goes_on) or request.dry_run:
            self.report = unpublished(request, current, self.documents, self.write_rejects)
            print(self.report["message"])
        elif self.rejected:
            self.write_rejects(storage.join(staging, "rejects"))

    def write_rejects(self, path: str) -> None:
        """The rejected rows as ``prepare`` writes its rejects (id, reason, source: the batch, raw)."""
        for row in self.rejected:
            row.source = self.source
        corpus_in_process.write_rejects(path, self.rejected)

    def write_input(self, path: str, columns: tuple = ()) -> None:
        """The rows to ingest as a Parquet input of ``prepare`` (id, text and the kept ``columns``, of the types
        the reader gave them)."""
        os.makedirs(path)
        kept = {c: pa.array([r[4].get(c) for r in self.ingested], self.kept_types.get(c)) for c in columns}
        pq.write_table(pa.table({"id": pa.array([r[0] for r in self.ingested], pa.string()),
                                 "text": pa.array([r[1] for r in self.ingested], pa.string()), **kept}),
                       os.path.join(path, "part-00000.parquet"))

    def new_words(self, spark, base, options: dict, pending, request):
        """:func:`drivers.refresh.triage.grown_words` of the rows to ingest, tokenised in this process: the words
        the model ``base`` does not know, less those its training corpus cut as too frequent."""
        known_terms, excluded = base.vocab["term"], frequent_terms(base)
        opts = PrepareOptions(**options)
        tokenizer = Tokenizer(opts.token_pattern, opts.min_token_length, stopwords_of(opts))
        known = set(map(str, known_terms)) | set(map(str, excluded))
        df = collections.Counter()
        for _, text, *_ in self.ingested:
            df.update(set(tokenizer.tokens(text)) - known)
        batch_terms = pd.DataFrame({"term": pd.Series(list(df), dtype=object), "df": list(df.values())})
        return refresh.grow_vocabulary(known_terms, batch_terms, pending, request.min_new_df, request.max_new_terms,
                                       excluded)

    def write_ledger(self, spark, corpus_dir: str | None, version: str, staging: str) -> None:
        """The version's ledger (:func:`drivers.refresh.triage.write_ledger`): the ingested rows whose id the
        prepared corpus in ``corpus_dir`` kept (all of them when None: a Gibbs chain continued on the same
        documents), and the base model's documents met again."""
        kept = None if corpus_dir is None else set(storage.read_table(
            storage.join(corpus_dir, DOCS), columns=["doc_id"]).column(0).cast(pa.string()).to_pylist())
        rows = [r for r in self.ingested if kept is None or r[0] in kept] + self.adopted
        path = storage.join(staging, refresh.LEDGER)
        storage.makedirs(path)
        storage.write_parquet(storage.join(path, "part-00000.parquet"), pa.table(
            {name: pa.array(values, pa.string()) for name, values in zip(
                ("doc_id", "content_hash", "status", "version"),
                ([r[0] for r in rows], [r[2] for r in rows], [r[3] for r in rows], [version] * len(rows)))}))

    def release(self) -> None:
        """Nothing held (the Spark triage unpersists its cached rows)."""
