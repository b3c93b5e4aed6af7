"""Bilingual dictionaries as translation pairs: FreeDict's dictd files as Debian installs them, or a TSV of pairs.

* dictd (``dict-freedict-eng-spa``: ``/usr/share/dictd/freedict-eng-spa.index`` and ``.dict.dz`` beside it): the
  index lists ``headword<TAB>offset<TAB>length`` (dictd's base-64 numbers) into the gzip-compatible ``.dict.dz``;
  an entry is ``headword /pronunciation/`` then lines of translations, numbered (``1. aversión, horror``) or not,
  separated by commas or semicolons, with grammar notes in ``<...>`` and glosses in ``(...)`` (both dropped). The
  two languages come from the ISO 639-3 codes of the name (``eng-spa``: English headwords, Spanish translations),
  mapped to two-letter codes (:data:`ISO_639_3`; ``languages`` overrides).
* TSV: ``lang1<TAB>word1<TAB>lang2<TAB>word2`` per line (``#`` comments and blank lines skipped).

Every reader yields raw pairs ``(lang_a, phrase_a, lang_b, phrase_b)``; phrases are kept as they are written here
and normalised later with the corpus' own tokenizer (a phrase of several words is dropped then, counted).
"""
from __future__ import annotations

import gzip
import io
import os
import re
import zlib

from drivers import storage
from inference.errors import UsageError

#: ISO 639-3 codes of FreeDict file names -> the two-letter codes corpora use
ISO_639_3 = {"eng": "en", "spa": "es", "deu": "de", "fra": "fr", "ita": "it", "por": "pt", "nld": "nl",
             "swe": "sv", "fin": "fi", "ell": "el", "dan": "da", "nor": "no", "nob": "nb", "pol": "pl",
             "ces": "cs", "hun": "hu", "tur": "tr", "rus": "ru", "lat": "la", "gle": "ga", "cym": "cy",
             "jpn": "ja", "zho": "zh", "ara": "ar", "heb": "he", "hin": "hi", "kur": "ku", "swh": "sw",
             "afr": "af", "bre": "br", "cat": "ca", "epo": "eo", "eus": "eu", "glg": "gl", "isl": "is",
             "lit": "lt", "srp": "sr", "hrv": "hr", "slk": "sk", "slv": "sl", "ukr": "uk", "bul": "bg",
             "ron": "ro"}
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_NUMBERED = re.compile(r"^\s*\d+\.\s*")
_NOTES = re.compile(r"<[^>]*>|\([^)]*\)|\[[^\]]*\]|\{[^}]*\}")
_NAME = re.compile(r"(?:^|[^a-z])([a-z]{3})-([a-z]{3})(?:\.index|\.dict\.dz|\.tsv|$)")


class DictionaryError(UsageError):
    """A bilingual dictionary that cannot be read: the message names the file and what is wrong."""


def _number(text: str) -> int:
    """A dictd base-64 number."""
    value = 0
    for ch in text:
        digit = _B64.find(ch)
        if digit < 0:
            raise DictionaryError(f"not a dictd number: {text!r}")
        value = value * 64 + digit
    return value


def languages_of(path: str, override: dict | None = None) -> tuple[str, str]:
    """The (headword, translation) languages of a dictd file name such as ``freedict-eng-spa.index``."""
    match = _NAME.search(os.path.basename(path).lower())
    if not match:
        raise DictionaryError(f"{path}: cannot tell the languages from the name (expected ...-eng-spa.index): pass "
                              f"--languages")
    codes = match.group(1), match.group(2)
    override = override or {}
    return tuple(override.get(c, ISO_639_3.get(c, c)) for c in codes)


def split_translations(text: str) -> list[str]:
    """The translations of a dictd entry's body (everything after the headword line)."""
    out = []
    for line in text.splitlines():
        line = _NOTES.sub(" ", _NUMBERED.sub("", line)).strip()
        if not line:
            continue
        for part in re.split(r"[,;]", line):
            part = " ".join(part.split())
            if part:
                out.append(part)
    return out


def read_dictd(index_path: str, languages: tuple[str, str]):
    """``(lang_a, headword, lang_b, translation)`` of every entry of a dictd dictionary."""
    base = index_path[:-len(".index")] if index_path.endswith(".index") else index_path
    dict_path = next((p for p in (base + ".dict.dz", base + ".dict") if storage.exists(p)), None)
    if dict_path is None:
        raise DictionaryError(f"{index_path}: no {os.path.basename(base)}.dict.dz (or .dict) beside it")
    raw = storage.read_bytes(dict_path)
    if dict_path.endswith(".dz"):
        try:
            raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read()
        except (OSError, EOFError, zlib.error) as exc:       # BadGzipFile, a truncated or damaged file
            raise DictionaryError(f"{dict_path} is not a readable dictzip (gzip) file ({type(exc).__name__}: "
                                  f"{exc}): install or download the dictionary again") from None
    lang_a, lang_b = languages
    for line_number, line in enumerate(_text(index_path).splitlines(), 1):
        fields = line.split("\t")
        if len(fields) < 3:
            raise DictionaryError(f"{index_path}:{line_number}: expected headword, offset, length")
        if fields[0].startswith("00database") or fields[0].startswith("00-database"):
            continue
        offset, length = _number(fields[1]), _number(fields[2])
        entry = raw[offset:offset + length].decode("utf-8", errors="replace")
        head, _, body = entry.partition("\n")
        headword = head.split(" /", 1)[0].strip() or fields[0]
        for translation in split_translations(body):
            yield lang_a, headword, lang_b, translation


def _text(path: str) -> str:
    try:
        return storage.read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DictionaryError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8") \
            from None


def read_pairs_tsv(path: str):
    """``(lang_a, word_a, lang_b, word_b)`` of a TSV of pairs."""
    for line_number, line in enumerate(_text(path).splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 4 or not all(f.strip() for f in fields):
            raise DictionaryError(f"{path}:{line_number}: expected lang1<TAB>word1<TAB>lang2<TAB>word2, got {line!r}")
        yield tuple(f.strip() for f in fields)


def read_dictionaries(paths, language_override: dict | None = None):
    """Raw pairs of every dictionary (dictd ``.index`` files, or ``.tsv``), with the path each came from."""
    for path in paths:
        if not storage.exists(path):
            raise DictionaryError(f"dictionary {path} does not exist")
        if path.endswith(".index") or storage.exists(path + ".index"):
            index = path if path.endswith(".index") else path + ".index"
            for pair in read_dictd(index, languages_of(index, language_override)):
                yield (*pair, path)
        else:
            for pair in read_pairs_tsv(path):
                yield (*pair, path)
