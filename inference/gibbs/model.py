"""The contract between the Gibbs engine and a model: data layout, state, and plug-in methods.

Data: a :class:`SegmentedBlock` holds one partition's documents as ordered segments of tokens (word ids in the
*global* vocabulary, one entry per token; the order of tokens inside a segment carries no meaning, the order of
segments inside a document does for SeqLDA and AdaTM).

Global state: named count tables (:mod:`inference.gibbs.tables`: each dense or keyed, summed over the partitions,
exact integers independent of partition order) that the model declares (``count_tables``) and fills from a
partition's state (``table_counts``), plus values the model derives from them (``derive``, e.g. the topic totals
``nk``). The engine derives the tables from the states, never from deltas. By default a model has one table,
``nwk``: the topic-word counts M_{k,w} (thesis Table 5.2) as V x K int32 (row ``w`` the K counts of word w, one
contiguous row per token; ``shared_rows`` rows, another row space for a tree's edges), and one derived value,
``nk`` (K, int64); the default table hooks map onto the LDA-shaped hooks (``shared_counts``, ``topic_totals``,
``init_state``, ``sweep``, ``topic_word``, ``word_loglik``), so a model over that one table implements only
those. What the tables mean is the model's: its log-likelihood (``loglik``), its topic-word estimate
(``sample_topic_word``).

Between two synchronisations the driver may run the model's ``global_step`` on the summed tables (a DP mixture's
cluster step); its ``directive`` (JSON values, numpy arrays) goes to every partition with the next
synchronisation, and ``apply_directive`` applies it to the partition's state before it sweeps.

Per-partition state: a ``dict[str, np.ndarray]`` owned by the model (``"z"``, int32 (N,), is required; anything
else, e.g. segment-topic customer and table counts, is the model's business). The engine stores it as ``.npz``
without pickle, so it must be plain numeric arrays.

Sweeps (AD-LDA, Newman et al. 2009): a partition gets private copies of the global tables and derived values and
updates them as it moves tokens: it sees its own changes at once, other partitions' at the next iteration.

Frozen topics (held-out estimation, ``infer``): ``frozen_phi`` (V x K float64, column k = phi_k) replaces
(M_{k,w} + beta) / (M_k + V beta) by ``frozen_phi[w, k]``, ``nwk``/``nk`` untouched; kernels use :func:`word_weight`.

Randomness: ``seed`` comes from (run seed, iteration, partition) (:func:`task_seed`); kernels seed numba's generator
with it (``np.random.seed(seed)`` in the jitted function) and draw nothing else: a retried task repeats bit for bit.
"""
from __future__ import annotations

import numba
import numpy as np

from inference.gibbs.block import DRIVER_PARTITION, SegmentedBlock, task_seed  # noqa: F401 (the contract)
from inference.gibbs.continuation import ChainContinuation
from inference import left_to_right
from inference.gibbs import heldout
from inference.gibbs.counts import count_local, topic_word_estimate, word_loglik
from inference.gibbs.tables import CountTable
from inference.constraints import POSITIVE, UNIT_LEFT
from inference.errors import RefusedError
from inference.options import ModelOption


#: settings several models share
BETA = ModelOption("beta", "symmetric topic-word prior (thesis: gamma)", constraint=POSITIVE)
PDP_DISCOUNT = ModelOption("a", "PDP discount a", constraint=UNIT_LEFT)
PDP_CONCENTRATION = ModelOption("b", "PDP concentration b (initial value when sampled)")


class GibbsModel(ChainContinuation):
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
    #: the model has latent variables that its sweeps sample; False (a bigram language model): the partitions
    #: count the tables once (``initial_state``, ``table_counts``) and the driver's ``global_step``, called once on
    #: the counts, fits the hyperparameters: no sweep, no synchronisation, one sample (the counts)
    latent: bool = True
    #: how ``heldout_loglik`` scores held-out documents, as ``evaluate`` prints it (None: the family's words for
    #: the default, document completion with the topics fixed)
    heldout_protocol: str | None = None

    def __init__(self, num_topics: int, vocab_size: int):
        self.num_topics = int(num_topics)
        self.vocab_size = int(vocab_size)

    @property
    def display_name(self) -> str:
        """The model as the log and the plots name it."""
        return self.name

    # ---- what the family asks (train, open, write)
    @classmethod
    def corpus_kind(cls, settings: dict) -> str | None:
        """The corpus kind (``drivers.corpora.kinds``) the model reads under ``settings`` (train's flags, or
        model.json's ``hyper``); None: as the registry says (``pdp-network``: as its network says)."""
        return None

    def bind_corpus(self, corpus, request) -> None:
        """Training: what the model needs of the corpus beyond its size (a tree), before ``initial_hyper``."""

    def bind_directory(self, directory: str) -> None:
        """Opening a trained model: read back what :meth:`save_files` wrote. Default: nothing."""

    def bind_scored_corpus(self, directory: str) -> None:
        """Scoring a prepared corpus (evaluate, infer): what the model needs beyond its blocks (kept columns)."""

    def save_files(self, directory: str, result) -> None:
        """Training: the model's own files beside the common ones (``result``: the final GibbsResult)."""

    def describe(self) -> dict:
        """The model's own entries of model.json. Default: none."""
        return {}

    #: the trained model's own arrays (names), written by the family as ``<name>.npy`` beside the common files
    #: (no pickle) from :meth:`saved_arrays` and handed back to :meth:`bind_arrays` when the model is opened
    array_files: tuple = ()

    def saved_arrays(self) -> dict:
        """Training (after :meth:`bind_result`): ``{name of array_files: ndarray}``. Default: none."""
        return {}

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        """Opening a trained model: :meth:`saved_arrays`' arrays read back and model.json's content (``meta``)."""

    # ---- hyperparameters
    def initial_hyper(self, **overrides) -> dict:
        """The hyperparameters at the start (``overrides``: the model's flags); must set ``beta``."""
        raise NotImplementedError

    #: the driver gets the partitions' ``partition_stats`` listed in partition order, not summed: data such as
    #: every document's assignments for a density over the corpus in order (cluster-lda's sequential evidence)
    stats_by_partition: bool = False

    def partition_stats(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> np.ndarray:
        """Small float vector of aggregates the driver needs to update global hyperparameters
        (summed over partitions in partition order, or listed: ``stats_by_partition``). Default: nothing."""
        return np.zeros(0)

    def update_hyper(self, hyper: dict, stats: np.ndarray, num_documents: int, seed: int) -> dict:
        """Driver-side update of the global hyperparameters from the summed ``partition_stats`` (LDA: Minka's
        fixed point for alpha). Default: unchanged."""
        return hyper

    def local_hyper_update(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> None:
        """Per-document hyperparameters that live in the state (e.g. SeqLDA's b_i), after each sweep. Default: none."""

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
        """Values of the summed tables handed to every sweep (``{name: ndarray}``). Default: ``nk`` of ``nwk``."""
        return {"nk": self.topic_totals(tables["nwk"])}

    def global_step(self, tables: dict, hyper: dict, stats: np.ndarray, seed: int) -> tuple:
        """Driver-side step between synchronisations, after :meth:`update_hyper`: ``(tables, hyper, directive)``.
        A DP mixture samples its global level here (Wallach §4.4-4.5, eqs 5.27, 5.31: clusters created, relabelled
        or removed); the returned tables must equal the sum of the partitions' states once ``directive`` (a dict of
        JSON values and numpy arrays, or None) is applied to them. Default: no step."""
        return tables, hyper, None

    @classmethod
    def steps_globally(cls, hyper: dict | None) -> bool:
        """Whether ``global_step`` can change the chain under ``hyper`` (None: any; refresh replays it then)."""
        return cls.global_step is not GibbsModel.global_step

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

    def summarise_sample(self, summary: np.ndarray | None, tables: dict, derived: dict, hyper: dict) -> np.ndarray:
        """The driver's running summary of the samples with this one added (None before the first; the engine
        keeps it and checkpoints it as one array). Default: the sum of :meth:`sample_topic_word` (K x V)."""
        estimate = self.sample_topic_word(tables, derived, hyper)
        if summary is None:
            summary = np.zeros((self.num_topics, self.vocab_size))
        summary += estimate
        return summary

    def topic_word_of_samples(self, summary: np.ndarray, samples: int, tables: dict, derived: dict,
                              hyper: dict) -> np.ndarray:
        """The run's topic-word matrix (rows sum to 1; ``topic_word.npy``) from the summary of its ``samples``
        samples and the final tables. Default: the mean of the samples' estimates."""
        return summary / samples

    def accumulate_sample(self, block: SegmentedBlock, state: dict, hyper: dict, acc: dict) -> dict:
        """A partition's sums over the samples (``acc``: numeric arrays by name, ``samples`` among them; written
        with the state) with this sample added. Default: the document and segment topic proportions."""
        doc = self.doc_topic(block, state, hyper)
        seg = self.segment_topic(block, state, hyper)
        return dict(acc, doc=doc if "doc" not in acc else acc["doc"] + doc,
                    seg=seg if "seg" not in acc else acc["seg"] + seg, samples=acc["samples"] + 1)

    def bind_result(self, result) -> None:
        """Training is done (``result``: the engine's GibbsResult, with the final ``tables`` and ``hyper``): keep
        what :meth:`document_proportions`, :meth:`document_outputs` and the predictive need of the final global
        state (the model object goes to the output and scoring tasks with it). Default: nothing."""

    def document_proportions(self, item: dict) -> tuple[np.ndarray, np.ndarray]:
        """(D, K) document and (S, K) segment proportions of the ORIGINAL block ``item["orig"]`` (``item``: the
        block as loaded and as the model sees it, ``block``, the ``state`` after training when there is one, and
        the sums ``acc`` of :meth:`accumulate_sample` or :meth:`infer_sums`). Default: the sums averaged over
        the samples; when the model sees other documents than the corpus has (LDA_P: every segment a document),
        a document's proportions are the token-weighted mean of its segments'."""
        orig, block, acc = item["orig"], item["block"], item["acc"]
        n = int(acc["samples"][0])
        if n == 0:
            raise RuntimeError("no samples were accumulated")
        seg = acc["seg"] / n
        if np.array_equal(block.doc_ptr, orig.doc_ptr):
            doc = acc["doc"] / n
        else:
            lengths = np.diff(orig.seg_ptr).astype(np.float64)
            weighted = seg * lengths[:, None]
            doc = np.add.reduceat(weighted, orig.doc_ptr[:-1], axis=0) if orig.n_docs else np.zeros((0, seg.shape[1]))
            doc = doc / doc.sum(axis=1, keepdims=True)
        return doc, seg

    #: the model's own per-document tables (Parquet directories beside doc_topics/segment_topics, in the model
    #: directory and in ``infer``'s output), filled by :meth:`document_outputs`
    document_files: tuple = ()

    def document_outputs(self, item: dict) -> dict:
        """``{file of document_files: {column: (rows,) array}}`` for the item's documents (``doc_id`` a column
        of strings). Default: none."""
        return {}

    # ---- the predictive: held-out documents and new ones, given the trained model
    def heldout_loglik(self, block: SegmentedBlock, hyper: dict, phi_vk: np.ndarray, schedule, seed: int,
                       partition: int) -> np.ndarray:
        """``[sum over scored tokens of log p(w), scored tokens, documents]`` of a block of held-out documents
        under the trained model (``phi_vk``: V x K, the transposed ``topic_word.npy``; ``schedule``: the
        :class:`inference.gibbs.heldout.HeldoutSchedule`, document completion when ``schedule.observed``).
        Default: the model's own sampler with the topics fixed (:func:`inference.gibbs.heldout.heldout_loglik`,
        eq 5.10)."""
        return heldout.heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition)

    def infer_sums(self, block: SegmentedBlock, hyper: dict, phi_vk: np.ndarray, schedule, seed: int,
                   partition: int) -> dict:
        """``infer``: the sums (as of :meth:`accumulate_sample`) :meth:`document_proportions` turns into the new
        documents' proportions. Default: the model's sampler with the topics fixed, averaged over the samples
        (:func:`inference.gibbs.heldout.frozen_proportions`)."""
        return heldout.frozen_proportions(self, block, hyper, phi_vk, schedule, seed, partition)

    def left_to_right(self, block: SegmentedBlock, hyper: dict, phi_vk: np.ndarray,
                      settings: left_to_right.LeftToRight) -> left_to_right.LeftToRightScores:
        """Left-to-right evaluation (Wallach et al. 2009 Alg. 3; thesis Alg. 3.3) of a block of test documents
        with the training statistics frozen: ``LeftToRightScores(per_document (D, 4), protocol)``, per document
        ``[log p(w_d | training) by left-to-right, log p(w_d | training) by importance sampling (the mean of the
        particles' products), scored tokens, skipped tokens]`` in natural logs (see
        /work/notes/left-to-right.md and README "Left-to-right evaluation").

        Contract (every model): ``block`` is the block as loaded (before :meth:`prepare_block`), rows follow
        its documents; tokens are taken segment by segment, in the stored order (text order for corpora
        prepared with ``--ordered``/``--segments``); ``phi_vk`` is the V x K transposed ``topic_word.npy``;
        ``hyper`` the trained hyperparameters; the model's other trained statistics are its own (bound by
        :meth:`bind_arrays`). Nothing of a test document may enter the training statistics, and a document's
        row must not depend on the other documents of the block, the partition or the worker: draw only from
        ``settings.particle_seeds(doc_id)`` (particle r of document doc_id). A word id outside 0..V-1 is
        skipped (neither scored nor conditioned on) and counted. p(w_n | w_<n) may use the document's earlier
        tokens only; with ``settings.resample`` each particle resamples its earlier latent variables given
        w_<n before scoring w_n; average probabilities over particles, then take the log; work in logs.
        A model whose p(w_n | w_<n) is exact without particles (no latent variables, or a finite sum) says "exact
        ..." in ``protocol``; a model that approximates its own predictive says so in ``protocol``.

        Default (LDA): one state z per particle over the document's tokens, p(w_n | w_<n, z_<n) = sum_k
        (N_k|d + alpha m_k) / (n + alpha) phi_{k, w_n}, alpha m = ``hyper["alpha"]`` (K values), phi frozen
        (:func:`inference.left_to_right.lda_scores`), refused in one line without ``hyper["alpha"]``; a model
        that sees other documents than the block has
        (LDA_P: ``prepare_block`` makes every segment a document) is scored on its documents, whose rows are
        summed into the block's."""
        if "alpha" not in hyper:
            raise RefusedError(f"--method left-to-right: {self.name} has no document Dirichlet alpha for the default "
                               "(LDA's) predictive and no left_to_right hook of its own yet")
        seen = self.prepare_block(block)
        scores = left_to_right.lda_scores(seen.doc_ids, seen.token_ptr(), seen.words, hyper["alpha"], phi_vk,
                                          settings)
        if seen.n_docs != block.n_docs:          # documents of the model's own (LDA_P): back to the block's
            owner = np.repeat(np.arange(block.n_docs), np.diff(block.doc_ptr))
            summed = np.zeros((block.n_docs, left_to_right.COLUMNS))
            np.add.at(summed, owner, scores)
            scores = summed
        return left_to_right.LeftToRightScores(scores, left_to_right.LDA_PROTOCOL)

    def sample_word_logliks(self, block: SegmentedBlock, hyper: dict, phi_vk: np.ndarray, schedule, seed: int,
                            partition: int) -> np.ndarray:
        """(S, D) log P(w_d | the latent variables of sample s) of the documents of ``block`` (known words only,
        ``prepare_block`` done) at the ``schedule``'s samples of the model's sampler with the training frozen: the
        harmonic-mean estimate's samples (:mod:`inference.gibbs.harmonic_mean`, thesis 3.57). Default: refused;
        a topic model whose words come from phi_z returns :func:`inference.gibbs.harmonic_mean.topic_logliks`."""
        raise RefusedError(f"the harmonic-mean estimate is not implemented for {self.name}")

    # ---- checks
    def check_state(self, block: SegmentedBlock, state: dict) -> None:
        """Refuse a partition's state that is not the model's (read from files, or made by ``initial_state``).
        Default: ``z``, int32, one topic in 0..K-1 per token."""
        z = state.get("z") if isinstance(state, dict) else None
        if z is None or z.shape != (block.n_tokens,) or z.dtype != np.int32:
            raise TypeError(f"{self.name}: the state needs 'z', int32 of shape ({block.n_tokens},)")
        if block.n_tokens and (z.min() < 0 or z.max() >= self.num_topics):
            raise ValueError(f"{self.name}: topic assignments outside 0..{self.num_topics - 1}")


@numba.njit(inline="always", cache=True)
def word_weight(nwk, nk, w, k, beta, vbeta, frozen_phi, frozen):
    """(M_{k,w} + beta) / (M_k + V beta), or phi_{k,w} when the topics are frozen."""
    if frozen:
        return frozen_phi[w, k]
    return (nwk[w, k] + beta) / (nk[k] + vbeta)
