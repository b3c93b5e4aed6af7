"""spark-topics refresh of the burst word side (issue 28; burst-lda.json, burst-pyp-lda.json, hca-burst.json: a
word vector per topic per document): the dense tables (``nwk``: phi's customers, phi's and the corpus levels'
indicators) grow with the vocabulary, ``burst_hist`` holds no word, a partition's cells keep their order; new
documents bring their own burst vectors (empty, seated from their tokens by their partitions' initial state).
Where the data are the same the continued chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from drivers import registry
from drivers.engines.gibbs import chain
from drivers.families.gibbs.models import make_model
from drivers.families.gibbs.refresh import refresh_chain
from drivers.models.pdp_network import words_burst, words_pyp
from drivers.preparation.corpus import prepare_corpus
from drivers.refresh.update import RefreshRequest
from drivers.store import model_store, publish
from jobs.evaluate import evaluate_model
from test_refresh import NEW_WORDS, run, texts, write_batch
from test_refresh_gibbs import chain_arrays, train_gibbs
from test_refresh_gibbs_steps import step_corpora, summed_state_tables  # noqa: F401  (a fixture)

N, M = 2, 2


@pytest.fixture(scope="module")
def bow_corpus(request):
    """The 30 documents as a bag of words (made once per test run, tests/commands/test_refresh_gibbs_steps.py)."""
    return request.getfixturevalue("step_corpora") / "bow"


@pytest.mark.parametrize("network", ["burst-lda", "hca-burst"])     # (hca-burst: burst-pyp-lda's word side)
def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, bow_corpus,
                                                                                 tmp_path, network):
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations (every
    partition's state with its burst indicators, the hyperparameters, the topics)."""
    corpus, first, whole = bow_corpus, tmp_path / "first", tmp_path / "whole"
    version = str(tmp_path / "continued")
    train_gibbs(spark_session, "pdp-network", corpus, first, N, "--network", network)
    request = RefreshRequest(root=str(tmp_path / "root"), input=None, iterations=M, reinfer_old=True)
    refresh_chain(spark_session, registry.MODELS["pdp-network"], model_store.load_model(str(first)), None, request,
                  version, registry)
    publish.write_marker(version, publish.new_token())
    train_gibbs(spark_session, "pdp-network", corpus, whole, N + M, "--network", network, "--burn-in", N, "--lag", 1,
                "--samples", M)
    continued, uninterrupted = chain_arrays(version), chain_arrays(whole)
    assert sorted(continued) == sorted(uninterrupted)
    assert any(key.endswith(":word_bt" if network != "burst-lda" else ":word_t") for key in continued)
    for key, value in uninterrupted.items():
        assert np.array_equal(continued[key], value), key
    assert np.array_equal(np.load(f"{version}/topic_word.npy"), np.load(whole / "topic_word.npy"))
    new, old = model_store.read_meta(version), model_store.read_meta(str(whole))
    assert new["hyper"] == old["hyper"] and new["hyper"] != model_store.read_meta(str(first))["hyper"]


def test_new_documents_and_words_are_sampled_in_and_evaluated(spark_session, bow_corpus, tmp_path):
    """burst-pyp-lda.json and a batch of 12 new documents with 3 new words: the vocabulary grows, the kept tables
    (``nwk``, phi's indicators, ``burst_hist``) equal the sum of every partition's own over the grown vocabulary,
    0 < t <= n at phi's cells as read (a race cell one table), the new words have customers; the version scores new text (better than uniform)."""
    corpus, first, root = bow_corpus, tmp_path / "first", tmp_path / "root"
    train_gibbs(spark_session, "pdp-network", corpus, first, N, "--network", "burst-pyp-lda")
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
    for name in ("nwk", words_pyp.TABLE):
        np.testing.assert_array_equal(counted[name], kept[name], err_msg=name)
    assert counted[words_burst.HIST].equals(kept[words_burst.HIST])
    nwk, twk = words_pyp.legal(kept["nwk"], kept[words_pyp.TABLE])     # (race cells: one table, as read)
    assert np.all((twk <= nwk) & ((twk > 0) == (nwk > 0))) and nwk[V0:].sum() > 0
    c, t, wc, N_, T, wr = words_burst.split(kept[words_burst.HIST])
    assert (c * wc).sum() == meta["data"]["tokens"] and np.all((1 <= t) & (t <= c))
    vocab_path = str(tmp_path / "vocab.parquet")
    model_store.load_model(version).vocab[["term", "id"]].to_parquet(vocab_path)
    prepare_corpus(spark_session, write_batch(tmp_path / "c.jsonl", texts(4, 5, "c", extra=NEW_WORDS)),
                   str(tmp_path / "scored"), language="none", vocab=vocab_path)
    scored = evaluate_model(spark_session, version, str(tmp_path / "scored"), seed=1)
    assert 1.0 < scored["perplexity"] < V, scored
