"""spark-topics refresh of the burst word side (issue 28; burst-lda.json, burst-pyp-lda.json, hca-burst.json: a
word vector per topic per document): the dense tables (``nwk``: phi's customers, phi's and the corpus levels'
indicators) grow with the vocabulary, ``burst_hist`` holds no word, a partition's cells keep their order; new
documents bring their own burst vectors (empty, seated from their tokens by their partitions' initial state).
Where the data are the same the continued chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import words_burst, words_pyp
from pdp_refresh import M, N, continued_is_uninterrupted, kept_and_counted, refreshed_with_new_words, scored_new_text
from test_refresh_gibbs_steps import step_corpora  # noqa: F401  (a fixture)


@pytest.fixture(scope="module")
def bow_corpus(request):
    """The 30 documents as a bag of words (made once per test run, tests/commands/test_refresh_gibbs_steps.py)."""
    return request.getfixturevalue("step_corpora") / "bow"


@pytest.mark.parametrize("network", ["burst-lda", "hca-burst"])     # (hca-burst: burst-pyp-lda's word side)
def test_a_refresh_where_the_data_are_the_same_continues_the_uninterrupted_chain(spark_session, bow_corpus,
                                                                                 tmp_path, network):
    """Train N iterations, continue M with no new document: the version equals a run of N+M iterations (every
    partition's state with its burst indicators, the hyperparameters, the topics)."""
    continued = continued_is_uninterrupted(spark_session, bow_corpus, tmp_path, ("--network", network))
    assert any(key.endswith(":word_bt" if network != "burst-lda" else ":word_t") for key in continued)


def test_new_documents_and_words_are_sampled_in_and_evaluated(spark_session, bow_corpus, tmp_path):
    """burst-pyp-lda.json and a batch of 12 new documents with 3 new words: the vocabulary grows, the kept tables
    (``nwk``, phi's indicators, ``burst_hist``) equal the sum of every partition's own over the grown vocabulary,
    0 < t <= n at phi's cells as read (a race cell one table), the new words have customers; the version scores new text (better than uniform)."""
    version, meta, V0, V = refreshed_with_new_words(spark_session, bow_corpus, tmp_path,
                                                    ("--network", "burst-pyp-lda"))
    model, kept, counted = kept_and_counted(version, meta, N + M)
    for name in ("nwk", words_pyp.TABLE):
        np.testing.assert_array_equal(counted[name], kept[name], err_msg=name)
    assert counted[words_burst.HIST].equals(kept[words_burst.HIST])
    nwk, twk = words_pyp.legal(kept["nwk"], kept[words_pyp.TABLE])     # (race cells: one table, as read)
    assert np.all((twk <= nwk) & ((twk > 0) == (nwk > 0))) and nwk[V0:].sum() > 0
    c, t, wc, N_, T, wr = words_burst.split(kept[words_burst.HIST])
    assert (c * wc).sum() == meta["data"]["tokens"] and np.all((1 <= t) & (t <= c))
    scored = scored_new_text(spark_session, version, tmp_path)
    assert 1.0 < scored["perplexity"] < V, scored
