"""--permute-segments (thesis PTrTe): every document keeps its multiset of segments, the order changes, and the
permutation is a fixed function of (seed, doc_id)."""
import numpy as np

from inference.gibbs.model import SegmentedBlock
from drivers.corpora.segmented import permute_block_segments


def _segments(block):
    out = {}
    for d, doc_id in enumerate(block.doc_ids):
        segs = [tuple(block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]].tolist())
                for s in range(block.doc_ptr[d], block.doc_ptr[d + 1])]
        out[doc_id] = segs
    return out


def test_permutation_keeps_segments_changes_order_deterministically():
    rng = np.random.default_rng(1)
    docs = [(f"doc{d}", [rng.integers(0, 50, size=rng.integers(1, 6)).tolist() for _ in range(n)])
            for d, n in enumerate([1, 2, 12, 30, 7, 0, 20])]
    block = SegmentedBlock.from_segments(docs)
    original = _segments(block)
    permuted = permute_block_segments(block, 7)
    again = permute_block_segments(block, 7)
    other = permute_block_segments(block, 8)
    assert permuted.n_tokens == block.n_tokens and permuted.n_segments == block.n_segments
    np.testing.assert_array_equal(permuted.doc_ptr, block.doc_ptr)
    got = _segments(permuted)
    for doc_id, segs in original.items():
        assert sorted(got[doc_id]) == sorted(segs)          # same multiset of segments, tokens in order
    assert any(got[d] != original[d] for d in original)     # the order changed
    assert got[f"doc{3}"] != original["doc3"]               # 30 segments: identity has probability 1/30!
    assert _segments(again) == got                          # deterministic
    assert _segments(other) != got                          # depends on the seed
    # per document: the same document in another block (other partition/split) gets the same order
    alone = permute_block_segments(SegmentedBlock.from_segments([d for d in docs if d[0] == "doc3"]), 7)
    assert _segments(alone)["doc3"] == got["doc3"]
    assert block.words.tolist() == SegmentedBlock.from_segments(docs).words.tolist()   # input untouched
