"""The sufficient statistics of a Dirichlet-multinomial: count histograms (thesis §2.3.5, extract §1.6).

For D groups ("contexts") of observations over K items, with N_{k|d} observations of item k in group d:

* (2.50) C_k(n) = #{d : N_{k|d} = n}, the groups in which item k was seen exactly n times (n >= 1);
* (2.53) C_.(n) = #{d : N_{.|d} = n}, the groups of exactly n observations (n >= 1).

Every estimator, the log evidence (Alg. 2.3) and the MacKay-Peto statistics are functions of these alone, so their
cost follows the number of distinct counts, not of groups. :class:`CountHistograms` holds them sparsely (only the
nonzero C_k(n) and C_.(n), as ascending int64 keys and int64 frequencies) and merges exactly: partitions add their
groups, the driver merges the partitions' histograms, in any order, with the same result (integer sums of sorted
keys); histograms of several samples of one chain may be pooled the same way (3.30).

``rows()`` gives the histograms as one keyed count table (key ``item * COUNT_SPAN + n``, the group lengths under
item ``num_items``), the form of the Gibbs engine's keyed tables (:class:`inference.gibbs.tables.KeyedCounts`).
"""
from __future__ import annotations

import numba
import numpy as np

#: the key of C_k(n) is k * COUNT_SPAN + n; counts are below 2**32
COUNT_SPAN = 1 << 32


def _summed_by_key(keys: np.ndarray, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ascending unique keys, summed frequencies), zero sums dropped."""
    if keys.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    sums = np.zeros(unique.shape[0], dtype=np.int64)
    np.add.at(sums, inverse, freqs)
    keep = sums != 0
    return unique[keep], sums[keep]


def _merged(keys, freqs, more_keys, more_freqs):
    """Two sets of (ascending unique keys, frequencies) summed; either may be empty."""
    if more_keys.shape[0] == 0:
        return keys, freqs
    if keys.shape[0] == 0 and np.all(more_freqs != 0) and np.all(more_keys[1:] > more_keys[:-1]):
        return np.asarray(more_keys, np.int64), np.asarray(more_freqs, np.int64)
    return _summed_by_key(np.concatenate([keys, more_keys]), np.concatenate([freqs, more_freqs]))


@numba.njit(cache=True)
def histogram_rows(values, span):
    """``(keys, freqs)``: for every row r of the (R, C) int64 ``values``, each distinct value n > 0 once as key
    r * span + n (ascending) with its number of occurrences in the row; O(R C + distinct values x log)."""
    R, C = values.shape
    seen = np.zeros(1, np.int64)
    for r in range(R):
        for i in range(C):
            if values[r, i] >= seen.shape[0]:
                seen = np.zeros(values[r, i] + 1, np.int64)
    keys = np.empty(R * C, np.int64)
    freqs = np.empty(R * C, np.int64)
    distinct = np.empty(C, np.int64)
    out = 0
    for r in range(R):
        m = 0
        for i in range(C):
            v = values[r, i]
            if v > 0:
                if seen[v] == 0:
                    distinct[m] = v
                    m += 1
                seen[v] += 1
        ordered = np.sort(distinct[:m])
        for j in range(m):
            keys[out] = r * span + ordered[j]
            freqs[out] = seen[ordered[j]]
            seen[ordered[j]] = 0
            out += 1
    return keys[:out], freqs[:out]


def _row_histograms(values: np.ndarray):
    """:func:`histogram_rows` of an int64 matrix (by sorting where its values are too large for a lookup table)."""
    if values.size == 0 or values.max() < (1 << 24):
        return histogram_rows(np.ascontiguousarray(values), COUNT_SPAN)
    rows, cols = np.nonzero(values)
    return _summed_by_key(rows * COUNT_SPAN + values[rows, cols], np.ones(rows.shape[0], np.int64))


class CountHistograms:
    """C_k(n) for every item k < ``num_items`` and C_.(n) of a set of groups; :meth:`add_counts`,
    :meth:`add_sparse` and :meth:`add_observations` add groups, :meth:`merge` adds another set's histograms."""

    def __init__(self, num_items: int):
        if int(num_items) < 1:
            raise ValueError(f"a Dirichlet-multinomial needs at least one item, got {num_items}")
        self.num_items = int(num_items)
        self.item_keys = np.zeros(0, np.int64)        # k * COUNT_SPAN + n, ascending
        self.item_freqs = np.zeros(0, np.int64)       # C_k(n)
        self.lengths = np.zeros(0, np.int64)          # n, ascending
        self.length_freqs = np.zeros(0, np.int64)     # C_.(n)

    # ---- adding groups
    def add_sparse(self, groups, items, counts) -> "CountHistograms":
        """Add the groups given as triplets (group id, item, count): a (group, item) pair may repeat (its counts
        add up); group ids only tell the groups apart (any integers)."""
        groups = np.asarray(groups, dtype=np.int64).ravel()
        items = np.asarray(items, dtype=np.int64).ravel()
        counts = np.asarray(counts, dtype=np.int64).ravel()
        if not groups.shape == items.shape == counts.shape:
            raise ValueError("groups, items and counts must have the same length")
        if items.size and (items.min() < 0 or items.max() >= self.num_items):
            raise ValueError(f"items must be in 0..{self.num_items - 1}")
        if counts.size and counts.min() < 0:
            raise ValueError("counts must be >= 0")
        _, group_index = np.unique(groups, return_inverse=True)
        pairs, pair_counts = _summed_by_key(group_index * self.num_items + items, counts)
        lengths = np.bincount(pairs // self.num_items, weights=pair_counts).astype(np.int64) if pairs.size else pairs
        self._add(pairs % self.num_items, pair_counts, lengths[lengths > 0])
        return self

    def add_counts(self, counts) -> "CountHistograms":
        """Add the groups of a dense (D, K) matrix of counts N_{k|d} (a row a group), in O(D K)."""
        counts = np.asarray(counts, dtype=np.int64)
        if counts.ndim != 2 or counts.shape[1] != self.num_items:
            raise ValueError(f"counts must be (groups, {self.num_items}), got {counts.shape}")
        if counts.size and counts.min() < 0:
            raise ValueError("counts must be >= 0")
        if counts.size and counts.max() >= COUNT_SPAN:
            raise OverflowError(f"a count of {counts.max()} is beyond {COUNT_SPAN - 1}")
        keys, freqs = _row_histograms(counts.T)
        lengths, length_freqs = _row_histograms(counts.sum(axis=1).reshape(1, -1))
        self._merge_arrays(keys, freqs, lengths, length_freqs)
        return self

    def add_observations(self, ptr, items) -> "CountHistograms":
        """Add groups given as runs of observations: group g holds ``items[ptr[g]:ptr[g + 1]]`` (e.g. a partition's
        token_ptr and topic assignments z: the document-topic counts without a D x K matrix)."""
        ptr = np.asarray(ptr, dtype=np.int64)
        items = np.asarray(items, dtype=np.int64)
        group = np.repeat(np.arange(ptr.shape[0] - 1, dtype=np.int64), np.diff(ptr))
        return self.add_sparse(group, items[ptr[0]:ptr[-1]], np.ones(group.shape[0], dtype=np.int64))

    def _add(self, items, counts, lengths) -> None:
        items = np.asarray(items, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        if counts.size and counts.max() >= COUNT_SPAN:
            raise OverflowError(f"a count of {counts.max()} is beyond {COUNT_SPAN - 1}")
        new_keys, new_freqs = np.unique(items * COUNT_SPAN + counts, return_counts=True)
        new_lengths, new_length_freqs = np.unique(np.asarray(lengths, dtype=np.int64), return_counts=True)
        self._merge_arrays(new_keys, new_freqs.astype(np.int64), new_lengths, new_length_freqs.astype(np.int64))

    def _merge_arrays(self, keys, freqs, lengths, length_freqs) -> None:
        self.item_keys, self.item_freqs = _merged(self.item_keys, self.item_freqs, keys, freqs)
        self.lengths, self.length_freqs = _merged(self.lengths, self.length_freqs, lengths, length_freqs)

    def merge(self, other: "CountHistograms") -> "CountHistograms":
        """Add ``other``'s histograms to these (exact; any order of merges gives the same histograms)."""
        if other.num_items != self.num_items:
            raise ValueError(f"histograms of {other.num_items} items cannot merge into {self.num_items}")
        self._merge_arrays(other.item_keys, other.item_freqs, other.lengths, other.length_freqs)
        return self

    @classmethod
    def merged(cls, parts, num_items: int) -> "CountHistograms":
        total = cls(num_items)
        for part in parts:
            total.merge(part)
        return total

    # ---- views
    def item_histograms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ptr (K+1,), n, C)``: item k's nonzero C_k(n) are ``C[ptr[k]:ptr[k+1]]`` at ascending ``n``."""
        items = self.item_keys // COUNT_SPAN
        ptr = np.searchsorted(items, np.arange(self.num_items + 1, dtype=np.int64)).astype(np.int64)
        return ptr, self.item_keys % COUNT_SPAN, self.item_freqs

    def pooled_histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(n, C)``: sum_k C_k(n), the statistic of a symmetric prior (every alpha m_k equal)."""
        return _summed_by_key(self.item_keys % COUNT_SPAN, self.item_freqs)

    def length_histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(n, C_.(n))`` at ascending n."""
        return self.lengths, self.length_freqs

    @property
    def num_groups(self) -> int:
        """Groups with at least one observation."""
        return int(self.length_freqs.sum())

    @property
    def num_observations(self) -> int:
        return int(np.dot(self.lengths, self.length_freqs))

    def item_totals(self) -> np.ndarray:
        """(K,) sum_d N_{k|d}: the observations of every item."""
        return np.bincount(self.item_keys // COUNT_SPAN, weights=(self.item_keys % COUNT_SPAN) * self.item_freqs,
                           minlength=self.num_items).astype(np.int64)

    def equals(self, other: "CountHistograms") -> bool:
        return self.num_items == other.num_items and all(
            np.array_equal(a, b) for a, b in ((self.item_keys, other.item_keys), (self.item_freqs, other.item_freqs),
                                              (self.lengths, other.lengths), (self.length_freqs, other.length_freqs)))

    # ---- as one keyed count table
    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, counts)``: C_k(n) at key k * COUNT_SPAN + n and C_.(n) at num_items * COUNT_SPAN + n."""
        return (np.concatenate([self.item_keys, self.num_items * COUNT_SPAN + self.lengths]),
                np.concatenate([self.item_freqs, self.length_freqs]))

    @classmethod
    def from_rows(cls, num_items: int, keys, counts) -> "CountHistograms":
        """The inverse of :meth:`rows` (keys in any order, repeated keys summed)."""
        keys = np.asarray(keys, dtype=np.int64).ravel()
        counts = np.asarray(counts, dtype=np.int64).ravel()
        hist = cls(num_items)
        is_length = keys >= hist.num_items * COUNT_SPAN
        hist._merge_arrays(keys[~is_length], counts[~is_length], keys[is_length] % COUNT_SPAN, counts[is_length])
        return hist

    def __repr__(self) -> str:
        return (f"CountHistograms({self.num_items} items, {self.num_groups} groups, {self.num_observations} "
                f"observations, {self.item_keys.shape[0]} distinct item counts)")
