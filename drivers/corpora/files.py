"""The files of a prepared corpus directory: written by ``spark-topics prepare``, read by every job."""
from __future__ import annotations

DOCS = "docs.parquet"          # doc_id, term_ids, counts, n_tokens, n_oov
VOCAB = "vocab.parquet"        # term, id (0..V-1), df, cf
REJECTS = "rejects"            # JSON lines: id, reason, source, raw
CORPUS_JSON = "corpus.json"    # counts and options; written last (its presence marks a complete corpus)
SEGMENTS = "segments.parquet"  # with --segments: doc_id, segments, segment_index
STOPWORDS = "stopwords.txt"    # the stop words removed, one per line (the language's list and --stopwords)
OUTPUTS = (DOCS, VOCAB, REJECTS, CORPUS_JSON, SEGMENTS, STOPWORDS)

#: ``--language`` value that uses no shipped stop-word list
NO_STOPWORDS = "none"

#: the reject reasons ``prepare`` writes
REJECT_REASONS = ("malformed", "invalid_encoding", "duplicate_id", "empty")
#: columns of ``rejects/`` (all strings)
REJECT_COLUMNS = ("id", "reason", "source", "raw")


def read_vocab(path: str):
    """A vocabulary (a Spark-written Parquet directory or a single file) as a pandas frame sorted by id,
    read with pyarrow on the driver; ids must be 0..V-1."""
    import pyarrow.parquet as pq

    from drivers import storage

    filesystem, p = storage.resolve(path)
    vocab = pq.read_table(p, filesystem=filesystem).to_pandas().sort_values("id").reset_index(drop=True)
    if len(vocab) and not (vocab["id"].to_numpy() == range(len(vocab))).all():
        raise ValueError(f"{path}: vocabulary ids must be 0..V-1 without gaps")
    return vocab


def rejects_schema():
    """The Spark schema of ``rejects/``."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(name, T.StringType()) for name in REJECT_COLUMNS])
