"""pdp-network's bigram-topic word side over a Pitman-Yor psi[topic] (issue 28; Wallach's hierarchical prior 2b,
Table 3.3, as a network: phi[topic, previous_word] ~ PYP(a, b, psi_k) (a DP when a = 0), psi_k ~ PYP(a1, b1, nu)
over a corpus-level Dirichlet root, the uniform or a chain of corpus-level Pitman-Yor vectors).

The sweep is the [topic, column] side's (:func:`inference.pdpnet.word_column.column_word_sweep`) with the
restaurant's value the previous word (one partition: the in-process sampler draw for draw,
tests/kernels/test_pdpnet_word_bigram_psi.py). Tables: the bottom cells are the bigram side's keyed
``bigram_customers``/``bigram_word_tables`` (:mod:`.words_bigram`; a partition's indicators: state ``word_bt``
over its pairs), psi's indicators ``word_tables`` (state ``word_t`` over its words; psi's customers are
sum_{w'} t_{(k,w'),w}), the corpus levels' ``word_chain`` (state ``word_up``); every indicator held by a partition
and summed, the race rule at every level bottom up (:mod:`.words_chain`). A partition's local copies live for one
synchronisation (as the bigram side's). Held-out documents: the bigram side's left-to-right with psi_k frozen at
its trained predictive, a document's new bigram tables joining psi as customers (:func:`.words_bigram.frozen_psi`)."""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import words_bigram, words_chain, words_pyp
from drivers.models.pdp_network.words_bigram import lookup, cell_values, upper_tables

LOCAL = "_bigram_psi_local"


def is_psi(side: dict | None) -> bool:
    """A bigram side whose psi[topic] is a Pitman-Yor vector (its cells' parameters in ``bottom``)."""
    return bool(side and side.get("bigram") and side.get("bottom"))


def count_tables(model, side: dict) -> tuple:
    V, K, L = model.vocab_size, model.num_topics, words_chain.levels(side)
    return words_bigram.count_tables(V, K) + (words_pyp.count_table(model.shared_rows, K),) + (
        (words_chain.count_table(model.shared_rows, L),) if L else ())


def pair_words(model, block) -> tuple:
    """(pairs, every token's pair, a pair's word as a row of the block's vocabulary, the vocabulary)."""
    pairs, uidx = model._local_pairs(block)
    vocab = model._local_vocab(block)[0]
    return pairs, uidx, np.searchsorted(vocab, pairs % model.vocab_size).astype(np.int64), vocab


def _own_psi(pword, own_bt, U: int) -> np.ndarray:
    out = np.zeros((U, own_bt.shape[1]), np.int64)
    np.add.at(out, pword, own_bt)
    return out


def initial_state(model, block, state: dict, side: dict) -> None:
    """One indicator per occupied own cell at every level (a legal start)."""
    pairs, uidx, pword, vocab = pair_words(model, block)
    state["word_bt"] = words_bigram.initial_tables(pairs, uidx, state["z"], model.num_topics).astype(np.int32)
    state["word_t"] = (_own_psi(pword, state["word_bt"], len(vocab)) > 0).astype(np.int32)
    if words_chain.levels(side):
        state["word_up"] = words_chain.initial_tables(state["word_t"], words_chain.levels(side))


def table_counts(model, block, state: dict) -> dict:
    pairs, uidx, _, vocab = pair_words(model, block)
    out = words_bigram.table_counts(pairs, uidx, {"z": state["z"], "word_t": state["word_bt"]}, model.num_topics)
    out[words_pyp.TABLE] = (vocab, state["word_t"].astype(np.int32))
    if "word_up" in state:
        out[words_chain.TABLE] = (vocab, state["word_up"].astype(np.int32))
    return out


def local_arrays(model, block, state: dict, der: dict, tables: dict) -> dict:
    """A partition's copies of the global values over its pairs and words (the kernel's arrays); its race cells
    with own customers get an own indicator, bottom up (the repair)."""
    K, V = model.num_topics, model.vocab_size
    pairs, uidx, pword, vocab = pair_words(model, block)
    cells = pairs[:, None] * K + np.arange(K)[None, :]
    bn = lookup(der["bigram_keys"], der["bigram_n"], cells).astype(np.int64)
    bt = lookup(der["bigram_keys"], der["bigram_t"], cells).astype(np.int64)
    race = lookup(der["bigram_keys"], der["bigram_race"].astype(np.int64), cells) > 0
    own_bn = words_pyp.own_customers(uidx, state["z"], len(pairs), K)
    own_bt = state["word_bt"]
    own_bt[race & (own_bn > 0)] += 1
    ctx_ids, pctx = np.unique(pairs // V, return_inverse=True)
    ctx_cells = ctx_ids[:, None] * K + np.arange(K)[None, :]
    up = upper_tables(tables, der)
    state.setdefault("word_up", np.zeros((len(vocab), 0), np.int32))
    loc = words_chain.local_arrays(vocab, None, _own_psi(pword, own_bt, len(vocab)), state["word_t"],
                                   state["word_up"], up["nwk"], up[words_pyp.TABLE], up[words_chain.TABLE],
                                   dict(nk=up["nwk"].sum(axis=0), **words_chain.derived(up)))
    if state["word_up"].shape[1] == 0:
        del state["word_up"]
    loc.update(pidx=uidx, pword=pword, pval=pctx.reshape(-1).astype(np.int64), bn=bn, bt=bt,
               BN=lookup(der["bigram_ctx"], der["bigram_ctx_n"], ctx_cells).astype(np.int64),
               BT=lookup(der["bigram_ctx"], der["bigram_ctx_t"], ctx_cells).astype(np.int64),
               own_bn=own_bn, own_bt=own_bt)
    return loc


def sweep_args(model, block, state, net, words, mx, side: dict) -> tuple:
    """((head, tail) of :func:`word_column.column_word_sweep`, None): the local copies made at a synchronisation's
    first sweep and kept in ``derived`` for its others (nothing written back: a partition's contributions are its
    state's)."""
    der = words[1]
    loc = der.get(LOCAL)
    if loc is None:
        loc = der[LOCAL] = local_arrays(model, block, state, der, words[2])
    mx[0] = max(int(mx[0]), int(loc["bn"].max(initial=0)), int(loc["nloc"].max(initial=0)),
                int(loc["cup"].max(initial=0)))
    mx[1] = max(int(mx[1]), int(loc["bt"].max(initial=0)), int(loc["tloc"].max(initial=0)),
                int(loc["tup"].max(initial=0)))
    chain = words_chain.kernel_args(loc, side, net.a_names, net.b_names, model.vocab_size)
    bottom = (net.a_names.index(side["bottom"][0]), net.b_names.index(side["bottom"][1]), float(side["bottom_gamma"]))
    head = tuple(loc[k] for k in ("pidx", "pword", "pval"))
    tail = tuple(loc[k] for k in ("bn", "bt", "BN", "BT", "own_bn", "own_bt")) + chain[:12] + bottom + chain[12:]
    return (head, tail), None


def topic_word(tables, der: dict, side: dict, hyper: dict) -> np.ndarray:
    """(K, V) every topic's unigram (n_wk + b psi_k(w)) / (N_k + b) (as the bigram side's, psi its mean)."""
    psi = words_chain.topic_word(upper_tables(tables, der), side, hyper)      # psi's posterior mean (K, V)
    n = np.asarray(tables["nwk"], np.float64).T
    b = float(hyper["b_values"][cell_values(side, hyper)[1]])
    phi = (n + b * psi) / (n.sum(axis=1, keepdims=True) + b)
    return phi / phi.sum(axis=1, keepdims=True)


def loglik(tables, der: dict, side: dict, hyper: dict) -> float:
    """log p(w, t | z) of the side (E12): the bigram cells' and contexts', then psi's and up (:mod:`.words_chain`)."""
    a, b = cell_values(side, hyper)
    return words_pyp.cells_loglik(der["bigram_n"], der["bigram_t"], der["bigram_ctx_n"], der["bigram_ctx_t"],
                                  float(hyper["a_values"][a]), float(hyper["b_values"][b])) \
        + words_chain.loglik(upper_tables(tables, der), side, hyper)


def sample_hyper(model, side: dict, tables: dict, hyper: dict, sampled: dict, rng) -> dict:
    """The bigram cells' b and a (restaurants (k, w')), then psi's and the corpus levels' (:mod:`.words_chain`)."""
    der = words_bigram.derived(tables, model.vocab_size, model.num_topics)
    bottom = {"a": side["bottom"][0], "b": side["bottom"][1]}
    hyper = words_pyp.sample_cells_hyper(bottom, der["bigram_n"], der["bigram_t"], der["bigram_ctx_n"],
                                         der["bigram_ctx_t"], hyper, sampled, rng)
    return words_chain.sample_hyper(side, upper_tables(tables, der), hyper, sampled, rng)
