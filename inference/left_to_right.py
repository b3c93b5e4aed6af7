"""Left-to-right evaluation (Wallach et al. 2009, Alg. 3; Wallach's thesis Alg. 3.3, extract §5.3): pure numpy and
numba, no Spark.

A test document's log-likelihood under a trained topic model with its topics frozen is decomposed left to right,

    log p(w | Phi, alpha m) = sum_n log p(w_n | w_<n),   p(w_n | w_<n) = sum_{z_<n} p(w_n | z_<n, w_<n) p(z_<n | w_<n),

and every factor is estimated with R particles, each a state z^(r) of the document's earlier tokens (one state
per particle: the 2009 paper's form, not the thesis' shared state, pitfall 10):

    1. (``resample``) one Gibbs sweep over the particle's z_<n given w_<n only (never w_n or later: the point
       of the method), positions in order;
    2. p_n^(r) = sum_k p(z_n = k | z_<n^(r)) f_n(k), with f_n(k) = p(w_n | z_n = k, ...) (LDA: phi_{k, w_n}) and
       p(z_n = k | z_<n) = (N_k|d + alpha m_k) / (n + alpha) over the document's earlier tokens;
    3. z_n^(r) ~ p(z_n | z_<n^(r), w_<=n): the normalised terms of 2.

The estimate is l = sum_n log (1/R sum_r p_n^(r)): an average of probabilities, then logged (pitfall 9).

What is exact and what is not (checked by enumeration in tests/kernels/test_left_to_right.py): for every R, with
resampling on or off, the mean over particles of each particle's own product, (1/R) sum_r prod_n p_n^(r)
(:attr:`DocumentEstimate.log_importance`), is an UNBIASED estimator of p(w | Phi, alpha m): without resampling it
is sequential importance sampling with the optimal proposal of step 3, with resampling each sweep leaves
p(z_<n | w_<n) invariant, so it is annealed importance sampling (Neal 2001). Wallach's left-to-right estimate
prod_n (1/R sum_r p_n^(r)) (:attr:`DocumentEstimate.log_left_to_right`, what ``evaluate`` reports) equals it
for R = 1 and is otherwise biased: without resampling it is not even consistent (as R -> infinity each factor
tends to E_q[p(w_n | z_<n)] with q the particles' unweighted proposal, not the posterior p(z_<n | w_<n)); with
resampling the particles approach the posterior as they are swept, so it tends to p(w) as R grows and as the
sweeps mix.

Every token's likelihood row f_n(.) is scaled by its largest entry before the particles see it and the scale's
log is added back, so rows of tiny probabilities (long documents, huge vocabularies) neither underflow nor lose
precision; documents are accumulated in logs.

Seeds: a document's particle r draws from ``particle_seed(seed, doc_id, r)`` only (BLAKE2b of the seed and the
document id, then the particle), so the estimate of a document is the same in any partition, on any worker, in
local[1] and local[2].
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numba
import numpy as np

from inference.heldout import document_seed

#: the defaults of ``evaluate --method left-to-right`` (the thesis' 20 particles, Fig. 3.11)
DEFAULT_PARTICLES = 20


@dataclass(frozen=True)
class LeftToRight:
    """The estimator's settings: ``particles`` R, Gibbs ``resample``-ing of earlier positions on or off, ``seed``."""
    particles: int = DEFAULT_PARTICLES
    resample: bool = True
    seed: int = 0

    def __post_init__(self):
        if int(self.particles) < 1:
            raise ValueError(f"particles must be >= 1, got {self.particles}")

    def particle_seeds(self, doc_id) -> np.ndarray:
        """(R,) int64: the seed of every particle of document ``doc_id`` (a function of seed, id and particle)."""
        return particle_seeds(self.seed, str(doc_id), int(self.particles))


def particle_seeds(seed: int, doc_id: str, particles: int) -> np.ndarray:
    """(R,) 31-bit seeds of a document's particles: SeedSequence(BLAKE2b(seed, doc_id), r)."""
    base = document_seed(seed, doc_id)
    return np.array([np.random.SeedSequence([base & 0xFFFFFFFF, base >> 32, r]).generate_state(1)[0] >> 1
                     for r in range(particles)], dtype=np.int64)


@dataclass
class DocumentEstimate:
    """One document's estimate: ``token_log_p`` (n,) log (1/R sum_r p_n^(r)) of every token; ``particle_log_weight``
    (R,) sum_n log p_n^(r) of every particle."""
    token_log_p: np.ndarray
    particle_log_weight: np.ndarray

    @classmethod
    def of_particles(cls, probs: np.ndarray, scale: np.ndarray) -> "DocumentEstimate":
        """From the particles' p_n^(r) of scaled rows (R, n) and the rows' scales (n,): log (1/R sum_r p_n^(r))
        per token (an average of probabilities, then logged) and every particle's sum_n log p_n^(r)."""
        log_probs = np.log(probs) + np.log(scale)[None, :]
        top = log_probs.max(axis=0)
        return cls(top + np.log(np.mean(np.exp(log_probs - top[None, :]), axis=0)), log_probs.sum(axis=1))

    @property
    def log_left_to_right(self) -> float:
        """sum_n log (1/R sum_r p_n^(r)): the left-to-right estimate (Wallach et al. 2009, Alg. 3)."""
        return float(self.token_log_p.sum())

    @property
    def log_importance(self) -> float:
        """log (1/R sum_r prod_n p_n^(r)): the unbiased importance-sampling estimate of p(w)."""
        w = self.particle_log_weight
        top = w.max()
        return float(top + np.log(np.mean(np.exp(w - top))))


@numba.njit(cache=True)
def _particles(scaled, alpha, resample, seeds):
    """(R, n) p_n^(r) of the scaled rows ``scaled`` (n x K, f_n(k) / max_k f_n(k)) under the Dirichlet-multinomial
    document side with parameters ``alpha`` (K); see the module docstring."""
    n, K = scaled.shape
    R = seeds.shape[0]
    out = np.empty((R, n))
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    z = np.empty(n, dtype=np.int64)
    ndk = np.zeros(K)
    p = np.empty(K)
    for r in range(R):
        np.random.seed(seeds[r])
        ndk[:] = 0.0
        for i in range(n):
            if resample:
                for m in range(i):
                    ndk[z[m]] -= 1.0
                    total = 0.0
                    for k in range(K):
                        total += (ndk[k] + alpha[k]) * scaled[m, k]
                        p[k] = total
                    z[m] = _draw(p, total, K)
                    ndk[z[m]] += 1.0
            total = 0.0
            for k in range(K):
                total += (ndk[k] + alpha[k]) * scaled[i, k]
                p[k] = total
            out[r, i] = total / (i + alpha_sum)
            z[i] = _draw(p, total, K)
            ndk[z[i]] += 1.0
    return out


@numba.njit(inline="always", cache=True)
def _draw(cumulative, total, K):
    u = np.random.random() * total
    for k in range(K):
        if u < cumulative[k]:
            return k
    return K - 1


def estimate_document(likelihood: np.ndarray, alpha: np.ndarray, seeds: np.ndarray,
                      resample: bool = True) -> DocumentEstimate:
    """Left-to-right estimate of one document from its token-topic likelihoods ``likelihood`` (n x K: f_n(k) =
    p(w_n | z_n = k, ...), nonnegative, every row with a positive entry) and the document side's Dirichlet
    ``alpha`` (K), one particle per seed."""
    likelihood = np.asarray(likelihood, dtype=np.float64)
    n = likelihood.shape[0]
    if n == 0:
        return DocumentEstimate(np.zeros(0), np.zeros(len(seeds)))
    scale = likelihood.max(axis=1)
    if not np.all(scale > 0) or not np.all(np.isfinite(scale)):
        raise ValueError("every token needs a positive, finite likelihood under some topic")
    probs = _particles(np.ascontiguousarray(likelihood / scale[:, None]), np.asarray(alpha, dtype=np.float64),
                       bool(resample), np.asarray(seeds, dtype=np.int64))
    return DocumentEstimate.of_particles(probs, scale)


#: the columns of a block's scores (:class:`LeftToRightScores`)
COLUMNS = 4
LEFT_TO_RIGHT, IMPORTANCE, SCORED, SKIPPED = range(COLUMNS)

#: how the default (LDA) estimates a document, as ``evaluate`` prints it
LDA_PROTOCOL = "particles: z of the document's tokens, p(z_n = k | z_<n) = (N_k|d + alpha m_k) / (n + alpha)"


@dataclass
class LeftToRightScores:
    """What :meth:`inference.gibbs.model.GibbsModel.left_to_right` gives for a block: ``per_document`` (D, 4)
    ``[log p(w_d) by left-to-right, log p(w_d) by importance sampling, scored tokens, skipped out-of-vocabulary
    tokens]`` (natural logs; :attr:`DocumentEstimate.log_left_to_right` and ``.log_importance``; a model that
    computes p(w_d) exactly gives it in both) in the block's document order,
    and ``protocol``: how the model estimated them, in words ("particles ...", "exact ...", or "document-level
    approximation ..." when the model's estimate is not of its own p(w))."""
    per_document: np.ndarray
    protocol: str


def known_tokens(words: np.ndarray, vocab_size: int) -> np.ndarray:
    """Boolean mask of the tokens whose id is in 0..V-1 (the others are out of vocabulary: skipped and counted)."""
    words = np.asarray(words)
    return (words >= 0) & (words < vocab_size)


def known_block(block, vocab_size: int):
    """``(block without its out-of-vocabulary tokens, (D,) skipped tokens per document)`` of a
    :class:`inference.gibbs.block.SegmentedBlock` (segments keep their places, possibly emptied; a copy of the
    same class, so this module stays below the Gibbs package that uses it)."""
    known = known_tokens(block.words, vocab_size)
    kept = np.concatenate([[0], np.cumsum(known)]).astype(np.int64)
    doc_tokens = block.token_ptr()
    skipped = np.diff(doc_tokens) - np.diff(kept[doc_tokens])
    return (dataclasses.replace(block, seg_ptr=kept[block.seg_ptr], words=block.words[known]),
            skipped.astype(np.float64))


def exact_scores(block, vocab_size: int, document_logliks, protocol: str) -> LeftToRightScores:
    """The scores of a model that computes every document's log p(w_d) exactly (``document_logliks``: block ->
    (D,) natural logs, of a block with known words only): the same value in both estimate columns."""
    known, skipped = known_block(block, vocab_size)
    loglik = np.asarray(document_logliks(known), dtype=np.float64) if block.n_docs else np.zeros(0)
    scored = np.diff(known.token_ptr()).astype(np.float64)
    return LeftToRightScores(np.column_stack([loglik, loglik, scored, skipped]).reshape(-1, COLUMNS), protocol)


def lda_scores(doc_ids, token_ptr: np.ndarray, words: np.ndarray, alpha, phi_vk: np.ndarray,
               settings: LeftToRight) -> np.ndarray:
    """(D, 4) ``[log p(w_d) by left-to-right, by importance sampling, scored tokens, skipped tokens]`` of every
    document (tokens
    ``token_ptr[d]:token_ptr[d+1]`` of ``words``, in the order given) under LDA with the topics frozen
    (``phi_vk``: V x K, column k = phi_k) and the document prior ``alpha`` (K): the default of
    :meth:`inference.gibbs.model.GibbsModel.left_to_right`, also used for the variational models (their
    E[beta] and alpha)."""
    phi_vk = np.ascontiguousarray(phi_vk, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    V, K = phi_vk.shape
    if alpha.shape != (K,):
        raise ValueError(f"alpha must have {K} values, got shape {alpha.shape}")
    out = np.zeros((len(doc_ids), COLUMNS))
    for d, doc_id in enumerate(doc_ids):
        doc = np.asarray(words[token_ptr[d]:token_ptr[d + 1]])
        known = known_tokens(doc, V)
        est = estimate_document(phi_vk[doc[known]], alpha, settings.particle_seeds(doc_id), settings.resample)
        out[d] = (est.log_left_to_right, est.log_importance, known.sum(), (~known).sum())
    return out


def bits_per_word(loglik: float, tokens: float) -> float:
    """The information rate R = -log2 p(w) / N (thesis 3.56) of a natural-log likelihood over N tokens."""
    return float(-loglik / (tokens * np.log(2.0)))
