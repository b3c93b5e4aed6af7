"""The contract between the Gibbs engine and a model: data layout, state, and plug-in methods.

Data: a :class:`SegmentedBlock` holds one partition's documents as ordered
segments of tokens (word ids in the *global* vocabulary, one entry per token;
the order of tokens inside a segment carries no meaning, the order of segments
inside a document does for SeqLDA and AdaTM).

Global state: named count tables (:mod:`inference.gibbs.tables`: each dense or keyed, summed over the
partitions, exact integers independent of partition order) that the model declares (``count_tables``) and
fills from a partition's state (``table_counts``), plus values the model derives from them (``derive``, e.g.
the topic totals ``nk``). The engine derives the tables from the states, never from deltas. By default a
model has one table, ``nwk``: the topic-word counts M_{k,w} (thesis Table 5.2) as V x K int32 (row ``w`` is
the K counts of word w, so sampling a token reads one contiguous row; ``shared_rows`` rows, another row
space for a tree's edges), and one derived value, ``nk`` (K, int64 totals); the default table hooks map
onto the LDA-shaped hooks (``shared_counts``, ``topic_totals``, ``init_state``, ``sweep``, ``topic_word``,
``word_loglik``), so a model over that one table implements only those. What the tables mean is the
model's: its log-likelihood (``loglik``) and its topic-word estimate (``sample_topic_word``).

Between two synchronisations the driver may run the model's ``global_step`` on the summed tables (e.g. a DP
mixture's cluster step: create, relabel or remove clusters); its ``directive`` (JSON values and numpy arrays)
goes to every partition with the next synchronisation, and ``apply_directive`` applies it to the partition's
state before it sweeps.

Per-partition state: a ``dict[str, np.ndarray]`` owned by the model (``"z"``,
int32 (N,), is required; anything else, e.g. segment-topic customer and table
counts, is the model's business). The engine stores it as ``.npz`` without
pickle, so it must be plain numeric arrays.

Sweeps (AD-LDA, Newman et al. 2009): the engine hands a partition private
copies of the global tables and derived values (``nwk``/``nk``); the kernel
updates them as it moves tokens, so a partition sees its own changes at once and
other partitions' only at the next iteration.

Frozen topics (held-out estimation, ``infer``): ``frozen_phi`` (V x K float64,
column k = phi_k) replaces the count-based word factor
(M_{k,w} + beta) / (M_k + V beta) by ``frozen_phi[w, k]`` and the kernel must
then leave ``nwk``/``nk`` untouched; use :func:`word_weight` in kernels.

Randomness: ``seed`` is derived by the engine from (run seed, iteration,
partition) with :func:`task_seed`; kernels seed numba's generator with it
(``np.random.seed(seed)`` inside the jitted function) and draw nothing else, so
a retried Spark task reproduces its result bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from inference.gibbs.counts import count_local, topic_word_estimate, word_loglik
from inference.gibbs.tables import CountTable
from inference.options import ModelOption


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


#: settings several models share
BETA = ModelOption("beta", "symmetric topic-word prior (thesis: gamma)")
PDP_DISCOUNT = ModelOption("a", "PDP discount a")
PDP_CONCENTRATION = ModelOption("b", "PDP concentration b (initial value when sampled)")


class GibbsModel:
    """A structured topic model on the Gibbs engine: subclass it and implement what the defaults do not cover.

    ``hyper`` is a JSON-able dict of hyperparameters (e.g. ``{"alpha": [K floats],
    "beta": 0.01, "a": 0.0, "b": 10.0}``): the driver owns it, broadcasts it, and
    writes it to ``model.json``; ``beta`` is the symmetric topic-word prior (the
    thesis' gamma) and is required for every model.

    Every hook the engine or the family calls is declared here with its default; the engine never probes a
    model for a method. A model over the one topic-word table implements ``initial_hyper``, ``init_state``,
    ``sweep``, ``doc_topic`` and ``segment_topic`` (and, as needed, the hyperparameter hooks); a model with other
    global statistics overrides the table hooks (``count_tables`` ... ``loglik``).
    """

    name = "abstract"
    #: the model's own settings (``train`` flags): keyword arguments of ``initial_hyper`` ...
    options: tuple = (BETA,)
    #: ... except these, which are constructor arguments (kept in model.json under the same names)
    construction_options: tuple = ()
    #: an aligned (polylingual) corpus: None (refused: one vocabulary), "language" (a document per tuple and
    #: language) or "tuple" (a document per aligned tuple)
    aligned_documents_per: str | None = None
    #: every segment is a document (LDA_P); model.json records it
    segment_level: bool = False

    def __init__(self, num_topics: int, vocab_size: int):
        self.num_topics = int(num_topics)
        self.vocab_size = int(vocab_size)

    @property
    def display_name(self) -> str:
        """The model as the log and the plots name it."""
        return self.name

    # ---- what the family asks (train, open, write)
    def bind_corpus(self, corpus, request) -> None:
        """Training: what the model needs of the corpus beyond its size (a tree over its vocabulary), before
        ``initial_hyper``. Default: nothing."""

    def bind_directory(self, directory: str) -> None:
        """Opening a trained model: read back what :meth:`save_files` wrote. Default: nothing."""

    def save_files(self, directory: str, result) -> None:
        """Training: the model's own files beside the common ones (``result``: the engine's GibbsResult, with
        the final ``tables``). Default: none."""

    def describe(self) -> dict:
        """The model's own entries of model.json. Default: none."""
        return {}

    # ---- hyperparameters
    def initial_hyper(self, **overrides) -> dict:
        """The hyperparameters at the start (``overrides``: the model's flags); must set ``beta``."""
        raise NotImplementedError

    def partition_stats(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> np.ndarray:
        """Small float vector of aggregates the driver needs to update global hyperparameters
        (summed over partitions in partition order). Default: nothing."""
        return np.zeros(0)

    def update_hyper(self, hyper: dict, stats: np.ndarray, num_documents: int, seed: int) -> dict:
        """Driver-side update of the global hyperparameters from the summed ``partition_stats`` (LDA: Minka's
        fixed point for alpha). Default: unchanged."""
        return hyper

    def local_hyper_update(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> None:
        """Per-document hyperparameters that live in the state (e.g. SeqLDA's b_i), after each sweep.
        Default: none."""

    # ---- the partition's state and sweeps
    def prepare_block(self, block: SegmentedBlock) -> SegmentedBlock:
        """The block as this model sees it (LDA_P: segments as documents). Default: unchanged."""
        return block

    def initial_state(self, block: SegmentedBlock, hyper: dict, seed: int) -> dict:
        """The partition's random initial state (thesis §11.1); the engine then counts the tables from it.
        Default: :meth:`init_state` into zero word counts."""
        nwk = np.zeros((self.shared_rows, self.num_topics), dtype=np.int32)
        return self.init_state(block, hyper, nwk, np.zeros(self.num_topics, dtype=np.int64), seed)

    def sweep_tables(self, block: SegmentedBlock, state: dict, hyper: dict, tables: dict, derived: dict,
                     seed: int) -> None:
        """One Gibbs cycle over the block, in place, on the partition's private copies of the global
        ``tables`` and ``derived`` values (AD-LDA: its own moves visible at once). Default: :meth:`sweep` on
        ``tables["nwk"]`` and ``derived["nk"]``."""
        self.sweep(block, state, hyper, tables["nwk"], derived["nk"], seed)

    def apply_directive(self, block: SegmentedBlock, state: dict, directive: dict) -> None:
        """Apply the driver's ``directive`` (of :meth:`global_step`) to the partition's state before it sweeps
        (e.g. relabel or remove clusters). Only called for a model whose global step gives one."""
        raise NotImplementedError(f"{self.name}: global_step gave a directive but apply_directive is missing")

    # ---- the global statistics: named count tables (inference.gibbs.tables)
    def count_tables(self) -> tuple:
        """The global count tables (:class:`CountTable`), summed over partitions and handed to every sweep.
        Default: ``nwk``, the topic-word counts M_{k,w} (thesis Table 5.2), ``shared_rows`` x K, dense."""
        return (CountTable("nwk", self.shared_rows, self.num_topics, "dense", cells_per_token=1),)

    def table_counts(self, block: SegmentedBlock, state: dict, local) -> dict:
        """The partition's contribution to every table: ``{name: (row keys (n,), counts (n, columns) int32)}``.
        ``local``: the block's words as ``(vocab_ids, index of every token)``, computed once by the engine.
        Default: ``{"nwk": shared_counts(...)}``."""
        return {"nwk": self.shared_counts(block, state, local)}

    def derive(self, tables: dict) -> dict:
        """Values computed from the summed tables, handed to every sweep with them (``{name: ndarray}``).
        Default: ``{"nk": topic_totals(tables["nwk"])}``."""
        return {"nk": self.topic_totals(tables["nwk"])}

    def global_step(self, tables: dict, hyper: dict, stats: np.ndarray, seed: int) -> tuple:
        """Driver-side step between synchronisations, after :meth:`update_hyper`: ``(tables, hyper,
        directive)``. A DP mixture samples its global level here (Wallach §4.4-4.5, eqs 5.27, 5.31: clusters
        created, relabelled or removed); the returned tables must equal the sum of the partitions' states once
        ``directive`` (a dict of JSON values and numpy arrays, or None) is applied to them. Default: no step."""
        return tables, hyper, None

    def sample_topic_word(self, tables: dict, derived: dict, hyper: dict) -> np.ndarray:
        """(K x V) topic-word point estimate of one sample (averaged over the samples by the engine).
        Default: :meth:`topic_word` of ``nwk``."""
        return self.topic_word(tables["nwk"], derived["nk"], hyper)

    def loglik(self, tables: dict, derived: dict, hyper: dict) -> float:
        """log p(w | z) of the global tables (the engine's progress line). Default: :meth:`word_loglik`."""
        return self.word_loglik(tables["nwk"], derived["nk"], hyper)

    # ---- the one topic-word table (the defaults of the table hooks above)
    def init_state(self, block: SegmentedBlock, hyper: dict, nwk: np.ndarray, nk: np.ndarray,
                   seed: int) -> dict:
        """Random initial state (thesis §11.1); adds the block's counts into ``nwk``/``nk``."""
        raise NotImplementedError

    def sweep(self, block: SegmentedBlock, state: dict, hyper: dict, nwk: np.ndarray, nk: np.ndarray,
              seed: int, frozen_phi: np.ndarray | None = None) -> None:
        """One Gibbs cycle over every token of the block (documents -> segments -> words), in place (LDA: eq
        4.3). With ``frozen_phi`` (V x K) the word factor is phi and ``nwk``/``nk`` stay untouched."""
        raise NotImplementedError

    @property
    def shared_rows(self) -> int:
        """Rows of the word table (default: one per word, the topic-word counts M_{k,w}; a tree prior counts
        edges)."""
        return self.vocab_size

    def shared_counts(self, block: SegmentedBlock, state: dict, local) -> tuple[np.ndarray, np.ndarray]:
        """The partition's contribution to the word table: ``(row ids (U,), counts (U, K) int32)``. Default:
        the tokens' (word, z) counts."""
        vocab_ids, index = local
        return vocab_ids, count_local(index, state["z"], vocab_ids.shape[0], self.num_topics)

    def topic_totals(self, nwk: np.ndarray) -> np.ndarray:
        """``nk``: every topic's tokens (K int64) from the word table. Default: the column sums (one row per
        word); a table whose rows are not a partition of the tokens (a tree's edges) says which rows are."""
        return nwk.sum(axis=0, dtype=np.int64)

    def topic_word(self, nwk: np.ndarray, nk: np.ndarray, hyper: dict) -> np.ndarray:
        """(K x V) topic-word point estimate of the word table. Default: (M_kw + beta) / (M_k + V beta),
        eq 5.7."""
        return topic_word_estimate(nwk, nk, float(hyper["beta"]))

    def word_loglik(self, nwk: np.ndarray, nk: np.ndarray, hyper: dict) -> float:
        """log p(w | z) of the word table. Default: the Dirichlet-multinomial of eqs 4.2 / 5.2 with the
        symmetric beta."""
        return word_loglik(nwk, nk, float(hyper["beta"]))

    # ---- outputs
    def doc_topic(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """(D, K) posterior-mean document topic proportions (mu-hat)."""
        raise NotImplementedError

    def segment_topic(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """(S, K) posterior-mean segment topic proportions (nu-hat); LDA: its document's row."""
        raise NotImplementedError


DRIVER_PARTITION = 1 << 30  # the "partition" number of draws made on the driver


def task_seed(seed: int, iteration: int, partition: int, purpose: int = 0) -> int:
    """A 31-bit seed for one task, a pure function of (run seed, iteration, partition, purpose)."""
    ss = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(iteration), int(partition), int(purpose)])
    return int(ss.generate_state(1, dtype=np.uint32)[0] >> 1)


def topic_word_counts(block: SegmentedBlock, z: np.ndarray, num_topics: int):
    """The block's contribution to M_{k,w}: ``(vocab_ids (U,), counts (U, K) int64)``."""
    vocab_ids, local = np.unique(block.words, return_inverse=True)
    counts = np.zeros((vocab_ids.shape[0], num_topics), dtype=np.int64)
    np.add.at(counts, (local.ravel(), z), 1)
    return vocab_ids.astype(np.int32), counts


@numba.njit(inline="always", cache=True)
def word_weight(nwk, nk, w, k, beta, vbeta, frozen_phi, frozen):
    """(M_{k,w} + beta) / (M_k + V beta), or phi_{k,w} when the topics are frozen."""
    if frozen:
        return frozen_phi[w, k]
    return (nwk[w, k] + beta) / (nk[k] + vbeta)
