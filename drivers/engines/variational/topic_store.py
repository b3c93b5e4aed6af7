"""The topic parameters of one EM iteration, in files the reducers write: Mr. LDA's distributed cache (thesis
§3.2.6), so that neither lambda nor the mappers' word weights pass through the driver.

Reducer r owns the topics r, r + R, r + 2R, ... (:meth:`partitioners.topic.TopicPartitioner.topic_groups`) and
writes, under the iteration's directory::

    lambda-r<r>.npy    (k_r, V) lambda rows of its topics, in the group's order
    log-weights-r<r>.npy   (V, k_r) the mappers' log word weights of its topics (E_q[log beta_k], or
                       log E_q[beta_k]; :mod:`inference.word_weights`), word-major: a mapper reads the rows of its
                       partition's vocabulary and nothing else (:func:`drivers.storage.load_npy_rows`)

So a mapper holds U x K weights (U: its partition's vocabulary), a reducer k_r x V rows, and the driver only
per-topic numbers. The driver writes the start's files (iteration 0) and reads lambda once, at the end, to
write the model. The files live on the checkpoint directory, which executors already share (the per-partition
state): a cluster needs it on a filesystem every node sees (HDFS, S3, NFS).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drivers import storage


@dataclass(frozen=True)
class TopicFiles:
    directory: str
    num_topics: int
    num_reducers: int

    @property
    def topic_groups(self) -> list[list[int]]:
        """The topics of each reducer (as :meth:`TopicPartitioner.topic_groups`)."""
        return [list(range(r, self.num_topics, self.num_reducers)) for r in range(self.num_reducers)]

    def lambda_file(self, reducer: int) -> str:
        return storage.join(self.directory, f"lambda-r{reducer:05d}.npy")

    def weights_file(self, reducer: int) -> str:
        return storage.join(self.directory, f"log-weights-r{reducer:05d}.npy")

    def write(self, reducer: int, lambda_rows: np.ndarray, weight_columns: np.ndarray) -> None:
        """A reducer's files: its topics' lambda rows (k_r, V) and log word weights, word-major (V, k_r)."""
        storage.save_npy(self.weights_file(reducer), np.ascontiguousarray(weight_columns, dtype=np.float64))
        storage.save_npy(self.lambda_file(reducer), np.ascontiguousarray(lambda_rows, dtype=np.float64))

    def log_word_weights(self, vocab_ids: np.ndarray) -> np.ndarray:
        """(U, K) log word weights of the words ``vocab_ids``, read from every reducer's file (those rows only)."""
        out = np.empty((len(vocab_ids), self.num_topics))
        for reducer, topics in enumerate(self.topic_groups):
            out[:, topics] = storage.load_npy_rows(self.weights_file(reducer), vocab_ids)
        return out

    def lambda_rows(self, reducer: int) -> np.ndarray:
        return storage.load_npy(self.lambda_file(reducer))

    def lambda_row_reader(self):
        """``topic -> lambda row`` (for a reducer's online update rule: the previous lambda of its own topics,
        whatever grouping wrote them)."""
        position = {k: (r, i) for r, topics in enumerate(self.topic_groups) for i, k in enumerate(topics)}
        cache: dict[int, np.ndarray] = {}

        def row(topic: int) -> np.ndarray:
            r, i = position[int(topic)]
            if r not in cache:
                cache.clear()
                cache[r] = self.lambda_rows(r)
            return cache[r][i]
        return row

    def lambda_matrix(self) -> np.ndarray:
        """The whole K x V lambda (the model's ``lambda.npy``): read once, at the end of training."""
        rows = None
        for reducer, topics in enumerate(self.topic_groups):
            part = self.lambda_rows(reducer)
            if rows is None:
                rows = np.empty((self.num_topics, part.shape[1]))
            rows[topics] = part
        return rows

    def complete(self) -> bool:
        return all(storage.exists(self.lambda_file(r)) and storage.exists(self.weights_file(r))
                   for r in range(self.num_reducers))
