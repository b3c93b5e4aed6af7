"""The left-to-right particles' revisits of their earlier topics (:mod:`drivers.models.cluster_lda.left_to_right`):
Metropolis-Hastings moves whose target is a prefix's exact posterior P(z_<i | c) (5.32) x prod_m phi_{z_m}(w_m),
at O(L^2) per particle and document, as LDA's Alg. 3.3.

Minimal path (the default). At position j the predictive (5.7) of topic t depends on the prefix only through
n_<j(t) and the set S_j of topics seen before j (M_ct + [t in S_j], M_c + |S_j|, K_t and K moved by the topics
of S_j new to the cluster). S_j changes only at the topics' first occurrences f_u, so the prefix splits into at
most T + 1 pieces [f_u + 1, next boundary) in which topic t's predictive is (n + x_pt) / (j + alpha) with x_pt
constant, and t's tokens in a piece contribute Gamma(N_t(hi) + x_pt) / Gamma(N_t(lo) + x_pt). A move of z_m from
a to b that keeps every first occurrence (m is not a's first, b occurs before m) shifts the ranks of a's later
tokens down by one and b's up by one; the products telescope, so the move's ratio needs N_a, N_b at the piece
boundaries after m only (``cum``): O(T) per move. A move that changes a first occurrence is scored by the direct
product (:func:`log_topics_given_cluster`, O(i)) and rebuilds the pieces when accepted; such moves are tried at
every position while the prefix has at most ``STRUCTURE_REVISITS`` tokens, beyond that at that many positions
spread over the prefix, shifted from token to token (:func:`scheduled`); at the other positions a proposal that
would change a first occurrence is rejected. Either kernel keeps the target (the restriction is symmetric: a move
changes the first occurrences iff its reverse does) and the schedule does not depend on the state, so the sweep
stays a valid MCMC step and a token costs O((T + STRUCTURE_REVISITS) i) whatever the document.

Maximal path: a move changes the predictive of every later token of a and b (n and the corpus level both), with
no telescoping; every move is scored by the direct product, O(i), at the positions :func:`scheduled` with
``MAXIMAL_REVISITS``.

``work[0]`` counts the token visits (product terms, piece terms, proposals' topics) so tests can check the cost's
growth with L without a clock.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from drivers.models.cluster_lda.kernels import cluster_topic, log_topics_given_cluster
from inference.gibbs.common import draw_cumulative

#: the minimal path's positions per token at which a move may change a first occurrence (scored in O(i))
STRUCTURE_REVISITS = 256
#: the maximal path's positions per token (every move scored in O(i))
MAXIMAL_REVISITS = 32
CAPS = np.array([STRUCTURE_REVISITS, MAXIMAL_REVISITS], dtype=np.int64)


@numba.njit(inline="always", cache=True)
def scheduled(m, i, cap):
    """Whether position m of a prefix of i tokens is among the ``cap`` revisited: all of them while i <= cap, else
    every ceil(i / cap)-th, the offset moving with i so that every position comes round."""
    if i <= cap:
        return True
    stride = (i + cap - 1) // cap
    return (m + i) % stride == 0


@numba.njit(cache=True)
def draw(weights, n):
    """One draw from p(k) ∝ weights[k], k < n (the weights summed here)."""
    total = 0.0
    for k in range(n):
        total += weights[k]
    return draw_cumulative(weights, total, n)


@numba.njit(cache=True)
def _pieces(z, i, c, ctk, first, bpos, knew, cum, T):
    """The prefix's pieces: ``first[t]`` t's first position (-1: absent), ``bpos[1..s]`` the boundaries f_u + 1 in
    order (``bpos[0] = 0``), ``knew[p]`` the topics of the first p new to cluster c, ``cum[p, t]`` = N_t(bpos[p]);
    returns s."""
    for t in range(T):
        first[t] = -1
        cum[0, t] = 0
    bpos[0] = 0
    knew[0] = 0
    s = 0
    for j in range(i):
        t = z[j]
        if first[t] < 0:
            first[t] = j
            s += 1
            bpos[s] = j + 1
            knew[s] = knew[s - 1] + (1 if ctk[c, t] == 0 else 0)
            for u in range(T):
                cum[s, u] = cum[s - 1, u]
            for jj in range(bpos[s - 1], j + 1):
                cum[s, z[jj]] += 1
    return s


@numba.njit(inline="always", cache=True)
def _x_seen(t, p, c, knew, ctk, ck, kt, ktot, alpha, alpha1, alpha0, T):
    """alpha q(t) in piece p for a topic t seen before it (the minimal path's counts with the prefix's first p
    topics added)."""
    new = 1 if ctk[c, t] == 0 else 0
    base = (kt[t] + new + alpha0 / T) / (ktot[0] + knew[p] + alpha0)
    return alpha * (ctk[c, t] + 1 + alpha1 * base) / (ck[c] + p + alpha1)


@numba.njit(cache=True)
def _kept_move(m, a, b, i, s, p0, before, own, bpos, cum, knew, c, ctk, ck, kt, ktot, alpha, alpha1, alpha0, T,
               work):
    """log P(z_<i | c) after z_m: a -> b minus before, for a move that keeps every first occurrence (a seen before
    m, b seen before m); ``before`` = n_<m, ``own`` = N_t(i), m in piece p0."""
    xa = _x_seen(a, p0, c, knew, ctk, ck, kt, ktot, alpha, alpha1, alpha0, T)
    xb = _x_seen(b, p0, c, knew, ctk, ck, kt, ktot, alpha, alpha1, alpha0, T)
    delta = math.log(before[b] + xb) - math.log(before[a] + xa)
    na_lo, nb_lo = before[a] + 1, before[b]
    p = p0
    while True:
        na_hi = cum[p + 1, a] if p < s else own[a]
        nb_hi = cum[p + 1, b] if p < s else own[b]
        work[0] += 1
        if na_hi != na_lo:          # a's tokens in the piece: ranks one lower
            xa = _x_seen(a, p, c, knew, ctk, ck, kt, ktot, alpha, alpha1, alpha0, T)
            delta += math.log(na_lo - 1 + xa) - math.log(na_hi - 1 + xa)
        if nb_hi != nb_lo:          # b's: one higher
            xb = _x_seen(b, p, c, knew, ctk, ck, kt, ktot, alpha, alpha1, alpha0, T)
            delta += math.log(nb_hi + xb) - math.log(nb_lo + xb)
        if p == s:
            return delta
        na_lo, nb_lo = na_hi, nb_hi
        p += 1


@numba.njit(cache=True)
def _propose(scaled, m, old, own, aq, proposal, T):
    """The move's proposal (N_t|d without m + alpha q_c(t)) phi_t(w_m), q_c of the frozen levels (``aq``: not a
    function of z_m, so the move keeps the target whatever the path assumption does with later tokens' counts)."""
    for t in range(T):
        proposal[t] = scaled[m, t] * ((own[t] - 1 if t == old else own[t]) + aq[t])
    return draw(proposal, T)


@numba.njit(cache=True)
def _proposal_log_ratio(scaled, m, old, new, proposal):
    """log q(old) / q(new) without phi (it cancels against the target's)."""
    return math.log(proposal[old] / scaled[m, old]) - math.log(proposal[new] / scaled[m, new])


@numba.njit(cache=True)
def _by_product(z, m, old, new, i, c, current, scratch, ctk, ck, kt, ktot, alpha, alpha1, alpha0, maximal, scaled,
                proposal, own, work):
    """The move of token m from ``old`` to ``new`` scored by the prefix's whole product (O(i)) and accepted or not:
    (accepted, the prefix's log P(z_<i | c) after it)."""
    z[m] = new
    moved = log_topics_given_cluster(z, 0, i, c, scratch, ctk, ck, kt, ktot, alpha, alpha1, alpha0, maximal)
    work[0] += i
    if math.log(np.random.random()) < moved - current + _proposal_log_ratio(scaled, m, old, new, proposal):
        own[old] -= 1
        own[new] += 1
        return True, moved
    z[m] = old
    return False, current


@numba.njit(cache=True)
def revisit(scaled, z, i, c, ws, ctk, ck, kt, ktot, alpha, alpha1, alpha0, maximal, caps, fast, work):
    """One Metropolis-Hastings sweep over a particle's earlier topics z_<i given its cluster c and w_<i (the prefix
    out of the levels). ``ws``: a :func:`workspace`; ``caps``: :data:`CAPS` (the schedules' positions per token);
    ``fast`` false scores every move by the direct product at every position (the O(L^3) reference)."""
    T = kt.shape[0]
    own, before, scratch, first, bpos, knew, proposal, cum, aq = ws
    for t in range(T):
        own[t] = 0
        aq[t] = alpha * cluster_topic(c, t, ctk, ck, kt, ktot, alpha1, alpha0, T)
    for m in range(i):
        own[z[m]] += 1
    current = log_topics_given_cluster(z, 0, i, c, scratch, ctk, ck, kt, ktot, alpha, alpha1, alpha0, maximal)
    work[0] += i
    if maximal:
        for m in range(i):
            if fast and not scheduled(m, i, caps[1]):
                continue
            old = z[m]
            new = _propose(scaled, m, old, own, aq, proposal, T)
            work[0] += T
            if new != old:
                _, current = _by_product(z, m, old, new, i, c, current, scratch, ctk, ck, kt, ktot, alpha, alpha1,
                                         alpha0, True, scaled, proposal, own, work)
        return
    s = _pieces(z, i, c, ctk, first, bpos, knew, cum, T)
    work[0] += i
    for t in range(T):
        before[t] = 0
    p0 = 0
    for m in range(i):
        while p0 < s and bpos[p0 + 1] <= m:
            p0 += 1
        old = z[m]
        new = _propose(scaled, m, old, own, aq, proposal, T)
        work[0] += T
        if new != old:
            if fast and first[old] < m and 0 <= first[new] < m:
                delta = _kept_move(m, old, new, i, s, p0, before, own, bpos, cum, knew, c, ctk, ck, kt, ktot, alpha,
                                   alpha1, alpha0, T, work)
                if math.log(np.random.random()) < delta + _proposal_log_ratio(scaled, m, old, new, proposal):
                    z[m] = new
                    current += delta
                    for p in range(p0 + 1, s + 1):
                        cum[p, old] -= 1
                        cum[p, new] += 1
                    own[old] -= 1
                    own[new] += 1
            elif not fast or scheduled(m, i, caps[0]):
                accepted, current = _by_product(z, m, old, new, i, c, current, scratch, ctk, ck, kt, ktot, alpha,
                                                alpha1, alpha0, False, scaled, proposal, own, work)
                if accepted:
                    s = _pieces(z, i, c, ctk, first, bpos, knew, cum, T)
                    work[0] += i
                    p0 = 0
                    while p0 < s and bpos[p0 + 1] <= m:
                        p0 += 1
        before[z[m]] += 1


@numba.njit(cache=True)
def workspace(T):
    """The revisit's scratch arrays for T topics."""
    i64 = np.int64
    return (np.zeros(T, i64), np.zeros(T, i64), np.zeros(T, i64), np.zeros(T, i64), np.zeros(T + 2, i64),
            np.zeros(T + 2, i64), np.zeros(T), np.zeros((T + 2, T), i64), np.zeros(T))
