"""A two-level prior tree as the topic-word structure of the variational engine (thesis §5.1, eqs 5.1-5.6).

Each topic k has a distribution over the tree's paths: a Dirichlet over the root's children (the words that hang
from the root and the concepts) and one Dirichlet per concept over its two leaves. A word in no concept has one
path, root -> word; a word in d concepts has d paths, root -> concept -> word. A topic's parameters (a lambda row,
``E = R + 3C`` entries)::

    [0, R)            root -> root word r      (``root_words[r]``: the words in no concept, ascending)
    [R, R + C)        root -> concept c
    [R + C, R + 3C)   concept c -> its leaf j  (entry R + C + 2c + j, word ``concept_words[c, j]``)

Variational inference (eq 5.5) has a joint (topic, path) phi per token, normalised over the paths that end at the
token's word: phi_{n,k,s} ∝ exp(E[log theta_k] + E[log pi_{k,s}]), E[log pi_{k,s}] the sum over the path's edges.
Summed over the paths of word w this is exp(E[log theta_k]) W_kw with the **word weight**
W_kw = sum_{s -> w} exp(E[log pi_{k,s}]), so the mapper runs LDA's E-step on W unchanged, and the reducer splits a
word's statistics over its paths in proportion to exp(E[log pi_{k,s}]) / W_kw, computed from the lambda the mappers
used (the previous iteration's): that gives exactly the (topic, path) statistics of eq 5.5, and
lambda_{k,e} = beta_e + the statistics of the paths through e. The hybrid step's mean weights are
W_kw = sum_s prod_{e in s} E[pi_{k,e}] (eq 5.6, a collapsed sampler's path probability), split alike.

A tree without concepts is flat LDA: one group, the root's, over every word, and every computation here is then
LDA's own (the same functions on the same arrays), bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.special import digamma, gammaln

from inference.elbo import dirichlet_expectation, dirichlet_prior_term, neg_entropy


@dataclass(frozen=True)
class TreeLayout:
    vocab_size: int
    concept_words: np.ndarray = field(repr=False)   # (C, 2) word ids of each concept's leaves
    languages: tuple = ("",)                         # of the vocabulary, as VocabLayout's (per-language outputs)
    offsets: tuple = ()

    needs_previous = True          # the reducer splits a word's statistics with the previous lambda of its topic
    is_polylingual = False         # one distribution over the tree per topic (ptLDA too: its paths span languages)

    def __post_init__(self):
        words = np.asarray(self.concept_words, dtype=np.int64).reshape(-1, 2)
        if words.size and (words.min() < 0 or words.max() >= self.vocab_size):
            raise ValueError(f"concept words outside 0..{self.vocab_size - 1}")
        if np.any(words[:, 0] == words[:, 1]):
            raise ValueError("a concept links a word to itself")
        object.__setattr__(self, "concept_words", words)
        if not self.offsets:
            object.__setattr__(self, "offsets", (0, int(self.vocab_size)))

    # ---- the tree's shape
    @property
    def num_concepts(self) -> int:
        return self.concept_words.shape[0]

    @property
    def root_words(self) -> np.ndarray:
        linked = np.zeros(self.vocab_size, dtype=bool)
        linked[self.concept_words.ravel()] = True
        return np.flatnonzero(~linked)

    @property
    def num_root_children(self) -> int:
        return self.vocab_size - len(np.unique(self.concept_words)) + self.num_concepts

    @property
    def parameter_size(self) -> int:
        return self.num_root_children + 2 * self.num_concepts

    def word_degree(self) -> np.ndarray:
        """(V,) the number of concepts of every word (0: the word hangs from the root)."""
        return np.bincount(self.concept_words.ravel(), minlength=self.vocab_size)

    def paths_of_words(self) -> np.ndarray:
        """(V,) the number of paths ending at every word."""
        return np.maximum(self.word_degree(), 1)

    def edge_priors(self, eta: float, link_strength: float = 100.0) -> np.ndarray:
        """beta per edge (E,), so that a tree without concepts is flat LDA with ``eta``: root -> word eta;
        root -> concept eta * sum over its words of 1/deg(w); concept -> word link_strength * eta / deg(w)."""
        if not (np.isfinite(eta) and eta > 0 and np.isfinite(link_strength) and link_strength > 0):
            raise ValueError(f"eta and the link strength must be positive, got {eta} and {link_strength}")
        R, C = self.num_root_children - self.num_concepts, self.num_concepts
        degree = self.word_degree().astype(np.float64)
        out = np.empty(self.parameter_size)
        out[:R] = eta
        inverse = 1.0 / degree[self.concept_words]                  # (C, 2)
        out[R:R + C] = eta * inverse.sum(axis=1)
        out[R + C:] = (link_strength * eta * inverse).ravel()
        return out

    # ---- the engine's structure interface (as inference.layout.VocabLayout)
    def _split(self, row):
        R = self.num_root_children
        return row[..., :R], row[..., R:].reshape(row.shape[:-1] + (self.num_concepts, 2))

    def dirichlet_expectation_edges(self, lam: np.ndarray) -> np.ndarray:
        """E_q[log pi_{k,e}] of every edge, for a row or a (K, E) matrix."""
        lam = np.asarray(lam, dtype=np.float64)
        root, leaves = self._split(lam)
        out = np.empty_like(lam)
        out_root, out_leaves = self._split(out)
        out_root[...] = dirichlet_expectation(root) if root.ndim == 1 else \
            digamma(root) - digamma(root.sum(axis=-1, keepdims=True))
        out_leaves[...] = digamma(leaves) - digamma(leaves.sum(axis=-1, keepdims=True))
        return out

    def mean_edges(self, lam: np.ndarray) -> np.ndarray:
        """E_q[pi_{k,e}] of every edge (each Dirichlet normalised)."""
        lam = np.asarray(lam, dtype=np.float64)
        root, leaves = self._split(lam)
        out = np.empty_like(lam)
        out_root, out_leaves = self._split(out)
        out_root[...] = root / root.sum(axis=-1, keepdims=True)
        out_leaves[...] = leaves / leaves.sum(axis=-1, keepdims=True)
        return out

    def path_values(self, edge_values: np.ndarray, log: bool) -> tuple[np.ndarray, np.ndarray]:
        """(root words' values (..., R), concept paths' values (..., C, 2)) from per-edge values: the sum of log
        values along the path (``log``: the path's log value), or the product."""
        R = self.num_root_children - self.num_concepts
        root, leaves = self._split(edge_values)
        words, concepts = root[..., :R], root[..., R:]
        if log:
            return words, concepts[..., :, None] + leaves
        return words, concepts[..., :, None] * leaves

    def word_values(self, edge_values: np.ndarray) -> np.ndarray:
        """(..., V): for every word the sum of its paths' values (products of per-edge values)."""
        words, paths = self.path_values(edge_values, log=False)
        out = np.zeros(edge_values.shape[:-1] + (self.vocab_size,))
        out[..., self.root_words] = words
        flat = paths.reshape(paths.shape[:-2] + (-1,))
        order, starts, linked = self._paths_by_word
        out[..., linked] = np.add.reduceat(flat[..., order], starts, axis=-1) if len(order) else 0.0
        return out

    def log_word_values(self, log_edges: np.ndarray) -> np.ndarray:
        """(..., V): for every word log sum over its paths of exp(the path's log value), a log-sum-exp per word, so
        a word whose paths' values all underflow (E_q[log pi] of -1e4 on an edge with a tiny prior) keeps a finite
        log weight."""
        words, paths = self.path_values(log_edges, log=True)
        out = np.empty(log_edges.shape[:-1] + (self.vocab_size,))
        out[..., self.root_words] = words
        order, starts, linked = self._paths_by_word
        if len(order):
            out[..., linked] = _log_sum_exp_groups(paths.reshape(paths.shape[:-2] + (-1,))[..., order], starts)
        return out

    @cached_property
    def _paths_by_word(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The concept paths (flat index c * 2 + j) grouped by their word: ``(order, group starts, group words)``."""
        ids = self.concept_words.ravel()
        order = np.argsort(ids, kind="stable")
        linked, starts = np.unique(ids[order], return_index=True)
        return order, starts, linked

    def topic_terms(self, lambda_k: np.ndarray, eta_k: np.ndarray):
        """``(E_q[log pi_k] per edge, prior term, entropy term)`` of one topic: sums over the root's Dirichlet
        and every concept's (eq 5.5's topic part of the ELBO)."""
        lambda_k = np.asarray(lambda_k, dtype=np.float64)
        R = self.num_root_children
        elog_root = dirichlet_expectation(lambda_k[:R])
        prior_term = dirichlet_prior_term(eta_k[:R], elog_root)
        entropy_term = -neg_entropy(lambda_k[:R], elog_root)
        if self.num_concepts == 0:
            return elog_root, prior_term, entropy_term
        lam, eta = lambda_k[R:].reshape(-1, 2), eta_k[R:].reshape(-1, 2)
        elog_leaves = digamma(lam) - digamma(lam.sum(axis=1))[:, None]
        normaliser = lambda mu: gammaln(mu.sum(axis=1)) - gammaln(mu).sum(axis=1)   # noqa: E731
        prior_term += float(np.sum(normaliser(eta) + ((eta - 1.0) * elog_leaves).sum(axis=1)))
        entropy_term -= float(np.sum(normaliser(lam) + ((lam - 1.0) * elog_leaves).sum(axis=1)))
        return np.concatenate([elog_root, elog_leaves.ravel()]), prior_term, entropy_term

    def entry_name(self, entry: int) -> str:
        """What edge ``entry`` of a lambda row is, by its words (for error messages)."""
        R, C = self.num_root_children - self.num_concepts, self.num_concepts
        if entry < R:
            return f"the edge root -> word id {self.root_words[entry]}"
        if entry < R + C:
            a, b = self.concept_words[entry - R]
            return f"the edge root -> concept {entry - R} (word ids {a}, {b})"
        c, j = divmod(entry - R - C, 2)
        return f"the edge concept {c} -> word id {self.concept_words[c, j]}"

    def log_word_weights(self, lam: np.ndarray, elog: np.ndarray, mean_weights: bool) -> np.ndarray:
        """The mappers' (V,) log weights of a topic: log W_kw, W_kw = sum over w's paths of exp(E_q[log pi]) (or of
        the product of E_q[pi] with ``mean_weights``), in log space (:meth:`log_word_values`)."""
        if mean_weights:
            return self.log_word_values(np.log(self.mean_edges(lam)))
        return self.log_word_values(elog)

    def accumulator_start(self, eta_row: np.ndarray) -> np.ndarray:
        """(V,) the row a reducer adds a topic's word statistics to: beta of the root -> word edge for a word that
        hangs from the root (so its lambda is formed as LDA's), 0 for a word in concepts (split later)."""
        out = np.zeros(self.vocab_size)
        R = self.num_root_children - self.num_concepts
        out[self.root_words] = eta_row[:R]
        return out

    def parameters_from(self, totals: np.ndarray, eta_row: np.ndarray, previous_row: np.ndarray,
                        mean_weights: bool) -> np.ndarray:
        """lambda_k per edge from the word totals (:meth:`accumulator_start` + statistics): a root word's edge
        takes its total; a linked word's statistics are split over its paths in proportion to the path values the
        mappers used (from ``previous_row``), and every edge on a path gets the path's share."""
        R, C = self.num_root_children - self.num_concepts, self.num_concepts
        lam = np.array(eta_row, dtype=np.float64, copy=True)
        lam[:R] = totals[self.root_words]
        if C == 0:
            return lam
        log_edges = np.log(self.mean_edges(previous_row)) if mean_weights else \
            self.dirichlet_expectation_edges(previous_row)
        _, paths = self.path_values(log_edges, log=True)
        ids = self.concept_words.ravel()
        log_word = self.log_word_values(log_edges)
        # each concept path's share of its word's statistics, exp(log path - log W) (a softmax over the word's paths:
        # no 0/0 when every path's value underflows)
        share = np.exp(paths.ravel() - log_word[ids]) * totals[ids]
        lam[R + C:] += share
        lam[R:R + C] += share.reshape(C, 2).sum(axis=1)
        return lam

    # ---- what a model needs (topic_word, fold-in)
    def normalise(self, lam: np.ndarray) -> np.ndarray:
        """p(w | k) = sum over w's paths of prod E_q[pi] (rows sum to 1)."""
        return self.word_values(self.mean_edges(lam))

    def dirichlet_expectation(self, lam: np.ndarray) -> np.ndarray:
        """log W_kw (digamma form): what exp(E_q[log beta]) is to LDA, for the fold-in of new documents."""
        return self.log_word_values(self.dirichlet_expectation_edges(lam))


def _log_sum_exp_groups(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """log sum exp over consecutive groups of the last axis (groups begin at ``starts``), shifted by each group's
    maximum (a group whose entries are all -inf gives -inf)."""
    peak = np.maximum.reduceat(values, starts, axis=-1)
    finite = np.where(np.isfinite(peak), peak, 0.0)
    sizes = np.diff(np.append(starts, values.shape[-1]))
    total = np.add.reduceat(np.exp(values - np.repeat(finite, sizes, axis=-1)), starts, axis=-1)
    with np.errstate(divide="ignore"):
        return finite + np.log(total)
