"""Spark's ``xxhash64`` of a document id (XXH64 of its UTF-8 bytes, seed 42; null -> 42) in plain Python, so a
``--holdout-fraction`` split made without Spark (:mod:`drivers.preparation.in_process`) holds the same documents as
Spark's (:mod:`drivers.preparation.holdout`); tests/commands/test_holdout_split.py compares the two."""
from __future__ import annotations

SEED = 42
_P1, _P2, _P3, _P4, _P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161, 9650029242287828579,
                           2870177450012600261)
_MASK = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, value: int) -> int:
    return (_rotl((acc + value * _P2) & _MASK, 31) * _P1) & _MASK


def _merge(acc: int, value: int) -> int:
    return ((acc ^ _round(0, value)) * _P1 + _P4) & _MASK


def xxhash64(data: bytes, seed: int = SEED) -> int:
    """XXH64 of ``data`` as Spark's signed 64-bit long."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed & _MASK, (seed - _P1) & _MASK]
        while i + 32 <= n:
            for lane in range(4):
                v[lane] = _round(v[lane], int.from_bytes(data[i + 8 * lane:i + 8 * lane + 8], "little"))
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
        for lane in range(4):
            h = _merge(h, v[lane])
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, int.from_bytes(data[i:i + 8], "little")), 27) * _P1 + _P4) & _MASK
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ ((int.from_bytes(data[i:i + 4], "little") * _P1) & _MASK), 23) * _P2 + _P3) & _MASK
        i += 4
    while i < n:
        h = (_rotl(h ^ ((data[i] * _P5) & _MASK), 11) * _P1) & _MASK
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    h ^= h >> 32
    return h - (1 << 64) if h >= 1 << 63 else h


def is_heldout(doc_id: str | None, fraction: float) -> bool:
    """The rule of :func:`drivers.preparation.holdout.is_heldout` for one id: pmod(xxhash64(id), 10^6) < F 10^6."""
    h = SEED if doc_id is None else xxhash64(doc_id.encode("utf-8"))
    return h % 1_000_000 < int(round(fraction * 1_000_000))


def in_part(doc_id: str | None, holdout: tuple) -> bool:
    """Whether the document belongs to the part ``holdout`` names (every document for ``()``)."""
    if not holdout:
        return True
    return is_heldout(doc_id, float(holdout[0])) == (holdout[1] == "heldout")
