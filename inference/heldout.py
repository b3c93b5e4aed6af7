"""Held-out evaluation of topic models: document completion, fold-in and NPMI coherence.

Pure numpy (the E-step is the numba kernel :func:`inference.estep.estep_documents`);
no Spark here, so ``jobs/evaluate.py`` runs these functions per partition and the
benchmark scores any topic-word matrix (this project's, Spark MLlib's, scikit-learn's)
with exactly the same estimator.

Document completion (Wallach et al. 2009, "Evaluation methods for topic models", §4):
the tokens of each test document d are split at random into an observed half
w_d^obs and a held-out half w_d^ho; theta_d is estimated from w_d^obs alone by
folding in (the variational E-step with the topics fixed) and the held-out half
is scored by

    log p(w_d^ho | w_d^obs) ~= sum_{w in w_d^ho} log sum_k theta_dk beta_kw,
    theta_dk = gamma_dk / sum_l gamma_dl                                (posterior mean)

    perplexity = exp(- sum_d log p(w_d^ho | w_d^obs) / sum_d |w_d^ho|).

Every model is folded in with its own alpha; on short documents (a few observed
tokens) the perplexity depends noticeably on it, a small alpha giving a peaked theta.

NPMI coherence (Bouma 2009; Lau, Newman & Baldwin 2014): for the top-N words of a
topic, the mean over the N(N-1)/2 word pairs of

    NPMI(w_i, w_j) = log[p(w_i, w_j) / (p(w_i) p(w_j))] / -log p(w_i, w_j)

with p(w) = D(w) / D and p(w_i, w_j) = D(w_i, w_j) / D counted over the documents
of a reference corpus (D(.) = number of documents containing the word(s)).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from inference.blocks import DocBlock
from inference.estep import estep_documents, initial_gamma
from inference.word_weights import document_offsets, scale_by_word_maximum

#: a pair of words that never co-occur in the reference corpus scores the minimum NPMI
NPMI_NEVER_COOCCUR = -1.0
#: a pair present in every reference document (p(w_i, w_j) = 1, NPMI = 0/0) scores the maximum
NPMI_ALWAYS_COOCCUR = 1.0


# --------------------------------------------------------------------------- document completion split

def document_seed(seed: int, doc_id: str) -> int:
    """A 64-bit seed from (seed, doc_id) by BLAKE2b: stable across processes, machines and Python versions."""
    digest = hashlib.blake2b(f"{int(seed)}\x00{doc_id}".encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def split_document_completion(counts: np.ndarray, seed: int, doc_id: str) -> tuple[np.ndarray, np.ndarray]:
    """Split one document's tokens into an observed and a held-out half.

    ``counts`` are the document's term counts (any order of terms). floor(N/2) of
    its N tokens, drawn uniformly without replacement (a multivariate
    hypergeometric draw over the term counts), are observed; the other
    ceil(N/2) are held out. The draw depends only on ``(seed, doc_id)`` and the
    counts (in the corpus' order of terms, ascending ids), never on time,
    partitioning or the order documents are processed in.

    Returns ``(observed_counts, heldout_counts)``, aligned with ``counts``.
    """
    counts = np.asarray(counts)
    whole = np.rint(counts).astype(np.int64)
    if not np.array_equal(whole, counts) or np.any(whole < 0):
        raise ValueError(f"document {doc_id!r}: term counts must be non-negative integers")
    rng = np.random.default_rng(document_seed(seed, doc_id))
    observed = rng.multivariate_hypergeometric(whole, int(whole.sum()) // 2) if whole.size else whole
    return observed.astype(np.float64), (whole - observed).astype(np.float64)


@dataclass
class CompletionSplit:
    """A block's documents with >= 2 tokens, split by :func:`split_document_completion`.

    ``observed`` and ``heldout`` hold the same documents in the same order and keep
    the block's local vocabulary (``vocab_ids``), so one local topic-word matrix
    serves both; zero counts are dropped from each half.
    """
    observed: DocBlock
    heldout: DocBlock
    skipped: int          # documents with fewer than 2 tokens (nothing to split)


def split_block(block: DocBlock, seed: int) -> CompletionSplit:
    """Document-completion split of every document of ``block`` with at least 2 tokens."""
    keep = block.doc_lengths() >= 2
    observed, heldout = np.zeros_like(block.counts), np.zeros_like(block.counts)
    for d in np.flatnonzero(keep):
        s, e = block.indptr[d], block.indptr[d + 1]
        observed[s:e], heldout[s:e] = split_document_completion(block.counts[s:e], seed, block.doc_ids[d])
    return CompletionSplit(_subset(block, keep, observed), _subset(block, keep, heldout),
                           int(block.n_docs - keep.sum()))


def _subset(block: DocBlock, keep: np.ndarray, counts: np.ndarray) -> DocBlock:
    """The documents where ``keep`` (D,) is true, with ``counts`` aligned to the block's entries; zeros dropped."""
    doc_of_entry = np.repeat(np.arange(block.n_docs), np.diff(block.indptr))
    entries = keep[doc_of_entry] & (counts > 0)
    new_index = np.cumsum(keep) - 1
    n_kept = int(keep.sum())
    indptr = np.zeros(n_kept + 1, dtype=np.int64)
    np.cumsum(np.bincount(new_index[doc_of_entry[entries]], minlength=n_kept), out=indptr[1:])
    return DocBlock(doc_ids=block.doc_ids[keep], indptr=indptr, local_terms=block.local_terms[entries],
                    counts=counts[entries], vocab_ids=block.vocab_ids)


# --------------------------------------------------------------------------- fold-in

@dataclass
class FoldIn:
    gamma: np.ndarray        # (D, K) variational Dirichlet parameters
    alpha_stats: np.ndarray  # (K,) sum_d E_q[log theta_dk]
    doc_elbo: np.ndarray     # (D,) the kernel's per-document ELBO terms (see estep_documents)

    @property
    def theta(self) -> np.ndarray:
        """Posterior mean topic proportions gamma_d / sum_k gamma_dk."""
        return self.gamma / self.gamma.sum(axis=1, keepdims=True)


def local_topic_word(block: DocBlock, topic_word: np.ndarray) -> np.ndarray:
    """The (U x K) rows of a (K x V) topic-word matrix for the block's local vocabulary."""
    return np.ascontiguousarray(np.asarray(topic_word, dtype=np.float64)[:, block.vocab_ids].T)


def fold_in(block: DocBlock, topic_word: np.ndarray, alpha: np.ndarray, tol: float = 1e-3,
            max_iter: int = 100, log_scale: np.ndarray | None = None) -> FoldIn:
    """Fit each document's gamma with the topics fixed (the E-step of Alg. 1 from the cold start).

    ``topic_word`` (K x V, nonnegative) is used where the kernel expects
    exp(E_q[log beta]): pass topic-word *probabilities* beta (rows summing to 1) to
    fold in with log beta (the document-completion estimator, identical for any
    model that has a topic-word matrix), or the word factor of a variational model
    (:func:`word_factor`: exp(E_q[log beta]) scaled per word, and ``log_scale`` the
    (V,) logs of the scales, added back to the documents' ELBO terms) to run the exact
    E-step of eq (3.4) (``infer``, the held-out ELBO).
    gamma starts at alpha_k + N_d / K; no lambda statistics are accumulated.
    """
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    if topic_word.shape[0] != alpha.shape[0]:
        raise ValueError(f"topic_word has {topic_word.shape[0]} topics but alpha has {alpha.shape[0]}")
    gamma = initial_gamma(block.indptr, block.counts, alpha)
    _, alpha_stats, doc_elbo, _, _ = estep_documents(
        block.indptr, block.local_terms, block.counts, gamma, local_topic_word(block, topic_word), alpha,
        float(tol), int(max_iter), False, False)
    if log_scale is not None:
        doc_elbo += document_offsets(block.indptr, block.local_terms, block.counts,
                                     np.asarray(log_scale)[block.vocab_ids])
    return FoldIn(gamma, alpha_stats, doc_elbo)


def word_factor(log_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fold-in's (K x V) word factor from a model's E_q[log beta] (K x V): every word's column scaled to a
    maximum of 1, and the (V,) logs of the scales (:mod:`inference.word_weights`)."""
    return scale_by_word_maximum(log_weights, topic_axis=0)


# --------------------------------------------------------------------------- completion likelihood

def completion_log_likelihood(heldout: DocBlock, theta: np.ndarray, topic_word: np.ndarray) -> np.ndarray:
    """Per-document sum over held-out tokens of log sum_k theta_dk beta_kw.

    ``theta`` (D x K) rows align with ``heldout``'s documents, ``topic_word`` is K x V
    probabilities. Returns a (D,) array of log-likelihoods (-inf where a held-out
    word has probability 0 under every topic the document uses).
    """
    return _completion_log_likelihood(heldout.indptr, heldout.local_terms, heldout.counts,
                                      np.ascontiguousarray(theta, dtype=np.float64),
                                      local_topic_word(heldout, topic_word))


@numba.njit(cache=True, nogil=True)
def _completion_log_likelihood(indptr, local_terms, counts, theta, beta_local):
    n_docs, n_topics = theta.shape
    out = np.zeros(n_docs)
    for d in range(n_docs):
        for j in range(indptr[d], indptr[d + 1]):
            row = beta_local[local_terms[j]]
            p = 0.0
            for k in range(n_topics):
                p += theta[d, k] * row[k]
            out[d] += counts[j] * math.log(p) if p > 0.0 else -math.inf
    return out


@dataclass
class CompletionScore:
    loglik: float           # sum of held-out log-likelihoods
    heldout_tokens: float
    documents: int          # documents scored
    skipped: int            # documents with < 2 tokens

    def as_vector(self) -> np.ndarray:
        return np.array([self.loglik, self.heldout_tokens, self.documents, self.skipped], dtype=np.float64)

    @classmethod
    def from_vector(cls, v) -> "CompletionScore":
        return cls(float(v[0]), float(v[1]), int(v[2]), int(v[3]))

    @property
    def perplexity(self) -> float:
        """exp(-loglik / held-out tokens)."""
        return float(np.exp(-self.loglik / self.heldout_tokens)) if self.heldout_tokens else float("nan")


def score_document_completion(block: DocBlock, topic_word: np.ndarray, alpha: np.ndarray, seed: int,
                              tol: float = 1e-3, max_iter: int = 100) -> CompletionScore:
    """Split, fold in the observed halves with log beta, score the held-out halves (one block)."""
    split = split_block(block, seed)
    theta = fold_in(split.observed, topic_word, alpha, tol, max_iter).theta
    loglik = completion_log_likelihood(split.heldout, theta, topic_word)
    return CompletionScore(float(loglik.sum()), split.heldout.n_tokens, split.heldout.n_docs, split.skipped)


# --------------------------------------------------------------------------- NPMI coherence

def cooccurrence_counts(block: DocBlock, word_ids: np.ndarray, pairs: np.ndarray | None = None) -> np.ndarray:
    """Document co-occurrence counts of ``word_ids`` (M ascending global ids) in one block.

    Builds the binary document x word indicator X (D x M) of the block and C = X^T X: C[i, j] = number of
    documents containing both word i and word j, so the diagonal holds the document frequencies. Without
    ``pairs`` returns C dense (M x M, int64); with ``pairs`` ((P, 2) indices into ``word_ids``, see
    :func:`word_pairs`) only what NPMI needs, as one vector [diagonal (M), C at the pairs (P)] (C stays sparse:
    memory follows the pairs, not M^2; :class:`PairCounts` reads the vector).
    """
    word_ids = np.asarray(word_ids, dtype=np.int64)
    position = np.clip(np.searchsorted(word_ids, block.vocab_ids), 0, max(word_ids.size - 1, 0))
    is_top = (word_ids[position] == block.vocab_ids) if word_ids.size else np.zeros(block.vocab_ids.size, bool)
    local_column = np.where(is_top, position, -1)            # local term -> indicator column, or -1
    cols = local_column[block.local_terms]
    hit = (cols >= 0) & (block.counts > 0)
    rows = np.repeat(np.arange(block.n_docs), np.diff(block.indptr))[hit]
    indicator = sp.csr_matrix((np.ones(rows.size, dtype=np.int64), (rows, cols[hit])),
                              shape=(block.n_docs, word_ids.size))
    indicator.data[:] = 1      # a term listed twice in one document still counts once
    product = (indicator.T @ indicator).tocsr()
    if pairs is None:
        return np.asarray(product.toarray(), dtype=np.int64)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    joint = np.asarray(product[pairs[:, 0], pairs[:, 1]]).ravel() if len(pairs) else np.zeros(0)
    return np.concatenate([product.diagonal(), joint]).astype(np.int64)


def word_pairs(*index_pairs) -> np.ndarray:
    """The distinct unordered pairs (i < j) among ``(a, b)`` arrays of indices into ``word_ids``, sorted."""
    a = np.concatenate([np.ravel(p[0]) for p in index_pairs]).astype(np.int64)
    b = np.concatenate([np.ravel(p[1]) for p in index_pairs]).astype(np.int64)
    keep = a != b
    lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    return np.unique(np.stack([lo, hi], axis=1), axis=0) if lo.size else np.zeros((0, 2), dtype=np.int64)


class PairCounts:
    """The counts :func:`cooccurrence_counts` gives with ``pairs``, read as the dense matrix would be:
    ``counts[a, b]`` (index arrays; a pair not counted raises KeyError) and ``counts.diagonal()``."""

    def __init__(self, num_words: int, pairs: np.ndarray, vector: np.ndarray):
        self.df = np.asarray(vector[:num_words], dtype=np.int64)
        self.keys = pairs[:, 0] * num_words + pairs[:, 1]
        self.joint = np.asarray(vector[num_words:], dtype=np.int64)
        self.num_words = num_words

    def diagonal(self) -> np.ndarray:
        return self.df

    def __getitem__(self, index) -> np.ndarray:
        a, b = (np.asarray(i, dtype=np.int64) for i in index)
        key = np.minimum(a, b) * self.num_words + np.maximum(a, b)
        where = np.clip(np.searchsorted(self.keys, key), 0, max(len(self.keys) - 1, 0))
        found = (self.keys[where] == key) if len(self.keys) else np.zeros(key.shape, bool)
        if not np.all(found | (a == b)):
            raise KeyError("a pair that was not counted")
        return np.where(a == b, self.df[a], self.joint[where] if len(self.joint) else 0)


def npmi(joint: np.ndarray, df_i: np.ndarray, df_j: np.ndarray, n_docs: int) -> np.ndarray:
    """NPMI(w_i, w_j) = log[p(w_i, w_j) / (p(w_i) p(w_j))] / -log p(w_i, w_j) from document counts.

    A pair that never co-occurs (D(w_i, w_j) = 0) scores -1, the limit of NPMI as
    p(w_i, w_j) -> 0; a pair in every document (p(w_i, w_j) = 1) scores 1.
    """
    joint = np.asarray(joint, dtype=np.float64)
    out = np.full(joint.shape, NPMI_NEVER_COOCCUR)
    seen = joint > 0
    p_ij = joint[seen] / n_docs
    pmi = np.log(p_ij) - np.log(np.asarray(df_i, dtype=np.float64)[seen] / n_docs) \
        - np.log(np.asarray(df_j, dtype=np.float64)[seen] / n_docs)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[seen] = np.where(p_ij < 1.0, pmi / -np.log(p_ij), NPMI_ALWAYS_COOCCUR)
    return out


def top_word_ids(topic_word: np.ndarray, n: int) -> np.ndarray:
    """(K x n) ids of each topic's n most probable words, most probable first (ties: lower id first)."""
    return np.argsort(-np.asarray(topic_word), axis=1, kind="stable")[:, :n]


def distinct_word_ids(top_words: np.ndarray) -> np.ndarray:
    """The distinct word ids among all topics' top words, ascending (the columns of the counts)."""
    return np.unique(np.asarray(top_words, dtype=np.int64))


def npmi_coherence(top_words: np.ndarray, word_ids: np.ndarray, counts: np.ndarray, n_docs: int) -> dict:
    """Per-topic and overall NPMI coherence.

    ``top_words`` (K x N) global ids of each topic's top words; ``word_ids`` and
    ``counts`` as returned by :func:`distinct_word_ids` and :func:`cooccurrence_counts`
    (summed over the reference corpus); ``n_docs`` the reference documents.
    A topic's coherence is the mean NPMI over its N(N-1)/2 pairs; the overall
    coherence is the mean over topics.
    """
    top_words = np.asarray(top_words, dtype=np.int64)
    index = np.searchsorted(word_ids, top_words)
    if not np.array_equal(word_ids[index], top_words):
        raise ValueError("top_words contains ids missing from word_ids")
    df = counts.diagonal()
    i, j = np.triu_indices(top_words.shape[1], k=1)
    per_topic = []
    for row in index:
        a, b = row[i], row[j]
        per_topic.append(float(np.mean(npmi(counts[a, b], df[a], df[b], n_docs))) if a.size else float("nan"))
    return {"mean": float(np.mean(per_topic)), "per_topic": per_topic}


def crosslingual_npmi(top_a: np.ndarray, top_b: np.ndarray, word_ids: np.ndarray, counts: np.ndarray,
                      n_docs: int) -> dict:
    """CNPMI (Hao, Boyd-Graber & Paul 2018): per topic, the mean NPMI over the N_a x N_b pairs of a top word of
    language A and a top word of language B, with document frequencies over aligned tuples (a pair co-occurs
    when the tuple's A side has one word and its B side the other). ``top_a``/``top_b`` (K x N) global ids;
    ``word_ids``/``counts`` as for :func:`npmi_coherence`, counted over the aligned tuples (global ids keep the
    languages apart). Document frequencies, not token counts (the pitfall of the reference code)."""
    top_a, top_b = np.asarray(top_a, dtype=np.int64), np.asarray(top_b, dtype=np.int64)
    ia, ib = np.searchsorted(word_ids, top_a), np.searchsorted(word_ids, top_b)
    if not (np.array_equal(word_ids[ia], top_a) and np.array_equal(word_ids[ib], top_b)):
        raise ValueError("top words contain ids missing from word_ids")
    df = counts.diagonal()
    per_topic = []
    for row_a, row_b in zip(ia, ib):
        a, b = np.repeat(row_a, len(row_b)), np.tile(row_b, len(row_a))
        per_topic.append(float(np.mean(npmi(counts[a, b], df[a], df[b], n_docs))))
    return {"mean": float(np.mean(per_topic)), "per_topic": per_topic}
