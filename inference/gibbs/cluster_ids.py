"""Cluster ids of the models whose clusters come and go (Wallach ch. 5 on the Gibbs engine).

A partition's new cluster takes a provisional id, a hash of its founding document and the sweep's seed, in the
upper half of the id space (a function of the data and the seed only, never of a worker or the time); the
driver's global step then numbers the clusters with documents 0..C-1 in the order of their ids (so the
partitions' new clusters come last, in the order of their provisional ids) and sends the renumbering to every
partition as a directive.
"""
from __future__ import annotations

import hashlib

import numpy as np


def id_space(columns: int) -> int:
    """Cluster ids are below this: a keyed table's rows x ``columns`` fit int64 indices."""
    return 1 << (61 - int(columns).bit_length())


def check_clusters(state, n_docs: int, space: int, name: str) -> None:
    """A state's ``cluster``: int64, one per document, every id in 0..space-1 (TypeError / ValueError if not)."""
    c = state.get("cluster") if isinstance(state, dict) else None
    if c is None or c.shape != (n_docs,) or c.dtype != np.int64:
        raise TypeError(f"{name}: the state needs 'cluster', int64 of shape ({n_docs},)")
    if n_docs and (c.min() < 0 or c.max() >= space):
        raise ValueError(f"{name}: cluster ids outside 0..{space - 1}")


def provisional_ids(space: int, doc_ids, seed: int) -> np.ndarray:
    """The provisional id of a cluster founded by each document in the sweep of ``seed``."""
    half = space // 2
    return np.array([half + int.from_bytes(hashlib.blake2b(f"{seed}\x00{d}".encode("utf-8"), digest_size=8).digest(),
                                           "little") % half for d in doc_ids], dtype=np.int64)


def renumbering(keys: np.ndarray) -> dict | None:
    """The directive that numbers the clusters ``keys`` (ascending) 0..C-1, or None when they already are."""
    C = keys.shape[0]
    if np.array_equal(keys, np.arange(C)):
        return None
    return {"old": keys.copy(), "new": np.arange(C, dtype=np.int64)}


def renumbered(clusters: np.ndarray, directive: dict, name: str) -> np.ndarray:
    """Every document's cluster id after the directive (which must name each of them)."""
    old, new = directive["old"], directive["new"]
    at = np.searchsorted(old, clusters)
    if clusters.shape[0] and (np.any(at >= old.shape[0]) or np.any(old[np.minimum(at, old.shape[0] - 1)] != clusters)):
        raise ValueError(f"{name}: the directive does not name every cluster of the partition")
    return new[at].astype(np.int64)


def doc_clusters(doc_ids, item: dict, own_rows, membership) -> dict:
    """``doc_clusters.parquet`` of a cluster model's documents: each one's cluster, its probability and a new
    cluster's, from the samples' sums (``item["acc"]``) or else from the final state (``own_rows(state)``: the
    documents' clusters; ``membership(state, clusters)``: (D, C + 1) probabilities, a new cluster last)."""
    if item.get("state") is None:
        acc = item["acc"]
        cluster, probability, new = acc["cluster"], acc["probability"], acc["new_cluster"]
    else:
        cluster = own_rows(item["state"])
        p = membership(item["state"], cluster)
        probability, new = p[np.arange(len(cluster)), cluster], p[:, -1]
    return {"doc_clusters.parquet": {"doc_id": np.asarray(doc_ids, dtype=object), "cluster": cluster.astype(np.int64),
                                     "probability": probability, "new_cluster": new}}
