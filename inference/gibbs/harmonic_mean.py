"""The harmonic-mean estimate of held-out likelihood (Wallach's thesis §3.5.2, eq. (3.57); extract §5.2), the
estimator of the thesis' chapter-5 figures: a comparison aid here, not a default (left-to-right is).

With the training state frozen, every test document's latent variables are sampled given all of its words (the
model's own frozen chain; a burn-in, then S samples, thinned), and

    P(w | training) ~ HM = S / sum_s 1 / P(w | latent^(s)),    log HM = log S - logsumexp_s(-l_s).

Under the exact posterior E[1 / P(w | z)] = sum_z P(z | w) / P(w | z) = sum_z P(z) / P(w) = 1 / P(w): the mean of
1 / P(w | z^(s)) is unbiased for 1 / P(w) (tested against enumeration), so HM itself is biased upwards (Jensen)
and unstable (Newton & Raftery 1994), and it flatters models with latent topics, whose every z_n is drawn given
the later words too (the thesis' own critique).

Two aggregations (extract §6.2): ``whole_set``, the thesis' one harmonic mean over the samples of the summed
l_s = sum_d l_{s,d} (documents' chains run independently here, given the training state only), and
``per_document``, the sum over documents of each one's harmonic mean (a different estimator).

The words' likelihood given a sample is the model's (:meth:`inference.gibbs.model.GibbsModel.sample_word_logliks`):
sum_n log phi_{z_n}(w_n) for a topic model (:func:`topic_logliks`), the cluster's Dirichlet-multinomial for the
DP mixture.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from inference.gibbs.heldout import frozen_chain
from inference.left_to_right import known_block


def log_harmonic_mean(logliks: np.ndarray, axis: int = 0) -> np.ndarray:
    """log S - logsumexp(-l) over ``axis`` (the samples)."""
    logliks = np.asarray(logliks, dtype=np.float64)
    return math.log(logliks.shape[axis]) - logsumexp(-logliks, axis=axis)


@dataclass
class HarmonicMean:
    """The samples' word log-likelihoods ``logliks`` (S, D) of D documents and their ``tokens`` (scored) and
    ``skipped`` (out of vocabulary)."""
    logliks: np.ndarray
    tokens: int
    skipped: int

    @property
    def whole_set(self) -> float:
        """log HM of the whole set (3.57): one harmonic mean of sum_d l_{s,d} over the samples."""
        return float(log_harmonic_mean(self.logliks.sum(axis=1)))

    @property
    def per_document(self) -> float:
        """sum_d log HM_d: every document's own harmonic mean."""
        return float(log_harmonic_mean(self.logliks, axis=0).sum())


def topic_logliks(model, block, hyper: dict, phi_vk: np.ndarray, schedule, seed: int, partition: int) -> np.ndarray:
    """(S, D) sum over document d's tokens of log phi_{z_n}(w_n) at every sample of the model's frozen chain
    (:func:`inference.gibbs.heldout.frozen_chain`; a model whose state holds every token's topic ``z`` and whose
    words come from their topics: LDA, cluster-lda)."""
    log_phi = np.log(phi_vk)
    doc_of = np.repeat(np.arange(block.n_docs), np.diff(block.token_ptr()))
    rows = [np.bincount(doc_of, weights=log_phi[block.words, state["z"]], minlength=block.n_docs)
            for state in frozen_chain(model, block, hyper, phi_vk, schedule, seed, partition)]
    return np.array(rows).reshape(len(rows), block.n_docs)


def estimate(model, block, hyper: dict, phi_vk: np.ndarray, schedule, seed: int, partition: int) -> HarmonicMean:
    """The harmonic-mean samples of a block of test documents (out-of-vocabulary tokens skipped and counted);
    ``phi_vk`` (V x K) the topics (None for a model without them)."""
    if phi_vk is not None:
        phi_vk = np.ascontiguousarray(phi_vk, dtype=np.float64)
    known, skipped = known_block(block, model.vocab_size)
    seen = model.prepare_block(known)
    if seen.n_docs != known.n_docs:
        raise ValueError(f"{model.name}: the harmonic mean scores the block's own documents")
    logliks = model.sample_word_logliks(seen, hyper, phi_vk, schedule, seed, partition)
    return HarmonicMean(np.asarray(logliks, dtype=np.float64), int(seen.n_tokens), int(skipped.sum()))
