"""pdp-network's chain of Pitman-Yor word vectors on the Gibbs engine (issue 28; hca's word side): phi_k ~ PYP(a_0,
b_0, nu_1) per topic over corpus-level vectors nu_l ~ PYP(a_l, b_l, nu_{l+1}), l = 1..L, over a Dirichlet root or
the uniform (the sweep and its ownership of indicators: :mod:`inference.pdpnet.word_chain`).

Tables: ``nwk`` (n_wk), ``word_tables`` (t_wk, V x K, :mod:`drivers.models.pdp_network.words_pyp`) and ``word_chain`` (t_lw,
V x L): the indicators the partitions' customers hold at every level (states ``word_t`` and ``word_up``), summed.
Level l's customers are level l-1's tables. The race rule at every level, bottom up: a cell with customers and no
table after the merge (its last indicators left in two partitions in one sweep) is read as one table by the driver
and every partition; a partition with own customers there opens it before its next sweep (:func:`local_arrays`),
which is one more customer one level up. The driver's steps (per level: q_j ~ Beta(b, C_j), E20/E21 and the
slice step of a) read the read tables, as pyp-lda's (:func:`drivers.models.pdp_network.words_pyp.sample_cells_hyper`).
"""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import words_pyp
from inference.gibbs.tables import CountTable

TABLE = "word_chain"


def levels(side: dict) -> int:
    """L, the corpus-level Pitman-Yor vectors between the topics' and the root (0: pyp-lda's side)."""
    return len(side.get("chain", ()))


def count_table(rows: int, L: int) -> CountTable:
    return CountTable(TABLE, rows, L, "dense", cells_per_token=L)


def legal(nwk, twk, tch) -> tuple:
    """(n, t, c_up, t_up) as int64: the race cells (customers, no table) read as one table, level by level bottom
    up (a read table is one more customer one level up)."""
    n, t = words_pyp.legal(nwk, twk)
    tch = np.asarray(tch, np.int64)
    cup, tup = np.zeros_like(tch), np.zeros_like(tch)
    c = t.sum(axis=1)
    for l in range(tch.shape[1]):
        cup[:, l] = c
        tup[:, l] = np.where((c > 0) & (tch[:, l] == 0), 1, tch[:, l])
        c = tup[:, l]
    return n, t, cup, tup


def derived(tables: dict) -> dict:
    """The read tables and their totals (T_k, C_l, T_l)."""
    n, t, cup, tup = legal(tables["nwk"], tables[words_pyp.TABLE], tables[TABLE])
    return {"chain_t": t, "chain_tk": t.sum(axis=0), "chain_cup": cup, "chain_tup": tup,
            "chain_C": cup.sum(axis=0), "chain_T": tup.sum(axis=0)}


def initial_tables(word_t: np.ndarray, L: int) -> np.ndarray:
    """One indicator per occupied own upper cell (a legal start)."""
    occupied = (word_t.sum(axis=1) > 0).astype(np.int32)
    return np.repeat(occupied[:, None], L, axis=1)


def local_arrays(vocab, uidx, own_n, own_t, own_up, nwk, twk, tch, der) -> dict:
    """The kernel's arrays over the block's words: the global counts as read (:func:`legal`) and the partition's
    own; the race cells of its words with own customers get an own indicator (the repair, bottom up)."""
    nloc = np.asarray(nwk)[vocab].astype(np.int64)
    tloc = der["chain_t"][vocab].copy()
    cup, tup = der["chain_cup"][vocab].copy(), der["chain_tup"][vocab].copy()
    race = (nloc > 0) & (np.asarray(twk)[vocab] == 0)
    own_t[race & (own_n > 0)] += 1
    raw_up = np.asarray(tch)[vocab]
    own_c = np.zeros_like(own_up)
    c = own_t.sum(axis=1)
    for l in range(own_up.shape[1]):
        own_c[:, l] = c
        own_up[(cup[:, l] > 0) & (raw_up[:, l] == 0) & (c > 0), l] += 1
        c = own_up[:, l]
    return {"vocab": vocab, "uidx": uidx, "nloc": nloc, "tloc": tloc,
            "Nk": np.asarray(der["nk"], np.int64).copy(), "Tk": der["chain_tk"].astype(np.int64),
            "cup": cup, "tup": tup, "Cup": der["chain_C"].astype(np.int64), "Tup": der["chain_T"].astype(np.int64),
            "own_n": own_n, "own_t": own_t, "own_c": own_c.astype(np.int64), "own_up": own_up}


def word_args(vocab, uidx, state, nwk, words, mx, side, net, V: int) -> tuple:
    """(the word side's arguments of :func:`word_chain.chain_word_sweep` after ``mx``, its local arrays);
    ``words``: the partition's (``word_tables``, derived, ``word_chain``); ``mx`` raised to the cells' maxima."""
    own_n = words_pyp.own_customers(uidx, state["z"], len(vocab), nwk.shape[1])
    loc = local_arrays(vocab, uidx, own_n, state["word_t"], state["word_up"], nwk, words[0], words[2], words[1])
    mx[0] = max(int(mx[0]), int(loc["nloc"].max(initial=0)), int(loc["cup"].max(initial=0)))
    mx[1] = max(int(mx[1]), int(loc["tloc"].max(initial=0)), int(loc["tup"].max(initial=0)))
    return kernel_args(loc, side, net.a_names, net.b_names, V), loc


#: how many arguments :func:`kernel_args` gives (a caller splitting a kernel's arguments reads it)
KERNEL_ARGS = 18


def kernel_args(loc: dict, side: dict, a_names: list, b_names: list, V: int) -> tuple:
    """The word side's :data:`KERNEL_ARGS` arguments of :func:`inference.pdpnet.word_chain.chain_word_sweep` after
    ``mx``."""
    params = level_params(side)
    pl = np.array([a_names.index(a) for a, _ in params], np.int64)
    bl = np.array([b_names.index(b) for _, b in params], np.int64)
    gl = np.array(side["gammas"], np.float64)
    out = tuple(loc[k] for k in ("nloc", "tloc", "Nk", "Tk", "cup", "tup", "Cup", "Tup", "own_n", "own_t",
                                 "own_c", "own_up")) + (pl, bl, gl, gl.copy(), float(side["beta0"]), int(V))
    assert len(out) == KERNEL_ARGS
    return out


def write_back(loc: dict, nwk, twk, tch, der: dict) -> None:
    """The sweep's moves into the partition's copies of the tables and what was derived from them."""
    vocab = loc["vocab"]
    nwk[vocab] = loc["nloc"]
    twk[vocab] = loc["tloc"]
    tch[vocab] = loc["tup"]
    der["chain_t"][vocab] = loc["tloc"]
    der["chain_cup"][vocab] = loc["cup"]
    der["chain_tup"][vocab] = loc["tup"]
    der["nk"][:] = loc["Nk"]
    der["chain_tk"][:] = loc["Tk"]
    der["chain_C"][:] = loc["Cup"]
    der["chain_T"][:] = loc["Tup"]


def level_params(side: dict) -> list:
    """Every level's (discount, concentration) names, the topics' level first."""
    return [(side["a"], side["b"])] + [tuple(lv[:2]) for lv in side.get("chain", ())]


def _level_values(side: dict, hyper: dict) -> list:
    return [(float(hyper["a_values"][a]), float(hyper["b_values"][b])) for a, b in level_params(side)]


def topic_word(tables: dict, side: dict, hyper: dict) -> np.ndarray:
    """(K, V) posterior mean of phi_k, the levels' means from the root down: nu_l = ((c_l - a_l t_l) + (b_l + a_l
    T_l) nu_{l+1}) / (b_l + C_l), phi_k likewise over nu_1 (thesis (7.12))."""
    n, t, _, _ = legal(tables["nwk"], tables[words_pyp.TABLE], tables[TABLE])
    nu = parent_mean(tables, side, hyper)
    a, b = _level_values(side, hyper)[0]
    n, t = n.T.astype(np.float64), t.T.astype(np.float64)
    phi = ((n - a * t) + (b + a * t.sum(axis=1, keepdims=True)) * nu[None, :]) / (b + n.sum(axis=1, keepdims=True))
    return phi / phi.sum(axis=1, keepdims=True)


def parent_mean(tables: dict, side: dict, hyper: dict) -> np.ndarray:
    """(V,) the posterior mean of the topics' parent nu_1 (the root's when L = 0), the levels' from the root down."""
    _, t, cup, tup = legal(tables["nwk"], tables[words_pyp.TABLE], tables[TABLE])
    vals = _level_values(side, hyper)
    nu = words_pyp.base_vector(tup[:, -1:] if tup.shape[1] else t, float(side["beta0"]))    # the root's customers
    for l in range(cup.shape[1], 0, -1):
        a, b = vals[l]
        c, tl = cup[:, l - 1].astype(np.float64), tup[:, l - 1].astype(np.float64)
        nu = ((c - a * tl) + (b + a * tl.sum()) * nu) / (b + c.sum())
    return nu


def loglik(tables: dict, side: dict, hyper: dict) -> float:
    """log p(w, t | z) of the word side: every level's part of (E12) and the root's (:func:`words_pyp.loglik`)."""
    n, t, cup, tup = legal(tables["nwk"], tables[words_pyp.TABLE], tables[TABLE])
    vals = _level_values(side, hyper)
    occ = n > 0
    total = words_pyp.cells_loglik(n[occ], t[occ], n.sum(axis=0), t.sum(axis=0), *vals[0])
    for l in range(cup.shape[1]):
        occ = cup[:, l] > 0
        total += words_pyp.cells_loglik(cup[occ, l], tup[occ, l], cup[:, l].sum(keepdims=True),
                                        tup[:, l].sum(keepdims=True), *vals[l + 1])
    root = tup[:, -1] if tup.shape[1] else t.sum(axis=1)
    return total + words_pyp.root_loglik(root.astype(np.float64), float(side["beta0"]), n.shape[0])


def sample_hyper(side: dict, tables: dict, hyper: dict, sampled: dict, rng: np.random.Generator) -> dict:
    """Every level's b and a from the read tables (:func:`words_pyp.sample_cells_hyper`), level 0 first."""
    n, t, cup, tup = legal(tables["nwk"], tables[words_pyp.TABLE], tables[TABLE])
    occ = n > 0
    hyper = words_pyp.sample_cells_hyper(side, n[occ], t[occ], n.sum(axis=0), t.sum(axis=0), hyper, sampled, rng)
    for l, lv in enumerate(side.get("chain", ())):
        occ = cup[:, l] > 0
        hyper = words_pyp.sample_cells_hyper({"a": lv[0], "b": lv[1]}, cup[occ, l], tup[occ, l],
                                             cup[:, l].sum(keepdims=True), tup[:, l].sum(keepdims=True), hyper,
                                             sampled, rng)
    return hyper
