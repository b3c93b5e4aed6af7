"""Topic share over the columns ``prepare --keep-columns`` kept (a date, an author, ...): the mean topic proportion
of the documents of each value, from ``doc_topics.parquet``, where ``train`` carries the kept columns
(:mod:`drivers.corpora.kept_columns`; ``model.json`` ``kept_columns`` names them). A column of at most
:data:`MAX_GROUPS` distinct values is grouped by value; one whose values all begin with a year (``2021``,
``2021-05-03``) by year; any other (an id-like column) is left out, with a line in the log."""
from __future__ import annotations

import logging
import re

import numpy as np
import pyarrow.dataset as ds

from drivers import storage

log = logging.getLogger("spark_topics.browse")

#: the most groups a column is shown in
MAX_GROUPS = 40
YEAR = re.compile(r"^\d{4}")


def group_labels(values: list) -> list | None:
    """Each value's group: itself (as text) when there are few, else its year; None when neither fits."""
    text = ["" if v is None else str(v) for v in values]
    if len(set(text)) <= MAX_GROUPS:
        return text
    if all(YEAR.match(t) for t in text):
        years = [t[:4] for t in text]
        if len(set(years)) <= MAX_GROUPS:
            return years
    return None


def topic_shares(directory: str, names: list, num_topics: int) -> dict:
    """column -> {"values": the groups in order, "documents": per group, "share": K x groups mean proportions}."""
    path = storage.join(directory, "doc_topics.parquet")
    if not names or not storage.exists(path):
        return {}
    filesystem, p = storage.resolve(path)
    table = ds.dataset(p, filesystem=filesystem, format="parquet")
    names = [n for n in names if n in table.schema.names]
    if not names:
        return {}
    rows = table.to_table(columns=["theta", *names])
    theta = np.asarray(rows.column("theta").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                       dtype=np.float64).reshape(rows.num_rows, num_topics)
    out = {}
    for name in names:
        labels = group_labels(rows.column(name).to_pylist())
        if labels is None:
            log.info("topic share over %s: too many distinct values to show", name)
            continue
        groups = sorted(set(labels))
        index = {g: i for i, g in enumerate(groups)}
        at = np.array([index[g] for g in labels], dtype=np.int64)
        documents = np.bincount(at, minlength=len(groups))
        sums = np.zeros((num_topics, len(groups)))
        np.add.at(sums.T, at, theta)
        out[name] = {"values": groups, "documents": documents.tolist(),
                     "share": sums / np.maximum(documents, 1)[None, :]}
    return out
