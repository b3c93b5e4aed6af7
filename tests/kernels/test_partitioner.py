"""TopicPartitioner routes statistics by topic only (thesis Alg. 2), on real Spark shuffles too."""
from __future__ import annotations

import pytest

from partitioners.topic import STATISTICS_KEY, TopicPartitioner


def test_routes_by_topic_only():
    p = TopicPartitioner(num_topics=10, num_reducers=3)
    for k in range(10):
        assert p(k) == k % 3
        assert p((k, 123)) == p((k, 7)) == p(k)          # p_right is ignored
    assert p(STATISTICS_KEY) == 0 and p((STATISTICS_KEY, 4)) == 0


def test_reducers_capped_at_topics_and_validation():
    assert TopicPartitioner(4, 16).num_reducers == 4
    assert TopicPartitioner.default_reducers(50, 2) == 2
    with pytest.raises(KeyError):
        TopicPartitioner(4, 2)(4)
    assert TopicPartitioner(4, 2) == TopicPartitioner(4, 2) != TopicPartitioner(4, 3)


def test_spark_shuffle_puts_each_topic_on_one_reducer(spark_session):
    K, R = 7, 3
    p = TopicPartitioner(K, R)
    records = [((k, v), 1.0) for k in range(K) for v in range(20)] + [(STATISTICS_KEY, 1.0)] * 5
    rdd = spark_session.sparkContext.parallelize(records, 4).partitionBy(R, p)
    placed = rdd.mapPartitionsWithIndex(lambda i, it: [(i, p.topic_of(k)) for k, _ in it]).collect()
    topics_on = {}
    for reducer, topic in placed:
        topics_on.setdefault(topic, set()).add(reducer)
    assert all(len(r) == 1 for r in topics_on.values())
    assert {t: r.pop() for t, r in topics_on.items()} == {**{k: k % R for k in range(K)}, STATISTICS_KEY: 0}


def test_topic_groups_follow_the_routing():
    p = TopicPartitioner(num_topics=7, num_reducers=3)
    groups = p.topic_groups()
    assert sorted(t for g in groups for t in g) == list(range(7))
    for reducer, topics in enumerate(groups):
        assert all(p(t) == reducer for t in topics)      # a group's record lands where each topic would
