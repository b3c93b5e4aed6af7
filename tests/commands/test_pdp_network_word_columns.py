"""A word side indexed by [topic, column:group, column:style] (issue 28, session 25; the bigram side's keyed tables
with the pair of a document's values as the context) on Spark: trained on two partitions from prepare
--keep-columns, its keyed tables the summed states', held-out text scored left to right below V, infer; a refresh
with new values and new words moves the contexts' codes (c |style| + s, each column's unseen value last) and the
chain's tables stay the summed states'."""
from __future__ import annotations

import json

import numpy as np

from drivers.models.pdp_network import words_bigram
from drivers.preparation.corpus import prepare_corpus
from drivers.store import model_store
from jobs.evaluate import evaluate_model
from test_refresh import NEW_WORDS, run, texts
from test_refresh_gibbs import train_gibbs
from test_refresh_pdp_columns import _kept_tables
from tests.kernels.test_pdpnet_word_columns import two_column_spec

COLUMNS = ("group", "style")


def _spec() -> dict:
    raw = json.loads(json.dumps(two_column_spec()).replace("column:c", "column:group").replace("column:e",
                                                                                              "column:style"))
    return raw


def _write(path, docs, groups, styles) -> str:
    with open(path, "w") as f:
        for (doc_id, text), group, style in zip(docs, groups, styles):
            f.write(json.dumps({"id": doc_id, "text": text, "group": group, "style": style}) + "\n")
    return str(path)


def test_two_columns_train_score_and_refresh_with_new_values_and_words(spark_session, tmp_path):
    """24 documents in groups g0-g2 and styles s0-s1 (K = 3, 2 + 2 iterations): the keyed tables' contexts are the
    six (group, style) pairs' codes over sizes (4, 3), the customers the tokens, t <= n; left to right below V; a
    batch of 9 documents of an old and a new group, an old and a new style, with new words: the sizes grow to
    (5, 4), the old pairs' codes move (g 4 + s), the kept tables equal the summed states', new words counted; the
    version scores text of a new pair below V."""
    raw = _write(tmp_path / "a.jsonl", texts(24, 1, "a"), [f"g{i % 3}" for i in range(24)],
                 [f"s{i % 2}" for i in range(24)])
    prepare_corpus(spark_session, raw, str(tmp_path / "corpus"), min_df=1, max_df=1.0, language="none",
                   keep_columns=COLUMNS)
    (tmp_path / "spec.json").write_text(json.dumps(_spec()))
    first = tmp_path / "first"
    train_gibbs(spark_session, "pdp-network", tmp_path / "corpus", first, 2, "--network", tmp_path / "spec.json")
    meta = model_store.read_meta(str(first))
    V0, K = meta["vocab_size"], meta["topics"]
    assert meta["hyper"]["word_pyp"]["context"] == list(COLUMNS)
    keys, n, t = (np.load(first / f"{name}.npy") for name in ("bigram_keys", "bigram_n", "bigram_t"))
    assert set((keys // (V0 * K)).tolist()) == {g * 3 + s for g in range(3) for s in range(2)}
    assert n.sum() == meta["data"]["tokens"] and np.all(t <= n)
    scored = evaluate_model(spark_session, str(first), str(tmp_path / "corpus"), seed=1)
    assert 1.0 < scored["perplexity"] < V0 and scored["heldout"]["protocol"].startswith("left to right"), scored
    batch = _write(tmp_path / "b.jsonl", texts(9, 2, "b", extra=NEW_WORDS), ["g1", "new_g", "g0"] * 3,
                   ["s0", "s1", "new_s"] * 3)
    root = tmp_path / "root"
    report = run(spark_session, "--model", root, "--base", first, "--input", batch, "--iterations", 2,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 9
    version = model_store.resolve(str(root))
    values, kept, counted = _kept_tables(version)
    assert values.values == {"group": ["g0", "g1", "g2", "new_g"], "style": ["new_s", "s0", "s1"]} or \
        values.values == {"group": ["g0", "g1", "g2", "new_g"], "style": ["s0", "s1", "new_s"]}
    for name in (words_bigram.CUSTOMERS, words_bigram.TABLES):
        assert counted[name].equals(kept[name]), name
    V = model_store.read_meta(version)["vocab_size"]
    der = words_bigram.derived(kept, V, K)
    g, w = der["bigram_keys"] // (V * K), der["bigram_keys"] // K % V
    new_pairs = {(1, 0), (3, 1), (0, 2)}              # (g1, s0), (new_g, s1), (g0, new_s): codes over (5, 4)
    assert set(g.tolist()) == {a * 4 + b for a in range(3) for b in range(2)} | {a * 4 + b for a, b in new_pairs}
    assert V > V0 and (w >= V0).any() and np.all(der["bigram_t"] <= der["bigram_n"])
    assert der["bigram_n"].sum() == model_store.read_meta(version)["data"]["tokens"]
    vocab_path = str(tmp_path / "vocab.parquet")
    model_store.load_model(version).vocab[["term", "id"]].to_parquet(vocab_path)
    prepare_corpus(spark_session, _write(tmp_path / "c.jsonl", texts(4, 5, "c", extra=NEW_WORDS),
                                         ["new_g", "g2"] * 2, ["s1", "new_s"] * 2),
                   str(tmp_path / "scored"), language="none", vocab=vocab_path, keep_columns=COLUMNS)
    again = evaluate_model(spark_session, version, str(tmp_path / "scored"), seed=1)
    assert 1.0 < again["perplexity"] < V, again
