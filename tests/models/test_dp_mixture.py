"""The word-based DP mixture (Wallach §4.5, :mod:`drivers.models.dp_mixture.model`): the sweep kernel against a slow
direct cluster step, its weights against the exact joint (5.30) x Dirichlet-multinomials, the chain (with the
driver's relabelling step and new clusters under provisional ids) against the enumerated posterior over the set
partitions of four documents, recovery of clusters drawn from the model, the slice sampler against a known
density, and the exact predictive of held-out and new documents."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from drivers.models.dp_mixture.kernels import document_bags, dp_sweep, membership_log_weights, slice_sample
from drivers.models.dp_mixture.model import DPMixture, _concatenated
from inference.gibbs.heldout import HeldoutSchedule, split_observed
from inference.gibbs.local import count_tables, run_local_tables
from inference.gibbs.model import SegmentedBlock


def log_joint(docs, clusters, V, beta, zeta):
    """log P(w, c) of (5.30) and the clusters' Dirichlet-multinomials, straight from the definitions."""
    D = len(docs)
    labels = sorted(set(clusters))
    out = len(labels) * math.log(zeta) - sum(math.log(zeta + d) for d in range(D))
    for c in labels:
        members = [d for d in range(D) if clusters[d] == c]
        out += math.lgamma(len(members))
        counts = np.zeros(V)
        for d in members:
            np.add.at(counts, docs[d], 1)
        out += math.lgamma(V * beta) - math.lgamma(counts.sum() + V * beta)
        out += sum(math.lgamma(n + beta) - math.lgamma(beta) for n in counts)
    return out


def block_of(docs):
    return SegmentedBlock.from_segments([(f"d{d:05d}", [list(w)]) for d, w in enumerate(docs)])


def dense_state(docs, clusters, V):
    """counts (C x V), totals, sizes of ``clusters`` (labels 0..C-1)."""
    C = max(clusters) + 1
    counts = np.zeros((C, V), dtype=np.int32)
    for d, c in enumerate(clusters):
        np.add.at(counts[c], docs[d], 1)
    return counts, counts.sum(axis=1).astype(np.int64), np.bincount(clusters, minlength=C).astype(np.int64)


def slow_sweep(docs, clusters, V, beta, zeta, uniforms):
    """The cluster step, document by document, from the joint's definition (weights: joint of each choice)."""
    clusters = list(clusters)
    for d in range(len(docs)):
        others = sorted(set(clusters[:d] + clusters[d + 1:]))
        choices = others + [max(clusters) + 1]
        logw = np.array([log_joint(docs, clusters[:d] + [c] + clusters[d + 1:], V, beta, zeta) for c in choices])
        p = np.exp(logw - logw.max())
        cum = np.cumsum(p / p.sum())
        clusters[d] = choices[int(np.searchsorted(cum, uniforms[d], side="right"))]
    return clusters


def canonical(clusters):
    """A set partition as labels in order of first appearance."""
    seen = {}
    return tuple(seen.setdefault(c, len(seen)) for c in clusters)


def set_partitions(n):
    if n == 0:
        yield ()
        return
    for p in set_partitions(n - 1):
        for c in range(max(p, default=-1) + 2):
            yield p + (c,)


DOCS = [[0, 0, 1], [0, 1], [2, 2], [2, 1, 2, 2]]
V = 3


def test_weights_of_the_cluster_step_are_ratios_of_the_joint():
    beta, zeta = 0.4, 0.7
    clusters = [0, 0, 1, 0]
    counts, totals, sizes = dense_state(DOCS, clusters, V)
    logw = membership_log_weights(*document_bags(block_of(DOCS).token_ptr(), block_of(DOCS).words, V),
                                  np.array(clusters, dtype=np.int64), counts, totals, sizes, zeta, beta)
    for d in range(len(DOCS)):
        choices = [0, 1, 2]                       # the two clusters, then a new one
        exact = np.array([log_joint(DOCS, clusters[:d] + [c] + clusters[d + 1:], V, beta, zeta) for c in choices])
        got = logw[d]
        if sizes[clusters[d]] == 1:               # d alone: its own cluster is the new one
            exact, got = exact[[c for c in choices if c != clusters[d]]], got[np.isfinite(got)]
        np.testing.assert_allclose(got - got.max(), exact - exact.max(), atol=1e-10)


def test_sweep_kernel_is_the_slow_cluster_step():
    rng = np.random.default_rng(4)
    docs = [rng.integers(0, 5, rng.integers(1, 6)).tolist() for _ in range(9)]
    clusters = rng.integers(0, 3, 9).tolist()
    clusters = list(canonical(clusters))
    counts, totals, sizes = dense_state(docs, clusters, 5)
    C = counts.shape[0]
    cap = C + 9
    counts = np.vstack([counts, np.zeros((9, 5), np.int32)])
    totals, sizes = np.r_[totals, np.zeros(9, np.int64)], np.r_[sizes, np.zeros(9, np.int64)]
    rows = np.array(clusters, dtype=np.int64)
    uniforms = rng.random(9)
    block = block_of(docs)
    start, used = dp_sweep(*document_bags(block.token_ptr(), block.words, 5), rows, counts, totals, sizes, C,
                           np.full(cap, -1, np.int64), 0.8, 0.3, uniforms, 0, 100)
    assert start == -1
    assert canonical(rows.tolist()) == canonical(slow_sweep(docs, clusters, 5, 0.3, 0.8, uniforms))
    np.testing.assert_array_equal(counts[:used], dense_state(docs, rows.tolist(), 5)[0][:used])


def test_chain_samples_the_enumerated_posterior_over_set_partitions():
    """Exact: 15 set partitions of 4 documents; the chain (sweeps, the table recount, the global step's
    relabelling and new clusters under provisional ids) visits them as the posterior says."""
    beta, zeta = 0.5, 1.2
    states = list(set_partitions(4))
    logp = np.array([log_joint(DOCS, list(s), V, beta, zeta) for s in states])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    model = DPMixture(2, V)
    visits = Counter()
    run_local_tables(model, block_of(DOCS), 3000, seed=1,
                     hyper=model.initial_hyper(beta=beta, zeta=zeta, sample_hyper=False),
                     on_iteration=lambda it, state, hyper: visits.update([canonical(state["cluster"].tolist())]))
    empirical = np.array([visits[s] for s in states]) / sum(visits.values())
    assert 0.5 * np.abs(empirical - p).sum() < 0.04


def sample_mixture(n_docs, clusters, vocab, length, beta, seed):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(vocab, beta), size=clusters)
    truth = rng.integers(0, clusters, n_docs)
    return [rng.choice(vocab, length, p=phi[c]).tolist() for c in truth], truth, phi


def test_recovers_the_clusters_of_data_drawn_from_the_model():
    docs, truth, _ = sample_mixture(150, 3, 40, 30, 0.1, seed=2)
    model = DPMixture(6, 40)
    block, state, hyper, tables, _ = run_local_tables(model, block_of(docs), 30, seed=5)
    found = state["cluster"]
    assert len(np.unique(found)) == 3
    pairs = Counter(zip(truth.tolist(), found.tolist()))
    assert sum(pairs.values()) == 150 and len(pairs) == 3         # one found cluster per true cluster
    assert 0.03 < hyper["beta"] < 0.3 and 0 < hyper["zeta"] < 10
    assert tables["cluster_words"].keys.tolist() == [0, 1, 2]      # the global step's ids


def test_slice_sampler_draws_from_its_density():
    """Gamma(3, 1) in log space (density x^3 e^-x in x = log value): the draws' mean and variance."""
    rng = np.random.default_rng(0)
    x, draws = np.zeros(1), []
    for _ in range(4000):
        x = slice_sample(lambda v: 3 * v[0] - math.exp(v[0]), x, rng, np.ones(1), 1)
        draws.append(math.exp(x[0]))
    assert abs(np.mean(draws) - 3) < 0.15 and abs(np.var(draws) - 3) < 0.5


def test_heldout_score_and_infer_are_the_mixtures_exact_predictive():
    docs, _, _ = sample_mixture(60, 2, 12, 10, 0.2, seed=8)
    model = DPMixture(2, 12)
    block, state, hyper, tables, derived = run_local_tables(model, block_of(docs), 10, seed=1)

    class Result:
        pass
    result = Result()
    result.tables, result.hyper = tables, hyper
    model.bind_result(result)
    test = block_of([[0, 1, 1, 3], [5, 5, 6, 7, 2]])
    words, sizes = model.trained["words"], model.trained["docs"]
    beta, zeta, D = hyper["beta"], hyper["zeta"], sizes.sum()

    def direct(doc):
        """log sum_c pi_c DM(doc | c), the DM as the product of the sequential predictives."""
        terms = []
        for c in range(words.shape[0] + 1):
            n = words[c].astype(float).copy() if c < words.shape[0] else np.zeros(12)
            weight = sizes[c] if c < words.shape[0] else zeta
            lp = math.log(weight / (D + zeta))
            for w in doc:
                lp += math.log((n[w] + beta) / (n.sum() + 12 * beta))
                n[w] += 1
            terms.append(lp)
        return float(np.logaddexp.reduce(terms))

    every = model.heldout_loglik(test, hyper, None, HeldoutSchedule(observed=None), 0, 0)
    np.testing.assert_allclose(every, [direct([0, 1, 1, 3]) + direct([5, 5, 6, 7, 2]), 9, 2])
    completion = model.heldout_loglik(test, hyper, None, HeldoutSchedule(observed=0.5), 3, 0)
    observed, scored = split_observed(test, 0.5, 3)
    both = _concatenated(observed, scored)
    expected = sum(direct(both.words[both.token_ptr()[d]:both.token_ptr()[d + 1]].tolist())
                   - direct(observed.words[observed.token_ptr()[d]:observed.token_ptr()[d + 1]].tolist())
                   for d in range(2))
    np.testing.assert_allclose(completion, [expected, scored.n_tokens, 2])
    sums = model.infer_sums(test, hyper, None, HeldoutSchedule(), 0, 0)
    np.testing.assert_allclose(sums["doc"].sum(axis=1), 1.0)
    assert sums["cluster"].shape == (2,) and np.all(sums["cluster"] < words.shape[0])
    with pytest.raises(TypeError, match="cluster"):
        model.check_state(test, {"z": np.zeros(9, np.int32)})
    assert count_tables(model, block, state, None)[0]["cluster_docs"].counts.sum() == 60


def test_driver_memory_follows_the_declared_tables():
    """A DP mixture's keyed tables are sized by their nonzeros (at most one a token each), never by the id space;
    LDA's by its dense V x K table, as before."""
    from drivers import registry

    gibbs = registry.family("gibbs")
    assert gibbs.driver_bytes(50, 25_000, registry.model("lda-gibbs"), 10**6) == gibbs.driver_bytes(50, 25_000) \
        == (3 * 4 + 2 * 8) * 50 * 25_000
    assert gibbs.driver_bytes(50, 25_000, registry.model("dp-mixture"), 10**6) == \
        2 * 3 * 12 * 10**6 + 2 * 8 * 50 * 25_000
