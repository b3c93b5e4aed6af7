"""A tree model's refresh: the prior tree grown with the vocabulary, and the previous lambda carried over to it.

* **The tree** (:func:`grown_tree`): the concepts the model's dictionaries give over the grown vocabulary, built as
  ``spark-topics tree`` builds them (:func:`drivers.models.tree.build.dictionary_concepts`, the corpus' own
  tokenizer), joined to the model's own concepts (kept even when the dictionaries are gone): a new word a
  dictionary pair links to a word of the vocabulary gets its concept path(s), a new word no pair links hangs from
  the root, as at training. Ids only grow and a pair of two known words stays a concept, so every old concept is
  in the new tree; an old word can gain concepts (its translation entered the vocabulary).
* **lambda** (:func:`carry_statistics`, eq 5.5's statistics): each path's expected count in the old model is
  lambda - beta on its last edge (a root word's edge, or a concept's leaf edge); a path of the new tree that existed
  keeps its count, a word that hung from the root and is now linked splits its count evenly over its new paths,
  every new path of a word starts at 0; then lambda = beta (the grown tree's edge priors) + the counts, a concept's
  edge taking the sum of its leaves' (as the reducer forms it, :meth:`TreeLayout.parameters_from`). A tree whose
  concepts did not change gives the old lambda on the old edges exactly.
"""
from __future__ import annotations

import logging

import numpy as np

from drivers import storage
from inference.tree_layout import TreeLayout
from drivers.models.tree.prior_tree import TREE_JSON
from drivers.corpora.aligned import word_columns

log = logging.getLogger("spark_topics.refresh")


def carry_statistics(old: TreeLayout, lambda_old: np.ndarray, beta_old: np.ndarray, new: TreeLayout,
                     beta_new: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The (K, E_new) lambda of the grown tree ``new`` from ``lambda_old`` over ``old`` (see the module docstring);
    ``columns[w]``: the new id of old word w (:func:`drivers.corpora.aligned.word_columns`)."""
    lambda_old = np.atleast_2d(np.asarray(lambda_old, dtype=np.float64))
    K = lambda_old.shape[0]
    counts = np.clip(lambda_old - beta_old, 0.0, None)
    R_old, C_old = old.num_root_children - old.num_concepts, old.num_concepts
    R_new, C_new = new.num_root_children - new.num_concepts, new.num_concepts
    lam = np.tile(np.asarray(beta_new, dtype=np.float64), (K, 1))
    leaves = np.zeros((K, C_new, 2))
    root_position = np.full(new.vocab_size, -1)
    root_position[new.root_words] = np.arange(R_new)
    # root words of the old tree: still at the root, or now linked (their count over their new paths)
    moved_from = columns[old.root_words]
    at = root_position[moved_from]
    lam[:, at[at >= 0]] += counts[:, :R_old][:, at >= 0]
    linked = np.flatnonzero(at < 0)
    if len(linked):
        degree = new.word_degree()
        share = counts[:, linked] / degree[moved_from[linked]]          # (K, moved words)
        where = {int(w): i for i, w in enumerate(moved_from[linked])}
        for c, (a, b) in enumerate(new.concept_words):
            for j, w in enumerate((a, b)):
                i = where.get(int(w))
                if i is not None:
                    leaves[:, c, j] += share[:, i]
    # the old concepts' paths, found in the new tree by their words
    if C_old:
        index = {(int(a), int(b)): c for c, (a, b) in enumerate(new.concept_words)}
        old_leaves = counts[:, R_old + C_old:].reshape(K, C_old, 2)
        for c_old, (a, b) in enumerate(columns[old.concept_words]):
            c = index.get((int(a), int(b)))
            if c is not None:
                leaves[:, c, :] += old_leaves[:, c_old, :]
            else:
                c = index[(int(b), int(a))]
                leaves[:, c, :] += old_leaves[:, c_old, ::-1]
    lam[:, R_new + C_new:] += leaves.reshape(K, -1)
    lam[:, R_new:R_new + C_new] += leaves.sum(axis=2)
    return lam


def grown_tree(spark, old: TreeLayout, old_vocab, tree_dir: str | None, corpus) -> tuple[TreeLayout, dict]:
    """The tree over the batch's grown vocabulary (``corpus``, the batch as prepared: its ``directory``, ``vocab``,
    ``vocab_size`` and ``layout``) from the model's tree ``old`` over ``old_vocab``, built by ``spark-topics tree``
    into ``tree_dir``, and a report: concepts before and after, and where the new ones came from (the model's
    dictionaries, read again)."""
    from drivers.models.tree.build import dictionary_concepts

    languages = tuple(corpus.layout.languages) if corpus.layout is not None else ("",)
    offsets = tuple(corpus.layout.offsets) if corpus.layout is not None else (0, corpus.vocab_size)
    columns = word_columns(old_vocab, corpus.vocab)
    pairs = {tuple(int(x) for x in pair) for pair in columns[old.concept_words]}
    report = {"concepts_before": int(old.num_concepts), "dictionaries": None}
    tree_json = storage.join(tree_dir, TREE_JSON) if tree_dir else None
    if tree_json and storage.exists(tree_json):
        meta = storage.load_json(tree_json)
        dictionaries = [d for d in meta.get("dictionaries") or [] if storage.exists(d)]
        if dictionaries and len(dictionaries) == len(meta.get("dictionaries") or []):
            concepts, coverage, _, _ = dictionary_concepts(spark, dictionaries, corpus.directory,
                                                           meta.get("language_codes") or None)
            ids = dict(zip(zip(corpus.vocab["lang"] if "lang" in corpus.vocab.columns else [""] * len(corpus.vocab),
                               corpus.vocab["term"]), corpus.vocab["id"].astype(int)))
            for row in concepts.itertuples(index=False):
                pairs.add((int(ids[(row.lang_a, row.word_a)]), int(ids[(row.lang_b, row.word_b)])))
            report["dictionaries"] = dictionaries
        else:
            report["why_not_grown"] = f"the dictionaries {meta.get('dictionaries')} of {tree_dir} are not all there"
    elif tree_dir:
        report["why_not_grown"] = f"the tree {tree_dir} is not there any more"
    if report.get("why_not_grown"):
        log.warning("refresh of a tree model: %s: the tree keeps its concepts, every new word hangs from the root",
                    report["why_not_grown"])
    keys = corpus.vocab["term"].astype(str).tolist()
    langs = corpus.vocab["lang"].astype(str).tolist() if "lang" in corpus.vocab.columns else [""] * len(keys)
    ordered = sorted(pairs, key=lambda p: ((langs[p[0]], keys[p[0]]), (langs[p[1]], keys[p[1]])))
    tree = TreeLayout(corpus.vocab_size, np.array(ordered, dtype=np.int64).reshape(-1, 2), languages, offsets)
    report["concepts_after"] = int(tree.num_concepts)
    return tree, report
