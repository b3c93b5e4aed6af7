"""The data a Gibbs model samples and the seeds of its draws: :class:`SegmentedBlock` (one partition's documents
as ordered segments of tokens) and :func:`task_seed` (a draw's seed, a pure function of the run's seed, the
iteration, the partition and the purpose). Below :mod:`inference.gibbs.model` and the held-out estimators, which
both use them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SegmentedBlock:
    doc_ids: np.ndarray   # (D,) object array of str, sorted
    doc_ptr: np.ndarray   # (D+1,) int64: document d owns segments doc_ptr[d]:doc_ptr[d+1], in layout order
    seg_ptr: np.ndarray   # (S+1,) int64: segment s owns tokens seg_ptr[s]:seg_ptr[s+1]
    words: np.ndarray     # (N,) int32 global vocabulary id of every token

    @property
    def n_docs(self) -> int:
        return int(self.doc_ids.shape[0])

    @property
    def n_segments(self) -> int:
        return int(self.seg_ptr.shape[0] - 1)

    @property
    def n_tokens(self) -> int:
        return int(self.words.shape[0])

    def doc_of_segment(self) -> np.ndarray:
        """(S,) int64 document index of every segment."""
        return np.repeat(np.arange(self.n_docs, dtype=np.int64), np.diff(self.doc_ptr))

    def token_ptr(self) -> np.ndarray:
        """(D+1,) int64: document d owns tokens token_ptr[d]:token_ptr[d+1]."""
        return self.seg_ptr[self.doc_ptr]

    def documents(self, keep: np.ndarray) -> "SegmentedBlock":
        """The block of the documents where ``keep`` (D bools) is True, in their order."""
        keep = np.asarray(keep, dtype=bool)
        seg_counts, tok_ptr = np.diff(self.doc_ptr), self.token_ptr()
        keep_segment = np.repeat(keep, seg_counts)
        seg_sizes = np.diff(self.seg_ptr)[keep_segment]
        keep_token = np.repeat(keep, np.diff(tok_ptr))
        return SegmentedBlock(self.doc_ids[keep], np.r_[0, np.cumsum(seg_counts[keep])].astype(np.int64),
                              np.r_[0, np.cumsum(seg_sizes)].astype(np.int64), self.words[keep_token])

    def as_segment_documents(self) -> "SegmentedBlock":
        """Every segment becomes a one-segment document (LDA_P, the thesis' segment-level LDA)."""
        S = self.n_segments
        seg_doc = self.doc_of_segment()
        seg_index = np.arange(S) - self.doc_ptr[seg_doc]
        ids = np.array([f"{self.doc_ids[d]}#{j}" for d, j in zip(seg_doc, seg_index)], dtype=object)
        return SegmentedBlock(ids, np.arange(S + 1, dtype=np.int64), self.seg_ptr.copy(), self.words)

    @classmethod
    def from_segments(cls, docs) -> "SegmentedBlock":
        """Build from ``(doc_id, [segment word-id lists in order])``; documents are sorted by id."""
        docs = sorted(docs, key=lambda d: d[0])
        doc_ptr, seg_ptr, words = [0], [0], []
        for _, segments in docs:
            for seg in segments:
                words.extend(int(w) for w in seg)
                seg_ptr.append(len(words))
            doc_ptr.append(len(seg_ptr) - 1)
        return cls(np.array([d[0] for d in docs], dtype=object), np.asarray(doc_ptr, dtype=np.int64),
                   np.asarray(seg_ptr, dtype=np.int64), np.asarray(words, dtype=np.int32))


DRIVER_PARTITION = 1 << 30  # the "partition" number of draws made on the driver


def task_seed(seed: int, iteration: int, partition: int, purpose: int = 0) -> int:
    """A 31-bit seed for one task, a pure function of (run seed, iteration, partition, purpose)."""
    ss = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(iteration), int(partition), int(purpose)])
    return int(ss.generate_state(1, dtype=np.uint32)[0] >> 1)
