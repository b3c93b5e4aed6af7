"""A toy Gibbs model for the engine's tests: LDA-Gibbs plus a keyed table and a global step that relabels.

``RelabelledPairs`` keeps LDA's dense ``nwk`` and adds a keyed table ``pairs``: (previous word, word) pairs
inside a segment, keyed by ``previous * V + word`` (a V^2 row space, never allocated), counted by the word's
topic; a derived value ``pairs_per_topic``. Between synchronisations its global step relabels the topics by a
permutation drawn from the seed and the keyed table's contents (so the chain depends on the keyed table's sums),
permuting both tables' columns and alpha; the directive (the permutation as an array, a JSON tag) relabels every
partition's ``z`` before it sweeps. Each sweep checks that what it was sent is consistent and holds the
partition's own counts under its labels (which fails when a directive is lost).
"""
from __future__ import annotations

import numpy as np

from drivers.models.lda_gibbs.model import LdaGibbs
from inference.gibbs.counts import topic_word_counts
from inference.gibbs.tables import CountTable, KeyedCounts


def pair_counts(block, z: np.ndarray, vocab_size: int, num_topics: int) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, counts (n, K) int32)``: the block's (previous word, word) pairs inside segments by the word's
    topic."""
    first = np.zeros(block.n_tokens, dtype=bool)
    starts = block.seg_ptr[:-1]
    first[starts[starts < block.n_tokens]] = True
    i = np.flatnonzero(~first)
    cells, c = np.unique((block.words[i - 1].astype(np.int64) * vocab_size + block.words[i]) * num_topics + z[i],
                         return_counts=True)
    keys, row = np.unique(cells // num_topics, return_inverse=True)
    counts = np.zeros((keys.shape[0], num_topics), dtype=np.int32)
    counts[row.ravel(), cells % num_topics] = c
    return keys, counts


class RelabelledPairs(LdaGibbs):
    name = "toy-relabelled-pairs"

    def count_tables(self) -> tuple:
        V, K = self.vocab_size, self.num_topics
        return super().count_tables() + (CountTable("pairs", V * V, K, "keyed", cells_per_token=1),)

    def table_counts(self, block, state, local) -> dict:
        return dict(super().table_counts(block, state, local),
                    pairs=pair_counts(block, state["z"], self.vocab_size, self.num_topics))

    def derive(self, tables: dict) -> dict:
        return dict(super().derive(tables), pairs_per_topic=tables["pairs"].counts.sum(axis=0, dtype=np.int64))

    def sweep_tables(self, block, state, hyper, tables, derived, seed) -> None:
        pairs = tables["pairs"]
        if not isinstance(pairs, KeyedCounts) or not np.array_equal(derived["pairs_per_topic"],
                                                                   pairs.counts.sum(axis=0)):
            raise AssertionError("the keyed table and its derived totals disagree")
        if not np.array_equal(derived["nk"], tables["nwk"].sum(axis=0)):
            raise AssertionError("nwk and nk disagree")
        # the global tables hold this partition's counts (under the labels its state has after the directive)
        words, own = topic_word_counts(block, state["z"], self.num_topics)
        keys, own_pairs = pair_counts(block, state["z"], self.vocab_size, self.num_topics)
        at = pairs.find(keys)
        if np.any(own > tables["nwk"][words]) or np.any(at < 0) or np.any(own_pairs > pairs.counts[at]):
            raise AssertionError("the tables do not hold the partition's own counts: a directive was not applied")
        super().sweep_tables(block, state, hyper, tables, derived, seed)

    def global_step(self, tables, hyper, stats, seed):
        pairs, K = tables["pairs"], self.num_topics
        rng = np.random.default_rng([seed, int(pairs.keys.sum() % (1 << 31)), int(pairs.counts[:, 0].sum())])
        perm = rng.permutation(K)
        nwk = np.empty_like(tables["nwk"])
        nwk[:, perm] = tables["nwk"]
        counts = np.empty_like(pairs.counts)
        counts[:, perm] = pairs.counts
        alpha = np.empty(K)
        alpha[perm] = hyper["alpha"]
        return ({"nwk": nwk, "pairs": KeyedCounts(pairs.keys, counts)}, dict(hyper, alpha=alpha.tolist()),
                {"permutation": perm.astype(np.int64), "step": "relabel"})

    def apply_directive(self, block, state, directive) -> None:
        perm = directive["permutation"]
        if directive["step"] != "relabel" or sorted(perm.tolist()) != list(range(self.num_topics)):
            raise AssertionError(f"not a relabelling: {directive}")
        state["z"] = perm.astype(np.int32)[state["z"]]
