"""Tokenising and stop-word removal for ``spark-topics prepare``.

Tokens come from Spark's own :class:`~pyspark.ml.feature.RegexTokenizer`
(lower-cased, matched by a Java regular expression) followed by
:class:`~pyspark.ml.feature.StopWordsRemover` with a list shipped in
``drivers/preparation/stopwords/<language>.txt`` (Spark's Snowball lists, see the README there).
"""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.ml.feature import RegexTokenizer, StopWordsRemover
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from drivers import storage
from drivers.corpora.files import NO_STOPWORDS

#: Runs of letters (combining marks included, so decomposed accents stay in the
#: word), joined by inner apostrophes: ``isn't`` and ``o'clock`` are one token
#: (the stop-word lists spell contractions with ``'``), while a possessive or
#: contracted ``'s`` is split off (``god's`` -> ``god`` + ``s``, and ``s`` is
#: shorter than the minimum token length).  Digits and punctuation never match.
DEFAULT_TOKEN_PATTERN = r"[\p{L}\p{M}]+(?:'(?!s\b)[\p{L}\p{M}]+)*"

#: Typographic apostrophes (U+2019, U+02BC) are rewritten to ``'`` before
#: tokenising, so ``don’t`` and ``don't`` are the same word.
APOSTROPHES = "[\u2019\u02bc]"


def available_languages() -> list[str]:
    """Names of the stop-word lists shipped in ``drivers/preparation/stopwords/``."""
    return sorted(entry.name[:-4] for entry in _stopwords_dir().iterdir() if entry.name.endswith(".txt"))


def load_stopwords(language: str) -> list[str]:
    """The shipped stop-word list of ``language`` (``"none"`` gives ``[]``)."""
    language = language.lower()
    if language == NO_STOPWORDS:
        return []
    if language not in available_languages():
        raise ValueError(f"no stop-word list for language {language!r}; available: "
                         f"{', '.join(available_languages())} (or {NO_STOPWORDS!r})")
    text = (_stopwords_dir() / f"{language}.txt").read_text(encoding="utf-8")
    return _parse_word_list(text)


def read_stopwords_file(path: str) -> list[str]:
    """A custom stop-word list: one word per line; blank lines and ``#`` comments ignored."""
    try:
        text = storage.read_bytes(path).decode("utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read stop-word file {path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"stop-word file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return _parse_word_list(text)


def stopword_list(language: str, stopwords_file: str | None = None) -> list[str]:
    """Union of the language's list and an optional custom file, lower-cased and sorted."""
    words = set(load_stopwords(language))
    if stopwords_file:
        words.update(read_stopwords_file(stopwords_file))
    return sorted(words)


def tokenize(df: DataFrame, text_col: str, output_col: str, *,
             pattern: str = DEFAULT_TOKEN_PATTERN, min_token_length: int = 2,
             stopwords: Sequence[str] = ()) -> DataFrame:
    """Add ``output_col``: the lower-cased tokens of ``text_col`` minus stop words.

    Tokens are the matches of ``pattern`` (a Java regex) at least
    ``min_token_length`` characters long, found after typographic apostrophes
    were normalised to ``'``.
    """
    normalised = f"__{output_col}_text"
    raw_tokens = f"__{output_col}_raw"
    df = df.withColumn(normalised, F.regexp_replace(F.col(text_col), APOSTROPHES, "'"))
    tokenizer = RegexTokenizer(inputCol=normalised, outputCol=raw_tokens, pattern=pattern,
                               gaps=False, toLowercase=True, minTokenLength=min_token_length)
    # Tokens are lower-case already and so are the lists: a case-sensitive
    # comparison avoids StopWordsRemover's dependence on the JVM's locale.
    remover = StopWordsRemover(inputCol=raw_tokens, outputCol=output_col,
                               stopWords=[w.lower() for w in stopwords], caseSensitive=True)
    return remover.transform(tokenizer.transform(df)).drop(normalised, raw_tokens)


def _parse_word_list(text: str) -> list[str]:
    """Lower-cased non-blank lines that are not ``#`` comments, typographic apostrophes normalised."""
    words = []
    for line in text.splitlines():
        word = line.strip().lower().replace("\u2019", "'").replace("\u02bc", "'")
        if word and not word.startswith("#"):
            words.append(word)
    return words


def _stopwords_dir():
    """``drivers/preparation/stopwords/``, package data next to this module: read through importlib.resources, so
    the lists are found also when ``jobs`` is imported from the code zip (``--py-files``: a driver in cluster
    mode)."""
    from importlib.resources import files

    return files("drivers.preparation") / "stopwords"
