"""Named count tables: the global statistics a Gibbs model declares, and how partitions' contributions merge.

A model's global state is a set of integer count tables (:class:`CountTable`), each summed over the
partitions: exact integers, so the sum does not depend on the order of the partitions (or of the reducers).
A table is

* ``dense``: ``rows x columns`` int32, every row present (LDA's topic-word counts ``nwk``, V x K: row w is the
  K counts of word w);
* ``keyed``: only the rows with a nonzero count, as :class:`KeyedCounts` (ascending int64 row keys in
  ``0..rows-1`` and their ``(n, columns)`` int32 counts): a table whose row space is far larger than what is
  used (a bigram table keyed by ``previous * V + word``, clusters that come and go). Nothing of the size
  ``rows x columns`` is ever allocated for it: memory and messages follow its nonzero rows.

A partition's contribution to a table is ``(row keys (n,), counts (n, columns))`` (rows in any order, zero rows
allowed); :func:`merge` sums contributions into the table's value. ``cells_per_token`` bounds the nonzero cells
one token adds to a table (LDA's ``nwk``: 1), which bounds a partition's contribution by its tokens; 0 means
unknown (the bound is then ``rows x columns``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LAYOUTS = ("dense", "keyed")
_INT32_MAX = np.iinfo(np.int32).max


@dataclass(frozen=True)
class CountTable:
    """A global count table of a model: its name (a key of the engine's ``tables`` dict and of the checkpoint's
    files), its row space, its columns and its layout (``dense`` or ``keyed``)."""
    name: str
    rows: int
    columns: int
    layout: str = "dense"
    cells_per_token: int = 0        # bound on the nonzero cells one token adds (0: unknown)

    def __post_init__(self):
        if not self.name or not self.name.replace("_", "").isalnum():
            raise ValueError(f"a count table's name is letters, digits and '_', got {self.name!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"table {self.name}: layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        if self.rows < 0 or self.columns < 1 or self.cells_per_token < 0:
            raise ValueError(f"table {self.name}: rows >= 0, columns >= 1 and cells_per_token >= 0, got "
                             f"{self.rows} x {self.columns}, {self.cells_per_token}")

    @property
    def keyed(self) -> bool:
        return self.layout == "keyed"

    def bound(self, tokens: int | None = None) -> int:
        """The most nonzero cells a contribution of ``tokens`` tokens can have (None: any number of tokens)."""
        cells = self.rows * self.columns
        if tokens is not None and self.cells_per_token:
            cells = min(cells, int(tokens) * self.cells_per_token)
        return cells

    def empty(self):
        """The table with no counts."""
        if self.keyed:
            return KeyedCounts.empty(self.columns)
        return np.zeros((self.rows, self.columns), dtype=np.int32)


@dataclass(frozen=True)
class KeyedCounts:
    """The nonzero rows of a keyed table: ``keys`` (n,) int64 ascending and unique, ``counts`` (n, C) int32."""
    keys: np.ndarray
    counts: np.ndarray

    @classmethod
    def empty(cls, columns: int) -> "KeyedCounts":
        return cls(np.zeros(0, dtype=np.int64), np.zeros((0, int(columns)), dtype=np.int32))

    @property
    def nnz(self) -> int:
        """Nonzero rows."""
        return int(self.keys.shape[0])

    @property
    def columns(self) -> int:
        return int(self.counts.shape[1])

    def copy(self) -> "KeyedCounts":
        return KeyedCounts(self.keys.copy(), self.counts.copy())

    def find(self, keys) -> np.ndarray:
        """Index of every key in ``keys`` among the rows, -1 where it has no row."""
        keys = np.asarray(keys, dtype=np.int64)
        at = np.searchsorted(self.keys, keys)
        found = at < self.keys.shape[0]
        found[found] = self.keys[at[found]] == keys[found]
        return np.where(found, at, -1)

    def row(self, key: int) -> np.ndarray:
        """The counts of one row (zeros when it has none)."""
        i = int(self.find([key])[0])
        return self.counts[i].copy() if i >= 0 else np.zeros(self.columns, dtype=np.int32)

    def to_dense(self, rows: int) -> np.ndarray:
        """``rows x C`` (small tables and tests only)."""
        dense = np.zeros((int(rows), self.columns), dtype=np.int32)
        dense[self.keys] = self.counts
        return dense

    def equals(self, other: "KeyedCounts") -> bool:
        return np.array_equal(self.keys, other.keys) and np.array_equal(self.counts, other.counts)


def check_value(table: CountTable, value) -> None:
    """Refuse a value that is not of the table's layout and shape."""
    if table.keyed:
        ok = isinstance(value, KeyedCounts) and value.keys.dtype == np.int64 and value.counts.dtype == np.int32 \
            and value.counts.shape == (value.keys.shape[0], table.columns) and \
            (value.nnz == 0 or (bool(np.all(np.diff(value.keys) > 0)) and 0 <= value.keys[0]
                                and value.keys[-1] < table.rows))
    else:
        ok = isinstance(value, np.ndarray) and value.dtype == np.int32 and value.shape == (table.rows, table.columns)
    if not ok:
        raise TypeError(f"table {table.name}: expected {table.layout} counts of {table.rows} x {table.columns} "
                        f"int32, got {type(value).__name__}")


def _summed(counts: np.ndarray) -> np.ndarray:
    if counts.size and counts.max() > _INT32_MAX:
        raise OverflowError("a count exceeds int32")
    return counts.astype(np.int32)


def merge_keyed(columns: int, keys: np.ndarray, counts: np.ndarray) -> KeyedCounts:
    """The rows of ``(keys (n,), counts (n, C))`` (keys in any order, repeated) summed by key, zero rows
    dropped."""
    keys = np.asarray(keys, dtype=np.int64)
    counts = np.asarray(counts).reshape(keys.shape[0], int(columns))
    if keys.shape[0] == 0:
        return KeyedCounts.empty(columns)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sums = _summed(np.add.reduceat(counts[order].astype(np.int64), starts, axis=0))
    keep = sums.any(axis=1)
    return KeyedCounts(keys[starts][keep], np.ascontiguousarray(sums[keep]))


def merge(table: CountTable, contributions) -> np.ndarray | KeyedCounts:
    """The table's value: the sum of the partitions' contributions ``(row keys, counts (n, columns))``."""
    contributions = list(contributions)
    if table.keyed:
        if not contributions:
            return table.empty()
        return merge_keyed(table.columns, np.concatenate([np.asarray(k, dtype=np.int64) for k, _ in contributions]),
                           np.concatenate([np.asarray(c).reshape(-1, table.columns) for _, c in contributions]))
    cells = table.rows * table.columns
    total = np.zeros(cells, dtype=np.float64)           # exact integers below 2**53
    for keys, counts in contributions:
        flat = np.asarray(keys, dtype=np.int64)[:, None] * table.columns + np.arange(table.columns)
        total += np.bincount(flat.ravel(), weights=np.asarray(counts, dtype=np.float64).ravel(), minlength=cells)
    return _summed(total).reshape(table.rows, table.columns)

