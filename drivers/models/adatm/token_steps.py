"""AdaTM's per-token steps (inlined into its sweep, :mod:`.kernels`): a token's removal from and arrival at the
table-indicator tree of its segment chain, and the conditional of its topic (thesis ch. 7, extract §7)."""
from __future__ import annotations

import numpy as np

from inference.gibbs.common import draw_scan, move_word, token_kernel, word_factor


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
