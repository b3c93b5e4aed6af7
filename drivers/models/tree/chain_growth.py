"""A tree model's Gibbs chain continued over a grown vocabulary (``refresh`` of ``tlda``/``ptlda --inference gibbs``,
:mod:`drivers.families.gibbs.refresh`).

The tree grows as the variational refresh grows it (:func:`drivers.models.tree.growth.grown_tree`: the model's
dictionaries read again over the batch's vocabulary, every old concept kept). Every token of the kept chain has a
topic z and a path y (an index among its word's paths, :func:`drivers.models.tree.gibbs.path_tables`); over the
grown tree

* a word keeps its meaning but may get a new id (an aligned corpus: later languages' ids shift,
  :func:`drivers.corpora.aligned.word_columns`): the old blocks' words are rewritten to the new ids;
* a path that still exists (the word still hangs from the root, or the concept is still there: concepts are found
  by their two words, in either order) keeps the token on it, under its new index among the word's paths;
* a word that hung from the root and is now linked (its translation entered the vocabulary) has lost its root path:
  its tokens draw one of its new paths uniformly (as the sampler's start draws a path), from a seed of the run, the
  chain's iteration and the partition; the next sweep samples it again under eq 5.2;
* z is unchanged; the count table (edge, topic) is then recounted from the states (the refresh's
  ``table_counts`` of every partition), so it is the states' counts exactly.

A tree that did not change (the same vocabulary) maps every token to itself: the chain is untouched.
"""
from __future__ import annotations

import numpy as np

from drivers.models.tree.gibbs import path_tables
from inference.gibbs.block import SegmentedBlock, task_seed
from inference.tree_layout import TreeLayout

#: the purpose number of the draws of the paths a grown tree took away (inference.gibbs.block.task_seed)
LOST_PATH_SEED = 7


def path_map(old: TreeLayout, new: TreeLayout, columns: np.ndarray) -> np.ndarray:
    """For every path of the old tree (flat index of :func:`path_tables`) its flat index in the new tree, -1 for a
    root path the new tree does not have (its word is now linked); ``columns[w]``: the new id of old word w."""
    old_ptr, _, _, old_concept = path_tables(old)
    new_ptr, _, _, new_concept = path_tables(new)
    index = {(int(a), int(b)): c for c, (a, b) in enumerate(new.concept_words)}
    renamed = np.full(max(old.num_concepts, 1), -1, dtype=np.int64)
    for c, (a, b) in enumerate(columns[old.concept_words]):
        renamed[c] = index.get((int(a), int(b)), index.get((int(b), int(a)), -1))
    if old.num_concepts and renamed.min() < 0:
        raise RuntimeError("the grown tree lost a concept of the model's tree: trees only grow")
    out = np.full(len(old_concept), -1, dtype=np.int64)
    for w in range(old.vocab_size):
        v = int(columns[w])
        targets = new_concept[new_ptr[v]:new_ptr[v + 1]]
        for q in range(old_ptr[w], old_ptr[w + 1]):
            wanted = -1 if old_concept[q] < 0 else renamed[old_concept[q]]
            hits = np.flatnonzero(targets == wanted)
            if len(hits):
                out[q] = new_ptr[v] + hits[0]
    return out


class GrownChain:
    """How the kept partitions of a tree model's chain change over the grown tree (see the module docstring)."""

    def __init__(self, old: TreeLayout, new: TreeLayout, columns: np.ndarray, seed: int, iteration: int):
        self.columns = np.asarray(columns, dtype=np.int64)
        self.old_ptr = path_tables(old)[0]
        self.new_ptr = path_tables(new)[0]
        self.paths = path_map(old, new, self.columns)
        self.seed, self.iteration = int(seed), int(iteration)
        self.identity = (old.vocab_size == new.vocab_size and np.array_equal(self.columns, np.arange(old.vocab_size))
                         and np.array_equal(self.paths, np.arange(len(self.paths))))

    def __call__(self, partition: int, block: SegmentedBlock, state: dict) -> SegmentedBlock | None:
        """Rewrite ``state``'s paths in place; the block over the new word ids (None: unchanged)."""
        if self.identity:
            return None
        words = self.columns[block.words]
        y = np.asarray(state["y"], dtype=np.int64)
        moved = self.paths[self.old_ptr[block.words] + y]
        lost = moved < 0
        new_y = moved - self.new_ptr[words]
        if lost.any():
            degree = self.new_ptr[words[lost] + 1] - self.new_ptr[words[lost]]
            rng = np.random.default_rng(task_seed(self.seed, self.iteration, partition, LOST_PATH_SEED))
            new_y[lost] = np.floor(rng.random(int(lost.sum())) * degree).astype(np.int64)
        state["y"] = new_y.astype(np.int32)
        return SegmentedBlock(block.doc_ids, block.doc_ptr, block.seg_ptr, words.astype(np.int32))
