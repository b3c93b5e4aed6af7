"""cluster-lda's start from LDA (``--one-cluster-iterations``, drivers/models/cluster_lda/one_cluster.py), no Spark:
one cluster through the phase then planted clusters found (the
documents seated again, alpha1, alpha0, zeta restarted), the merged table is the recount of the merged state
(both paths, the engine's rule for a global step), one cluster's predictive is the thesis' two-level minimal-path
LDA with m = u, and the option off leaves the hyperparameters and the chain as they were."""
from __future__ import annotations

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
