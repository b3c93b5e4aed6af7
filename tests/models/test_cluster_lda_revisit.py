"""cluster-lda's left-to-right revisits (:mod:`drivers.models.cluster_lda.revisit`), no Spark: the pieces and the
telescoped ratio of a move that keeps the first occurrences against the direct product (5.32); the fast sweep is
the O(L^3) reference sweep move for move while the schedule tries every position; with the schedules cut to 2
positions the estimator still matches the enumerated p(w_d); and the cost per particle grows as L^2 (counted token
visits, no clock), a document of 2,000 tokens under 20 topics scoring in about a second per particle."""
from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from scipy.special import gammaln

from drivers.models.cluster_lda.kernels import cluster_topic, log_topics_given_cluster
from drivers.models.cluster_lda.left_to_right import cluster_lda_particles
from drivers.models.cluster_lda.revisit import CAPS, _kept_move, _pieces

A, A1, A0, ZETA = 2.0, 15.0, 100.0, 0.9


def levels(T, C, rng):
    """Frozen minimal-path levels of C clusters (some topics unused by a cluster, some by every cluster) with the
    spare empty row C."""
    ctk = np.zeros((C + 1, T), np.int64)
    ctk[:C] = (rng.random((C, T)) < 0.5) * rng.integers(1, 40, (C, T))
    ctk[:, T - 1] = 0                                   # a topic no cluster uses
    kt = (ctk[:C] > 0).sum(0).astype(np.int64)
    return ctk, ctk.sum(1).astype(np.int64), np.append(rng.integers(5, 50, C), 0).astype(np.int64), kt, \
        np.array([kt.sum()], np.int64)


def document(T, C, L, seed, V=200):
    """(scaled rows, levels) of an L-token document drawn from peaked topics."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, 0.1), T).T
    words = [rng.choice(V, p=phi[:, t] / phi[:, t].sum()) for t in rng.choice(T, L, p=rng.dirichlet(np.full(T, .3)))]
    rows = phi[words]
    return np.ascontiguousarray(rows / rows.max(axis=1)[:, None]), levels(T, C, rng)


def particles(scaled, lv, seeds, maximal=False, caps=CAPS, fast=True):
    work = np.zeros(1, np.int64)
    out = cluster_lda_particles(scaled, *lv, ZETA, A, A1, A0, maximal, True, np.asarray(seeds, np.int64), True, work,
                                caps, fast)
    return out, int(work[0])


def test_kept_moves_are_the_direct_product():
    """For every move of a 40-token prefix that keeps the first occurrences (m not a's first, b seen before m), in a
    trained cluster and a new one: the pieces' counts are recounts and the telescoped change of log P(z_<i | c) is
    the direct product's (5.32) after minus before."""
    T, i = 5, 40
    rng = np.random.default_rng(3)
    ctk, ck, _, kt, ktot = levels(T, 3, rng)
    z = np.where(np.arange(i) < 12, rng.integers(0, 2, i), rng.integers(0, T, i)).astype(np.int32)
    scratch = np.zeros(T, np.int64)
    first, bpos, knew = np.zeros(T, np.int64), np.zeros(T + 2, np.int64), np.zeros(T + 2, np.int64)
    cum, work = np.zeros((T + 2, T), np.int64), np.zeros(1, np.int64)
    checked = 0
    for c in (0, 3):
        s = _pieces(z, i, c, ctk, first, bpos, knew, cum, T)
        assert bpos[1:s + 1].tolist() == sorted(int(np.flatnonzero(z == t)[0]) + 1 for t in set(z.tolist()))
        for p in range(s + 1):
            assert cum[p].tolist() == np.bincount(z[:bpos[p]], minlength=T).tolist()
            assert knew[p] == sum(ctk[c, t] == 0 for t in set(z[:bpos[p]].tolist()))
        own = np.bincount(z[:i], minlength=T).astype(np.int64)
        direct = log_topics_given_cluster(z, 0, i, c, scratch, ctk, ck, kt, ktot, A, A1, A0, False)
        for m, b in itertools.product(range(i), range(T)):
            a = z[m]
            if b == a or not (first[a] < m and 0 <= first[b] < m):
                continue
            before = np.bincount(z[:m], minlength=T).astype(np.int64)
            p0 = int(np.searchsorted(bpos[1:s + 1], m, side="right"))
            delta = _kept_move(m, a, b, i, s, p0, before, own, bpos, cum, knew, c, ctk, ck, kt, ktot, A, A1, A0, T,
                               work)
            z[m] = b
            moved = log_topics_given_cluster(z, 0, i, c, scratch, ctk, ck, kt, ktot, A, A1, A0, False)
            z[m] = a
            assert delta == pytest.approx(moved - direct, abs=1e-10)
            checked += 1
    assert checked > 200


@pytest.mark.parametrize("maximal", [False, True])
def test_fast_sweep_is_the_reference_sweep_while_every_position_is_tried(maximal):
    """Below the schedules' caps (256 tokens minimal, 32 maximal) the O(L^2) sweep makes the reference sweep's
    moves (the same draws, the same decisions): the particles' p_n agree to rounding, for less work; the same
    seeds give the same p_n bit for bit."""
    scaled, lv = document(6, 3, 30 if maximal else 200, seed=4)
    fast, fast_work = particles(scaled, lv, [5, 6, 7], maximal)
    assert np.array_equal(fast, particles(scaled, lv, [5, 6, 7], maximal)[0])
    slow, slow_work = particles(scaled, lv, [5, 6, 7], maximal, fast=False)
    np.testing.assert_allclose(fast, slow, rtol=1e-9)
    assert fast_work < slow_work if not maximal else fast_work == slow_work


@pytest.mark.parametrize("maximal", [False, True])
def test_cut_schedules_keep_the_estimator_exact(maximal):
    """With the schedules cut to 2 positions per token (most moves that would move a first occurrence rejected,
    the maximal path revisiting 2 positions), a 10-token document in one cluster of 10,000 documents over 3
    peaked topics (tests/models/test_cluster_lda.py's convergence case, its prior alpha q fixed): 3,000 particles
    give log p(w_d) enumerated over the 59,049 topic vectors to 0.01 nats by importance sampling (measured -0.002
    / -0.001 nats) and 0.03 by left-to-right (-0.022 / -0.024: the cut sweeps mix more slowly; +0.005 with every
    position tried)."""
    T, V, n = 3, 8, 10
    rng = np.random.default_rng(5)
    phi_vk = rng.dirichlet(np.full(V, 0.3), T).T.copy()
    ctk, ck = np.array([[6000, 2500, 9000], [0, 0, 0]], np.int64), np.array([17500, 0], np.int64)
    kt, ktot, sizes = np.array([1, 1, 1], np.int64), np.array([3], np.int64), np.array([10000, 0], np.int64)
    doc = rng.integers(0, V, 30)[:n]
    if maximal:         # the document's own tokens move q by less than 1e-3 either way
        kt, ktot = ctk[0].copy(), np.array([ctk[0].sum()], np.int64)
    prior = np.array([0.8 * cluster_topic(0, t, ctk, ck, kt, ktot, 5.0, 3.0, T) for t in range(T)])
    Z = np.array(list(itertools.product(range(T), repeat=n)))
    counts = np.stack([(Z == t).sum(axis=1) for t in range(T)], axis=1)
    log_joint = gammaln(prior.sum()) - gammaln(prior.sum() + n) + (gammaln(prior + counts) - gammaln(prior)).sum(
        axis=1) + np.log(phi_vk[doc][np.arange(n), Z]).sum(axis=1)
    exact = float(np.logaddexp.reduce(log_joint))
    rows = phi_vk[doc]
    work = np.zeros(1, np.int64)
    p = cluster_lda_particles(np.ascontiguousarray(rows / rows.max(axis=1)[:, None]), ctk, ck, sizes, kt, ktot, ZETA,
                              0.8, 5.0, 3.0, maximal, True, np.arange(3000, dtype=np.int64) + 1, False, work,
                              np.array([2, 2], np.int64))
    log_p = np.log(p) + np.log(rows.max(axis=1))[None, :]
    left_to_right = np.log(np.exp(log_p).mean(axis=0)).sum()
    importance = np.log(np.exp(log_p.sum(axis=1)).mean())
    assert abs(importance - exact) < 0.01 and abs(left_to_right - exact) < 0.03, (left_to_right, importance, exact)


def test_a_long_document_costs_l_squared_per_particle():
    """Token visits per particle under 20 topics and 5 clusters: 1,000 -> 2,000 tokens multiplies them by at most
    4.4 (L^2: 4) and 2,000 tokens take under 15 CPU seconds (about 1 here); the O(L^3) reference (every move scored
    by the direct product, session 17's revisits) multiplies them by more than 6 from 100 to 200 tokens."""
    scaled, lv = document(20, 5, 2000, seed=1)
    _, short = particles(scaled[:1000], lv, [3])
    cpu = time.process_time()
    out, long = particles(scaled, lv, [3])
    cpu = time.process_time() - cpu
    assert long / short < 4.4 and long < 25 * 2000 ** 2 and cpu < 15 and np.isfinite(np.log(out)).all()
    _, ref_short = particles(scaled[:100], lv, [3], fast=False)
    _, ref_long = particles(scaled[:200], lv, [3], fast=False)
    assert ref_long / ref_short > 6
