"""Collapsed Gibbs sampling of tree LDA (thesis eq 5.2; Boyd-Graber et al. 2007, Hu & Boyd-Graber 2012) on the
Gibbs engine's contract: every token has a topic z and a path y among the paths of its word
(:class:`inference.tree_layout.TreeLayout`: root -> word, or root -> concept -> word), and

    (5.2)   p(z = k, y = s | .)  ∝  (n_dk + alpha_k) * prod_{i -> j in s} (n_{k,i->j} + beta_{i->j})
                                                                        / (n_{k,i} + sum_j' beta_{i->j'})

with all counts excluding the token. The shared count table is per (edge, topic) (``shared_rows`` = the tree's
edges); a node's count is the count of the edge into it (the root's: the topic's tokens, ``nk``), so nothing else
is stored. The root's prior mass is eta * V for every tree (the edge priors are built so), which keeps a tree
without concepts the same arithmetic as :func:`drivers.models.lda_gibbs.model.lda_sweep`: the same draws, bit for bit.

A word with one path draws its topic from K weights; a word with d paths from the K * d (topic, path) weights,
topics outer, paths inner, with one uniform (so the dense O(K * paths) sampler is the whole cost: dictionary trees
give 1-3 paths per word, Hu & Boyd-Graber's bucketed sampler pays off for deeper trees).
"""
from __future__ import annotations

import numba
import numpy as np

from drivers.models.lda_gibbs.model import LdaGibbs
from inference.tree_layout import TreeLayout
from inference.constraints import POSITIVE
from inference.options import ModelOption


def path_tables(tree: TreeLayout):
    """Per word its paths (CSR ``path_ptr`` (V+1,)), per path its root edge, its leaf edge (-1: the word hangs
    from the root) and the prior mass of the concept the path goes through (0 for a root word)."""
    V, C = tree.vocab_size, tree.num_concepts
    R0 = tree.num_root_children - C
    root_index = np.full(V, -1, dtype=np.int64)
    root_index[tree.root_words] = np.arange(R0)
    owners = [[] for _ in range(V)]
    for c, (a, b) in enumerate(tree.concept_words):
        owners[int(a)].append((c, 0))
        owners[int(b)].append((c, 1))
    path_ptr = np.zeros(V + 1, dtype=np.int64)
    root_edge, leaf_edge, concept = [], [], []
    for w in range(V):
        if root_index[w] >= 0:
            root_edge.append(root_index[w])
            leaf_edge.append(-1)
            concept.append(-1)
        for c, j in owners[w]:
            root_edge.append(R0 + c)
            leaf_edge.append(tree.num_root_children + 2 * c + j)
            concept.append(c)
        path_ptr[w + 1] = len(root_edge)
    return (path_ptr, np.asarray(root_edge, dtype=np.int64), np.asarray(leaf_edge, dtype=np.int64),
            np.asarray(concept, dtype=np.int64))


@numba.njit(cache=True)
def tree_init(words, num_topics, path_ptr, root_edge, leaf_edge, nek, nk, seed):
    """Uniformly random topics (and, for a word with several paths, paths); the counts go into ``nek``/``nk``."""
    np.random.seed(seed)
    N = words.shape[0]
    z = np.empty(N, dtype=np.int32)
    y = np.empty(N, dtype=np.int32)
    for i in range(N):
        k = np.random.randint(0, num_topics)
        w = words[i]
        paths = path_ptr[w + 1] - path_ptr[w]
        p = np.random.randint(0, paths) if paths > 1 else 0
        z[i] = k
        y[i] = p
        q = path_ptr[w] + p
        nek[root_edge[q], k] += 1
        if leaf_edge[q] >= 0:
            nek[leaf_edge[q], k] += 1
        nk[k] += 1
    return z, y


@numba.njit(cache=True)
def _move(nek, nk, q, k, root_edge, leaf_edge, delta):
    nek[root_edge[q], k] += delta
    if leaf_edge[q] >= 0:
        nek[leaf_edge[q], k] += delta
    nk[k] += delta


@numba.njit(cache=True)
def token_weights(out, w, ndk, nek, inv, alpha, beta, concept_mass, path_ptr, root_edge, leaf_edge, concept):
    """The unnormalised (5.2) of every (topic, path) of word ``w`` into ``out`` (topics outer, paths inner), the
    token's own counts removed; ``inv[k]`` = 1 / (n_k + eta V). Returns the number of paths."""
    K = alpha.shape[0]
    first, paths = path_ptr[w], path_ptr[w + 1] - path_ptr[w]
    for k in range(K):
        for p in range(paths):
            q = first + p
            e = root_edge[q]
            if leaf_edge[q] < 0:
                out[k * paths + p] = (ndk[k] + alpha[k]) * (nek[e, k] + beta[e]) * inv[k]
            else:
                leaf = leaf_edge[q]
                out[k * paths + p] = (ndk[k] + alpha[k]) * (nek[e, k] + beta[e]) * inv[k] \
                    * (nek[leaf, k] + beta[leaf]) / (nek[e, k] + concept_mass[concept[q]])
    return paths


@numba.njit(cache=True)
def tree_sweep(token_ptr, words, z, y, nek, nk, alpha, beta, root_mass, concept_mass, path_ptr, root_edge,
               leaf_edge, concept, seed):
    """One Gibbs cycle of eq (5.2) over every token, documents in order; ``z``, ``y``, ``nek``, ``nk`` in place.
    ``beta``: the edge priors; ``root_mass`` = eta * V; ``concept_mass[c]``: the prior mass of concept c's
    leaves."""
    np.random.seed(seed)
    K = alpha.shape[0]
    ndk = np.zeros(K, dtype=np.int64)
    inv = np.empty(K, dtype=np.float64)
    max_paths = 1
    for w in range(path_ptr.shape[0] - 1):
        max_paths = max(max_paths, path_ptr[w + 1] - path_ptr[w])
    weights = np.empty(K * max_paths, dtype=np.float64)
    cum = np.empty(K * max_paths, dtype=np.float64)
    for k in range(K):
        inv[k] = 1.0 / (nk[k] + root_mass)
    for d in range(token_ptr.shape[0] - 1):
        start, end = token_ptr[d], token_ptr[d + 1]
        ndk[:] = 0
        for i in range(start, end):
            ndk[z[i]] += 1
        for i in range(start, end):
            w = words[i]
            first = path_ptr[w]
            old = z[i]
            ndk[old] -= 1
            _move(nek, nk, first + y[i], old, root_edge, leaf_edge, -1)
            inv[old] = 1.0 / (nk[old] + root_mass)
            paths = token_weights(weights, w, ndk, nek, inv, alpha, beta, concept_mass, path_ptr, root_edge,
                                  leaf_edge, concept)
            total = 0.0
            for j in range(K * paths):
                total += weights[j]
                cum[j] = total
            u = np.random.random() * total
            new = 0
            while new < K * paths - 1 and cum[new] <= u:
                new += 1
            k, p = new // paths, new % paths
            z[i] = k
            y[i] = p
            ndk[k] += 1
            _move(nek, nk, first + p, k, root_edge, leaf_edge, 1)
            inv[k] = 1.0 / (nk[k] + root_mass)


@numba.njit(cache=True)
def edge_counts(words, z, y, path_ptr, root_edge, leaf_edge, num_edges, num_topics):
    """(E, K) int32: the tokens' counts per (edge, topic) (a partition's share of the shared table)."""
    out = np.zeros((num_edges, num_topics), dtype=np.int32)
    for i in range(words.shape[0]):
        q = path_ptr[words[i]] + y[i]
        out[root_edge[q], z[i]] += 1
        if leaf_edge[q] >= 0:
            out[leaf_edge[q], z[i]] += 1
    return out


def log_joint_words(tree: TreeLayout, nek: np.ndarray, beta: np.ndarray) -> float:
    """log p(w, y | z, beta) of the counts: per topic, a Dirichlet-multinomial for the root and for every concept
    (eq 5.1's tree part); ``nek`` (E, K)."""
    from scipy.special import gammaln

    R = tree.num_root_children
    total = 0.0
    groups = [np.arange(R)] + [np.array([R + 2 * c, R + 2 * c + 1]) for c in range(tree.num_concepts)]
    node_counts = [None] + [nek[R - tree.num_concepts + c] for c in range(tree.num_concepts)]
    for g, node in zip(groups, node_counts):
        mass = beta[g].sum()
        n = nek[g]                                            # (children, K)
        into = n.sum(axis=0) if node is None else node
        total += float(np.sum(gammaln(mass) - gammaln(into + mass))
                       + np.sum(gammaln(n + beta[g][:, None]) - gammaln(beta[g])[:, None]))
    return total


class TreeGibbs(LdaGibbs):
    """Tree LDA on the Gibbs engine: the shared table counts (edge, topic) (:func:`tree_sweep`); the state is
    every token's topic ``z`` and path ``y``. ``beta`` is eta, the prior of a root -> word edge; the other edges
    follow from it and ``link_strength`` (:meth:`inference.tree_layout.TreeLayout.edge_priors`). The tree is
    given with
    :meth:`set_tree` before anything is sampled. alpha is learnt as LDA-Gibbs learns it (Minka)."""

    #: a revised document leaves the chain by these axes (inference.gibbs.continuation)
    state_axes = {"z": "token", "y": "token"}

    name = "tlda"
    options = (ModelOption("beta", "prior of a root -> word edge (the run's eta; the other edges follow from it)",
                           constraint=POSITIVE),)
    construction_options = ()

    def __init__(self, num_topics: int, vocab_size: int, link_strength: float = 100.0):
        super().__init__(num_topics, vocab_size)
        self.link_strength = float(link_strength)
        self.tree = None

    @property
    def display_name(self) -> str:
        return f"tlda (Gibbs, {self.tree.num_concepts if self.tree is not None else '?'} concepts)"

    def set_tree(self, tree: TreeLayout) -> None:
        if tree.vocab_size != self.vocab_size:
            raise ValueError(f"the tree has {tree.vocab_size} words, the corpus {self.vocab_size}")
        self.tree = tree
        self._tables = path_tables(tree)

    def _priors(self, hyper):
        beta = self.tree.edge_priors(float(hyper["beta"]), self.link_strength)
        concept_mass = beta[self.tree.num_root_children:].reshape(-1, 2).sum(axis=1)
        return beta, concept_mass

    @property
    def shared_rows(self) -> int:
        return self.tree.parameter_size

    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        path_ptr, root_edge, leaf_edge, _ = self._tables
        z, y = tree_init(block.words, self.num_topics, path_ptr, root_edge, leaf_edge, nwk, nk, seed)
        return {"z": z, "y": y}

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        if frozen_phi is not None:          # held-out documents: topics fixed at phi, the paths do not matter
            return super().sweep(block, state, hyper, nwk, nk, seed, frozen_phi)
        beta, concept_mass = self._priors(hyper)
        path_ptr, root_edge, leaf_edge, concept = self._tables
        tree_sweep(block.token_ptr(), block.words, state["z"], state["y"], nwk, nk,
                   np.asarray(hyper["alpha"], dtype=np.float64), beta, self.vocab_size * float(hyper["beta"]),
                   concept_mass, path_ptr, root_edge, leaf_edge, concept, seed)

    def topic_totals(self, nwk: np.ndarray) -> np.ndarray:
        """A topic's tokens: the counts of the root's edges (a concept path also counts its leaf edge)."""
        return nwk[:self.tree.num_root_children].sum(axis=0, dtype=np.int64)

    def shared_counts(self, block, state, local):
        path_ptr, root_edge, leaf_edge, _ = self._tables
        counts = edge_counts(block.words, state["z"], state["y"], path_ptr, root_edge, leaf_edge,
                             self.tree.parameter_size, self.num_topics)
        rows = np.flatnonzero(counts.any(axis=1))
        return rows.astype(np.int32), counts[rows]

    def topic_word(self, nwk, nk, hyper) -> np.ndarray:
        """p(w | k) of the counts' posterior mean: per word, the sum over its paths of the product of
        (n_e + beta_e) / (n_node + beta_node) along the path."""
        beta, _ = self._priors(hyper)
        return self.tree.normalise(np.asarray(nwk, dtype=np.float64).T + beta[None, :])

    def word_loglik(self, nwk, nk, hyper) -> float:
        beta, _ = self._priors(hyper)
        return log_joint_words(self.tree, np.asarray(nwk, dtype=np.int64), beta)
