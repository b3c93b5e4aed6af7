"""Words dropped from a topic's truncation ordered set, remembered in bounded memory (thesis §7.4.1). Pure numpy.

The thesis' contraction discards a dropped word's nu and ranking score, and a word that comes back "is treated as
a new word" (R from 0). Keeping every score would cost memory in the number of distinct words ever seen; its two
bounded alternatives are to "drop a word's score entirely and reset it to the smallest score in T_k if the word
reappears", knowing that it was dropped through a Bloom filter (one-sided error). This module is that filter, one
per topic, of a fixed size: ``BITS`` bits and ``HASHES`` positions per word from a BLAKE2b digest of its UTF-8
bytes (the same in every process, unlike Python's ``hash``). After n dropped words a never-dropped word is taken
for a dropped one with probability about (1 - exp(-HASHES n / BITS))^HASHES (0.04% at n = 5,000, 1.8% at
n = 15,000, 13% at 30,000);
a dropped word is always recognised.
"""
from __future__ import annotations

import hashlib

import numpy as np

#: bits of one topic's filter (16 KiB) and positions per word
BITS = 1 << 17
HASHES = 4


def empty_filter() -> np.ndarray:
    """One topic's filter: ``BITS`` bits as uint8 bytes, none set."""
    return np.zeros(BITS // 8, dtype=np.uint8)


def positions(words) -> np.ndarray:
    """(n, HASHES) bit positions of ``words``: consecutive 4-byte slices of BLAKE2b(word) modulo ``BITS``."""
    out = np.empty((len(words), HASHES), dtype=np.int64)
    for i, word in enumerate(words):
        digest = hashlib.blake2b(str(word).encode("utf-8"), digest_size=4 * HASHES).digest()
        out[i] = np.frombuffer(digest, dtype="<u4").astype(np.int64) % BITS
    return out


def add(bits: np.ndarray, words) -> np.ndarray:
    """A copy of ``bits`` with ``words`` added."""
    bits = bits.copy()
    where = positions(words).ravel()
    np.bitwise_or.at(bits, where >> 3, (1 << (where & 7)).astype(np.uint8))
    return bits


def contains(bits: np.ndarray, words) -> np.ndarray:
    """(n,) bool: ``words`` the filter holds (every added word; a few others, see the module docstring)."""
    if len(words) == 0:
        return np.zeros(0, dtype=bool)
    where = positions(words)
    return np.all((bits[where >> 3] >> (where & 7)) & 1, axis=1).astype(bool)
