"""The topic-based language model's counts (Wallach §3.4): keys of the one keyed table, the prior variants and the
upper levels of the hierarchical priors under the path assumptions, and the local arrays the kernels of
:mod:`drivers.models.tlm.kernels` work on.

The statistics are N_{w|w't}: a keyed table with one column and key ``(w' V + w) K + t`` (w' the previous word of
the segment, or the start context V for a segment's first token), so the K topics of a (w', w) pair are K
consecutive keys and the V^2 K row space is never allocated. Everything else is derived from it: the context
totals N_{.|w't} (keyed by ``w' K + t``) and the upper-level counts of the hierarchical priors (Table 3.3):
raw counts under the maximal path assumption, type counts under the minimal one (§3.4.2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inference.gibbs.model import SegmentedBlock
from drivers.models.tlm.kernels import H1, H2A, H2B, H3, NONHIER, fill_rows

#: --prior-variant: non-hierarchical priors 1 and 2 (Gibbs EM), hierarchical priors 1, 2a, 2b, 3 (slice sampling)
VARIANTS = {"1": NONHIER, "2": NONHIER, "h1": H1, "h2a": H2A, "h2b": H2B, "h3": H3}
HIERARCHICAL = ("h1", "h2a", "h2b", "h3")
PATHS = ("minimal", "maximal")


def previous_words(block: SegmentedBlock, vocab_size: int) -> np.ndarray:
    """(N,) int64 previous word of every token in its segment; a segment's first token has the start context V."""
    previous = np.empty(block.n_tokens, dtype=np.int64)
    previous[1:] = block.words[:-1]
    starts = block.seg_ptr[:-1]
    previous[starts[starts < block.n_tokens]] = int(vocab_size)
    return previous


def pair_keys(block: SegmentedBlock, vocab_size: int) -> np.ndarray:
    """(N,) int64 pair key w' V + w of every token."""
    return previous_words(block, vocab_size) * int(vocab_size) + block.words.astype(np.int64)


@dataclass
class Prior:
    """The word side of a prior variant as the kernels take it: ``variant`` code, ``minimal`` path, beta, beta0,
    beta1 (hierarchical), ``bn`` (K, V) beta n_t and ``beta_t`` (K,) their sums (non-hierarchical; prior 1: equal
    rows)."""
    variant: int
    minimal: bool
    beta: float
    beta0: float
    beta1: float
    bn: np.ndarray
    beta_t: np.ndarray

    def scalars(self) -> tuple:
        return (self.variant, self.minimal, self.beta, self.beta0, self.beta1, self.bn, self.beta_t)

    def upper(self, mid, mid_t, top, toptot) -> np.ndarray:
        """(K, V) the base measure every topic's contexts back off to: n_t, or the upper levels' predictive
        (u uniform; prior 3's depends on w', shown by its top level)."""
        V = top.shape[0]
        if self.variant == NONHIER:
            return self.bn / self.beta_t[:, None]
        q0 = (top + self.beta0 / V) / (toptot[0] + self.beta0)
        if self.variant == H2A:
            return ((mid + self.beta0 / V) / (mid_t + self.beta0)).T
        if self.variant == H2B:
            return ((mid + self.beta1 * q0[:, None]) / (mid_t + self.beta1)).T
        return np.broadcast_to(q0, (mid_t.shape[0], V))


def prior_of(hyper: dict, num_topics: int, vocab_size: int) -> Prior:
    name = str(hyper["prior_variant"])
    K, V = int(num_topics), int(vocab_size)
    if name in HIERARCHICAL:
        return Prior(VARIANTS[name], hyper.get("path", "maximal") == "minimal", float(hyper["beta"]),
                     float(hyper["beta0"]), float(hyper.get("beta1") or 1.0), np.zeros((1, 1)), np.ones(1))
    bn = hyper.get("beta_n")
    bn = np.full((K, V), float(hyper["beta"]) / V) if bn is None else \
        np.ascontiguousarray(np.broadcast_to(np.asarray(bn, dtype=np.float64), (K, V)))
    return Prior(NONHIER, False, float(hyper["beta"]), 0.0, 0.0, bn, bn.sum(axis=1))


def split_keys(keys: np.ndarray, vocab_size: int, num_topics: int):
    """``(previous word, word, topic)`` of table keys."""
    V, K = int(vocab_size), int(num_topics)
    pair = keys // K
    return pair // V, pair % V, keys % K


def upper_counts(keys: np.ndarray, counts: np.ndarray, vocab_size: int, num_topics: int, variant: int,
                 minimal: bool) -> dict:
    """The derived global values of the table (``keys``, ``counts``): the context totals (``ctx_keys`` w' K + t
    ascending, ``ctx_totals``) and the upper levels ``mid`` (V, K) N^_{w|t}, ``mid_t`` (K,), ``mid_ctx`` (V + 1,)
    N^_{.|w'}, ``top`` (V,) N^_w, ``toptot`` (1,): raw counts (maximal path) or type counts (minimal path)."""
    V, K = int(vocab_size), int(num_topics)
    counts = np.asarray(counts, dtype=np.int64)
    prev, word, topic = split_keys(keys, V, K)
    ctx_keys, inverse = np.unique(prev * K + topic, return_inverse=True)
    ctx_totals = np.bincount(inverse.ravel(), weights=counts, minlength=ctx_keys.shape[0]).astype(np.int64)
    ones = np.ones_like(counts)
    mid, mid_t = np.zeros((1, 1), np.int64), np.zeros(K, np.int64)
    mid_ctx, top = np.zeros(1, np.int64), np.zeros(V, np.int64)
    if variant == H1:
        top = np.bincount(word, weights=ones if minimal else counts, minlength=V).astype(np.int64)
    elif variant in (H2A, H2B):
        mid = np.zeros((V, K), np.int64)
        np.add.at(mid, (word, topic), ones if minimal else counts)
        mid_t = mid.sum(axis=0)
        if variant == H2B:
            top = (mid > 0).sum(axis=1).astype(np.int64) if minimal else mid.sum(axis=1)
    elif variant == H3:
        pairs, at = np.unique(keys // K, return_inverse=True)
        midp = np.bincount(at.ravel(), weights=ones if minimal else counts).astype(np.int64)
        mid_ctx = np.bincount(pairs // V, weights=midp, minlength=V + 1).astype(np.int64)
        top = np.bincount(pairs % V, weights=np.ones_like(midp) if minimal else midp, minlength=V).astype(np.int64)
    return {"ctx_keys": ctx_keys.astype(np.int64), "ctx_totals": ctx_totals, "mid": mid, "mid_t": mid_t,
            "mid_ctx": mid_ctx, "top": top, "toptot": np.array([top.sum()], dtype=np.int64)}


@dataclass
class LocalCounts:
    """The counts of the pairs one piece of work touches (``pair_keys`` ascending unique w' V + w), as the kernels'
    arrays (module docstring of :mod:`drivers.models.tlm.kernels`)."""
    pair_keys: np.ndarray
    pair_counts: np.ndarray
    ctx_totals: np.ndarray
    pair_ctx: np.ndarray
    pair_word: np.ndarray
    pair_prev: np.ndarray
    mid: np.ndarray
    mid_t: np.ndarray
    midp: np.ndarray
    mid_ctx: np.ndarray
    top: np.ndarray
    toptot: np.ndarray

    def arrays(self) -> tuple:
        return (self.pair_counts, self.ctx_totals, self.pair_ctx, self.pair_word, self.pair_prev, self.mid,
                self.mid_t, self.midp, self.mid_ctx, self.top, self.toptot)

    def pair_of(self, keys: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.pair_keys, keys).astype(np.int64)


def local_counts(pairs: np.ndarray, keys: np.ndarray, counts: np.ndarray, derived: dict, vocab_size: int,
                 num_topics: int, variant: int, minimal: bool) -> LocalCounts:
    """The counts of ``pairs`` (ascending unique pair keys) from the table (``keys``, ``counts``) and its derived
    values (:func:`upper_counts`; copied: the kernels change them in place)."""
    V, K = int(vocab_size), int(num_topics)
    pairs = np.asarray(pairs, dtype=np.int64)
    pair_counts = np.zeros((pairs.shape[0], K), dtype=np.int64)
    fill_rows(keys, np.asarray(counts, dtype=np.int64), np.searchsorted(keys, pairs * K),
              np.searchsorted(keys, pairs * K + K), K, pair_counts)
    prev = pairs // V
    contexts, pair_ctx = np.unique(prev, return_inverse=True)
    ctx_totals = np.zeros((contexts.shape[0], K), dtype=np.int64)
    ck = derived["ctx_keys"]
    fill_rows(ck, derived["ctx_totals"], np.searchsorted(ck, contexts * K), np.searchsorted(ck, contexts * K + K),
              K, ctx_totals)
    midp = np.zeros(pairs.shape[0], dtype=np.int64)
    if variant == H3:
        midp = (pair_counts > 0).sum(axis=1).astype(np.int64) if minimal else pair_counts.sum(axis=1)
    return LocalCounts(pairs, pair_counts, ctx_totals, pair_ctx.ravel().astype(np.int64), pairs % V, prev,
                       derived["mid"].copy(), derived["mid_t"].copy(), midp, derived["mid_ctx"].copy(),
                       derived["top"].copy(), derived["toptot"].copy())


def empty_counts(pairs: np.ndarray, vocab_size: int, num_topics: int, variant: int) -> LocalCounts:
    """Zero counts of ``pairs`` (every level empty): where the sequential evidence (3.55) starts."""
    V, K = int(vocab_size), int(num_topics)
    keys = np.zeros(0, np.int64)
    zero = upper_counts(keys, keys, V, K, variant, False)
    if variant in (H2A, H2B):
        zero["mid"] = np.zeros((V, K), np.int64)
    if variant == H3:
        zero["mid_ctx"] = np.zeros(V + 1, np.int64)
    return local_counts(pairs, keys, keys, zero, V, K, variant, False)
