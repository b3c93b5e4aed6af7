"""AdaTM, the adaptive topic model (Du thesis ch.7), sampled by the blocked table-indicator Gibbs sampler.

Model (thesis §7.2, with nu_{i,0} = mu_i)::

    mu_i     ~ Dirichlet_K(alpha)
    rho_ij   ~ Beta(lambda_T, lambda_S)        weight of the previous-segment edge (see "pairing" below)
    nu_ij    ~ PYP(a, b, rho_ij nu_{i,j-1} + (1 - rho_ij) mu_i)
    z_ijl    ~ Discrete(nu_ij),  w_ijl ~ Discrete_W(phi_{z_ijl}),  phi_k ~ Dirichlet_W(beta)

Chinese-restaurant reading: segment j of document i is a restaurant, its
customers for topic k are its own words n_{i,j,k} plus the proxy tables
t*_{i,j+1,k} of the next segment; each table is sent either to the previous
segment (t*_{i,j,k}) or to the document (s*_{i,j,k}); t*_{i,1,k} = 0.

Per-partition state (plain arrays, as the engine's ``.npz``): ``z`` (N,),
``n``, ``t``, ``s`` (S x K int32, global segment index). Per-document sums
(N_{i,j}, T_{i,j}, S_{i,j}, sum_j s*_{i,j,k}) are rebuilt by the kernel at the
start of every document. Hyperparameters ``alpha`` (K), ``beta``, ``a``,
``lambda_s``, ``lambda_t`` are fixed (the thesis' perplexity runs: alpha = 0.1,
lambda_S = lambda_T = 1, beta = 0.01, a = 0.2); ``b`` is "optimised
automatically" in the thesis (§7.4.3, the scheme of ch. 6, details not given):
here, with a = 0 (default; the thesis finds AdaTM's perplexity insensitive to
a), b is drawn once per cycle by the auxiliary-variable step of STM's (5.8)
applied to (7.2), whose b-terms are prod_ij b^{T_ij+S_ij} Gamma(b) /
Gamma(b + N_ij + T_{i,j+1}): q_ij ~ Beta(b, N_ij + T_{i,j+1}) per restaurant
with customers (``partition_stats``), b ~ Gamma(sum (T+S), rate sum log 1/q)
on the driver (improper prior 1/b) -- the same a and b treatment as STM and
SeqLDA, so the orderings compare the models, not their settings
(``sample_b=False`` or a > 0: b fixed, default 10). ``max_tables`` caps the
tables per (segment, topic) (the Stirling cache's columns, thesis §3.3: a
node at the cap cannot open another table); ``btigs_exact`` see below.

Derivation notes (the places where the printed thesis is wrong or silent):

* (7.2) denominator: (b)_{N_ij + T_{i,j+1}} (customers of restaurant j), not
  (b)_{N_ij + T_ij + 1}.
* Pairing: (7.2), (7.9), (7.10), (7.12) all pair lambda_S with S (document
  edge) and lambda_T with T (previous-segment edge); the sampler follows the
  equations, so rho (weight of nu_{i,j-1}) ~ Beta(lambda_T, lambda_S), and the
  generator :func:`generate_adatm` draws it that way.
* Segment 1: nu_{i,1} ~ PYP(a, b, mu_i) has no rho (its two edges both lead
  to mu_i), so its tables go to mu_i with probability 1 and (7.2) has no Beta
  factor for j = 1; the (u1=-1, u2=1) term of (7.10) therefore carries no
  (S_{i,1}+lambda_S)/(S_{i,1}+lambda_S+lambda_T) factor.
* Algorithm 6: "return" inside the loop means "break" (the decrements after
  the loop must run); the removal probabilities (7.5)-(7.7) use the counts
  *including* the customer being removed (pitfall 9).
* Lone table (thesis §7.3.2 case 2b, pitfall 4): the thesis forces a node
  with one table and more customers to keep it. That is not a Gibbs step: it
  removes the "stay" branch of the exact move from some states only, and the
  chain's stationary distribution is then biased (tests enumerate a tiny
  posterior: total variation ~0.15 over (z, t, s), ~0.04 on z alone).
  Default ``btigs_exact=True``: the indicator is drawn by (7.5)-(7.7) with no
  override; if that leaves nodes with customers but no table, the word is
  re-inserted with z fixed and a chain u2 <= the lowest such node (the only
  completions of positive probability, weights from the same (7.9)/(7.10)).
  ``btigs_exact=False`` gives the thesis rule.
* Algorithm 7's guard "j' <= u' and j' > 1" drops every (7.9) term when
  u' = -1 (the word's topic already has customers in its segment). Enumerated
  here instead: (0, j) [(7.8)], (1, j') for 2 <= j' <= j [(7.9)] and
  (-1, j') for 1 <= j' <= j [(7.10)]; invalid configurations (joining a table
  in an empty restaurant) get weight exactly 0 from S^1_{0,a} = 0.

Kernel cost per token (extract §11.2 asks for cached prefix products): summed
over the indicator, (7.8)-(7.10) obey a recursion along the chain, the
"arrival weights" W[x, k] of one new customer of topic k at restaurant x
(:func:`_arrival_weights`); row g gives Algorithm 7's topic totals. The sweep
keeps the rows below the current segment for the whole document and
recomputes only those a move made stale (a chain that leaves the segment), so
a token costs O(K) plus O(K) per stale row instead of O(K j); u given z is
then drawn by walking the chain only as far as the draw needs; the per-token
helpers run without numba's reference counting (``common.token_kernel``). On
the WEB chapters split into sentences (K = 20, about 36 segments per document)
a sweep costs about 4x LDA-Gibbs's in CPU time (8x with reference counting,
33x before the kept rows).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.constraints import POSITIVE
from inference.dirichlet import gamma_concentration_step
from inference.gibbs.common import (customers, draw_scan, frozen_args, inverse_topic_totals,
                                    longest_span, max_doc_segments, move_word, random_segment_topics, token_kernel,
                                    word_factor)
from inference.gibbs.model import PDP_CONCENTRATION, PDP_DISCOUNT, GibbsModel, SegmentedBlock, word_weight
from inference.gibbs.pdp import sample_chain_concentrations, stirling_table
from inference.options import ModelOption

DEFAULT_MAX_TABLES = 256  # column cap M_max of the Stirling cache (thesis §3.3 footnote 4)


# ---------------------------------------------------------------------------------------------------------------
# Stirling factor tables
# ---------------------------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------------------------
# Kernels (the per-token helpers are ``@token_kernel``: no reference counting, LLVM-inlined, see common.py)
# ---------------------------------------------------------------------------------------------------------------

@token_kernel
def _doc_sums(sg0, sg1, n, t, s, Nseg, Tseg, Sseg, sd):
    """N_{i,j}, T_{i,j}, S_{i,j} for the document's segments and sd_k = sum_j s*_{i,j,k}; returns sum_k sd_k."""
    K = n.shape[1]
    for k in range(K):
        sd[k] = 0
    tot = 0
    for g in range(sg0, sg1):
        a_ = 0
        b_ = 0
        c_ = 0
        for k in range(K):
            a_ += n[g, k]
            b_ += t[g, k]
            c_ += s[g, k]
            sd[k] += s[g, k]
        Nseg[g] = a_
        Tseg[g] = b_
        Sseg[g] = c_
        tot += c_
    return tot


@token_kernel
def _sample_removal(g, sg0, sg1, k, n, t, s, exact):
    """Table indicator (u1, u2) of a word of topic k in segment g, drawn by (7.5)-(7.7) (Algorithm 6, "break").

    Node x has customers c = n_{x,k} + t*_{x+1,k} (counting the one being removed, pitfall 9) and tables
    m = s*_{x,k} + t*_{x,k}. ``exact=False``: the thesis rule, a node with m = 1 < c keeps its table
    (§7.3.2 case 2b, pitfall 4). ``exact=True``: no override; a removal that leaves a node with customers but
    no table is repaired by the restricted re-insertion of :func:`_resample_token`.
    """
    u1 = 0
    u2 = g
    x = g
    while x >= sg0:
        m = s[x, k] + t[x, k]
        c = n[x, k]
        if x + 1 < sg1:
            c += t[x + 1, k]
        if not exact and m == 1 and c > m:
            break
        r = np.random.random() * c
        if r < s[x, k]:
            u1 = -1
            u2 = x
            break
        if r < m:
            u1 = 1
            u2 = x
            x -= 1
            continue
        break
    return u1, u2


@token_kernel
def _lowest_broken(g, sg0, sg1, k, n, t, s, u1, u2):
    """After a removal with indicator (u1, u2): the lowest segment in the chain left with customers of topic k
    but no table (violating (7.4)), or -1."""
    if u1 == 0:
        return -1
    xb = -1
    lo = max(sg0, u2 - 1)
    for x in range(g, lo - 1, -1):
        c = n[x, k]
        if x + 1 < sg1:
            c += t[x + 1, k]
        if c > 0 and s[x, k] + t[x, k] == 0:
            xb = x
    return xb


@token_kernel
def _apply_indicator(g, k, u1, u2, delta, t, s, Tseg, Sseg, sd):
    """Add (delta=+1) or remove (delta=-1) the tables of indicator (u1, u2) for a word of topic k at segment g;
    returns the change of sum_k sd_k."""
    if u1 == 1:
        for x in range(u2, g + 1):
            t[x, k] += delta
            Tseg[x] += delta
        return 0
    if u1 == -1:
        s[u2, k] += delta
        Sseg[u2] += delta
        sd[k] += delta
        for x in range(u2 + 1, g + 1):
            t[x, k] += delta
            Tseg[x] += delta
        return delta
    return 0


@token_kernel
def _stale_from(g, u1, u2):
    """The lowest restaurant whose arrival weights (:func:`_arrival_weights`) change when the tables of indicator
    (u1, u2) and the word at g are added or removed: row x reads n_x, t*_x, s*_x and t*_{x+1}."""
    if u1 == 1:
        return u2 - 1
    if u1 == -1:
        return u2
    return g


@token_kernel
def _node_factors(x, sg0, sg1, Nseg, Tseg, Sseg, a, b, lam_s, lam_t):
    """Topic-free factors of restaurant x in (7.8)-(7.10): ``H`` = 1/(b + N_x + T_{x+1}) (a customer arrives),
    ``E`` = (b + a(T_x+S_x)) H (S_x+lambda_S)/(S_x+T_x+lambda_S+lambda_T) (it opens a table sent to the document),
    ``G`` = the same with (T_x+lambda_T) (a table sent to restaurant x-1). At the first segment E has no Beta
    factor and G = 0: its tables all go to mu_i (module notes)."""
    C = Nseg[x]
    if x + 1 < sg1:
        C += Tseg[x + 1]
    H = 1.0 / (b + C)
    new = (b + a * (Tseg[x] + Sseg[x])) * H
    if x == sg0:
        return H, new, 0.0
    new /= Sseg[x] + Tseg[x] + lam_s + lam_t
    return H, new * (Sseg[x] + lam_s), new * (Tseg[x] + lam_t)


@token_kernel
def _arrive(n, t, s, x, sg1, k, A, H, E, G, W, r):
    """One topic of :func:`_arrival_weights`: (W0, W1) of topic k at restaurant x from row r - 1 of W, with
    a0, a1 = A[c, m] at c = n_xk + t*_{x+1,k} (t*_{J+1} = 0), m = t*_xk + s*_xk. (No array views: their
    reference counting costs more than the arithmetic here.)"""
    c = n[x, k]
    if x + 1 < sg1:
        c += t[x + 1, k]
    m = s[x, k] + t[x, k]
    a1 = A[c, m, 1]
    ga = G * a1
    return H * A[c, m, 0] + ga * W[r - 1, k, 0], E * a1 + ga * W[r - 1, k, 1]


@token_kernel
def _arrival_weights(x, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, a, b, lam_s, lam_t, A, W):
    """Row r = x - sg0 + 1 of the arrival weights W (rows x K x 2, row 0 zeros), from row r - 1: (7.8)-(7.10)
    summed over the indicator.

    W[r, k, 0] + dk_k W[r, k, 1] (dk_k = (alpha_k + sum_j s*_jk) / (sum alpha + sum_jk s*_jk), the document
    factor of (7.10)) is the weight, without F_k, of one new customer of topic k arriving at restaurant x: it
    joins a table there (H a0, (7.8)), or opens one (a1) sent to the document (E dk_k, (7.10)) or to
    restaurant x-1, where it arrives in turn (G W[r-1], (7.9)); a0, a1 = A[c, m] (:func:`_arrive`). For a word
    of segment g (its counts removed) row g's weights are Algorithm 7's topic totals. Row x reads the counts of
    restaurants <= x and t*_{x+1} only, so the sweep keeps the rows below the word's segment and recomputes
    them from the lowest one a move touched (:func:`_stale_from`): O(K) per token unless a chain leaves the
    segment.
    """
    K = n.shape[1]
    H, E, G = _node_factors(x, sg0, sg1, Nseg, Tseg, Sseg, a, b, lam_s, lam_t)
    r = x - sg0 + 1
    for k in range(K):
        W[r, k, 0], W[r, k, 1] = _arrive(n, t, s, x, sg1, k, A, H, E, G, W, r)


@token_kernel
def _topic_terms(k, g, xb, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, dk, a, b, lam_s, lam_t, A, W, buf, u):
    """Joint weights of (z=k, u) for a word of segment g, counts excluding the word, without F_k: the recursion
    of :func:`_arrival_weights` unrolled for one topic along the chain, P the product of G a1; ``dk`` the
    document factor of topic k, ``W`` the arrival weights, current for the restaurants below min(xb, g).

    Slots: ``buf[0]`` = (u1=0, u2=g) (7.8); ``buf[1 + 2(x-sg0)]`` = (u1=-1, u2=x) (7.10); ``buf[2 + 2(x-sg0)]``
    = (u1=1, u2=x) (7.9). ``xb`` <= g: exact BTIGS after a removal that left restaurant xb (the lowest such)
    with customers but no table: only chains that open a table at xb complete the state, every other slot is 0
    (``xb`` = g + 1: no restriction). Written in chain order (0, g), (-1, g), (1, g), (-1, g-1), ...; with a
    uniform ``u`` only until their running sum exceeds u times the admissible total, which is known on reaching
    restaurant min(xb, g) from W of the restaurant below (u < 0: every slot). Returns the last positive slot
    written: the draw of u given z = k.
    """
    c = n[g, k]
    if g + 1 < sg1:
        c += t[g + 1, k]
    m = s[g, k] + t[g, k]
    H, E, G = _node_factors(g, sg0, sg1, Nseg, Tseg, Sseg, a, b, lam_s, lam_t)
    v = H * A[c, m, 0] if xb > g else 0.0
    buf[0] = v
    total = v
    last = 0 if v > 0.0 else -1
    stop = np.inf
    P = 1.0
    x = g
    while True:
        a1 = A[c, m, 1]
        if m == 0 and c > 0:   # a broken node (exact removal): every admissible chain opens its table here,
            a1 = 1.0           # so its Stirling factor is a common constant
        if x == min(xb, g) and u >= 0.0:
            r = x - sg0        # W's row of the restaurant below
            stop = u * (total + P * a1 * (E * dk + G * (W[r, k, 0] + dk * W[r, k, 1])))
            if total > stop:       # drawn: (0, g)
                break
        q = 1 + 2 * (x - sg0)
        v = P * E * a1 * dk if x <= xb else 0.0
        buf[q] = v
        total += v
        if v > 0.0:
            last = q
        P *= G * a1
        if x == sg0 or P == 0.0 or total > stop:   # P underflowed: every deeper term is 0 as well
            break
        x -= 1
        c = n[x, k] + t[x + 1, k]
        m = s[x, k] + t[x, k]
        H, E, G = _node_factors(x, sg0, sg1, Nseg, Tseg, Sseg, a, b, lam_s, lam_t)
        v = P * H * A[c, m, 0] if x < xb else 0.0   # the chain's last proxy joins a table at x
        buf[q + 1] = v
        total += v
        if v > 0.0:
            last = q + 1
        if total > stop:
            break
    return last


@token_kernel
def _decode(idx, sg0):
    """buf index -> (u1, u2) (global segment index u2)."""
    if idx == 0:
        return 0, -1
    x = sg0 + (idx - 1) // 2
    if (idx - 1) % 2 == 0:
        return -1, x
    return 1, x


@token_kernel
def _take_out(g, sg0, sg1, k, w, n, t, s, Nseg, Tseg, Sseg, sd, nwk, nk, inv, vbeta, frozen, exact):
    """Remove word w of topic k from segment g's restaurants (Algorithm 6): draw its indicator (u1, u2) by
    (7.5)-(7.7), take its tables away, then the word itself (also from the topic-word counts, see
    :func:`inference.gibbs.common.move_word`); returns (u1, u2, change of sum_k sd_k)."""
    u1, u2 = _sample_removal(g, sg0, sg1, k, n, t, s, exact)
    dsdt = _apply_indicator(g, k, u1, u2, -1, t, s, Tseg, Sseg, sd)
    n[g, k] -= 1
    Nseg[g] -= 1
    move_word(nwk, nk, inv, w, k, -1, vbeta, frozen)
    return u1, u2, dsdt


@token_kernel
def _put_back(i, g, k, u1, u2, w, z, n, t, s, Nseg, Tseg, Sseg, sd, nwk, nk, inv, vbeta, frozen):
    """Add word i (w) of segment g back with topic k and indicator (u1, u2): the reverse of :func:`_take_out`;
    returns the change of sum_k sd_k."""
    dsdt = _apply_indicator(g, k, u1, u2, 1, t, s, Tseg, Sseg, sd)
    n[g, k] += 1
    Nseg[g] += 1
    z[i] = k
    move_word(nwk, nk, inv, w, k, 1, vbeta, frozen)
    return dsdt


@token_kernel
def _draw_topic(p, g, sg0, sg1, n, t, s, Nseg, Tseg, Sseg, sd, inv_doc, alpha, a, b, lam_s, lam_t, A, W, w, nwk,
                inv, beta, frozen_phi, frozen):
    """z of a removed word of segment g (Algorithm 7's topic totals): row g of the arrival weights from the kept
    row below, used once (not kept), times F_k, into ``p``; ``inv_doc`` = 1 / (sum alpha + sum_jk s*_jk)."""
    H, E, G = _node_factors(g, sg0, sg1, Nseg, Tseg, Sseg, a, b, lam_s, lam_t)
    tot = 0.0
    for k in range(p.shape[0]):
        w0, w1 = _arrive(n, t, s, g, sg1, k, A, H, E, G, W, g - sg0 + 1)
        v = (w0 + (alpha[k] + sd[k]) * inv_doc * w1) * word_factor(nwk, inv, w, k, beta, frozen_phi, frozen)
        p[k] = v
        tot += v
    return draw_scan(p, 0, p.shape[0] - 1, tot)


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


# ---------------------------------------------------------------------------------------------------------------
# The GibbsModel
# ---------------------------------------------------------------------------------------------------------------

_DUMMY_PHI = np.zeros((1, 1))


class AdaTM(GibbsModel):
    """Adaptive topic model (thesis ch.7) with the BTIGS sampler (§7.3); alpha, a, lambdas fixed, b sampled
    (a = 0) or fixed."""

    name = "adatm"
    options = GibbsModel.options + (PDP_DISCOUNT, PDP_CONCENTRATION,
                                    ModelOption("lambda_s", "Beta prior lambda_S", constraint=POSITIVE),
                                    ModelOption("lambda_t", "Beta prior lambda_T", constraint=POSITIVE))

    def initial_hyper(self, **overrides) -> dict:
        """Thesis §7.4 perplexity defaults alpha 0.1, gamma(beta) 0.01, lambda_S = lambda_T = 1, b "optimised
        automatically using the scheme discussed in Chapter 6" (``sample_b``, from b = 10, after ``b_burn_in``
        cycles). ``b_scope="document"``: that scheme, a b_i per document drawn as SeqLDA's (6.11)/(6.12) with
        AdaTM's tables (t* + s*) and customers (n + t* of the next segment), any a;
        ``"global"``: one b drawn as STM's (5.8) (needs a = 0, otherwise b stays fixed).
        ``sample_b=False``: b fixed."""
        K = self.num_topics
        hyper = {"alpha": [0.1] * K, "beta": 0.01, "a": 0.0, "b": 10.0, "lambda_s": 1.0, "lambda_t": 1.0,
                 "max_tables": DEFAULT_MAX_TABLES, "btigs_exact": True, "sample_b": True, "b_burn_in": 0,
                 "b_scope": "global"}
        for key, value in overrides.items():
            if value is None:
                continue
            if key not in hyper and key != "optimize_alpha":
                raise TypeError(f"AdaTM has no hyperparameter {key!r} (known: {', '.join(sorted(hyper))})")
            if key == "optimize_alpha":          # the engine's --fixed-alpha; alpha is always fixed here
                if value:
                    raise ValueError("AdaTM keeps alpha fixed (thesis §7.4 perplexity runs: alpha = 0.1)")
                continue
            if key == "alpha":
                value = np.broadcast_to(np.asarray(value, dtype=float), (K,)).tolist()
            elif key in ("max_tables", "b_burn_in"):
                value = int(value)
            elif key in ("btigs_exact", "sample_b"):
                value = bool(value)
            elif key == "b_scope":
                if value not in ("global", "document"):
                    raise ValueError(f"b_scope must be 'global' or 'document', got {value!r}")
            else:
                value = float(value)
            hyper[key] = value
        if not 0.0 <= hyper["a"] < 1.0 or hyper["b"] <= -hyper["a"]:
            raise ValueError(f"PDP needs 0 <= a < 1 and b > -a, got a={hyper['a']}, b={hyper['b']}")
        if hyper["lambda_s"] <= 0 or hyper["lambda_t"] <= 0:
            raise ValueError("lambda_s and lambda_t must be positive")
        return hyper

    # -- state ---------------------------------------------------------------------------------------------
    def init_state(self, block: SegmentedBlock, hyper: dict, nwk: np.ndarray, nk: np.ndarray, seed: int) -> dict:
        K = self.num_topics
        S = block.n_segments
        z = np.zeros(block.n_tokens, dtype=np.int32)
        n = np.zeros((S, K), dtype=np.int32)
        t = np.zeros((S, K), dtype=np.int32)
        s = np.zeros((S, K), dtype=np.int32)
        _init_kernel(block.doc_ptr, block.seg_ptr, block.words, K, z, n, t, s, nwk, nk, seed)
        state = {"z": z, "n": n, "t": t, "s": s}
        if self._per_document(hyper):
            state["b"] = np.full(block.n_docs, float(hyper["b"]))
        return state

    @staticmethod
    def _per_document(hyper) -> bool:
        return bool(hyper.get("sample_b", False)) and hyper.get("b_scope", "global") == "document"

    def _bdoc(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """b of every document: the state's b_i (``b_scope="document"``) or the global b repeated."""
        if self._per_document(hyper) and "b" in state:
            return state["b"]
        return np.full(block.n_docs, float(hyper["b"]))

    def factors(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """The Stirling factor table sized for this block: c < longest document, m <= max(cap, current max)."""
        tp = block.token_ptr()
        longest = longest_span(tp, 0)
        m_now = int((state["t"] + state["s"]).max()) if state["t"].size else 0
        cols = min(max(int(hyper.get("max_tables", DEFAULT_MAX_TABLES)), m_now), longest + 1) + 1
        return btigs_factors(hyper["a"], longest + 2, max(cols, 2))

    def _args(self, hyper):
        K = self.num_topics
        alpha = np.ascontiguousarray(np.broadcast_to(np.asarray(hyper["alpha"], dtype=np.float64), (K,)))
        return (alpha, float(hyper["beta"]), float(hyper["a"]), float(hyper["b"]),
                float(hyper["lambda_s"]), float(hyper["lambda_t"]))

    def _kernel_args(self, block, state, hyper):
        """``_args`` with b replaced by the per-document array the sweep and estimate kernels take."""
        alpha, beta, a, _, lam_s, lam_t = self._args(hyper)
        return alpha, beta, a, np.ascontiguousarray(self._bdoc(block, state, hyper)), lam_s, lam_t

    def sweep(self, block: SegmentedBlock, state: dict, hyper: dict, nwk: np.ndarray, nk: np.ndarray,
              seed: int, frozen_phi: np.ndarray | None = None) -> None:
        A = self.factors(block, state, hyper)
        phi, frozen = frozen_args(frozen_phi, _DUMMY_PHI)
        _sweep_kernel(block.doc_ptr, block.seg_ptr, block.words, state["z"], state["n"], state["t"], state["s"],
                      nwk, nk, *self._kernel_args(block, state, hyper), A, phi, frozen,
                      bool(hyper.get("btigs_exact", True)), int(seed))

    # -- b (thesis §7.4.3: "optimised automatically using the scheme discussed in Chapter 6") ----------------
    def samples_b(self, hyper) -> bool:
        """A global b drawn on the driver (``b_scope="global"``, a = 0)."""
        return bool(hyper.get("sample_b", False)) and float(hyper["a"]) == 0.0 and not self._per_document(hyper)

    def local_hyper_update(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> None:
        """``b_scope="document"``: every b_i by (6.11)/(6.12) over the document's restaurants, tables t* + s*,
        customers n + t* of the next segment (:func:`pdp.sample_chain_concentrations`)."""
        if not self._per_document(hyper) or int(hyper.get("cycles", 0)) < int(hyper.get("b_burn_in", 0)):
            return
        if "b" not in state:
            state["b"] = np.full(block.n_docs, float(hyper["b"]))
        sample_chain_concentrations(block.doc_ptr, block.seg_ptr, state["t"] + state["s"], state["t"], state["b"],
                                    float(hyper["a"]), int(seed))

    def partition_stats(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> np.ndarray:
        """Global b: [sum_ij (T_ij + S_ij), sum_ij log 1/q_ij], q_ij ~ Beta(b, N_ij + T_{i,j+1}) drawn here.
        Per-document b: [sum_i b_i, D] (the mean is recorded). Zeros when b is fixed."""
        if self._per_document(hyper):
            return np.array([float(np.sum(self._bdoc(block, state, hyper))), float(block.n_docs)])
        if not self.samples_b(hyper):
            return np.zeros(2)
        return np.array(_b_auxiliary(block.doc_ptr, state["n"], state["t"], state["s"], float(hyper["b"]),
                                     int(seed)))

    def update_hyper(self, hyper: dict, stats: np.ndarray, num_documents: int, seed: int) -> dict:
        """Global b ~ Gamma(shape = sum (T + S), rate = sum log 1/q) (improper prior 1/b, as STM's (5.8));
        per-document b: ``b_mean`` for the record."""
        hyper = gamma_concentration_step(hyper, stats, self.samples_b(hyper), seed)
        if self._per_document(hyper) and len(stats) == 2 and stats[1] > 0:
            hyper["b_mean"] = float(stats[0] / stats[1])
        return hyper

    # -- estimates -----------------------------------------------------------------------------------------
    def doc_topic(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """(7.11)."""
        return self._estimates(block, state, hyper)[0]

    def segment_topic(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """(7.12), recursive in j with nu_{i,0} = mu-hat_i (7.11)."""
        return self._estimates(block, state, hyper)[1]

    def _estimates(self, block, state, hyper):
        alpha, _, a, bdoc, lam_s, lam_t = self._kernel_args(block, state, hyper)
        return _segment_topic_kernel(block.doc_ptr, state["n"], state["t"], state["s"], alpha, a, bdoc, lam_s, lam_t)

    # -- test hooks ----------------------------------------------------------------------------------------
    def remove_token(self, block: SegmentedBlock, state: dict, nwk: np.ndarray, nk: np.ndarray, token: int,
                     seed: int, frozen: bool = False):
        """Algorithm 6 (thesis rule, so the state stays valid) for one token; returns the drawn (u1, u2)
        (u2 a global segment index)."""
        return _remove_token(block.doc_ptr, block.seg_ptr, block.words, int(token), state["z"], state["n"],
                             state["t"], state["s"], nwk, nk, frozen, False, int(seed))

    def conditional(self, block: SegmentedBlock, state: dict, hyper: dict, nwk: np.ndarray, nk: np.ndarray,
                    token: int, frozen_phi: np.ndarray | None = None) -> np.ndarray:
        """Kernel weights for a removed token: ``(terms, totals)``, terms (K, 1+2J) p(z=k, u) in the column
        layout of :func:`_topic_terms` (used to draw u), totals (K,) from :func:`_arrival_weights` (used to draw z)."""
        A = self.factors(block, state, hyper)
        phi, frozen = frozen_args(frozen_phi, _DUMMY_PHI)
        alpha, beta, a, bdoc, lam_s, lam_t = self._kernel_args(block, state, hyper)
        doc = int(np.searchsorted(block.doc_ptr, np.searchsorted(block.seg_ptr, token, side="right") - 1,
                                  side="right")) - 1
        return _conditional_kernel(block.doc_ptr, block.seg_ptr, block.words, int(token), state["n"], state["t"],
                                   state["s"], nwk, nk, alpha, beta, a, float(bdoc[doc]), lam_s, lam_t, A, phi,
                                   frozen)


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


# ---------------------------------------------------------------------------------------------------------------
# Generator: AdaTM's own generative process (thesis §7.2)
# ---------------------------------------------------------------------------------------------------------------

def _pyp_discrete(rng, a, b, base, sticks):
    """nu ~ PYP(a, b, Discrete(base)) by stick-breaking (thesis Def. 2.4), V_i ~ Beta(1-a, b+ia);
    the mass left after ``sticks`` atoms goes to the base (truncation)."""
    i = np.arange(1, sticks + 1)
    v = rng.beta(1.0 - a, b + i * a)
    w = v * np.concatenate([[1.0], np.cumprod(1.0 - v)[:-1]])
    atoms = rng.choice(base.shape[0], size=sticks, p=base)
    nu = np.bincount(atoms, weights=w, minlength=base.shape[0])
    nu += max(0.0, 1.0 - w.sum()) * base
    return nu / nu.sum()


def generate_adatm(num_docs: int, num_segments, segment_length, num_topics: int, vocab_size: int, *,
                   alpha=0.1, beta: float = 0.05, a: float = 0.2, b: float = 10.0, lambda_s: float = 1.0,
                   lambda_t: float = 1.0, phi: np.ndarray | None = None, seed: int = 0, sticks: int = 400):
    """Documents drawn from AdaTM (thesis §7.2): returns ``(block, truth)``.

    ``num_segments`` / ``segment_length``: ints or callables ``rng -> int``. rho (weight of nu_{i,j-1}) is
    drawn from Beta(lambda_T, lambda_S), the pairing of (7.2)/(7.9)/(7.10); segment 1 has base mu_i.
    ``truth``: ``phi`` (K, V), ``mu`` (D, K), ``nu`` (S, K), ``rho`` (S,; 0 for first segments), ``z`` (N,)
    (in the block's token order: document ids are zero-padded so sorting keeps the generation order).
    """
    rng = np.random.default_rng(seed)
    K, V = num_topics, vocab_size
    if phi is None:
        phi = rng.dirichlet(np.full(V, beta), size=K)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), (K,))
    n_seg = num_segments if callable(num_segments) else (lambda r: int(num_segments))
    seg_len = segment_length if callable(segment_length) else (lambda r: int(segment_length))
    docs, mus, nus, rhos, zs = [], [], [], [], []
    for d in range(num_docs):
        mu = rng.dirichlet(alpha)
        prev = mu
        segments = []
        for j in range(n_seg(rng)):
            if j == 0:
                rho, base = 0.0, mu
            else:
                rho = rng.beta(lambda_t, lambda_s)
                base = rho * prev + (1.0 - rho) * mu
            nu = _pyp_discrete(rng, a, b, base, sticks)
            L = seg_len(rng)
            z = rng.choice(K, size=L, p=nu)
            cum = np.cumsum(phi[z], axis=1)
            w = (rng.random(L)[:, None] > cum).sum(axis=1).clip(max=V - 1)
            segments.append(w.astype(np.int32))
            zs.append(z)
            nus.append(nu)
            rhos.append(rho)
            prev = nu
        mus.append(mu)
        docs.append((f"d{d:06d}", segments))
    block = SegmentedBlock.from_segments(docs)
    truth = {"phi": phi, "mu": np.array(mus).reshape(-1, K), "nu": np.array(nus).reshape(-1, K),
             "rho": np.array(rhos), "z": np.concatenate(zs).astype(np.int32) if zs else np.zeros(0, np.int32)}
    return block, truth
