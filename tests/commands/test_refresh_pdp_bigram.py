"""spark-topics refresh of tlm.json, a pdp-network whose word side is indexed by [topic, previous_word] (issue 28;
issue 30, 2): the keyed tables (customers, the partitions' indicators) move to the grown vocabulary's keys
(drivers/models/pdp_network/words_bigram.py ``rekeyed``; the start context V0 becomes V) and the chain continues; where the data
are the same the continued chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import os

import numpy as np
import pytest

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain
from drivers.models.pdp_network import words_bigram
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_store, publish
from inference.gibbs.tables import KeyedCounts
from jobs.evaluate import evaluate_model
from test_refresh import NEW_WORDS, run, texts, write_batch
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_gibbs_steps import step_corpora, summed_state_tables  # noqa: F401  (a fixture)

N, M = 2, 2
TLM = ("--network", "tlm")


@pytest.fixture(scope="module")
def ordered_corpus(request):
    """The 30 documents prepared with --ordered (made once per test run, tests/commands/test_refresh_gibbs_steps.py)."""
    return request.getfixturevalue("step_corpora") / "ordered"


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, ordered_corpus,
                                                                                 tmp_path):
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations (every
    partition's state with its word_t, both keyed tables, b, topic_word and the saved bigram arrays)."""
    corpus, first, whole = ordered_corpus, tmp_path / "first", tmp_path / "whole"
    version = str(tmp_path / "continued")
    train_gibbs(spark_session, "pdp-network", corpus, first, N, *TLM)
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(first)), None, request,
                  version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "pdp-network", corpus, whole, N + M, *TLM, "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    assert any(key.endswith(":word_t") for key in continued)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    for name in ("topic_word", "bigram_keys", "bigram_n", "bigram_t"):
        assert np.array_equal(np.load(os.path.join(version, f"{name}.npy")), np.load(whole / f"{name}.npy")), name
    new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
    assert new["hyper"] == old["hyper"] and new["hyper"] != model_store.read_meta(str(first))["hyper"]


def test_the_keys_move_to_the_grown_vocabulary():
    """(w' V0 + w) K + k -> (w' V + w) K + k, the start context V0 -> V; counts follow their keys, order kept."""
    V0, V, K = 3, 5, 2
    cells = [(0, 1, 1), (2, 0, 0), (3, 2, 1), (3, 0, 0)]          # (w', w, k); w' = 3 = V0: a first token
    keys = np.array([(p * V0 + w) * K + k for p, w, k in cells])
    order = np.argsort(keys)
    table = KeyedCounts(keys[order], np.arange(1, 5, dtype=np.int32)[order][:, None])
    moved = words_bigram.rekeyed(table, V0, V, K)
    want = {(p if p < V0 else V, w, k): c for (p, w, k), c in zip(cells, range(1, 5))}
    got = {(int(key) // (V * K), int(key) // K % V, int(key) % K): int(c) for key, c in zip(moved.keys,
                                                                                          moved.counts[:, 0])}
    assert got == want and np.all(np.diff(moved.keys) > 0)


def test_new_documents_and_words_are_sampled_in_and_evaluated(spark_session, ordered_corpus, tmp_path):
    """A batch of 12 new documents with 3 new words: the vocabulary grows, the kept keyed tables equal the sum of
    every partition's own (customers from z, indicators word_t) over the grown keys, t <= n in every cell, and the
    version scores new text (prepared with its vocabulary) left to right (better than uniform)."""
    corpus, first, root = ordered_corpus, tmp_path / "first", tmp_path / "root"
    train_gibbs(spark_session, "pdp-network", corpus, first, N, *TLM)
    raw = write_batch(tmp_path / "b.jsonl", texts(12, 2, "b", extra=NEW_WORDS))
    report = run(spark_session, "--model", root, "--base", first, "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(root))
    meta, kept_meta = model_store.read_meta(version), chain.read_chain_meta(version)
    V0, V = model_store.read_meta(str(first))["vocab_size"], meta["vocab_size"]
    assert V > V0 and set(NEW_WORDS) <= set(model_store.load_model(version).vocab["term"][V0:])
    P, Q = meta["chain"]["old_partitions"], meta["chain"]["new_partitions"]
    model = make_model(registry.MODELS["pdp-network"], kept_meta["fingerprint"]["topics"], V, registry)
    model.bind_hyper(kept_meta["hyper"])
    kept = chain.load_chain_tables(version, model.count_tables(), N + M)
    counted = summed_state_tables(model, chain.chain_dir(version), N + M, P + Q)
    for name in (words_bigram.CUSTOMERS, words_bigram.TABLES):
        assert counted[name].equals(kept[name]), name
    der = words_bigram.derived(kept, V, model.num_topics)
    assert np.all(der["bigram_t"] <= der["bigram_n"]) and der["bigram_n"].sum() == meta["data"]["tokens"]
    starts = der["bigram_ctx"] // model.num_topics == V            # the start context moved to V
    assert der["bigram_ctx_n"][starts].sum() == meta["data"]["documents"]
    vocab_path = str(tmp_path / "vocab.parquet")
    model_store.load_model(version).vocab[["term", "id"]].to_parquet(vocab_path)
    prepare_corpus(spark_session, write_batch(tmp_path / "c.jsonl", texts(4, 5, "c", extra=NEW_WORDS)),
                   str(tmp_path / "scored"), language="none", vocab=vocab_path, ordered=True)
    scored = evaluate_model(spark_session, version, str(tmp_path / "scored"), seed=1)
    assert 1.0 < scored["perplexity"] < V, scored


def test_tlm_h2b_refreshes_as_the_uninterrupted_chain_and_takes_in_new_words(spark_session, ordered_corpus, tmp_path):
    """tlm-h2b.json (the bigram side over a Pitman-Yor psi[topic], session 23): with the same data the continued
    chain is the uninterrupted one (every partition's state and the saved topics); a batch with new words grows the
    vocabulary and the version scores new text."""
    h2b = ("--network", "tlm-h2b")
    corpus, first, whole = ordered_corpus, tmp_path / "first", tmp_path / "whole"
    version = str(tmp_path / "continued")
    train_gibbs(spark_session, "pdp-network", corpus, first, N, *h2b)
    request = RefreshRequest(root=str(tmp_path / "same"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(first)), None, request,
                  version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "pdp-network", corpus, whole, N + M, *h2b, "--burn-in", N, "--lag", 1, "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    assert np.array_equal(np.load(os.path.join(version, "topic_word.npy")), np.load(whole / "topic_word.npy"))
    root = tmp_path / "root"
    raw = write_batch(tmp_path / "b.jsonl", texts(12, 2, "b", extra=NEW_WORDS))
    report = run(spark_session, "--model", root, "--base", first, "--input", raw, "--iterations", M,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    grown = model_store.resolve(str(root))
    assert model_store.read_meta(grown)["vocab_size"] > model_store.read_meta(str(first))["vocab_size"]
    vocab_path = str(tmp_path / "vocab.parquet")
    model_store.load_model(grown).vocab[["term", "id"]].to_parquet(vocab_path)
    prepare_corpus(spark_session, write_batch(tmp_path / "c.jsonl", texts(4, 5, "c", extra=NEW_WORDS)),
                   str(tmp_path / "scored"), language="none", vocab=vocab_path, ordered=True)
    scored = evaluate_model(spark_session, grown, str(tmp_path / "scored"), seed=1)
    assert 1.0 < scored["perplexity"] < model_store.read_meta(grown)["vocab_size"], scored
