"""The numbers of a topic browser (LDAvis: Sievert & Shirley 2014; pyLDAvis ``_prepare.py``): topic shares, term
relevance, saliency, Jensen-Shannon distances between topics and their principal coordinates (classical MDS).

Notation: ``phi`` (K x V) the topics' word distributions p(w | k) (rows sum to 1), ``p_w`` (V,) the marginal word
distribution of the corpus (term frequencies / tokens), ``shares`` (K,) the topics' shares of the corpus' tokens.

* lift(k, w) = phi_kw / p_w; relevance(k, w | lambda) = lambda log phi_kw + (1 - lambda) log lift(k, w)
  (Sievert & Shirley eq. 1; lambda = 1 ranks by probability, lambda = 0 by lift).
* saliency(w) = p_w sum_k p(k | w) log(p(k | w) / p(k)), p(k | w) = phi_kw / sum_k' phi_k'w (pyLDAvis' reading of
  Chuang et al. 2012: p(k | w) normalises phi over topics, not phi weighted by the shares).
* JS(P, Q) = (KL(P || M) + KL(Q || M)) / 2, M = (P + Q) / 2, natural logs: the divergence (not its square root), as
  pyLDAvis gives PCoA.
* PCoA: B = -H D^2 H / 2 (H = I - 11'/n), coordinates = the top eigenvectors of B scaled by sqrt(eigenvalue),
  negative or vanishing eigenvalues set to 0 (pyLDAvis ``_pcoa``, after scikit-bio).
"""
from __future__ import annotations

import numba
import numpy as np
from scipy.linalg import eigh
from scipy.spatial.distance import pdist, squareform

#: pyLDAvis' grid of lambda values is 0, 0.01, ..., 1; the site keeps each topic's top words on this coarser grid
#: (the union of the top ``n`` words at each value), enough to rank exactly at any lambda on the grid
LAMBDA_GRID = np.round(np.linspace(0.0, 1.0, 11), 2)


def topic_shares(theta: np.ndarray, doc_lengths: np.ndarray | None = None) -> np.ndarray:
    """Each topic's share of the corpus' tokens: sum_d n_d theta_dk / sum_d n_d (pyLDAvis ``topic_freq``);
    without lengths every document weighs the same."""
    theta = np.asarray(theta, dtype=np.float64)
    weights = np.ones(theta.shape[0]) if doc_lengths is None else np.asarray(doc_lengths, dtype=np.float64)
    total = weights @ theta
    return total / total.sum()


def log_lift(phi: np.ndarray, p_w: np.ndarray) -> np.ndarray:
    """log(phi_kw / p_w) (K x V); -inf where phi_kw = 0."""
    with np.errstate(divide="ignore"):
        return np.log(phi) - np.log(p_w)[None, :]


def relevance(log_phi: np.ndarray, lift: np.ndarray, lam: float) -> np.ndarray:
    """lambda log phi + (1 - lambda) log lift (Sievert & Shirley eq. 1); ``lift`` is log lift."""
    return lam * log_phi + (1.0 - lam) * lift


def relevance_candidates(phi: np.ndarray, p_w: np.ndarray, n: int, lambdas=LAMBDA_GRID) -> list[np.ndarray]:
    """Per topic, the word ids among its ``n`` most relevant at any lambda of ``lambdas`` (ascending ids): the
    words a page must hold to rank the top ``n`` at each of those values. Computed topic by topic (K x V at once
    would double the memory of the model)."""
    log_p = np.log(p_w)
    out = []
    for row in np.asarray(phi, dtype=np.float64):
        with np.errstate(divide="ignore"):
            log_phi = np.log(row)
        lift = log_phi - log_p
        n_row = min(n, row.size)
        chosen = set()
        for lam in lambdas:
            score = relevance(log_phi, lift, float(lam))
            chosen.update(np.argpartition(-score, n_row - 1)[:n_row].tolist())
        out.append(np.array(sorted(chosen), dtype=np.int64))
    return out


def saliency(phi: np.ndarray, shares: np.ndarray, p_w: np.ndarray) -> np.ndarray:
    """saliency(w) = p_w * distinctiveness(w) (V,), as pyLDAvis ``_topic_info`` computes it."""
    phi = np.asarray(phi, dtype=np.float64)
    column = phi.sum(axis=0)
    given = np.divide(phi, column[None, :], out=np.zeros_like(phi), where=column[None, :] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kernel = np.where(given > 0, given * np.log(given / np.asarray(shares, dtype=np.float64)[:, None]), 0.0)
    return np.asarray(p_w, dtype=np.float64) * kernel.sum(axis=0)


def js_divergences(phi: np.ndarray) -> np.ndarray:
    """K x K Jensen-Shannon divergences (natural logs) between the rows of ``phi``: scipy's ``jensenshannon``
    distance, squared."""
    return squareform(pdist(np.asarray(phi, dtype=np.float64), metric="jensenshannon") ** 2)


#: K^2 V up to this many: the exact divergences (pdist); above, :func:`js_divergences_truncated`
EXACT_MAP_WORK = 2_000_000_000
#: the word mass each topic keeps at least in :func:`js_divergences_truncated` (1 - this), of its words above
#: its floor (1 + this margin times its least probability)
MAP_MASS_LEFT_OUT = 1e-6
MAP_FLOOR_MARGIN = 1e-6


def _js_terms(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """g(p, q) = (p log(2p / (p + q)) + q log(2q / (p + q))) / 2 elementwise (0 log 0 = 0): JS(P, Q) = sum_w g."""
    total = p + q
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(2.0 * p / total), 0.0)
        b = np.where(q > 0, q * np.log(2.0 * q / total), 0.0)
    return 0.5 * (a + b)


def kept_words(phi: np.ndarray, left_out: float) -> tuple[np.ndarray, np.ndarray]:
    """Per topic the words above its floor (more than :data:`MAP_FLOOR_MARGIN` above its least probable word's
    probability: a smoothed topic's words with counts), most probable first, until they hold 1 - ``left_out`` of
    its mass: ``(offsets (K + 1,), word ids)`` in CSR form, each topic's ids ascending."""
    rows = []
    for row in phi:
        above = np.flatnonzero(row > row.min() * (1.0 + MAP_FLOOR_MARGIN))
        order = above[np.argsort(-row[above], kind="stable")]
        n = min(int(np.searchsorted(np.cumsum(row[order]), 1.0 - left_out)) + 1, order.size)
        rows.append(np.sort(order[:n]))
    offsets = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)
    return offsets, np.concatenate(rows).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _pair_sums(phi, kept_ptr, kept_words, keeps):
    """One pass over every topic i's kept words against every topic j, without temporaries: the sums of g over
    i's words (own), over those j keeps too (shared), i's mass and count of those, and j's mass on i's words
    (mass_on[j, i]); ``keeps`` (K x V bool): which words each topic keeps."""
    K = phi.shape[0]
    own = np.zeros((K, K))
    shared = np.zeros((K, K))
    shared_mass = np.zeros((K, K))
    shared_words = np.zeros((K, K))
    mass_on = np.zeros((K, K))
    for i in range(K):
        for j in range(K):
            o = 0.0
            s = 0.0
            sm = 0.0
            sw = 0.0
            mo = 0.0
            for n in range(kept_ptr[i], kept_ptr[i + 1]):
                w = kept_words[n]
                p = phi[i, w]
                q = phi[j, w]
                g = p * np.log(2.0 * p / (p + q))
                if q > 0.0:
                    g += q * np.log(2.0 * q / (p + q))
                g *= 0.5
                o += g
                mo += q
                if keeps[j, w]:
                    s += g
                    sm += p
                    sw += 1.0
            own[i, j] = o
            shared[i, j] = s
            shared_mass[i, j] = sm
            shared_words[i, j] = sw
            mass_on[j, i] = mo
    return own, shared, shared_mass, shared_words, mass_on


def _outside_ranges(phi: np.ndarray, keeps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per topic the least and the largest probability of the words it does not keep (both its least probability
    when it keeps every word)."""
    low = phi.min(axis=1)
    high = np.array([row[~kept].max() if not kept.all() else row.min() for row, kept in zip(phi, keeps)])
    return low, high


def js_divergences_truncated(phi: np.ndarray, left_out: float = MAP_MASS_LEFT_OUT) -> tuple[np.ndarray, np.ndarray]:
    """(K x K divergences, K x K bound) for large K x V: JS(P_i, P_j) = sum_w g(p_iw, p_jw) has its terms over the
    words either topic keeps (:func:`kept_words`) exact (read from ``phi``); the m words neither keeps, where i and
    j hold masses a and b, add m g(a / m, b / m), which is at most their sum since g is jointly convex (exact when
    both topics are flat there, as a smoothed topic's tail is). So the exact divergence lies in [value, value +
    bound], bound = min((a + b) log 2 / 2, m max g over the corners of the box [lo_i, hi_i] x [lo_j, hi_j] of
    the values those words take) - m g(a / m, b / m) (g(p, q) <= (p + q) log 2 / 2; a convex g is largest on a box
    at a corner), about 0 for smoothed topics (lo = hi within the floor margin). Work K^2 N (N: kept
    words per topic, one pass: :func:`_pair_sums`); memory beyond ``phi``: K x K matrices and a K x V bitmap of the
    kept words (U_ij = sum over i's kept words, I_ij over the words both keep, JS = U_ij + U_ji - I_ij).
    A smoothed topic's floor words are flat, so there the tail term is exact too."""
    phi = np.ascontiguousarray(phi, dtype=np.float64)
    K, V = phi.shape
    kept_ptr, kept = kept_words(phi, left_out)
    keeps = np.zeros((K, V), dtype=np.bool_)
    keeps[np.repeat(np.arange(K), np.diff(kept_ptr)), kept] = True
    own, shared, shared_mass, shared_words, mass_on = _pair_sums(phi, kept_ptr, kept, keeps)
    union = own + own.T - shared
    # i's mass outside both kept sets: its total - on its own words - on j's words + on the words both keep
    outside = np.clip((phi.sum(axis=1) - np.diag(mass_on))[:, None] - mass_on + shared_mass, 0.0, None)
    counts = np.diff(kept_ptr).astype(np.float64)
    words_outside = np.maximum(V - (counts[:, None] + counts[None, :] - shared_words), 0.0)
    a, b = outside, outside.T
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(words_outside > 0, words_outside * _js_terms(a / words_outside, b / words_outside), 0.0)
    divergences = union + tail
    # the tail at most: every word on disjoint supports, (a + b) log 2 / 2, or m times g's largest value over the
    # box of values those words can take (g is convex, so its largest value on a box is at a corner): tight when
    # both topics are flat outside what they keep, as smoothed topics are
    low, high = _outside_ranges(phi, keeps)
    corners = np.maximum.reduce([_js_terms(p[:, None], q[None, :]) for p in (low, high) for q in (low, high)])
    most = np.minimum(0.5 * np.log(2.0) * (a + b), words_outside * corners)
    bound = np.maximum(most - tail, 0.0)
    np.fill_diagonal(divergences, 0.0)
    np.fill_diagonal(bound, 0.0)
    return np.maximum(divergences, 0.0), bound


def topic_divergences(phi: np.ndarray) -> tuple[np.ndarray, float]:
    """(K x K Jensen-Shannon divergences, the largest amount any may be below the exact one): exact (pdist) when
    K^2 V is at most :data:`EXACT_MAP_WORK`, else :func:`js_divergences_truncated` (K^2 times the words above
    each topic's floor; K = 1000, V = 100k: README)."""
    K, V = np.shape(phi)
    if K * K * V <= EXACT_MAP_WORK:
        return js_divergences(phi), 0.0
    divergences, bound = js_divergences_truncated(phi)
    return divergences, float(bound.max())


def pcoa(distances: np.ndarray, n_components: int = 2) -> np.ndarray:
    """Principal coordinates (classical MDS) of a symmetric distance matrix (n x n_components): the top
    eigenvectors of the double-centred -D^2 / 2, scaled by the square roots of their eigenvalues; an eigenvalue
    that is negative or close to 0 gives a zero axis. Each axis' sign is fixed so that its largest entry in
    absolute value is positive (eigenvectors have no sign of their own)."""
    d = np.asarray(distances, dtype=np.float64)
    n = d.shape[0]
    if n == 1:
        return np.zeros((1, n_components))
    centre = np.eye(n) - np.full((n, n), 1.0 / n)
    b = -centre @ (d ** 2) @ centre / 2.0
    b = (b + b.T) / 2.0
    values, vectors = eigh(b)
    order = np.argsort(values)[::-1][:n_components]
    values, vectors = values[order], vectors[:, order]
    values[np.isclose(values, 0.0) | (values < 0)] = 0.0
    coords = vectors * np.sqrt(values)[None, :]
    if coords.shape[1] < n_components:
        coords = np.hstack([coords, np.zeros((n, n_components - coords.shape[1]))])
    for j in range(coords.shape[1]):
        if np.any(coords[:, j]):
            coords[:, j] *= np.sign(coords[np.argmax(np.abs(coords[:, j])), j])
    return coords


def nearest_topics(distances: np.ndarray, n: int) -> np.ndarray:
    """K x min(n, K-1) ids of each topic's nearest other topics, nearest first (ties: lower id first)."""
    d = np.asarray(distances, dtype=np.float64).copy()
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind="stable")[:, :min(n, d.shape[0] - 1)]


def top_documents(theta_batches, num_topics: int, n: int):
    """Per topic the ``n`` documents of the largest proportion, over ``(ids (B,), theta (B x K))`` batches read one
    at a time (a corpus' proportions need not fit in memory): ``(rows (K x m) of (id, proportion) pairs``,
    largest first (ties: the earlier document first)."""
    best_ids = [np.empty(0, dtype=object) for _ in range(num_topics)]
    best_val = [np.empty(0) for _ in range(num_topics)]
    best_pos = [np.empty(0, dtype=np.int64) for _ in range(num_topics)]
    offset = 0
    for ids, theta in theta_batches:
        ids = np.asarray(ids, dtype=object)
        theta = np.asarray(theta, dtype=np.float64)
        pos = np.arange(offset, offset + len(ids))
        offset += len(ids)
        take = min(n, len(ids))
        if take == 0:
            continue
        cand = np.argpartition(-theta, take - 1, axis=0)[:take] if take < len(ids) else \
            np.tile(np.arange(len(ids))[:, None], (1, num_topics))
        for k in range(num_topics):
            c = cand[:, k]
            vals = np.concatenate([best_val[k], theta[c, k]])
            all_ids = np.concatenate([best_ids[k], ids[c]])
            all_pos = np.concatenate([best_pos[k], pos[c]])
            keep = np.lexsort((all_pos, -vals))[:n]
            best_val[k], best_ids[k], best_pos[k] = vals[keep], all_ids[keep], all_pos[keep]
    return [list(zip(best_ids[k].tolist(), best_val[k].tolist())) for k in range(num_topics)]
