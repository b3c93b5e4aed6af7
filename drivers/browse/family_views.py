"""The family views of the topic browser, where a model directory has their data:

* ``segments``: segment-by-segment topic flow (Gibbs models of segmented corpora: stm, seqlda, adatm; from
  ``segment_topics.parquet``): each topic's mean proportion at each segment position, and its proportion in each
  segment of its top documents;
* ``clusters``: a dp-mixture's clusters (``doc_clusters.parquet``; its clusters are its topics): the documents
  sampled into each cluster and their mean membership probability; a cluster-lda's clusters of documents
  (``cluster_topics.npy``, ``cluster_docs.npy``: the clusters' topic counts and sizes): per topic the clusters that
  give it the largest share of their tokens;
* ``tree``: a tree model's linked words (``tree_concepts.npy``): the words a concept of the prior tree links to
  each listed word;
* ``drift``: across the committed versions of a model root, each topic's Hellinger distance to its predecessor
  over the older version's vocabulary (as ``refresh`` reports it).

(Languages side by side for polylingual models are the word panels of :mod:`drivers.browse.data`.)"""
from __future__ import annotations

import logging

import numpy as np

from drivers import registry, storage
from drivers.browse import metadata_view
from drivers.store import model_root, model_store, publish, topics_text
from drivers.store.base_link import stored_path
from inference.distances import hellinger

log = logging.getLogger("spark_topics.browse")

#: segment positions shown in the flow (later segments are left out of the means)
MAX_POSITIONS = 60
#: versions of a model root compared (the newest)
MAX_VERSIONS = 20


def _dataset(path: str):
    import pyarrow.dataset as ds

    filesystem, p = storage.resolve(path)
    return ds.dataset(p, filesystem=filesystem, format="parquet")


class FamilyViews:
    def __init__(self):
        self.flow_mean = None       # K x S mean proportion by segment position
        self.flow_counts = None     # S segments at each position
        self.doc_flows = {}         # doc_id -> S_d x K
        self.cluster_docs = None    # K documents sampled into each cluster
        self.cluster_probability = None
        self.topic_clusters = None  # cluster-lda: per topic [(cluster, documents, the topic's share of its tokens)]
        self.links = None           # global word id -> [global word ids linked by a concept]
        self.link_terms = None      # global id -> label
        self.drift_versions = None
        self.drift = None           # (versions - 1) x K
        self.languages = False      # the word panels show the languages side by side
        self.metadata = {}          # a kept column -> its groups' mean proportions (metadata_view.topic_shares)

    def kinds(self) -> list[str]:
        return [name for name, present in (("languages", self.languages),
                                           ("segments", self.flow_mean is not None),
                                           ("clusters", self.cluster_docs is not None
                                            or self.topic_clusters is not None),
                                           ("tree", self.links is not None),
                                           ("drift", self.drift is not None),
                                           ("metadata", bool(self.metadata))) if present]

    def words(self, k: int, panel, ids: np.ndarray) -> dict:
        """Per listed word of topic k: the words the tree links it to."""
        if self.links is None:
            return {}
        return {"linked": [[self.link_terms[j] for j in self.links.get(int(i) + panel.offset, ())] for i in ids]}

    def topic(self, k: int, doc_ids: list) -> dict:
        out = {}
        if self.flow_mean is not None:
            out["flow"] = {"mean": np.round(self.flow_mean[k], 5).tolist(), "segments": self.flow_counts.tolist(),
                           "docs": {d: np.round(self.doc_flows[d][:, k], 4).tolist()
                                    for d in doc_ids if d in self.doc_flows}}
        if self.cluster_docs is not None:
            out["cluster"] = {"documents": int(self.cluster_docs[k]),
                              "mean_probability": _round(self.cluster_probability[k])}
        if self.topic_clusters is not None:
            out["clusters"] = [{"cluster": c, "documents": n, "share": _round(share)}
                               for c, n, share in self.topic_clusters[k]]
        if self.metadata:
            out["metadata"] = {name: {"values": m["values"], "documents": m["documents"],
                                      "share": np.round(m["share"][k], 5).tolist()}
                               for name, m in self.metadata.items()}
        if self.drift is not None:
            out["drift"] = {"versions": self.drift_versions, "hellinger": np.round(self.drift[:, k], 5).tolist()}
        return out


def _round(x):
    return None if not np.isfinite(x) else round(float(x), 4)


def segment_flow(directory: str, K: int, doc_ids: list, views: FamilyViews, batch_rows: int = 65536) -> None:
    path = storage.join(directory, "segment_topics.parquet")
    if not storage.exists(path):
        return
    sums, counts = np.zeros((K, MAX_POSITIONS)), np.zeros(MAX_POSITIONS, dtype=np.int64)
    wanted = set(doc_ids)
    flows = {}
    for batch in _dataset(path).to_batches(columns=["doc_id", "segment", "theta"], batch_size=batch_rows):
        if batch.num_rows == 0:
            continue
        segment = np.asarray(batch.column(1).to_numpy(zero_copy_only=False), dtype=np.int64)
        theta = np.asarray(batch.column(2).flatten().to_numpy(zero_copy_only=False)).reshape(batch.num_rows, K)
        keep = segment < MAX_POSITIONS
        np.add.at(sums.T, segment[keep], theta[keep])
        counts += np.bincount(segment[keep], minlength=MAX_POSITIONS)
        ids = batch.column(0).to_pylist()
        for row, doc_id in enumerate(ids):
            if doc_id in wanted:
                flows.setdefault(doc_id, []).append((segment[row], theta[row]))
    used = int(np.max(np.nonzero(counts)[0])) + 1 if counts.any() else 0
    if used < 2:            # one segment per document: no flow to show
        return
    views.flow_counts = counts[:used]
    views.flow_mean = sums[:, :used] / np.maximum(counts[:used], 1)[None, :]
    views.doc_flows = {d: np.stack([t for _, t in sorted(rows, key=lambda r: r[0])]) for d, rows in flows.items()}


#: clusters listed per topic (cluster-lda)
CLUSTERS_PER_TOPIC = 5


def clusters(directory: str, K: int, views: FamilyViews) -> None:
    levels_path = storage.join(directory, "cluster_topics.npy")
    if storage.exists(levels_path):                     # cluster-lda: clusters of documents over the K topics
        levels = storage.load_npy(levels_path).astype(np.float64)
        sizes = storage.load_npy(storage.join(directory, "cluster_docs.npy")).astype(np.int64)
        tokens = levels.sum(axis=1, keepdims=True)
        shares = np.divide(levels, tokens, out=np.zeros_like(levels), where=tokens > 0)
        views.topic_clusters = [
            [(int(c), int(sizes[c]), float(shares[c, k]))
             for c in np.argsort(-shares[:, k], kind="stable")[:CLUSTERS_PER_TOPIC] if shares[c, k] > 0]
            for k in range(K)]
        return
    path = storage.join(directory, "doc_clusters.parquet")
    if not storage.exists(path):
        return
    frame = _dataset(path).to_table(columns=["cluster", "probability"]).to_pandas()
    cluster = frame["cluster"].to_numpy(np.int64)
    ok = (cluster >= 0) & (cluster < K)
    views.cluster_docs = np.bincount(cluster[ok], minlength=K)
    total = np.bincount(cluster[ok], weights=frame["probability"].to_numpy(np.float64)[ok], minlength=K)
    with np.errstate(invalid="ignore", divide="ignore"):
        views.cluster_probability = total / views.cluster_docs


def tree_links(model, views: FamilyViews) -> None:
    concepts = topics_text.tree_concepts(model)
    if concepts is None:
        return
    links = {}
    for a, b in np.asarray(concepts, dtype=np.int64).reshape(-1, 2):
        links.setdefault(int(a), []).append(int(b))
        links.setdefault(int(b), []).append(int(a))
    terms = model.vocab["term"].to_numpy().astype(str)
    langs = model.vocab["lang"].to_numpy().astype(str) if "lang" in model.vocab.columns else None
    views.links = links
    views.link_terms = {i: (f"{langs[i]}:{terms[i]}" if langs is not None else terms[i])
                        for i in {j for targets in links.values() for j in targets}}


def base_model(root: str, oldest: str) -> str | None:
    """The base model the oldest version was refreshed from, when it is still there and is that model (its
    completion token is the one the root recorded)."""
    meta = storage.load_json(storage.join(model_root.version_dir(root, oldest), "model.json"))
    if (meta.get("refresh") or {}).get("mode") == "base":
        return None                       # the oldest version is the base model itself (version 0)
    parent = (meta.get("refresh") or {}).get("parent") or {}
    base = stored_path(parent.get("base"), root)
    if base is None or not storage.exists(storage.join(base, "model.json")):
        return None
    if parent.get("token") and (publish.read_marker(base) or {}).get("token") != parent["token"]:
        log.warning("%s is not the base model %s was refreshed from (another completion token): drift starts at "
                    "the oldest version", base, root)
        return None
    return base


def version_drift(root: str, views: FamilyViews) -> None:
    """Hellinger distance of each topic to itself in the previous committed version (the first version: to the
    base model), over the older vocabulary, as ``refresh`` reports it."""
    names = list(reversed(model_root.chain(root)))
    if not names:
        return
    base = base_model(root, names[0])
    steps = ([("base", base)] if base is not None else []) + [(n, model_root.version_dir(root, n)) for n in names]
    steps = steps[-MAX_VERSIONS:]
    if len(steps) < 2:
        return
    previous, rows = None, []
    for _, directory in steps:
        phi = np.asarray(model_store.load_model(directory).topic_word(), dtype=np.float64)
        if previous is not None and previous.shape[0] == phi.shape[0]:
            v = previous.shape[1]
            newer = phi[:, :v] / phi[:, :v].sum(axis=1, keepdims=True)
            rows.append(hellinger(previous, newer))
        previous = phi
    if len(rows) == len(steps) - 1:
        views.drift_versions = [name for name, _ in steps]
        views.drift = np.asarray(rows)


def collect(model, directory: str, root: str | None, doc_ids: list) -> FamilyViews:
    views = FamilyViews()
    K = model.num_topics
    if registry.of_meta(model.meta).corpus == registry.SEGMENTED:    # stm, seqlda, adatm
        segment_flow(directory, K, [str(d) for d in doc_ids], views)
    clusters(directory, K, views)
    tree_links(model, views)
    views.languages = bool(model.languages)
    views.metadata = metadata_view.topic_shares(directory, list(model.meta.get("kept_columns") or ()), K)
    if root is not None:
        version_drift(root, views)
    return views
