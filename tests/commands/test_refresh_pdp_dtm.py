"""spark-topics refresh of a pdp-network whose word side is indexed by [topic, column:group] (issue 28, differential
topic models; issue 30, 2): the bottom tables' rows g V0 + w move to g V + w for the grown vocabulary and values
(drivers/models/pdp_network/words_column.py ``grown_rows``), the chain continues; where the data are the same the continued
chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from drivers.models.pdp_network import words_column
from drivers.preparation.corpus import prepare_corpus
from drivers.store import model_store
from inference.errors import RefusedError
from test_pdp_network_dtm import DTM
from test_refresh import NEW_WORDS, run, texts
from test_refresh_gibbs import train_gibbs
from test_refresh_pdp_columns import _kept_tables, _write, continued_and_whole

N, M = 2, 2


@pytest.fixture(scope="module")
def base(spark_session, tmp_path_factory):
    """24 documents in groups g0-g2, prepared keeping the group; the DTM network trained N iterations (read only)."""
    folder = tmp_path_factory.mktemp("pdp_dtm")
    raw = _write(folder / "a.jsonl", texts(24, 1, "a"), [f"g{i % 3}" for i in range(24)])
    prepare_corpus(spark_session, raw, str(folder / "corpus"), min_df=1, max_df=1.0, language="none",
                   keep_columns=("group",))
    (folder / "spec.json").write_text(json.dumps(DTM))
    train_gibbs(spark_session, "pdp-network", folder / "corpus", folder / "first", N, "--network", folder / "spec.json")
    return folder


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, base, tmp_path):
    """No new document: the version equals a run of N+M iterations (states with word_bt, every table, a and b,
    topic_word, the kept bottom tables)."""
    version, whole, continued = continued_and_whole(spark_session, base, tmp_path)
    assert any(k.endswith(":word_bt") for k in continued)
    for name in ("topic_word", words_column.CUSTOMERS, words_column.TABLES):
        assert np.array_equal(np.load(os.path.join(version, f"{name}.npy")), np.load(whole / f"{name}.npy")), name
    assert model_store.read_meta(version)["hyper"] == model_store.read_meta(str(whole))["hyper"]


def test_new_values_and_words_get_their_rows_and_the_old_cells_stay(spark_session, base, tmp_path):
    """A batch of 9 documents, of an old group and two new ones, with new words: the bottom tables are laid out
    for 5 values + the unseen one over the grown vocabulary, equal the summed states' tables, the old values' old
    cells keep at least their trained counts' support, the unseen value's rows stay empty, t <= n."""
    raw = _write(tmp_path / "b.jsonl", texts(9, 2, "b", extra=NEW_WORDS), ["g1", "new_b", "new_a"] * 3)
    root = tmp_path / "root"
    report = run(spark_session, "--model", root, "--base", base / "first", "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 9
    version = model_store.resolve(str(root))
    values, kept, counted = _kept_tables(version)
    assert values.values == {"group": ["g0", "g1", "g2", "new_a", "new_b"]}
    for table, value in counted.items():
        assert np.array_equal(np.asarray(getattr(value, "counts", value)),
                              np.asarray(getattr(kept[table], "counts", kept[table]))), table
    V0, V = model_store.read_meta(str(base / "first"))["vocab_size"], model_store.read_meta(version)["vocab_size"]
    n, t = (np.asarray(kept[name]).reshape(6, V, -1) for name in (words_column.CUSTOMERS, words_column.TABLES))
    assert V > V0 and np.all(t <= n) and not n[5].any()
    assert n[3].sum() > 0 and n[4].sum() > 0 and n[:, V0:].sum() > 0      # new values, new words counted
    assert n.sum() == model_store.read_meta(version)["data"]["tokens"]


def test_the_bottom_rows_move_to_the_grown_layout():
    """g V0 + w -> g V + w for the known values; new values' and words' rows zero; counts at the old unseen value
    (none can be there) refused."""
    V0, G0, V, G, K = 3, 3, 5, 4, 2                      # values g0, g1 (+ unseen) -> g0, g1, new (+ unseen)
    old = np.arange(G0 * V0 * K).reshape(G0 * V0, K)
    old[(G0 - 1) * V0:] = 0
    moved = words_column.grown_rows(old, V0, G, V).reshape(G, V, K)
    assert np.array_equal(moved[:2, :V0], old[:2 * V0].reshape(2, V0, K))
    assert not moved[2:].any() and not moved[:, V0:].any()
    old[-1, 0] = 1
    with pytest.raises(RefusedError, match="unseen value"):
        words_column.grown_rows(old, V0, G, V)
