"""AdaTM's numba kernels: the BTIGS factor tables, the sweep of the blocked table-indicator Gibbs sampler, its
single-token conditional, the start, the auxiliary b draws and the segment topic estimates (thesis ch. 7)."""
from __future__ import annotations

import math

import numba
import numpy as np

from drivers.models.adatm.token_steps import (_arrival_weights, _decode, _doc_sums, _draw_topic, _lowest_broken,
                                              _put_back, _sample_removal, _stale_from, _take_out, _topic_terms)
from inference.gibbs.common import customers, inverse_topic_totals, max_doc_segments, random_segment_topics
from inference.gibbs.model import word_weight
from inference.gibbs.pdp import stirling_table


@numba.njit(cache=True)
def _btigs_factors(L, rows, cols):
    """A[c, m, 0] = (c+1-m)/(c+1) S^{c+1}_m / S^c_m (join an existing table, (7.8));
    A[c, m, 1] = (m+1)/(c+1) S^{c+1}_{m+1} / S^c_m (open a table, (7.9)/(7.10)); both from (3.9)/(7.2).
    Zero where S^c_m = 0 (invalid state) and, for A[.,.,1], where m+1 is past the column cap."""
    A = np.zeros((rows, cols, 2))
    for c in range(rows):
        for m in range(min(c, cols - 1) + 1):
            base = L[c, m]
            if base == -np.inf:
                continue
            A[c, m, 0] = (c + 1.0 - m) / (c + 1.0) * math.exp(L[c + 1, m] - base)
            if m + 1 < cols:
                A[c, m, 1] = (m + 1.0) / (c + 1.0) * math.exp(L[c + 1, m + 1] - base)
    return A


_FACTOR_CACHE: dict = {}


def btigs_factors(a: float, rows: int, cols: int) -> np.ndarray:
    """(>= rows, cols, 2) BTIGS Stirling factors for discount ``a``; exactly ``cols`` columns, since the last
    one enforces the table cap (A[., cols-1, 1] = 0). Cached per (a, cols) per process, rows grown on demand."""
    key = (float(a), int(cols))
    A = _FACTOR_CACHE.get(key)
    if A is not None and A.shape[0] >= rows:
        return A
    if A is not None:
        rows = max(rows, int(A.shape[0] * 1.5))
    table = stirling_table(key[0]).ensure(rows, cols)
    A = _btigs_factors(table.log, rows, cols)
    _FACTOR_CACHE[key] = A
    return A


@numba.njit(cache=True)
def _token_context(doc_ptr, seg_ptr, token, n, t, s):
    """Segment g and document range [sg0, sg1) of ``token`` with the document sums of :func:`_doc_sums` (arrays
    over all S segments): ``(g, sg0, sg1, Nseg, Tseg, Sseg, sd, sum_k sd_k)``; for the single-token test hooks."""
    K = n.shape[1]
    S = n.shape[0]
    g = np.searchsorted(seg_ptr, token, side="right") - 1
    d = np.searchsorted(doc_ptr, g, side="right") - 1
    sg0 = doc_ptr[d]
    sg1 = doc_ptr[d + 1]
    Nseg = np.zeros(S, dtype=np.int64)
    Tseg = np.zeros(S, dtype=np.int64)
    Sseg = np.zeros(S, dtype=np.int64)
    sd = np.zeros(K, dtype=np.int64)
    sdt = _doc_sums(sg0, sg1, n, t, s, Nseg, Tseg, Sseg, sd)
    return g, sg0, sg1, Nseg, Tseg, Sseg, sd, sdt


@numba.njit(cache=True)
def _cache_drift(g, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, a, b, lam_s, lam_t, A, W):
    """Largest |difference| between the kept arrival weights of restaurants sg0..g-1 and a recomputation from
    scratch (the sweep's self-check, ``check=True``): 0 exactly when the stale-row bookkeeping is right, since
    both run the same arithmetic."""
    F = np.zeros_like(W)
    for x in range(sg0, g):
        _arrival_weights(x, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, a, b, lam_s, lam_t, A, F)
    return np.abs(F[:g - sg0 + 1] - W[:g - sg0 + 1]).max()


@numba.njit(cache=True, error_model="numpy")
def _sweep_kernel(doc_ptr, seg_ptr, words, z, n, t, s, nwk, nk, alpha, beta, a, bdoc, lam_s, lam_t, A,
                  frozen_phi, frozen, exact, seed, check=False):
    """One BTIGS cycle: documents -> segments in order -> words (thesis §11.1 sweep order). Per token: remove it
    (Algorithm 6), draw z from the topic totals (Algorithm 7), i.e. the arrival weights at its segment from the
    kept rows below (:func:`_arrival_weights`), then u given z by walking the chain of :func:`_topic_terms`
    only as far as the draw needs, and add it back. ``bdoc``: the concentration b of every document (one value
    repeated for a global b). ``check``: compare the kept rows with a recomputation at every token; returns the
    largest difference."""
    np.random.seed(seed)
    K = n.shape[1]
    vbeta = nwk.shape[0] * beta
    inv = inverse_topic_totals(nk, vbeta)
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    S = n.shape[0]
    Nseg = np.zeros(S, dtype=np.int64)
    Tseg = np.zeros(S, dtype=np.int64)
    Sseg = np.zeros(S, dtype=np.int64)
    sd = np.zeros(K, dtype=np.int64)
    jmax = max_doc_segments(doc_ptr)
    buf = np.zeros(1 + 2 * jmax)
    W = np.zeros((jmax + 1, K, 2))
    p = np.zeros(K)
    drift = 0.0
    for d in range(doc_ptr.shape[0] - 1):
        sg0 = doc_ptr[d]
        sg1 = doc_ptr[d + 1]
        b = bdoc[d]
        sdt = _doc_sums(sg0, sg1, n, t, s, Nseg, Tseg, Sseg, sd)
        stale = sg0                      # the arrival weights of restaurants sg0..stale-1 are current
        for g in range(sg0, sg1):
            for i in range(seg_ptr[g], seg_ptr[g + 1]):
                w = words[i]
                k = z[i]
                u1, u2, dsdt = _take_out(g, sg0, sg1, k, w, n, t, s, Nseg, Tseg, Sseg, sd, nwk, nk, inv, vbeta, frozen,
                                         exact)
                sdt += dsdt
                stale = min(stale, _stale_from(g, u1, u2))
                # exact BTIGS: a removal that left restaurants with customers but no table (the lowest xb) is
                # completed by re-adding the word with z = k and a chain reaching xb (see _topic_terms)
                xb = _lowest_broken(g, sg0, sg1, k, n, t, s, u1, u2) if exact else -1
                if xb < 0:
                    xb = g + 1
                for x in range(stale, min(xb, g)):
                    _arrival_weights(x, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, a, b, lam_s, lam_t, A, W)
                stale = max(stale, min(xb, g))
                if check:
                    drift = max(drift, _cache_drift(min(xb, g), sg0, sg1, n, t, s, Nseg, Tseg, Sseg, a, b, lam_s,
                                                    lam_t, A, W))
                inv_doc = 1.0 / (alpha_sum + sdt)
                if xb > g:
                    k = _draw_topic(p, g, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, sd, inv_doc, alpha, a, b, lam_s, lam_t,
                                    A, W, w, nwk, inv, beta, frozen_phi, frozen)
                idx = _topic_terms(k, g, xb, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, (alpha[k] + sd[k]) * inv_doc, a, b,
                                   lam_s, lam_t, A, W, buf, np.random.random())
                u1, u2 = _decode(idx, sg0)
                sdt += _put_back(i, g, k, u1, u2, w, z, n, t, s, Nseg, Tseg, Sseg, sd, nwk, nk, inv, vbeta, frozen)
                stale = min(stale, _stale_from(g, u1, u2))
    return drift


@numba.njit(cache=True)
def _conditional_kernel(doc_ptr, seg_ptr, words, token, n, t, s, nwk, nk, alpha, beta, a, b, lam_s, lam_t, A,
                        frozen_phi, frozen):
    """The (K, 1 + 2J) joint weights p(z=k, u) (incl. F_k) for ``token``, whose counts must already be removed
    from ``n``/``t``/``s``/``nwk``, and the (K,) topic totals (arrival weights); the sweep's code paths (for
    tests)."""
    K = n.shape[1]
    V = nwk.shape[0]
    g, sg0, sg1, Nseg, Tseg, Sseg, sd, sdt = _token_context(doc_ptr, seg_ptr, token, n, t, s)
    alpha_sum = alpha.sum()
    J = g - sg0 + 1
    out = np.zeros((K, 1 + 2 * J))
    W = np.zeros((J + 1, K, 2))
    for x in range(sg0, g + 1):
        _arrival_weights(x, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, a, b, lam_s, lam_t, A, W)
    w = words[token]
    totals = np.zeros(K)
    for k in range(K):
        f = word_weight(nwk, nk, w, k, beta, V * beta, frozen_phi, frozen)
        dk = (alpha[k] + sd[k]) / (alpha_sum + sdt)
        buf = np.zeros(1 + 2 * J)
        _topic_terms(k, g, g + 1, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, dk, a, b, lam_s, lam_t, A, W, buf, -1.0)
        out[k] = f * buf
        totals[k] = f * (W[J, k, 0] + dk * W[J, k, 1])
    return out, totals


@numba.njit(cache=True)
def _init_kernel(doc_ptr, seg_ptr, words, K, z, n, t, s, nwk, nk, seed):
    """Random topics (thesis §11.1); one table wherever a restaurant has customers, sent to the previous
    segment or to the document with probability 1/2 (always the document in segment 1), built from the
    last segment down so the proxies are counted; satisfies (7.3)/(7.4)."""
    np.random.seed(seed)
    for d in range(doc_ptr.shape[0] - 1):
        sg0 = doc_ptr[d]
        sg1 = doc_ptr[d + 1]
        for g in range(sg0, sg1):
            random_segment_topics(seg_ptr[g], seg_ptr[g + 1], words, K, z, n[g], nwk, nk)
        for g in range(sg1 - 1, sg0 - 1, -1):
            for k in range(K):
                if customers(n, t, g, k, sg1) > 0:
                    if g > sg0 and np.random.random() < 0.5:
                        t[g, k] = 1
                    else:
                        s[g, k] = 1


@numba.njit(cache=True)
def _b_auxiliary(doc_ptr, n, t, s, b, seed):
    """(sum_ij (T_ij + S_ij), sum_ij log 1/q_ij) with q_ij ~ Beta(b, N_ij + T_{i,j+1}) for every restaurant with
    customers: the auxiliary-variable scheme of (5.8)/(6.11) applied to (7.2) with a = 0, where b enters as
    prod_ij b^{T_ij + S_ij} Gamma(b) / Gamma(b + N_ij + T_{i,j+1}) (tables, customers of restaurant j)."""
    np.random.seed(seed)
    K = n.shape[1]
    sum_tables = 0.0
    sum_log = 0.0
    for d in range(doc_ptr.shape[0] - 1):
        sg1 = doc_ptr[d + 1]
        for g in range(doc_ptr[d], sg1):
            c = 0
            m = 0
            for k in range(K):
                c += n[g, k]
                m += t[g, k] + s[g, k]
                if g + 1 < sg1:
                    c += t[g + 1, k]
            if c == 0:
                continue
            sum_tables += m
            q = np.random.beta(b, c)
            sum_log -= math.log(max(q, 1e-300))
    return sum_tables, sum_log


@numba.njit(cache=True)
def _segment_topic_kernel(doc_ptr, n, t, s, alpha, a, bdoc, lam_s, lam_t):
    """mu-hat (7.11) per document and nu-hat (7.12) per segment, recursively from nu_{i,0} = mu_i (``bdoc``: b
    of every document)."""
    S, K = n.shape
    D = doc_ptr.shape[0] - 1
    mu = np.zeros((D, K))
    nu = np.zeros((S, K))
    for d in range(D):
        sg0 = doc_ptr[d]
        sg1 = doc_ptr[d + 1]
        b = bdoc[d]
        tot = 0.0
        for k in range(K):
            v = alpha[k]
            for g in range(sg0, sg1):
                v += s[g, k]
            mu[d, k] = v
            tot += v
        for k in range(K):
            mu[d, k] /= tot
        for g in range(sg0, sg1):
            Nj = 0.0
            Tj = 0.0
            Sj = 0.0
            Tn = 0.0
            for k in range(K):
                Nj += n[g, k]
                Tj += t[g, k]
                Sj += s[g, k]
                if g + 1 < sg1:
                    Tn += t[g + 1, k]
            denom = b + Nj + Tn
            new = (a * (Tj + Sj) + b) / denom
            for k in range(K):
                c = customers(n, t, g, k, sg1)
                prev = mu[d, k] if g == sg0 else nu[g - 1, k]
                base = (mu[d, k] * (Sj + lam_s) + prev * (Tj + lam_t)) / (Tj + Sj + lam_s + lam_t)
                nu[g, k] = (c - a * (t[g, k] + s[g, k])) / denom + new * base
    return mu, nu


@numba.njit(cache=True)
def _remove_token(doc_ptr, seg_ptr, words, token, z, n, t, s, nwk, nk, frozen, exact, seed):
    np.random.seed(seed)
    g, sg0, sg1, Nseg, Tseg, Sseg, sd, _ = _token_context(doc_ptr, seg_ptr, token, n, t, s)
    inv = np.zeros(nk.shape[0])  # kept by move_word, not used here
    u1, u2, _ = _take_out(g, sg0, sg1, z[token], words[token], n, t, s, Nseg, Tseg, Sseg, sd, nwk, nk, inv, 1.0,
                          frozen, exact)
    return u1, u2


@numba.njit(cache=True)
def _removal_draws(g, sg0, sg1, k, n, t, s, exact, draws, seed):
    """``draws`` samples of (u1, u2) by Algorithm 6 without applying them (tests of (7.5)-(7.7))."""
    np.random.seed(seed)
    out = np.zeros((draws, 2), dtype=np.int64)
    for r in range(draws):
        u1, u2 = _sample_removal(g, sg0, sg1, k, n, t, s, exact)
        out[r, 0] = u1
        out[r, 1] = u2
    return out
