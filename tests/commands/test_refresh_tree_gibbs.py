"""spark-topics refresh of the tree models trained with --inference gibbs (issue 30, item 2): the chain continues as
the other Gibbs models' does, the prior tree growing with the vocabulary as the variational tlda/ptlda refresh grows
it (drivers/models/tree/chain_growth.py). On the aligned sample of test_refresh_variational_families (its tree links
an old word to a word first seen in batch 1, and two new words to each other)."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from drivers import registry
from drivers.corpora.aligned import word_columns
from drivers.engines.gibbs import chain, state as gibbs_state
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import recounted_tables, refresh_chain
from drivers.models.tree.chain_growth import GrownChain, path_map
from drivers.models.tree.gibbs import path_tables
from drivers.refresh.update import RefreshRequest
from drivers.store import model_root, model_store, publish
from inference.gibbs.block import SegmentedBlock
from inference.tree_layout import TreeLayout
from test_refresh import Killed, _raise, run
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_variational_families import aligned  # noqa: F401 (the module's fixture)

N, M = 2, 2


def _train(spark, aligned, output, iterations, *extra):
    d = aligned["dir"]
    train_gibbs(spark, "ptlda", d / "c0", output, iterations, "--inference", "gibbs", "--tree", d / "tree", *extra)


@pytest.fixture(scope="module")
def first_run(spark_session, aligned, tmp_path_factory):  # noqa: F811
    """ptlda --inference gibbs trained N iterations on the aligned base corpus (read only)."""
    output = tmp_path_factory.mktemp("tree_gibbs") / "first"
    _train(spark_session, aligned, output, N)
    return output


def _path_identity(tree: TreeLayout, vocab_keys: list, word: int, y: int):
    """What a token's path is, by words: ("root", its word) or ("concept", the concept's two words)."""
    ptr, _, _, concept = path_tables(tree)
    c = concept[ptr[word] + y]
    return ("root", vocab_keys[word]) if c < 0 else ("concept", frozenset(vocab_keys[w] for w in tree.concept_words[c]))


def test_the_tokens_keep_their_paths_on_the_grown_tree_and_a_lost_root_path_draws_a_new_one():
    """Old words a b c d (concept a-b), the new vocabulary x a b y c d e (ids shifted) with concepts a-b (now b-a in
    order), c-e, c-y: a's and b's tokens stay on their concept, d stays at the root, c's root path is gone: its
    tokens draw among its two new paths (both drawn, the same draws for the same seed, other draws for another
    partition). Checked token by token against the paths named by their words."""
    old_keys, new_keys = list("abcd"), list("xabycde")
    columns = np.array([new_keys.index(k) for k in old_keys])
    old = TreeLayout(4, np.array([[0, 1]]))
    new = TreeLayout(7, np.array([[2, 1], [4, 6], [4, 3]]))
    assert (path_map(old, new, columns) < 0).tolist() == [False, False, True, False]     # c's root path is gone
    rng = np.random.default_rng(5)
    words = rng.integers(0, 4, 400).astype(np.int32)
    y = np.zeros(400, dtype=np.int32)                  # every old word has one path
    block = SegmentedBlock(np.array(["d0", "d1"], dtype=object), np.array([0, 1, 2]), np.array([0, 150, 400]), words)
    grown = GrownChain(old, new, columns, seed=11, iteration=4)
    state = {"z": np.zeros(400, dtype=np.int32), "y": y.copy()}
    moved = grown(0, block, state)
    assert moved.words.tolist() == columns[words].tolist() and moved.doc_ids is block.doc_ids
    drawn = set()
    for w, v, y_old, y_new in zip(words, moved.words, y, state["y"]):
        before, after = _path_identity(old, old_keys, w, y_old), _path_identity(new, new_keys, v, y_new)
        if old_keys[w] == "c":
            assert after[0] == "concept" and "c" in after[1]
            drawn.add(after[1])
        else:
            assert before == after
    assert drawn == {frozenset("ce"), frozenset("cy")}
    again = {"z": state["z"], "y": y.copy()}
    grown(0, block, again)
    assert np.array_equal(again["y"], state["y"])
    other = {"z": state["z"], "y": y.copy()}
    grown(1, block, other)
    assert not np.array_equal(other["y"], state["y"])
    same = GrownChain(old, old, np.arange(4), seed=11, iteration=4)
    kept = {"z": state["z"], "y": y.copy()}
    assert same(0, block, kept) is None and np.array_equal(kept["y"], y)


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, aligned, first_run,
                                                                                  tmp_path):  # noqa: F811
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations with the same
    seed and the refresh's samples, bit for bit (states, tables, hyperparameters, topic_word, the tree)."""
    whole, version = tmp_path / "whole", str(tmp_path / "continued")
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    spec = registry.model("ptlda", "gibbs")
    refresh_chain(spark_session, spec, model_store.load_model(str(first_run)), None, request, version, registry)
    publish.write_marker(version, publish.new_token())
    _train(spark_session, aligned, whole, N + M, "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    for name in ("topic_word.npy", "tree_concepts.npy", "tree_edge_counts.npy"):
        assert np.array_equal(np.load(os.path.join(version, name)), np.load(whole / name)), name
    new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
    assert new["hyper"] == old["hyper"] and new["iterations"] == N + M and new["chain"]["continued_from"] == N
    assert new["prior_tree"] == old["prior_tree"]


def test_new_tuples_and_words_are_sampled_in_on_the_grown_tree(spark_session, aligned, first_run, tmp_path,
                                                              monkeypatch):  # noqa: F811
    """Batch 1 (its new words, of which an old word's translation and two words the dictionary links): a kill with
    the version half written leaves the root without a version; then the version's tree has the new concepts, the
    old partitions keep their documents over the new word ids, the tables are the states' counts over the grown
    tree, new words are sampled in, the version's document table holds the batch's tuples."""
    root, new = tmp_path / "root", aligned["new"]
    monkeypatch.setattr(publish, "STEP_HOOK", lambda step: _raise(Killed) if step == "model-written" else None)
    with pytest.raises(Killed):
        run(spark_session, "--model", root, "--base", first_run, "--input", aligned["files"]["b1"],
            "--iterations", M)
    monkeypatch.setattr(publish, "STEP_HOOK", None)
    assert model_root.latest(str(root)) is None and not os.path.exists(root / "versions" / "000001")
    report = run(spark_session, "--model", root, "--base", first_run, "--input", aligned["files"]["b1"],
                 "--iterations", M)
    assert report["mode"] == "chain" and report["documents"]["new"] > 0 and report["vocabulary"]["added"] > 0
    version = model_store.resolve(str(root))
    base, meta = model_store.load_model(str(first_run)), model_store.read_meta(version)
    vocab = model_store.load_model(version).vocab
    keys = list(zip(vocab["lang"], vocab["term"]))
    concepts = np.load(os.path.join(version, "tree_concepts.npy"))
    pairs = {(keys[a], keys[b]) for a, b in concepts}
    assert (("en", "lord"), ("es", new["es"][0])) in pairs and (("en", new["en"][0]), ("es", new["es"][1])) in pairs
    grown = meta["prior_tree"]
    assert grown["concepts"] == len(concepts) >= grown["refresh"]["concepts_before"] + 2
    P, Q = meta["chain"]["old_partitions"], meta["chain"]["new_partitions"]
    assert P == 2 and Q >= 1 and meta["iterations"] == N + M and meta["vocab_size"] == len(vocab)
    assert meta["vocab_sizes"] == {l: int((vocab["lang"] == l).sum()) for l in ("en", "es")}
    columns = word_columns(base.vocab, vocab)
    arrays, old = chain_arrays(version), chain_arrays(first_run)
    for p in range(P):
        name = f"blocks/part-{p:05d}.npz"
        assert np.array_equal(old[f"{name}:doc_ids"], arrays[f"{name}:doc_ids"])
        assert np.array_equal(columns[old[f"{name}:words"]], arrays[f"{name}:words"])
    kept_meta = chain.read_chain_meta(version)
    model = make_model(registry.model("ptlda", "gibbs"), kept_meta["fingerprint"]["topics"], len(vocab), registry)
    model.bind_directory(version)
    kept = chain.load_chain_tables(version, model.count_tables(), N + M)
    counted = recounted_tables(model, chain.chain_dir(version), N + M, P + Q)
    assert np.array_equal(kept["nwk"], counted["nwk"]) and kept["nwk"].shape[0] == model.tree.parameter_size
    words = np.concatenate([arrays[f"blocks/part-{p:05d}.npz:words"] for p in range(P + Q)])
    added = np.setdiff1d(np.arange(len(vocab)), columns)
    assert np.isin(added, words).any()
    doc_topics = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))
    batch_ids = np.concatenate([arrays[f"blocks/part-{p:05d}.npz:doc_ids"] for p in range(P, P + Q)])
    assert sorted(doc_topics["doc_id"]) == sorted(batch_ids.tolist())
    assert model_store.load_model(str(root)).topic_word().shape[1] == len(vocab)
    state = gibbs_state.read_state(chain.chain_dir(version), N + M, 0)
    assert set(state) >= {"z", "y"}


def test_tlda_gibbs_on_aligned_documents_refreshes_each_language_document_apart(spark_session, aligned,
                                                                                 tmp_path):  # noqa: F811
    """tlda --inference gibbs on an aligned corpus keeps each language's document apart (<id>@<lang>): so do its
    ledger, its new partitions and its document table."""
    d = aligned["dir"]
    train_gibbs(spark_session, "tlda", d / "c0", tmp_path / "t0", N, "--inference", "gibbs", "--tree", d / "tree")
    report = run(spark_session, "--model", tmp_path / "root", "--base", tmp_path / "t0", "--input",
                 aligned["files"]["b1"], "--iterations", 1)
    version = model_store.resolve(str(tmp_path / "root"))
    ledger = model_store.read_parquet(os.path.join(version, "ledger.parquet"))
    doc_topics = pd.read_parquet(os.path.join(version, "doc_topics.parquet"))
    assert ledger.doc_id.str.endswith(("@en", "@es")).all() and len(ledger) == report["ingested"] == len(doc_topics)
    assert sorted(doc_topics.doc_id) == sorted(ledger.doc_id)
    assert model_store.read_meta(version)["prior_tree"]["refresh"]["concepts_after"] > \
        model_store.read_meta(str(tmp_path / "t0"))["prior_tree"]["concepts"]
