"""pdp-network's word vector with several parents mixed by rho on the Gibbs engine (issue 28): phi[topic] ~ PYP(a,
b, sum_e rho_e nu_e) over P >= 2 Dirichlet roots or uniform vectors over words, each indexed by the corpus (a
background shared by the topics) or by the topic (a per-topic base); rho integrated out (E9) or fixed
(``"weights": "uniform"``). The side's spec: :func:`.words_pyp.mix_side`; the sweep:
:mod:`inference.pdpnet.word_mix`.

Tables: ``nwk`` (the customers n_wk, the tokens) and ``word_mix`` (P V x K dense: edge e's tables s_ewk at rows
e V + w, the summed indicators the partitions' customers hold; state ``word_ms`` (P, U, K), 0 <= sum_e s^p <= n^p).
**Race rule**: two partitions may remove a cell's last tables in the same sweep (n_wk > 0, every s_ewk = 0 after
the merge); the driver's steps and every partition read such a cell as one table on edge 0 (the parent listed
first), and a partition with own customers there opens it on edge 0 before its next sweep (:func:`read`,
:func:`sweep_args`). The driver steps phi's a and b from the global tables (restaurants the topics, t = sum_e s);
the parents' Dirichlet priors are fixed; the topics are phi's posterior means (thesis (7.12) over the rho-mixture
of the parents' means), which held-out documents read as the frozen topics."""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from drivers.models.pdp_network import words_pyp
from drivers.models.pdp_network.words_dirichlet import DirichletWords
from inference.errors import RefusedError
from inference.gibbs.tables import CountTable
from inference.pdpnet import word_mix

TABLE = "word_mix"
STATE = "word_ms"
KINDS = {("corpus", "dirichlet"): word_mix.CORPUS_ROOT, ("topic", "dirichlet"): word_mix.TOPIC_ROOT,
         ("corpus", "uniform"): word_mix.UNIFORM, ("topic", "uniform"): word_mix.UNIFORM}


def edges(side: dict) -> tuple:
    """(kind, alpha, gamma) per parent edge (arrays) and sum gamma (-1: fixed weights)."""
    mix = side["mix"]
    return (np.array([KINDS[(m[1], m[2])] for m in mix], np.int64), np.array([m[3] for m in mix], np.float64),
            np.array([m[4] for m in mix], np.float64), float(side["gamma_sum"]))


def count_tables(model, side: dict) -> tuple:
    return (CountTable(TABLE, len(side["mix"]) * model.vocab_size, model.num_topics, "dense", cells_per_token=1),)


def initial_state(model, block, state: dict, side: dict) -> None:
    """One table per occupied own cell, on edge 0 (a legal start; the token steps move t and the edges)."""
    vocab, uidx = model._local_vocab(block)
    own = words_pyp.own_customers(uidx, state["z"], len(vocab), model.num_topics)
    ms = np.zeros((len(side["mix"]),) + own.shape, np.int64)
    ms[0] = own > 0
    state[STATE] = ms


def table_counts(model, block, state: dict) -> dict:
    vocab, V, ms = model._local_vocab(block)[0], model.vocab_size, state[STATE]
    return {TABLE: (np.concatenate([e * V + vocab for e in range(len(ms))]),
                    np.concatenate(list(ms)).astype(np.int32))}


def word_node(hyper: dict) -> str:
    """The name of the spec's word vector (for messages)."""
    raw = hyper.get("network")
    return raw["word"]["node"] if isinstance(raw, dict) else "the word vector"


def read(nwk, table, P: int, node: str = "the word vector") -> tuple[np.ndarray, np.ndarray]:
    """(n (V, K), s (P, V, K)) int64 as read: a cell with customers and no table one table on edge 0 (race rule).
    A table of another shape than (P V, K), or not laid out as rows e V + w (a cell with more tables than customers,
    or a negative count: every partition's own 0 <= sum_e s^p <= n^p, so their sum too), is refused with a
    ValueError naming ``node`` (the sweep would read another cell's counts)."""
    n = np.asarray(nwk, np.int64)
    V, K = n.shape
    table = np.asarray(table)
    if table.shape != (P * V, K):
        raise ValueError(f"node '{node}': its table {TABLE} is {' x '.join(map(str, table.shape))}, not {P * V} x {K} "
                         f"({P} edges over {V} words at rows e V + w, {K} topics)")
    s = table.astype(np.int64).reshape(P, V, K)
    t = s.sum(axis=0)
    bad = int(((t > n) | (s < 0).any(axis=0)).sum())
    if bad:
        raise ValueError(f"node '{node}': its table {TABLE} ({P * V} x {K}) is not laid out as rows e V + w of {P} "
                         f"edges over {V} words: {bad} cell(s) hold more tables than customers or a negative count")
    s[0][(n > 0) & (t == 0)] = 1
    return n, s


def sweep_args(model, block, state, net, nwk, words, mx, side) -> tuple:
    """((:func:`inference.pdpnet.word_mix.mix_word_sweep`'s head, tail), the local arrays): the global counts as
    read from the partition's copies (``words[2]``: the tables), its own; its race cells with own customers
    opened on edge 0."""
    tables, V, K, P = words[2], model.vocab_size, model.num_topics, len(side["mix"])
    vocab, uidx = model._local_vocab(block)
    n, s = read(nwk, tables[TABLE], P, net.spec.word.node)
    raw = np.asarray(tables[TABLE]).reshape(P, V, K)[:, vocab].sum(axis=0)
    own_n = words_pyp.own_customers(uidx, state["z"], len(vocab), K)
    ms = state[STATE]
    ms[0][(n[vocab] > 0) & (raw == 0) & (own_n > 0)] += 1
    Sk = s.sum(axis=1)
    loc = {"vocab": vocab, "nloc": n[vocab].copy(), "sloc": np.ascontiguousarray(s[:, vocab]), "Nk": n.sum(axis=0),
           "Tk": Sk.sum(axis=0), "Sk": Sk, "rc": np.ascontiguousarray(s.sum(axis=2)[:, vocab]),
           "RC": s.sum(axis=(1, 2)), "tables": tables, "derived": words[1]}
    mx[0] = max(int(mx[0]), int(loc["nloc"].max(initial=0)))
    mx[1] = max(int(mx[1]), int(loc["sloc"].sum(axis=0).max(initial=0)))
    kinds, alphas, gammas, gsum = edges(side)
    tail = tuple(loc[k] for k in ("nloc", "sloc", "Nk", "Tk", "Sk", "rc", "RC")) + (
        own_n, ms, net.a_names.index(side["a"]), net.b_names.index(side["b"]), kinds, alphas, gammas, gsum, V)
    return ((uidx,), tail), loc


def write_back(loc: dict, nwk) -> None:
    """The sweep's moves into the partition's copies of the tables (a second sweep before the merge reads them)."""
    vocab, tables = loc["vocab"], loc["tables"]
    V = np.asarray(nwk).shape[0]
    nwk[vocab] = loc["nloc"]
    for e in range(loc["sloc"].shape[0]):
        tables[TABLE][e * V + vocab] = loc["sloc"][e]
    if "nk" in loc["derived"]:
        loc["derived"]["nk"][:] = loc["Nk"]


def grown_rows(table, P: int, V0: int, V: int) -> np.ndarray:
    """``word_mix`` of P edges over V0 words (rows e V0 + w) laid out for V >= V0 words (rows e V + w, the rest 0)."""
    table = np.asarray(table)
    if table.shape[0] != P * V0 or V < V0:
        raise RefusedError(f"the chain's table {TABLE} of {table.shape[0]} rows is not {P} edges over {V0} words "
                           f"(or {V} < {V0})")
    out = np.zeros((P, V, table.shape[1]), table.dtype)
    out[:, :V0] = table.reshape(P, V0, -1)
    return out.reshape(P * V, -1)


def parent_means(n, s, side: dict) -> np.ndarray:
    """(P, V, K) every parent's posterior mean at every topic: (alpha + c)/(V alpha + C), or 1/V."""
    kinds, alphas, _, _ = edges(side)
    P, V, K = s.shape
    out = np.empty((P, V, K))
    for e in range(P):
        if kinds[e] == word_mix.UNIFORM:
            out[e] = 1.0 / V
        elif kinds[e] == word_mix.CORPUS_ROOT:
            c = s[e].sum(axis=1)
            out[e] = ((alphas[e] + c) / (V * alphas[e] + c.sum()))[:, None]
        else:
            out[e] = (alphas[e] + s[e]) / (V * alphas[e] + s[e].sum(axis=0))
    return out


def rho(s, side: dict) -> np.ndarray:
    """(P, K) rho_ke's posterior mean (gamma_e + S_ke)/(sum gamma + T_k), or the fixed gamma_e."""
    _, _, gammas, gsum = edges(side)
    Sk = s.sum(axis=1).astype(np.float64)
    if gsum < 0:
        return np.repeat(gammas[:, None], Sk.shape[1], axis=1)
    return (gammas[:, None] + Sk) / (gsum + Sk.sum(axis=0))


def topic_word(tables: dict, side: dict, hyper: dict) -> np.ndarray:
    """(K, V) phi's posterior mean ((n - a t) + (b + a T_k) sum_e rho_ke nu_e) / (b + N_k) (thesis (7.12))."""
    a, b = float(hyper["a_values"][side["a"]]), float(hyper["b_values"][side["b"]])
    n, s = read(tables["nwk"], tables[TABLE], len(side["mix"]), word_node(hyper))
    t = s.sum(axis=0)
    base = (rho(s, side)[:, None, :] * parent_means(n, s, side)).sum(axis=0)
    phi = ((n - a * t) + (b + a * t.sum(axis=0)) * base) / (b + n.sum(axis=0))
    phi = phi.T
    return phi / phi.sum(axis=1, keepdims=True)


def loglik(tables: dict, side: dict, hyper: dict) -> float:
    """log p(w, t, s | z) of the word side, its part of (E12) as :func:`inference.pdpnet.hyper.log_joint`: phi's
    cells and restaurants, the rho factor per topic, C^t_s per cell, the parents' Dirichlet-multinomials."""
    a, b = float(hyper["a_values"][side["a"]]), float(hyper["b_values"][side["b"]])
    n, s = read(tables["nwk"], tables[TABLE], len(side["mix"]), word_node(hyper))
    t = s.sum(axis=0)
    occ = n > 0
    total = words_pyp.cells_loglik(n[occ], t[occ], n.sum(axis=0), t.sum(axis=0), a, b)
    kinds, alphas, gammas, gsum = edges(side)
    Sk = s.sum(axis=1)
    if gsum < 0:
        total += float((Sk * np.log(gammas)[:, None]).sum())
    else:
        total += float((gammaln(gsum) - gammaln(gammas).sum()) * Sk.shape[1] + gammaln(gammas[:, None] + Sk).sum()
                       - gammaln(gsum + Sk.sum(axis=0)).sum())
    total += float(gammaln(t + 1.0).sum() - gammaln(s + 1.0).sum())
    V = n.shape[0]
    for e in range(len(kinds)):
        beta0 = 0.0 if kinds[e] == word_mix.UNIFORM else float(alphas[e])
        if kinds[e] == word_mix.TOPIC_ROOT:
            total += sum(words_pyp.root_loglik(s[e][:, k].astype(np.float64), beta0, V) for k in range(s.shape[2]))
        else:
            total += words_pyp.root_loglik(s[e].sum(axis=1).astype(np.float64), beta0, V)
    return total


def sample_hyper(side: dict, tables: dict, hyper: dict, sampled: dict, rng) -> dict:
    """phi's b and a from the global cells (c, t = sum_e s) and restaurants (:func:`words_pyp.sample_cells_hyper`)."""
    n, s = read(tables["nwk"], tables[TABLE], len(side["mix"]), word_node(hyper))
    t = s.sum(axis=0)
    occ = n > 0
    return words_pyp.sample_cells_hyper(side, n[occ], t[occ], n.sum(axis=0), t.sum(axis=0), hyper, sampled, rng)


class MixWords(DirichletWords):
    """The word side object (:mod:`.word_sides`) of a word vector with several parents: the functions above; no
    owned kernel (beside a shared Pitman-Yor topic vector the split engine refuses it: :func:`.shared_pyp.check`);
    the held-out hooks the base's (None: the model's paths read its posterior means); ``refresh`` continues the
    chain (:meth:`grown_tables`)."""

    kernel = staticmethod(word_mix.mix_word_sweep)
    owned_kernel = None

    def count_tables(self, model) -> tuple:
        return count_tables(model, self.side)

    def initial_state(self, model, block, state: dict) -> None:
        initial_state(model, block, state, self.side)

    def table_counts(self, model, block, state: dict) -> dict:
        return table_counts(model, block, state)

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        return sweep_args(model, block, state, net, nwk, words, mx, self.side)

    def write_back(self, loc, nwk, words, z) -> None:
        if loc is not None:
            write_back(loc, nwk)

    def topic_word(self, model, tables, derived, hyper):
        return topic_word(tables, self.side, hyper)

    def loglik(self, model, tables, derived, hyper):
        return loglik(tables, self.side, hyper)

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return sample_hyper(self.side, tables, hyper, sampled, rng)

    def grown_tables(self, model, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``refresh`` (issue 30, 2): ``word_mix``'s rows e V0 + w moved to e V + w (:func:`grown_rows`), the new
        words' rows empty; ``nwk`` is padded by the model; a partition's ``word_ms`` stays (its words keep their
        ids and order); the batch's documents start at their partitions' :func:`initial_state`."""
        return dict(tables, **{TABLE: grown_rows(tables[TABLE], len(self.side["mix"]), old_vocab_size,
                                                 model.vocab_size)}), hyper
