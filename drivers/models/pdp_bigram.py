"""pdp-network's bigram-topic word side on the Gibbs engine (issue 28; the topic-based language model as a network,
Wallach §3.4): phi[topic, previous_word] ~ PYP(a, b, psi_k) (a DP when a = 0) over psi[topic], a Dirichlet root
or uniform over words; the sweep: :mod:`inference.pdpnet.word_bigram`.

Tables: ``bigram_customers`` (n_{(k,w'),w}, from z) and ``bigram_word_tables`` (t_{(k,w'),w}: the indicators each
partition's customers hold, state ``word_t`` over the block's distinct (w', w) pairs, summed), both keyed by
(w' V + w) K + k as tlm's N_{w|w't} (V^2 K never allocated; w' = V: the document's first token). The roots'
customers t_kw (V x K), the contexts' totals and the race-legal t are derived from them (:func:`derived`, once per
synchronisation on the driver); a partition reads them over its own pairs (:func:`local_arrays`). The driver
samples the side's a and b from the global cells and contexts (:func:`drivers.models.pdp_words.sample_cells_hyper`).
"""
from __future__ import annotations

import numpy as np

from drivers.models import pdp_words
from inference.errors import UsageError
from inference.gibbs.tables import CountTable

CUSTOMERS = "bigram_customers"
TABLES = "bigram_word_tables"
LOCAL = "_bigram_local"         # a partition's local copies between the sweeps of one synchronisation


def count_tables(V: int, K: int) -> tuple:
    rows = (V + 1) * V * K
    return (CountTable(CUSTOMERS, rows, 1, "keyed", cells_per_token=1),
            CountTable(TABLES, rows, 1, "keyed", cells_per_token=1))


def refuse_heldout(hyper: dict) -> None:
    """Held-out scoring, ``infer`` and left-to-right of a bigram-topic word side are not done (they would read the
    unigram topic-word estimate, not the network's predictive): one line."""
    if (hyper.get("word_pyp") or {}).get("bigram"):
        raise UsageError("pdp-network: a word side indexed by [topic, previous_word] trains on the Gibbs engine; "
                         "its held-out scoring, infer and refresh are not done (train without --heldout-fraction)")


def pair_keys(block, V: int) -> np.ndarray:
    """(N,) w' V + w of every token; a document's first token has w' = V (the compiled network's start context)."""
    words = block.words.astype(np.int64)
    prev = np.full(words.shape[0], V, np.int64)
    if words.shape[0] > 1:
        prev[1:] = words[:-1]
    starts = block.token_ptr()[:-1]
    prev[starts[starts < words.shape[0]]] = V
    return prev * V + words


def local_pairs(block, V: int) -> tuple[np.ndarray, np.ndarray]:
    """(the block's distinct pair keys (U,), every token's pair index (N,))."""
    pairs, uidx = np.unique(pair_keys(block, V), return_inverse=True)
    return pairs, uidx.reshape(-1).astype(np.int64)


def own_customers(uidx, z, U: int, K: int) -> np.ndarray:
    return pdp_words.own_customers(uidx, z, U, K)


def table_counts(pairs, uidx, state, K: int) -> dict:
    """The partition's rows of both keyed tables (customers from z, its own indicators; zero rows left out)."""
    own_n = own_customers(uidx, state["z"], len(pairs), K)
    keys = (pairs[:, None] * K + np.arange(K)[None, :]).ravel()
    out = {}
    for name, arr in ((CUSTOMERS, own_n), (TABLES, state["word_t"])):
        vals = np.asarray(arr, np.int64).ravel()
        keep = vals > 0
        out[name] = (keys[keep], vals[keep].astype(np.int32)[:, None])
    return out


def derived(tables: dict, V: int, K: int) -> dict:
    """The global values every partition reads: the customers' keys and n, t at those keys read legally (a race's
    t = 0 < n as 1; ``race`` marks them), the contexts' (keys w' K + k, N, T) and the roots' t_kw (V, K), T_k."""
    cust, tab = tables[CUSTOMERS], tables[TABLES]
    keys = np.asarray(cust.keys, np.int64)
    n = np.asarray(cust.counts[:, 0], np.int64)
    t_raw = _lookup(np.asarray(tab.keys, np.int64), np.asarray(tab.counts[:, 0], np.int64), keys)
    race = (n > 0) & (t_raw == 0)
    t = np.where(race, 1, t_raw)
    ctx_all = (keys // (V * K)) * K + keys % K
    ctx, inv = np.unique(ctx_all, return_inverse=True)
    N = np.bincount(inv, weights=n, minlength=len(ctx)).astype(np.int64)
    T = np.bincount(inv, weights=t, minlength=len(ctx)).astype(np.int64)
    troot = np.zeros((V, K), np.int64)
    np.add.at(troot, ((keys // K) % V, keys % K), t)
    return {"bigram_keys": keys, "bigram_n": n, "bigram_t": t, "bigram_race": race, "bigram_ctx": ctx,
            "bigram_ctx_n": N, "bigram_ctx_t": T, "bigram_troot": troot, "bigram_Troot": troot.sum(axis=0)}


def _lookup(keys, values, wanted) -> np.ndarray:
    if len(keys) == 0:
        return np.zeros(np.shape(wanted), np.asarray(values).dtype)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, values[at], 0)


def local_arrays(pairs, uidx, state, der: dict, V: int, K: int) -> dict:
    """A partition's copies of the global values over its pairs (the kernel's arrays); the partition opens one
    table for its customers of a race cell (own indicator, the repair) before sweeping."""
    cells = pairs[:, None] * K + np.arange(K)[None, :]
    nloc = _lookup(der["bigram_keys"], der["bigram_n"], cells)
    tloc = _lookup(der["bigram_keys"], der["bigram_t"], cells)
    race = _lookup(der["bigram_keys"], der["bigram_race"].astype(np.int64), cells) > 0
    own_n = own_customers(uidx, state["z"], len(pairs), K)
    state["word_t"][race & (own_n > 0)] += 1
    prev = pairs // V
    ctx_ids, pctx = np.unique(prev, return_inverse=True)
    ctx_cells = ctx_ids[:, None] * K + np.arange(K)[None, :]
    return {"uidx": uidx, "pword": (pairs % V).astype(np.int64), "pctx": pctx.reshape(-1).astype(np.int64),
            "nloc": nloc.astype(np.int64), "tloc": tloc.astype(np.int64),
            "Nc": _lookup(der["bigram_ctx"], der["bigram_ctx_n"], ctx_cells).astype(np.int64),
            "Tc": _lookup(der["bigram_ctx"], der["bigram_ctx_t"], ctx_cells).astype(np.int64),
            "troot": der["bigram_troot"].copy(), "Troot": der["bigram_Troot"].astype(np.int64).copy(),
            "own_n": own_n}


def initial_tables(pairs, uidx, z, K: int) -> np.ndarray:
    """One indicator per occupied own cell (a legal start)."""
    return (own_customers(uidx, z, len(pairs), K) > 0).astype(np.int64)


def sample_hyper(side: dict, der: dict, hyper: dict, sampled: dict, rng) -> dict:
    """The side's b and a from the global cells (n, t) and contexts (N, T)."""
    return pdp_words.sample_cells_hyper(side, der["bigram_n"], der["bigram_t"], der["bigram_ctx_n"],
                                        der["bigram_ctx_t"], hyper, sampled, rng)


def loglik(der: dict, a: float, b: float, beta0: float, V: int) -> float:
    """log p(w, t | z) of the side (E12): the cells' Stirling numbers, the contexts' Pochhammer ratios, and every
    topic's root a Dirichlet-multinomial of its customers t_kw (or uniform)."""
    total = pdp_words.cells_loglik(der["bigram_n"], der["bigram_t"], der["bigram_ctx_n"], der["bigram_ctx_t"], a, b)
    troot = der["bigram_troot"]
    return total + sum(pdp_words.root_loglik(troot[:, k].astype(np.float64), beta0, V) for k in range(troot.shape[1]))


def topic_word(nwk, der: dict, b: float, beta0: float) -> np.ndarray:
    """(K, V) every topic's unigram estimate (n_wk + b psi_k(w)) / (N_k + b), psi_k the root's posterior mean (as
    tlm's (N_{w|t} + beta_t q_t(w)) / (N_t + beta_t))."""
    troot = der["bigram_troot"].astype(np.float64)
    V = troot.shape[0]
    psi = np.full_like(troot, 1.0 / V) if beta0 <= 0 else (troot + beta0) / (troot.sum(axis=0) + V * beta0)
    n = np.asarray(nwk, np.float64)
    phi = ((n + b * psi) / (n.sum(axis=0) + b)).T
    return phi / phi.sum(axis=1, keepdims=True)
