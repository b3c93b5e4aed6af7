"""Model directories: written by ``train``, read by ``infer``, ``evaluate`` and ``topics``.

A model directory is readable without this package::

    model.json          model type, K, V, alpha, eta, iterations, ELBO trace, data and code versions, seed
    vocab.parquet       term, id (+ df, cf)
    lambda.npy          K x V variational topic-word parameter (np.load(..., allow_pickle=False))
    doc_topics.parquet  doc_id, gamma (K), theta (K) per training document
    elbo.png            the ELBO curve
"""
from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from drivers import storage

CODE_VERSION = "0.1.0"


@dataclass
class TopicModel:
    directory: str
    meta: dict
    vocab: pd.DataFrame
    lambda_: np.ndarray

    @property
    def num_topics(self) -> int:
        return int(self.meta["topics"])

    @property
    def alpha(self) -> np.ndarray:
        return np.asarray(self.meta["alpha"], dtype=np.float64)

    def topic_word(self) -> np.ndarray:
        """E_q[beta]: lambda normalised by row (K x V)."""
        return self.lambda_ / self.lambda_.sum(axis=1, keepdims=True)

    def topic_names(self) -> list[str]:
        return self.meta.get("topic_names") or [f"topic {k}" for k in range(self.num_topics)]

    def top_words(self, n: int = 10) -> list[list[tuple[str, float]]]:
        beta = self.topic_word()
        terms = self.vocab["term"].to_numpy()
        out = []
        for row in beta:
            top = np.argsort(-row, kind="stable")[:n]
            out.append([(str(terms[i]), float(row[i])) for i in top])
        return out


def code_version() -> dict:
    version = {"package": CODE_VERSION}
    try:
        root = Path(__file__).resolve().parent.parent
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=5)
        if commit.returncode == 0:
            version["git_commit"] = commit.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return version


def data_version(corpus_meta: dict) -> str:
    """Content hash of the corpus manifest: changes whenever the prepared corpus does."""
    return hashlib.sha256(json.dumps(corpus_meta, sort_keys=True).encode()).hexdigest()[:16]


def write_parquet(path: str, frame: pd.DataFrame) -> None:
    filesystem, p = storage.resolve(path)
    filesystem.create_dir(p.rsplit("/", 1)[0], recursive=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), p, filesystem=filesystem)


def save_model(directory: str, meta: dict, vocab: pd.DataFrame, lambda_: np.ndarray) -> None:
    storage.makedirs(directory)
    storage.save_npy(storage.join(directory, "lambda.npy"), np.ascontiguousarray(lambda_, dtype=np.float64))
    cols = [c for c in ("term", "id", "df", "cf") if c in vocab.columns]
    write_parquet(storage.join(directory, "vocab.parquet"), vocab[cols])
    storage.save_json(storage.join(directory, "model.json"), meta)


def load_model(directory: str) -> TopicModel:
    meta_path = storage.join(directory, "model.json")
    if not storage.exists(meta_path):
        raise SystemExit(f"{directory} is not a model directory (no model.json)")
    meta = storage.load_json(meta_path)
    filesystem, p = storage.resolve(storage.join(directory, "vocab.parquet"))
    vocab = pq.read_table(p, filesystem=filesystem).to_pandas().sort_values("id").reset_index(drop=True)
    lambda_ = storage.load_npy(storage.join(directory, "lambda.npy"))
    return TopicModel(directory, meta, vocab, lambda_)


def plot_elbo(path: str, trace: list[dict]) -> None:
    """ELBO against iteration, with seconds per iteration on a second axis (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    its = [r["iteration"] for r in trace]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(its, [r["elbo"] for r in trace], marker="o", color="tab:blue")
    ax.set_xlabel("iteration")
    ax.set_ylabel("ELBO (eq 3.4)", color="tab:blue")
    ax2 = ax.twinx()
    ax2.bar(its, [r["seconds"] for r in trace], alpha=0.25, color="tab:gray")
    ax2.set_ylabel("seconds per iteration", color="tab:gray")
    ax.set_title("Variational EM: evidence lower bound")
    fig.tight_layout()
    import io
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    storage.write_bytes(path, buffer.getvalue())


def format_topics(names: list[str], top_words, n: int) -> str:
    lines = []
    for name, words in zip(names, top_words):
        lines.append(f"{name:>10}: " + " ".join(w for w, _ in words[:n]))
    return "\n".join(lines)
