"""cluster-lda's hyperparameter density (:mod:`drivers.models.cluster_lda.evidence`; Wallach §5.3.2): the
sequential evidence P(z | c) (5.16) and P(a | c) (5.59) that the thesis slice-samples alpha, alpha1, alpha0 (and
eta1, eta0) under, against the product of the predictives with every count recounted from its definition (the
documents split over two partitions, cluster ids as large as provisional ones), and the model's slice sampler of
the concentrations against the posterior computed numerically on a grid."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from drivers.models.cluster_lda import model as cluster_model
from drivers.models.cluster_lda.evidence import SequentialEvidence, pack
from drivers.models.cluster_lda.kernels import log_seating
from drivers.models.cluster_lda.model import ClusterLDA
from inference.gibbs.counts import local_vocabulary
from inference.gibbs.local import count_tables
from inference.gibbs.model import SegmentedBlock
from test_cluster_lda import log_authors_sequential, log_topics_sequential, random_state, sample_model


def packed(docs_z, docs_a, cluster_ids, split):
    """The documents packed as two partitions would send them (documents :split, then split:)."""
    parts = []
    for lo, hi in ((0, split), (split, len(docs_z))):
        ptr = np.r_[0, np.cumsum([len(z) for z in docs_z[lo:hi]])].astype(np.int64)
        aptr = np.r_[0, np.cumsum([len(a) for a in docs_a[lo:hi]])].astype(np.int64)
        z = np.array([t for zs in docs_z[lo:hi] for t in zs], np.int32)
        a = np.array([x for xs in docs_a[lo:hi] for x in xs], np.int64)
        parts.append(pack(np.asarray(cluster_ids[lo:hi], np.int64), ptr, z, aptr, a))
    return parts


@pytest.mark.parametrize("maximal", [False, True])
def test_sequential_evidence_is_the_product_of_the_predictives_from_the_definitions(maximal):
    rng = np.random.default_rng(5)
    T, V, A = 3, 5, 4
    docs_w, docs_z, clusters = random_state(rng, 9, T, V, 3)
    docs_a = [rng.integers(0, A, rng.integers(0, 3)).tolist() for _ in docs_w]
    # cluster ids as the partitions hold them: a provisional id (near 2^58) sorts after the numbered ones
    ids = {0: 2 ** 58 + 987654321, 1: 3, 2: 0}
    evidence = SequentialEvidence(packed(docs_z, docs_a, [ids[c] for c in clusters], 4), T, A, maximal)
    order = [(d, i) for d in range(len(docs_z)) for i in range(len(docs_z[d]))]
    for a, a1, a0, e1, e0 in ((0.7, 1.3, 2.1, 0.6, 1.7), (5.0, 0.2, 40.0, 3.0, 0.1), (0.05, 60.0, 0.4, 25.0, 9.0)):
        slow = log_topics_sequential(docs_z, clusters, order, T, {"alpha": a, "alpha1": a1, "alpha0": a0}, maximal)
        assert evidence.log_topics(a, a1, a0) == pytest.approx(slow, rel=1e-12, abs=1e-10)
        slow = log_authors_sequential(docs_a, clusters, range(len(docs_a)), A, e1, e0, maximal)
        assert evidence.log_authors(e1, e0) == pytest.approx(slow, rel=1e-12, abs=1e-10)


def test_the_minimal_path_evidence_is_not_the_imputed_seating():
    """One document of topics [0, 0] in one cluster: the evidence is (1/T) (1 + alpha q) / (1 + alpha), q the
    cluster's predictive of topic 0 once the first token has reached every level, whereas the seating the minimal
    path imputes (one table) is 1 / (1 + alpha): the evidence keeps the second token's new-table route alpha q."""
    T, a1, a0 = 4, 5.0, 3.0
    evidence = SequentialEvidence(packed([[0, 0]], [[]], [0], 1), T, 0, False)
    q = (1 + a1 * (1 + a0 / T) / (1 + a0)) / (1 + a1)
    for a in (0.1, 1.0, 10.0):
        assert evidence.log_topics(a, a1, a0) == pytest.approx(math.log((1 + a * q) / (1 + a) / T), rel=1e-12)


def grid_posterior(evidence, logs):
    """The posterior of (log alpha, log alpha1, log alpha0) on a grid: the evidence (5.16) from its count tuples,
    times the Gamma(1, scale) hyperprior, times the Jacobian, normalised."""
    l1, l0 = np.meshgrid(logs, logs, indexing="ij")
    a1, a0 = np.exp(l1)[..., None], np.exp(l0)[..., None]
    tup, counts = evidence.topic_tuples, evidence.topic_counts
    q = (tup[:, 1] + a1 * (tup[:, 3] + a0 / evidence.num_topics) / (tup[:, 4] + a0)) / (tup[:, 2] + a1)
    logp = np.empty((logs.shape[0],) + l1.shape)
    for i, la in enumerate(logs):
        a = math.exp(la)
        logp[i] = np.log(tup[:, 0] + a * q) @ counts \
            - (gammaln(a + evidence.lengths) - gammaln(a)) @ evidence.length_counts \
            - (a + a1[..., 0] + a0[..., 0]) / cluster_model.HYPER_SCALE + la + l1 + l0
    return np.exp(logp - logsumexp(logp))


def test_slice_sampler_of_the_concentrations_has_the_numeric_posterior_as_its_stationary_law(monkeypatch):
    """The model's hyperparameter step (5 slice-sampling iterations) repeated 1,200 times on a fixed state (40
    documents drawn from the model, in their planted clusters): the draws of log alpha, log alpha1 and log alpha0
    follow the grid posterior's marginals (Kolmogorov distance < 0.08), whereas the posterior of alpha under the
    seating the minimal path imputes (the density used before) is more than 0.5 away."""
    monkeypatch.setattr(cluster_model, "HYPER_SCALE", 20.0)     # a proper, not too vague prior: a short chain mixes
    docs, truth = sample_model(40, 6, 48, 12, seed=8)
    T, V = 6, 48
    rng = np.random.default_rng(1)
    docs_z = [rng.integers(0, 2, len(w)) + 2 * (c if rng.random() < 0.8 else rng.integers(3)) for w, c in
              zip(docs, truth)]
    model = ClusterLDA(T, V)
    block = SegmentedBlock.from_segments([(f"d{d:03d}", [w]) for d, w in enumerate(docs)])
    state = {"z": np.concatenate(docs_z).astype(np.int32), "cluster": np.asarray(truth, np.int64)}
    tables, _ = count_tables(model, block, state, local_vocabulary(block.words))
    hyper = model.initial_hyper(alpha=1.0, alpha1=1.0, alpha0=1.0)
    stats = [model.partition_stats(block, state, hyper, 0)]
    logs = np.linspace(-7, 6, 53)
    post = grid_posterior(SequentialEvidence(stats, T, 0, False), logs)
    draws = []
    for it in range(1200):
        hyper = model.sample_hyper(tables, hyper, stats, np.random.default_rng(it))
        draws.append([math.log(hyper[k]) for k in ("alpha_doc", "alpha1", "alpha0")])
    draws = np.array(draws[50:])
    cdfs = []
    for axis in range(3):
        cdfs.append(np.cumsum(post.sum(axis=tuple(i for i in range(3) if i != axis))))
        empirical = np.searchsorted(np.sort(draws[:, axis]), logs + (logs[1] - logs[0]) / 2) / draws.shape[0]
        assert np.abs(empirical - cdfs[-1]).max() < 0.08, axis
    levels = tables["clusters"].counts[:, 1:1 + T].astype(np.int64)
    lengths, how_many = np.unique([len(d) for d in docs], return_counts=True)
    seating = np.array([log_seating(math.exp(x), int(levels.sum()), lengths, how_many) for x in logs]) \
        - np.exp(logs) / cluster_model.HYPER_SCALE + logs
    seating = np.cumsum(np.exp(seating - logsumexp(seating)))
    assert np.abs(seating - cdfs[0]).max() > 0.5
