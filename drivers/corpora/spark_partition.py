"""Which partition Spark's ``repartition(P, "doc_id")`` puts a document in, in plain Python: Spark's
``Murmur3Hash`` of the id (Murmur3_x86_32 ``hashUnsafeBytes`` of its UTF-8 bytes, seed 42; unlike standard
Murmur3 the last ``len % 4`` bytes are mixed one signed byte at a time), then ``pmod(hash, P)``. A corpus loaded
in this process (:mod:`drivers.corpora.in_process`) gets the blocks Spark's
:func:`drivers.corpora.bow.blocks_by_partition` makes, so draws seeded by partition are the same;
``tests/commands/test_gibbs_in_process.py`` compares the two with Spark's own ``hash``."""
from __future__ import annotations

SEED = 42
_C1, _C2, _MASK = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _MASK, 15) * _C2) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _MASK


def murmur3(data: bytes, seed: int = SEED) -> int:
    """Spark's ``hash`` of a string column value (``data``: its UTF-8 bytes), as a signed 32-bit int."""
    h1, n = seed & _MASK, len(data)
    aligned = n - n % 4
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i:i + 4], "little")))
    for byte in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((byte - 256 if byte > 127 else byte) & _MASK))
    h1 ^= n
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_of(doc_id: str, num_partitions: int) -> int:
    """The partition of ``repartition(num_partitions, "doc_id")`` that holds the document ``doc_id``."""
    return murmur3(doc_id.encode("utf-8")) % num_partitions     # Python's % of a positive modulus is pmod
