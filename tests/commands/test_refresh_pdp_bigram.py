"""spark-topics refresh of tlm.json, a pdp-network whose word side is indexed by [topic, previous_word] (issue 28;
issue 30, 2): the keyed tables (customers, the partitions' indicators) move to the grown vocabulary's keys
(drivers/models/pdp_network/words_bigram.py ``rekeyed``; the start context V0 becomes V) and the chain continues; where the data
are the same the continued chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import words_bigram
from inference.gibbs.tables import KeyedCounts
from pdp_refresh import M, N, continued_is_uninterrupted, kept_and_counted, refreshed_with_new_words, scored_new_text
from test_refresh_gibbs_steps import step_corpora  # noqa: F401  (a fixture)

TLM = ("--network", "tlm")


@pytest.fixture(scope="module")
def ordered_corpus(request):
    """The 30 documents prepared with --ordered (made once per test run, tests/commands/test_refresh_gibbs_steps.py)."""
    return request.getfixturevalue("step_corpora") / "ordered"


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, ordered_corpus,
                                                                                 tmp_path):
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations (every
    partition's state with its word_t, both keyed tables, b, topic_word and the saved bigram arrays)."""
    continued = continued_is_uninterrupted(spark_session, ordered_corpus, tmp_path, TLM,
                                           saved=("topic_word", "bigram_keys", "bigram_n", "bigram_t"))
    assert any(key.endswith(":word_t") for key in continued)


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
    version, meta, V0, V = refreshed_with_new_words(spark_session, ordered_corpus, tmp_path, TLM)
    model, kept, counted = kept_and_counted(version, meta, N + M)
    for name in (words_bigram.CUSTOMERS, words_bigram.TABLES):
        assert counted[name].equals(kept[name]), name
    der = words_bigram.derived(kept, V, model.num_topics)
    assert np.all(der["bigram_t"] <= der["bigram_n"]) and der["bigram_n"].sum() == meta["data"]["tokens"]
    starts = der["bigram_ctx"] // model.num_topics == V            # the start context moved to V
    assert der["bigram_ctx_n"][starts].sum() == meta["data"]["documents"]
    scored = scored_new_text(spark_session, version, tmp_path, ordered=True)
    assert 1.0 < scored["perplexity"] < V, scored


def test_tlm_h2b_refreshes_as_the_uninterrupted_chain_and_takes_in_new_words(spark_session, ordered_corpus, tmp_path):
    """tlm-h2b.json (the bigram side over a Pitman-Yor psi[topic], session 23): with the same data the continued
    chain is the uninterrupted one (every partition's state and the saved topics); a batch with new words grows the
    vocabulary and the version scores new text."""
    h2b = ("--network", "tlm-h2b")
    continued_is_uninterrupted(spark_session, ordered_corpus, tmp_path, h2b, root="same", hyper_moved=False)
    grown, _, _, V = refreshed_with_new_words(spark_session, ordered_corpus, tmp_path, h2b, trained=True)
    scored = scored_new_text(spark_session, grown, tmp_path, ordered=True)
    assert 1.0 < scored["perplexity"] < V, scored
