"""The coherence measures other tools report (gensim's ``CoherenceModel``: ``u_mass``, ``c_npmi``, ``c_v``; Röder,
Both & Hinneburg 2015), topic diversity (Dieng, Ruiz & Blei 2020) and the stability of topics across runs.

Counting is per document (:func:`window_counts`, summed over the corpus by the caller); the measures read the summed
counts. The arithmetic follows gensim 4.4 step by step, so the numbers are gensim's (tests/kernels/
test_coherence_measures.py compares them with gensim's own ``CoherenceModel``):

* probabilities are counts of *windows*: ``u_mass`` counts documents (boolean document: one window per document);
  ``c_npmi`` (window 10) and ``c_v`` (window 110) slide a window one token at a time over each document's tokens
  in text order; a document shorter than the window is one window (an empty one counts as a window too). Like
  gensim, a window's word set is updated as the window slides: the word leaving drops out even when another copy
  of it stays inside the window.
* ``u_mass``: the mean over ordered pairs (w_i, w_j), j < i in the topic's ranking, of
  log[(D(w_i, w_j)/N + eps) / (D(w_j)/N)] (0 when D(w_j) = 0);
* ``c_npmi``: the mean over pairs i != j of NPMI = log[(p_ij + eps) / (p_i p_j)] / -log(p_ij + eps);
* ``c_v``: for each top word, the cosine between its NPMI vector against the topic's words and the sum of those
  vectors over the topic's words, averaged;

with eps = 1e-12; a model's value is the mean over its topics.
"""
from __future__ import annotations

import numba
import numpy as np
from scipy.optimize import linear_sum_assignment

#: gensim's epsilon (direct_confirmation_measure.EPSILON)
EPSILON = 1e-12
#: gensim's window sizes (CoherenceModel's SLIDING_WINDOW_SIZES); None: the whole document (boolean document)
WINDOWS = {"u_mass": None, "c_npmi": 10, "c_v": 110}
#: Dieng et al.'s topic diversity: the share of distinct words among every topic's top 25
DIVERSITY_WORDS = 25


# --------------------------------------------------------------------------- counting

def topic_pairs(index: np.ndarray, num_words: int) -> np.ndarray:
    """Sorted keys ``lo * num_words + hi`` of the distinct unordered pairs of words within each topic (``index``:
    K x N positions of the topics' words among the ``num_words`` counted words)."""
    index = np.asarray(index, dtype=np.int64)
    i, j = np.triu_indices(index.shape[1], k=1)
    a, b = index[:, i].ravel(), index[:, j].ravel()
    keep = a != b
    return np.unique(np.minimum(a, b)[keep] * num_words + np.maximum(a, b)[keep]) if keep.any() \
        else np.zeros(0, dtype=np.int64)


@numba.njit(cache=True)
def _count_window(members, m, num_words, pair_keys, occurrences, joint):
    for x in range(m):
        a = members[x]
        occurrences[a] += 1
        for y in range(m):
            b = members[y]
            if b <= a:
                continue
            key = a * num_words + b
            at = np.searchsorted(pair_keys, key)
            if at < pair_keys.size and pair_keys[at] == key:
                joint[at] += 1


@numba.njit(cache=True)
def _enter(t, present, slot, members, m):
    """Word ``t`` (-1: none counted) enters the window's set; returns the set's new size."""
    if t >= 0 and not present[t]:
        present[t] = True
        slot[t] = m
        members[m] = t
        m += 1
    return m


@numba.njit(cache=True)
def window_counts(tokens, window, num_words, pair_keys, occurrences, joint):
    """Add one document's window counts to ``occurrences`` (M) and ``joint`` (one per key of ``pair_keys``,
    keys ``lo * num_words + hi``); returns the document's number of windows.

    ``tokens``: the document's words in text order as indices among the M counted words (-1: any other word);
    ``window`` <= 0: the whole document is one window (boolean document)."""
    n = tokens.size
    present = np.zeros(num_words, dtype=np.bool_)
    members = np.empty(num_words, dtype=np.int64)
    slot = np.full(num_words, -1, dtype=np.int64)
    m = 0
    first = n if (window <= 0 or n < window) else window
    for p in range(first):
        m = _enter(tokens[p], present, slot, members, m)
    _count_window(members, m, num_words, pair_keys, occurrences, joint)
    if first == n:
        return 1
    for start in range(1, n - window + 1):
        edge = tokens[start - 1]
        if edge >= 0 and present[edge]:          # gensim drops the leaving word even if a copy stays inside
            present[edge] = False
            last = members[m - 1]
            members[slot[edge]] = last
            slot[last] = slot[edge]
            slot[edge] = -1
            m -= 1
        m = _enter(tokens[start + window - 1], present, slot, members, m)
        _count_window(members, m, num_words, pair_keys, occurrences, joint)
    return n - window + 1


class WindowCounts:
    """Summed counts: ``occurrences[a]`` windows holding word a, ``pair(a, b)`` windows holding both, ``windows``."""

    def __init__(self, num_words: int, pair_keys: np.ndarray, occurrences: np.ndarray, joint: np.ndarray,
                 windows: int):
        self.num_words, self.pair_keys = num_words, np.asarray(pair_keys, dtype=np.int64)
        self.occurrences, self.joint, self.windows = occurrences, joint, int(windows)

    def pair(self, a: int, b: int) -> int:
        if a == b:
            return int(self.occurrences[a])
        key = min(a, b) * self.num_words + max(a, b)
        at = int(np.searchsorted(self.pair_keys, key))
        if at >= self.pair_keys.size or self.pair_keys[at] != key:
            raise KeyError(f"the pair ({a}, {b}) was not counted")
        return int(self.joint[at])


def count_documents(documents, index: np.ndarray, word_ids: np.ndarray, window: int | None) -> WindowCounts:
    """The counts over ``documents`` (arrays of word ids in text order) of the M ``word_ids`` (ascending) for the
    topics' words ``index`` (K x N positions in ``word_ids``), with ``window`` (None: boolean document)."""
    word_ids = np.asarray(word_ids, dtype=np.int64)
    num_words = max(word_ids.size, 1)
    keys = topic_pairs(index, num_words)
    occurrences, joint, windows = np.zeros(num_words, np.int64), np.zeros(keys.size, np.int64), 0
    for doc in documents:
        windows += window_counts(relevant_positions(doc, word_ids), window or 0, num_words, keys, occurrences,
                                 joint)
    return WindowCounts(num_words, keys, occurrences, joint, windows)


def relevant_positions(doc, word_ids: np.ndarray) -> np.ndarray:
    """The document's word ids as positions in ``word_ids`` (ascending), -1 for every other word."""
    doc = np.asarray(doc, dtype=np.int64)
    if not word_ids.size:
        return np.full(doc.size, -1, dtype=np.int64)
    at = np.clip(np.searchsorted(word_ids, doc), 0, word_ids.size - 1)
    return np.where(word_ids[at] == doc, at, -1).astype(np.int64)


# --------------------------------------------------------------------------- the measures

def _npmi(c: WindowCounts, a: int, b: int) -> float:
    """gensim's normalised log ratio ("nlr") of one pair (numpy arithmetic: a word in no window gives inf/nan)."""
    n = float(c.windows)
    co = np.float64(c.pair(a, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(((co / n) + EPSILON) / ((np.float64(c.occurrences[a]) / n) * (np.float64(c.occurrences[b]) / n)))
        return float(ratio / (-np.log(co / n + EPSILON)))


def u_mass(index: np.ndarray, c: WindowCounts) -> np.ndarray:
    """Per topic: mean of log[(D(w_i, w_j)/N + eps) / (D(w_j)/N)] over j < i (gensim's s_one_pre segmentation)."""
    n = float(c.windows)
    out = []
    for row in np.asarray(index):
        sims = []
        for i in range(1, len(row)):
            for j in range(i):
                star = int(c.occurrences[row[j]])
                sims.append(0.0 if star == 0 else float(np.log((c.pair(row[i], row[j]) / n + EPSILON) / (star / n))))
        out.append(np.mean(sims))
    return np.asarray(out)


def c_npmi(index: np.ndarray, c: WindowCounts) -> np.ndarray:
    """Per topic: mean NPMI over ordered pairs i != j of its words (gensim's s_one_one segmentation)."""
    return np.asarray([np.mean([_npmi(c, row[i], row[j]) for i in range(len(row)) for j in range(len(row))
                                if i != j]) for row in np.asarray(index)])


def c_v(index: np.ndarray, c: WindowCounts) -> np.ndarray:
    """Per topic: mean over its words of cos(v(w), sum_w' v(w')), v(w)_j = NPMI(w, w_j) (gensim's s_one_set with
    the indirect cosine measure, gamma = 1)."""
    out = []
    for row in np.asarray(index):
        n = len(row)
        sim = np.array([[_npmi(c, min(row[i], row[j]), max(row[i], row[j])) for j in range(n)] for i in range(n)])
        whole = np.zeros(n)
        for j in range(n):
            for i in range(n):
                whole[j] += sim[i, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            cos = [sim[i] @ whole / (np.sqrt(np.sum(sim[i] ** 2)) * np.sqrt(np.sum(whole ** 2))) for i in range(n)]
        out.append(np.mean(cos))
    return np.asarray(out)


MEASURES = {"u_mass": u_mass, "c_npmi": c_npmi, "c_v": c_v}


def topic_diversity(topic_word: np.ndarray, n: int = DIVERSITY_WORDS) -> float:
    """Share of distinct words among all topics' ``n`` most probable words (1: no word shared by two topics)."""
    top = np.argsort(-np.asarray(topic_word), axis=1, kind="stable")[:, :n]
    return float(np.unique(top).size / top.size)


# --------------------------------------------------------------------------- stability across runs

def js_divergence_matrix(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (base 2, in [0, 1]) between every row of ``p`` (K1 x V) and of ``q`` (K2 x V)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p, q = p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True)
    out = np.empty((p.shape[0], q.shape[0]))
    for k in range(p.shape[0]):
        m = 0.5 * (p[k] + q)
        with np.errstate(divide="ignore", invalid="ignore"):
            kl_p = np.where(p[k] > 0, p[k] * np.log2(p[k] / m), 0.0).sum(axis=1)
            kl_q = np.where(q > 0, q * np.log2(q / m), 0.0).sum(axis=1)
        out[k] = 0.5 * (kl_p + kl_q)
    return np.clip(out, 0.0, 1.0)


def matched_topics(p: np.ndarray, q: np.ndarray, top_words: int = 10) -> dict:
    """The topics of two runs matched one to one by least total Jensen-Shannon divergence (the Hungarian method,
    scipy's ``linear_sum_assignment``): the matching, each pair's divergence and the Jaccard overlap of its top
    words, and their means (stability: divergence 0 and overlap 1 for the same topics in any order)."""
    cost = js_divergence_matrix(p, q)
    rows, cols = linear_sum_assignment(cost)
    top_p = np.argsort(-np.asarray(p), axis=1, kind="stable")[:, :top_words]
    top_q = np.argsort(-np.asarray(q), axis=1, kind="stable")[:, :top_words]
    overlap = [len(set(top_p[a]) & set(top_q[b])) / len(set(top_p[a]) | set(top_q[b])) for a, b in zip(rows, cols)]
    return {"matching": [[int(a), int(b)] for a, b in zip(rows, cols)],
            "js_divergence": [float(cost[a, b]) for a, b in zip(rows, cols)], "top_word_jaccard": overlap,
            "mean_js_divergence": float(cost[rows, cols].mean()), "mean_top_word_jaccard": float(np.mean(overlap))}
