"""The cluster-based topic model (Wallach §5.3, :mod:`drivers.models.cluster_lda.model`): the path counts against a
recount after random add/remove sequences, the two conditionals (the cluster step (5.31)-(5.32), the topic step
(5.33)) against ratios of the joint computed directly, the sweep kernel against a slow sweep from the joint, the
hyperparameters' densities against the evidence built token by token, recovery of planted clusters
from data drawn from the model, and the frozen chain of held-out documents (each sees the training counts only)."""
from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from drivers.models.cluster_lda.model import ClusterLDA
from drivers.models.cluster_lda.kernels import (cluster_lda_sweep, log_seating, membership_log_weights,
                                                 path_add, path_counts, path_remove)
from inference.gibbs.heldout import HeldoutSchedule
from inference.gibbs.local import run_local_tables
from inference.gibbs.model import SegmentedBlock

HYPER = {"alpha": 0.7, "alpha1": 1.3, "alpha0": 2.1, "zeta": 0.8, "beta": 0.4}


# ---- the joint, straight from the definitions
def log_topics_sequential(docs_z, clusters, order, T, hyper, maximal):
    """log P(z | c) (5.16) as the product of the predictives (5.7) of the tokens in ``order`` ((doc, position)
    pairs), every count recounted from the tokens before by the path assumption's definition."""
    a, a1, a0 = hyper["alpha"], hyper["alpha1"], hyper["alpha0"]
    seen = []
    out = 0.0
    for d, i in order:
        t = docs_z[d][i]
        n_d = Counter(docs_z[dd][ii] for dd, ii in seen if dd == d)
        in_cluster = {}                 # doc -> its topic counts, docs of d's cluster
        for dd, ii in seen:
            if clusters[dd] == clusters[d]:
                in_cluster.setdefault(dd, Counter())[docs_z[dd][ii]] += 1
        per_cluster = {}
        for dd, ii in seen:
            per_cluster.setdefault(clusters[dd], {}).setdefault(dd, Counter())[docs_z[dd][ii]] += 1

        def level(docs):                # M_ct of one cluster: documents using t (minimal) or tokens (maximal)
            m = Counter()
            for counts in docs.values():
                for k, n in counts.items():
                    m[k] += n if maximal else 1
            return m
        M = level(in_cluster)
        Ks = Counter()
        for docs in per_cluster.values():
            for k, n in level(docs).items():
                Ks[k] += n if maximal else 1
        base = (Ks[t] + a0 / T) / (sum(Ks.values()) + a0)
        q = (M[t] + a1 * base) / (sum(M.values()) + a1)
        out += math.log((n_d[t] + a * q) / (sum(n_d.values()) + a))
        seen.append((d, i))
    return out


def log_joint(docs_w, docs_z, clusters, order, T, V, hyper, maximal):
    """log P(w, z, c): (5.30) x (5.16) in ``order`` x the topics' Dirichlet-multinomials (5.15)."""
    D, beta, zeta = len(docs_w), hyper["beta"], hyper["zeta"]
    sizes = Counter(clusters)
    out = len(sizes) * math.log(zeta) + sum(math.lgamma(n) for n in sizes.values()) \
        - sum(math.log(zeta + d) for d in range(D))
    out += log_topics_sequential(docs_z, clusters, order, T, hyper, maximal)
    nwk = np.zeros((V, T))
    for w, z in zip(docs_w, docs_z):
        np.add.at(nwk, (w, z), 1)
    out += T * (math.lgamma(V * beta) - V * math.lgamma(beta)) + sum(
        math.lgamma(n + beta) for n in nwk.ravel()) - sum(math.lgamma(n + V * beta) for n in nwk.sum(axis=0))
    return out


def order_with_last(docs_z, last):
    """Every token in document order, those of ``last`` (a document, or a (doc, position) pair) at the end."""
    every = [(d, i) for d in range(len(docs_z)) for i in range(len(docs_z[d]))]
    if isinstance(last, tuple):
        return [p for p in every if p != last] + [last]
    return [p for p in every if p[0] != last] + [p for p in every if p[0] == last]


def kernel_levels(docs_z, clusters, T, maximal, spare=1):
    """The kernels' arrays of the state: ptr, z, rows, ctk (C + spare rows), ck, sizes, kt, ktot."""
    ptr = np.r_[0, np.cumsum([len(z) for z in docs_z])].astype(np.int64)
    z = np.concatenate([np.asarray(z, np.int32) for z in docs_z])
    rows = np.asarray(clusters, np.int64)
    C = rows.max() + 1
    M, K = path_counts(ptr, z, rows, C + spare, T, maximal)
    sizes = np.bincount(rows, minlength=C + spare).astype(np.int64)
    return ptr, z, rows, M, M.sum(axis=1), sizes, K, np.array([K.sum()], np.int64)


def no_author_args(n_docs, rows):
    """The kernels' author arguments of documents without authors."""
    return (np.zeros(n_docs + 1, np.int64), np.zeros(0, np.int64), np.zeros((rows, 0), np.int64),
            np.zeros(rows, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64), 1.0, 1.0)


def random_state(rng, D, T, V, C):
    docs_w = [rng.integers(0, V, rng.integers(1, 5)).tolist() for _ in range(D)]
    docs_z = [rng.integers(0, T, len(w)).tolist() for w in docs_w]
    clusters = rng.integers(0, C, D)
    clusters = np.unique(clusters, return_inverse=True)[1].ravel().tolist()      # labels 0..C'-1
    return docs_w, docs_z, clusters


# ---- the path counts
@pytest.mark.parametrize("maximal", [False, True])
def test_path_counts_equal_a_recount_after_random_adds_and_removes(maximal):
    rng = np.random.default_rng(1)
    D, T, C = 7, 4, 3
    clusters = rng.integers(0, C, D)
    topics = [[] for _ in range(D)]
    ndk = np.zeros((D, T), np.int64)
    ctk, ck, kt, ktot = np.zeros((C, T), np.int64), np.zeros(C, np.int64), np.zeros(T, np.int64), np.zeros(1, np.int64)
    for step in range(2000):
        d = int(rng.integers(D))
        if topics[d] and rng.random() < 0.45:
            t = topics[d].pop(int(rng.integers(len(topics[d]))))
            path_remove(clusters[d], t, ndk[d], ctk, ck, kt, ktot, maximal)
        elif topics[d] and rng.random() < 0.1:          # the document moves to another cluster
            for t in topics[d][::-1]:
                path_remove(clusters[d], t, ndk[d], ctk, ck, kt, ktot, maximal)
            clusters[d] = rng.integers(C)
            for t in topics[d]:
                path_add(clusters[d], t, ndk[d], ctk, ck, kt, ktot, maximal)
        else:
            t = int(rng.integers(T))
            topics[d].append(t)
            path_add(clusters[d], t, ndk[d], ctk, ck, kt, ktot, maximal)
        ptr = np.r_[0, np.cumsum([len(z) for z in topics])].astype(np.int64)
        z = np.array([t for zs in topics for t in zs], dtype=np.int32)
        M, K = path_counts(ptr, z, clusters, C, T, maximal)
        # the slow reference, from the definitions
        slow_M = np.zeros((C, T), np.int64)
        for dd in range(D):
            for t, n in Counter(topics[dd]).items():
                slow_M[clusters[dd], t] += n if maximal else 1
        slow_K = slow_M.sum(axis=0) if maximal else (slow_M > 0).sum(axis=0)
        assert np.array_equal(M, slow_M) and np.array_equal(K, slow_K), step
        assert np.array_equal(ctk, slow_M) and np.array_equal(kt, slow_K), step
        assert np.array_equal(ck, slow_M.sum(axis=1)) and ktot[0] == slow_K.sum(), step
        assert all(np.array_equal(ndk[dd], np.bincount(topics[dd], minlength=T)) for dd in range(D))


# ---- the conditionals against the joint
@pytest.mark.parametrize("maximal", [False, True])
def test_cluster_step_weights_are_ratios_of_the_joint(maximal):
    rng = np.random.default_rng(2)
    T, V = 3, 4
    docs_w, docs_z, clusters = random_state(rng, 6, T, V, 3)
    ptr, z, rows, ctk, ck, sizes, kt, ktot = kernel_levels(docs_z, clusters, T, maximal)
    C = ctk.shape[0] - 1
    logw = membership_log_weights(ptr, z, rows, ctk, ck, sizes, kt, ktot, HYPER["zeta"], HYPER["alpha"],
                                  HYPER["alpha1"], HYPER["alpha0"], maximal, *no_author_args(len(docs_w), ctk.shape[0]))
    for d in range(len(docs_w)):
        others = sorted(set(clusters[:d] + clusters[d + 1:]))
        choices = others + [C]                          # every other cluster, then a new one
        order = order_with_last(docs_z, d)
        exact = np.array([log_joint(docs_w, docs_z, clusters[:d] + [c] + clusters[d + 1:], order, T, V, HYPER,
                                    maximal) for c in choices])
        got = logw[d, choices]
        assert np.all(np.isfinite(got)) and np.isinf(logw[d]).sum() == C + 1 - len(choices)
        np.testing.assert_allclose(got - got.max(), exact - exact.max(), atol=1e-10)


def slow_sweep(docs_w, docs_z, clusters, T, V, hyper, maximal, uniforms):
    """One cycle from the joint's ratios: per document the cluster step (its rows in order, skipping empty ones,
    then a new row), then the topic step of each token; draws as the kernel's (uniform x total, cumulative)."""
    docs_z = [list(z) for z in docs_z]
    clusters = list(clusters)
    offset = 0
    for d in range(len(docs_w)):
        L, u0 = len(docs_w[d]), 2 * offset + d
        n_rows = max(clusters) + 1
        live = [r for r in range(n_rows) if any(clusters[e] == r for e in range(len(clusters)) if e != d)]
        choices = live + [n_rows]
        order = order_with_last(docs_z, d)
        logw = np.array([log_joint(docs_w, docs_z, clusters[:d] + [c] + clusters[d + 1:], order, T, V, hyper,
                                   maximal) for c in choices])
        clusters[d] = choices[_draw(np.exp(logw - logw.max()), uniforms[u0 + L])]
        for i in range(L):
            order = order_with_last(docs_z, (d, i))
            logw = []
            for t in range(T):
                docs_z[d][i] = t
                logw.append(log_joint(docs_w, docs_z, clusters, order, T, V, hyper, maximal))
            docs_z[d][i] = _draw(np.exp(np.array(logw) - max(logw)), uniforms[u0 + L + 1 + i])
        offset += L
    return docs_z, clusters


def _draw(weights, u):
    acc, target = 0.0, u * weights.sum()
    for k, w in enumerate(weights):
        acc += w
        if target < acc:
            return k
    return len(weights) - 1


def canonical(clusters):
    seen = {}
    return tuple(seen.setdefault(c, len(seen)) for c in clusters)


@pytest.mark.parametrize("maximal", [False, True])
def test_sweep_kernel_is_the_slow_sweep_from_the_joint(maximal):
    """Topic step (5.33) and cluster step (5.31) together: the kernel's cycle, fed the same uniforms, makes the
    same moves as a cycle whose every conditional is a ratio of the directly computed joint."""
    rng = np.random.default_rng(5)
    T, V = 3, 5
    docs_w, docs_z, clusters = random_state(rng, 6, T, V, 2)
    ptr, z, rows, ctk, ck, sizes, kt, ktot = kernel_levels(docs_z, clusters, T, maximal, spare=8)
    words = np.concatenate([np.asarray(w, np.int32) for w in docs_w])
    nwk = np.zeros((V, T), np.int32)
    np.add.at(nwk, (words, z), 1)
    nk = nwk.sum(axis=0).astype(np.int64)
    uniforms = rng.random(2 * words.shape[0] + len(docs_w))
    start, used = cluster_lda_sweep(ptr, words, z, rows, nwk, nk, ctk, ck, sizes, kt, ktot, max(clusters) + 1,
                                    np.full(ctk.shape[0], -1, np.int64), HYPER["zeta"], HYPER["alpha"],
                                    HYPER["alpha1"], HYPER["alpha0"], HYPER["beta"], maximal, np.zeros((1, 1)), False,
                                    uniforms, 0, 10**9, np.zeros((1, 1)), *no_author_args(len(docs_w), ctk.shape[0]))
    assert start == -1
    slow_z, slow_c = slow_sweep(docs_w, docs_z, clusters, T, V, HYPER, maximal, uniforms)
    assert z.tolist() == [t for zs in slow_z for t in zs]
    assert canonical(rows.tolist()) == canonical(slow_c)
    assert slow_z != docs_z and canonical(slow_c) != canonical(clusters)     # the cycle moved something
    # the kernel's counts are still the recount of its state
    M, K = path_counts(ptr, z, rows, ctk.shape[0], T, maximal)
    assert np.array_equal(ctk, M) and np.array_equal(kt, K) and np.array_equal(sizes, np.bincount(rows, minlength=
                                                                                                   ctk.shape[0]))
    np.testing.assert_array_equal(nk, np.bincount(z, minlength=T))


# ---- the hyperparameters
@pytest.mark.parametrize("maximal", [False, True])
def test_hyperparameter_densities_are_the_evidence_built_token_by_token(maximal):
    """log_densities: zeta under P(c) (5.30), beta under P(w | z) (5.15), and (alpha, alpha1, alpha0) together under
    the sequential evidence P(z | c) (5.16) of the block's documents in order (what the thesis slice-samples under,
    §5.3.2), each against its direct computation up to a constant; fixed concentrations leave only zeta and beta."""
    rng = np.random.default_rng(3)
    T, V = 4, 6
    docs_w, docs_z, clusters = random_state(rng, 8, T, V, 3)
    model = ClusterLDA(T, V, path="maximal" if maximal else "minimal")
    block = SegmentedBlock.from_segments([(f"d{d}", [w]) for d, w in enumerate(docs_w)])
    state = {"z": np.concatenate([np.asarray(z, np.int32) for z in docs_z]), "cluster": np.asarray(clusters, np.int64)}
    from inference.gibbs.local import count_tables
    from inference.gibbs.counts import local_vocabulary
    tables, _ = count_tables(model, block, state, local_vocabulary(block.words))
    hyper = model.initial_hyper()
    densities = model.log_densities(tables, hyper, [model.partition_stats(block, state, hyper, 0)])
    assert set(densities) == {("zeta",), ("beta",), ("alpha_doc", "alpha1", "alpha0")}
    order = [(d, i) for d in range(len(docs_z)) for i in range(len(docs_z[d]))]
    points = [(0.3, 2.0, 0.5), (1.0, 0.1, 9.0), (7.5, 30.0, 1.0)]
    got = np.array([densities[("alpha_doc", "alpha1", "alpha0")](np.array(p)) for p in points])
    exact = np.array([log_topics_sequential(docs_z, clusters, order, T, {"alpha": a, "alpha1": a1, "alpha0": a0},
                                            maximal) for a, a1, a0 in points])
    np.testing.assert_allclose(got, exact, rtol=1e-10, atol=1e-10)
    sizes = Counter(clusters)
    nwk = np.zeros((V, T))
    for w, z in zip(docs_w, docs_z):
        np.add.at(nwk, (w, z), 1)
    for key, direct in (("zeta", lambda z: len(sizes) * math.log(z) - sum(math.log(z + d) for d in range(8))),
                        ("beta", lambda b: T * (math.lgamma(V * b) - V * math.lgamma(b)) + sum(
                            math.lgamma(n + b) for n in nwk.ravel()) - sum(math.lgamma(n + V * b)
                                                                          for n in nwk.sum(axis=0)))):
        values = [0.3, 1.0, 7.5]
        got = np.array([densities[(key,)](np.array([v])) for v in values])
        exact = np.array([direct(v) for v in values])
        np.testing.assert_allclose(got - got[0], exact - exact[0], rtol=1e-10, atol=1e-9, err_msg=key)
    assert log_seating(2.0, 3, np.array([4]), np.array([1])) == pytest.approx(
        3 * math.log(2) + math.lgamma(2) - math.lgamma(6))
    fixed = model.initial_hyper(optimize_alpha=False)
    assert model.partition_stats(block, state, fixed, 0).shape == (0,)
    assert set(model.log_densities(tables, fixed, None)) == {("zeta",), ("beta",)}


# ---- recovery
def sample_model(n_docs, T, V, length, seed):
    """Data drawn from the model: 3 clusters, each with its own pair of topics (disjoint word supports)."""
    rng = np.random.default_rng(seed)
    phi = np.zeros((T, V))
    for t in range(T):
        phi[t, t * (V // T):(t + 1) * (V // T)] = rng.dirichlet(np.full(V // T, 1.0))
    m = np.full((3, T), 0.01)
    for c in range(3):
        m[c, 2 * c:2 * c + 2] = 1.0
    truth = rng.integers(0, 3, n_docs)
    docs = []
    for c in truth:
        theta = rng.dirichlet(5 * m[c])
        docs.append([int(rng.choice(V, p=phi[k])) for k in rng.choice(T, length, p=theta)])
    return docs, truth


def test_recovers_planted_clusters_from_data_drawn_from_the_model():
    docs, truth = sample_model(90, 6, 48, 25, seed=4)
    model = ClusterLDA(6, 48)
    block = SegmentedBlock.from_segments([(f"d{d:03d}", [w]) for d, w in enumerate(docs)])
    _, state, hyper, tables, _ = run_local_tables(model, block, 40, seed=2)
    pairs = Counter(zip(truth.tolist(), state["cluster"].tolist()))
    big = [c for c, n in Counter(state["cluster"].tolist()).items() if n >= 5]
    assert len(big) == 3
    # every large found cluster is one planted cluster; at most 3 documents elsewhere
    assert sum(max(n for (t, c), n in pairs.items() if c == b) for b in big) >= 87
    assert 0 < hyper["alpha_doc"] < 50 and 0 < hyper["zeta"] < 10 and hyper["beta"] > 0


# ---- held-out documents: the frozen chain
def test_frozen_chain_documents_see_the_training_counts_only():
    docs, _ = sample_model(40, 6, 48, 20, seed=6)
    model = ClusterLDA(6, 48)
    block = SegmentedBlock.from_segments([(f"d{d:03d}", [w]) for d, w in enumerate(docs)])
    _, state, hyper, tables, derived = run_local_tables(model, block, 8, seed=1)

    class Result:
        pass
    result = Result()
    result.tables, result.hyper = model.global_step(tables, hyper, [model.partition_stats(block, state, hyper, 0)],
                                                    0)[0], hyper
    model.bind_result(result)
    phi_vk = np.ascontiguousarray(model.topic_word(tables["nwk"], derived["nk"], hyper).T)
    levels = model.trained["levels"].copy()
    one = SegmentedBlock.from_segments([("a", [docs[0]])])
    two = SegmentedBlock.from_segments([("a", [docs[0]]), ("b", [docs[1] + docs[2]])])
    schedule = HeldoutSchedule(iterations=6, burn_in=2, lag=2, samples=2)
    sums_one = model.infer_sums(one, hyper, phi_vk, schedule, 7, 0)
    sums_two = model.infer_sums(two, hyper, phi_vk, schedule, 7, 0)
    np.testing.assert_array_equal(sums_one["doc"][0], sums_two["doc"][0])      # b never changed a's chain
    np.testing.assert_allclose(sums_two["doc"].sum(axis=1), 2.0)                # two samples
    assert np.array_equal(model.trained["levels"], levels)                      # the training counts untouched
    assert sums_two["cluster"].shape == (2,) and np.all(sums_two["cluster"] < levels.shape[0])
    score = model.heldout_loglik(two, hyper, phi_vk, HeldoutSchedule(iterations=6, burn_in=2, lag=2, samples=2,
                                                                       observed=0.5), 3, 0)
    assert np.isfinite(score[0]) and score[0] < 0 and score[2] == 2
    with pytest.raises(TypeError, match="cluster"):
        model.check_state(one, {"z": np.zeros(one.n_tokens, np.int32)})


# ---- the chain against the enumerated fixed point of its sweep
def set_partitions(n):
    if n == 0:
        yield ()
        return
    for p in set_partitions(n - 1):
        for c in range(max(p, default=-1) + 2):
            yield p + (c,)


def sweep_fixed_point(docs_w, T, V, hyper, maximal):
    """Every state (set partition, topics) of a tiny corpus and the stationary distribution of the exact
    transition matrix of one cycle (each document's cluster step, then its tokens' topic steps, every conditional
    a ratio of the joint). A path assumption's conditionals are not those of one joint (each puts another token
    last), so the chain's target is this fixed point; for an exchangeable joint it would be the posterior."""
    import itertools
    n = sum(len(w) for w in docs_w)
    states = [(p, z) for p in set_partitions(len(docs_w)) for z in itertools.product(range(T), repeat=n)]
    index = {s: i for i, s in enumerate(states)}

    def split(z):
        ends = np.cumsum([len(w) for w in docs_w])
        return [list(z[e - len(w):e]) for e, w in zip(ends, docs_w)]

    def step(kind, d, j=None, flat=None):
        P = np.zeros((len(states), len(states)))
        for i, (p, z) in enumerate(states):
            dz = split(z)
            if kind == "cluster":
                choices = sorted(set(p[:d] + p[d + 1:])) + [max(p) + 1]
                moves = [(canonical(p[:d] + (c,) + p[d + 1:]), z) for c in choices]
                logw = [log_joint(docs_w, dz, list(s[0]), order_with_last(dz, d), T, V, hyper, maximal) for s in moves]
            else:
                moves = [(p, z[:flat] + (t,) + z[flat + 1:]) for t in range(T)]
                logw = [log_joint(docs_w, split(s[1]), list(p), order_with_last(dz, (d, j)), T, V, hyper, maximal)
                        for s in moves]
            w = np.exp(np.array(logw) - max(logw))
            for s, q in zip(moves, w / w.sum()):
                P[i, index[s]] += q
        return P
    P, flat = np.eye(len(states)), 0
    for d, w in enumerate(docs_w):
        P = P @ step("cluster", d)
        for j in range(len(w)):
            P, flat = P @ step("topic", d, j, flat), flat + 1
    values, vectors = np.linalg.eig(P.T)
    pi = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    return states, pi / pi.sum()


def test_chain_visits_the_enumerated_fixed_point_of_its_sweep():
    """80 states (5 set partitions of 3 documents x 16 topic vectors): the chain, through the engine's loop (tables
    recounted, the global step's renumbering, provisional ids), visits them as the exact transition matrix's
    fixed point says; that of the maximal path assumption is 0.14 away in total variation."""
    docs_w, T, V = [[0], [1, 0], [2]], 2, 3
    states, pi = sweep_fixed_point(docs_w, T, V, HYPER, False)
    model = ClusterLDA(T, V)
    visits = Counter()
    run_local_tables(model, SegmentedBlock.from_segments([(f"d{d}", [w]) for d, w in enumerate(docs_w)]), 5000,
                     seed=1, hyper=model.initial_hyper(sample_hyper=False, **HYPER),
                     on_iteration=lambda it, state, hyper: visits.update(
                         [(canonical(state["cluster"].tolist()), tuple(state["z"].tolist()))]))
    empirical = np.array([visits[s] for s in states]) / sum(visits.values())
    assert 0.5 * np.abs(empirical - pi).sum() < 0.07


# ---- left-to-right evaluation
def enumerated_likelihood(levels, docs, doc, phi_vk, maximal):
    """p(w_d) summed over the document's cluster (the trained ones and a new one) and its topic vectors, every
    predictive (5.7) from the levels recounted by definition (HYPER's concentrations)."""
    T = levels.shape[1]
    a, a1, a0, zeta = HYPER["alpha"], HYPER["alpha1"], HYPER["alpha0"], HYPER["zeta"]
    exact = 0.0
    for c in range(levels.shape[0] + 1):
        prior = (docs[c] if c < levels.shape[0] else zeta) / (docs.sum() + zeta)
        for z in np.ndindex(*(T,) * len(doc)):
            p = prior
            for n, (w, t) in enumerate(zip(doc, z)):
                prefix = np.bincount(z[:n], minlength=T)
                M = np.vstack([levels, np.zeros((1, T), int)])
                M[c] += prefix if maximal else (prefix > 0)
                K = M.sum(axis=0) if maximal else (M > 0).sum(axis=0)
                q = (M[c, t] + a1 * (K[t] + a0 / T) / (K.sum() + a0)) / (M[c].sum() + a1)
                p *= (prefix[t] + a * q) / (n + a) * phi_vk[w, t]
            exact += p
    return exact


@pytest.mark.parametrize("maximal", [False, True])
def test_left_to_right_particles_are_unbiased_for_the_enumerated_likelihood(maximal):
    """A document of 3 tokens (one out of the vocabulary) under 2 trained clusters: p(w_d) summed over the cluster
    (2 + a new one) and the 8 topic vectors, every predictive (5.7) from the levels recounted by definition, equals
    the mean of the particles' products (resampling on and off); one particle's left-to-right is its product."""
    from inference.left_to_right import LeftToRight

    T, V = 2, 3
    levels, docs = np.array([[3, 1], [0, 2]]), np.array([4, 2])
    model = ClusterLDA(T, V, path="maximal" if maximal else "minimal")
    hyper = model.initial_hyper(sample_hyper=False, **HYPER)
    model.bind_arrays({"cluster_topics": levels, "cluster_docs": docs}, {"hyper": hyper})
    phi_vk = np.array([[0.6, 0.1], [0.3, 0.2], [0.1, 0.7]])
    doc = [2, 0, 7, 2]                                  # 7: out of the vocabulary, skipped
    known = [w for w in doc if w < V]
    exact = enumerated_likelihood(levels, docs, known, phi_vk, maximal)
    block = SegmentedBlock.from_segments([("doc", [doc])])
    for resample in (True, False):
        scores = model.left_to_right(block, hyper, phi_vk, LeftToRight(particles=6000, resample=resample, seed=1))
        row = scores.per_document[0]
        assert row[2:].tolist() == [3, 1] and "particles" in scores.protocol
        assert abs(row[1] - math.log(exact)) < 0.01, (resample, row[1], math.log(exact))
        one = model.left_to_right(block, hyper, phi_vk, LeftToRight(particles=1, resample=resample, seed=2))
        assert one.per_document[0, 0] == pytest.approx(one.per_document[0, 1], abs=1e-12)
    assert np.array_equal(model.trained["levels"], levels)          # the training counts untouched


def test_left_to_right_revisits_earlier_topics_so_its_product_converges():
    """Wallach's left-to-right figure (the product over tokens of the particles' means) needs the particles' earlier
    topics revisited before each token (Metropolis-Hastings moves on the prefix's exact posterior): on a model of
    one cluster of 10,000 documents (its predictive LDA's with alpha q, the document's own path counts moving q by
    less than 1e-3) and a 10-token document over 3 peaked topics, 3,000 particles give log p(w_d) enumerated over
    the 59,049 topic vectors to 0.03 nats (without the revisits, the estimator before session 17: 0.59 nats
    below)."""
    from scipy.special import gammaln
    from drivers.models.cluster_lda.kernels import cluster_topic
    from inference.left_to_right import LeftToRight

    T, V = 3, 8
    rng = np.random.default_rng(5)
    phi_vk = rng.dirichlet(np.full(V, 0.3), T).T.copy()
    levels, docs = np.array([[6000, 2500, 9000]]), np.array([10000])
    model = ClusterLDA(T, V)
    hyper = model.initial_hyper(sample_hyper=False, one_cluster_iterations=10, alpha=0.8, alpha1=5.0, alpha0=3.0)
    hyper["cluster_steps"] = 9
    model.bind_arrays({"cluster_topics": levels, "cluster_docs": docs}, {"hyper": hyper})
    ctk, ck, _, kt, ktot = model.frozen_levels()
    prior = np.array([0.8 * cluster_topic(0, t, ctk, ck, kt, ktot, 5.0, 3.0, T) for t in range(T)])
    doc = rng.integers(0, V, 30)[:10]
    Z = np.array(list(itertools.product(range(T), repeat=len(doc))))
    n = np.stack([(Z == t).sum(axis=1) for t in range(T)], axis=1)
    log_joint = gammaln(prior.sum()) - gammaln(prior.sum() + len(doc)) + (gammaln(prior + n) - gammaln(prior)).sum(
        axis=1) + np.log(phi_vk[doc][np.arange(len(doc)), Z]).sum(axis=1)
    exact = float(np.logaddexp.reduce(log_joint))
    block = SegmentedBlock.from_segments([("doc", [doc.tolist()])])
    row = model.left_to_right(block, hyper, phi_vk, LeftToRight(particles=3000, resample=True, seed=1)).per_document[0]
    assert abs(row[0] - exact) < 0.03 and abs(row[1] - exact) < 0.03, (row[:2], exact)


# ---- the author variant (§4.7)
def log_authors_sequential(docs_a, clusters, order, A, eta1, eta0, maximal):
    """log P(a | c) (5.59) as the product of the predictives (5.55) of the author tokens of the documents in
    ``order``, counts from the definitions: N_a|c every author token of c, N_a the clusters with a (minimal) or
    a's tokens (maximal)."""
    seen = []
    out = 0.0
    for d in order:
        for a in docs_a[d]:
            in_c = Counter(b for e, b in seen if clusters[e] == clusters[d])
            per = {}
            for e, b in seen:
                per.setdefault(clusters[e], Counter())[b] += 1
            N = Counter()
            for counts in per.values():
                for b, n in counts.items():
                    N[b] += n if maximal else 1
            base = (N[a] + eta0 / A) / (sum(N.values()) + eta0)
            out += math.log((in_c[a] + eta1 * base) / (sum(in_c.values()) + eta1))
            seen.append((d, a))
    return out


@pytest.mark.parametrize("maximal", [False, True])
def test_author_cluster_step_weights_are_ratios_of_the_joint(maximal):
    """(5.58): the cluster step's weights with authors against the joint P(c) P(z | c) P(a | c) P(w | z), P(a | c)
    with the moving document last."""
    from drivers.models.cluster_lda.authors import Authors

    rng = np.random.default_rng(7)
    T, V, A = 3, 4, 5
    docs_w, docs_z, clusters = random_state(rng, 6, T, V, 3)
    docs_a = [rng.integers(0, A, rng.integers(0, 4)).tolist() for _ in docs_w]
    model = ClusterLDA(T, V, path="maximal" if maximal else "minimal")
    model.set_authors(Authors([f"a{i}" for i in range(A)], {f"d{d}": np.array(a, np.int64)
                                                            for d, a in enumerate(docs_a)}))
    hyper = dict(model.initial_hyper(**HYPER), eta1=0.6, eta0=1.7)
    ptr, z, rows, ctk, ck, sizes, kt, ktot = kernel_levels(docs_z, clusters, T, maximal)
    from drivers.models.cluster_lda.authors import author_counts
    cat = author_counts(*model.authors.of_block([f"d{d}" for d in range(6)]), rows, ctk.shape[0], A)
    logw = membership_log_weights(ptr, z, rows, ctk, ck, sizes, kt, ktot, HYPER["zeta"], HYPER["alpha"],
                                  HYPER["alpha1"], HYPER["alpha0"], maximal,
                                  *model.author_args([f"d{d}" for d in range(6)], cat, hyper))
    C = ctk.shape[0] - 1
    for d in range(len(docs_w)):
        choices = sorted(set(clusters[:d] + clusters[d + 1:])) + [C]
        order = order_with_last(docs_z, d)
        doc_order = [e for e in range(len(docs_w)) if e != d] + [d]
        exact = []
        for c in choices:
            moved = clusters[:d] + [c] + clusters[d + 1:]
            exact.append(log_joint(docs_w, docs_z, moved, order, T, V, HYPER, maximal)
                         + log_authors_sequential(docs_a, moved, doc_order, A, 0.6, 1.7, maximal))
        got = logw[d, choices]
        exact = np.array(exact)
        np.testing.assert_allclose(got - got.max(), exact - exact.max(), atol=1e-10)


def test_author_variant_separates_clusters_that_differ_only_in_their_authors():
    """Two planted clusters with the same topic mixtures but disjoint authors: the author variant finds them."""
    from drivers.models.cluster_lda.authors import Authors

    rng = np.random.default_rng(11)
    T, V = 4, 32
    phi = np.zeros((T, V))
    for t in range(T):
        phi[t, t * 8:(t + 1) * 8] = rng.dirichlet(np.ones(8))
    truth = rng.integers(0, 2, 60)
    docs = [[int(rng.choice(V, p=phi[k])) for k in rng.choice(T, 20, p=rng.dirichlet(np.ones(T)))] for _ in truth]
    authors = {f"d{d:03d}": rng.choice(5, 2, replace=False) + 5 * c for d, c in enumerate(truth)}
    block = SegmentedBlock.from_segments([(f"d{d:03d}", [w]) for d, w in enumerate(docs)])
    model = ClusterLDA(T, V, author_column="authors")
    model.set_authors(Authors([f"a{i}" for i in range(10)], authors))
    _, state, hyper, tables, _ = run_local_tables(model, block, 25, seed=3)
    pairs = Counter(zip(truth.tolist(), state["cluster"].tolist()))
    big = [c for c, n in Counter(state["cluster"].tolist()).items() if n >= 10]
    assert len(big) == 2 and sum(max(n for (t, c), n in pairs.items() if c == b) for b in big) >= 58
    assert tables["clusters"].counts.shape[1] == 1 + T + 10 and hyper["eta1"] != 1.0
