"""What a model directory holds besides the model: per-document tables written by the tasks, and plots.

:func:`write_partition_tables` is the one way per-document results leave Spark:
each task turns its partition into Arrow tables and writes each as
``part-<p>.parquet`` of its directory (atomically, no per-row conversion), so a
retried task rewrites the same file. The plots are PNG files written through
:mod:`drivers.storage` (any file system).
"""
from __future__ import annotations

import io

import numpy as np

from drivers import storage


def write_partition_tables(spark, rdd, paths: list, tables_of, description: str, part: str = "part") -> list:
    """Run ``tables_of(partition, item)`` -> one Arrow table per path over every ``(key, item)`` of ``rdd``,
    writing the tables as ``<path>/<part>-<partition>.parquet``; returns the rows written per path.

    Existing directories at ``paths`` are replaced (with another ``part`` than "part": added to).
    """
    for path in paths:
        if part == "part" and storage.exists(path):
            storage.delete(path)

    def write_part(partition, items):
        for _, item in items:
            tables = tables_of(partition, item)
            for path, table in zip(paths, tables):
                storage.write_parquet(storage.join(path, f"{part}-{partition:05d}.parquet"), table)
            yield [table.num_rows for table in tables]

    spark.sparkContext.setJobDescription(description)
    try:
        counts = rdd.mapPartitionsWithIndex(write_part).collect()
    finally:
        spark.sparkContext.setJobDescription(None)
    return [int(sum(c[i] for c in counts)) for i in range(len(paths))]


def doc_topics_table(doc_ids, gamma: np.ndarray, topic_names: list | None = None):
    """Arrow table doc_id, gamma, theta (lists of K doubles) [, top_topic, theta_named] for a block."""
    import pyarrow as pa

    n, K = gamma.shape
    theta = gamma / gamma.sum(axis=1, keepdims=True)
    columns = {"doc_id": pa.array(list(doc_ids), pa.string()),
               "gamma": storage.list_column(gamma), "theta": storage.list_column(theta)}
    if topic_names is not None:
        names = np.asarray(topic_names, dtype=object)
        offsets = pa.array(np.arange(0, (n + 1) * K, K, dtype=np.int32))
        columns["top_topic"] = pa.array(names[np.argmax(theta, axis=1)].tolist(), pa.string())
        columns["theta_named"] = pa.MapArray.from_arrays(offsets, pa.array(np.tile(names, n).tolist(), pa.string()),
                                                         pa.array(theta.ravel()))
    return pa.table(columns)


def proportion_tables(orig, doc: np.ndarray, seg: np.ndarray):
    """Arrow tables (doc_id, theta) and (doc_id, segment, theta) of one block's document and segment
    proportions (``orig``: the block as loaded, a ``SegmentedBlock``)."""
    import pyarrow as pa

    doc_ids = np.asarray(orig.doc_ids, dtype=object)
    seg_doc = orig.doc_of_segment()
    position = (np.arange(orig.n_segments) - orig.doc_ptr[seg_doc]).astype(np.int32)
    docs = pa.table({"doc_id": pa.array([str(d) for d in doc_ids], pa.string()),
                     "theta": storage.list_column(doc)})
    segments = pa.table({"doc_id": pa.array([str(d) for d in doc_ids[seg_doc]], pa.string()),
                         "segment": pa.array(position, pa.int32()), "theta": storage.list_column(seg)})
    return docs, segments


def columns_table(columns: dict):
    """Arrow table of named (rows,) numpy columns (strings for object arrays)."""
    import pyarrow as pa

    return pa.table({name: pa.array([str(v) for v in values], pa.string()) if np.asarray(values).dtype == object
                     else pa.array(np.asarray(values)) for name, values in columns.items()})


# --------------------------------------------------------------------------- plots

def pyplot():
    """matplotlib's pyplot on the file-only Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes (and closed)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    pyplot().close(fig)
    return buffer.getvalue()


def plot_elbo(path: str, trace: list[dict], hybrid: bool = False) -> None:
    """ELBO against iteration (hybrid inference: the kept samples' mean log joint, its objective), with seconds per
    iteration on a second axis (PNG)."""
    plt = pyplot()
    its = [r["iteration"] for r in trace]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(its, [r["elbo"] for r in trace], marker="o", color="tab:blue")
    ax.set_xlabel("iteration")
    ax.set_ylabel("log joint (sampled)" if hybrid else "ELBO (eq 3.4)", color="tab:blue")
    ax2 = ax.twinx()
    ax2.bar(its, [r["seconds"] for r in trace], alpha=0.25, color="tab:gray")
    ax2.set_ylabel("seconds per iteration", color="tab:gray")
    ax.set_title("Hybrid variational-MCMC EM: mean log joint of the kept samples" if hybrid
                 else "Variational EM: evidence lower bound")
    fig.tight_layout()
    storage.write_bytes(path, png_bytes(fig))


def plot_trace(path: str, trace: list[dict], title: str) -> None:
    """log p(w | z) per token against iteration, samples marked (PNG)."""
    plt = pyplot()
    its = [r["iteration"] for r in trace]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(its, [r["loglik_per_token"] for r in trace], color="tab:blue")
    samples = [r for r in trace if r["sample"]]
    ax.plot([r["iteration"] for r in samples], [r["loglik_per_token"] for r in samples], "o", color="tab:red",
            label="samples")
    ax.set_xlabel("iteration")
    ax.set_ylabel("log p(w | z) per token")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    storage.write_bytes(path, png_bytes(fig))
