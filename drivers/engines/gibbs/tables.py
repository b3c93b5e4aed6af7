"""How the Gibbs engine moves a model's count tables (:mod:`inference.gibbs.tables`): partitions' records, the
reducers' sums, the driver's tables, the resident messages and the size bounds.

A dense table's columns are dealt to the R reducers of the run's :class:`partitioners.topic.TopicPartitioner`
(column c to reducer c mod R; a table of fewer columns uses the first ones); a keyed table's rows are (row key
k, all its columns, to reducer k mod R: a one-column table of (previous word, word) keys is summed by every
reducer, not one). A partition emits, per table and group, one record keyed ``(reducer, table index)`` (the
partitioner routes by the first element): its nonzero cells as flat indices ``row * |group| + j`` (int32 where
every index of a dense table fits, else int64) and int32 counts. A reducer sums a dense table's group into ``rows x |group|`` int32 columns, a keyed table's
into its nonzero rows (keys and ``(n, |group|)`` counts), never ``rows x |group|``; the driver puts the groups
together. Integer sums: exact in any order, so the driver (while the records fit a task result) and the
reducers give the same tables. LDA's one table ``nwk`` (V x K) gives the records of the engine before named
tables, bit for bit.
"""
from __future__ import annotations

import time

import numpy as np

from inference.gibbs.counts import group_nonzeros
from inference.gibbs.tables import CountTable, KeyedCounts, check_value
from partitioners.topic import STATISTICS_KEY

_INT32_MAX = np.iinfo(np.int32).max


class TableLayout:
    """The count tables of a run and the column groups of each (one per reducer)."""

    def __init__(self, tables, num_reducers: int):
        self.tables = tuple(tables)
        names = [t.name for t in self.tables]
        if not self.tables or len(set(names)) != len(names) or not all(isinstance(t, CountTable) for t in self.tables):
            raise TypeError(f"a model declares one or more CountTables with distinct names, got {names}")
        for t in self.tables:
            if t.rows * t.columns >= 1 << 62:
                raise ValueError(f"table {t.name}: {t.rows} x {t.columns} cells do not fit int64 indices")
        self.num_reducers = int(num_reducers)
        #: the columns each reducer sums of each table: a dense table's column groups; a keyed table's every
        #: column, of the rows whose key falls to that reducer (:func:`count_records`)
        self.groups = [[list(range(t.columns))] * num_reducers if t.keyed else
                       [list(range(r, t.columns, num_reducers)) for r in range(min(num_reducers, t.columns))]
                       for t in self.tables]

    def cells(self, partitions: int, tokens: int | None = None) -> int:
        """The most nonzero cells ``partitions`` partitions of ``tokens`` tokens in all emit per synchronisation."""
        total = 0
        for t in self.tables:
            cells = partitions * t.rows * t.columns
            if tokens is not None and t.cells_per_token:
                cells = min(cells, int(tokens) * t.cells_per_token)
            total += cells
        return total

    def driver_bytes(self, tokens: int | None = None) -> int:
        """Driver memory of the tables: three copies (the sum, the broadcast or message, the previous tables) of a
        dense table's int32 cells and of a keyed table's bounded nonzero cells (12 bytes each: an index and a
        count), never a keyed table's rows x columns."""
        return sum(3 * (4 * t.rows * t.columns if not t.keyed else 12 * t.bound(tokens)) for t in self.tables)

    def reply_cells(self, tokens: int | None) -> int:
        """The most nonzero cells one partition's reply holds: a dense table's cells, a keyed table's bound."""
        return sum(t.rows * t.columns if not t.keyed else t.bound(tokens) for t in self.tables)


# --------------------------------------------------------------------------- partitions -> reducers -> driver

def count_records(partition: int, contributions: dict, layout: TableLayout):
    """A partition's records: per table and group (a dense table's columns, a keyed table's rows),
    ``((reducer, table index), (partition, flat, counts))``."""
    for i, table in enumerate(layout.tables):
        if table.name not in contributions:
            raise KeyError(f"table_counts gave no contribution to table {table.name}")
        row_ids, counts = contributions[table.name]
        row_ids = np.asarray(row_ids).astype(np.int64)
        counts = np.ascontiguousarray(counts, dtype=np.int32).reshape(row_ids.shape[0], table.columns)
        reducer_of_row = row_ids % layout.num_reducers if table.keyed else None
        for r, columns in enumerate(layout.groups[i]):
            rows, cells = (row_ids, counts) if not table.keyed else \
                (row_ids[reducer_of_row == r], counts[reducer_of_row == r])
            fits = not table.keyed and table.rows * len(columns) <= _INT32_MAX
            flat, values = group_nonzeros(cells, rows, np.asarray(columns, dtype=np.int64),
                                          np.empty(cells.shape[0] * len(columns),
                                                   dtype=np.int32 if fits else np.int64))
            yield (r, i), (partition, flat, values)


def reduce_records(records, layout: TableLayout):
    """A reducer: the sum of each (table, column group) routed here, ``("counts", (table index, reducer,
    value))`` (dense: ``rows x |group|`` int32; keyed: ``(keys, (n, |group|) int32)``); partition records pass
    through as ``("partition", record)``."""
    began = time.time()
    sparse, passthrough = {}, []
    for key, value in records:
        if key == STATISTICS_KEY:
            passthrough.append(value)
        else:
            sparse.setdefault(tuple(key), []).append(value[1:])
    for r, i in sorted(sparse, key=lambda k: (k[1], k[0])):
        table, size = layout.tables[i], len(layout.groups[i][r])
        flat = np.concatenate([f for f, _ in sparse[(r, i)]])
        counts = np.concatenate([c for _, c in sparse[(r, i)]]).astype(np.float64)   # exact below 2**53
        if table.keyed:
            cells, inverse = np.unique(flat, return_inverse=True)
            total = np.bincount(inverse.ravel(), weights=counts, minlength=cells.shape[0])
            keys, rows = np.unique(cells // size, return_inverse=True)
            value = np.zeros((keys.shape[0], size), dtype=np.int64)
            value[rows.ravel(), cells % size] = total.astype(np.int64)
        else:
            value = np.bincount(flat, weights=counts, minlength=table.rows * size)
        if value.size and value.max() > _INT32_MAX:
            raise OverflowError(f"a count of table {table.name} exceeds int32")
        value = value.astype(np.int32)
        yield "counts", (i, r, (keys, value) if table.keyed else value.reshape(table.rows, size))
    for value in passthrough:
        yield "partition", value[:5] + (value[5] + [began, time.time()],)


def gather_tables(results, layout: TableLayout, num_partitions: int) -> tuple[dict, list]:
    """``(tables {name: value}, partition records in partition order)`` from the reducers' results."""
    dense = {i: np.zeros((t.rows, t.columns), dtype=np.int32) for i, t in enumerate(layout.tables) if not t.keyed}
    keyed = {i: [] for i, t in enumerate(layout.tables) if t.keyed}
    seen, parts = set(), []
    for kind, value in results:
        if kind == "counts":
            i, r, group = value
            columns = layout.groups[i][r]
            if i in dense:
                dense[i][:, columns] = group
            else:
                keyed[i].append((columns, group))
            seen.add((i, r))
        else:
            parts.append(value)
    parts.sort(key=lambda record: record[0])
    if len(parts) != num_partitions or [record[0] for record in parts] != list(range(num_partitions)):
        raise RuntimeError(f"expected one record per partition 0..{num_partitions - 1}, got {[r[0] for r in parts]}")
    missing = [(layout.tables[i].name, r) for i in range(len(layout.tables)) for r in range(len(layout.groups[i]))
               if (i, r) not in seen]
    if missing and sum(record[3] for record in parts) > 0:
        # every partition emits a record for every group, even an empty one, so this is a bug
        raise RuntimeError(f"reducers returned no counts for (table, column group) {missing}")
    tables = {}
    for i, table in enumerate(layout.tables):
        tables[table.name] = dense[i] if i in dense else _keyed_of_groups(table, keyed[i])
    return tables, parts


def _keyed_of_groups(table: CountTable, groups) -> KeyedCounts:
    """A keyed table from its column groups' nonzero rows."""
    if not groups:
        return KeyedCounts.empty(table.columns)
    keys = np.unique(np.concatenate([k for _, (k, _) in groups])).astype(np.int64)
    counts = np.zeros((keys.shape[0], table.columns), dtype=np.int32)
    for columns, (k, c) in groups:
        counts[np.searchsorted(keys, k)[:, None], np.asarray(columns)[None, :]] = c
    return KeyedCounts(keys, counts)


# --------------------------------------------------------------------------- the resident sampler's messages

def tables_message(layout: TableLayout, tables: dict, derived: dict, previous: dict | None) -> tuple[dict, list]:
    """The tables and derived values of a synchronisation as a header part and arrays: a dense table whole
    (``previous`` None or of another shape) or as the entries that differ from ``previous``, the table the tasks
    hold (flat indices, new values: at large K most of a V x K table does not change in a sweep); a keyed table
    as its nonzero rows; the derived values whole (a dict of them by ``outer/inner`` names, :func:`_flat_derived`)."""
    modes, arrays = [], []
    for table in layout.tables:
        value = tables[table.name]
        if table.keyed:
            modes.append("keyed")
            arrays += [value.keys, value.counts]
        elif previous is None or previous[table.name].shape != value.shape:
            modes.append("whole")
            arrays.append(value)
        else:
            changed = np.flatnonzero(value != previous[table.name])
            modes.append("changes")
            arrays += [changed, value.ravel()[changed]]
    flat = _flat_derived(derived)
    names = sorted(flat)
    return {"tables": modes, "derived": names}, arrays + [flat[n] for n in names]


def _flat_derived(derived: dict, prefix: str = "") -> dict:
    """Derived values as arrays by name, a nested dict's by ``outer/inner`` (a value neither an array nor a number
    nor a dict of them raises: it has no array message)."""
    out = {}
    for name, value in derived.items():
        if "/" in name:
            raise ValueError(f"derived value '{prefix}{name}': a name with '/' has no resident message")
        if isinstance(value, dict):
            out.update(_flat_derived(value, f"{prefix}{name}/"))
            continue
        array = np.asarray(value)
        if array.dtype == object:
            raise TypeError(f"derived value '{prefix}{name}': {type(value).__name__} is not an array")
        out[prefix + name] = array
    return out


def apply_tables_message(layout: TableLayout, header: dict, arrays: list, held: dict | None) -> tuple[dict, dict, list]:
    """``(tables, derived, rest of the arrays)`` a task sweeps from, from a message of :func:`tables_message` and
    the task's copy of the last tables (a dense table of changes is updated in place in it)."""
    tables, at = {}, 0
    for table, mode in zip(layout.tables, header["tables"]):
        if mode == "keyed":
            tables[table.name] = KeyedCounts(arrays[at].astype(np.int64, copy=False),
                                             arrays[at + 1].reshape(-1, table.columns).astype(np.int32, copy=False))
            at += 2
        elif mode == "whole":
            tables[table.name] = arrays[at].copy()
            at += 1
        else:
            value = held[table.name]
            value.ravel()[arrays[at]] = arrays[at + 1]
            tables[table.name] = value
            at += 2
    derived = {}
    for name in header["derived"]:
        *outer, inner = name.split("/")
        into = derived
        for part in outer:
            into = into.setdefault(part, {})
        into[inner] = arrays[at]
        at += 1
    return tables, derived, arrays[at:]


def directive_message(directive: dict | None) -> tuple[dict | None, list]:
    """A global step's directive as JSON (its non-array values) and arrays (its numpy values, by name)."""
    if directive is None:
        return None, []
    names = sorted(k for k, v in directive.items() if isinstance(v, np.ndarray))
    return ({"json": {k: v for k, v in directive.items() if k not in names}, "arrays": names},
            [directive[k] for k in names])


def directive_of(header: dict | None, arrays: list) -> dict | None:
    """The directive of :func:`directive_message` again."""
    if header is None:
        return None
    return dict(header["json"], **dict(zip(header["arrays"], arrays)))


def check_tables(layout: TableLayout, tables: dict) -> None:
    """Refuse tables that are not those the model declared (a global step's result)."""
    if set(tables) != {t.name for t in layout.tables}:
        raise TypeError(f"expected the tables {[t.name for t in layout.tables]}, got {sorted(tables)}")
    for table in layout.tables:
        check_value(table, tables[table.name])
