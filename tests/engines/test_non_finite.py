"""A non-finite value stops training at once, named with the iteration, the task's place and the word: the
message a user gets instead of a model refused at publishing after every iteration has run."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from drivers.engines.variational.tasks import collect_checked
from drivers.failures import one_line
from drivers.families.variational.infer import name_words
from inference.tree_layout import TreeLayout
from inference.reducer import topic_weights


def test_a_task_raising_floating_point_error_fails_the_iteration(spark_session):
    def reducer_like(partition, items):      # (nested: shipped by value, executors cannot import test modules)
        tree = TreeLayout(6, np.array([[0, 3], [1, 3]]))
        beta = tree.edge_priors(0.1)
        lam = beta.copy()
        if partition == 1:
            lam[tree.num_root_children + 3] = np.inf            # concept 1 -> word 3
        yield topic_weights(partition, lam, beta, tree).topic

    job = spark_session.sparkContext.parallelize(range(2), 2).mapPartitionsWithIndex(reducer_like)
    with pytest.raises(FloatingPointError) as raised:
        collect_checked(job, "iteration 7/20")
    message = str(raised.value)
    assert message.startswith("iteration 7/20: topic 1: lambda of the edge concept 1 -> word id 3 is inf"), message
    assert "Traceback" not in message and "\n" not in message
    assert one_line(raised.value).startswith("FloatingPointError: iteration 7/20: topic 1")
    other = spark_session.sparkContext.parallelize([1], 1).map(lambda x: 1 // 0)
    with pytest.raises(Exception) as raised:
        collect_checked(other, "iteration 1/2")
    assert not isinstance(raised.value, FloatingPointError)


def test_word_ids_are_named():
    vocab = pd.DataFrame({"term": ["haus", "house"], "id": [0, 1], "lang": ["de", "en"]})
    assert name_words("iteration 2/5: topic 3: lambda of the edge concept 4 -> word id 1 is nan", vocab) == \
        "iteration 2/5: topic 3: lambda of the edge concept 4 -> word id 1 ('house', en) is nan"
    assert name_words("word id 9 and word id 0", vocab.drop(columns="lang")) == "word id 9 and word id 0 ('haus')"
