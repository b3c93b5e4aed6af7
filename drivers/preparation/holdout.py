"""The split of ``prepare --holdout-fraction F``: a document is held out when the hash of its id falls below F (the
rule the aligned corpora use, :mod:`drivers.preparation.aligned`), so the split is the same on every machine and in
every run. :mod:`drivers.preparation.heldout_corpus` writes the two parts."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

TRAIN, HELDOUT = "train", "heldout"
#: the held-out corpus' folder inside CORPUS_DIR
HELDOUT_DIR = "heldout"


def is_heldout(doc_id, fraction: float):
    """The Spark column: the document is held out (xxhash64 of its id, modulo a million, below F million)."""
    return F.pmod(F.xxhash64(doc_id), F.lit(1_000_000)) < F.lit(int(round(fraction * 1_000_000)))


def rows_of_part(rows: DataFrame, holdout: tuple) -> DataFrame:
    """The input rows of the part ``holdout`` names (all rows for ``()``)."""
    if not holdout:
        return rows
    held = is_heldout(F.col("doc_id"), float(holdout[0]))
    return rows.where(held if holdout[1] == HELDOUT else ~held)
