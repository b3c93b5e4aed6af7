"""Left-to-right evaluation of the segmented PDP models, exact in the model: every particle carries the
document's seating in its restaurants (the Chinese restaurant franchise: one restaurant per segment, each
token a customer of its segment's restaurant, each table a proxy customer of the parent restaurant, the tables
of a root restaurant serving topics from the document's mu ~ Dir(alpha), integrated out). STM (thesis ch. 5):
every segment's parent is the root (nu_ij ~ PDP(a, b, mu_i)); SeqLDA (ch. 6): segment j's parent is segment
j-1, the first segment's the root (mu_ij ~ PDP(a, b, mu_i,j-1)).

With the seating of the earlier tokens, the predictive of topic k in restaurant r is, from the root down,

    P_root(k) = (t_k + alpha_k) / (T + alpha.),   P_r(k) = [(n_rk - a t_rk) + (b + a T_r) P_parent(r)(k)] / (b + N_r)

(n_rk: customers of topic k, tokens and proxies; t_rk: tables; t_k, T: the root tables), and token n of segment
j has p(w_n | seating) = sum_k P_j(k) f_n(k), f_n(k) = phi_{k, w_n}. The particle then draws k from the
terms, and its path: at each restaurant from j up, join a table of topic k (weight n_rk - a t_rk, a table by
size - a) or open one (weight (b + a T_r) P_parent(k)) whose proxy is seated in the parent the same way. With
resampling every earlier token is taken out (a table left empty takes its proxy out of the parent, up the
chain) and seated again given w_<n only. Seatings are exchangeable in each restaurant, so this step leaves
p(seating | w_<n) invariant and the particles' products are unbiased for the model's p(w | Phi, alpha, a, b)
(tests/kernels/test_left_to_right.py: against enumerations over topics and table counts with (5.2) and (6.3)).
Restaurant r's tables live in slots r n ... r n + n - 1 (n: the document's tokens), so nothing is allocated.
"""
from __future__ import annotations

import numba
import numpy as np

from inference.left_to_right import COLUMNS, DocumentEstimate, LeftToRightScores, known_block


#: how a restaurant's new tables find their parent: the root (STM; every first segment), the previous segment's
#: restaurant (SeqLDA), or either by a Beta(lambda_T, lambda_S) weight collapsed per restaurant (AdaTM)
ROOT, PREVIOUS, ADAPTIVE = 0, 1, 2


@numba.njit(cache=True)
def _levels(j, link, n, t, N, T, Tp, tk, Ttot, alpha, alpha_sum, a, b, lam_t, lam_s, P, base, pi):
    """``P[r]`` for the restaurants lo..j (lo: the nearest at or below j whose tables go to the root only) and
    ``base`` the root's predictive; ``pi[r]`` the weight of the previous restaurant; returns lo."""
    K = base.shape[0]
    for k in range(K):
        base[k] = (tk[k] + alpha[k]) / (Ttot[0] + alpha_sum)
    lo = j
    while link[lo] != ROOT:
        lo -= 1
    for r in range(lo, j + 1):
        if link[r] == ROOT:
            pi[r] = 0.0
        elif link[r] == PREVIOUS:
            pi[r] = 1.0
        else:
            pi[r] = (Tp[r] + lam_t) / (T[r] + lam_t + lam_s)
        for k in range(K):
            above = base[k] if r == lo else pi[r] * P[r - 1, k] + (1.0 - pi[r]) * base[k]
            P[r, k] = ((n[r, k] - a * t[r, k]) + (b + a * T[r]) * above) / (b + N[r])
    return lo


@numba.njit(cache=True)
def _seat(i, k, j, lo, P, base, pi, slots, tab, size, topic, up, hi, n, t, N, T, Tp, tk, Ttot, a, b):
    """Seat token i with topic k in restaurant j: join a table, or open one whose proxy goes to the previous
    restaurant (seated there the same way) or to the root."""
    child = -1
    r = j
    while True:
        to_previous = pi[r] * P[r - 1, k] if r > lo else 0.0
        above = to_previous + (1.0 - pi[r]) * base[k] if r > lo else base[k]
        join = n[r, k] - a * t[r, k]
        opening = (b + a * T[r]) * above
        start = r * slots
        if np.random.random() * (join + opening) < join:
            v = np.random.random() * join
            slot = -1
            for s in range(start, start + hi[r]):
                if size[s] > 0 and topic[s] == k:
                    slot = s
                    v -= size[s] - a
                    if v < 0:
                        break
            opened = False
        else:
            slot = start
            while size[slot] > 0:
                slot += 1
            if slot - start + 1 > hi[r]:
                hi[r] = slot - start + 1
            topic[slot] = k
            up[slot] = -1
            t[r, k] += 1
            T[r] += 1
            opened = True
        size[slot] += 1
        n[r, k] += 1
        N[r] += 1
        if child >= 0:
            up[child] = slot
        else:
            tab[i] = slot
        if not opened:
            return
        if to_previous > 0.0 and np.random.random() * above < to_previous:
            Tp[r] += 1
            up[slot] = -2                 # placeholder: set to the parent's slot on the next round
            child = slot
            r -= 1
        else:
            tk[k] += 1
            Ttot[0] += 1
            return


@numba.njit(cache=True)
def _unseat(i, k, slots, tab, size, up, n, t, N, T, Tp, tk, Ttot):
    slot = tab[i]
    while True:
        r = slot // slots
        size[slot] -= 1
        n[r, k] -= 1
        N[r] -= 1
        if size[slot] > 0:
            return
        t[r, k] -= 1
        T[r] -= 1
        if up[slot] < 0:
            tk[k] -= 1
            Ttot[0] -= 1
            return
        Tp[r] -= 1
        slot = up[slot]


@numba.njit(cache=True)
def _draw_topic(P, j, f, K):
    total = 0.0
    for k in range(K):
        total += P[j, k] * f[k]
    u = np.random.random() * total
    for k in range(K):
        u -= P[j, k] * f[k]
        if u < 0:
            return k, total
    return K - 1, total


@numba.njit(cache=True)
def franchise_particles(scaled, seg_of, link, alpha, a, b, lam_t, lam_s, resample, seeds):
    """(R, n) p_n^(r) of one document: rows ``scaled`` (n x K), token i in restaurant ``seg_of[i]``, restaurant r's
    tables linked as ``link[r]`` says (ROOT, PREVIOUS or ADAPTIVE; ``link[0]`` must be ROOT)."""
    n_tok, K = scaled.shape
    J = link.shape[0]
    R = seeds.shape[0]
    out = np.empty((R, n_tok))
    alpha_sum = alpha.sum()
    slots = max(n_tok, 1)
    z = np.zeros(n_tok, dtype=np.int64)
    tab = np.zeros(n_tok, dtype=np.int64)
    size = np.zeros(J * slots, dtype=np.int64)
    topic = np.zeros(J * slots, dtype=np.int64)
    up = np.zeros(J * slots, dtype=np.int64)
    hi = np.zeros(J, dtype=np.int64)
    n = np.zeros((J, K))
    t = np.zeros((J, K))
    N = np.zeros(J)
    T = np.zeros(J)
    Tp = np.zeros(J)
    tk = np.zeros(K)
    Ttot = np.zeros(1)
    P = np.zeros((J, K))
    base = np.zeros(K)
    pi = np.zeros(J)
    for r in range(R):
        np.random.seed(seeds[r])
        size[:] = 0
        hi[:] = 0
        n[:, :] = 0.0
        t[:, :] = 0.0
        N[:] = 0.0
        T[:] = 0.0
        Tp[:] = 0.0
        tk[:] = 0.0
        Ttot[0] = 0.0
        for i in range(n_tok):
            if resample:
                for m in range(i):
                    jm = seg_of[m]
                    _unseat(m, z[m], slots, tab, size, up, n, t, N, T, Tp, tk, Ttot)
                    lo = _levels(jm, link, n, t, N, T, Tp, tk, Ttot, alpha, alpha_sum, a, b, lam_t, lam_s, P, base,
                                 pi)
                    k, _ = _draw_topic(P, jm, scaled[m], K)
                    z[m] = k
                    _seat(m, k, jm, lo, P, base, pi, slots, tab, size, topic, up, hi, n, t, N, T, Tp, tk, Ttot, a, b)
            j = seg_of[i]
            lo = _levels(j, link, n, t, N, T, Tp, tk, Ttot, alpha, alpha_sum, a, b, lam_t, lam_s, P, base, pi)
            k, total = _draw_topic(P, j, scaled[i], K)
            out[r, i] = total
            z[i] = k
            _seat(i, k, j, lo, P, base, pi, slots, tab, size, topic, up, hi, n, t, N, T, Tp, tk, Ttot, a, b)
    return out


def estimate_franchise_document(likelihood: np.ndarray, seg_ptr: np.ndarray, link: np.ndarray, alpha, a: float,
                                b: float, seeds: np.ndarray, resample: bool = True, lambda_t: float = 1.0,
                                lambda_s: float = 1.0) -> DocumentEstimate:
    """One document (rows ``likelihood`` n x K; segments ``seg_ptr`` (J+1) over its tokens, possibly empty; how
    every segment's restaurant links its tables, :func:`star`, :func:`chain`, :func:`adaptive`)."""
    likelihood = np.asarray(likelihood, dtype=np.float64)
    if likelihood.shape[0] == 0:
        return DocumentEstimate(np.zeros(0), np.zeros(len(seeds)))
    scale = likelihood.max(axis=1)
    if not np.all(scale > 0):
        raise ValueError("every token needs a positive likelihood under some topic")
    seg_ptr = np.asarray(seg_ptr, dtype=np.int64)
    seg_of = np.repeat(np.arange(seg_ptr.shape[0] - 1), np.diff(seg_ptr)).astype(np.int64)
    link = np.asarray(link, dtype=np.int64)
    if link.shape != (seg_ptr.shape[0] - 1,) or (link.shape[0] and link[0] != ROOT):
        raise ValueError("one link per segment, the first ROOT")
    probs = franchise_particles(np.ascontiguousarray(likelihood / scale[:, None]), seg_of, link,
                                np.asarray(alpha, dtype=np.float64), float(a), float(b), float(lambda_t),
                                float(lambda_s), bool(resample), np.asarray(seeds, dtype=np.int64))
    return DocumentEstimate.of_particles(probs, scale)


def star(segments: int) -> np.ndarray:
    """STM: every segment's restaurant sends its tables to the root."""
    return np.full(segments, ROOT, dtype=np.int64)


def chain(segments: int) -> np.ndarray:
    """SeqLDA: segment j's restaurant sends its tables to segment j-1's, the first to the root."""
    return np.concatenate([[ROOT], np.full(max(segments - 1, 0), PREVIOUS)])[:segments].astype(np.int64)


def adaptive(segments: int) -> np.ndarray:
    """AdaTM: each table of segment j > 1 goes to segment j-1 or to the root; the first segment's to the root."""
    return np.concatenate([[ROOT], np.full(max(segments - 1, 0), ADAPTIVE)])[:segments].astype(np.int64)


def franchise_scores(block, alpha, a: float, b, phi_vk: np.ndarray, settings, links, protocol: str,
                     lambda_t: float = 1.0, lambda_s: float = 1.0) -> LeftToRightScores:
    """Left-to-right scores of a block (the hook's contract, :meth:`GibbsModel.left_to_right`) of a segmented PDP
    model: ``links(J)`` how a document's restaurants link their tables (:func:`star`, :func:`chain`,
    :func:`adaptive` with ``lambda_t``, ``lambda_s``), ``b`` a concentration (or one per document)."""
    phi_vk = np.ascontiguousarray(phi_vk, dtype=np.float64)
    known, skipped = known_block(block, phi_vk.shape[0])
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), (block.n_docs,))
    out = np.zeros((block.n_docs, COLUMNS))
    for d, doc_id in enumerate(block.doc_ids):
        segs = known.seg_ptr[known.doc_ptr[d]:known.doc_ptr[d + 1] + 1]
        words = known.words[segs[0]:segs[-1]]
        est = estimate_franchise_document(phi_vk[words], segs - segs[0], links(segs.shape[0] - 1), alpha, a,
                                          float(b[d]), settings.particle_seeds(doc_id), settings.resample, lambda_t,
                                          lambda_s)
        out[d] = (est.log_left_to_right, est.log_importance, words.shape[0], skipped[d])
    return LeftToRightScores(out, protocol)
