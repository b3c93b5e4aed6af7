"""Named count tables (inference/gibbs/tables.py) and how the Gibbs engine moves them
(drivers/engines/gibbs/tables.py), without Spark: a keyed table sums as a dense one, in any partition order;
partitions' records through one or several reducers give the merged tables, a keyed table of a 10^12-row
space without allocating it; the resident messages give the tables and the directive back."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.engines.gibbs.tables import (TableLayout, apply_tables_message, count_records, directive_message,
                                          directive_of, gather_tables, reduce_records, tables_message)
from inference.gibbs.tables import CountTable, KeyedCounts, check_value, merge
from partitioners.topic import STATISTICS_KEY, TopicPartitioner


def _contributions(rng, rows, columns, parts, size=40):
    """Partitions' contributions: repeated keys in random order, some all-zero rows."""
    out = []
    for _ in range(parts):
        keys = rng.integers(0, rows, size)
        counts = rng.integers(0, 4, (size, columns)).astype(np.int32) * (rng.random((size, 1)) < 0.8)
        out.append((keys, counts.astype(np.int32)))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_a_keyed_table_sums_as_a_dense_one_in_any_order(seed):
    rng = np.random.default_rng(seed)
    dense, keyed = CountTable("t", 200, 7), CountTable("t", 200, 7, "keyed")
    parts = _contributions(rng, 200, 7, 4)
    expected = merge(dense, parts)
    for order in (range(4), rng.permutation(4)):
        value = merge(keyed, [parts[i] for i in order])
        check_value(keyed, value)
        np.testing.assert_array_equal(value.to_dense(200), expected)
        assert value.nnz == int(expected.any(axis=1).sum())          # only nonzero rows
    assert merge(keyed, []).nnz == 0 and value.row(int(value.keys[0])).sum() > 0
    assert not value.row(next(k for k in range(200) if not expected[k].any())).any()


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="layout"):
        CountTable("t", 5, 2, "sparse")
    with pytest.raises(ValueError, match="name"):
        CountTable("a-b", 5, 2)
    with pytest.raises(TypeError, match="keyed counts"):
        check_value(CountTable("t", 5, 2, "keyed"), np.zeros((5, 2), dtype=np.int32))
    with pytest.raises(TypeError, match="dense counts"):
        check_value(CountTable("t", 5, 2), np.zeros((5, 3), dtype=np.int32))


@pytest.mark.parametrize("reducers", [1, 2, 3])
def test_records_through_reducers_give_the_merged_tables(reducers):
    """A dense table, a keyed one of a 10^12-row space (never allocated) and a one-column keyed one, from three
    partitions, routed by the topic partitioner to ``reducers`` reducers: the merged tables."""
    rng = np.random.default_rng(reducers)
    tables = (CountTable("nwk", 40, 5), CountTable("big", 10 ** 12, 5, "keyed"), CountTable("one", 90, 1, "keyed"))
    layout = TableLayout(tables, reducers)
    partitioner = TopicPartitioner(5, reducers)
    contributions = [{"nwk": c[0], "big": (c[1][0] * 10 ** 10 + 7, c[1][1]), "one": c[2]}
                     for c in zip(_contributions(rng, 40, 5, 3), _contributions(rng, 100, 5, 3),
                                  _contributions(rng, 90, 1, 3))]
    routed = {r: [] for r in range(reducers)}
    for p, contribution in enumerate(contributions):
        records = list(count_records(p, contribution, layout))
        records.append((STATISTICS_KEY, (p, np.zeros(0), 1, 10, 0.0, [0.0] * 5)))
        for key, value in records:
            routed[partitioner(key)].append((key, value))
    one = [sum(value[1].shape[0] for key, value in routed[r] if key != STATISTICS_KEY and key[1] == 2)
           for r in range(reducers)]
    assert all(n > 0 for n in one)         # a one-column keyed table's rows are summed by every reducer
    results = [out for r in range(reducers) for out in reduce_records(routed[r], layout)]
    gathered, parts = gather_tables(results, layout, 3)
    assert [p[0] for p in parts] == [0, 1, 2]
    np.testing.assert_array_equal(gathered["nwk"], merge(tables[0], [c["nwk"] for c in contributions]))
    for table in tables[1:]:
        assert gathered[table.name].equals(merge(table, [c[table.name] for c in contributions]))
    assert layout.cells(3, 1000) == 3 * 40 * 5 + 3 * 10 ** 12 * 5 + 3 * 90     # no per-token bound declared
    assert TableLayout((CountTable("b", 10 ** 12, 5, "keyed", cells_per_token=2),), 2).cells(3, 1000) == 2000


def test_resident_messages_give_the_tables_and_the_directive_back():
    rng = np.random.default_rng(9)
    layout = TableLayout((CountTable("nwk", 20, 4), CountTable("pairs", 400, 4, "keyed")), 2)
    nwk = rng.integers(0, 5, (20, 4)).astype(np.int32)
    pairs = merge(layout.tables[1], _contributions(rng, 400, 4, 2))
    derived = {"nk": nwk.sum(axis=0, dtype=np.int64)}
    header, arrays = tables_message(layout, {"nwk": nwk, "pairs": pairs}, derived, None)
    assert header["tables"] == ["whole", "keyed"]
    held, got_derived, rest = apply_tables_message(layout, header, arrays, None)
    np.testing.assert_array_equal(held["nwk"], nwk)
    assert held["pairs"].equals(pairs) and rest == [] and np.array_equal(got_derived["nk"], derived["nk"])
    changed = nwk.copy()
    changed[3, 1] += 2
    header, arrays = tables_message(layout, {"nwk": changed, "pairs": pairs}, derived, {"nwk": nwk})
    assert header["tables"] == ["changes", "keyed"] and arrays[0].tolist() == [3 * 4 + 1]
    directive = {"permutation": np.array([2, 0, 1, 3]), "step": "relabel", "created": [4]}
    d_header, d_arrays = directive_message(directive)
    tables, _, rest = apply_tables_message(layout, header, arrays + d_arrays, held)
    np.testing.assert_array_equal(tables["nwk"], changed)
    back = directive_of(d_header, rest)
    assert back["step"] == "relabel" and back["created"] == [4] and back["permutation"].tolist() == [2, 0, 1, 3]
    assert directive_message(None) == (None, []) and directive_of(None, []) is None
    assert KeyedCounts.empty(3).nnz == 0


def test_nested_derived_values_travel_in_a_resident_message():
    """A model's derived values may hold dicts of arrays (a word side's own): they go as arrays and come back
    nested; a value with no array form raises instead of stopping the resident sampler mid-run."""
    layout = TableLayout((CountTable("nwk", 5, 3),), 1)
    nwk = np.arange(15, dtype=np.int32).reshape(5, 3)
    derived = {"nk": np.array([1, 2, 3]), "side": {"tk": np.array([4, 5]), "deep": {"t": np.array([[6]])}},
               "scale": 2.5}
    header, arrays = tables_message(layout, {"nwk": nwk}, derived, None)
    assert header["derived"] == ["nk", "scale", "side/deep/t", "side/tk"]
    _, got, rest = apply_tables_message(layout, header, arrays, None)
    assert rest == [] and sorted(got) == ["nk", "scale", "side"] and float(got["scale"]) == 2.5
    np.testing.assert_array_equal(got["side"]["deep"]["t"], [[6]])
    np.testing.assert_array_equal(got["side"]["tk"], [4, 5])
    with pytest.raises(TypeError, match="side/bad"):
        tables_message(layout, {"nwk": nwk}, {"side": {"bad": [object()]}}, None)
