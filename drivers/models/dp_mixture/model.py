"""The word-based Dirichlet-process mixture of documents (Wallach §4.5, Fig. 5.2) on the Gibbs engine.

One cluster per document: c_d follows the Chinese restaurant process of concentration zeta (5.27; prior
(5.29)/(5.30), exchangeable), a cluster's word distribution phi_c ~ Dir(beta u) with u uniform over the V words
(the base measure G_0 of (5.40), kept uniform as the thesis advises for word distributions, §3.5.2), and every
word of document d is drawn from phi_{c_d}. The thesis also gives every document its own phi_d ~ Dir(beta'
phi_{c_d}) and puts a hierarchy on u, joined by the minimal path assumption; here the document level is its
cluster's (beta' -> infinity) and u uniform, so the collapsed joint is exact,

    P(w, c) = zeta^C prod_c (N_c - 1)! / prod_{d=1}^{D} (zeta + d - 1)
              x prod_c Gamma(V beta) / Gamma(T_c + V beta) prod_w Gamma(N_cw + beta) / Gamma(beta),

and the sampler below leaves it invariant (tested by enumeration). ``beta`` is the per-word prior (the
engine's convention), N_c a cluster's documents, T_c its tokens, N_cw its count of word w.

Gibbs sampling (the cluster step (5.42)-(5.44)): every document, treated as the last to arrive, leaves its
cluster and joins cluster c with probability proportional to N_c DM(w_d | c), or a new cluster with
zeta DM(w_d | empty) (:func:`drivers.models.dp_mixture.kernels.dp_sweep`). On the engine (AD-LDA) a partition
sweeps its documents on its private copy of the clusters; a new cluster gets a provisional id, a hash of its
founding document and the sweep's seed, in the upper half of the id space. Between synchronisations the
driver's global step gives the clusters with documents the ids 0..C-1 in the order of their ids (so the
partitions' new clusters come last, in the order of their provisional ids) and removes the empty ones: a
function of the summed tables only, never of a worker or the time. It then samples zeta and beta by the
thesis' slice sampler (Alg. 3.2, 5 iterations, in log space, §4.6) under P(c | zeta) P(w | c, beta) and a vague
Gamma(1, 1000) hyperprior on each (the thesis gives none; P(c | zeta) alone is improper in log zeta for C = 1).

Global statistics (:mod:`inference.gibbs.tables`), keyed by cluster id: ``cluster_words`` (C x V word counts)
and ``cluster_docs`` (documents per cluster); derived: ``cluster_tokens`` (T_c). A partition's state is
``cluster``: every document's cluster id (int64).

Outputs, of the final state (the thesis clamps one training sample; cluster labels mean nothing across
samples): ``topic_word.npy`` the clusters' predictive word distributions (N_cw + beta) / (T_c + V beta), largest
cluster first; ``doc_topics.parquet`` every document's membership P(c_d = c | c_-d, w) over the clusters (the
weights of the cluster step with the new cluster left out, renormalised); ``doc_clusters.parquet`` its sampled
cluster, that cluster's membership probability and the probability of a new cluster; ``cluster_words.npy`` and
``cluster_docs.npy`` the counts the predictive needs. Held-out documents (``evaluate``) are scored exactly by
the mixture's predictive given the trained clusters: with document completion log p(scored | observed) =
log sum_c pi_c DM(observed + scored | c) - log sum_c pi_c DM(observed | c), pi_c = N_c / (D + zeta) and
zeta / (D + zeta) for a new cluster (every word scored: log sum_c pi_c DM(w_d | c)); ``infer`` gives a new
document its posterior over the clusters and assigns it to the most probable (-1: a new cluster).
"""
from __future__ import annotations

import math

import numpy as np

from drivers.models.dp_mixture.kernels import (document_bags, dp_sweep, log_partition_prior,
                                                log_words_given_clusters, membership_log_weights, slice_sample)
from inference import left_to_right
from inference.constraints import POSITIVE
from inference.gibbs import cluster_ids
from inference.gibbs.heldout import split_observed
from inference.heldout import document_seed
from inference.gibbs.model import GibbsModel, SegmentedBlock
from inference.gibbs.tables import CountTable, KeyedCounts, merge_keyed
from inference.options import ModelOption

DEFAULT_BETA = 0.1
DEFAULT_ZETA = 1.0
#: the hyperprior of zeta and beta: Gamma(shape 1, scale HYPER_SCALE), vague
HYPER_SCALE = 1000.0
#: slice-sampling iterations per global step (the thesis: 5 per Gibbs iteration, §4.6) and the widths in log space
SLICE_ITERATIONS = 5
SLICE_WIDTH = 1.0


def _log_normalised(logw: np.ndarray) -> np.ndarray:
    """Rows of log weights -> probabilities."""
    top = logw.max(axis=1, keepdims=True)
    p = np.exp(logw - top)
    return p / p.sum(axis=1, keepdims=True)


class DPMixture(GibbsModel):
    """Word-based DP mixture of documents (Wallach §4.5); ``num_topics``: the clusters of the random start."""

    #: a revised document leaves the chain by these axes (inference.gibbs.continuation)
    state_axes = {"cluster": "document"}

    name = "dp-mixture"
    options = (ModelOption("beta", "symmetric prior of a cluster's word distribution (per word; initial value "
                                   "when sampled)", constraint=POSITIVE),
               ModelOption("zeta", "concentration of the Dirichlet process over clusters (initial value when "
                                   "sampled)", constraint=POSITIVE))
    document_files = ("doc_clusters.parquet",)
    array_files = ("cluster_words", "cluster_docs")
    heldout_protocol = ("the mixture's exact predictive given the trained clusters: log p(unseen | observed) with "
                        "document completion, log p(w_d) with every word scored")

    def __init__(self, num_topics: int, vocab_size: int):
        super().__init__(num_topics, vocab_size)
        #: cluster ids are below id_space (a keyed table's rows x V columns fit int64 indices); the partitions'
        #: new clusters take provisional ids in its upper half
        self.id_space = cluster_ids.id_space(vocab_size)
        self.trained = None     # the final clusters: ids, words (C x V), docs (C,), largest first; and hyper

    # ---- hyperparameters
    def initial_hyper(self, beta=None, zeta=None, sample_hyper=True, slice_iterations=SLICE_ITERATIONS) -> dict:
        """``beta`` (per word) and ``zeta`` > 0, sampled after every synchronisation unless ``sample_hyper`` is
        false."""
        b = DEFAULT_BETA if beta is None else float(beta)
        z = DEFAULT_ZETA if zeta is None else float(zeta)
        for key, value in (("beta", b), ("zeta", z)):
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{key} must be a positive number, got {value}")
        if int(slice_iterations) < 1:
            raise ValueError("slice_iterations must be at least 1")
        return {"beta": b, "zeta": z, "sample_hyper": bool(sample_hyper), "slice_iterations": int(slice_iterations)}

    # ---- the tables
    def count_tables(self) -> tuple:
        return (CountTable("cluster_words", self.id_space, self.vocab_size, "keyed", cells_per_token=1),
                CountTable("cluster_docs", self.id_space, 1, "keyed", cells_per_token=1))

    def table_counts(self, block: SegmentedBlock, state: dict, local) -> dict:
        clusters, row = np.unique(state["cluster"], return_inverse=True)
        row = row.ravel()
        lengths = np.diff(block.token_ptr())
        words = np.zeros((clusters.shape[0], self.vocab_size), dtype=np.int32)
        np.add.at(words, (np.repeat(row, lengths), block.words), 1)
        docs = np.bincount(row, minlength=clusters.shape[0]).astype(np.int32)[:, None]
        return {"cluster_words": (clusters, words), "cluster_docs": (clusters, docs)}

    def derive(self, tables: dict) -> dict:
        words, docs = tables["cluster_words"], tables["cluster_docs"]
        if not np.array_equal(words.keys, docs.keys):
            raise ValueError(f"{self.name}: clusters with documents and clusters with words differ")
        return {"cluster_tokens": words.counts.sum(axis=1, dtype=np.int64)}

    def initial_state(self, block: SegmentedBlock, hyper: dict, seed: int) -> dict:
        """The sequential start: the partition's documents in order, each treated as the last to arrive (the
        cluster step from empty clusters), with at most ``num_topics`` clusters opened (the thesis starts its
        cluster model from LDA's topics and gives the word mixture no start)."""
        state = {"cluster": np.full(block.n_docs, -1, dtype=np.int64)}
        empty = KeyedCounts.empty(self.vocab_size)
        tables = {"cluster_words": empty, "cluster_docs": KeyedCounts.empty(1)}
        self._cluster_step(block, state, hyper, tables, {"cluster_tokens": np.zeros(0, np.int64)}, seed,
                           self.num_topics)
        return state

    def check_state(self, block: SegmentedBlock, state: dict) -> None:
        cluster_ids.check_clusters(state, block.n_docs, self.id_space, self.name)

    # ---- the sweep
    def sweep_tables(self, block, state, hyper, tables, derived, seed) -> None:
        """The cluster step for every document of the block, on the partition's copies of the tables (updated
        in place: the partition's new clusters under provisional ids, its emptied ones gone)."""
        self._cluster_step(block, state, hyper, tables, derived, seed, np.iinfo(np.int64).max)

    def _cluster_step(self, block, state, hyper, tables, derived, seed, max_clusters) -> None:
        words_table, docs_table = tables["cluster_words"], tables["cluster_docs"]
        keys, C = words_table.keys, words_table.nnz
        placed = state["cluster"] >= 0
        rows = np.where(placed, np.searchsorted(keys, state["cluster"]), -1)
        if np.any(rows[placed] >= C) or np.any(keys[rows[placed]] != state["cluster"][placed]):
            raise ValueError(f"{self.name}: a document's cluster is not in the tables (a directive was lost)")
        capacity = C + 16
        counts = np.zeros((capacity, self.vocab_size), dtype=np.int32)
        counts[:C] = words_table.counts
        totals = np.zeros(capacity, dtype=np.int64)
        totals[:C] = derived["cluster_tokens"]
        sizes = np.zeros(capacity, dtype=np.int64)
        sizes[:C] = docs_table.counts[:, 0]
        founder = np.full(capacity, -1, dtype=np.int64)
        bags = document_bags(block.token_ptr(), block.words, self.vocab_size)
        uniforms = np.random.default_rng(seed).random(block.n_docs)
        start, used = 0, C
        while start >= 0:
            start, used = dp_sweep(*bags, rows, counts, totals, sizes, used, founder, float(hyper["zeta"]),
                                   float(hyper["beta"]), uniforms, start, max_clusters)
            if start >= 0:      # more rows for new clusters
                grow = counts.shape[0]
                counts = np.vstack([counts, np.zeros((grow, self.vocab_size), dtype=np.int32)])
                totals, sizes = np.r_[totals, np.zeros(grow, np.int64)], np.r_[sizes, np.zeros(grow, np.int64)]
                founder = np.r_[founder, np.full(grow, -1, np.int64)]
        ids = np.concatenate([keys, cluster_ids.provisional_ids(self.id_space, block.doc_ids[founder[C:used]], seed)])
        state["cluster"] = ids[rows]
        live = np.flatnonzero(sizes[:used] > 0)
        merged_words = merge_keyed(self.vocab_size, ids[live], counts[live])
        tables["cluster_words"] = merged_words
        tables["cluster_docs"] = merge_keyed(1, ids[live], sizes[live][:, None])
        derived["cluster_tokens"] = merged_words.counts.sum(axis=1, dtype=np.int64)

    # ---- the driver's global step: ids, hyperparameters
    def global_step(self, tables, hyper, stats, seed):
        words, docs = tables["cluster_words"], tables["cluster_docs"]
        directive = cluster_ids.renumbering(words.keys)
        if directive is not None:
            tables = {"cluster_words": KeyedCounts(directive["new"], words.counts),
                      "cluster_docs": KeyedCounts(directive["new"], docs.counts)}
        if hyper.get("sample_hyper", True):
            hyper = self.sample_hyper(tables, hyper, np.random.default_rng(seed))
        return tables, hyper, directive

    def apply_directive(self, block, state, directive) -> None:
        state["cluster"] = cluster_ids.renumbered(state["cluster"], directive, self.name)

    def log_hyper_density(self, tables: dict):
        """log P(c | zeta) + log P(w | c, beta) + the log hyperprior, as a function of (log zeta, log beta)."""
        words, docs = tables["cluster_words"], tables["cluster_docs"]
        C, D = words.nnz, int(docs.counts.sum())
        cells = words.counts[words.counts > 0]
        cell_values, cell_counts = np.unique(cells, return_counts=True)
        total_values, total_counts = np.unique(words.counts.sum(axis=1, dtype=np.int64), return_counts=True)

        def density(x):
            zeta, beta = math.exp(x[0]), math.exp(x[1])
            if not (1e-300 < zeta < 1e300 and 1e-300 < beta < 1e300):
                return -math.inf
            prior = x[0] - zeta / HYPER_SCALE + x[1] - beta / HYPER_SCALE    # Gamma(1, s) in log space
            return prior + log_partition_prior(zeta, C, D) + log_words_given_clusters(
                beta, self.vocab_size, cell_values, cell_counts, total_values, total_counts, C)
        return density

    def sample_hyper(self, tables: dict, hyper: dict, rng: np.random.Generator) -> dict:
        """zeta and beta by slice sampling (Alg. 3.2) of their joint posterior, in log space."""
        x = slice_sample(self.log_hyper_density(tables), np.log([hyper["zeta"], hyper["beta"]]), rng,
                         np.full(2, SLICE_WIDTH), int(hyper.get("slice_iterations", SLICE_ITERATIONS)))
        return dict(hyper, zeta=float(math.exp(x[0])), beta=float(math.exp(x[1])))

    def loglik(self, tables, derived, hyper) -> float:
        """log P(w | c, beta), the clusters' Dirichlet-multinomials."""
        words = tables["cluster_words"]
        cell_values, cell_counts = np.unique(words.counts[words.counts > 0], return_counts=True)
        total_values, total_counts = np.unique(derived["cluster_tokens"], return_counts=True)
        return log_words_given_clusters(float(hyper["beta"]), self.vocab_size, cell_values, cell_counts,
                                        total_values, total_counts, words.nnz)

    # ---- outputs: the final state
    def summarise_sample(self, summary, tables, derived, hyper) -> np.ndarray:
        return np.zeros(0)      # the outputs are of the final state

    def topic_word_of_samples(self, summary, samples, tables, derived, hyper) -> np.ndarray:
        ids, words, docs = self.ordered(tables)
        beta = float(hyper["beta"])
        totals = words.sum(axis=1, dtype=np.int64)
        return (words + beta) / (totals + self.vocab_size * beta)[:, None]

    @staticmethod
    def ordered(tables: dict):
        """The clusters of the tables, largest first (ties: smaller id first): ``(ids, words (C x V), docs)``."""
        words, docs = tables["cluster_words"], tables["cluster_docs"]
        order = np.lexsort((words.keys, -docs.counts[:, 0].astype(np.int64)))
        return words.keys[order], words.counts[order], docs.counts[order, 0].astype(np.int64)

    def accumulate_sample(self, block, state, hyper, acc) -> dict:
        return dict(acc, samples=acc["samples"] + 1)

    def bind_result(self, result) -> None:
        ids, words, docs = self.ordered(result.tables)
        self.trained = {"ids": ids, "words": np.ascontiguousarray(words), "docs": docs, "hyper": dict(result.hyper)}

    def saved_arrays(self) -> dict:
        return {"cluster_words": self.trained["words"], "cluster_docs": self.trained["docs"]}

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        words = np.ascontiguousarray(arrays["cluster_words"], dtype=np.int32)
        self.trained = {"ids": np.arange(words.shape[0], dtype=np.int64), "words": words,
                        "docs": np.asarray(arrays["cluster_docs"], dtype=np.int64), "hyper": dict(meta["hyper"])}

    def describe(self) -> dict:
        docs = self.trained["docs"]
        return {"topics": int(docs.shape[0]), "clusters": int(docs.shape[0]), "initial_clusters": self.num_topics,
                "cluster_sizes": docs.tolist()}

    def membership(self, block: SegmentedBlock, own: np.ndarray) -> np.ndarray:
        """(D, C + 1) P(c_d = c | the trained clusters) (5.42): the C clusters in output order, then a new one;
        ``own``: every document's row among them, taken out first (-1: a new document)."""
        t = self.trained
        bags = document_bags(block.token_ptr(), block.words, self.vocab_size)
        words = t["words"].copy()
        return _log_normalised(membership_log_weights(
            *bags, own.astype(np.int64), words, words.sum(axis=1, dtype=np.int64), t["docs"].copy(),
            float(t["hyper"]["zeta"]), float(t["hyper"]["beta"])))

    def _own_rows(self, state: dict) -> np.ndarray:
        ids = self.trained["ids"]
        order = np.argsort(ids)
        return order[np.searchsorted(ids, state["cluster"], sorter=order)]

    def document_proportions(self, item: dict):
        block = item["block"]
        if item.get("state") is None:                       # infer: the posterior of infer_sums
            return item["acc"]["doc"], item["acc"]["seg"]
        p = self.membership(block, self._own_rows(item["state"]))[:, :-1]
        doc = p / p.sum(axis=1, keepdims=True)
        return doc, doc[block.doc_of_segment()]

    def document_outputs(self, item: dict) -> dict:
        block = item["block"]
        return cluster_ids.doc_clusters(block.doc_ids, item, self._own_rows,
                            lambda _state, clusters: self.membership(block, clusters))

    # ---- the predictive
    def _new_document_log_weights(self, block: SegmentedBlock) -> np.ndarray:
        """(D, C + 1) log N_c DM(w_d | c) of every document under the trained clusters, then log zeta DM(w_d | new)."""
        t = self.trained
        words = t["words"].copy()
        return membership_log_weights(*document_bags(block.token_ptr(), block.words, self.vocab_size),
                                      np.full(block.n_docs, -1, dtype=np.int64), words,
                                      words.sum(axis=1, dtype=np.int64), t["docs"].copy(), float(t["hyper"]["zeta"]),
                                      float(t["hyper"]["beta"]))

    def _log_mixture(self, block: SegmentedBlock) -> np.ndarray:
        """(D,) log sum_c pi_c DM(w_d | c) of every document under the trained clusters."""
        t = self.trained
        zeta, D = float(t["hyper"]["zeta"]), float(t["docs"].sum())
        logw = self._new_document_log_weights(block)
        top = logw.max(axis=1)
        return top + np.log(np.exp(logw - top[:, None]).sum(axis=1)) - math.log(D + zeta)

    def heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        """Exact: log p(scored | observed) of every document (every word when ``schedule.observed`` is None)."""
        n_docs = float(block.n_docs)
        if schedule.observed is None:
            return np.array([float(self._log_mixture(block).sum()), float(block.n_tokens), n_docs])
        observed, scored = split_observed(block, schedule.observed, seed)
        if scored.n_tokens == 0:
            return np.array([0.0, 0.0, n_docs])
        both = _concatenated(observed, scored)
        loglik = self._log_mixture(both).sum() - self._log_mixture(observed).sum()
        return np.array([float(loglik), float(scored.n_tokens), n_docs])

    def sample_word_logliks(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        """The harmonic mean's samples: ``schedule.samples`` clusters of every document drawn from their exact
        posterior (5.42) (no chain needed; seeded by the document), log DM(w_d | c^(s)) of each."""
        t = self.trained
        logw = self._new_document_log_weights(block)
        log_prior = np.log(np.r_[t["docs"], float(t["hyper"]["zeta"])].astype(np.float64))
        out = np.empty((schedule.samples, block.n_docs))
        for d in range(block.n_docs):
            p = np.exp(logw[d] - logw[d].max())
            draws = np.random.default_rng(document_seed(seed, str(block.doc_ids[d]))).choice(
                p.shape[0], size=schedule.samples, p=p / p.sum())
            out[:, d] = logw[d, draws] - log_prior[draws]
        return out

    def left_to_right(self, block, hyper, phi_vk, settings) -> left_to_right.LeftToRightScores:
        """Exact: the document's one latent variable, its cluster, takes C + 1 values (the trained clusters and a
        new one), so p(w_d) = sum_c pi_c DM(w_d | c) = prod_n p(w_n | w_<n) is summed out, no particles."""
        return left_to_right.exact_scores(block, self.vocab_size, self._log_mixture,
                                          "exact: the document's cluster summed out (5.42), no particles")

    def infer_sums(self, block, hyper, phi_vk, schedule, seed, partition) -> dict:
        """The posterior over the trained clusters of every new document (exact: no sampling)."""
        p = self.membership(block, np.full(block.n_docs, -1, dtype=np.int64))
        existing = p[:, :-1] / p[:, :-1].sum(axis=1, keepdims=True)
        best = np.argmax(p, axis=1)
        cluster = np.where(best == p.shape[1] - 1, -1, best).astype(np.int64)
        return {"doc": existing, "seg": existing[block.doc_of_segment()], "samples": np.ones(1),
                "cluster": cluster, "probability": p[np.arange(block.n_docs), best], "new_cluster": p[:, -1]}


def _concatenated(first: SegmentedBlock, second: SegmentedBlock) -> SegmentedBlock:
    """One segment per document holding its tokens of both blocks (the same documents)."""
    a, b = first.token_ptr(), second.token_ptr()
    pieces = []
    for d in range(first.n_docs):
        pieces += [first.words[a[d]:a[d + 1]], second.words[b[d]:b[d + 1]]]
    words = np.concatenate(pieces).astype(np.int32) if pieces else np.zeros(0, np.int32)
    ptr = a + b
    return SegmentedBlock(first.doc_ids, np.arange(first.n_docs + 1, dtype=np.int64), ptr.astype(np.int64), words)
