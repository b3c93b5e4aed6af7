"""Held-out perplexity of any Gibbs model (thesis eq 5.10, extract §9.1), the same estimator for every model.

Protocol (document-level estimation, as the extract's note spells out): the
topics are fixed to the trained posterior mean phi-hat (``frozen_phi``); the
model's OWN sampler runs on each test document with only document-local counts
(``z``, table counts, ...) updated; at each retained sample the segment topic
proportions nu-hat (eqs 5.6 / 6.9 / 7.12; LDA: mu-hat) give every token

    p(w_ijl) = sum_k nu-hat_ijk phi-hat_k,w_ijl,

which is averaged over the samples, and

    perplexity = exp(- sum_tokens log mean_s p_s(w) / number of tokens).

Two protocols, both applied identically to LDA_D, LDA_P, STM, SeqLDA and AdaTM:

* ``observed=None`` (same words): every word of a test document is both fitted
  and scored, the reading of the thesis' text in the extract (§9.1 note). It
  rewards models whose segment proportions can follow their own segment's words
  (a small concentration b): it measures fit, not prediction.
* ``observed=F`` (document completion, the held-out method of Rosen-Zvi et al.
  2004 that the thesis cites: part of each test document is observed, the rest
  predicted): in every segment a random ``ceil(F * L)`` of its L words (at least
  one) are observed, the sampler runs on those only, and the other words are
  scored by the nu-hat of their segment (per segment, so every segment's
  proportions are fitted; the variational ``evaluate`` splits whole documents
  in half the same way). The split is drawn from (seed, document id), so it
  does not depend on the partitioning and is the same for every model. Default
  of the jobs: F = 0.5.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from inference.gibbs.block import SegmentedBlock, task_seed
from inference.heldout import document_seed


@dataclass
class HeldoutSchedule:
    """Sweeps per test document: ``iterations`` in all; samples at burn_in + j * lag, j = 1..samples."""
    iterations: int = 50
    burn_in: int = 25
    lag: int = 5
    samples: int = 5
    observed: float | None = None   # document completion: fraction of every segment observed (None: same words)

    def __post_init__(self):
        if min(self.iterations, self.lag, self.samples) < 1 or self.burn_in < 0 \
                or self.burn_in + self.samples * self.lag > self.iterations:
            raise ValueError(f"held-out schedule: burn-in {self.burn_in} + {self.samples} samples x lag "
                             f"{self.lag} must fit in {self.iterations} iterations")
        if self.observed is not None and not 0.0 < self.observed < 1.0:
            raise ValueError(f"observed fraction must be in (0, 1), got {self.observed}")

    @classmethod
    def default(cls, iterations: int = 50, samples: int = 5, observed: float | None = None) -> "HeldoutSchedule":
        """Samples spread evenly over the second half of ``iterations``."""
        samples = max(1, min(samples, iterations))
        lag = max(1, (iterations - iterations // 2) // samples)
        return cls(iterations, iterations - samples * lag, lag, samples, observed)

    def is_sample(self, t: int) -> bool:
        return t > self.burn_in and (t - self.burn_in) % self.lag == 0 and \
            (t - self.burn_in) // self.lag <= self.samples


@numba.njit(cache=True)
def add_word_probabilities(seg_ptr, words, nu, phi_vk, out):
    """out_i += sum_k nu[s(i), k] phi_vk[w_i, k] for every token i of segment s(i)."""
    K = nu.shape[1]
    for s in range(seg_ptr.shape[0] - 1):
        for i in range(seg_ptr[s], seg_ptr[s + 1]):
            w = words[i]
            p = 0.0
            for k in range(K):
                p += nu[s, k] * phi_vk[w, k]
            out[i] += p


def split_observed(block: SegmentedBlock, fraction: float, seed: int) -> tuple[SegmentedBlock, SegmentedBlock]:
    """Document completion: ``(observed, scored)`` blocks with the same documents and segments; in every segment
    a random ``ceil(fraction * L)`` of its L tokens (at least 1) are observed, the others scored (a segment of
    one token is observed only). The draw depends on (seed, document id) only."""
    obs_ptr, sc_ptr = [0], [0]
    obs_words, sc_words = [], []
    for d in range(block.n_docs):
        rng = np.random.default_rng(document_seed(seed, str(block.doc_ids[d])))
        for s in range(int(block.doc_ptr[d]), int(block.doc_ptr[d + 1])):
            words = block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]]
            keep = max(1, int(np.ceil(fraction * words.shape[0])))
            order = rng.permutation(words.shape[0])
            obs_words.append(words[np.sort(order[:keep])])
            sc_words.append(words[np.sort(order[keep:])])
            obs_ptr.append(obs_ptr[-1] + obs_words[-1].shape[0])
            sc_ptr.append(sc_ptr[-1] + sc_words[-1].shape[0])

    def build(ptr, words):
        flat = np.concatenate(words).astype(np.int32) if words else np.zeros(0, np.int32)
        return SegmentedBlock(block.doc_ids, block.doc_ptr, np.asarray(ptr, dtype=np.int64), flat)

    return build(obs_ptr, obs_words), build(sc_ptr, sc_words)


def completion_blocks(model, block: SegmentedBlock, schedule: HeldoutSchedule, seed: int) -> tuple:
    """``(observed, scored)`` blocks of document completion, each prepared by the model (``schedule.observed``
    None: the whole block both)."""
    if schedule.observed is None:
        block = model.prepare_block(block)
        return block, block
    observed, scored = split_observed(block, schedule.observed, seed)
    return model.prepare_block(observed), model.prepare_block(scored)


def heldout_loglik(model, block: SegmentedBlock, hyper: dict, phi_vk: np.ndarray,
                   schedule: HeldoutSchedule, seed: int, partition: int, token_rows=None) -> np.ndarray:
    """``[sum_tokens log mean_s p_s(w), tokens, documents]`` of one block (as it comes from the corpus); with
    ``schedule.observed`` the sampler sees the observed part of every segment and the rest is scored;
    ``token_rows(scored)``: every scored token's own (N, K) row p(w | k) instead of ``phi_vk``'s (a word side
    indexed by more than the topic).

    ``phi_vk`` is V x K (column k = phi-hat_k). Draws are seeded by
    ``task_seed(seed, iteration, partition, 10 + purpose)``, so a retried task
    gives the same number.
    """
    n_docs = float(block.n_docs)
    block, scored = completion_blocks(model, block, schedule, seed)
    if block.n_tokens == 0 or scored.n_tokens == 0:
        return np.array([0.0, 0.0, n_docs])
    phi_vk = np.ascontiguousarray(phi_vk, dtype=np.float64)
    prob = np.zeros(scored.n_tokens)
    taken = 0
    rows = None if token_rows is None else token_rows(scored)
    seg = None if rows is None else np.repeat(np.arange(scored.n_segments), np.diff(scored.seg_ptr))
    for state in frozen_chain(model, block, hyper, phi_vk, schedule, seed, partition):
        nu = np.ascontiguousarray(model.segment_topic(block, state, hyper), dtype=np.float64)
        if rows is None:
            add_word_probabilities(scored.seg_ptr, scored.words, nu, phi_vk, prob)
        else:
            prob += (nu[seg] * rows).sum(axis=1)
        taken += 1
    return np.array([float(np.log(prob / taken).sum()), float(scored.n_tokens), n_docs])


def frozen_chain(model, block: SegmentedBlock, hyper: dict, phi_vk: np.ndarray,
                 schedule: HeldoutSchedule, seed: int, partition: int):
    """The model's own sampler on ``block`` (as the model sees it: ``prepare_block`` done) with the topics fixed
    to ``phi_vk`` (V x K): yields the state at every sample of ``schedule`` (held-out scoring, ``infer``).
    Seeded by ``task_seed(seed, t, partition, 10)`` (sweeps) and ``(..., 11)`` (per-document hyperparameters)."""
    V, K = phi_vk.shape
    nwk = np.zeros((model.shared_rows, K), dtype=np.int32)   # init_state adds into these; frozen sweeps never
    # read them (the model's shared table: words, or a tree's edges)
    nk = np.zeros(K, dtype=np.int64)
    state = model.init_state(block, hyper, nwk, nk, task_seed(seed, 0, partition, 10))
    for t in range(1, schedule.iterations + 1):
        model.sweep(block, state, hyper, nwk, nk, task_seed(seed, t, partition, 10), frozen_phi=phi_vk)
        model.local_hyper_update(block, state, hyper, task_seed(seed, t, partition, 11))
        if schedule.is_sample(t):
            yield state


def frozen_proportions(model, block: SegmentedBlock, hyper: dict, phi_vk: np.ndarray, schedule: HeldoutSchedule,
                       seed: int, partition: int) -> dict:
    """The sums of the document and segment topic proportions over the samples of :func:`frozen_chain`
    (``infer``): ``{"doc": (D, K), "seg": (S, K), "samples": [n]}``."""
    acc = {"doc": np.zeros((block.n_docs, model.num_topics)),
           "seg": np.zeros((block.n_segments, model.num_topics)), "samples": np.zeros(1)}
    for state in frozen_chain(model, block, hyper, phi_vk, schedule, seed, partition):
        acc["doc"] += model.doc_topic(block, state, hyper)
        acc["seg"] += model.segment_topic(block, state, hyper)
        acc["samples"] += 1
    return acc


def perplexity(loglik: float, tokens: float) -> float:
    """exp(- loglik / tokens) (eq 5.10)."""
    return float(np.exp(-loglik / tokens))
