"""pdp-network's Pitman-Yor word side on the Gibbs engine (issue 28, pyp-lda): phi_k ~ PYP(a, b, nu) per topic
over one corpus-level word vector nu (a Dirichlet root or the fixed uniform), every table indicator held by the
partition of the customer holding it (the sweep and its approximation: :mod:`inference.pdpnet.word_pyp`).

Tables: ``nwk`` (customers n_wk, as every model) and ``word_tables`` (t_wk, V x K dense: the indicators each
partition's customers hold, state ``word_t``, summed). The driver's steps read the global tables: the word cells'
(c, t) = (n_wk, t_wk) and the topics' T_k give the slice step of a (E12), and the auxiliary q_k ~ Beta(b, N_k)
for b (E19-E21) are drawn on the driver.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import gammaln

from inference.errors import UsageError
from inference.gibbs.pdp import log_poch, log_poch_incr, log_stirling_table
from inference.gibbs.tables import CountTable
from inference.pdpnet import engine_stats
from inference.pdpnet.spec import NetworkSpec

TABLE = "word_tables"
#: the column of a chain with a level per topic (phi[topic] over phi1[topic]): the [topic, column] side with every
#: document's value 0 (:mod:`.words_column`)
ONE_VALUE = "[topic]"
#: the word draw of the burstiness side (:mod:`.words_burst`)
BURST_INDEX = ("topic", "document")


def legal(nwk, twk) -> tuple[np.ndarray, np.ndarray]:
    """(n, t) as int64 with the cells whose last indicators left in two partitions at once (n > 0, t = 0) read as
    t = 1, the partitions' repair before their next sweep (:mod:`inference.pdpnet.word_pyp`)."""
    n = np.asarray(nwk, np.int64)
    t = np.asarray(twk, np.int64)
    return n, np.where((n > 0) & (t == 0), 1, t)


def word_side(spec: NetworkSpec) -> dict | None:
    """None for a Dirichlet word side; for a Pitman-Yor one ``{"a", "b", "beta0", "base"}`` (parameter names, the
    root's prior count, 0 for a uniform root), with a chain of corpus-level Pitman-Yor vectors between also
    ``"chain"`` (their [a, b, name], bottom up) and ``"gammas"`` (every level's parent gamma); one line naming the
    node for what the engine cannot run."""
    word = spec.nodes[spec.word.node]
    if word.kind == "dirichlet" and word.index == ("topic",) and spec.word.index == ("topic",):
        return None
    burst = burst_side(spec)      # a word vector per topic per document (burstiness, .words_burst)
    if burst is not None:
        return burst
    if len(word.parents) > 1:       # several parents mixed by rho (.words_mix)
        return mix_side(spec)
    bigram = word.index == ("topic", "previous_word") and spec.word.index == ("topic", "previous_word")
    column = len(word.index) >= 2 and word.index[0] == "topic" and spec.word.index == word.index \
        and all(k.startswith("column:") for k in word.index[1:])       # (several columns: one context per tuple)
    names = [k[len("column:"):] for k in word.index[1:]] if column else []
    par = word.parents[0] if len(word.parents) == 1 else None
    phi0 = spec.nodes[par.node] if par is not None else None
    psi_pyp = bigram and phi0 is not None and phi0.kind == "pyp"     # tlm's prior 2b (words_bigram_psi)
    per_topic = word.index == ("topic",) and spec.word.index == ("topic",) and phi0 is not None \
        and phi0.kind == "pyp" and phi0.index == ("topic",)     # a level per topic: the column side, one value
    per_topic_root = word.index == ("topic",) and spec.word.index == ("topic",) and phi0 is not None \
        and phi0.kind in ("dirichlet", "uniform") and phi0.index == ("topic",)
    if (column or per_topic_root) and word.kind == "pyp" and phi0 is not None and phi0.kind != "pyp" \
            and phi0.index == ("topic",) and par.index == ("topic",) and par.if_missing is None and not phi0.parents:
        for nd in spec.nodes.values():      # phi0 a Dirichlet root (or uniform) per topic: the bigram side, the
            if nd is not word and nd.kind == "pyp" and {nd.a, nd.b} & {word.a, word.b}:      # value the context
                raise UsageError(f"network spec: node '{nd.name}' shares a discount or concentration with the word "
                                 f"side's '{word.name}' (not on the Gibbs engine)")      # (phi[topic]: one context)
        return {"a": word.a, "b": word.b, "beta0": float(phi0.alpha) if phi0.kind == "dirichlet" else 0.0,
                "base": phi0.name, "bigram": True,
                "context": (names[0] if len(names) == 1 else names) if column else ONE_VALUE}
    if len(names) > 1:
        raise UsageError(f"network spec: node '{word.name}': a word side indexed by [topic] and several columns on "
                         "the Gibbs engine is a Pitman-Yor family over a Dirichlet root or uniform vector per topic")
    if column or psi_pyp or per_topic:      # phi[topic(, column:C or previous_word)] over phi0[topic], over a chain
        if phi0 is None or par.if_missing is not None or par.index != ("topic",) or phi0.index != ("topic",) \
                or phi0.kind != "pyp" or word.kind != "pyp":
            what = "indexed by [topic, column]" if column else "with a level per topic" if per_topic else \
                "indexed by [topic, previous_word]"
            raise UsageError(f"network spec: node '{word.name}': a word side {what} on the Gibbs engine is a "
                             "Pitman-Yor family over one Pitman-Yor vector per topic (phi0[topic])"
                             + (" or a Dirichlet root or uniform vector per topic" if psi_pyp else ""))
        for nd in spec.nodes.values():
            if nd is not word and nd.kind == "pyp" and {nd.a, nd.b} & {word.a, word.b}:
                raise UsageError(f"network spec: node '{nd.name}' shares a discount or concentration with the word "
                                 f"side's '{word.name}' (not on the Gibbs engine)")
        side = word_side(dataclasses.replace(spec, word=dataclasses.replace(spec.word, node=phi0.name,
                                                                             index=("topic",))))
        if "bottom" in side:        # phi0 itself over a vector per topic: a stack of levels per topic (words_stack)
            if not per_topic or side.get("bigram") or side.get("column") != ONE_VALUE:
                raise UsageError(f"network spec: node '{phi0.name}': a word vector per topic under '{word.name}' on "
                                 "the Gibbs engine has one corpus-level parent, or is a chain of Pitman-Yor vectors "
                                 "per topic over a corpus-level root or chain (indexed by [topic] only)")
            return dict(side, bottom=[word.a, word.b, word.name], bottom_gamma=float(par.gamma),
                        middle=[side["bottom"]] + side.get("middle", []),
                        middle_gammas=[side["bottom_gamma"]] + side.get("middle_gammas", []))
        kind = {"bigram": True} if psi_pyp else {"column": ONE_VALUE if per_topic else word.index[1][len("column:"):]}
        return dict(side, **kind, bottom=[word.a, word.b, word.name],
                    bottom_gamma=float(par.gamma), gammas=side.get("gammas", [float(phi0.parents[0].gamma)]))
    if word.kind != "pyp" or (word.index != ("topic",) or spec.word.index != ("topic",)) and not bigram:
        raise UsageError(f"network spec: node '{word.name}': on the Gibbs engine the word draw must be a family "
                         "indexed by [topic], a Dirichlet root or a Pitman-Yor vector over one corpus-level word "
                         "vector, or a Pitman-Yor family indexed by [topic, previous_word] over one per topic")
    level = ("topic",) if bigram else ("corpus",)
    chain, node = [], word
    while True:     # the word vectors' chain up to its root (words_chain: corpus-level Pitman-Yor vectors between)
        parents = node.parents
        base = spec.nodes[parents[0].node] if len(parents) == 1 else None
        if base is None or parents[0].if_missing is not None or base.index != level or parents[0].index != level \
                or base.kind == "pyp" and (bigram or base.over != "word" or base in chain):
            raise UsageError(f"network spec: node '{node.name}': a Pitman-Yor word side on the Gibbs engine has one "
                             + ("parent, a Dirichlet root or uniform vector over words per topic (psi[topic])"
                                if bigram else "parent, a corpus-level Dirichlet root, uniform vector or Pitman-Yor "
                                "vector (one parent likewise) over words"))
        chain.append(node)
        if base.kind != "pyp":
            break
        node = base
    names = [(nd.a, nd.b) for nd in chain]
    for nd in spec.nodes.values():
        for i, (a, b) in enumerate(names):
            if nd is not chain[i] and nd.kind == "pyp" and {nd.a, nd.b} & {a, b}:
                raise UsageError(f"network spec: node '{nd.name}' shares a discount or concentration with the word "
                                 f"side's '{chain[i].name}' (not on the Gibbs engine)")
    out = {"a": word.a, "b": word.b, "beta0": float(base.alpha) if base.kind == "dirichlet" else 0.0,
           "base": base.name, **({"bigram": True} if bigram else {})}
    if len(chain) > 1:
        out.update(chain=[[nd.a, nd.b, nd.name] for nd in chain[1:]],
                   gammas=[float(nd.parents[0].gamma) for nd in chain])
    elif spec.sampler in ("cmgs", "exact") and not bigram:
        out["multiplicity"] = multiplicity_side(spec)
    return out


def mix_side(spec: NetworkSpec) -> dict:
    """A Pitman-Yor phi[topic] over P >= 2 parents mixed by rho (:mod:`.words_mix`): ``{"a", "b", "beta0": 0,
    "base"}`` and ``"mix"`` [name, index ("corpus" or "topic"), kind, alpha, gamma] per parent edge (spec order),
    ``"gamma_sum"`` (-1: fixed weights 1/P); one line naming the node for another shape."""
    word = spec.nodes[spec.word.node]
    if word.kind != "pyp" or word.mixture or word.index != ("topic",) or spec.word.index != ("topic",):
        raise UsageError(f"network spec: node '{word.name}': a word vector with several parents on the Gibbs engine "
                         "is a Pitman-Yor family indexed by [topic] (not a mixture node)")
    mix = []
    for ref in word.parents:
        nd = spec.nodes[ref.node]
        children = [c.name for c in spec.nodes.values() for r in c.parents if r.node == nd.name]
        if nd.kind == "pyp" or nd.over != "word" or ref.if_missing is not None or ref.index != nd.index \
                or nd.index not in (("corpus",), ("topic",)) or children != [word.name]:
            raise UsageError(f"network spec: node '{nd.name}': a parent of the word vector '{word.name}' with several "
                             "parents on the Gibbs engine is a Dirichlet root or uniform vector over words indexed "
                             "by [corpus] or [topic], its only child (a Pitman-Yor parent is not split yet)")
        mix.append([nd.name, nd.index[0], nd.kind, float(nd.alpha), float(ref.gamma)])
    for nd in spec.nodes.values():
        if nd is not word and nd.kind == "pyp" and {nd.a, nd.b} & {word.a, word.b}:
            raise UsageError(f"network spec: node '{nd.name}' shares a discount or concentration with the word "
                             f"side's '{word.name}' (not on the Gibbs engine)")
    fixed = word.weights == "uniform"
    if fixed:
        for m in mix:
            m[4] = 1.0 / len(mix)
    return {"a": word.a, "b": word.b, "beta0": 0.0, "base": mix[0][0], "mix": mix,
            "gamma_sum": -1.0 if fixed else float(sum(m[4] for m in mix))}


def multiplicity_side(spec: NetworkSpec) -> str:
    """The sampler of pyp-lda's word side under ``cmgs``/``exact``: it runs beside Dirichlet topic vectors
    (:mod:`inference.pdpnet.word_mult`) or beside hdp-pyp-lda's topic side (hca.json: the token's vector over one
    shared Pitman-Yor vector, :mod:`inference.pdpnet.cmgs_owned_words`; its shape checked with the shared vectors,
    :func:`drivers.models.pdp_network.shared_pyp.check`); another Pitman-Yor topic vector is refused in one line
    naming it."""
    topic = spec.nodes[spec.topic.node]
    for name in spec.order:
        nd = spec.nodes[name]
        if nd.over != "topic" or nd.kind != "pyp" or shared_level(nd) or name == topic.name and len(nd.parents) == 1 \
                and shared_level(spec.nodes[nd.parents[0].node]) and spec.nodes[nd.parents[0].node].kind == "pyp":
            continue
        raise UsageError(f"network spec: node '{name}': a Pitman-Yor word side under \"sampler\": "
                         f"\"{spec.sampler}\" runs beside Dirichlet topic vectors or hdp-pyp-lda's topic side "
                         "(hca.json's shape); use \"sampler\": \"indicators\"")
    return spec.sampler


def shared_level(node) -> bool:
    """Whether a node's vectors are shared by documents (indexed by corpus or a kept column)."""
    return all(ix == "corpus" or ix.startswith("column:") for ix in node.index)


def burst_side(spec) -> dict | None:
    """None unless the word draw is indexed by [topic, document]; then ``{"a", "b", "beta0", "base", "burst"}``
    over a Dirichlet root or uniform vector per topic; over a Pitman-Yor phi[topic] phi's side (:func:`word_side`:
    "a", "b" phi's, a chain above it) with ``"bottom"`` [a, b, name] the burst vectors'; else one line naming the
    node."""
    word = spec.nodes[spec.word.node]
    if word.index != BURST_INDEX and spec.word.index != BURST_INDEX:
        return None
    par = word.parents[0] if len(word.parents) == 1 else None
    phi = spec.nodes[par.node] if par is not None else None
    if word.kind != "pyp" or word.index != spec.word.index or phi is None or par.if_missing is not None \
            or par.index != ("topic",) or phi.index != ("topic",) or phi.kind != "pyp" and phi.parents:
        raise UsageError(f"network spec: node '{word.name}': a word side indexed by [topic, document] on the Gibbs "
                         "engine is a Pitman-Yor family over one vector per topic (phi[topic]: a Dirichlet root, "
                         "the uniform, or a Pitman-Yor vector over corpus-level word vectors)")
    for nd in spec.nodes.values():
        if nd is not word and nd.kind == "pyp" and {nd.a, nd.b} & {word.a, word.b}:
            raise UsageError(f"network spec: node '{nd.name}' shares a discount or concentration with the word "
                             f"side's '{word.name}' (not on the Gibbs engine)")
    if phi.kind == "pyp":       # hca's full burstiness: phi[topic] pyp-lda's chain (.words_burst_chain)
        up = word_side(dataclasses.replace(spec, word=dataclasses.replace(spec.word, node=phi.name, index=("topic",))))
        if {"bigram", "column", "bottom"} & set(up):
            raise UsageError(f"network spec: node '{phi.name}': a Pitman-Yor phi[topic] under a word side indexed "
                             "by [topic, document] on the Gibbs engine has one corpus-level parent")
        return dict(up, burst=True, bottom=[word.a, word.b, word.name], bottom_gamma=float(par.gamma),
                    gammas=up.get("gammas", [float(phi.parents[0].gamma)]))
    return {"a": word.a, "b": word.b, "beta0": float(phi.alpha) if phi.kind == "dirichlet" else 0.0,
            "base": phi.name, "burst": True}


def side_params(side: dict | None) -> set:
    """The discounts and concentrations of a Pitman-Yor word side, every level's (none for a Dirichlet one)."""
    if side is None:
        return set()
    return {side["a"], side["b"]} | {x for lv in [*side.get("chain", ()), side.get("bottom", []),
                                                  *side.get("middle", ())] for x in lv[:2]}


def count_table(rows: int, K: int) -> CountTable:
    return CountTable(TABLE, rows, K, "dense", cells_per_token=1)


def derived(twk: np.ndarray) -> dict:
    """The word side's totals: T_k, the root's customers t_w, their sum (1-array)."""
    tk = twk.sum(axis=0, dtype=np.int64)
    return {"tk": tk, "tw": twk.sum(axis=1, dtype=np.int64), "tsum": np.array([tk.sum()], np.int64)}


def initial_tables(own_n: np.ndarray) -> np.ndarray:
    """One indicator per occupied own cell (a legal start; the re-seating moves t)."""
    return (own_n > 0).astype(np.int32)


def own_customers(uidx: np.ndarray, z: np.ndarray, U: int, K: int) -> np.ndarray:
    """(U, K) int64 the tokens counted per (row uidx, topic z) (one bincount)."""
    keys = np.asarray(uidx, np.int64) * K + np.asarray(z, np.int64)
    return np.bincount(keys, minlength=U * K).reshape(U, K)


def summed_rows(rows: np.ndarray, arr: np.ndarray, R: int) -> np.ndarray:
    """(R, K) int64: ``arr``'s (n, K) integer rows summed into rows ``rows`` (n,) (np.add.at's sums by one
    bincount over the nonzero entries; exact below 2^53)."""
    arr = np.asarray(arr)
    K = arr.shape[1]
    flat = arr.reshape(-1)
    cells = np.flatnonzero(flat)
    keys = np.asarray(rows, np.int64)[cells // K] * K + cells % K
    return np.bincount(keys, weights=flat[cells].astype(np.float64), minlength=R * K).reshape(R, K).astype(np.int64)


def local_arrays(vocab, uidx, own_n, own_t, nwk, twk, der: dict) -> dict:
    """The word side as :func:`inference.pdpnet.word_bigram.bigram_word_sweep`'s arrays: the block's words its
    pairs (rows of the partition's copies of ``nwk``, ``twk``), one context (the topics' N_k, T_k), the root one
    column (t_w, sum t); the cells of the block's words whose last tables left in two partitions at once (n > 0,
    t = 0) read as one table, opened by this partition's customers when it has some (the repair,
    :mod:`inference.pdpnet.word_pyp`). :func:`write_back` returns the moves to the copies."""
    nloc = np.asarray(nwk)[vocab].astype(np.int64)
    tloc = np.asarray(twk)[vocab].astype(np.int64)
    Nc = np.asarray(der["nk"], np.int64)[None, :].copy()
    Tc = np.asarray(der["tk"], np.int64)[None, :].copy()
    troot = np.asarray(der["tw"], np.int64)[:, None].copy()
    Troot = np.asarray(der["tsum"], np.int64).copy()
    race = (nloc > 0) & (tloc == 0)
    if race.any():
        own_t[race & (own_n > 0)] += 1
        tloc[race] += 1
        Tc[0] += race.sum(axis=0)
        troot[vocab, 0] += race.sum(axis=1)
        Troot[0] += int(race.sum())
    return {"uidx": uidx, "pword": vocab, "pctx": np.zeros(len(vocab), np.int64), "nloc": nloc, "tloc": tloc,
            "Nc": Nc, "Tc": Tc, "troot": troot, "Troot": Troot, "own_n": own_n}


def write_back(loc: dict, nwk, twk, der: dict) -> None:
    """The sweep's moves into the partition's copies of the tables and their totals."""
    vocab = loc["pword"]
    nwk[vocab] = loc["nloc"]
    twk[vocab] = loc["tloc"]
    der["nk"][:] = loc["Nc"][0]
    der["tk"][:] = loc["Tc"][0]
    der["tw"][:] = loc["troot"][:, 0]
    der["tsum"][:] = loc["Troot"]


def base_vector(twk: np.ndarray, beta0: float) -> np.ndarray:
    """nu: (beta0 + t_w) / (V beta0 + sum t), or uniform."""
    V = twk.shape[0]
    if beta0 <= 0.0:
        return np.full(V, 1.0 / V)
    tw = twk.sum(axis=1, dtype=np.float64)
    return (beta0 + tw) / (V * beta0 + tw.sum())


def topic_word(nwk, twk, a: float, b: float, beta0: float) -> np.ndarray:
    """(K, V) posterior mean of phi_k: ((n_wk - a t_wk) + (b + a T_k) nu_w) / (b + N_k) (thesis (7.12))."""
    n, t = legal(nwk, twk)
    nu = base_vector(t, beta0)
    n, t = n.T.astype(np.float64), t.T.astype(np.float64)
    N = n.sum(axis=1, keepdims=True)
    T = t.sum(axis=1, keepdims=True)
    phi = ((n - a * t) + (b + a * T) * nu[None, :]) / (b + N)
    return phi / phi.sum(axis=1, keepdims=True)


def loglik(nwk, twk, a: float, b: float, beta0: float) -> float:
    """log p(w, t | z) of the word side, its part of (E12) (as :func:`inference.pdpnet.hyper.log_joint`):
    sum_k log (b|a)_{T_k} / (b)_{N_k} + sum_wk log S^{n_wk}_{t_wk, a}, plus the root's Dirichlet-multinomial of
    the t_w (or -sum t log V)."""
    n, t = legal(nwk, twk)
    occ = n > 0
    return (cells_loglik(n[occ], t[occ], n.sum(axis=0), t.sum(axis=0), a, b)
            + root_loglik(t.sum(axis=1).astype(np.float64), beta0, n.shape[0]))


def cells_loglik(c, t, N, T, a: float, b: float) -> float:
    """sum over restaurants log (b|a)_T / (b)_N + sum over occupied cells log S^c_{t, a} (E12)."""
    L = log_stirling_table(a, int(np.max(c, initial=0)) + 1, int(np.max(t, initial=0)) + 1)
    total = float(L[c, t].sum())
    for NN, TT in zip(N, T):
        total += log_poch_incr(b, a, int(TT)) - log_poch(b, int(NN))
    return total


def root_loglik(tw: np.ndarray, beta0: float, V: int) -> float:
    """A root's Dirichlet(beta0)-multinomial of its customers ``tw`` (V,), or -sum t log V for the uniform."""
    if beta0 > 0:
        return float(gammaln(V * beta0) - gammaln(V * beta0 + tw.sum()) + (gammaln(beta0 + tw) - gammaln(beta0)).sum())
    return -float(tw.sum()) * math.log(V)


def histogram(nwk, twk, p: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """The word side's rows of the discount histograms (:mod:`inference.pdpnet.engine_stats`)."""
    n, t = legal(nwk, twk)
    occ = n > 0
    return cells_histogram(n[occ], t[occ], t.sum(axis=0)[n.sum(axis=0) > 0], p, q)


def cells_keys(c, t, T_live, p: int, q: int) -> np.ndarray:
    """The histogram keys (:mod:`inference.pdpnet.engine_stats`) of occupied cells' (c, t), restaurants' T."""
    return np.concatenate([engine_stats.hist_keys(0, p, 0, c, t),
                           engine_stats.hist_keys(1, p, q, T_live, np.zeros(len(T_live), np.int64))])


def cells_histogram(c, t, T_live, p: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Histogram keys and counts of the occupied cells' (c, t) and the occupied restaurants' T."""
    uniq, counts = np.unique(cells_keys(c, t, T_live, p, q), return_counts=True)
    return uniq, counts.astype(np.float64)


def sample_hyper(side: dict, nwk, twk, hyper: dict, sampled: dict, rng: np.random.Generator) -> dict:
    """The word side's b and a from the dense tables (:func:`sample_cells_hyper`)."""
    n, t = legal(nwk, twk)
    occ = n > 0
    return sample_cells_hyper(side, n[occ], t[occ], n.sum(axis=0), t.sum(axis=0), hyper, sampled, rng)


def sample_cells_hyper(side: dict, c, t, N, T, hyper: dict, sampled: dict, rng: np.random.Generator) -> dict:
    """The word side's b (q_j ~ Beta(b, N_j) per restaurant, then Gamma (E20) when a is a fixed 0, else a slice
    step, E21) and a (slice step on the occupied cells' (c, t) and the restaurants' T_j); ``sampled``: parameter
    name -> sampled?"""
    a_name, b_name = side["a"], side["b"]
    a, b = float(hyper["a_values"][a_name]), float(hyper["b_values"][b_name])
    N, T = np.asarray(N, np.int64), np.asarray(T, np.int64)
    live = N > 0
    keys, counts = cells_histogram(c, t, T[live], 0, 0)
    if sampled[b_name] and live.any():
        q = rng.beta(b, N[live])
        sum_log = float(-np.log(np.maximum(q, 1e-300)).sum())
        if not sampled[a_name] and a == 0.0:
            b = float(min(max(rng.gamma(T[live].sum(), 1.0 / max(sum_log, 1e-300)), 1e-3), 1e6))
        else:
            b = engine_stats.sample_concentration(b, 0, keys, counts, np.array([a]), sum_log, rng)
    if sampled[a_name]:
        a = engine_stats.sample_discount(a, keys, counts, 0, np.array([b]), rng)
    return dict(hyper, a_values=dict(hyper["a_values"], **{a_name: float(a)}),
                b_values=dict(hyper["b_values"], **{b_name: float(b)}))
