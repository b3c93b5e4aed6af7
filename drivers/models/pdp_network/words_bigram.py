"""pdp-network's bigram-topic word side on the Gibbs engine (issue 28; the topic-based language model as a network,
Wallach §3.4): phi[topic, previous_word] ~ PYP(a, b, psi_k) (a DP when a = 0) over psi[topic], a Dirichlet root
or uniform over words; the sweep: :mod:`inference.pdpnet.word_bigram`.

Tables: ``bigram_customers`` (n_{(k,w'),w}, from z) and ``bigram_word_tables`` (t_{(k,w'),w}: the indicators each
partition's customers hold, state ``word_t`` over the block's distinct (w', w) pairs, summed), both keyed by
(w' V + w) K + k as tlm's N_{w|w't} (V^2 K never allocated; w' = V: the document's first token). The roots'
customers t_kw (V x K), the contexts' totals and the race-legal t are derived from them (:func:`derived`, once per
synchronisation on the driver); a partition reads them over its own pairs (:func:`local_arrays`). The driver
samples the side's a and b from the global cells and contexts (:func:`drivers.models.pdp_network.words_pyp.sample_cells_hyper`).
"""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.models.pdp_network import words_chain, words_pyp
from drivers.models.pdp_network.shared_roots import flat_moved
from drivers.models.pdp_network.words_pyp import own_customers
from inference.gibbs.tables import CountTable, KeyedCounts

CUSTOMERS = "bigram_customers"
TABLES = "bigram_word_tables"
LOCAL = "_bigram_local"          # a partition's local copies between the sweeps of one synchronisation
PROTOCOL = ("; the bigram side's counts the trained ones plus each particle's own earlier tokens of the document "
            "(their customers and the tables they open, moved by the same resampling), as tlm's")


def count_tables(V: int, K: int, contexts: int | None = None) -> tuple:
    """Both keyed tables over ``contexts`` x V x K keys (the previous words and the start: V + 1; a kept column's
    values, :func:`context_column`)."""
    rows = (V + 1 if contexts is None else contexts) * V * K
    return (CountTable(CUSTOMERS, rows, 1, "keyed", cells_per_token=1),
            CountTable(TABLES, rows, 1, "keyed", cells_per_token=1))


def is_bigram(hyper: dict) -> bool:
    return bool((hyper.get("word_pyp") or {}).get("bigram"))


def context_column(side: dict | None) -> str | None:
    """The kept column whose value is the context instead of the previous word (phi[topic, column:NAME] over a
    Dirichlet root or uniform vector per topic, the differential topic models' phi0 as a Dirichlet; ``words_pyp.
    ONE_VALUE`` for phi[topic] over one: every token's context 0), or None."""
    return (side or {}).get("context")


def context_columns(side: dict | None) -> list[str] | None:
    """The kept columns whose values' tuple is the context (one or several: ``[topic, column:A, column:B]``, a
    context per (a, b), its code the flat index a |B| + b; session 25), or None (the previous word, one value)."""
    column = context_column(side)
    if column is None or column == words_pyp.ONE_VALUE:
        return None
    return [column] if isinstance(column, str) else list(column)


def context_codes(columns, names: list[str], doc_ids) -> np.ndarray:
    """(D,) the context code of documents: the flat index of their values of ``names`` (``columns``: the model's
    :class:`.shared_roots.ColumnValues`; the last column varies fastest)."""
    layout, sizes = columns.layout(doc_ids), columns.sizes()
    code = np.zeros(len(doc_ids), np.int64)
    for name in names:
        code = code * sizes[name] + layout[name][0]
    return code


def column_keys(block, codes, V: int) -> np.ndarray:
    """(N,) g V + w of every token, g its document's value code (``codes``, (D,))."""
    return np.repeat(np.asarray(codes, np.int64), np.diff(block.token_ptr())) * V + block.words.astype(np.int64)


def pair_keys(block, V: int) -> np.ndarray:
    """(N,) w' V + w of every token; a document's first token has w' = V (the compiled network's start context)."""
    words = block.words.astype(np.int64)
    prev = np.full(words.shape[0], V, np.int64)
    if words.shape[0] > 1:
        prev[1:] = words[:-1]
    starts = block.token_ptr()[:-1]
    prev[starts[starts < words.shape[0]]] = V
    return prev * V + words


def local_pairs(block, V: int, keys=None) -> tuple[np.ndarray, np.ndarray]:
    """(the block's distinct pair keys (U,), every token's pair index (N,)); ``keys``: every token's key when the
    context is not the previous word (:func:`column_keys`)."""
    pairs, uidx = np.unique(pair_keys(block, V) if keys is None else keys, return_inverse=True)
    return pairs, uidx.reshape(-1).astype(np.int64)


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
    t_raw = lookup(np.asarray(tab.keys, np.int64), np.asarray(tab.counts[:, 0], np.int64), keys)
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


def lookup(keys, values, wanted) -> np.ndarray:
    """The values of the ``wanted`` keys in a sorted key table (0 where a key is absent)."""
    if len(keys) == 0:
        return np.zeros(np.shape(wanted), np.asarray(values).dtype)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, values[at], 0)


def local_arrays(pairs, uidx, state, der: dict, V: int, K: int) -> dict:
    """A partition's copies of the global values over its pairs (the kernel's arrays); the partition opens one
    table for its customers of a race cell (own indicator, the repair) before sweeping."""
    cells = pairs[:, None] * K + np.arange(K)[None, :]
    nloc = lookup(der["bigram_keys"], der["bigram_n"], cells)
    tloc = lookup(der["bigram_keys"], der["bigram_t"], cells)
    race = lookup(der["bigram_keys"], der["bigram_race"].astype(np.int64), cells) > 0
    own_n = own_customers(uidx, state["z"], len(pairs), K)
    state["word_t"][race & (own_n > 0)] += 1
    prev = pairs // V
    ctx_ids, pctx = np.unique(prev, return_inverse=True)
    ctx_cells = ctx_ids[:, None] * K + np.arange(K)[None, :]
    return {"uidx": uidx, "pword": (pairs % V).astype(np.int64), "pctx": pctx.reshape(-1).astype(np.int64),
            "nloc": nloc.astype(np.int64), "tloc": tloc.astype(np.int64),
            "Nc": lookup(der["bigram_ctx"], der["bigram_ctx_n"], ctx_cells).astype(np.int64),
            "Tc": lookup(der["bigram_ctx"], der["bigram_ctx_t"], ctx_cells).astype(np.int64),
            "troot": der["bigram_troot"].copy(), "Troot": der["bigram_Troot"].astype(np.int64).copy(),
            "own_n": own_n}


def initial_tables(pairs, uidx, z, K: int) -> np.ndarray:
    """One indicator per occupied own cell (a legal start)."""
    return (own_customers(uidx, z, len(pairs), K) > 0).astype(np.int64)


def sample_hyper(side: dict, der: dict, hyper: dict, sampled: dict, rng) -> dict:
    """The side's b and a from the global cells (n, t) and contexts (N, T)."""
    return words_pyp.sample_cells_hyper(side, der["bigram_n"], der["bigram_t"], der["bigram_ctx_n"],
                                        der["bigram_ctx_t"], hyper, sampled, rng)


def loglik(der: dict, a: float, b: float, beta0: float, V: int) -> float:
    """log p(w, t | z) of the side (E12): the cells' Stirling numbers, the contexts' Pochhammer ratios, and every
    topic's root a Dirichlet-multinomial of its customers t_kw (or uniform)."""
    total = words_pyp.cells_loglik(der["bigram_n"], der["bigram_t"], der["bigram_ctx_n"], der["bigram_ctx_t"], a, b)
    troot = der["bigram_troot"]
    return total + sum(words_pyp.root_loglik(troot[:, k].astype(np.float64), beta0, V) for k in range(troot.shape[1]))


def topic_word(nwk, der: dict, b: float, beta0: float) -> np.ndarray:
    """(K, V) every topic's unigram estimate (n_wk + b psi_k(w)) / (N_k + b), psi_k the root's posterior mean (as
    tlm's (N_{w|t} + beta_t q_t(w)) / (N_t + beta_t))."""
    troot = der["bigram_troot"].astype(np.float64)
    V = troot.shape[0]
    psi = np.full_like(troot, 1.0 / V) if beta0 <= 0 else (troot + beta0) / (troot.sum(axis=0) + V * beta0)
    n = np.asarray(nwk, np.float64)
    phi = ((n + b * psi) / (n.sum(axis=0) + b)).T
    return phi / phi.sum(axis=1, keepdims=True)


def predictive(doc, trained: dict, a: float, b: float, beta0: float, V: int, K: int, keys=None) -> np.ndarray:
    """(N, K) p(w_n | w_{n-1}, k) of a test document's tokens with the word side at its posterior mean given the
    trained state (the frozen topics of eq 5.10, per context): ((n - a t) + (b + a T_{k,w'}) psi_k(w)) /
    (b + N_{k,w'}), psi_k(w) = (beta0 + t_kw) / (V beta0 + T_k) (uniform: 1/V; a Pitman-Yor psi: its trained
    predictive, ``bigram_psi``)."""
    pk = pair_keys(doc, V) if keys is None else keys
    cells = pk[:, None] * K + np.arange(K)[None, :]
    n = lookup(trained["bigram_keys"], trained["bigram_n"], cells).astype(np.float64)
    t = lookup(trained["bigram_keys"], trained["bigram_t"], cells).astype(np.float64)
    ctx = (pk // V)[:, None] * K + np.arange(K)[None, :]
    N = lookup(trained["bigram_ctx"], trained["bigram_ctx_n"], ctx).astype(np.float64)
    T = lookup(trained["bigram_ctx"], trained["bigram_ctx_t"], ctx).astype(np.float64)
    troot = trained["bigram_troot"].astype(np.float64)
    w = pk % V
    if "bigram_psi" in trained:
        troot, beta0 = trained["bigram_psi"], PSEUDO
    psi = np.full(cells.shape, 1.0 / V) if beta0 <= 0 else (beta0 + troot[w]) / (V * beta0 + troot.sum(axis=0))
    return ((n - a * t) + (b + a * T) * psi) / (b + N)


def document_side(doc, trained: dict, V: int, K: int, keys=None) -> tuple:
    """A test document's word-side arrays of :func:`inference.pdpnet.bigram_left_to_right.bigram_particles`: every
    token's pair among its distinct pairs, a pair's word row and context row, the pairs' trained cells (U, K), the
    contexts' trained totals, the document's distinct words' root customers t_kw and T_k."""
    pairs, uidx = local_pairs(doc, V, keys)
    cells = pairs[:, None] * K + np.arange(K)[None, :]
    ctx_ids, pctx = np.unique(pairs // V, return_inverse=True)
    ctx_cells = ctx_ids[:, None] * K + np.arange(K)[None, :]
    words, pword = np.unique(pairs % V, return_inverse=True)
    arrays = (uidx, pword.reshape(-1), pctx.reshape(-1),
              lookup(trained["bigram_keys"], trained["bigram_n"], cells),
              lookup(trained["bigram_keys"], trained["bigram_t"], cells),
              lookup(trained["bigram_ctx"], trained["bigram_ctx_n"], ctx_cells),
              lookup(trained["bigram_ctx"], trained["bigram_ctx_t"], ctx_cells))
    out = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in arrays)
    psi = trained.get("bigram_psi")       # a Pitman-Yor psi: its trained predictive's pseudo-counts (float)
    if psi is not None:
        return out + (np.ascontiguousarray(psi[words]), psi.sum(axis=0))
    return out + tuple(np.ascontiguousarray(x, dtype=np.int64) for x in (trained["bigram_troot"][words],
                                                                          trained["bigram_Troot"]))


#: a Pitman-Yor psi's beta0 in the bigram side's scoring: psi_k(w) = (PSEUDO + x_kw) / (V PSEUDO + sum x_k) is the
#: pseudo-counts' predictive x_kw / sum x_k to machine precision (x: :func:`frozen_psi`, sum x_k >= b1 > 0)
PSEUDO = 1e-300


def upper_tables(tables: dict, der: dict) -> dict:
    """psi and up as :mod:`.words_chain` reads a chain (a Pitman-Yor psi, :mod:`.words_bigram_psi`): level 0's
    customers psi's (the bigram cells' read tables summed over the previous words, V x K), its indicators
    ``word_tables``, the corpus levels' ``word_chain``."""
    troot = der["bigram_troot"]
    return {"nwk": troot, words_pyp.TABLE: tables[words_pyp.TABLE],
            words_chain.TABLE: tables.get(words_chain.TABLE, np.zeros((troot.shape[0], 0), np.int64))}


def frozen_psi(up: dict, side: dict, hyper: dict) -> np.ndarray:
    """(V, K) a Pitman-Yor psi_k's trained predictive as pseudo-counts x_kw = (c_kw - a1 t_kw) + (b1 + a1 T_k)
    nu(w), summing to C_k + b1 (nu its parent's posterior mean): a document's next customer at psi_k picks w with
    (x_kw + d_kw) / (sum x_k + D_k), d its own customers there (exact for a DP psi, a1 = 0, with nu frozen)."""
    n, t, _, _ = words_chain.legal(up["nwk"], up[words_pyp.TABLE], up[words_chain.TABLE])
    a1, b1 = float(hyper["a_values"][side["a"]]), float(hyper["b_values"][side["b"]])
    nu = words_chain.parent_mean(up, side, hyper)
    return np.ascontiguousarray((n - a1 * t) + (b1 + a1 * t.sum(axis=0))[None, :] * nu[:, None])


def cell_values(side: dict, hyper: dict) -> tuple:
    """(a, b) names of the bigram cells: the bottom's when psi is a Pitman-Yor vector, else the side's own."""
    return tuple(side["bottom"][:2]) if side.get("bottom") else (side["a"], side["b"])


class BigramArrays:
    """``pdp-network``'s part that keeps a bigram-topic word side's trained tables (``bigram_keys``, ``bigram_n``,
    ``bigram_t``: the keys, customers and race-legal indicators) beside the model, for left-to-right."""

    _ARRAYS = ("bigram_keys", "bigram_n", "bigram_t")

    @property
    def array_files(self) -> tuple:
        psi = ("bigram_psi",) if self.__dict__.get("_has_bigram_psi") else ()
        return super().array_files + (self._ARRAYS + psi if self.__dict__.get("_has_bigram") else ())

    def bind_directory(self, directory: str) -> None:
        super().bind_directory(directory)
        self._has_bigram = storage.exists(storage.join(directory, "bigram_keys.npy"))
        self._has_bigram_psi = storage.exists(storage.join(directory, "bigram_psi.npy"))

    def bind_result(self, result) -> None:
        super().bind_result(result)
        if CUSTOMERS in result.tables:
            der = derived(result.tables, self.vocab_size, self.num_topics)
            side = result.hyper.get("word_pyp") or {}
            if side.get("bottom"):          # a Pitman-Yor psi: frozen at its trained predictive (held out)
                der["bigram_psi"] = frozen_psi(upper_tables(result.tables, der), side, result.hyper)
            self._has_bigram, self._has_bigram_psi, self._trained_bigram = True, "bigram_psi" in der, der

    def saved_arrays(self) -> dict:
        out = super().saved_arrays()
        der = self.__dict__.get("_trained_bigram")
        names = self._ARRAYS + (("bigram_psi",) if der is not None and "bigram_psi" in der else ())
        return out if der is None else dict(out, **{name: der[name] for name in names})

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        super().bind_arrays(arrays, meta)
        if "bigram_keys" in arrays:
            keys = np.asarray(arrays["bigram_keys"], np.int64)
            tables = {CUSTOMERS: KeyedCounts(keys, np.asarray(arrays["bigram_n"], np.int32)[:, None]),
                      TABLES: KeyedCounts(keys, np.asarray(arrays["bigram_t"], np.int32)[:, None])}
            self._trained_bigram = derived(tables, self.vocab_size, self.num_topics)
            if "bigram_psi" in arrays:
                self._trained_bigram["bigram_psi"] = np.asarray(arrays["bigram_psi"], np.float64)

    def frozen_words(self, block, hyper: dict, words, frozen_phi) -> tuple:
        """``(frozen_phi, words)`` of a sweep with the topics frozen: a bigram side's rows per token
        (:meth:`frozen_rows`, every token its own row), else as given."""
        if frozen_phi is None or not is_bigram(hyper):
            return frozen_phi, words
        return self.frozen_rows(block, hyper), np.arange(block.n_tokens, dtype=np.int64)

    def frozen_rows(self, block, hyper: dict) -> np.ndarray:
        """(N, K) the block's tokens' word factors given the trained state (:func:`predictive`)."""
        side = hyper["word_pyp"]
        a, b = cell_values(side, hyper)
        return np.ascontiguousarray(predictive(block, self._trained_bigram, float(hyper["a_values"][a]),
                                               float(hyper["b_values"][b]), float(side["beta0"]),
                                               self.vocab_size, self.num_topics, self._token_keys(block, side)))

    def _token_keys(self, block, side: dict):
        """Every token's key when the context is a kept column's value (the block's documents' values), else None
        (the previous word)."""
        column = context_column(side)
        if column is None:
            return None
        if column == words_pyp.ONE_VALUE:       # phi[topic] over a Dirichlet root per topic: one context, 0
            return block.words.astype(np.int64)
        return column_keys(block, context_codes(self._columns, context_columns(side), block.doc_ids), self.vocab_size)

    def word_hook(self, hyper: dict) -> tuple:
        """``(words_of, protocol)`` of :func:`drivers.models.pdp_network.left_to_right_scores.network_scores`: a bigram-topic word
        side's (:meth:`document_words`, :data:`PROTOCOL`), else (None, "")."""
        return ((lambda doc, net: self.document_words(doc, net, hyper)), PROTOCOL) if is_bigram(hyper) else (None, "")

    def document_words(self, doc, net, hyper: dict) -> tuple:
        """A test document's word-side arguments of ``bigram_particles`` (:func:`document_side`, then V, the side's
        discount and concentration among the compiled network's, beta0)."""
        side = hyper["word_pyp"]
        a, b = cell_values(side, hyper)
        beta0 = PSEUDO if "bigram_psi" in self._trained_bigram else float(side["beta0"])
        return document_side(doc, self._trained_bigram, self.vocab_size, self.num_topics,
                             self._token_keys(doc, side)) + (
            self.vocab_size, net.a_names.index(a), net.b_names.index(b), beta0)

    @property
    def heldout_protocol(self) -> str | None:
        """What :meth:`heldout_loglik` scores (train's log and model.json): left to right for a bigram side or topics
        drawn by the previous word."""
        side = self.__dict__.get("_word_pyp") or {}
        if not side.get("bigram") and not reads_previous_topics(self.__dict__.get("_raw")):
            return None
        return ("left to right (Alg. 3.3), one state per particle (--heldout-samples particles), every word scored"
                + (PROTOCOL if side.get("bigram") else ""))

    def heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        """A bigram-topic word side's held-out score: left to right with ``schedule.samples`` particles (tlm's
        default; document completion would score with the unigram ``phi_vk``); the same when the topic draw's
        vector is indexed by the previous word (document completion would score every token with the document's
        first vector, theta[start]: session 24)."""
        if not is_bigram(hyper) and not reads_previous_topics(hyper.get("network")):
            return super().heldout_loglik(block, hyper, phi_vk, schedule, seed, partition)
        from inference import left_to_right
        rows = self.left_to_right(block, hyper, phi_vk, left_to_right.LeftToRight(schedule.samples, True,
                                                                                 seed)).per_document
        return np.array([rows[:, left_to_right.LEFT_TO_RIGHT].sum(), rows[:, left_to_right.SCORED].sum(),
                         float(block.n_docs)])

    def grown_chain(self, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``refresh`` (issue 30, 2): both keyed tables re-keyed to the grown vocabulary (:func:`rekeyed`); a
        partition's ``word_t`` stays (its distinct pairs keep their order: (w', w) lexicographic, the start
        context last; with a kept column's value as the context (g, w), a kept value keeping its code, new values
        taking the next, :meth:`.shared_roots.SharedRootsModel.continued_chain`; session 24)."""
        if CUSTOMERS in tables:
            start = context_column(hyper.get("word_pyp")) is None   # (a column's value codes stay: kept values keep
            names, old = context_columns(hyper.get("word_pyp")), self.__dict__.get("_old_roots")       # theirs)
            moved = None if names is None or len(names) < 2 or old is None else (   # several: the flat codes move
                lambda g: flat_moved(g, [old.sizes[n] for n in names], [self._columns.sizes()[n] for n in names]))
            tables = dict(tables, **{name: rekeyed(tables[name], old_vocab_size, self.vocab_size, self.num_topics,
                                                   start, moved) for name in (CUSTOMERS, TABLES)})
        return super().grown_chain(tables, hyper, old_vocab_size)


def reads_previous_topics(raw) -> bool:
    """Whether a network spec's topic draw reads a vector indexed by the previous word (a topic transition)."""
    if raw is None:
        return False
    from inference.pdpnet.spec import parse_network

    spec = parse_network(raw)
    return "previous_word" in spec.nodes[spec.topic.node].index


def rekeyed(table: KeyedCounts, V0: int, V: int, K: int, start: bool = True, contexts=None) -> KeyedCounts:
    """A keyed table over (w' V0 + w) K + k moved to (w' V + w) K + k, the start context w' = V0 to V (as tlm's
    N_{w|w't}, :meth:`drivers.models.tlm.model.TopicLM.grown_chain`; ``start`` False: the context a value code g,
    kept, or moved by ``contexts``, a function of the codes); the counts unchanged."""
    keys = np.asarray(table.keys, np.int64)
    prev, word, topic = keys // (V0 * K), (keys // K) % V0, keys % K
    prev = prev if contexts is None else contexts(prev)
    moved = (np.where(start & (prev == V0), V, prev) * V + word) * K + topic
    order = np.argsort(moved, kind="stable")
    return KeyedCounts(moved[order], np.asarray(table.counts)[order])
