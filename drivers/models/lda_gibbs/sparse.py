"""SparseLDA (Yao, Mimno & McCallum, KDD 2009): the collapsed Gibbs draw of eq (4.3) at a cost per token that
follows the topics the token's word and document use, not K.

With all counts excluding the token, and ``inv_k = 1 / (n_k + V beta)``, the weight of topic k splits as

    (m_dk + alpha_k)(n_kw + beta) inv_k
        =  alpha_k beta inv_k                 s: every topic; a sum over K kept incrementally (O(1) per change)
         + m_dk beta inv_k                    r: the document's topics (m_dk > 0); kept per document
         + (alpha_k + m_dk) n_kw inv_k        q: the word's topics (n_kw > 0); summed per token

so a token costs O(#topics of its word) for q, O(1) for s and r, and a walk of the bucket the uniform falls in:
q first (most of the mass), then r (the document's topics), then s (all K, rarely). The coefficient
``coef_k = (alpha_k + m_dk) inv_k`` is cached per topic and refreshed for the two topics a move touches.

Lists: the topics of every word of the block with n_kw > 0 (CSR arrays built from ``nwk`` at the start of a
sweep, two scans of the row of each of the block's distinct words; a token adds at most one topic to its word's
list, so ``min(K, nonzeros + the word's tokens in the block)`` slots never overflow; the q walk searches the
running sums kept while summing q), and the document's topics with
m_dk > 0 (with every topic's position, so removal is O(1)). The token's old topic stays listed with a zero term
until its new topic is drawn (a draw of the same topic then touches no list); zero terms are never drawn.

``nwk``/``nk`` stay dense and current (the engine reads them after the sweep). Randomness: numba's generator
seeded with ``seed``, one ``np.random.random()`` per token, as :func:`drivers.models.lda_gibbs.model.lda_sweep` (the
same
distribution, not the same draws: the buckets order the topics differently).
"""
from __future__ import annotations

import numba
import numpy as np

_kernel = numba.njit(cache=True, error_model="numpy")


@_kernel
def word_topic_lists(words, nwk):
    """Per word of the block, its topics with ``nwk[w, k] > 0``: ``(start (V+1,), length (V,), topics)``;
    word w's topics are ``topics[start[w]:start[w] + length[w]]`` with room up to ``start[w + 1]``."""
    V, K = nwk.shape
    tokens = np.zeros(V, dtype=np.int64)
    for i in range(words.shape[0]):
        tokens[words[i]] += 1
    start = np.zeros(V + 1, dtype=np.int64)
    for w in range(V):
        room = 0
        if tokens[w] > 0:
            nonzero = 0
            for k in range(K):
                if nwk[w, k] > 0:
                    nonzero += 1
            room = min(K, nonzero + tokens[w])
        start[w + 1] = start[w] + room
    topics = np.empty(start[V], dtype=np.int32)
    length = np.zeros(V, dtype=np.int64)
    for w in range(V):
        if tokens[w] > 0:
            p = start[w]
            for k in range(K):
                if nwk[w, k] > 0:
                    topics[p] = k
                    p += 1
            length[w] = p - start[w]
    return start, length, topics


@_kernel
def sparse_draw(u, q, qcum, wtopics, wstart, nw, r, dtopics, nd, ndk, s, inv, alpha, beta):
    """The topic of ``u`` in [0, s + r + q): the q bucket (``qcum[j]``, the running sum of the word's terms up
    to ``wtopics[wstart + j]``, j < nw, with ``qcum[nw - 1] == q``), then r (``ndk[k] beta inv[k]`` over
    ``dtopics[:nd]``), then s (``alpha[k] beta inv[k]`` over every k). Zero terms are never drawn; a walk that
    rounding carries past the r or s bucket's last term takes that bucket's last positive term."""
    if u < q:
        j = 0
        while qcum[j] <= u:         # the first running sum above u: never a zero term; ends since qcum[nw-1] = q
            j += 1
        return wtopics[wstart + j]
    u -= q
    if u < r:
        cum = 0.0
        last = -1
        for j in range(nd):
            k = dtopics[j]
            t = ndk[k] * beta * inv[k]
            if t > 0.0:
                cum += t
                last = k
                if u < cum:
                    return k
        if last >= 0:
            return last
        u = r                       # r > 0 kept with no positive term: rounding only; go on to s
    u -= r
    K = alpha.shape[0]
    cum = 0.0
    for k in range(K):
        cum += alpha[k] * beta * inv[k]
        if u < cum:
            return k
    return K - 1


@_kernel
def sparse_sweep_core(token_ptr, words, z, nwk, nk, alpha, beta, seed, probe, probe_u, check):
    """:func:`lda_sweep_sparse` with two testing hooks that change no draw.

    ``probe``: at token ``probe`` (counts without it, before its draw) record the buckets ``(s, r, q)`` and the
    topic :func:`sparse_draw` gives each ``probe_u[g] * (s + r + q)``. ``check``: at every token recompute s, r,
    q, ``inv``, ``coef`` from scratch and check the word's and the document's topic lists.

    Returns ``(masses (3,), probe topics (G,), errors (6,))``: errors = max relative deviation of the kept s, r,
    q from their recomputation, the largest |inv - 1/(n_k + V beta)| + |coef - (alpha + m) inv|, and the number
    of word-list and document-list violations (zero without ``check``).
    """
    np.random.seed(seed)
    V, K = nwk.shape
    vbeta = V * beta
    wstart, wlen, wtopics = word_topic_lists(words, nwk)
    inv = np.empty(K, dtype=np.float64)
    coef = np.empty(K, dtype=np.float64)
    s = 0.0
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + vbeta)
        coef[k] = alpha[k] * inv[k]
        s += alpha[k] * beta * inv[k]
    ndk = np.zeros(K, dtype=np.int64)
    dtopics = np.empty(K, dtype=np.int32)
    dpos = np.zeros(K, dtype=np.int64)
    qcum = np.empty(K, dtype=np.float64)
    masses = np.zeros(3)
    probe_topics = np.full(probe_u.shape[0], -1, dtype=np.int32)
    errors = np.zeros(6)
    seen = np.zeros(K, dtype=np.int64) if check else np.zeros(1, dtype=np.int64)
    for d in range(token_ptr.shape[0] - 1):
        start, end = token_ptr[d], token_ptr[d + 1]
        nd = 0
        for i in range(start, end):
            k = z[i]
            if ndk[k] == 0:
                dtopics[nd] = k
                dpos[k] = nd
                nd += 1
            ndk[k] += 1
        r = 0.0
        for j in range(nd):
            k = dtopics[j]
            coef[k] = (alpha[k] + ndk[k]) * inv[k]
            r += ndk[k] * beta * inv[k]
        for i in range(start, end):
            w = words[i]
            old = z[i]
            # remove the token: its topic's terms of s and r leave, and return at the new counts
            bi = beta * inv[old]
            s -= alpha[old] * bi
            r -= ndk[old] * bi
            ndk[old] -= 1
            nwk[w, old] -= 1
            nk[old] -= 1
            inv[old] = 1.0 / (nk[old] + vbeta)
            bi = beta * inv[old]
            s += alpha[old] * bi
            r += ndk[old] * bi
            coef[old] = (alpha[old] + ndk[old]) * inv[old]
            # q over the word's topics (old stays listed, with a zero term when n_{old,w} is now 0)
            ws = wstart[w]
            nw = wlen[w]
            q = 0.0
            for j in range(nw):
                k = wtopics[ws + j]
                q += coef[k] * nwk[w, k]
                qcum[j] = q
            if check:
                _check_token(errors, seen, w, old, s, r, q, nwk, nk, ndk, inv, coef, alpha, beta, vbeta,
                             wtopics, ws, nw, dtopics, nd)
            if i == probe:
                masses[0], masses[1], masses[2] = s, r, q
                for g in range(probe_u.shape[0]):
                    probe_topics[g] = sparse_draw(probe_u[g] * (s + r + q), q, qcum, wtopics, ws, nw, r,
                                                  dtopics, nd, ndk, s, inv, alpha, beta)
            u = np.random.random() * (s + r + q)
            new = sparse_draw(u, q, qcum, wtopics, ws, nw, r, dtopics, nd, ndk, s, inv, alpha, beta)
            if new != old:
                if nwk[w, old] == 0:          # the old topic leaves the word's list ...
                    for j in range(nw):
                        if wtopics[ws + j] == old:
                            wtopics[ws + j] = wtopics[ws + nw - 1]
                            break
                    nw -= 1
                if ndk[old] == 0:             # ... and the document's
                    j = dpos[old]
                    last = dtopics[nd - 1]
                    dtopics[j] = last
                    dpos[last] = j
                    nd -= 1
                if nwk[w, new] == 0:
                    wtopics[ws + nw] = new
                    nw += 1
                if ndk[new] == 0:
                    dtopics[nd] = new
                    dpos[new] = nd
                    nd += 1
                wlen[w] = nw
            # add the token with its new topic
            bi = beta * inv[new]
            s -= alpha[new] * bi
            r -= ndk[new] * bi
            ndk[new] += 1
            nwk[w, new] += 1
            nk[new] += 1
            inv[new] = 1.0 / (nk[new] + vbeta)
            bi = beta * inv[new]
            s += alpha[new] * bi
            r += ndk[new] * bi
            coef[new] = (alpha[new] + ndk[new]) * inv[new]
            z[i] = new
        for j in range(nd):               # the document's counts go back to zero, its coefficients to alpha inv
            k = dtopics[j]
            ndk[k] = 0
            coef[k] = alpha[k] * inv[k]
    return masses, probe_topics, errors


@_kernel
def _check_token(errors, seen, w, old, s, r, q, nwk, nk, ndk, inv, coef, alpha, beta, vbeta,
                 wtopics, ws, nw, dtopics, nd):
    """The debug mode of :func:`sparse_sweep_core` at one token (see there)."""
    K = alpha.shape[0]
    s0 = 0.0
    r0 = 0.0
    q0 = 0.0
    dev = 0.0
    for k in range(K):
        x = 1.0 / (nk[k] + vbeta)
        s0 += alpha[k] * beta * x
        r0 += ndk[k] * beta * x
        q0 += (alpha[k] + ndk[k]) * nwk[w, k] * x
        dev = max(dev, abs(inv[k] - x) + abs(coef[k] - (alpha[k] + ndk[k]) * x))
    errors[0] = max(errors[0], abs(s - s0) / s0)
    errors[1] = max(errors[1], abs(r - r0) / r0 if r0 > 0 else abs(r))
    errors[2] = max(errors[2], abs(q - q0) / q0 if q0 > 0 else abs(q))
    errors[3] = max(errors[3], dev)
    # the word's list: distinct topics, every one with n_kw > 0 but the token's old topic, every such topic
    seen[:] = 0
    listed = 0
    for j in range(nw):
        k = wtopics[ws + j]
        if k < 0 or k >= K or seen[k] != 0 or (nwk[w, k] <= 0 and k != old):
            errors[4] += 1
        else:
            seen[k] = 1
            if nwk[w, k] > 0:
                listed += 1
    nonzero = 0
    for k in range(K):
        if nwk[w, k] > 0:
            nonzero += 1
    if nonzero != listed:
        errors[4] += 1
    # the document's list, the same way
    seen[:] = 0
    listed = 0
    for j in range(nd):
        k = dtopics[j]
        if k < 0 or k >= K or seen[k] != 0 or (ndk[k] <= 0 and k != old):
            errors[5] += 1
        else:
            seen[k] = 1
            if ndk[k] > 0:
                listed += 1
    nonzero = 0
    for k in range(K):
        if ndk[k] > 0:
            nonzero += 1
    if nonzero != listed:
        errors[5] += 1


@_kernel
def lda_sweep_sparse(token_ptr, words, z, nwk, nk, alpha, beta, seed):
    """One Gibbs cycle of eq (4.3) over every token, documents in order, by SparseLDA's buckets; ``z``, ``nwk``
    (V x K, dense), ``nk`` in place, as :func:`drivers.models.lda_gibbs.model.lda_sweep` without frozen topics."""
    sparse_sweep_core(token_ptr, words, z, nwk, nk, alpha, beta, seed, -1, np.zeros(0), False)
