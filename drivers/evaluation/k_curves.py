"""What ``spark-topics select-k`` writes: one row per number of topics K (held-out perplexity, gensim's c_v,
c_npmi and u_mass, our document-level NPMI, topic diversity) as a CSV table and JSON, and the curves as a PNG."""
from __future__ import annotations

import io
import json

import pandas as pd

from drivers import storage
from drivers.store.outputs import png_bytes, pyplot

TABLE, FIGURES, PLOT = "select_k.csv", "select_k.json", "select_k.png"
COLUMNS = ("topics", "heldout_perplexity", "c_v", "c_npmi", "u_mass", "document_npmi", "topic_diversity",
           "seconds", "model")


def row(k: int, metrics: dict, model_dir: str, seconds: float) -> dict:
    """The row of one K from ``evaluate``'s metrics (with its standard coherence)."""
    standard = metrics.get("standard_coherence") or {}
    return {"topics": int(k), "heldout_perplexity": metrics.get("perplexity"),
            "c_v": (standard.get("c_v") or {}).get("mean"), "c_npmi": (standard.get("c_npmi") or {}).get("mean"),
            "u_mass": (standard.get("u_mass") or {}).get("mean"), "document_npmi": metrics.get("npmi"),
            "topic_diversity": standard.get("topic_diversity"), "seconds": round(seconds, 1), "model": model_dir}


def write(output: str, rows: list[dict], settings: dict) -> dict:
    """``select_k.csv``, ``select_k.json`` and ``select_k.png`` in ``output``; returns the files' paths."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS)).sort_values("topics")
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    paths = {name: storage.join(output, name) for name in (TABLE, FIGURES, PLOT)}
    storage.write_bytes(paths[TABLE], buffer.getvalue().encode("utf-8"))
    storage.write_bytes(paths[FIGURES], (json.dumps({"settings": settings, "rows": frame.to_dict("records")},
                                                    indent=2, default=str) + "\n").encode("utf-8"))
    storage.write_bytes(paths[PLOT], plot(frame, settings))
    return paths


def plot(frame: pd.DataFrame, settings: dict) -> bytes:
    """Held-out perplexity (left) and coherence (right) against K (PNG bytes)."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), dpi=100)
    left.plot(frame["topics"], frame["heldout_perplexity"], marker="o")
    left.set_xlabel("topics K")
    left.set_ylabel("held-out perplexity (lower is better)")
    for name, label in (("c_v", "c_v (gensim)"), ("c_npmi", "c_npmi (gensim)"),
                        ("document_npmi", "document-level NPMI"), ("topic_diversity", "topic diversity (top 25 words)")):
        values = pd.to_numeric(frame[name], errors="coerce")
        if values.notna().any():
            right.plot(frame["topics"], values, marker="o", label=label)
    right.set_xlabel("topics K")
    right.set_ylabel(f"coherence of the top {settings.get('top_words', 10)} words\nand diversity (higher is better)")
    for axes in (left, right):
        axes.set_xticks(list(frame["topics"]))
    right.legend(fontsize=8)
    fig.suptitle(f"select-k: {settings.get('model')} on {settings.get('corpus')}", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))          # room for the title above the axes' labels
    return png_bytes(fig)


def format_table(rows: list[dict]) -> str:
    """The rows as the job prints them."""
    def cell(value, spec):
        return "n/a".rjust(int(spec.split(".")[0])) if value is None or value != value else format(value, spec)

    lines = [f"{'K':>5} {'perplexity':>11} {'c_v':>7} {'c_npmi':>7} {'u_mass':>8} {'doc NPMI':>8} {'diversity':>9}"]
    for r in sorted(rows, key=lambda r: r["topics"]):
        lines.append(f"{r['topics']:>5} {cell(r['heldout_perplexity'], '11.2f')} {cell(r['c_v'], '7.4f')} "
                     f"{cell(r['c_npmi'], '7.4f')} {cell(r['u_mass'], '8.4f')} {cell(r['document_npmi'], '8.4f')} "
                     f"{cell(r['topic_diversity'], '9.3f')}")
    return "\n".join(lines)
