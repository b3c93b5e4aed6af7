"""``spark-topics evolution``: how the topics of one document evolve over its segments (thesis §9.3).

Reads the per-segment topic proportions a Gibbs model wrote
(``MODEL_DIR/segment_topics.parquet``, averaged over the samples) for one
document and writes to ``OUT_DIR``:

``evolution.json``  ``doc_id``, ``segments`` (positions), ``theta`` (S x K), ``hellinger`` (S - 1 distances
                    between consecutive segments, H(p, q) = sqrt(1 - sum_k sqrt(p_k q_k))), the topics' top words
``evolution.png``   stacked topic proportions per segment (the ``--top-topics`` largest by mean proportion,
                    the rest as "other"), and the Hellinger distance between consecutive segments

Only the rows of that document are read (a Parquet filter), so it needs no Spark job.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from drivers import registry, storage
from drivers.store import model_store, outputs
from inference.distances import hellinger
from inference.errors import UsageError
from jobs.flags import add_model_dir
from jobs.spark import local_path


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    add_model_dir(parser, "MODEL_DIR of a Gibbs model (it has segment_topics.parquet)", dest="model_dir")
    parser.add_argument("--version", default=None,
                        help="a model root's version to read (default: its LATEST; a number like 000003 is enough)")
    parser.add_argument("--doc-id", required=True, help="the document to show")
    parser.add_argument("--output", required=True, metavar="OUT_DIR", type=local_path,
                        help="writes OUT_DIR/evolution.json and OUT_DIR/evolution.png")
    parser.add_argument("--top-topics", type=int, default=8, help="topics drawn separately in the plot")
    parser.add_argument("--top-words", type=int, default=3, help="words naming a topic in the legend")


def read_document(model_dir: str, doc_id: str) -> tuple[np.ndarray, np.ndarray]:
    """``(segments (S,), theta (S, K))`` of one document, in segment order."""
    import pyarrow.dataset as ds

    path = storage.join(model_dir, "segment_topics.parquet")
    if not storage.exists(path):
        gibbs = "|".join(spec.name for spec in registry.models_of("gibbs"))
        raise UsageError(f"{model_dir} has no segment_topics.parquet: train a Gibbs model "
                         f"(--model {gibbs}) to get per-segment proportions")
    filesystem, p = storage.resolve(path)
    table = ds.dataset(p, filesystem=filesystem, format="parquet").to_table(
        filter=ds.field("doc_id") == doc_id, columns=["segment", "theta"])
    if table.num_rows == 0:
        raise UsageError(f"document {doc_id!r} is not among the training documents of {model_dir}")
    frame = table.to_pandas().sort_values("segment")
    return frame["segment"].to_numpy(), np.stack(frame["theta"].to_numpy())


def evolution(model_dir: str, doc_id: str, top_words: int = 3) -> dict:
    model = model_store.load_model(model_dir)
    segments, theta = read_document(model_dir, doc_id)
    words = model.top_words(top_words)
    return {"doc_id": doc_id, "model": model_dir, "segments": segments.tolist(), "theta": theta.tolist(),
            "hellinger": hellinger(theta[1:], theta[:-1]).tolist(),
            "topic_words": [[w for w, _ in ws] for ws in words]}


def plot(result: dict, top_topics: int) -> bytes:
    plt = outputs.pyplot()
    theta = np.asarray(result["theta"])
    x = np.asarray(result["segments"])
    order = np.argsort(-theta.mean(axis=0), kind="stable")[:top_topics]
    layers = [theta[:, k] for k in order] + [np.clip(1 - theta[:, order].sum(axis=1), 0, None)]
    labels = [f"{k}: {' '.join(result['topic_words'][k])}" for k in order] + ["other topics"]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 6), dpi=100, sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    ax.stackplot(x, layers, labels=labels, alpha=0.85)
    ax.set_ylabel("topic proportion")
    ax.set_ylim(0, 1)
    ax.set_title(f"topic evolution of {result['doc_id']} ({len(x)} segments)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    if len(x) > 1:
        ax2.plot(x[1:], result["hellinger"], marker="o", color="black")
    ax2.set_ylabel("Hellinger to\nprevious")
    ax2.set_xlabel("segment")
    fig.tight_layout()
    return outputs.png_bytes(fig)


def run(args) -> dict:
    result = evolution(model_store.resolve(args.model_dir, getattr(args, "version", None)), args.doc_id, args.top_words)
    storage.makedirs(args.output)
    storage.write_bytes(storage.join(args.output, "evolution.json"),
                        (json.dumps(result, indent=1) + "\n").encode("utf-8"))
    storage.write_bytes(storage.join(args.output, "evolution.png"), plot(result, args.top_topics))
    theta = np.asarray(result["theta"])
    print(f"{result['doc_id']}: {len(result['segments'])} segments")
    for j, (s, row) in enumerate(zip(result["segments"], theta)):
        top = np.argsort(-row, kind="stable")[:3]
        distance = f"{result['hellinger'][j - 1]:.3f}" if j else "  -  "
        print(f"segment {s:>4}  H(prev)={distance}  " + "  ".join(f"topic {k} {row[k]:.2f}" for k in top))
    print(f"written {storage.join(args.output, 'evolution.json')} and {storage.join(args.output, 'evolution.png')}")
    return result


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("evolution"))
