"""Tokens in this process as Spark's ``RegexTokenizer`` + ``StopWordsRemover`` give them
(:func:`drivers.preparation.text.tokenize`): typographic apostrophes read as ``'``, the text lower-cased, every
match of the Java regex, tokens shorter than the minimum (in UTF-16 units, as Java counts) dropped, stop words
removed.

The Java regex runs on the ``regex`` module (Unicode properties, look-arounds, possessive quantifiers). Where the
two engines read a pattern differently it is refused (:class:`NeedsSpark`): Java's ``\\w``, ``\\d``, ``\\s`` and
their negations are ASCII-only without ``(?U)``, and ``\\p{Alpha}``-style POSIX names are ASCII in Java but Unicode
in ``regex``; general categories (``\\p{L}``, ``\\p{Lu}``, ``\\p{M}``, ``\\p{N}``, ...) mean the same in both.
"""
from __future__ import annotations

import re

import regex

from drivers.preparation.in_process.reading import NeedsSpark
from drivers.preparation.text import APOSTROPHES

#: Unicode general categories: the ``\\p{...}`` names both engines read alike
GENERAL_CATEGORIES = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
                      "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So",
                      "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cn"}
_ASCII_CLASSES = re.compile(r"(?<!\\)(?:\\\\)*\\[wWdDsS]")
_PROPERTIES = re.compile(r"\\[pP]\{\s*(?:Is|is)?([^}]*)\}|\\[pP]([A-Za-z])")


def java_regex(pattern: str) -> regex.Pattern:
    """``pattern`` (a Java regex) compiled for the ``regex`` module, or :class:`NeedsSpark` where the two engines
    would read it differently."""
    unicode_classes = pattern.startswith("(?U)")
    if not unicode_classes and _ASCII_CLASSES.search(pattern):
        raise NeedsSpark(r"a token pattern with \w, \d or \s (ASCII-only in Java without (?U))")
    for long_name, short_name in _PROPERTIES.findall(pattern):
        if (long_name or short_name) not in GENERAL_CATEGORIES:
            raise NeedsSpark(f"a token pattern with the property {long_name or short_name!r}")
    try:
        return regex.compile(pattern[len("(?U)"):] if unicode_classes else pattern, regex.V0)
    except regex.error as exc:
        raise NeedsSpark(f"a token pattern the regex module does not read ({exc})") from None


def utf16_length(token: str) -> int:
    """Java's ``String.length``: characters outside the Basic Multilingual Plane count twice."""
    return len(token) + sum(1 for ch in token if ord(ch) > 0xFFFF)


class Tokenizer:
    """``tokens(text)``: the lower-cased tokens of ``text`` minus stop words, as ``prepare``'s Spark job."""

    def __init__(self, pattern: str, min_token_length: int, stopwords):
        self.pattern = java_regex(pattern)
        self.min_token_length = min_token_length
        self.stopwords = frozenset(w.lower() for w in stopwords)
        self._apostrophes = regex.compile(APOSTROPHES)

    def tokens(self, text: str) -> list[str]:
        lowered = self._apostrophes.sub("'", text).lower()
        return [token for token in (match.group(0) for match in self.pattern.finditer(lowered))
                if utf16_length(token) >= self.min_token_length and token not in self.stopwords]
