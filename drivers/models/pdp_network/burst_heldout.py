"""Held-out documents under the burstiness word side (issue 28, :mod:`.words_burst`): a test document's own burst
vectors burst[k, d] start empty and are seated from its own tokens, over phi[topic] frozen at the trained topics
``phi_vk`` (eq 5.10's topics fixed; ``topics`` shows phi[topic], the corpus-level topics).

phi_k enters the kernels as pseudo-counts x_kw = phi_vk[w, k] FROZEN_SCALE with beta0 = :data:`.words_bigram.PSEUDO`:
(beta0 + x_kw) / (V beta0 + sum x_k) is phi_vk[w, k] to machine precision, and the document's own tables, which the
kernels add to x (phi's customers), move it by at most N / FROZEN_SCALE (~1e-9 for a 1,000-token document).

- document completion and ``infer``: the model's sweep on the observed tokens (the bigram kernel with the document
  as context, :func:`.words_burst.sweep_args`), every scored token p(w) = sum_k nu_k ((n_dkw - a t_dkw) +
  (b + a T_dk) phi_k(w)) / (b + N_dk) of the sample's cells, averaged over the samples;
- left to right: :func:`inference.pdpnet.bigram_left_to_right.bigram_particles` with the document's distinct words
  its pairs and the document its one context, the cells starting empty: every particle's earlier tokens seated in
  its own burst vectors (the restaurant continued per particle, exact in the model with phi fixed).
"""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import left_to_right_scores, words_burst
from drivers.models.pdp_network.words_bigram import PSEUDO
from inference.gibbs import heldout

FROZEN_SCALE = 1e12
PROTOCOL = ("; the burst side: every particle's earlier tokens seated in the document's own burst vectors (empty at "
            "the start) over phi[topic] fixed at the trained topics")


def frozen_root(phi_vk) -> np.ndarray:
    """(V, K) phi's pseudo-counts x_kw (module docstring)."""
    return np.ascontiguousarray(np.asarray(phi_vk, np.float64) * FROZEN_SCALE)


def values(hyper: dict) -> tuple[float, float]:
    a, b = words_burst.names(hyper["word_pyp"])
    return float(hyper["a_values"][a]), float(hyper["b_values"][b])


def scored_rows(model, observed, state, scored, phi_vk, a: float, b: float) -> np.ndarray:
    """(N, K) p(w | k) of the scored tokens given the observed tokens' burst cells (module docstring)."""
    V = model.vocab_size
    pairs, uidx = words_burst.local_pairs(model, observed)
    own_n = words_burst.own_customers(uidx, state["z"], len(pairs), model.num_topics)
    own_t = np.asarray(state["word_t"], np.int64)
    N = words_burst.restaurants(pairs, own_n, observed.n_docs, V)
    T = words_burst.restaurants(pairs, own_t, observed.n_docs, V)
    doc = np.repeat(np.arange(scored.n_docs, dtype=np.int64), np.diff(scored.token_ptr()))
    keys = doc * V + scored.words.astype(np.int64)
    at = np.minimum(np.searchsorted(pairs, keys), max(len(pairs) - 1, 0))
    found = (pairs[at] == keys)[:, None] if len(pairs) else np.zeros((len(keys), 1), np.bool_)
    n = np.where(found, own_n[at], 0) if len(pairs) else 0.0
    t = np.where(found, own_t[at], 0) if len(pairs) else 0.0
    return ((n - a * t) + (b + a * T[doc]) * phi_vk[scored.words]) / (b + N[doc])


def document_words(doc, x, V: int, pw: int, pb: int) -> tuple:
    """A test document's word-side arguments of :func:`inference.pdpnet.bigram_left_to_right.bigram_particles`:
    its distinct words the pairs, the document the one context, the cells empty, phi's pseudo-counts ``x`` (V, K)
    at its words, V, the side's discount and concentration among the network's, beta0 = PSEUDO."""
    words, uidx = np.unique(doc.words, return_inverse=True)
    U, K = len(words), x.shape[1]
    return (uidx.reshape(-1).astype(np.int64), np.arange(U, dtype=np.int64), np.zeros(U, np.int64),
            np.zeros((U, K), np.int64), np.zeros((U, K), np.int64), np.zeros((1, K), np.int64),
            np.zeros((1, K), np.int64), np.ascontiguousarray(x[words]), x.sum(axis=0), V, pw, pb, PSEUDO)


def frozen_words(frozen_phi) -> tuple | None:
    """The ``words`` of a sweep with the topics frozen (phi's pseudo-counts), or None outside one."""
    return None if frozen_phi is None else (None, {words_burst.FROZEN: frozen_root(frozen_phi)}, None)


def heldout_loglik(model, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
    """Document completion (:func:`inference.gibbs.heldout.heldout_loglik`'s split and chain), every scored token's
    rows from the sample's burst cells (:func:`scored_rows`)."""
    n_docs = float(block.n_docs)
    block, scored = heldout.completion_blocks(model, block, schedule, seed)
    if block.n_tokens == 0 or scored.n_tokens == 0:
        return np.array([0.0, 0.0, n_docs])
    phi_vk = np.ascontiguousarray(phi_vk, dtype=np.float64)
    a, b = values(hyper)
    seg = np.repeat(np.arange(scored.n_segments), np.diff(scored.seg_ptr))
    prob, taken = np.zeros(scored.n_tokens), 0
    for state in heldout.frozen_chain(model, block, hyper, phi_vk, schedule, seed, partition):
        nu = np.ascontiguousarray(model.segment_topic(block, state, hyper), dtype=np.float64)
        prob += (nu[seg] * scored_rows(model, block, state, scored, phi_vk, a, b)).sum(axis=1)
        taken += 1
    return np.array([float(np.log(prob / taken).sum()), float(scored.n_tokens), n_docs])


def left_to_right(model, block, hyper, phi_vk, settings):
    """Left to right (module docstring; :func:`.left_to_right_scores.network_scores`)."""
    x, side = frozen_root(phi_vk), hyper["word_pyp"]
    a_name, b_name = words_burst.names(side)

    def words_of(doc, net):
        return document_words(doc, x, model.vocab_size, net.a_names.index(a_name), net.b_names.index(b_name))

    return left_to_right_scores.network_scores(block, phi_vk, settings, lambda doc: model.test_document_start(
        doc, hyper), words_of, PROTOCOL)
