"""spark-topics refresh of topic-transition.json, a pdp-network whose topic draw reads theta[previous_word] (a DP over
a corpus-level root; issue 28, session 25; issue 30, 2): theta's V + 1 rows of ``network_tc``/``network_tp`` follow
the grown vocabulary (an old word keeps its row, the start context moves from V0 to V, a new word's row starts at
zero: drivers/models/pdp_network/shared_roots.py) and the chain continues; where the data are the same the continued
chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import os

import numpy as np
import pytest

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_store, publish
from jobs.evaluate import evaluate_model
from test_refresh import NEW_WORDS, run, texts, write_batch
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_gibbs_steps import step_corpora, summed_state_tables  # noqa: F401  (a fixture)

N, M = 2, 2
LONGER = 10            # the batch's iterations (4 left held-out text at 54 against V = 51: barely trained)
TRANSITION = ("--network", "topic-transition")
ROWS = ("network_tc", "network_tp")


@pytest.fixture(scope="module")
def ordered_corpus(request):
    """The 30 documents prepared with --ordered (made once per test run, tests/commands/test_refresh_gibbs_steps.py)."""
    return request.getfixturevalue("step_corpora") / "ordered"


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, ordered_corpus,
                                                                                 tmp_path):
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations (every
    partition's state, the tables, b, the saved rows, topic_word and the documents' proportions)."""
    corpus, first, whole = ordered_corpus, tmp_path / "first", tmp_path / "whole"
    version = str(tmp_path / "continued")
    train_gibbs(spark_session, "pdp-network", corpus, first, N, *TRANSITION)
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(first)), None, request,
                  version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "pdp-network", corpus, whole, N + M, *TRANSITION, "--burn-in", N, "--lag", 1,
                "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    for name in ("topic_word",) + ROWS:
        assert np.array_equal(np.load(os.path.join(version, f"{name}.npy")), np.load(whole / f"{name}.npy")), name
    new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
    assert new["hyper"] == old["hyper"] and new["hyper"] != model_store.read_meta(str(first))["hyper"]


def test_new_documents_and_words_grow_the_rows_and_are_evaluated(spark_session, ordered_corpus, tmp_path):
    """A batch of 12 new documents with 3 new words: the vocabulary grows, the kept rows equal the sum of every
    partition's own (the grown layout: theta[w] at 1 + w, the start at 1 + V), theta's customers are the tokens
    by previous word (the start row's the documents), some new word has customers, t <= c, and the version scores
    new text (prepared with its vocabulary) left to right below V."""
    corpus, first, root = ordered_corpus, tmp_path / "first", tmp_path / "root"
    train_gibbs(spark_session, "pdp-network", corpus, first, N, *TRANSITION)
    raw = write_batch(tmp_path / "b.jsonl", texts(12, 2, "b", extra=NEW_WORDS))
    report = run(spark_session, "--model", root, "--base", first, "--input", raw, "--iterations", LONGER,
                 "--min-new-df", 1)
    assert report["mode"] == "chain" and report["documents"]["new"] == 12
    version = model_store.resolve(str(root))
    meta, kept_meta = model_store.read_meta(version), chain.read_chain_meta(version)
    V0, V = model_store.read_meta(str(first))["vocab_size"], meta["vocab_size"]
    assert V > V0
    P, Q = meta["chain"]["old_partitions"], meta["chain"]["new_partitions"]
    model = make_model(registry.MODELS["pdp-network"], kept_meta["fingerprint"]["topics"], V, registry)
    model.bind_hyper(kept_meta["hyper"])
    kept = chain.load_chain_tables(version, model.count_tables(), N + LONGER)
    counted = summed_state_tables(model, chain.chain_dir(version), N + LONGER, P + Q)
    for name in ROWS:
        np.testing.assert_array_equal(np.asarray(counted[name]), np.asarray(kept[name]), name)
    c, t = np.asarray(kept["network_tc"])[1:V + 2], np.asarray(kept["network_tp"])[1:V + 2]
    assert c.sum() == meta["data"]["tokens"] and c[V].sum() == meta["data"]["documents"]
    assert c[V0:V].any() and np.all(t <= c) and not np.asarray(kept["network_tc"])[V + 2:].any()
    vocab_path = str(tmp_path / "vocab.parquet")
    model_store.load_model(version).vocab[["term", "id"]].to_parquet(vocab_path)
    prepare_corpus(spark_session, write_batch(tmp_path / "c.jsonl", texts(4, 5, "c", extra=NEW_WORDS)),
                   str(tmp_path / "scored"), language="none", vocab=vocab_path, ordered=True)
    scored = evaluate_model(spark_session, version, str(tmp_path / "scored"), seed=1)
    assert 1.0 < scored["perplexity"] < V and scored["heldout"]["protocol"].startswith("left to right"), scored
