"""The cluster-based topic model (Wallach §5.3, Fig. 5.1; extract §4.4) on the Gibbs engine.

Documents fall into latent clusters by the Chinese restaurant process of concentration zeta (5.27; prior
(5.29)/(5.30)); each cluster has a topic base measure m_c ~ Dir(alpha1 m) with m ~ Dir(alpha0 u) (5.25)/(5.26),
a document's topic distribution theta_d ~ Dir(alpha m_{c_d}) (5.18), and every token's topic z ~ theta_d, its
word w ~ phi_z with phi_t ~ Dir(beta u) (u uniform, as the thesis advises for topics, pitfall 7; ``beta`` per
word, the engine's convention). theta, m_c and m are integrated out with a path assumption, which gives the
predictive (5.7) of a topic (:mod:`drivers.models.cluster_lda.kernels`): ``--path minimal`` (the default, the
thesis' reported runs) or ``maximal``.

Gibbs sampling (5.31)-(5.33), :func:`~drivers.models.cluster_lda.kernels.cluster_lda_sweep`: per document the
cluster step (N_c P(z_d | c), or zeta P(z_d | empty) for a new cluster, P(z_d | c) by adding the document's topics
one at a time) and the topic step of its tokens. On the engine (AD-LDA) a partition sweeps its documents on its
private copy of the tables; a new cluster gets a provisional id and the driver's global step numbers the clusters
0..C-1 and removes the empty ones (:mod:`inference.gibbs.cluster_ids`), as for the DP mixture. The random start:
each document in turn draws its topics from the hierarchical predictive of a document in no cluster, then the
cluster step (at most ``--initial-clusters`` clusters opened); the thesis starts from LDA's topics instead:
``--one-cluster-iterations N`` (:mod:`drivers.models.cluster_lda.one_cluster`). Hyperparameters, tables, state
and outputs: the package's docstring (:mod:`drivers.models.cluster_lda`).
"""
from __future__ import annotations

import math

import numpy as np

from drivers.models.cluster_lda.authors import Authors, AuthorVariant, author_counts
from drivers.models.cluster_lda.evidence import SequentialEvidence, pack
from drivers.models.cluster_lda.kernels import (cluster_lda_sweep, log_seating, membership_log_weights,
                                                path_counts, predictive_theta)
from drivers.models.cluster_lda.left_to_right import PROTOCOL, cluster_lda_scores
from drivers.models.cluster_lda import one_cluster
from inference.constraints import AT_LEAST_1, POSITIVE, StrOptions
from inference.dm.evidence import log_evidence
from inference.dm.histograms import CountHistograms
from inference.dm.slice import sample_concentrations
from inference.gibbs import cluster_ids, harmonic_mean
from inference.gibbs.heldout import frozen_chain
from inference.gibbs.model import GibbsModel, SegmentedBlock
from inference.gibbs.tables import CountTable, KeyedCounts, merge_keyed
from inference.left_to_right import LeftToRightScores
from inference.options import ModelOption

DEFAULTS = {"beta": 0.01, "alpha": 1.0, "alpha1": 10.0, "alpha0": 10.0, "zeta": 1.0, "eta1": 1.0, "eta0": 1.0}
PATHS = ("minimal", "maximal")
#: the hyperprior of every sampled concentration: Gamma(shape 1, scale HYPER_SCALE), vague
HYPER_SCALE = 1000.0
SLICE_ITERATIONS = 5
#: the concentrations slice-sampled together (Alg. 3.2), each group under its own factor of the evidence
TOPIC_CONCENTRATIONS = ("alpha_doc", "alpha1", "alpha0")
AUTHOR_CONCENTRATIONS = ("eta1", "eta0")


class ClusterLDA(AuthorVariant, GibbsModel):
    """Cluster-based topic model (Wallach §5.3): ``num_topics`` topics, clusters found by a Dirichlet process."""
    name = "cluster-lda"
    state_axes = {"z": "token", "cluster": "document", "theta": "document"}     # a revision's way out of the chain
    options = (ModelOption("beta", "symmetric prior of a topic's word distribution (per word; initial value when "
                                   "sampled)", constraint=POSITIVE),
               ModelOption("alpha1", "concentration of a cluster's topic distribution around the corpus' (initial "
                                     "value when sampled)", constraint=POSITIVE),
               ModelOption("alpha0", "concentration of the corpus' topic distribution around uniform (initial value "
                                     "when sampled)", constraint=POSITIVE),
               ModelOption("zeta", "concentration of the Dirichlet process over clusters (initial value when "
                                   "sampled)", constraint=POSITIVE),
               ModelOption("path", "path assumption of the topic hierarchy: minimal (type counts, default) or "
                                   "maximal (token counts)", type=str, constraint=StrOptions(PATHS)),
               ModelOption("initial_clusters", "most clusters the random start opens (default: no limit)", type=int,
                           constraint=AT_LEAST_1),
               ModelOption("one_cluster_iterations", "the first N iterations keep every document in one cluster: "
                           "the thesis' hierarchical LDA, from which it starts (N >= --iterations: that LDA "
                           "baseline throughout)", type=int, metavar="N", constraint=AT_LEAST_1),
               ModelOption("author_column", "the author variant (Wallach 5.4): the documents' authors from this column "
                                            "of docs.parquet (prepare --keep-columns), names in a list or separated "
                                            "by ';'", type=str, metavar="COLUMN"),
               ModelOption("eta1", "author variant: concentration of a cluster's author distribution around the "
                                   "corpus' (initial value when sampled)", constraint=POSITIVE),
               ModelOption("eta0", "author variant: concentration of the corpus' author distribution around uniform "
                                   "(initial value when sampled)", constraint=POSITIVE))
    construction_options = ("path", "author_column")
    document_files = ("doc_clusters.parquet",)
    array_files = ("cluster_topics", "cluster_docs", "cluster_authors")
    stats_by_partition = True       # the documents' clusters and topics, in order: the sequential evidence

    def __init__(self, num_topics: int, vocab_size: int, path: str = "minimal", author_column: str | None = None):
        super().__init__(num_topics, vocab_size)
        if path not in PATHS:
            raise ValueError(f"path must be minimal or maximal, got {path!r}")
        self.path = path
        self.maximal = path == "maximal"
        self.author_column = author_column
        self.set_authors(Authors([], {}))
        self.trained = None     # the final clusters, largest first: counts (C x T), docs (C,), ids; hyper

    # ---- hyperparameters
    def initial_hyper(self, beta=None, alpha=None, alpha1=None, alpha0=None, zeta=None, eta1=None, eta0=None,
                      initial_clusters=None, sample_hyper=True, optimize_alpha=True,
                      slice_iterations=SLICE_ITERATIONS, one_cluster_iterations=None) -> dict:
        """The concentrations (> 0; initial values when sampled) and the start's cap (0: none); ``sample_hyper``
        false keeps every value, ``optimize_alpha`` false (``--fixed-alpha``) keeps alpha, alpha1 and alpha0."""
        given = {"beta": beta, "alpha": alpha, "alpha1": alpha1, "alpha0": alpha0, "zeta": zeta, "eta1": eta1,
                 "eta0": eta0}
        hyper = {}
        for key, value in given.items():
            value = DEFAULTS[key] if value is None else value
            if isinstance(value, (list, tuple)) or not math.isfinite(float(value)) or float(value) <= 0:
                raise ValueError(f"{key} must be a positive number, got {value}")
            hyper["alpha_doc" if key == "alpha" else key] = float(value)      # model.json's alpha is K values
        if initial_clusters is not None and int(initial_clusters) < 1:
            raise ValueError("initial_clusters must be at least 1")
        if int(slice_iterations) < 1:
            raise ValueError("slice_iterations must be at least 1")
        return dict(hyper, initial_clusters=int(initial_clusters or 0), sample_hyper=bool(sample_hyper),
                    sample_alpha=bool(optimize_alpha), slice_iterations=int(slice_iterations),
                    **one_cluster.phase_hyper(one_cluster_iterations, hyper))

    # ---- the tables
    def count_tables(self) -> tuple:
        T = self.num_topics
        return (CountTable("nwk", self.vocab_size, T, "dense", cells_per_token=1),
                CountTable("clusters", self.id_space, self.columns, "keyed", cells_per_token=2))

    def table_counts(self, block: SegmentedBlock, state: dict, local) -> dict:
        ids, row = np.unique(state["cluster"], return_inverse=True)
        row = row.ravel()
        ptr = block.token_ptr()
        level, _ = path_counts(ptr, state["z"], row, ids.shape[0], self.num_topics, self.maximal)
        authors = author_counts(*self.authors.of_block(block.doc_ids), row, ids.shape[0], self.num_authors)
        counts = np.hstack([np.bincount(row, minlength=ids.shape[0])[:, None], level, authors]).astype(np.int32)
        return {"nwk": self.shared_counts(block, state, local), "clusters": (ids, counts)}

    def derive(self, tables: dict) -> dict:
        levels = tables["clusters"].counts[:, 1:1 + self.num_topics]
        nwk = tables["nwk"]
        nk = nwk.sum(axis=0, dtype=np.int64)
        kt = self.corpus_level(levels)
        return {"nk": nk, "corpus_topics": kt, "corpus_total": np.array([kt.sum()], dtype=np.int64)}

    def corpus_level(self, levels: np.ndarray) -> np.ndarray:
        """K_t from the cluster level (C x T): minimal, the clusters using t; maximal, the tokens of t."""
        return levels.sum(axis=0, dtype=np.int64) if self.maximal else (levels > 0).sum(axis=0).astype(np.int64)

    def initial_state(self, block: SegmentedBlock, hyper: dict, seed: int) -> dict:
        T, V = self.num_topics, self.vocab_size
        state = {"z": np.full(block.n_tokens, -1, dtype=np.int32), "cluster": np.full(block.n_docs, -1, np.int64)}
        tables = {"nwk": np.zeros((V, T), dtype=np.int32),
                  "clusters": KeyedCounts.empty(self.columns)}
        derived = {"nk": np.zeros(T, np.int64), "corpus_topics": np.zeros(T, np.int64),
                   "corpus_total": np.zeros(1, np.int64)}
        cap = one_cluster.max_clusters(hyper, int(hyper.get("initial_clusters", 0)) or np.iinfo(np.int64).max)
        self._cluster_sweep(block, state, hyper, tables, derived, seed, cap)
        return state

    def check_state(self, block: SegmentedBlock, state: dict) -> None:
        super().check_state(block, state)
        cluster_ids.check_clusters(state, block.n_docs, self.id_space, self.name)

    # ---- the sweep
    def sweep_tables(self, block, state, hyper, tables, derived, seed) -> None:
        """The cluster and topic steps of every document of the block, on the partition's copies of the tables
        (updated in place: the partition's new clusters under provisional ids, its emptied ones gone)."""
        if one_cluster.reseats(hyper):
            one_cluster.unseat(state, tables, derived, self.columns)
        self._cluster_sweep(block, state, hyper, tables, derived, seed, one_cluster.max_clusters(hyper))

    def _cluster_sweep(self, block, state, hyper, tables, derived, seed, max_clusters) -> None:
        T = self.num_topics
        maximal = self.maximal
        table = tables["clusters"]
        keys, C = table.keys, table.nnz
        placed = state["cluster"] >= 0
        rows = np.where(placed, np.searchsorted(keys, state["cluster"]), -1).astype(np.int64)
        if np.any(rows[placed] >= C) or np.any(keys[rows[placed]] != state["cluster"][placed]):
            raise ValueError(f"{self.name}: a document's cluster is not in the tables (a directive was lost)")
        capacity = C + 16
        sizes = np.zeros(capacity, np.int64)
        ctk = np.zeros((capacity, T), np.int64)
        sizes[:C], ctk[:C] = table.counts[:, 0], table.counts[:, 1:1 + T]
        cat = np.zeros((capacity, self.num_authors), np.int64)
        cat[:C] = table.counts[:, 1 + T:]
        authors = list(self.author_args(block.doc_ids, cat, hyper))
        ck = ctk.sum(axis=1)
        kt = derived["corpus_topics"].astype(np.int64).copy()
        ktot = np.array([kt.sum()], dtype=np.int64)
        founder = np.full(capacity, -1, np.int64)
        ptr = block.token_ptr()
        uniforms = np.random.default_rng(seed).random(2 * block.n_tokens + block.n_docs)
        start, used = 0, C
        while start >= 0:
            start, used = cluster_lda_sweep(ptr, block.words, state["z"], rows, tables["nwk"], derived["nk"], ctk, ck,
                                            sizes, kt, ktot, used, founder, float(hyper["zeta"]),
                                            *self.concentrations(hyper),
                                            float(hyper["beta"]), maximal, np.zeros((1, 1)), False, uniforms, start,
                                            max_clusters, np.zeros((1, 1)), *authors)
            if start >= 0:      # more rows for new clusters
                grow = ctk.shape[0]
                ctk = np.vstack([ctk, np.zeros((grow, T), np.int64)])
                authors[2] = np.vstack([authors[2], np.zeros((grow, self.num_authors), np.int64)])
                authors[3] = np.r_[authors[3], np.zeros(grow, np.int64)]
                ck, sizes = np.r_[ck, np.zeros(grow, np.int64)], np.r_[sizes, np.zeros(grow, np.int64)]
                founder = np.r_[founder, np.full(grow, -1, np.int64)]
        ids = np.concatenate([keys, cluster_ids.provisional_ids(self.id_space, block.doc_ids[founder[C:used]], seed)])
        state["cluster"] = ids[rows]
        live = np.flatnonzero(sizes[:used] > 0)
        tables["clusters"] = merge_keyed(self.columns, ids[live], np.hstack([sizes[live, None], ctk[live],
                                                                             authors[2][live]]))
        derived["corpus_topics"], derived["corpus_total"] = kt, ktot

    # ---- the driver's global step: ids, hyperparameters
    def global_step(self, tables, hyper, stats, seed):
        clusters = tables["clusters"]
        directive = cluster_ids.renumbering(clusters.keys)
        if directive is not None:
            tables = dict(tables, clusters=KeyedCounts(directive["new"], clusters.counts))
        if hyper.get("sample_hyper", True):
            hyper = self.sample_hyper(tables, hyper, stats, np.random.default_rng(seed))
        return one_cluster.step(tables, hyper, directive)

    def apply_directive(self, block, state, directive) -> None:
        state["cluster"] = cluster_ids.renumbered(state["cluster"], directive, self.name)

    def samples_concentrations(self, hyper: dict) -> bool:
        """Whether alpha, alpha1, alpha0 (and the author variant's eta1, eta0) are sampled."""
        return bool(hyper.get("sample_hyper", True)) and bool(hyper.get("sample_alpha", True))

    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        """The block's documents (clusters, topics, authors, in order) for the sequential evidence
        (:func:`drivers.models.cluster_lda.evidence.pack`); nothing when the concentrations stay fixed."""
        if not self.samples_concentrations(hyper):
            return np.zeros(0)
        return pack(state["cluster"], block.token_ptr(), state["z"], *self.authors.of_block(block.doc_ids))

    def log_densities(self, tables: dict, hyper: dict, stats=None) -> dict:
        """Every group of sampled hyperparameters (a tuple of names) and its log density (up to a constant, without
        the hyperprior) as a function of their values: zeta under P(c | zeta) (5.30), beta under P(w | z) (5.15)
        and, from the partitions' documents ``stats`` (:mod:`drivers.models.cluster_lda.evidence`), alpha,
        alpha1, alpha0 under P(z | c) (5.16) and eta1, eta0 under P(a | c) (5.59), the sequential evidence the
        thesis slice-samples under (§5.3.2)."""
        clusters, nwk = tables["clusters"], tables["nwk"]
        sizes = clusters.counts[:, 0].astype(np.int64)
        C, D = clusters.nnz, int(sizes.sum())
        topics = CountHistograms(self.vocab_size).add_counts(nwk.T)         # a topic a group (Alg. 2.3)
        out = {("zeta",): lambda v: log_seating(v[0], C, np.array([D]), np.array([1])),      # (5.30)
               ("beta",): lambda v: log_evidence(topics, np.full(self.vocab_size, v[0]))}
        if not self.samples_concentrations(hyper):
            return out
        if stats is None:
            raise ValueError(f"{self.name}: sampling alpha needs the partitions' documents (partition_stats)")
        evidence = SequentialEvidence(stats, self.num_topics, self.num_authors, self.maximal)
        out[TOPIC_CONCENTRATIONS] = lambda v: evidence.log_topics(*v)
        if self.num_authors:
            out[AUTHOR_CONCENTRATIONS] = lambda v: evidence.log_authors(*v)
        return out

    def sample_hyper(self, tables: dict, hyper: dict, stats, rng: np.random.Generator) -> dict:
        """Each group of hyperparameters in turn by multidimensional slice sampling (Alg. 3.2) in log space,
        ``slice_iterations`` draws, under a vague Gamma(1, HYPER_SCALE) hyperprior on each."""
        hyper = dict(hyper)
        for keys, density in self.log_densities(tables, hyper, stats).items():
            values = sample_concentrations(lambda v, f=density: f(v) - float(np.sum(v)) / HYPER_SCALE,
                                           [hyper[key] for key in keys], rng, 1.0,
                                           int(hyper.get("slice_iterations", SLICE_ITERATIONS)))
            hyper.update({key: float(value) for key, value in zip(keys, values)})
        return hyper

    # ---- outputs: the final state
    def accumulate_sample(self, block, state, hyper, acc) -> dict:
        return dict(acc, samples=acc["samples"] + 1)

    @staticmethod
    def ordered(clusters: KeyedCounts):
        """The clusters, largest first (ties: smaller id first): ``(ids, counts (C x columns))``."""
        order = np.lexsort((clusters.keys, -clusters.counts[:, 0].astype(np.int64)))
        return clusters.keys[order], clusters.counts[order]

    def bind_result(self, result) -> None:
        ids, counts = self.ordered(result.tables["clusters"])
        T = self.num_topics
        self.trained = {"ids": ids, "levels": counts[:, 1:1 + T].astype(np.int64),
                        "authors": counts[:, 1 + T:].astype(np.int64), "docs": counts[:, 0].astype(np.int64),
                        "hyper": dict(result.hyper)}

    def saved_arrays(self) -> dict:
        return {"cluster_topics": self.trained["levels"], "cluster_docs": self.trained["docs"],
                "cluster_authors": self.trained["authors"]}

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        levels = np.asarray(arrays["cluster_topics"], dtype=np.int64)
        authors = arrays.get("cluster_authors")
        self.trained = {"ids": np.arange(levels.shape[0], dtype=np.int64), "levels": levels,
                        "authors": np.zeros((levels.shape[0], 0), np.int64) if authors is None
                        else np.asarray(authors, dtype=np.int64).reshape(levels.shape[0], -1),
                        "docs": np.asarray(arrays["cluster_docs"], dtype=np.int64), "hyper": dict(meta["hyper"])}

    def describe(self) -> dict:
        docs = self.trained["docs"]
        return {"topics": self.num_topics, "clusters": int(docs.shape[0]), "cluster_sizes": docs.tolist(),
                "path": self.path, "author_column": self.author_column, "authors": self.num_authors}

    def frozen_levels(self):
        """The trained cluster and corpus levels as the kernels take them, with a spare empty row for a new
        cluster: ``(ctk (C+1 x T), ck, sizes, kt, ktot)``."""
        t = self.trained
        levels = t["levels"]
        ctk = np.vstack([levels, np.zeros((1, self.num_topics), np.int64)])
        kt = self.corpus_level(levels)
        return ctk, ctk.sum(axis=1), np.r_[t["docs"], 0], kt, np.array([kt.sum()], dtype=np.int64)

    def _own_rows(self, state: dict) -> np.ndarray:
        ids = self.trained["ids"]
        order = np.argsort(ids)
        return order[np.searchsorted(ids, state["cluster"], sorter=order)]

    @staticmethod
    def concentrations(hyper: dict):
        """(alpha, alpha1, alpha0): the document, cluster and corpus levels' concentrations."""
        return float(hyper["alpha_doc"]), float(hyper["alpha1"]), float(hyper["alpha0"])

    def document_proportions(self, item: dict):
        block = item["block"]
        if item.get("state") is None:                       # infer: the mean over the frozen chain's samples
            n = float(item["acc"]["samples"][0])
            return item["acc"]["doc"] / n, item["acc"]["seg"] / n
        ctk, ck, _, kt, ktot = self.frozen_levels()
        theta = predictive_theta(block.token_ptr(), item["state"]["z"], self._own_rows(item["state"]), ctk, ck, kt,
                                 ktot, *self.concentrations(one_cluster.scoring_hyper(self.trained["hyper"])))
        return theta, theta[block.doc_of_segment()]

    def membership(self, block: SegmentedBlock, state: dict) -> np.ndarray:
        """(D, C + 1) the cluster step's probabilities (5.31) of the final state's documents: C clusters, a new one."""
        ctk, ck, sizes, kt, ktot = self.frozen_levels()
        hyper = one_cluster.scoring_hyper(self.trained["hyper"])
        cat = np.vstack([self.trained["authors"], np.zeros((1, self.trained["authors"].shape[1]), np.int64)])
        logw = membership_log_weights(block.token_ptr(), state["z"], self._own_rows(state), ctk, ck, sizes, kt, ktot,
                                      float(hyper["zeta"]), *self.concentrations(hyper), self.maximal,
                                      *self.author_args(block.doc_ids, cat, hyper))
        if one_cluster.never_left(hyper):       # one cluster by construction: no new one
            logw[:, -1] = -np.inf
        p = np.exp(logw - logw.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    def document_outputs(self, item: dict) -> dict:
        block = item["block"]
        return cluster_ids.doc_clusters(block.doc_ids, item, self._own_rows,
                                        lambda state, _clusters: self.membership(block, state))

    # ---- the frozen chain of held-out and new documents (inference.gibbs.heldout)
    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        """A held-out block's start: no topics, no clusters (the first frozen sweep draws them)."""
        return {"z": np.full(block.n_tokens, -1, dtype=np.int32), "cluster": np.full(block.n_docs, -1, np.int64),
                "theta": np.zeros((block.n_docs, self.num_topics))}

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        """The frozen chain's sweep (topics ``frozen_phi``, the trained clusters): training runs sweep_tables."""
        if frozen_phi is None:
            raise NotImplementedError(f"{self.name}: trained through sweep_tables")
        ctk, ck, sizes, kt, ktot = self.frozen_levels()
        C = sizes.shape[0] - 1
        one = one_cluster.never_left(hyper)            # one cluster by construction: no new one
        hyper = one_cluster.scoring_hyper(hyper)
        rows = np.full(block.n_docs, -1, np.int64)
        uniforms = np.random.default_rng(seed).random(2 * block.n_tokens + block.n_docs)
        cluster_lda_sweep(block.token_ptr(), block.words, state["z"], rows, nwk, nk, ctk, ck, sizes, kt, ktot, C,
                          np.full(C + 1, -1, np.int64), float(hyper["zeta"]), *self.concentrations(hyper),
                          float(hyper["beta"]), self.maximal, np.ascontiguousarray(frozen_phi), True,
                          uniforms, 0, 1 if one else np.iinfo(np.int64).max, state["theta"],
                          *self.author_args(block.doc_ids, np.zeros((C + 1, 0), np.int64), hyper, known=False))
        state["cluster"] = np.where(rows == C, -1, rows)       # row of the trained clusters; -1: a new one

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        return state["theta"].copy()

    def segment_topic(self, block, state, hyper) -> np.ndarray:
        return state["theta"][block.doc_of_segment()]

    def sample_word_logliks(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        """The frozen chain's (cluster, topics): sum_n log phi_{z_n}(w_n) (thesis ch. 5's harmonic mean)."""
        return harmonic_mean.topic_logliks(self, block, hyper, phi_vk, schedule, seed, partition)

    def left_to_right(self, block, hyper, phi_vk, settings) -> LeftToRightScores:
        """Particles of (cluster, topics) with the training levels frozen
        (:mod:`drivers.models.cluster_lda.left_to_right`)."""
        return LeftToRightScores(cluster_lda_scores(self, block, hyper, phi_vk, settings), PROTOCOL)

    def infer_sums(self, block, hyper, phi_vk, schedule, seed, partition) -> dict:
        """The frozen chain's document and segment proportions summed over its samples, and every document's
        most frequent cluster (-1: a new one), the fraction of samples in it and in a new cluster."""
        C = self.trained["docs"].shape[0]
        votes = np.zeros((block.n_docs, C + 1))
        acc = {"doc": np.zeros((block.n_docs, self.num_topics)),
               "seg": np.zeros((block.n_segments, self.num_topics)), "samples": np.zeros(1)}
        for state in frozen_chain(self, block, hyper, np.ascontiguousarray(phi_vk), schedule, seed, partition):
            acc["doc"] += state["theta"]
            acc["seg"] += state["theta"][block.doc_of_segment()]
            acc["samples"] += 1
            votes[np.arange(block.n_docs), np.where(state["cluster"] < 0, C, state["cluster"])] += 1
        votes /= max(acc["samples"][0], 1.0)
        best = np.argmax(votes, axis=1)
        return dict(acc, cluster=np.where(best == C, -1, best).astype(np.int64),
                    probability=votes[np.arange(block.n_docs), best], new_cluster=votes[:, C])
