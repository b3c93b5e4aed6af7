"""cluster-lda's start from LDA (``--one-cluster-iterations N``; Wallach §5.3.2: "topic assignments were initialised
using latent Dirichlet allocation").

For the first N iterations every document stays in one cluster: with a single cluster the predictive (5.7) is the
hierarchical prior over theta of the thesis' LDA baseline (theta_d ~ Dir(alpha m_1), m_1 ~ Dir(alpha1 m)), its
minimal-path counts N^_{t|1} the documents that use t, and the corpus level N^_t = 1 for every used topic gives
m = u exactly once every topic is used: the thesis' chapter-5 LDA (alpha, alpha0 there are alpha, alpha1 here),
sampled under the same evidence. After N iterations the cluster step opens and removes clusters as usual, from
those topics (instead of from the random start's many clusters, where zeta can run away, §7 pitfall 12): the first
sweep after the phase takes every document out of the one cluster and seats them again one at a time by the
cluster step given their topics, as the random start does with random topics (left in the one cluster, a
document weighs N_c ~ D against zeta for a new one, and the chain stays there), and alpha1, alpha0 and zeta go
back to their initial values: only LDA's topics and alpha are carried over (the phase samples alpha1 as the
LDA's alpha0, which ends large, m_1 ~ u, and a cluster level that smooth would keep every cluster alike). N at
least ``--iterations`` trains that LDA baseline throughout.

On the engine each partition's start opens its own cluster (a partition cannot see another's new cluster), so the
driver's global step merges the clusters into one while the phase lasts: a cluster row is the sum of its
documents' rows under both paths (sizes, minimal-path document counts, maximal-path token counts), so the merged
table is the recount of the merged state, and the directive renames every cluster 0. The sweeps of the phase open
no cluster (``max_clusters`` 1). ``hyper["cluster_steps"]`` counts the global steps (synchronisations), so
iteration i is in the phase when ``cluster_steps < N`` before its sweep. On several partitions each one seats its
own documents after the phase, seeing only the clusters its earlier documents opened (one partition: the
thesis' sequential start).
"""
from __future__ import annotations

import numpy as np

from inference.gibbs.tables import KeyedCounts

UNLIMITED = np.iinfo(np.int64).max


#: the concentrations that start again from their initial values after the phase
RESTARTED = ("alpha1", "alpha0", "zeta")


def phase_hyper(one_cluster_iterations, hyper: dict) -> dict:
    """The hyperparameters' entries of the phase, from the initial ``hyper`` (none when it is off: model.json as
    before)."""
    if one_cluster_iterations is None or int(one_cluster_iterations) == 0:
        return {}
    if int(one_cluster_iterations) < 0:
        raise ValueError("one_cluster_iterations must be >= 0")
    return {"one_cluster_iterations": int(one_cluster_iterations), "cluster_steps": 0,
            **{f"initial_{key}": float(hyper[key]) for key in RESTARTED}}


def in_phase(hyper: dict) -> bool:
    """Whether the next sweep keeps every document in one cluster."""
    return int(hyper.get("cluster_steps", 0)) < int(hyper.get("one_cluster_iterations", 0))


def max_clusters(hyper: dict, otherwise: int = UNLIMITED) -> int:
    """The most clusters the next sweep may have."""
    return 1 if in_phase(hyper) else otherwise


def reseats(hyper: dict) -> bool:
    """Whether the next sweep is the first after the phase (its documents are seated again)."""
    return "one_cluster_iterations" in hyper and int(hyper["cluster_steps"]) == int(hyper["one_cluster_iterations"])


def unseat(state: dict, tables: dict, derived: dict, columns: int) -> None:
    """Every document of the partition out of its cluster, the partition's copy of the cluster and corpus levels
    emptied (the sweep then seats the documents one at a time)."""
    state["cluster"] = np.full(state["cluster"].shape[0], -1, dtype=np.int64)
    tables["clusters"] = KeyedCounts.empty(columns)
    derived["corpus_topics"] = np.zeros_like(derived["corpus_topics"])
    derived["corpus_total"] = np.zeros_like(derived["corpus_total"])


def merged(clusters: KeyedCounts) -> tuple[KeyedCounts, dict]:
    """``(the table with every cluster summed into cluster 0, the directive that renames them all 0)``."""
    total = clusters.counts.astype(np.int64).sum(axis=0, keepdims=True).astype(clusters.counts.dtype)
    return (KeyedCounts(np.zeros(1, np.int64), np.ascontiguousarray(total)),
            {"old": clusters.keys.copy(), "new": np.zeros(clusters.nnz, dtype=np.int64)})


def never_left(hyper: dict) -> bool:
    """Whether every sweep of the trained chain kept the documents in one cluster (``--one-cluster-iterations`` at
    least the iterations less one: the LDA baseline): its model has one cluster by construction, so a test
    document belongs to it (no new cluster, whatever zeta)."""
    return "one_cluster_iterations" in hyper and int(hyper["cluster_steps"]) <= int(hyper["one_cluster_iterations"])


def scoring_hyper(hyper: dict) -> dict:
    """The hyperparameters a trained model scores documents with: a chain that never left the phase keeps the
    phase's alpha1 and alpha0 (a reset at its last global step was for a reseating sweep that never came)."""
    if not never_left(hyper):
        return hyper
    return dict(hyper, **{key: hyper[f"phase_{key}"] for key in RESTARTED if f"phase_{key}" in hyper})


def step(tables: dict, hyper: dict, directive: dict | None) -> tuple[dict, dict, dict | None]:
    """The phase's part of the global step, after the clusters were renumbered (``directive``) and the
    hyperparameters sampled: count the step and, while the next sweep is in the phase, merge the clusters."""
    if "one_cluster_iterations" not in hyper:
        return tables, hyper, directive
    hyper = dict(hyper, cluster_steps=int(hyper["cluster_steps"]) + 1)
    if reseats(hyper):
        hyper.update({f"phase_{key}": hyper[key] for key in RESTARTED})
        hyper.update({key: hyper[f"initial_{key}"] for key in RESTARTED})
    clusters = tables["clusters"]
    if not in_phase(hyper) or clusters.nnz <= 1:
        return tables, hyper, directive
    table, merge = merged(clusters)
    if directive is not None:           # renumbered first: the merge names the new ids, the state holds the old
        merge = {"old": directive["old"], "new": np.zeros(directive["old"].shape[0], dtype=np.int64)}
    return dict(tables, clusters=table), hyper, merge
