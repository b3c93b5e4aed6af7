"""The drift report of a model root across all its committed versions (``refresh --model ROOT --drift-report OUT``):
topics matched from version to version, each topic's drift, and the rank trajectories of the words that entered
after the base (as thesis Figure 7.1: a word's rank in a topic, version by version), with topic labels.

Pure numpy on the versions' topic-word matrices (:func:`drift_history`); :func:`write_report` reads the root and
writes ``drift.json`` and ``drift.png``. Vocabularies only grow (ids are append-only), so version i's words are a
prefix of version i+1's: distances are taken over the older vocabulary, both rows renormalised on it.
"""
from __future__ import annotations

import numpy as np

from drivers import storage

REPORT_JSON = "drift.json"
REPORT_PNG = "drift.png"


def hellinger_matrix(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """H[i, j] = sqrt(1 - sum_v sqrt(p_iv q_jv)) between the rows of two K x V distributions."""
    return np.sqrt(np.maximum(0.0, 1.0 - np.sqrt(p) @ np.sqrt(q).T))


def ranks(phi: np.ndarray) -> np.ndarray:
    """rank[k, v] = 1 + the number of words more probable than v in topic k (ties by word id)."""
    order = np.argsort(-phi, axis=1, kind="stable")
    out = np.empty_like(order)
    rows = np.arange(phi.shape[0])[:, None]
    out[rows, order] = np.arange(1, phi.shape[1] + 1)[None, :]
    return out


def drift_history(phis: list, first_vocab: int, words_per_topic: int = 5) -> dict:
    """``phis``: the K_i x V_i topic-word matrices of the versions, oldest first (V_i non-decreasing, each
    vocabulary a prefix of the next; K_i may differ: a cluster model's clusters come and go); ``first_vocab``: the
    oldest version's vocabulary size (words with an id at or above it entered later). Returns the steps (per
    consecutive pair: each newer topic's Hellinger distance to the same id, or with other numbers of rows to the
    row it continues; the best one-to-one matching, a newer row left unmatched continuing its nearest older row;
    whether it is the identity; the rows born (``new_rows``) and ended (``ended_rows``)), each newest topic's
    track (its matched topic id in every version, newest backwards) and, per topic, the new words best ranked in
    the newest version with their ranks in every version (None before the word existed)."""
    from scipy.optimize import linear_sum_assignment

    steps = []
    for old, new in zip(phis, phis[1:]):
        V = old.shape[1]
        p = old / old.sum(axis=1, keepdims=True)
        q = new[:, :V] / new[:, :V].sum(axis=1, keepdims=True)
        distances = hellinger_matrix(p, q)
        rows, cols = linear_sum_assignment(distances)
        matching = distances.argmin(axis=0)    # matching[j]: the old topic new topic j continues (unmatched: nearest)
        matching[cols] = rows
        same = p.shape[0] == q.shape[0]
        drift = np.diag(distances) if same else distances[matching, np.arange(q.shape[0])]
        steps.append({"hellinger": drift.tolist(), "matching": matching.tolist(),
                      "identity": bool(same and np.all(matching == np.arange(len(matching)))),
                      "new_rows": sorted(set(range(q.shape[0])) - set(cols.tolist())),
                      "ended_rows": sorted(set(range(p.shape[0])) - set(rows.tolist()))})
    K = phis[-1].shape[0]
    tracks = []
    for k in range(K):
        track = [k]
        for step in reversed(steps):
            track.append(step["matching"][track[-1]])
        tracks.append(track[::-1])
    all_ranks = [ranks(phi) for phi in phis]
    newest = all_ranks[-1]
    new_words = []
    for k in range(K):
        candidates = np.arange(first_vocab, phis[-1].shape[1])
        best = candidates[np.argsort(newest[k, candidates], kind="stable")][:words_per_topic]
        new_words.append([{"id": int(v), "ranks": [int(r[tracks[k][i], v]) if v < r.shape[1] else None
                                                   for i, r in enumerate(all_ranks)]} for v in best])
    return {"steps": steps, "tracks": tracks, "new_words": new_words}


def labels(phi: np.ndarray, terms: list, names: list | None = None, top: int = 3) -> list[str]:
    """A topic's label: its name if it has one, else its ``top`` most probable words."""
    out = []
    for k in range(phi.shape[0]):
        if names and names[k]:
            out.append(str(names[k]))
        else:
            out.append(" ".join(terms[v] for v in np.argsort(-phi[k], kind="stable")[:top]))
    return out


def entry_order(vocabs: list) -> tuple[list, list]:
    """The newest vocabulary's columns in the order its words entered the root (each version's words before
    the next one's), and each version's columns in that order: every older vocabulary then is a prefix of the
    next, as :func:`drift_history` needs; the identity for a monolingual root (ids are append-only), the
    languages' words regrouped for a polylingual one (a language's new words enter inside the global ids)."""
    from drivers.corpora.aligned import word_columns

    in_newest = [word_columns(v, vocabs[-1]) for v in vocabs]
    order, seen = [], set()
    for cols in in_newest:
        fresh = [int(c) for c in cols if int(c) not in seen]
        order += fresh
        seen.update(fresh)
    columns = []
    for cols in in_newest:
        position = {int(c): j for j, c in enumerate(cols)}
        columns.append(np.array([position[c] for c in order[:len(cols)]], dtype=np.int64))
    return order, columns


def write_report(root: str, output: str, words_per_topic: int = 5, topics_plotted: int = 6) -> dict:
    """drift.json and drift.png of every committed, unpruned version of ``root`` (oldest first) into ``output``."""
    from drivers.store import model_root, model_store

    names = [n for n in reversed(model_root.chain(root))
             if not model_root.is_pruned(model_root.version_dir(root, n))]
    if len(names) < 2:
        raise_few(root, names)
    models = [model_store.load_model(model_root.version_dir(root, n)) for n in names]
    phis = [np.asarray(m.topic_word(), dtype=np.float64) for m in models]
    order, columns = entry_order([m.vocab for m in models])
    phis = [phi[:, cols] for phi, cols in zip(phis, columns)]
    newest = models[-1].vocab["term"].astype(str).tolist()
    terms = [newest[c] for c in order]
    history = drift_history(phis, phis[0].shape[1], words_per_topic)
    topic_labels = labels(phis[-1], terms, models[-1].meta.get("topic_names"))   # given names, else words
    for words in history["new_words"]:
        for w in words:
            w["term"] = terms[w.pop("id")]
    report = {"root": root, "versions": names, "labels": topic_labels, **history}
    storage.makedirs(output)
    storage.save_json(storage.join(output, REPORT_JSON), report)
    plot(storage.join(output, REPORT_PNG), report, topics_plotted)
    return report


def raise_few(root: str, names: list) -> None:
    from inference.errors import UsageError
    raise UsageError(f"{root} has {len(names)} committed version(s) with model files: a drift report needs two")


def track_drift(report: dict) -> np.ndarray:
    """(steps, K newest) the drift along every newest topic's track: at step i the distance of the row of version
    i + 1 it continues (each version's rows then line up, whatever their numbers)."""
    return np.asarray([[step["hellinger"][track[i + 1]] for track in report["tracks"]]
                       for i, step in enumerate(report["steps"])], dtype=np.float64).reshape(len(report["steps"]), -1)


def plot(path: str, report: dict, topics_plotted: int) -> None:
    """Left: each topic's drift per version (a heat map, topics labelled by their words); right: the rank
    trajectories of the new words of the topics whose new words rank best (log scale, rank 1 on top)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drift = track_drift(report)
    K = drift.shape[1]
    best = sorted(range(K), key=lambda k: min((min(r for r in w["ranks"] if r is not None)
                                              for w in report["new_words"][k]), default=10**9))[:topics_plotted]
    cols = max(1, min(3, len(best)))
    rows = (len(best) + cols - 1) // cols
    fig = plt.figure(figsize=(5 + 4 * cols, max(4.0, 0.28 * K + 1, 3.0 * rows)))
    grid = fig.add_gridspec(max(rows, 1), cols + 1, width_ratios=[1.4] + [1] * cols)
    heat = fig.add_subplot(grid[:, 0])
    image = heat.imshow(drift.T, aspect="auto", cmap="viridis", vmin=0)
    heat.set_yticks(range(K), [f"{k}: {report['labels'][k]}" for k in range(K)], fontsize=7)
    heat.set_xticks(range(len(report["steps"])), [v[:6] for v in report["versions"][1:]], rotation=90, fontsize=7)
    for i, step in enumerate(report["steps"]):           # a row born at this step: its nearest older row
        for k in range(K):
            if report["tracks"][k][i + 1] in step.get("new_rows", ()):
                heat.text(i, k, "new", ha="center", va="center", fontsize=6, color="white")
    heat.set_title("Hellinger distance to the previous version\n(along each newest topic's track)", fontsize=9)
    fig.colorbar(image, ax=heat, fraction=0.05)
    x = np.arange(len(report["versions"]))
    for i, k in enumerate(best):
        ax = fig.add_subplot(grid[i // cols, 1 + i % cols])
        for w in report["new_words"][k]:
            ax.plot(x, [np.nan if r is None else r for r in w["ranks"]], marker="o", ms=3, label=w["term"])
        ax.set_yscale("log")
        ax.invert_yaxis()
        ax.set_title(f"topic {k}: {report['labels'][k]}", fontsize=9)
        ax.set_xticks(x, [v[:6] for v in report["versions"]], rotation=90, fontsize=7)
        ax.set_ylabel("rank in topic", fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    storage.write_bytes(path, buffer.getvalue())
