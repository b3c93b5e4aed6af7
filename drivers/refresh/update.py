"""Refreshing a model root with new documents: what was ingested, which words enter, how topics moved.

The job (``spark-topics refresh``, :mod:`jobs.refresh`) reads the new documents, keeps the ones this module's
ledger has not seen, grows the vocabulary, has the model's family fit the batch from the previous version
(``ModelFamily.refresh``) and publishes the result as the root's next version with the report made here.

* **Ledger** (``ledger.parquet`` in every version): ``doc_id``, ``content_hash`` (SHA-256 of the text),
  ``status`` and ``version`` of each document that version ingested (``new``, ``revision``: a known id with
  another text) or adopted (``base``: a training document of the base model, text unknown; ``adopted``: such a
  document met again, its hash recorded). The ledger of a root is the union over its committed versions
  (:func:`drivers.store.model_root.chain`): a version abandoned by a killed run or a rollback un-ingests itself.
* **Vocabulary growth**: a word the model does not know enters when its document frequency over the batches
  (``pending_terms.parquet`` carries the counts of words not yet admitted) reaches ``min_new_df``; at most
  ``max_new_terms`` per refresh, the most frequent first. It enters with the prior: lambda_kv = eta_v.
* **Report** (``refresh.json``, ``refresh.png``): documents read / new / revised / duplicate / rejected, the new
  words, each topic's drift (Hellinger distance between its word distributions in the two versions, over the
  old vocabulary) and whether the best one-to-one matching of old and new topics is still the identity.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from drivers import storage
from drivers.spark_parquet import read_parquet
from drivers.store.base_link import HELDOUT, LEDGER, training_rows
from inference.constraints import AT_LEAST_0, AT_LEAST_1, NON_NEGATIVE, Constrained, Interval, Real, StrOptions
from inference.errors import UsageError

log = logging.getLogger("spark_topics.refresh")

PENDING_TERMS = "pending_terms.parquet"
NEW_TERMS = "new_terms.parquet"
REPORT_JSON = "refresh.json"
REPORT_PNG = "refresh.png"
MODES = ("auto", "accumulate", "online", "batch", "chain")   # chain: a Gibbs model's (drivers.families.gibbs.refresh)
#: pending words kept between refreshes (the most frequent)
MAX_PENDING_TERMS = 200_000


@dataclass(frozen=True)
class RefreshRequest(Constrained):
    root: str
    input: str | None
    base: str | None = None
    mode: str = "auto"                    # auto: accumulate, or a guided batch pass when due (drivers.refresh.schedule)
    iterations: int = 20
    guided_iterations: int = 10           # auto: EM iterations of a guided pass over the union
    guided_growth: float = 2.0            # auto: a guided pass once the documents reach this x the last full fit's
    inference: str | None = None          # the local step: variational | hybrid (default: the base model's)
    tau0: float = 64.0
    kappa: float = 0.7
    corpus_size: str = "cumulative"       # online: D, the documents seen so far, or a fixed estimate
    guide_weight: float = 100.0           # batch: pseudo-tokens per previous topic on top of a cold start
    min_new_df: int = 3
    max_new_terms: int = 1000
    probe: str | None = None
    keep: int | None = None
    rollback: str | None = None           # "" = the parent of LATEST
    seed: int | None = None
    partitions: int | None = None
    dry_run: bool = False
    drift_report: str | None = None      # write the drift report across every version here (nothing trained)
    reinfer_old: bool = False             # the new version's doc_topics also for every earlier document
    format: str = "auto"
    id_column: str = "id"
    text_column: str = "text"
    lang_column: str = "lang"             # a model of an aligned corpus: the batch's language column
    tol: float = 1e-5
    chain_sweeps: str = "all"             # a Gibbs chain: sweep all documents, or the new ones given the old
    batch_in_process: bool = True         # a small local batch read and sorted in this process (False: Spark)

    parameter_constraints = {"mode": StrOptions(MODES), "iterations": AT_LEAST_1, "min_new_df": AT_LEAST_1,
                             "max_new_terms": AT_LEAST_0, "guide_weight": NON_NEGATIVE,
                             "guided_iterations": AT_LEAST_1, "guided_growth": Interval(Real, 1.0, None, closed="left"), "tau0": NON_NEGATIVE,
                             "kappa": Interval(Real, 0.5, 1.0, closed="right"), "keep": AT_LEAST_1,
                             "partitions": AT_LEAST_1, "chain_sweeps": StrOptions(("all", "new"))}

    def __post_init__(self):
        super().__post_init__()
        if self.corpus_size != "cumulative":
            try:
                if int(self.corpus_size) < 1:
                    raise ValueError
            except ValueError:
                raise UsageError(f"--corpus-size must be 'cumulative' or a positive number of documents, got "
                                 f"{self.corpus_size!r}") from None


# --------------------------------------------------------------------------- the ledger

def ledger_schema():
    from pyspark.sql import types as T

    return T.StructType([T.StructField("doc_id", T.StringType()), T.StructField("content_hash", T.StringType()),
                         T.StructField("status", T.StringType()), T.StructField("version", T.StringType())])


def read_ledger(spark, version_dirs: list[str]):
    """The committed ledger: every document's latest entry over ``version_dirs`` (a root's chain)."""
    from pyspark.sql import Window, functions as F

    paths = [storage.join(d, LEDGER) for d in version_dirs if storage.exists(storage.join(d, LEDGER))]
    if not paths:
        return spark.createDataFrame([], ledger_schema())
    rows = spark.read.schema(ledger_schema()).parquet(*paths)
    latest = Window.partitionBy("doc_id").orderBy(F.col("version").desc())
    return rows.withColumn("_n", F.row_number().over(latest)).where("_n = 1").drop("_n")


def classify(rows, ledger, keep: tuple = ()):
    """``rows`` (prepare's reader: doc_id, text, reason) with ``content_hash`` and ``status``: new, revision,
    duplicate (same id and text), adopted (a base document met again: not ingested, its hash recorded) or
    rejected (prepare's reason); ``keep``: the reader's kept columns, carried on the valid rows."""
    from pyspark.sql import functions as F

    valid = rows.where(F.col("reason").isNull()).withColumn("content_hash", F.sha2(F.col("text"), 256))
    known = ledger.select("doc_id", F.col("content_hash").alias("known_hash"), F.col("status").alias("known_status"))
    joined = valid.join(known, "doc_id", "left")
    status = (F.when(F.col("known_status").isNull(), "new")
              .when(F.col("known_hash").isNull(), "adopted")
              .when(F.col("known_hash") == F.col("content_hash"), "duplicate")
              .otherwise("revision"))
    rejected = rows.where(F.col("reason").isNotNull()).select(     # the input's line, as prepare keeps it
        "doc_id", F.coalesce("raw", "text").alias("text"), F.lit(None).cast("string").alias("content_hash"),
        F.col("reason").alias("status"))
    return joined.select("doc_id", "text", "content_hash", status.alias("status"), *keep).unionByName(
        rejected, allowMissingColumns=bool(keep))


INGESTED = ("new", "revision")


def base_ledger(spark, base_dir: str, version: str):
    """Ledger rows of a base model's training documents (its doc_topics.parquet ids, held-out rows left out:
    :mod:`drivers.store.base_link`; their texts are unknown)."""
    from pyspark.sql import functions as F

    path = storage.join(base_dir, "doc_topics.parquet")
    if not storage.exists(path):
        return spark.createDataFrame([], ledger_schema())
    rows = read_parquet(spark, path)
    if HELDOUT in rows.columns:
        rows = rows.where(F.col(HELDOUT) == F.lit(False))
    return rows.select(
        F.col("doc_id").cast("string").alias("doc_id"), F.lit(None).cast("string").alias("content_hash"),
        F.lit("base").alias("status"), F.lit(version).alias("version"))


# --------------------------------------------------------------------------- the vocabulary

def grow_vocabulary(known_terms, batch_terms: pd.DataFrame, pending: pd.DataFrame | None, min_df: int,
                    max_new: int, excluded=()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(new words, still pending)``: the words of ``batch_terms`` (term, df) the model does not know, their
    document frequencies added to ``pending`` (term, df: earlier batches'), admitted when the sum reaches
    ``min_df``, at most ``max_new`` of them (highest df first, then by term). The new words (term, df) are in
    the order they get their ids; pending keeps the rest (the :data:`MAX_PENDING_TERMS` most frequent).
    ``excluded`` (the terms ``prepare`` cut from the base corpus as too frequent) are neither admitted nor kept
    pending, whatever their counts (issue 30)."""
    known = set(map(str, known_terms)) | set(map(str, excluded))
    batch = batch_terms.loc[~batch_terms["term"].astype(str).isin(known), ["term", "df"]]
    frames = [batch] + ([pending[["term", "df"]]] if pending is not None and len(pending) else [])
    counts = (pd.concat(frames, ignore_index=True).groupby("term", as_index=False)["df"].sum()
              if len(batch) or len(frames) > 1 else pd.DataFrame({"term": [], "df": []}))
    counts = counts[~counts["term"].astype(str).isin(known)]
    counts = counts.sort_values(["df", "term"], ascending=[False, True], kind="stable").reset_index(drop=True)
    eligible = counts["df"] >= min_df
    admitted = counts[eligible].head(max_new)
    rest = counts.drop(admitted.index).head(MAX_PENDING_TERMS)
    return (admitted.reset_index(drop=True).astype({"df": np.int64}),
            rest.reset_index(drop=True).astype({"df": np.int64}))


# --------------------------------------------------------------------------- alpha's statistics

def alpha_statistics(doc_topics_path: str) -> tuple[np.ndarray, int]:
    """(sum_d E_q[log theta_d], D) over a doc_topics table's gamma column, streamed in batches (no D x K in
    memory): E_q[log theta_dk] = Psi(gamma_dk) - Psi(sum_k gamma_dk). Its training documents only (held-out
    rows left out: :func:`drivers.store.base_link.training_rows`)."""
    from scipy.special import digamma

    total, n = None, 0
    dataset, keep = training_rows(doc_topics_path)
    if "gamma" not in dataset.schema.names:          # a Gibbs model's (theta): no alpha statistics to keep
        return None, dataset.count_rows(filter=keep)
    for batch in dataset.to_batches(columns=["gamma"], filter=keep):
        column = batch.column(0)
        if len(column) == 0:
            continue
        gamma = np.asarray(column.values.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(len(column), -1)
        part = (digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))).sum(axis=0)
        total = part if total is None else total + part
        n += len(column)
    return total, n


def kept_alpha_statistics(history: dict, revised_out):
    """The parent's sums of E[log theta] (``history``) less ``revised_out``, those of the documents a refresh's
    revisions took out; None: none kept."""
    previous = history.get("alpha_statistics")
    if previous is None or revised_out is None:
        return previous
    return np.asarray(previous, dtype=np.float64) - np.asarray(revised_out, dtype=np.float64)


# --------------------------------------------------------------------------- drift

def hellinger_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hellinger distance between the rows of two K x V probability matrices (K values in [0, 1])."""
    return np.sqrt(np.maximum(0.0, 1.0 - np.sum(np.sqrt(p * q), axis=1)))


def topic_drift(old_topic_word: np.ndarray, new_topic_word: np.ndarray, top: list | None = None) -> dict:
    """Each topic's drift between versions over the old vocabulary (both renormalised on it), and the best
    one-to-one matching of old to new topics by Hellinger distance (scipy's linear_sum_assignment): topic k
    of the new version continues topic k unless the matching says otherwise. When the versions have other
    numbers of rows (a cluster model's clusters come and go), a row's drift is its distance to the row it is
    matched to (an unmatched one: to the nearest)."""
    from scipy.optimize import linear_sum_assignment

    V = old_topic_word.shape[1]
    p = old_topic_word / old_topic_word.sum(axis=1, keepdims=True)
    q = new_topic_word[:, :V] / new_topic_word[:, :V].sum(axis=1, keepdims=True)
    sq_p, sq_q = np.sqrt(p), np.sqrt(q)
    distances = np.sqrt(np.maximum(0.0, 1.0 - sq_p @ sq_q.T))
    rows, cols = linear_sum_assignment(distances)
    if p.shape[0] == q.shape[0]:
        drift = hellinger_rows(p, q)
    else:
        drift = distances.min(axis=1)
        drift[rows] = distances[rows, cols]
    moved = [int(k) for k, j in zip(rows, cols) if k != j]
    return {"hellinger": [float(x) for x in drift], "mean": float(drift.mean()), "max": float(drift.max()),
            "identity_matching": not moved, "topics_matched_elsewhere": moved}


def plot_report(path: str, report: dict) -> None:
    """refresh.png: each topic's drift, and the documents of the batch by status."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drift = report["drift"]["hellinger"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [3, 1]})
    left.bar(range(len(drift)), drift, color="#4c72b0")
    left.set_xlabel("topic")
    left.set_ylabel("Hellinger distance to the previous version")
    left.set_title(f"{report['version']}: topic drift (mean {report['drift']['mean']:.3f})")
    counts = report["documents"]
    bars = {k: counts.get(k, 0) for k in ("new", "revision", "duplicate", "adopted")}
    bars["rejected"] = sum((counts.get("rejected") or {}).values())
    names = [k for k, v in bars.items() if v]
    right.barh(names, [bars[k] for k in names], color="#55a868")
    right.set_title(f"documents: {counts.get('read', 0)} read")
    right.set_xlabel(f"new words: {report['vocabulary']['added']}")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    storage.write_bytes(path, buffer.getvalue())
