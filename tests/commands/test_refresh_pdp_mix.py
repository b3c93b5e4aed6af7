"""spark-topics refresh of a word vector with several parents mixed by rho (issue 28; issue 30, 2; pyp-lda-mix.json,
drivers/models/pdp_network/words_mix.py): the per-edge tables ``word_mix`` (rows e V + w) move to the grown
vocabulary's rows, ``nwk`` is padded, a partition's indicators ``word_ms`` stay, the batch's documents are sampled
in; where the data are the same the continued chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import os

import numpy as np
import pytest

from drivers.models.pdp_network import words_mix
from inference.errors import RefusedError
from pdp_refresh import M, N, continued_is_uninterrupted, kept_and_counted, refreshed_with_new_words, scored_new_text
from test_refresh_gibbs_steps import step_corpora  # noqa: F401  (a fixture)

MIX = ("--network", "pyp-lda-mix")


@pytest.fixture(scope="module")
def bow_corpus(request):
    """The 30 documents as a bag of words (made once per test run, tests/commands/test_refresh_gibbs_steps.py)."""
    return request.getfixturevalue("step_corpora") / "bow"


def test_the_edges_rows_move_to_the_grown_vocabulary():
    """Row e V0 + w -> e V + w (P = 2 edges, V0 = 3 -> V = 5): every count follows its (edge, word), new words'
    rows are empty; a table of another shape is refused."""
    P, V0, V, K = 2, 3, 5, 2
    table = np.arange(1, P * V0 * K + 1, dtype=np.int32).reshape(P * V0, K)
    grown = words_mix.grown_rows(table, P, V0, V)
    assert grown.shape == (P * V, K) and grown.dtype == table.dtype
    for e in range(P):
        for w in range(V):
            want = table[e * V0 + w] if w < V0 else np.zeros(K)
            np.testing.assert_array_equal(grown[e * V + w], want, err_msg=f"edge {e}, word {w}")
    np.testing.assert_array_equal(words_mix.grown_rows(table, P, V0, V0), table)
    with pytest.raises(RefusedError):
        words_mix.grown_rows(table[:-1], P, V0, V)


def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, bow_corpus,
                                                                                 tmp_path):
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations (every
    partition's z and word_ms, nwk and word_mix, phi's a and b, the topics)."""
    continued = continued_is_uninterrupted(spark_session, bow_corpus, tmp_path, MIX)
    assert any(key.endswith(f":{words_mix.STATE}") for key in continued)


def test_new_documents_and_words_are_sampled_in_and_evaluated(spark_session, bow_corpus, tmp_path):
    """A batch of 12 new documents with 3 new words: the vocabulary grows, the kept ``nwk`` and ``word_mix`` equal
    the sum of every partition's own (z, word_ms) over the grown rows e V + w, 0 < t <= n at every occupied cell
    as read (a race cell one table on edge 0), both edges hold tables, the new words have customers and tables;
    the version's topics cover the grown vocabulary and score new text."""
    version, meta, V0, V = refreshed_with_new_words(spark_session, bow_corpus, tmp_path, MIX)
    model, kept, counted = kept_and_counted(version, meta, N + M)
    for name in ("nwk", words_mix.TABLE):
        np.testing.assert_array_equal(counted[name], kept[name], err_msg=name)
    n, s = words_mix.read(kept["nwk"], kept[words_mix.TABLE], 2)
    t = s.sum(axis=0)
    assert n.sum() == meta["data"]["tokens"] and n.shape[0] == V
    assert np.all((t <= n) & ((t > 0) == (n > 0))) and np.all(s.sum(axis=(1, 2)) > 0)
    assert n[V0:].sum() > 0 and t[V0:].sum() > 0
    phi = np.load(os.path.join(version, "topic_word.npy"))
    assert phi.shape[1] == V and np.all(phi > 0) and np.allclose(phi.sum(axis=1), 1.0)
    scored = scored_new_text(spark_session, version, tmp_path)
    # (not below V: after 4 iterations on these 42 tiny documents pyp-lda's own refresh scored 66.6 with V = 51,
    # this side 55.9; a Pitman-Yor side this young is no better than the uniform here)
    assert 1.0 < scored["perplexity"] < 2 * V, scored
