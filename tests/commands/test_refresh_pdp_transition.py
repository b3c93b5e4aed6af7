"""spark-topics refresh of topic-transition.json, a pdp-network whose topic draw reads theta[previous_word] (a DP over
a corpus-level root; issue 28, session 25; issue 30, 2): theta's V + 1 rows of ``network_tc``/``network_tp`` follow
the grown vocabulary (an old word keeps its row, the start context moves from V0 to V, a new word's row starts at
zero: drivers/models/pdp_network/shared_roots.py) and the chain continues; where the data are the same the continued
chain is the uninterrupted one, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from pdp_refresh import N, continued_is_uninterrupted, kept_and_counted, refreshed_with_new_words, scored_new_text
from test_refresh_gibbs_steps import step_corpora  # noqa: F401  (a fixture)

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
    continued_is_uninterrupted(spark_session, ordered_corpus, tmp_path, TRANSITION, saved=("topic_word",) + ROWS)


def test_new_documents_and_words_grow_the_rows_and_are_evaluated(spark_session, ordered_corpus, tmp_path):
    """A batch of 12 new documents with 3 new words: the vocabulary grows, the kept rows equal the sum of every
    partition's own (the grown layout: theta[w] at 1 + w, the start at 1 + V), theta's customers are the tokens
    by previous word (the start row's the documents), some new word has customers, t <= c, and the version scores
    new text (prepared with its vocabulary) left to right below V."""
    version, meta, V0, V = refreshed_with_new_words(spark_session, ordered_corpus, tmp_path, TRANSITION, LONGER)
    model, kept, counted = kept_and_counted(version, meta, N + LONGER)
    for name in ROWS:
        np.testing.assert_array_equal(np.asarray(counted[name]), np.asarray(kept[name]), name)
    c, t = np.asarray(kept["network_tc"])[1:V + 2], np.asarray(kept["network_tp"])[1:V + 2]
    assert c.sum() == meta["data"]["tokens"] and c[V].sum() == meta["data"]["documents"]
    assert c[V0:V].any() and np.all(t <= c) and not np.asarray(kept["network_tc"])[V + 2:].any()
    scored = scored_new_text(spark_session, version, tmp_path, ordered=True)
    assert 1.0 < scored["perplexity"] < V and scored["heldout"]["protocol"].startswith("left to right"), scored
