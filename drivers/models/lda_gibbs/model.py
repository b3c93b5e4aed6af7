"""Collapsed Gibbs LDA (thesis ch. 4, Griffiths & Steyvers 2004) on the Gibbs engine: LDA_D and LDA_P.

Conditional (4.3), with all counts excluding the token being resampled:

    p(z_il = k | .) ∝ (m_ik + alpha_k) (n_kw + beta) / (n_k + V beta)

``LdaGibbs`` samples at document level (LDA_D); ``LdaGibbs(segment_level=True)``
treats every segment as a document (LDA_P / LDA_S of the thesis, via
:meth:`SegmentedBlock.as_segment_documents`). The per-partition state is only
``z``: the document-topic counts m_ik are rebuilt from ``z`` at the start of
each document, so nothing else needs storing or checkpointing.

Asymmetric alpha is learnt by Minka's (2000) fixed-point iteration
(thesis §8: "fastfit" for the LDA baselines),

    alpha_k <- alpha_k * sum_i [Psi(m_ik + alpha_k) - Psi(alpha_k)]
                        / sum_i [Psi(m_i + alpha_0) - Psi(alpha_0)],

one step per Gibbs cycle: each partition returns the two digamma sums at the
broadcast alpha (``partition_stats``, exact), the driver sums them and steps.
beta (the thesis' gamma) is fixed unless ``--beta-update sample|optimise`` (the driver's global step on the
summed topic-word counts, :mod:`drivers.models.lda_gibbs.beta_update`).

Kernels (``sampler``, an ``initial_hyper`` setting and the ``--sampler`` flag): ``dense`` is
:func:`lda_sweep`, O(K) per token; ``sparse`` is SparseLDA (Yao, Mimno & McCallum 2009,
:func:`drivers.models.lda_gibbs.sparse.lda_sweep_sparse`), whose cost per token follows the topics the word
and the document use; ``auto`` (default) takes sparse from :data:`SPARSE_MIN_TOPICS` topics on. Both
sample eq (4.3) exactly, with different draws; held-out sweeps (frozen topics) always use the dense kernel.
"""
from __future__ import annotations

import numba
import numpy as np

from drivers.models.lda_gibbs.beta_update import BETA_UPDATES, updated_beta
from drivers.models.lda_gibbs.sparse import lda_sweep_sparse
from inference.constraints import StrOptions
from inference.dirichlet import minka_step
from inference.gibbs import harmonic_mean
from inference.gibbs.model import GibbsModel, SegmentedBlock, word_weight
from inference.options import ModelOption
from inference.special import digamma

DEFAULT_ALPHA = 0.1
DEFAULT_BETA = 0.01
SAMPLERS = ("dense", "sparse", "auto")
#: ``sampler=auto`` uses the sparse kernel from this many topics on. Measured (one core, numba, one sweep of
#: ~940k tokens of the 100k-document benchmark corpus after 20 burn-in sweeps; tokens/s dense -> sparse):
#: K=20 18.5M -> 10.7M, 50 11.3M -> 9.1M, 100 6.4M -> 6.9M, 200 3.5M -> 5.7M, 500 1.5M -> 4.8M, 1000 0.78M -> 3.7M
#: (the break-even is near K = 90)
SPARSE_MIN_TOPICS = 100


@numba.njit(cache=True)
def lda_init(words, num_topics, nwk, nk, seed):
    """Uniformly random z (thesis §11.1); adds the counts into ``nwk``/``nk``."""
    np.random.seed(seed)
    z = np.empty(words.shape[0], dtype=np.int32)
    for i in range(words.shape[0]):
        k = np.random.randint(0, num_topics)
        z[i] = k
        nwk[words[i], k] += 1
        nk[k] += 1
    return z


@numba.njit(cache=True)
def lda_sweep(token_ptr, words, z, nwk, nk, alpha, beta, frozen_phi, frozen, seed):
    """One Gibbs cycle of eq (4.3) over every token, documents in order; ``z``, ``nwk``, ``nk`` in place.

    A tight O(K) loop: the document's topic counts are a dense K vector and the
    word's counts one contiguous row of ``nwk``; 1 / (n_k + V beta) is kept per
    topic and refreshed for the two topics a move touches. With ``frozen`` the
    word factor is ``frozen_phi[w, k]`` and ``nwk``/``nk`` are not touched.
    """
    np.random.seed(seed)
    K = alpha.shape[0]
    vbeta = nwk.shape[0] * beta
    ndk = np.zeros(K, dtype=np.int64)
    cum = np.empty(K, dtype=np.float64)
    inv = np.empty(K, dtype=np.float64)
    if not frozen:
        for k in range(K):
            inv[k] = 1.0 / (nk[k] + vbeta)
    for d in range(token_ptr.shape[0] - 1):
        start, end = token_ptr[d], token_ptr[d + 1]
        ndk[:] = 0
        for i in range(start, end):
            ndk[z[i]] += 1
        for i in range(start, end):
            w = words[i]
            old = z[i]
            ndk[old] -= 1
            total = 0.0
            if frozen:
                for k in range(K):
                    total += (ndk[k] + alpha[k]) * word_weight(nwk, nk, w, k, beta, vbeta, frozen_phi, True)
                    cum[k] = total
            else:
                nwk[w, old] -= 1
                nk[old] -= 1
                inv[old] = 1.0 / (nk[old] + vbeta)
                for k in range(K):
                    total += (ndk[k] + alpha[k]) * (nwk[w, k] + beta) * inv[k]
                    cum[k] = total
            u = np.random.random() * total
            new = 0
            while new < K - 1 and cum[new] <= u:
                new += 1
            z[i] = new
            ndk[new] += 1
            if not frozen:
                nwk[w, new] += 1
                nk[new] += 1
                inv[new] = 1.0 / (nk[new] + vbeta)


@numba.njit(cache=True)
def doc_topic_counts(token_ptr, z, num_topics):
    """(D, K) int64 m_ik: tokens of document i assigned to topic k."""
    D = token_ptr.shape[0] - 1
    ndk = np.zeros((D, num_topics), dtype=np.int64)
    for d in range(D):
        for i in range(token_ptr[d], token_ptr[d + 1]):
            ndk[d, z[i]] += 1
    return ndk


@numba.njit(cache=True)
def _digammas_of_alpha(alpha):
    """(alpha_0, Psi(alpha_k) for every k, Psi(alpha_0)): the constant terms of the Minka statistics."""
    K = alpha.shape[0]
    alpha0 = 0.0
    for k in range(K):
        alpha0 += alpha[k]
    psi_alpha = np.empty(K)
    for k in range(K):
        psi_alpha[k] = digamma(alpha[k])
    return alpha0, psi_alpha, digamma(alpha0)


@numba.njit(cache=True)
def minka_statistics(ndk, alpha):
    """(K + 2,) sum_i [Psi(m_ik + alpha_k) - Psi(alpha_k)] per k, sum_i [Psi(m_i + alpha_0) - Psi(alpha_0)],
    and the number of documents with at least one token."""
    D, K = ndk.shape
    out = np.zeros(K + 2)
    alpha0, psi_alpha, psi_alpha0 = _digammas_of_alpha(alpha)
    for d in range(D):
        n = 0
        for k in range(K):
            c = ndk[d, k]
            if c > 0:
                out[k] += digamma(c + alpha[k]) - psi_alpha[k]
                n += c
        if n > 0:
            out[K] += digamma(n + alpha0) - psi_alpha0
            out[K + 1] += 1.0
    return out


@numba.njit(cache=True)
def minka_statistics_of_assignments(token_ptr, z, alpha):
    """:func:`minka_statistics` of the documents' counts straight from the assignments ``z``, in O(tokens + D)
    time and O(K) memory instead of a (D, K) count matrix (360 MB per partition of 45k documents at K = 1000).
    The same terms are added to each sum in the same (document) order, so the result is bit for bit that of
    ``minka_statistics(doc_topic_counts(...))``: the topics a document does not use add exactly nothing there."""
    K = alpha.shape[0]
    out = np.zeros(K + 2)
    alpha0, psi_alpha, psi_alpha0 = _digammas_of_alpha(alpha)
    counts = np.zeros(K, dtype=np.int64)
    used = np.empty(K, dtype=np.int64)
    for d in range(token_ptr.shape[0] - 1):
        n_used = 0
        for i in range(token_ptr[d], token_ptr[d + 1]):
            k = z[i]
            if counts[k] == 0:
                used[n_used] = k
                n_used += 1
            counts[k] += 1
        n = 0
        for j in range(n_used):
            k = used[j]
            c = counts[k]
            out[k] += digamma(c + alpha[k]) - psi_alpha[k]
            n += c
            counts[k] = 0
        if n > 0:
            out[K] += digamma(n + alpha0) - psi_alpha0
            out[K + 1] += 1.0
    return out


class LdaGibbs(GibbsModel):
    """Collapsed Gibbs LDA; ``segment_level=True`` gives LDA_P (every segment a document)."""

    name = "lda-gibbs"
    options = GibbsModel.options + (
        ModelOption("segment_level", "every segment (e.g. paragraph) is a document of its own", bool),
        ModelOption("sampler", "kernel of eq (4.3): dense (O(K) per token), sparse (SparseLDA: per token, the "
                    "topics its word and document use), auto (default: sparse from "
                    f"{SPARSE_MIN_TOPICS} topics on)", str, metavar="dense|sparse|auto",
                    constraint=StrOptions(SAMPLERS)),
        ModelOption("beta_update", "beta after every iteration: fixed (default), sample (slice sampling under "
                    "P(w | z, beta), as cluster-lda and dp-mixture) or optimise (its maximiser)", str,
                    metavar="fixed|sample|optimise", constraint=StrOptions(BETA_UPDATES)))
    construction_options = ("segment_level",)

    def __init__(self, num_topics: int, vocab_size: int, segment_level: bool = False):
        super().__init__(num_topics, vocab_size)
        self.segment_level = bool(segment_level)

    def initial_hyper(self, alpha=None, beta=None, optimize_alpha=True, alpha_burn_in=0, sampler=None,
                      beta_update=None) -> dict:
        """``alpha``: a positive scalar (symmetric start) or K values; ``beta`` > 0 symmetric (its start when
        ``beta_update`` is sample or optimise, kept in the hyperparameters only then); alpha is optimised after
        ``alpha_burn_in`` cycles unless ``optimize_alpha`` is false; ``sampler``: dense, sparse or auto (kept in
        the hyperparameters only when given; absent means auto)."""
        K = self.num_topics
        a = np.full(K, DEFAULT_ALPHA) if alpha is None else np.broadcast_to(
            np.asarray(alpha, dtype=np.float64), (K,)).copy()
        b = DEFAULT_BETA if beta is None else float(beta)
        if a.shape != (K,) or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"alpha must be a positive number or {K} positive numbers")
        if not np.isfinite(b) or b <= 0:
            raise ValueError(f"beta must be a positive number, got {beta}")
        if int(alpha_burn_in) < 0:
            raise ValueError("alpha_burn_in must be >= 0")
        if sampler is not None and sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
        hyper = {"alpha": a.tolist(), "beta": b, "optimize_alpha": bool(optimize_alpha),
                 "alpha_burn_in": int(alpha_burn_in), "cycles": 0}
        if sampler is not None:
            hyper["sampler"] = str(sampler)
        if beta_update is not None and beta_update not in BETA_UPDATES:
            raise ValueError(f"beta_update must be one of {', '.join(BETA_UPDATES)}, got {beta_update!r}")
        if beta_update not in (None, "fixed"):
            hyper["beta_update"] = str(beta_update)
        return hyper

    def uses_sparse_kernel(self, hyper) -> bool:
        """The kernel of :meth:`sweep` (with counts): ``sampler`` sparse, or auto with K >= SPARSE_MIN_TOPICS."""
        sampler = hyper.get("sampler") or "auto"
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
        return sampler == "sparse" or (sampler == "auto" and self.num_topics >= SPARSE_MIN_TOPICS)

    @property
    def display_name(self) -> str:
        return "lda-gibbs (LDA_P, segments as documents)" if self.segment_level else self.name

    def prepare_block(self, block: SegmentedBlock) -> SegmentedBlock:
        return block.as_segment_documents() if self.segment_level else block

    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        return {"z": lda_init(block.words, self.num_topics, nwk, nk, seed)}

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        frozen = frozen_phi is not None
        if not frozen and self.uses_sparse_kernel(hyper):
            lda_sweep_sparse(block.token_ptr(), block.words, state["z"], nwk, nk,
                             np.asarray(hyper["alpha"], dtype=np.float64), float(hyper["beta"]), seed)
            return
        phi = frozen_phi if frozen else np.zeros((1, 1))
        lda_sweep(block.token_ptr(), block.words, state["z"], nwk, nk,
                  np.asarray(hyper["alpha"], dtype=np.float64), float(hyper["beta"]), phi, frozen, seed)

    def sample_word_logliks(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        return harmonic_mean.topic_logliks(self, block, hyper, phi_vk, schedule, seed, partition)

    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        return minka_statistics_of_assignments(block.token_ptr(), state["z"],
                                               np.asarray(hyper["alpha"], dtype=np.float64))

    def update_hyper(self, hyper, stats, num_documents, seed) -> dict:
        hyper = dict(hyper, cycles=int(hyper.get("cycles", 0)) + 1)
        if hyper.get("optimize_alpha", True) and hyper["cycles"] > hyper.get("alpha_burn_in", 0):
            hyper["alpha"] = minka_step(np.asarray(hyper["alpha"], dtype=np.float64), stats).tolist()
        return hyper

    def global_step(self, tables, hyper, stats, seed):
        """beta by ``beta_update`` on the summed counts (:mod:`drivers.models.lda_gibbs.beta_update`); nothing
        when it is fixed (the default)."""
        how = hyper.get("beta_update", "fixed")
        if how != "fixed":
            hyper = dict(hyper, beta=updated_beta(how, tables["nwk"], float(hyper["beta"]),
                                                  np.random.default_rng(seed)))
        return tables, hyper, None

    @classmethod
    def steps_globally(cls, hyper) -> bool:
        return hyper is not None and hyper.get("beta_update", "fixed") != "fixed"

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        """(D, K) mu-hat_ik = (m_ik + alpha_k) / (m_i + alpha_0) (thesis ch. 4)."""
        alpha = np.asarray(hyper["alpha"], dtype=np.float64)
        ndk = doc_topic_counts(block.token_ptr(), state["z"], self.num_topics)
        theta = ndk + alpha
        return theta / theta.sum(axis=1, keepdims=True)

    def segment_topic(self, block, state, hyper) -> np.ndarray:
        """(S, K): every segment gets its document's row."""
        return self.doc_topic(block, state, hyper)[block.doc_of_segment()]
