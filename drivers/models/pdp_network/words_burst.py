"""pdp-network's burstiness word side on the Gibbs engine (issue 28; DCMLDA, Doyle & Elkan 2009; hca's burst
vectors, Buntine & Mishra 2014): a word vector per topic PER DOCUMENT, burst[topic, document] ~ PYP(a, b, phi_k)
(a DP when a = 0) over phi[topic], a Dirichlet(beta0) root per topic (or the uniform 1/V).

A document lives in one partition, so its burst vectors are LOCAL: no other partition reads or moves them. The
partition's state keeps one indicator count per (document, word, topic) cell its tokens use (``word_t``, U x K over
the block's distinct (document, word) pairs, as the bigram side's; memory grows with the tokens, never D x K x V);
the customers n are recounted from z. What they send up are phi[topic]'s customers, the tables t_dkw: the engine's
``nwk`` is sum_d t_dkw (NOT the token counts), its ``nk`` T_k. The cells' (n, t) and the restaurants' (N_dk, T_dk)
go up as a histogram (table ``burst_hist``) for the driver's a and b steps (E12, E19-E21) and the likelihood.

The sweep is tlm's bigram side's kernel (:func:`inference.pdpnet.word_bigram.bigram_word_sweep`) with the document
as the context: its cells and contexts are the partition's own exact counts (no race: a cell never has t = 0 < n),
its root the partition's copy of ``nwk``, written back after the sweep.
"""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import words_pyp
from drivers.models.pdp_network.words_bigram import PSEUDO
from inference.gibbs.pdp import log_poch, log_poch_incr, log_stirling_table
from inference.gibbs.tables import CountTable
from inference.pdpnet import engine_stats

HIST = "burst_hist"
#: ``derived``'s key of phi's frozen pseudo-counts in a held-out sweep (:mod:`.burst_heldout`)
FROZEN = "_burst_frozen"


def count_tables() -> tuple:
    return (CountTable(HIST, engine_stats.HIST_ROWS, 1, "keyed", cells_per_token=engine_stats.KEYS_PER_TOKEN),)


def names(side: dict) -> tuple[str, str]:
    """The burst vectors' discount and concentration names (over a Pitman-Yor phi[topic], the bottom level's)."""
    return tuple(side["bottom"][:2]) if "bottom" in side else (side["a"], side["b"])


def local_pairs(model, block) -> tuple[np.ndarray, np.ndarray]:
    """(the block's distinct keys d V + w (U,), d its local document; every token's pair (N,)), remembered."""
    got = model._memo("burst_pairs").get(block)
    if got is None:
        keys = np.repeat(np.arange(block.n_docs, dtype=np.int64), np.diff(block.token_ptr())) * model.vocab_size \
            + block.words.astype(np.int64)
        pairs, uidx = np.unique(keys, return_inverse=True)
        got = model._memo("burst_pairs").put(block, (pairs, uidx.reshape(-1).astype(np.int64)))
    return got


def initial_state(model, block, state: dict) -> None:
    """One indicator per occupied cell (a legal start; the re-seating moves t). int32: the sweep's U x K arrays
    are int32 (half the memory traffic of int64; the same counts, the same draws)."""
    pairs, uidx = local_pairs(model, block)
    state["word_t"] = (own_customers(uidx, state["z"], len(pairs), model.num_topics) > 0).astype(np.int32)


def own_counts(model, block, state: dict, indicators: str = "word_t", take: bool = False) -> tuple:
    """(own_n (U, K) int32, N_dk, T_dk (D, K) int64) of the state: those the last sweep left (its kernel keeps them;
    remembered while ``state``'s z and indicators are the very arrays it left, as :mod:`.block_memo`'s counts),
    else recounted from z. ``take``: forget them (a sweep that changes them in place)."""
    memo = model._memo("burst_counts")
    item = memo.pop(block) if take else memo.get(block)
    if item is not None and item[0] is state["z"] and item[1] is state[indicators]:
        return item[2]
    pairs, uidx = local_pairs(model, block)
    own_n = own_customers(uidx, state["z"], len(pairs), model.num_topics).astype(np.int32)
    V, D = model.vocab_size, block.n_docs
    return own_n, restaurants(pairs, own_n, D, V), restaurants(pairs, state[indicators], D, V)


def remember_counts(model, block, state: dict, counts: tuple, indicators: str = "word_t") -> None:
    """Remember a sweep's own counts (:func:`own_counts`) for the state it left."""
    model._memo("burst_counts").put(block, (state["z"], state[indicators], counts))


def restaurants(pairs, arr, D: int, V: int) -> np.ndarray:
    """(D, K) a cell array summed per document (N_dk of the customers, T_dk of the indicators): the pairs are sorted
    by document, so one reduceat over the documents' runs."""
    out = np.zeros((D, arr.shape[1]), np.int64)
    if len(pairs):
        doc = pairs // V
        starts = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])
        out[doc[starts]] = np.add.reduceat(np.asarray(arr, np.int64), starts, axis=0)
    return out


def own_customers(uidx, z, U: int, K: int) -> np.ndarray:
    """(U, K) the customers n of every (pair, topic) cell from z (a bincount)."""
    return np.bincount(uidx * K + np.asarray(z, np.int64), minlength=U * K).reshape(U, K)


def word_rows(words, arr, K: int, found=None) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct words, (W, K) ``arr``'s rows summed per word); ``found``: ``np.unique(words,
    return_inverse=True)`` already known."""
    vocab, inv = np.unique(words, return_inverse=True) if found is None else found
    flat = np.asarray(arr).reshape(-1)
    cells = np.flatnonzero(flat)                # (the nonzero cells only: the same sums)
    keys = inv.reshape(-1)[cells // K] * K + cells % K
    out = np.bincount(keys, weights=flat[cells].astype(np.float64), minlength=len(vocab) * K)
    return vocab, out.reshape(len(vocab), K).astype(np.int64)


def pair_vocab(model, block) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique`` of the block's pairs' words with the inverse (remembered)."""
    got = model._memo("burst_vocab").get(block)
    if got is None:
        vocab, inv = np.unique(local_pairs(model, block)[0] % model.vocab_size, return_inverse=True)
        got = model._memo("burst_vocab").put(block, (vocab, inv.reshape(-1)))
    return got


def table_counts(model, block, state: dict) -> dict:
    """``nwk``: the partition's t_dkw summed over its documents (phi[topic]'s customers); ``burst_hist``: its
    cells' (n, t) and restaurants' (N, T)."""
    V = model.vocab_size
    pairs, uidx = local_pairs(model, block)
    own_n, N, T = own_counts(model, block, state)
    own_t = state["word_t"]
    vocab, twk = word_rows(None, own_t, model.num_topics, pair_vocab(model, block))
    return {"nwk": (vocab.astype(np.int64), twk.astype(np.int32)),
            HIST: histogram(pairs, own_n, own_t, block.n_docs, V, N, T)}


def _pairs_counted(x, y) -> tuple:
    """(x, y, count) of the distinct pairs of two non-negative integer arrays, sorted by (x, y) (np.unique's
    order of the histogram's keys), by one bincount when max x times max y is small, else np.unique."""
    x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
    if not len(x):
        return x, y, np.zeros(0, np.int64)
    ny = int(y.max()) + 1
    if (int(x.max()) + 1) * ny > 4 * len(x) + 65536:
        uniq, inv, counts = np.unique(x * ny + y, return_inverse=True, return_counts=True)
    else:
        flat = np.bincount(x * ny + y)
        uniq = np.flatnonzero(flat)
        counts = flat[uniq]
    return uniq // ny, uniq % ny, counts


def histogram(pairs, own_n, own_t, D: int, V: int, N=None, T=None) -> tuple:
    """``burst_hist``'s keys and counts: the occupied cells' (n, t), the live restaurants' (N_dk, T_dk) (``N``,
    ``T``: the restaurants when known). Keys ascending, as np.unique of them gives (engine_stats.hist_keys
    orders (part, x, y))."""
    if N is None:
        N, T = restaurants(pairs, own_n, D, V), restaurants(pairs, own_t, D, V)
    occ, live = own_n > 0, N > 0
    c, t, wc = _pairs_counted(own_n[occ], own_t[occ])
    NN, TT, wr = _pairs_counted(N[live], T[live])
    keys = np.concatenate([engine_stats.hist_keys(0, 0, 0, c, t), engine_stats.hist_keys(1, 0, 0, NN, TT)])
    return keys, np.concatenate([wc, wr]).astype(np.int32)[:, None]


def sweep_args(model, block, state, net, nwk, mx, side: dict, derived: dict) -> tuple:
    """((head, tail) of :func:`inference.pdpnet.word_bigram.bigram_word_sweep`, the local arrays): the cells and
    documents the partition's own counts, the root its copy of ``nwk`` (int64, written back); in a held-out
    sweep (``derived[FROZEN]``) phi's frozen pseudo-counts (float, not written back; the state's indicators
    started here)."""
    V = model.vocab_size
    pairs, uidx = local_pairs(model, block)
    frozen = derived.get(FROZEN)
    if frozen is not None and "word_t" not in state:
        initial_state(model, block, state)
    if state["word_t"].dtype != np.int32:      # (a state of an older run: int64 indicators)
        state["word_t"] = state["word_t"].astype(np.int32)
    own_n, N, T = own_counts(model, block, state, take=True)    # the kernel moves them: remembered after it
    own_t = state["word_t"]
    troot = np.array(nwk, np.int32) if frozen is None else frozen.copy()    # (int32: the kernel's cache)
    beta0 = float(side["beta0"]) if frozen is None else PSEUDO
    nloc, tloc = own_n.copy(), own_t.copy()
    mx[0] = max(int(mx[0]), int(nloc.max(initial=0)))
    mx[1] = max(int(mx[1]), int(tloc.max(initial=0)))
    head = (uidx, pairs % V, pairs // V)
    tail = (nloc, tloc, N, T, troot, troot.sum(axis=0), own_n, own_t, net.a_names.index(names(side)[0]),
            net.b_names.index(names(side)[1]), beta0)
    return (head, tail), {"troot": troot if frozen is None else None, "own": (model, block, state, (own_n, N, T))}


def write_back(loc: dict, nwk) -> None:
    """phi's customers into ``nwk`` (not in a held-out sweep); the sweep's own counts remembered."""
    if loc is not None:
        if loc["troot"] is not None:
            nwk[:] = loc["troot"]
        remember_counts(*loc["own"])


def split(table) -> tuple:
    """(cells c, t, their counts; restaurants N, T, their counts) of the summed ``burst_hist``."""
    part, _, _, x, y = engine_stats.decode(table.keys)
    w = np.asarray(table.counts[:, 0], np.int64)
    cell, rest = part == 0, part == 1
    return x[cell], y[cell], w[cell], x[rest], y[rest], w[rest]


def phi_mean(nwk, beta0: float) -> np.ndarray:
    """(K, V) phi[topic]'s posterior mean given its customers t_kw: (beta0 + t_kw) / (V beta0 + T_k) (uniform:
    1/V); what ``topics`` shows (the corpus-level topics, not any document's burst vector)."""
    t = np.asarray(nwk, np.float64).T
    if beta0 <= 0.0:
        return np.full(t.shape, 1.0 / t.shape[1])
    return (beta0 + t) / (t.shape[1] * beta0 + t.sum(axis=1, keepdims=True))


def loglik(tables: dict, a: float, b: float, beta0: float) -> float:
    """log p(w, t | z) of the side (E12): sum_cells log S^n_{t,a} + sum_dk log (b|a)_T / (b)_N, plus every
    topic's root a Dirichlet-multinomial of its customers t_kw (or uniform)."""
    twk = np.asarray(tables["nwk"], np.float64)
    return hist_loglik(tables, a, b) + sum(words_pyp.root_loglik(twk[:, k], beta0, twk.shape[0])
                                           for k in range(twk.shape[1]))


def hist_loglik(tables: dict, a: float, b: float) -> float:
    """The burst vectors' part of (E12) from ``burst_hist``: sum_cells log S^n_{t,a} + sum_dk log (b|a)_T / (b)_N."""
    c, t, wc, N, T, wr = split(tables[HIST])
    total = 0.0
    if len(c):
        L = log_stirling_table(a, int(c.max()) + 1, int(t.max()) + 1)
        total += float((L[c, t] * wc).sum())
    for NN, TT, ww in zip(N, T, wr):
        total += ww * (log_poch_incr(b, a, int(TT)) - log_poch(b, int(NN)))
    return total


def sample_hyper(side: dict, tables: dict, hyper: dict, sampled: dict, rng) -> dict:
    """The side's b (q_dk ~ Beta(b, N_dk) per live restaurant; Gamma (E20) when a is a fixed 0, else the slice
    step E21) and a (slice step), from the summed histogram (as
    :func:`drivers.models.pdp_network.words_pyp.sample_cells_hyper`)."""
    a_name, b_name = side["a"], side["b"]
    a, b = float(hyper["a_values"][a_name]), float(hyper["b_values"][b_name])
    c, t, wc, N, T, wr = split(tables[HIST])
    if not len(N):
        return hyper
    keys = np.concatenate([engine_stats.hist_keys(0, 0, 0, c, t), engine_stats.hist_keys(1, 0, 0, T, 0 * T)])
    uniq, inv = np.unique(keys, return_inverse=True)
    counts = np.bincount(inv.reshape(-1), weights=np.concatenate([wc, wr]).astype(np.float64))
    if sampled[b_name]:
        q = rng.beta(b, np.repeat(N, wr))
        sum_log = float(-np.log(np.maximum(q, 1e-300)).sum())
        if not sampled[a_name] and a == 0.0:
            b = float(min(max(rng.gamma(float((T * wr).sum()), 1.0 / max(sum_log, 1e-300)), 1e-3), 1e6))
        else:
            b = engine_stats.sample_concentration(b, 0, uniq, counts, np.array([a]), sum_log, rng)
    if sampled[a_name]:
        a = engine_stats.sample_discount(a, uniq, counts, 0, np.array([b]), rng)
    return dict(hyper, a_values=dict(hyper["a_values"], **{a_name: float(a)}),
                b_values=dict(hyper["b_values"], **{b_name: float(b)}))
