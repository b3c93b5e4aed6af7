"""The options of corpus preparation (the ``prepare`` flags, one to one), checked when made, and its one-line error."""
from __future__ import annotations

import dataclasses

from drivers.preparation.text import DEFAULT_TOKEN_PATTERN
from inference.errors import UsageError


FORMATS = ("txt", "jsonl", "csv", "parquet")


class PrepareError(UsageError):
    """Bad input or options: the message says what is wrong and what to do (the command line shows it after the
    name of the job that prepared the corpus: prepare, infer of raw text, refresh)."""

    names_job = True


@dataclasses.dataclass(frozen=True)
class PrepareOptions:
    """Options of :func:`prepare_corpus`; the ``prepare`` flags map onto them one to one.

    ``min_df`` / ``max_df``: an ``int`` is a number of documents, a ``float``
    in [0, 1] a fraction of the documents that reach tokenising (the input rows
    that were not rejected as malformed, invalid_encoding or duplicate_id).
    A term is kept when ``min_df <= df <= max_df``; then the ``max_vocab``
    terms with the highest ``cf`` (ties: alphabetical) are kept.
    """

    format: str = "auto"
    id_column: str = "id"
    text_column: str = "text"
    language: str = "english"
    stopwords: str | None = None
    min_token_length: int = 2
    token_pattern: str = DEFAULT_TOKEN_PATTERN
    min_df: int | float = 2
    max_df: int | float = 0.5
    max_vocab: int | None = None
    vocab: str | None = None
    partitions: int | None = None
    overwrite: bool = False
    segments: str | None = None   # paragraph | sentence | COLUMN: also write segments.parquet
    ordered: bool = False         # keep every document's tokens in text order (segments.parquet or ordered.parquet)
    keep_columns: tuple = ()      # input columns copied into docs.parquet as they are (e.g. a document's authors)
    holdout: tuple = ()           # (F, "train"|"heldout"): only that part of a --holdout-fraction split (holdout.py)

    def __post_init__(self):
        if self.segments is not None and (not str(self.segments).strip() or self.segments == self.id_column):
            raise PrepareError(f"--segments must be paragraph, sentence or a column other than the id, "
                               f"got {self.segments!r}")
        if self.format not in ("auto",) + FORMATS:
            raise PrepareError(f"unknown format {self.format!r}; "
                               f"choose one of auto, {', '.join(FORMATS)}")
        if self.id_column == self.text_column:
            raise PrepareError(f"--id-column and --text-column are both {self.id_column!r}")
        if self.min_token_length < 1:
            raise PrepareError(f"--min-token-length must be at least 1, got {self.min_token_length}")
        _check_df_threshold("min_df", self.min_df)
        _check_df_threshold("max_df", self.max_df)
        if self.max_vocab is not None and self.max_vocab < 1:
            raise PrepareError(f"--max-vocab must be at least 1, got {self.max_vocab}")
        reserved = {"doc_id", "term_ids", "counts", "n_tokens", "n_oov", "order", self.id_column, self.text_column}
        clash = [c for c in self.keep_columns if not str(c).strip() or c in reserved]
        if clash or len(set(self.keep_columns)) != len(self.keep_columns):
            raise PrepareError(f"--keep-columns names input columns other than the id and the text, each once, and "
                               f"none of {', '.join(sorted(reserved - {''}))}; got {', '.join(self.keep_columns)}")
        if self.keep_columns and self.segments not in (None, "paragraph", "sentence"):
            raise PrepareError("--keep-columns does not go with --segments COLUMN")
        if self.holdout and (len(self.holdout) != 2 or self.holdout[1] not in ("train", "heldout")
                             or not 0.0 < float(self.holdout[0]) < 1.0):
            raise PrepareError(f"--holdout-fraction must be in [0, 1), got {self.holdout[0]}")
        if self.partitions is not None and self.partitions < 1:
            raise PrepareError(f"--partitions must be at least 1, got {self.partitions}")

    def df_bounds(self, n_docs: int) -> tuple[float, float]:
        """``(min_df, max_df)`` as numbers of documents out of ``n_docs``: a term is kept when min <= df <= max."""
        return tuple(value if isinstance(value, int) else value * n_docs for value in (self.min_df, self.max_df))


def _check_df_threshold(name: str, value) -> None:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PrepareError(f"{flag} must be an integer count or a fraction, got {value!r}")
    if isinstance(value, float) and not 0.0 <= value <= 1.0:
        raise PrepareError(f"{flag} as a fraction must be in [0, 1], got {value}")
    if isinstance(value, int) and value < 0:
        raise PrepareError(f"{flag} must not be negative, got {value}")
