"""``prepare --holdout-fraction F`` for a monolingual corpus: the documents whose id hashes below F go to
``CORPUS_DIR/heldout`` (a corpus of its own, prepared with the training corpus' vocabulary, for ``evaluate`` and
``select-k``), the others to ``CORPUS_DIR``. The split is a hash of the document id (the one the aligned corpora use,
:mod:`drivers.preparation.aligned`), so it is the same on every machine and in every run."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from drivers import storage
from drivers.corpora.files import VOCAB
from drivers.preparation.options import PrepareError

TRAIN, HELDOUT = "train", "heldout"
#: the held-out corpus' folder inside CORPUS_DIR
HELDOUT_DIR = "heldout"


def is_heldout(doc_id, fraction: float):
    """The Spark column: the document is held out (xxhash64 of its id, modulo a million, below F million)."""
    return F.pmod(F.xxhash64(doc_id), F.lit(1_000_000)) < F.lit(int(round(fraction * 1_000_000)))


def check(holdout: tuple) -> None:
    """``PrepareOptions.holdout``: () or (F, "train"|"heldout") with F in (0, 1)."""
    if holdout and (len(holdout) != 2 or holdout[1] not in (TRAIN, HELDOUT) or not 0.0 < float(holdout[0]) < 1.0):
        raise PrepareError(f"--holdout-fraction must be in [0, 1), got {holdout[0] if holdout else holdout}")


def rows_of_part(rows: DataFrame, holdout: tuple) -> DataFrame:
    """The input rows of the part ``holdout`` names (all rows for ``()``)."""
    if not holdout:
        return rows
    held = is_heldout(F.col("doc_id"), float(holdout[0]))
    return rows.where(held if holdout[1] == HELDOUT else ~held)


def prepare_with_holdout(spark, input_path: str, output_dir: str, fraction: float, engine: str = "auto",
                         **options) -> dict:
    """The training corpus in ``output_dir`` and the held-out one in ``output_dir/heldout`` (its vocabulary: the
    training corpus'); returns the training corpus.json with ``heldout`` (the held-out summary) added."""
    from drivers.preparation.corpus import prepare_corpus

    if not 0.0 <= fraction < 1.0:
        raise PrepareError(f"--holdout-fraction must be in [0, 1), got {fraction}")
    if options.get("vocab"):
        raise PrepareError("--holdout-fraction builds the vocabulary from the training part; it does not go with "
                           "--vocab")
    corpus = prepare_corpus(spark, input_path, output_dir, engine, **dict(options, holdout=(fraction, TRAIN)))
    heldout = prepare_corpus(spark, input_path, storage.join(output_dir, HELDOUT_DIR), engine,
                             **dict(options, holdout=(fraction, HELDOUT), overwrite=True,
                                    vocab=storage.join(output_dir, VOCAB)))
    return dict(corpus, heldout=heldout)
