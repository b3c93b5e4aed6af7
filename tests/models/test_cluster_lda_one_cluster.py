"""cluster-lda's start from LDA (``--one-cluster-iterations``, drivers/models/cluster_lda/one_cluster.py), no Spark:
one cluster through the phase then planted clusters found (the
documents seated again, alpha1, alpha0, zeta restarted), the merged table is the recount of the merged state
(both paths, the engine's rule for a global step), one cluster's predictive is the thesis' two-level minimal-path
LDA with m = u, and the option off leaves the hyperparameters and the chain as they were."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from drivers.models.cluster_lda import one_cluster
from drivers.models.cluster_lda.kernels import cluster_topic
from drivers.models.cluster_lda.model import ClusterLDA
from inference.gibbs import cluster_ids
from inference.gibbs.counts import local_vocabulary
from inference.gibbs.local import count_tables, run_local_tables
from inference.gibbs.model import SegmentedBlock
from test_cluster_lda import kernel_levels, random_state, sample_model


def planted():
    docs, truth = sample_model(90, 6, 48, 25, seed=4)
    return SegmentedBlock.from_segments([(f"d{d:03d}", [w]) for d, w in enumerate(docs)]), truth


def test_one_cluster_through_the_phase_then_the_planted_clusters():
    block, truth = planted()
    model = ClusterLDA(6, 48)
    seen, restarted = [], []
    _, state, hyper, _, _ = run_local_tables(
        model, block, 45, seed=2, hyper=model.initial_hyper(one_cluster_iterations=15),
        on_iteration=lambda it, st, h: (seen.append(np.unique(st["cluster"]).shape[0]),
                                        it == 15 and restarted.append((h["alpha1"], h["alpha0"], h["zeta"]))))
    assert seen[:15] == [1] * 15 and seen[15] > 1
    assert restarted == [(10.0, 10.0, 1.0)]              # the initial values, for the reseating sweep
    assert hyper["cluster_steps"] == 44                  # no global step after the last iteration
    pairs = Counter(zip(truth.tolist(), state["cluster"].tolist()))
    big = [c for c, n in Counter(state["cluster"].tolist()).items() if n >= 5]
    assert len(big) == 3
    assert sum(max(n for (t, c), n in pairs.items() if c == b) for b in big) >= 87


@pytest.mark.parametrize("maximal", [False, True])
def test_merged_table_is_the_recount_of_the_merged_state(maximal):
    """Three clusters (as two partitions' starts and a renumbering leave them) summed into one: the table the
    global step returns is what the partitions count once the directive is applied (the engine's check)."""
    rng = np.random.default_rng(7)
    docs_w, docs_z, clusters = random_state(rng, 12, 4, 9, 3)
    model = ClusterLDA(4, 9, path="maximal" if maximal else "minimal")
    block = SegmentedBlock.from_segments([(f"d{d}", [w]) for d, w in enumerate(docs_w)])
    provisional = np.array([3, 1 << 40, 1 << 41], dtype=np.int64)        # unnumbered ids, as after a sweep
    state = {"z": np.concatenate([np.asarray(z, np.int32) for z in docs_z]),
             "cluster": provisional[np.asarray(clusters)]}
    local = local_vocabulary(block.words)
    tables, _ = count_tables(model, block, state, local)
    hyper = model.initial_hyper(one_cluster_iterations=3)
    directive = cluster_ids.renumbering(tables["clusters"].keys)
    renamed = dict(tables, clusters=type(tables["clusters"])(directive["new"], tables["clusters"].counts))
    stepped, hyper, merge = one_cluster.step(renamed, hyper, directive)
    assert hyper["cluster_steps"] == 1
    model.apply_directive(block, state, merge)
    assert np.all(state["cluster"] == 0)
    recount, _ = count_tables(model, block, state, local)
    np.testing.assert_array_equal(stepped["clusters"].keys, recount["clusters"].keys)
    np.testing.assert_array_equal(stepped["clusters"].counts, recount["clusters"].counts)
    # after the phase the step only counts
    out, hyper, none = one_cluster.step(renamed, dict(hyper, cluster_steps=2), directive)
    assert out is renamed and none is directive and hyper["cluster_steps"] == 3


def test_one_cluster_is_the_two_level_minimal_path_lda():
    """With every document in one cluster and every topic used, (5.7) is (N_t|d + alpha q(t)) / (N_d + alpha) with
    q(t) = (documents using t + alpha1 / T) / (sum of those + alpha1): the thesis' LDA with a hierarchical prior
    over theta (minimal path; its alpha0 is alpha1 here)."""
    rng = np.random.default_rng(3)
    T, alpha1, alpha0 = 5, 2.7, 13.0
    docs_z = [rng.integers(0, T, rng.integers(3, 9)).tolist() for _ in range(20)]
    docs_z[0] = list(range(T))                                      # every topic used
    ptr, z, rows, ctk, ck, sizes, kt, ktot = kernel_levels(docs_z, [0] * 20, T, False)
    using = np.array([sum(t in set(d) for d in docs_z) for t in range(T)])
    for t in range(T):
        expected = (using[t] + alpha1 / T) / (using.sum() + alpha1)
        assert cluster_topic(0, t, ctk, ck, kt, ktot, alpha1, alpha0, T) == pytest.approx(expected, rel=1e-14)


def test_off_is_the_old_chain_bit_for_bit():
    block, _ = planted()
    model = ClusterLDA(6, 48)
    old = model.initial_hyper()
    assert old == model.initial_hyper(one_cluster_iterations=0) and "cluster_steps" not in old
    a = run_local_tables(model, block, 4, seed=1, hyper=old)
    b = run_local_tables(model, block, 4, seed=1, hyper=model.initial_hyper(one_cluster_iterations=0))
    np.testing.assert_array_equal(a[1]["z"], b[1]["z"])
    np.testing.assert_array_equal(a[1]["cluster"], b[1]["cluster"])
    assert a[2] == b[2]


def enumerated_likelihood(levels, docs, doc, phi_vk, hyper, clusters):
    """p(w_d) summed over the document's cluster (``clusters``: the rows it may join, row C a new one, each weighed by
    the CRP) and its topic vectors, every predictive (5.7) from the minimal-path levels recounted by definition."""
    T = levels.shape[1]
    a, a1, a0, zeta = hyper["alpha_doc"], hyper["alpha1"], hyper["alpha0"], hyper["zeta"]
    weights = np.r_[docs, zeta].astype(float)[clusters]
    total = 0.0
    for c, prior in zip(clusters, weights / weights.sum()):
        for z in np.ndindex(*(T,) * len(doc)):
            p = prior
            for n, (w, t) in enumerate(zip(doc, z)):
                prefix = np.bincount(z[:n], minlength=T)
                M = np.vstack([levels, np.zeros((1, T), int)])
                M[c] += prefix > 0
                K = (M > 0).sum(axis=0)
                q = (M[c, t] + a1 * (K[t] + a0 / T) / (K.sum() + a0)) / (M[c].sum() + a1)
                p *= (prefix[t] + a * q) / (n + a) * phi_vk[w, t]
            total += p
    return total


@pytest.mark.parametrize("steps", [9, 10])
def test_a_model_of_one_cluster_scores_its_test_documents_in_that_cluster(steps):
    """lda-hier (``--one-cluster-iterations`` N, every sweep in the phase: N - 1 or N global steps) has one cluster by
    construction: left-to-right's particles are unbiased for p(w_d) with the document in that cluster (no new
    cluster of weight zeta / (D + zeta), 0.06 nats away here), with the phase's alpha1 and alpha0 even when the
    last global step reset them; the frozen chain never opens a cluster."""
    from inference.left_to_right import LeftToRight

    T, V = 2, 3
    levels, docs = np.array([[3, 1]]), np.array([4])
    model = ClusterLDA(T, V)
    hyper = model.initial_hyper(sample_hyper=False, one_cluster_iterations=10, alpha=0.7, alpha1=1.3, alpha0=2.1,
                                zeta=5.0)
    phase = dict(hyper)
    hyper["cluster_steps"] = steps
    if steps == 10:                 # the last global step reset alpha1, alpha0 and zeta (no sweep came after)
        hyper.update(phase_alpha1=1.3, phase_alpha0=2.1, phase_zeta=5.0, alpha1=10.0, alpha0=10.0, zeta=1.0)
    model.bind_arrays({"cluster_topics": levels, "cluster_docs": docs}, {"hyper": hyper})
    phi_vk = np.array([[0.6, 0.1], [0.3, 0.2], [0.1, 0.7]])
    doc = [2, 0, 2, 1]
    exact = math.log(enumerated_likelihood(levels, docs, doc, phi_vk, phase, [0]))
    with_new = math.log(enumerated_likelihood(levels, docs, doc, phi_vk, phase, [0, 1]))
    assert abs(exact - with_new) > 0.05
    block = SegmentedBlock.from_segments([("doc", [doc])])
    for resample in (True, False):
        row = model.left_to_right(block, hyper, phi_vk, LeftToRight(particles=6000, resample=resample, seed=1)
                                  ).per_document[0]
        assert abs(row[1] - exact) < 0.01, (resample, row[1], exact, with_new)
    state = model.init_state(block, hyper, None, None, 0)
    for seed in range(30):
        model.sweep(block, state, hyper, np.zeros((V, T), np.int32), np.zeros(T, np.int64), seed, frozen_phi=phi_vk)
        assert state["cluster"].tolist() == [0]
    membership = model.membership(block, {"z": np.array([1, 0, 1, 0], np.int32), "cluster": np.array([0])})
    assert membership.tolist() == [[1.0, 0.0]]
