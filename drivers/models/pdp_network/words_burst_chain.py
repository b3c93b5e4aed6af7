"""hca's full burstiness on the Gibbs engine (issue 28; Buntine & Mishra, KDD 2014): burst[topic, document] ~
PYP(a_b, b_b, phi_k) per topic per document, phi_k ~ PYP(a, b, nu) over a corpus-level Dirichlet root or the uniform
(or a chain of corpus-level Pitman-Yor vectors above it: pyp-lda's chain, :mod:`.words_chain`).

The documents' burst cells are local to their partition, as :mod:`.words_burst`'s: state ``word_bt`` (U x K over the
block's distinct (document, word) pairs, the indicators t_dkw), the customers recounted from z, the restaurants
(N_dk, T_dk) summed from them; their (n, t) and (N, T) go up as the histogram ``burst_hist``. phi[topic]'s customers
are the tables t_dkw summed: the engine's ``nwk`` (sum over the partition's documents), phi's indicators
``word_tables`` (state ``word_t``, held by the partition whose tables are phi's customers) and the corpus levels'
``word_chain`` (``word_up``), as pyp-lda's chain (its race rule at phi and up, :func:`.words_chain.local_arrays`).

The sweep is the [topic, column] side's kernel (:func:`inference.pdpnet.word_column.column_word_sweep`) with the
document as the value: its bottom cells the partition's own exact counts (no race), phi and up its copies of the
global tables, written back after the sweep. Held out: :mod:`.burst_heldout` with phi[topic] frozen at its mean.
"""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import words_burst, words_chain, words_pyp


def count_tables(model, side: dict) -> tuple:
    L = words_chain.levels(side)
    return words_burst.count_tables() + (words_pyp.count_table(model.shared_rows, model.num_topics),) + (
        (words_chain.count_table(model.shared_rows, L),) if L else ())


def pair_words(model, block) -> tuple:
    """(pairs, every token's pair, a pair's word as a row of the block's vocabulary, the block's vocabulary)."""
    pairs, uidx = words_burst.local_pairs(model, block)
    vocab = model._local_vocab(block)[0]
    return pairs, uidx, np.searchsorted(vocab, pairs % model.vocab_size), vocab


def phi_customers(pword, own_bt, U: int) -> np.ndarray:
    """(U, K) phi's own customers per word of the block: the partition's burst tables t_dkw summed over d."""
    return words_pyp.summed_rows(pword, own_bt, U)


def initial_state(model, block, state: dict, side: dict) -> None:
    """One indicator per occupied own cell at every level (a legal start)."""
    pairs, uidx, pword, vocab = pair_words(model, block)
    own_bn = words_burst.own_customers(uidx, state["z"], len(pairs), model.num_topics)
    state["word_bt"] = (own_bn > 0).astype(np.int32)
    state["word_t"] = (phi_customers(pword, state["word_bt"], len(vocab)) > 0).astype(np.int32)
    if words_chain.levels(side):
        state["word_up"] = words_chain.initial_tables(state["word_t"], words_chain.levels(side))


def table_counts(model, block, state: dict) -> dict:
    """``nwk``: phi's customers (the partition's t_dkw summed); phi's and the corpus levels' indicators;
    ``burst_hist``."""
    pairs, uidx, pword, vocab = pair_words(model, block)
    own_bn = words_burst.own_customers(uidx, state["z"], len(pairs), model.num_topics)
    own_bt = np.asarray(state["word_bt"], np.int64)
    out = {"nwk": (vocab, phi_customers(pword, own_bt, len(vocab)).astype(np.int32)),
           words_pyp.TABLE: (vocab, state["word_t"].astype(np.int32)),
           words_burst.HIST: words_burst.histogram(pairs, own_bn, own_bt, block.n_docs, model.vocab_size)}
    if "word_up" in state:
        out[words_chain.TABLE] = (vocab, state["word_up"].astype(np.int32))
    return out


def upper(tables: dict, nwk=None) -> dict:
    """phi's and the corpus levels' tables as :mod:`.words_chain` reads them (``nwk`` phi's customers)."""
    twk = tables[words_pyp.TABLE]
    return {"nwk": tables["nwk"] if nwk is None else nwk, words_pyp.TABLE: twk,
            words_chain.TABLE: tables.get(words_chain.TABLE, np.zeros((twk.shape[0], 0), np.int64))}


def sweep_args(model, block, state, net, nwk, words, mx, side: dict) -> tuple:
    """((head, tail) of :func:`inference.pdpnet.word_column.column_word_sweep`, the local arrays): the bottom the
    partition's own cells (the document the value), phi and up its copies of the global tables as read, race
    cells with own customers repaired (:func:`.words_chain.local_arrays`)."""
    V, K = model.vocab_size, model.num_topics
    pairs, uidx, pword, vocab = pair_words(model, block)
    own_bn = words_burst.own_customers(uidx, state["z"], len(pairs), K)
    own_bt = state["word_bt"]
    bn, bt = own_bn.copy(), np.asarray(own_bt, np.int64).copy()
    D = block.n_docs
    BN, BT = words_burst.restaurants(pairs, own_bn, D, V), words_burst.restaurants(pairs, bt, D, V)
    up = upper(words[2], nwk)
    der = dict(nk=words[1]["nk"], **words_chain.derived(up))
    L = words_chain.levels(side)
    own_up = state["word_up"] if L else np.zeros((len(vocab), 0), np.int32)
    loc = words_chain.local_arrays(vocab, None, phi_customers(pword, own_bt, len(vocab)), state["word_t"], own_up,
                                   nwk, up[words_pyp.TABLE], up[words_chain.TABLE], der)
    loc.update(der=der, tch=up[words_chain.TABLE])
    mx[0] = max(int(mx[0]), int(bn.max(initial=0)), int(loc["nloc"].max(initial=0)), int(loc["cup"].max(initial=0)))
    mx[1] = max(int(mx[1]), int(bt.max(initial=0)), int(loc["tloc"].max(initial=0)), int(loc["tup"].max(initial=0)))
    chain = words_chain.kernel_args(loc, side, net.a_names, net.b_names, V)
    bottom = side["bottom"]
    pb = (net.a_names.index(bottom[0]), net.b_names.index(bottom[1]), float(side["bottom_gamma"]))
    return ((uidx, pword, pairs // V), (bn, bt, BN, BT, own_bn, own_bt) + chain[:12] + pb + chain[12:]), loc


def write_back(loc: dict, nwk, words) -> None:
    """The sweep's moves into the partition's copies of phi's and the corpus levels' tables (``nwk``: phi's
    customers)."""
    words_chain.write_back(loc, nwk, words[0], loc["tch"], loc["der"])


def _bottom(side: dict) -> dict:
    return {"a": side["bottom"][0], "b": side["bottom"][1]}


def topic_word(tables: dict, side: dict, hyper: dict) -> np.ndarray:
    """(K, V) phi[topic]'s posterior mean (the corpus-level topics; a document's burst vectors are over it)."""
    return words_chain.topic_word(upper(tables), side, hyper)


def loglik(tables: dict, side: dict, hyper: dict) -> float:
    """log p(w, t | z): the burst cells' part of (E12) (``burst_hist``), then phi's and up (:mod:`.words_chain`)."""
    a, b = (float(hyper[k + "_values"][side["bottom"][i]]) for i, k in enumerate("ab"))
    return words_burst.hist_loglik(tables, a, b) + words_chain.loglik(upper(tables), side, hyper)


def sample_hyper(side: dict, tables: dict, hyper: dict, sampled: dict, rng) -> dict:
    """The burst vectors' b and a (restaurants (d, k), :func:`.words_burst.sample_hyper`), then phi's and the
    corpus levels' (:func:`.words_chain.sample_hyper`)."""
    hyper = words_burst.sample_hyper(_bottom(side), tables, hyper, sampled, rng)
    return words_chain.sample_hyper(side, upper(tables), hyper, sampled, rng)
