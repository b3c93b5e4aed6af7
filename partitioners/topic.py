"""TopicPartitioner: routes sufficient statistics to reducers by topic only (thesis Alg. 2).

Keys are a topic index ``k`` (or a tuple whose first element is the topic, e.g.
``(k, v)`` or ``(k, language)``); the reserved key :data:`STATISTICS_KEY` (Delta of
Alg. 1/2: alpha statistics and global totals; the Gibbs engine's partition records)
goes to reducer 0.
Any reducer beyond the number of topics would be idle, so ``num_reducers`` is
capped at K.
"""
from __future__ import annotations

from inference.constraints import AT_LEAST_1, check


#: the reserved key Delta of Alg. 1/2: a partition's statistics vector (alpha statistics, totals), routed to
#: reducer 0 and summed there, never split by topic
STATISTICS_KEY = -1


class TopicPartitioner:
    """Callable ``key -> reducer index`` for ``RDD.partitionBy(num_reducers, partitioner)``."""

    def __init__(self, num_topics: int, num_reducers: int | None = None):
        if num_topics < 1:
            raise ValueError("num_topics must be >= 1")
        self.num_topics = int(num_topics)
        self.num_reducers = max(1, min(int(num_reducers or num_topics), self.num_topics))

    @staticmethod
    def default_reducers(num_topics: int, parallelism: int) -> int:
        """Default R: one reducer per core, never more than K."""
        return max(1, min(num_topics, parallelism))

    @classmethod
    def for_topics(cls, num_topics: int, requested: int | None, parallelism: int) -> "TopicPartitioner":
        """The partitioner of an engine: ``requested`` reducers (None: the default; below 1: refused)."""
        check("--reducers", requested, AT_LEAST_1)
        return cls(num_topics, requested or cls.default_reducers(num_topics, parallelism))

    def topic_of(self, key) -> int:
        """p_left of the key pair <p_left, p_right>; Alg. 2 ignores p_right."""
        return key[0] if isinstance(key, tuple) else key

    def __call__(self, key) -> int:
        topic = self.topic_of(key)
        if topic == STATISTICS_KEY:
            return 0
        if not 0 <= topic < self.num_topics:
            raise KeyError(f"topic {topic} outside 0..{self.num_topics - 1}")
        return topic % self.num_reducers

    def topic_groups(self, max_size: int | None = None) -> list[list[int]]:
        """The topics of each reducer, in reducer order (mappers combine one record per group); with ``max_size``,
        each reducer's topics in consecutive runs of at most that many (records of bounded size)."""
        groups = [list(range(r, self.num_topics, self.num_reducers)) for r in range(self.num_reducers)]
        if max_size is None:
            return groups
        size = max(1, int(max_size))
        return [topics[i:i + size] for topics in groups for i in range(0, len(topics), size)]

    def __eq__(self, other) -> bool:
        return isinstance(other, TopicPartitioner) and \
            (other.num_topics, other.num_reducers) == (self.num_topics, self.num_reducers)

    def __hash__(self) -> int:
        return hash((TopicPartitioner, self.num_topics, self.num_reducers))

    def __repr__(self) -> str:
        return f"TopicPartitioner(num_topics={self.num_topics}, num_reducers={self.num_reducers})"
