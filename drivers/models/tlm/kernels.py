"""Kernels of the topic-based language model (Wallach §3.4, :mod:`drivers.models.tlm.model`): pure numba/numpy.

Counts live in local arrays indexed by the (previous word w', word w) pairs a piece of work touches (a
partition's tokens, a held-out document, the driver's tokens): never V^2 x K.

* ``pair_counts`` (P, K): N_{w|w't} of pair p = (w', w) in every topic t;
* ``ctx_totals`` (C, K): N_{.|w't} of the pair's context (``pair_ctx[p]``, one row per distinct w');
* the upper levels of the hierarchical priors (Table 3.3), with the counts of the path assumption (§3.4.2):
  ``mid`` (V, K) N^_{w|t} (priors 2a, 2b) and ``mid_t`` (K,) its totals; ``midp`` (P,) N^_{w|w'} and
  ``mid_ctx`` (V + 1,) N^_{.|w'} (prior 3); ``top`` (V,) N^_w and ``toptot`` (1,) N^_. (priors 1, 2b, 3).

Under the maximal path assumption every level counts every observation; under the minimal one a level's count
of w changes only when the count of w below it crosses 0 <-> 1 (type counts; :func:`add_token`,
:func:`remove_token`). The word's predictive (:func:`word_probability`) is (3.29) for the non-hierarchical
priors 1 and 2 (``bn``: beta n_t of every topic, K x V; prior 1 has K equal rows) and (3.39), (3.47), (3.48),
(3.53) for the hierarchical priors 1, 2a, 2b, 3 (u uniform over the V words).
"""
from __future__ import annotations

import math

import numba
import numpy as np

NONHIER, H1, H2A, H2B, H3 = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def remove_token(p, t, variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev,
                 mid, mid_t, midp, mid_ctx, top, toptot):
    """Take one observation of pair ``p`` in topic ``t`` out of every level (the path assumption's counts)."""
    w = pair_word[p]
    pair_counts[p, t] -= 1
    ctx_totals[pair_ctx[p], t] -= 1
    if variant == NONHIER:
        return
    gone = pair_counts[p, t] == 0
    if minimal and not gone:
        return
    if variant == H1:
        top[w] -= 1
        toptot[0] -= 1
    elif variant == H2A or variant == H2B:
        mid[w, t] -= 1
        mid_t[t] -= 1
        if variant == H2B and (not minimal or mid[w, t] == 0):
            top[w] -= 1
            toptot[0] -= 1
    else:
        midp[p] -= 1
        mid_ctx[pair_prev[p]] -= 1
        if not minimal or midp[p] == 0:
            top[w] -= 1
            toptot[0] -= 1


@numba.njit(cache=True)
def add_token(p, t, variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev,
              mid, mid_t, midp, mid_ctx, top, toptot):
    """Add one observation of pair ``p`` in topic ``t`` to every level (the mirror of :func:`remove_token`)."""
    w = pair_word[p]
    new = pair_counts[p, t] == 0
    pair_counts[p, t] += 1
    ctx_totals[pair_ctx[p], t] += 1
    if variant == NONHIER:
        return
    if minimal and not new:
        return
    if variant == H1:
        top[w] += 1
        toptot[0] += 1
    elif variant == H2A or variant == H2B:
        if variant == H2B and (not minimal or mid[w, t] == 0):
            top[w] += 1
            toptot[0] += 1
        mid[w, t] += 1
        mid_t[t] += 1
    else:
        if not minimal or midp[p] == 0:
            top[w] += 1
            toptot[0] += 1
        midp[p] += 1
        mid_ctx[pair_prev[p]] += 1


@numba.njit(cache=True)
def word_probability(p, t, variant, beta, beta0, beta1, bn, beta_t, pair_counts, ctx_totals, pair_ctx, pair_word,
                     pair_prev, mid, mid_t, midp, mid_ctx, top, toptot):
    """P(w | w', t, counts) of pair ``p`` = (w', w) in topic ``t``: (3.29) or (3.39)/(3.47)/(3.48)/(3.53)."""
    w = pair_word[p]
    c = pair_ctx[p]
    if variant == NONHIER:
        return (pair_counts[p, t] + bn[t, w]) / (ctx_totals[c, t] + beta_t[t])
    inv_v = 1.0 / top.shape[0]
    if variant == H1:
        q = (top[w] + beta0 * inv_v) / (toptot[0] + beta0)
    elif variant == H2A:
        q = (mid[w, t] + beta0 * inv_v) / (mid_t[t] + beta0)
    elif variant == H2B:
        q = (mid[w, t] + beta1 * (top[w] + beta0 * inv_v) / (toptot[0] + beta0)) / (mid_t[t] + beta1)
    else:
        q = (midp[p] + beta1 * (top[w] + beta0 * inv_v) / (toptot[0] + beta0)) / (mid_ctx[pair_prev[p]] + beta1)
    return (pair_counts[p, t] + beta * q) / (ctx_totals[c, t] + beta)


@numba.njit(cache=True)
def _draw(cum, total, K):
    u = np.random.random() * total
    new = 0
    while new < K - 1 and cum[new] <= u:
        new += 1
    return new


@numba.njit(cache=True)
def topic_weights(p, ndk, alpha_m, out, variant, beta, beta0, beta1, bn, beta_t, pair_counts, ctx_totals, pair_ctx,
                  pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot):
    """Cumulative weights (3.28)/(3.54) of every topic for pair ``p`` (the token already taken out): out[t] =
    sum_{s <= t} (N_{s|d} + alpha m_s) P(w | w', s); returns the total."""
    total = 0.0
    for t in range(alpha_m.shape[0]):
        total += (ndk[t] + alpha_m[t]) * word_probability(p, t, variant, beta, beta0, beta1, bn, beta_t, pair_counts,
                                                          ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t,
                                                          midp, mid_ctx, top, toptot)
        out[t] = total
    return total


@numba.njit(cache=True)
def resample_token(p, old, ndk, alpha_m, cum, variant, minimal, beta, beta0, beta1, bn, beta_t, pair_counts,
                   ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot):
    """One Gibbs step (3.28)/(3.54) of a token of pair ``p`` in topic ``old``: taken out of the document's counts
    ``ndk`` and every level, a topic drawn from its conditional, put back; returns the new topic."""
    ndk[old] -= 1
    remove_token(p, old, variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t,
                 midp, mid_ctx, top, toptot)
    total = topic_weights(p, ndk, alpha_m, cum, variant, beta, beta0, beta1, bn, beta_t, pair_counts, ctx_totals,
                          pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot)
    new = _draw(cum, total, alpha_m.shape[0])
    ndk[new] += 1
    add_token(p, new, variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp,
              mid_ctx, top, toptot)
    return new


@numba.njit(cache=True)
def tlm_sweep(token_ptr, pair_of, z, alpha_m, variant, minimal, beta, beta0, beta1, bn, beta_t, pair_counts,
              ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot, seed):
    """One Gibbs sweep (3.28)/(3.54) over every token, documents in order; ``z`` and every count in place."""
    np.random.seed(seed)
    K = alpha_m.shape[0]
    ndk = np.zeros(K, dtype=np.int64)
    cum = np.empty(K)
    for d in range(token_ptr.shape[0] - 1):
        ndk[:] = 0
        for i in range(token_ptr[d], token_ptr[d + 1]):
            ndk[z[i]] += 1
        for i in range(token_ptr[d], token_ptr[d + 1]):
            z[i] = resample_token(pair_of[i], z[i], ndk, alpha_m, cum, variant, minimal, beta, beta0, beta1, bn,
                                  beta_t, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp,
                                  mid_ctx, top, toptot)


@numba.njit(cache=True)
def sequential_log_evidence(order_pair, order_topic, variant, minimal, beta, beta0, beta1, bn, beta_t, pair_counts,
                            ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot):
    """log P(w | z, U) by (3.43)/(3.55): the observations (pair, topic) in the given order, each scored by the
    predictive given the ones before it and then added (the counts start at zero and end holding every
    observation)."""
    value = 0.0
    for i in range(order_pair.shape[0]):
        p, t = order_pair[i], order_topic[i]
        value += math.log(word_probability(p, t, variant, beta, beta0, beta1, bn, beta_t, pair_counts, ctx_totals,
                                           pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot))
        add_token(p, t, variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t,
                  midp, mid_ctx, top, toptot)
    return value


@numba.njit(cache=True)
def left_to_right_document(pair_of, alpha_m, seeds, resample, variant, minimal, beta, beta0, beta1, bn, beta_t,
                           pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top,
                           toptot):
    """(R, L) p_n^(r) of one document by the left-to-right algorithm (thesis Alg. 3.3 with one state per particle,
    Wallach et al. 2009): particle r (drawing from ``seeds[r]``), at every position n, resamples z_<n given w_<n
    (``resample``: one sweep in order), scores p_n^(r) = sum_t P(w_n | w_{n-1}, t, counts) P(t | z_<n) and draws
    z_n with w_n. The word counts are the training state plus the particle's own earlier tokens (with their
    topics and the path counts they make): the model's predictive. Particles are independent, so each runs
    through the whole document in turn; the counts are restored after each."""
    K = alpha_m.shape[0]
    L = pair_of.shape[0]
    alpha = 0.0
    for t in range(K):
        alpha += alpha_m[t]
    probs = np.zeros((seeds.shape[0], L))
    z = np.zeros(L, dtype=np.int64)
    ndk = np.zeros(K, dtype=np.int64)
    cum = np.empty(K)
    for r in range(seeds.shape[0]):
        np.random.seed(seeds[r])
        ndk[:] = 0
        for n in range(L):
            if resample:
                for m in range(n):
                    z[m] = resample_token(pair_of[m], z[m], ndk, alpha_m, cum, variant, minimal, beta, beta0, beta1,
                                          bn, beta_t, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid,
                                          mid_t, midp, mid_ctx, top, toptot)
            p = pair_of[n]
            total = topic_weights(p, ndk, alpha_m, cum, variant, beta, beta0, beta1, bn, beta_t, pair_counts,
                                  ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot)
            probs[r, n] = total / (n + alpha)
            z[n] = _draw(cum, total, K)
            ndk[z[n]] += 1
            add_token(p, z[n], variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid,
                      mid_t, midp, mid_ctx, top, toptot)
        for n in range(L):
            remove_token(pair_of[n], z[n], variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev,
                         mid, mid_t, midp, mid_ctx, top, toptot)
    return probs


@numba.njit(cache=True)
def document_topics(pair_of, alpha_m, iterations, burn_in, lag, samples, variant, minimal, beta, beta0, beta1, bn, beta_t,
                    pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp, mid_ctx, top, toptot,
                    seed):
    """(K,) sum over the samples of one new document's proportions (N_{t|d} + alpha m_t) / (N_d + alpha) (3.31):
    its tokens added with random topics to the (trained) counts, ``iterations`` sweeps, a sample every ``lag``
    after ``burn_in`` (at most ``samples``); the counts are restored at the end. Returns the sums and the number of samples."""
    np.random.seed(seed)
    K = alpha_m.shape[0]
    L = pair_of.shape[0]
    alpha = 0.0
    for t in range(K):
        alpha += alpha_m[t]
    z = np.empty(L, dtype=np.int64)
    ndk = np.zeros(K, dtype=np.int64)
    cum = np.empty(K)
    for n in range(L):
        z[n] = np.random.randint(0, K)
        ndk[z[n]] += 1
        add_token(pair_of[n], z[n], variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid,
                  mid_t, midp, mid_ctx, top, toptot)
    sums = np.zeros(K)
    taken = 0
    for it in range(1, iterations + 1):
        for n in range(L):
            z[n] = resample_token(pair_of[n], z[n], ndk, alpha_m, cum, variant, minimal, beta, beta0, beta1, bn,
                                  beta_t, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev, mid, mid_t, midp,
                                  mid_ctx, top, toptot)
        if it > burn_in and (it - burn_in) % lag == 0 and (it - burn_in) // lag <= samples:
            for t in range(K):
                sums[t] += (ndk[t] + alpha_m[t]) / (L + alpha)
            taken += 1
    for n in range(L):
        remove_token(pair_of[n], z[n], variant, minimal, pair_counts, ctx_totals, pair_ctx, pair_word, pair_prev,
                     mid, mid_t, midp, mid_ctx, top, toptot)
    return sums, taken


@numba.njit(cache=True)
def fill_rows(keys, counts, lo, hi, K, out):
    """out[i, keys[j] % K] = counts[j] for j in lo[i]:hi[i] (a keyed table's rows of K consecutive keys)."""
    for i in range(lo.shape[0]):
        for j in range(lo[i], hi[i]):
            out[i, keys[j] % K] = counts[j]
