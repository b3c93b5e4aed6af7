"""The hybrid variational-MCMC local step (thesis §4.2, eqs 4.7-4.10; Mimno, Hoffman & Blei 2012). Pure numba.

theta_d is marginalised and q(z_d) is represented by samples: every token's topic is resampled from

    (4.9)   q(z_dn = k | z_d,-n)  ∝  (alpha_k + n_dk^-n) exp(E_q[log beta_kw])

with the topics fixed at q(beta) (E_q[log beta] from lambda). After ``burn_in`` sweeps over a document,
``samples`` more sweeps are kept and the expected counts E_q[n_kv] (4.10) are their average, so the
statistics are sparse: a token contributes to the topics it visited only.

**Sparse sampler.** The weight of topic k splits into a document bucket n_dk e_kw (non-zero only for the
topics the document uses) and a smoothing bucket alpha_k e_kw (fixed for word w during the whole E-step:
its cumulative sums are computed once per local word and searched by bisection), so a draw costs
O(topics of the document + log K), not K (the split of Mimno et al. 2012 and FACTORIE's SparseOnlineLDA).
One uniform draw is mapped through the canonical order "document bucket (its topics ascending), then
smoothing bucket (all topics ascending)"; :func:`draw_dense` walks the same order over all K and is the
reference the sparse sampler is tested against (the same samples for the same seed).

**Randomness**: each document's sweeps draw from a SplitMix64 stream started from (run seed, iteration, document
id) alone (:func:`document_seeds`, :func:`next_uniform`), so partitions, task retries and ``--resume`` give the
same samples.

Per document the kernel also returns what the driver needs: the alpha statistics
sum_d Psi(alpha_k + nbar_dk) - Psi(A + N_d) (q(theta_d) = Dir(alpha + nbar_d), nbar the kept-sample mean of the
document-topic counts; the driver's Newton step for alpha uses them as in variational EM), or with
``average_digammas`` sum_d mean_s [Psi(alpha_k + n^(s)_dk)] - Psi(A + N_d), the kept samples' Monte Carlo
estimate of E[log theta_dk] (Psi of the mean counts overstates it, and alpha drifts upward with it), and the sampled log
joint log p(z_d | alpha) + sum_n E_q[log beta_{z_dn w_dn}] (the unnormalised log of (4.8)) averaged over the kept
samples, the progress measure of hybrid EM (its words' part from the statistics, :func:`word_log_joint`).
"""
from __future__ import annotations

import hashlib
import math

import numba
import numpy as np

from inference.heldout import document_seed
from inference.special import digamma

_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_MIX3 = np.uint64(0x94D049BB133111EB)


_HASHES: dict = {}     # a Python worker's blocks' document hashes: the same every iteration


def document_hashes(doc_ids, seed: int) -> np.ndarray:
    """(D,) uint64: BLAKE2b of (run seed, document id), stable across processes and machines. A worker keeps the
    hashes of the blocks it sampled (keyed by the seed and a digest of the ids), so a block's 40k documents are
    hashed once per run, not per iteration."""
    ids = [str(d) for d in doc_ids]
    key = (int(seed), hashlib.blake2b("\x00".join(ids).encode("utf-8"), digest_size=16).digest())
    hashes = _HASHES.get(key)
    if hashes is None:
        if len(_HASHES) >= 16:
            _HASHES.clear()
        hashes = _HASHES[key] = np.array([document_seed(seed, d) for d in ids], dtype=np.uint64)
    return hashes


_SHIFT30, _SHIFT27, _SHIFT31, _SHIFT11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


@numba.njit(cache=True, nogil=True)
def _mix(x):
    """The SplitMix64 output function (Steele, Lea & Flood 2014)."""
    x = (x ^ (x >> _SHIFT30)) * _MIX2
    x = (x ^ (x >> _SHIFT27)) * _MIX3
    return x ^ (x >> _SHIFT31)


@numba.njit(cache=True, nogil=True)
def document_seed_at(doc_hash, iteration):
    """The 64-bit start of one document's random stream in one iteration (SplitMix64 of the hash and the
    iteration)."""
    return _mix(doc_hash ^ (np.uint64(iteration) * _MIX1))


@numba.njit(cache=True, nogil=True)
def next_uniform(state):
    """``(state, u)``: one step of a document's SplitMix64 stream and a uniform in [0, 1) of its top 53 bits.
    (Per document a SplitMix64 state costs nothing to seed; numba's Mersenne Twister took 600 words and a
    tenth of the kernel to seed per document.)"""
    state = state + _MIX1
    return state, np.float64(_mix(state) >> _SHIFT11) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True)
def _seeds_at(hashes, iteration):
    out = np.empty(hashes.shape[0], dtype=np.uint64)
    for d in range(hashes.shape[0]):
        out[d] = document_seed_at(hashes[d], iteration)
    return out


def document_seeds(doc_ids, seed: int, iteration: int) -> np.ndarray:
    """The stream start of every document of a block in one iteration (uint64)."""
    return _seeds_at(document_hashes(doc_ids, seed), np.uint64(iteration))


def sampling_weights(eb_local: np.ndarray) -> np.ndarray:
    """The sampler's copy of the word factor of (4.9): float32 (half the memory traffic of the token loop's
    scattered reads: 30% faster with two tasks sharing a cache), every word's row scaled to a maximum of 1, which
    leaves its draws unchanged and keeps exp(E_q[log beta]) of rare words (1e-48 and below) from underflowing.
    The smoothing sums stay float64 (:func:`smoothing_cumsums`), so the sparse and the dense draws still agree
    exactly; the log joint takes the unscaled float64 weights (:func:`word_log_joint`)."""
    if eb_local.size == 0:
        return np.zeros(eb_local.shape, dtype=np.float32)
    return np.ascontiguousarray(eb_local / eb_local.max(axis=1, keepdims=True), dtype=np.float32)


@numba.njit(cache=True, nogil=True)
def smoothing_cumsums(eb_local, alpha):
    """(U, K) cumulative sums over k of alpha_k exp(E[log beta_kw]) for every local word (one E-step's worth)."""
    U, K = eb_local.shape
    out = np.empty((U, K))
    for u in range(U):
        c = 0.0
        for k in range(K):
            c += alpha[k] * eb_local[u, k]
            out[u, k] = c
    return out


@numba.njit(cache=True, nogil=True)
def smoothing_guides(cum):
    """(U, K) int32 guide table of the smoothing bucket (Chen & Asau's indexed search): entry j of word u is the
    first topic whose cumulative sum exceeds j / K of the word's smoothing mass, so a draw starts its search
    there and takes about one step instead of a bisection's log2 K scattered reads."""
    U, K = cum.shape
    out = np.empty((U, K), dtype=np.int32)
    for u in range(U):
        step = cum[u, K - 1] / K
        k = 0
        for j in range(K):
            threshold = j * step
            while k < K - 1 and cum[u, k] <= threshold:
                k += 1
            out[u, j] = k
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _smoothing_topic(cum, guide, u, x, K):
    """The first topic k with cum[u, k] > x (K - 1 if none: rounding), what a bisection of the row finds,
    searched from the guide table's entry for x."""
    j = int(x * K / cum[u, K - 1])
    if j < 0:
        j = 0
    elif j > K - 1:
        j = K - 1
    k = guide[u, j]
    while k > 0 and cum[u, k - 1] > x:
        k -= 1
    while k < K - 1 and cum[u, k] <= x:
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def draw_dense(x01, n, eb_local, u, alpha, K):
    """Reference draw of (4.9) for local word ``u`` in O(K): the canonical order (document bucket, then smoothing
    bucket). (The kernels index the 2-D arrays by row: a row view per token costs numba a reference count.)"""
    r = 0.0
    for k in range(K):
        if n[k] > 0:
            r += n[k] * eb_local[u, k]
    s = 0.0
    for k in range(K):
        s += alpha[k] * eb_local[u, k]
    x = x01 * (r + s)
    if x < r:
        for k in range(K):
            if n[k] > 0:
                x -= n[k] * eb_local[u, k]
                if x < 0.0:
                    return k
        for k in range(K - 1, -1, -1):        # rounding: the last topic of the bucket
            if n[k] > 0:
                return k
    x -= r
    c = 0.0
    for k in range(K):
        c += alpha[k] * eb_local[u, k]
        if x < c:
            return k
    return K - 1


@numba.njit(cache=True, nogil=True, inline="always")
def _add_topic(k, n, active, n_active):
    """n_k += 1, keeping ``active`` (the topics with n_k > 0) sorted; returns the new count of active topics."""
    n[k] += 1
    if n[k] == 1:
        j = n_active
        while j > 0 and active[j - 1] > k:
            active[j] = active[j - 1]
            j -= 1
        active[j] = k
        n_active += 1
    return n_active


@numba.njit(cache=True, nogil=True, inline="always")
def _unlist_topic(k, active, n_active):
    """Take topic ``k`` (now n_k = 0) out of the sorted ``active`` list; returns the new count."""
    j = 0
    while active[j] != k:
        j += 1
    for i in range(j, n_active - 1):
        active[i] = active[i + 1]
    return n_active - 1


@numba.njit(cache=True, nogil=True)
def hybrid_documents(indptr, local_terms, counts, z, eb_local, alpha, burn_in, samples, seeds, initialise,
                     dense, average_digammas=False):
    """Sample every document of a block (see the module docstring); ``z`` (one int32 per token, in CSR order
    with each entry repeated ``counts`` times) is the warm start and is updated in place (``initialise``: draw
    it uniformly first). ``dense``: draw with the O(K) reference :func:`draw_dense` (the same samples).

    Returns ``(sstats (U, K): E_q[n_kv] of the block's words, alpha_stats (K,), doc_log_joint (D,), tokens)``,
    ``doc_log_joint`` the kept-sample mean of log p(z_d | alpha); the words' part of the log joint is
    :func:`word_log_joint` of ``sstats``.

    The sparse draw is written out in the token loop: a call per token (numba passes the arrays with their
    reference counts) costs a third of the kernel.
    """
    D = indptr.shape[0] - 1
    U, K = eb_local.shape
    cum = smoothing_cumsums(eb_local, alpha)
    A = 0.0
    for k in range(K):
        A += alpha[k]
    psi_alpha = np.empty(K)
    lgamma_alpha = np.empty(K)
    for k in range(K):
        psi_alpha[k] = digamma(alpha[k])
        lgamma_alpha[k] = math.lgamma(alpha[k])
    kept = np.zeros((U, K), dtype=np.int32)     # tokens of word u in topic k, summed over the kept samples
    alpha_stats = np.zeros(K)
    log_joint = np.zeros(D)
    n = np.zeros(K, dtype=np.int64)
    nbar = np.zeros(K)
    active = np.empty(K, dtype=np.int64)
    touched = np.empty(K, dtype=np.int64)      # the topics with nbar_k > 0 in this document
    product = np.empty(K)                      # n_dk e_kw of the active topics (the document bucket's terms)
    sum_psi_total = 0.0
    weight = 1.0 / samples
    t0 = 0
    for d in range(D):
        state = seeds[d]
        start, end = indptr[d], indptr[d + 1]
        N = 0
        for j in range(start, end):
            N += int(counts[j])
        t1 = t0 + N
        if initialise:
            for t in range(t0, t1):
                state, x01 = next_uniform(state)
                z[t] = min(int(x01 * K), K - 1)
        n_active = 0
        n_touched = 0
        for t in range(t0, t1):
            n_active = _add_topic(z[t], n, active, n_active)
        for sweep in range(burn_in + samples):
            keep = sweep >= burn_in
            t = t0
            for j in range(start, end):
                u = local_terms[j]
                for _ in range(int(counts[j])):
                    previous = z[t]             # n_k^-n: the topic stays listed until the draw is known (its
                    n[previous] -= 1            # zero term changes no sum), so staying costs no list update
                    state, x01 = next_uniform(state)
                    if dense:
                        k = draw_dense(x01, n, eb_local, u, alpha, K)
                    else:                       # document bucket (its topics ascending), then smoothing bucket
                        r = 0.0
                        for i in range(n_active):
                            p = n[active[i]] * eb_local[u, active[i]]
                            product[i] = p
                            r += p
                        x = x01 * (r + cum[u, K - 1])
                        if x < r:
                            k = -1
                            for i in range(n_active):
                                x -= product[i]
                                if x < 0.0:
                                    k = active[i]
                                    break
                            if k < 0:                   # rounding: the bucket's last topic in use
                                i = n_active - 1
                                while n[active[i]] == 0:
                                    i -= 1
                                k = active[i]
                        else:
                            x -= r
                            lo, hi = 0, K - 1
                            while lo < hi:
                                mid = (lo + hi) // 2
                                if cum[u, mid] > x:
                                    hi = mid
                                else:
                                    lo = mid + 1
                            k = lo
                    z[t] = k
                    if k == previous:
                        n[k] += 1
                    else:
                        if n[previous] == 0:
                            n_active = _unlist_topic(previous, active, n_active)
                        n_active = _add_topic(k, n, active, n_active)
                    if keep:                    # a kept sample's statistics (4.10)
                        kept[u, k] += 1
                    t += 1
            if keep:                            # a kept sample's document counts and log p(z_d | alpha)
                lj = math.lgamma(A) - math.lgamma(A + N)
                for i in range(n_active):
                    k = active[i]
                    if average_digammas:        # this sample's Psi(alpha_k + n_dk), averaged
                        alpha_stats[k] += (digamma(alpha[k] + n[k]) - psi_alpha[k]) * weight
                    else:                       # the mean counts, for Psi at the document's end
                        if nbar[k] == 0.0:
                            touched[n_touched] = k
                            n_touched += 1
                        nbar[k] += n[k] * weight
                    lj += math.lgamma(alpha[k] + n[k]) - lgamma_alpha[k]
                log_joint[d] += lj * weight
        # Psi(alpha_k + nbar_dk) - Psi(A + N_d): Psi(alpha_k) for the topics the document never visited, added
        # for all documents at the end, so a document costs its own topics, not K
        sum_psi_total += digamma(A + N)
        for i in range(n_touched):              # (none with average_digammas)
            k = touched[i]
            alpha_stats[k] += digamma(alpha[k] + nbar[k]) - psi_alpha[k]
            nbar[k] = 0.0
        for i in range(n_active):               # leave n all zero for the next document
            n[active[i]] = 0
        t0 = t1
    for k in range(K):
        alpha_stats[k] += D * psi_alpha[k] - sum_psi_total
    sstats = kept * weight                      # the kept samples' mean (4.10): exact counts, scaled once
    return sstats, alpha_stats, log_joint, t0


@numba.njit(cache=True, nogil=True)
def word_log_joint(sstats, eb_local):
    """The words' part of the sampled log joint, sum_n E_q[log beta_{z_dn w_dn}] averaged over the kept samples
    and summed over the block: sum_{u,k} E_q[n_ku] log e_ku (the statistics are those averages)."""
    U, K = sstats.shape
    total = 0.0
    for u in range(U):
        for k in range(K):
            if sstats[u, k] > 0.0:
                total += sstats[u, k] * math.log(eb_local[u, k])
    return total


def block_tokens(counts: np.ndarray) -> int:
    """Tokens of a block (its counts must be whole numbers: a token is sampled one at a time)."""
    total = float(counts.sum())
    if not np.all(counts == np.round(counts)):
        raise ValueError("the hybrid sampler needs whole term counts")
    return int(round(total))
