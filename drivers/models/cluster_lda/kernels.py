"""Kernels of the cluster-based topic model (:mod:`drivers.models.cluster_lda.model`, Wallach §5.3, extract §4.4).

The document-topic prior is a three-level hierarchical Dirichlet, document -> cluster -> corpus -> uniform
(5.4)-(5.6), joined by a path assumption; the predictive of topic t in document d of cluster c is (5.7)

    P(t | d, c) = (N_td + alpha q_c(t)) / (N_d + alpha),
    q_c(t) = (M_ct + alpha1 b(t)) / (M_c + alpha1),      b(t) = (K_t + alpha0 / T) / (K + alpha0),

with N_td the document's tokens of topic t, M_ct the cluster level's count of t and K_t the corpus level's.
Under the **minimal** path assumption (the default, §5.3.2) M_ct is the number of documents of c that use t
and K_t the number of clusters that use t; under the **maximal** one both are token counts. Either way a
parent count changes only through :func:`path_add` / :func:`path_remove` (one token of topic t entering or
leaving document d of cluster c), so the counts are always a function of the state (z, c) (tested against a
recount after random add/remove sequences).

:func:`cluster_lda_sweep` is one Gibbs cycle over a partition's documents: for each document the cluster step
(5.31)-(5.32) (the document, treated as the last to arrive, leaves its cluster; every cluster with documents is
weighed N_c P(z_d | c) and a new one zeta P(z_d | empty), P(z_d | c) computed by adding the document's topics
one at a time with the path rule, pitfall 14) and then the topic step (5.33) of each of its tokens. The same
kernel makes the random start (tokens without a topic get one from the hierarchical predictive of a document
in no cluster yet, then the cluster step) and runs the frozen chain of held-out documents (topics fixed to
phi, the training counts restored after every document, so test documents never see each other).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import gammaln


@numba.njit(inline="always", cache=True)
def path_add(c, t, ndk, ctk, ck, kt, ktot, maximal):
    """A token of topic t enters a document (topic counts ``ndk``) of cluster row c."""
    first = ndk[t] == 0
    ndk[t] += 1
    if maximal or first:
        seat_add(c, t, ctk, ck, kt, ktot, maximal)


@numba.njit(inline="always", cache=True)
def path_remove(c, t, ndk, ctk, ck, kt, ktot, maximal):
    """A token of topic t leaves a document (topic counts ``ndk``) of cluster row c: the inverse of path_add."""
    ndk[t] -= 1
    if maximal or ndk[t] == 0:
        seat_remove(c, t, ctk, ck, kt, ktot, maximal)


@numba.njit(inline="always", cache=True)
def cluster_topic(c, t, ctk, ck, kt, ktot, alpha1, alpha0, T):
    """q_c(t) of (5.7): the cluster's predictive of topic t, smoothed towards the corpus level (c < 0: an empty
    cluster)."""
    base = (kt[t] + alpha0 / T) / (ktot[0] + alpha0)
    if c < 0:
        return base
    return (ctk[c, t] + alpha1 * base) / (ck[c] + alpha1)


@numba.njit(inline="always", cache=True)
def seat_add(c, a, cat, ca, ka, katot, maximal):
    """A token a (a topic reaching the cluster level, or an author token) enters cluster row c (5.56)/(5.57): the
    cluster's count N_a|c every one; the corpus level N_a every one (maximal) or the clusters with a (minimal)."""
    cat[c, a] += 1
    ca[c] += 1
    if maximal or cat[c, a] == 1:
        ka[a] += 1
        katot[0] += 1


@numba.njit(inline="always", cache=True)
def seat_remove(c, a, cat, ca, ka, katot, maximal):
    """The inverse of seat_add."""
    cat[c, a] -= 1
    ca[c] -= 1
    if maximal or cat[c, a] == 0:
        ka[a] -= 1
        katot[0] -= 1


@numba.njit(cache=True)
def log_authors_given_cluster(author_ids, lo, hi, c, cat, ca, ka, katot, eta1, eta0, maximal):
    """log P(a_d | c) of (5.59): the document's author tokens lo:hi added one at a time to cluster row c, each with
    the predictive (5.55); the counts are restored after."""
    A = ka.shape[0]
    s = 0.0
    for j in range(lo, hi):
        a = author_ids[j]
        base = (ka[a] + eta0 / A) / (katot[0] + eta0)
        s += math.log((cat[c, a] + eta1 * base) / (ca[c] + eta1))
        seat_add(c, a, cat, ca, ka, katot, maximal)
    for j in range(hi - 1, lo - 1, -1):
        seat_remove(c, author_ids[j], cat, ca, ka, katot, maximal)
    return s


@numba.njit(cache=True)
def log_topics_given_cluster(z, lo, hi, c, scratch, ctk, ck, kt, ktot, alpha, alpha1, alpha0, maximal):
    """log P(z_d | c) of (5.32): the document's topics (tokens lo:hi, in order) added one at a time to cluster
    row c with the path rule, each with the predictive (5.7) of the counts so far; the counts are restored
    after. ``scratch`` (T,) must be zero (it is again on return)."""
    T = kt.shape[0]
    s = 0.0
    for i in range(lo, hi):
        t = z[i]
        s += math.log(scratch[t] + alpha * cluster_topic(c, t, ctk, ck, kt, ktot, alpha1, alpha0, T)) \
            - math.log(i - lo + alpha)
        path_add(c, t, scratch, ctk, ck, kt, ktot, maximal)
    for i in range(hi - 1, lo - 1, -1):
        path_remove(c, z[i], scratch, ctk, ck, kt, ktot, maximal)
    return s


@numba.njit(cache=True)
def _sample(weights, n, u):
    """Index drawn from the first n nonnegative weights with the uniform u."""
    total = 0.0
    for k in range(n):
        total += weights[k]
    target = u * total
    acc = 0.0
    for k in range(n):
        acc += weights[k]
        if target < acc:
            return k
    for k in range(n - 1, -1, -1):      # rounding at the end of the cumulative sum
        if weights[k] > 0:
            return k
    return n - 1


@numba.njit(cache=True)
def _topic_weights(w, c, ndk, nwk, nk, ctk, ck, kt, ktot, alpha, alpha1, alpha0, beta, vbeta, phi_vk, frozen,
                   out):
    T = kt.shape[0]
    for t in range(T):
        word = phi_vk[w, t] if frozen else (nwk[w, t] + beta) / (nk[t] + vbeta)
        out[t] = word * (ndk[t] + alpha * cluster_topic(c, t, ctk, ck, kt, ktot, alpha1, alpha0, T))


@numba.njit(cache=True)
def cluster_lda_sweep(token_ptr, words, z, rows, nwk, nk, ctk, ck, sizes, kt, ktot, n_rows, founder, zeta, alpha,
                      alpha1, alpha0, beta, maximal, phi_vk, frozen, uniforms, start, max_clusters, theta,
                      author_ptr, author_ids, cat, ca, ka, katot, eta1, eta0):
    """One Gibbs cycle over documents ``start``.. in place (see the module's docstring).

    ``z`` (N,) topics (-1: none yet), ``rows`` (D,) every document's cluster row (-1: none yet); ``nwk`` (V x T),
    ``nk`` the topic-word counts; ``ctk`` (rows x T), ``ck``, ``sizes`` the cluster level (M_ct, M_c, N_c);
    ``kt``, ``ktot`` (1,) the corpus level; rows below ``n_rows`` are clusters (empty ones have size 0), a new
    cluster takes row ``n_rows`` (``founder[row] = d``) while fewer than ``max_clusters`` have documents.
    ``uniforms`` (2 N + D,): document d uses 2 token_ptr[d] + d onwards (first topics, cluster, topics).
    ``frozen``: the word factor is ``phi_vk`` (V x T), ``nwk``/``nk`` stay untouched, every document enters the
    counts only for its own step and leaves them after (its new cluster is row ``n_rows``, never kept), and its
    predictive topic proportions (5.7) go to ``theta`` (D x T). Returns ``(next document, rows used)``: -1 when
    all are done, else the document that found no free row (the caller grows the cluster arrays). The author
    variant (§4.7): document d's author tokens ``author_ids[author_ptr[d]:author_ptr[d+1]]`` enter the cluster
    step by P(a_d | c) (5.58)/(5.59) against ``cat`` (rows x A, N_a|c), ``ca``, ``ka``, ``katot`` (no authors: an
    all-zero ``author_ptr``)."""
    D = token_ptr.shape[0] - 1
    T = kt.shape[0]
    V = nwk.shape[0]
    vbeta = V * beta
    capacity = ctk.shape[0]
    ndk = np.zeros(T, dtype=np.int64)
    scratch = np.zeros(T, dtype=np.int64)
    weights = np.empty(max(T, capacity + 1))
    logw = np.empty(capacity + 1)
    live = 0
    for r in range(n_rows):
        if sizes[r] > 0:
            live += 1
    for d in range(start, D):
        if n_rows >= capacity:
            return d, n_rows
        lo, hi = token_ptr[d], token_ptr[d + 1]
        u0 = 2 * lo + d
        ndk[:] = 0
        for i in range(lo, hi):
            if z[i] >= 0:
                ndk[z[i]] += 1
        # the random start: topics from the predictive of a document in no cluster yet
        for i in range(lo, hi):
            if z[i] < 0:
                _topic_weights(words[i], -1, ndk, nwk, nk, ctk, ck, kt, ktot, alpha, alpha1, alpha0, beta, vbeta,
                               phi_vk, frozen, weights)
                t = _sample(weights, T, uniforms[u0 + i - lo])
                z[i] = t
                ndk[t] += 1
                if not frozen:
                    nwk[words[i], t] += 1
                    nk[t] += 1
        # the cluster step (5.31): d leaves its cluster ...
        c = rows[d]
        if c >= 0 and not frozen:
            for i in range(lo, hi):
                scratch[z[i]] += 1
            for i in range(hi - 1, lo - 1, -1):
                path_remove(c, z[i], scratch, ctk, ck, kt, ktot, maximal)
            for j in range(author_ptr[d + 1] - 1, author_ptr[d] - 1, -1):
                seat_remove(c, author_ids[j], cat, ca, ka, katot, maximal)
            sizes[c] -= 1
            if sizes[c] == 0:
                live -= 1
        # ... every cluster with documents and a new one are weighed ...
        best = -np.inf
        for r in range(n_rows):
            if sizes[r] > 0:
                logw[r] = math.log(sizes[r]) + log_topics_given_cluster(z, lo, hi, r, scratch, ctk, ck, kt, ktot,
                                                                        alpha, alpha1, alpha0, maximal) \
                    + log_authors_given_cluster(author_ids, author_ptr[d], author_ptr[d + 1], r, cat, ca, ka, katot,
                                                eta1, eta0, maximal)
                if logw[r] > best:
                    best = logw[r]
        may_open = live < max_clusters
        if may_open:
            logw[n_rows] = math.log(zeta) + log_topics_given_cluster(z, lo, hi, n_rows, scratch, ctk, ck, kt,
                                                                     ktot, alpha, alpha1, alpha0, maximal) \
                + log_authors_given_cluster(author_ids, author_ptr[d], author_ptr[d + 1], n_rows, cat, ca, ka, katot,
                                            eta1, eta0, maximal)
            if logw[n_rows] > best:
                best = logw[n_rows]
        for r in range(n_rows + 1):
            weights[r] = 0.0
            if (r < n_rows and sizes[r] > 0) or (r == n_rows and may_open):
                weights[r] = math.exp(logw[r] - best)
        c = _sample(weights, n_rows + 1, uniforms[u0 + hi - lo])
        # ... and d joins the one drawn
        if c == n_rows and not frozen:
            founder[n_rows] = d
            n_rows += 1
        if sizes[c] == 0:
            live += 1
        rows[d] = c
        for i in range(lo, hi):
            path_add(c, z[i], scratch, ctk, ck, kt, ktot, maximal)
        for j in range(author_ptr[d], author_ptr[d + 1]):
            seat_add(c, author_ids[j], cat, ca, ka, katot, maximal)
        sizes[c] += 1
        # the topic step (5.33) of every token of d (scratch holds N_td)
        for i in range(lo, hi):
            w, t = words[i], z[i]
            path_remove(c, t, scratch, ctk, ck, kt, ktot, maximal)
            if not frozen:
                nwk[w, t] -= 1
                nk[t] -= 1
            _topic_weights(w, c, scratch, nwk, nk, ctk, ck, kt, ktot, alpha, alpha1, alpha0, beta, vbeta, phi_vk,
                           frozen, weights)
            t = _sample(weights, T, uniforms[u0 + hi - lo + 1 + i - lo])
            z[i] = t
            path_add(c, t, scratch, ctk, ck, kt, ktot, maximal)
            if not frozen:
                nwk[w, t] += 1
                nk[t] += 1
        if frozen:          # the document's predictive proportions, then it leaves the training counts
            for t in range(T):
                theta[d, t] = (scratch[t] + alpha * cluster_topic(c, t, ctk, ck, kt, ktot, alpha1, alpha0, T)) \
                    / (hi - lo + alpha)
            for i in range(hi - 1, lo - 1, -1):
                path_remove(c, z[i], scratch, ctk, ck, kt, ktot, maximal)
            for j in range(author_ptr[d + 1] - 1, author_ptr[d] - 1, -1):
                seat_remove(c, author_ids[j], cat, ca, ka, katot, maximal)
            sizes[c] -= 1
            if sizes[c] == 0:
                live -= 1
        scratch[:] = 0
    return -1, n_rows


@numba.njit(cache=True)
def predictive_theta(token_ptr, z, rows, ctk, ck, kt, ktot, alpha, alpha1, alpha0):
    """(D, T) every document's predictive topic proportions (5.7) given the counts (which include it)."""
    D = token_ptr.shape[0] - 1
    T = kt.shape[0]
    out = np.zeros((D, T))
    for d in range(D):
        lo, hi = token_ptr[d], token_ptr[d + 1]
        for i in range(lo, hi):
            out[d, z[i]] += 1.0
        for t in range(T):
            out[d, t] = (out[d, t] + alpha * cluster_topic(rows[d], t, ctk, ck, kt, ktot, alpha1, alpha0, T)) \
                / (hi - lo + alpha)
    return out


@numba.njit(cache=True)
def membership_log_weights(token_ptr, z, rows, ctk, ck, sizes, kt, ktot, zeta, alpha, alpha1, alpha0, maximal,
                           author_ptr, author_ids, cat, ca, ka, katot, eta1, eta0):
    """(D, C + 1) the cluster step's log weights (5.31) of documents that stay where they are: column r
    log N_r + log P(z_d | r) with d taken out of its row ``rows[d]`` first (-1: in none), column C (``ctk`` must
    have a spare zero row C) log zeta + log P(z_d | empty); rows without documents get -inf."""
    D = token_ptr.shape[0] - 1
    C = ctk.shape[0] - 1
    T = kt.shape[0]
    scratch = np.zeros(T, dtype=np.int64)
    out = np.full((D, C + 1), -np.inf)
    for d in range(D):
        lo, hi, r0 = token_ptr[d], token_ptr[d + 1], rows[d]
        if r0 >= 0:
            for i in range(lo, hi):
                scratch[z[i]] += 1
            for i in range(hi - 1, lo - 1, -1):
                path_remove(r0, z[i], scratch, ctk, ck, kt, ktot, maximal)
            for j in range(author_ptr[d + 1] - 1, author_ptr[d] - 1, -1):
                seat_remove(r0, author_ids[j], cat, ca, ka, katot, maximal)
            sizes[r0] -= 1
        for r in range(C + 1):
            if r == C or sizes[r] > 0:
                weight = math.log(zeta) if r == C else math.log(sizes[r])
                out[d, r] = weight + log_topics_given_cluster(z, lo, hi, r, scratch, ctk, ck, kt, ktot, alpha,
                                                              alpha1, alpha0, maximal) \
                    + log_authors_given_cluster(author_ids, author_ptr[d], author_ptr[d + 1], r, cat, ca, ka, katot,
                                                eta1, eta0, maximal)
        if r0 >= 0:
            for i in range(lo, hi):
                path_add(r0, z[i], scratch, ctk, ck, kt, ktot, maximal)
            for j in range(author_ptr[d], author_ptr[d + 1]):
                seat_add(r0, author_ids[j], cat, ca, ka, katot, maximal)
            sizes[r0] += 1
            scratch[:] = 0
    return out


def path_counts(token_ptr: np.ndarray, z: np.ndarray, rows: np.ndarray, num_rows: int, num_topics: int,
                maximal: bool):
    """The cluster and corpus levels recounted from the state: ``(M (rows x T), K (T,))``; minimal: M_ct the
    documents of c using t, K_t the clusters using t; maximal: token counts."""
    D = token_ptr.shape[0] - 1
    ndk = np.zeros((D, num_topics), dtype=np.int64)
    np.add.at(ndk, (np.repeat(np.arange(D), np.diff(token_ptr)), z), 1)
    level = ndk if maximal else (ndk > 0).astype(np.int64)
    M = np.zeros((num_rows, num_topics), dtype=np.int64)
    np.add.at(M, rows, level)
    K = M.sum(axis=0) if maximal else (M > 0).sum(axis=0).astype(np.int64)
    return M, K


def log_seating(concentration: float, tables: int, customer_values: np.ndarray, customer_counts: np.ndarray) -> float:
    """log of the Chinese restaurants' seating probability as a function of their concentration a (Antoniak;
    Teh et al. 2006): a^tables prod_r Gamma(a) / Gamma(a + n_r), from the histogram of the restaurants' customers
    n_r (value, how many restaurants); restaurants without customers contribute nothing."""
    a = float(concentration)
    return float(tables * math.log(a) + customer_counts @ (gammaln(a) - gammaln(a + customer_values)))
