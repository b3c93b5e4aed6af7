"""pdp-network's word side indexed by [topic, column:NAME] on the Gibbs engine (issue 28; Chen, Buntine et al.'s
differential topic models): phi[k, g] ~ PYP(a, b, phi0_k) per topic and value g of a kept column, phi0_k a
Pitman-Yor vector over the uniform, a Dirichlet root or a chain of corpus-level Pitman-Yor vectors (the sweep:
:mod:`inference.pdpnet.word_column`; phi0 and up: :mod:`drivers.models.pdp_network.words_chain`).

Tables, dense per value (G = the column's values + 1 for an unseen one): ``word_col_n`` (customers of cell (g, w)
and topic k at row g V + w, the tokens) and ``word_col_t`` (their indicators; state ``word_bt`` over the block's
pairs), ``word_tables`` (phi0's indicators; its customers are sum_g t_gwk), ``word_chain`` (the corpus levels'),
every indicator held by a partition and summed. The race rule at every level from the bottom up, as words_chain's.
Held-out documents and ``infer`` read the trained bottom tables (kept beside the model) with phi0 frozen:
p(w | k, g) = ((n_gwk - a t_gwk) + (b + a T_gk) phi0_k(w)) / (b + N_gk) (an unseen value: phi0_k(w))."""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import words_chain, words_pyp
from drivers import storage
from inference.errors import RefusedError
from inference.gibbs import heldout
from inference.gibbs.tables import CountTable

CUSTOMERS, TABLES = "word_col_n", "word_col_t"


def is_column(hyper: dict) -> bool:
    return bool((hyper.get("word_pyp") or {}).get("column"))


def values(model, block, side: dict) -> tuple[np.ndarray, int]:
    """(every document's value code (D,), G); a level per topic (``words_pyp.ONE_VALUE``): every value 0, G = 1."""
    if side["column"] == words_pyp.ONE_VALUE:
        return np.zeros(block.n_docs, np.int64), 1
    codes, G = model._columns.layout(block.doc_ids)[side["column"]]
    return np.asarray(codes, np.int64), int(G)


def local_pairs(model, block, side: dict) -> tuple:
    """(pair keys g V + w (P,), every token's pair (N,), a pair's word as a row of the block's vocabulary (P,),
    its value (P,), G)."""
    got = model._memo("column_pairs").get(block, side["column"])      # (remembered: read only)
    if got is None:
        codes, G = values(model, block, side)
        V = model.vocab_size
        keys = np.repeat(codes, np.diff(block.token_ptr())) * V + block.words.astype(np.int64)
        pairs, pidx = np.unique(keys, return_inverse=True)
        vocab = model._local_vocab(block)[0]
        got = model._memo("column_pairs").put(block, (pairs, pidx.reshape(-1).astype(np.int64),
                                                      np.searchsorted(vocab, pairs % V), pairs // V, G), side["column"])
    return got


def column_size(model, side: dict) -> int:
    """G: the column's values plus one for an unseen value; 1 for a level per topic."""
    return 1 if side["column"] == words_pyp.ONE_VALUE else model._columns.sizes()[side["column"]]


def count_tables(model, side: dict) -> tuple:
    V, K, L = model.vocab_size, model.num_topics, words_chain.levels(side)
    out = (words_pyp.count_table(model.shared_rows, K),) + ((words_chain.count_table(model.shared_rows, L),) if L else ())
    if not side.get("column"):
        return out
    G = column_size(model, side)
    return out + (CountTable(CUSTOMERS, G * V, K, "dense", cells_per_token=1),
                  CountTable(TABLES, G * V, K, "dense", cells_per_token=1))


def initial_state(model, block, state: dict, side: dict) -> None:
    """One indicator per occupied own cell at every level (a legal start)."""
    vocab, uidx = model._local_vocab(block)
    if side.get("column"):
        pairs, pidx, pword, _, _ = local_pairs(model, block, side)
        state["word_bt"] = (words_pyp.own_customers(pidx, state["z"], len(pairs), model.num_topics) > 0
                            ).astype(np.int32)
        own0 = np.zeros((len(vocab), model.num_topics), np.int64)
        np.add.at(own0, pword, state["word_bt"])
    else:
        own0 = words_pyp.own_customers(uidx, state["z"], len(vocab), model.num_topics)
    state["word_t"] = (own0 > 0).astype(np.int32)
    if words_chain.levels(side):
        state["word_up"] = words_chain.initial_tables(state["word_t"], words_chain.levels(side))


def table_counts(model, block, state: dict, side: dict) -> dict:
    vocab = model._local_vocab(block)[0]
    out = {words_pyp.TABLE: (vocab, state["word_t"].astype(np.int32))}
    if "word_up" in state:
        out[words_chain.TABLE] = (vocab, state["word_up"].astype(np.int32))
    if side.get("column"):
        pairs, pidx, _, _, _ = local_pairs(model, block, side)
        own_bn = words_pyp.own_customers(pidx, state["z"], len(pairs), model.num_topics).astype(np.int32)
        out.update({CUSTOMERS: (pairs, own_bn), TABLES: (pairs, state["word_bt"].astype(np.int32))})
    return out


def phi0_tables(tables: dict, G: int, V: int) -> tuple:
    """(bottom (n, t) as read, (G, K) totals N, T, phi0's tables as words_chain reads them: its customers sum_g t)."""
    bn, bt = words_pyp.legal(tables[CUSTOMERS], tables[TABLES])
    K = bn.shape[1]
    c0 = bt.reshape(G, V, K).sum(axis=0)
    L = tables[words_chain.TABLE].shape[1] if words_chain.TABLE in tables else 0
    up = {"nwk": c0, words_pyp.TABLE: tables[words_pyp.TABLE],
          words_chain.TABLE: tables.get(words_chain.TABLE, np.zeros((V, L), np.int64))}
    return bn, bt, bn.reshape(G, V, K).sum(axis=1), bt.reshape(G, V, K).sum(axis=1), up


def word_args(model, block, state, nwk, words, mx, side, net) -> tuple:
    """((the kernel's arguments before ``z``, after ``mx``), the local arrays): the global counts as read from the
    partition's copies of the tables (``words``: (word_tables, derived, the tables)), its own; race cells
    with own customers repaired. A chain's kernel is :func:`word_chain.chain_word_sweep`, else
    :func:`word_column.column_word_sweep`."""
    if not side.get("column"):
        der = dict(nk=words[1]["nk"], **words_chain.derived(words[2]))
        args, loc = words_chain.word_args(*model._local_vocab(block), state, nwk,
                                        (words[0], der, words[2][words_chain.TABLE]), mx, side, net, model.vocab_size)
        return ((loc["uidx"],), args), dict(loc, der=der)
    pairs, pidx, pword, pval, G = local_pairs(model, block, side)
    tables, V, K = words[2], model.vocab_size, model.num_topics
    bn, bt, BN, BT, up = phi0_tables(tables, G, V)
    own_bn = words_pyp.own_customers(pidx, state["z"], len(pairs), K)
    own_bt = state["word_bt"]
    own_bt[(bn[pairs] > 0) & (np.asarray(tables[TABLES])[pairs] == 0) & (own_bn > 0)] += 1
    vocab = model._local_vocab(block)[0]
    own0 = words_pyp.summed_rows(pword, own_bt, len(vocab))
    state.setdefault("word_up", np.zeros((len(vocab), 0), np.int32))
    loc = words_chain.local_arrays(vocab, None, own0, state["word_t"], state["word_up"], up["nwk"],
                                 up[words_pyp.TABLE], up[words_chain.TABLE],
                                 dict(nk=up["nwk"].sum(axis=0), **words_chain.derived(up)))
    if state["word_up"].shape[1] == 0:
        del state["word_up"]
    loc.update(pairs=pairs, pidx=pidx, pword=pword, pval=pval, bn=bn[pairs].copy(), bt=bt[pairs].copy(), BN=BN,
               BT=BT, own_bn=own_bn, own_bt=own_bt, z0=state["z"].copy(), tables=tables)
    mx[0] = max(int(mx[0]), int(loc["bn"].max(initial=0)), int(loc["nloc"].max(initial=0)),
                int(loc["cup"].max(initial=0)))
    mx[1] = max(int(mx[1]), int(loc["bt"].max(initial=0)), int(loc["tloc"].max(initial=0)),
                int(loc["tup"].max(initial=0)))
    chain = words_chain.kernel_args(loc, side, net.a_names, net.b_names, V)
    bottom = (net.a_names.index(side["bottom"][0]), net.b_names.index(side["bottom"][1]), float(side["bottom_gamma"]))
    return (tuple(loc[k] for k in ("pidx", "pword", "pval")), (loc["bn"], loc["bt"], BN, BT, own_bn, own_bt)
            + chain[:12] + bottom + chain[12:]), loc


def write_back(loc: dict, nwk, words, z) -> None:
    """The sweep's moves into the partition's copies of the tables (``nwk``: its tokens' moves)."""
    if "pairs" not in loc:
        words_chain.write_back(loc, nwk, words[0], words[2][words_chain.TABLE], loc["der"])
        return
    tables, pairs, vocab = loc["tables"], loc["pairs"], loc["vocab"]
    tables[CUSTOMERS][pairs] = loc["bn"]
    tables[TABLES][pairs] = loc["bt"]
    tables[words_pyp.TABLE][vocab] = loc["tloc"]
    if words_chain.TABLE in tables:
        tables[words_chain.TABLE][vocab] = loc["tup"]
    words = vocab[loc["pword"][loc["pidx"]]]       # the tokens' moves, as np.add.at's +1 at z, -1 at z0
    K = nwk.shape[1]
    moved = np.asarray(z, np.int64) != loc["z0"]
    keys = words[moved] * K
    delta = np.bincount(keys + np.asarray(z, np.int64)[moved], minlength=nwk.size) \
        - np.bincount(keys + loc["z0"][moved].astype(np.int64), minlength=nwk.size)
    nwk += delta.reshape(nwk.shape).astype(nwk.dtype)


def _bottom_values(side: dict, hyper: dict) -> tuple:
    return float(hyper["a_values"][side["bottom"][0]]), float(hyper["b_values"][side["bottom"][1]])


def topic_word(tables: dict, side: dict, hyper: dict, G: int, V: int) -> np.ndarray:
    """(K, V) phi0's posterior mean (the topics; a value's phi[k, g] is over it)."""
    return words_chain.topic_word(phi0_tables(tables, G, V)[4], side, hyper)


def loglik(tables: dict, side: dict, hyper: dict, G: int, V: int) -> float:
    bn, bt, BN, BT, up = phi0_tables(tables, G, V)
    occ = bn > 0
    return words_pyp.cells_loglik(bn[occ], bt[occ], BN.ravel(), BT.ravel(), *_bottom_values(side, hyper)) \
        + words_chain.loglik(up, side, hyper)


def sample_hyper(side: dict, tables: dict, hyper: dict, sampled: dict, rng, G: int, V: int) -> dict:
    """The bottom level's b and a (restaurants (g, k)), then phi0's and the corpus levels' (words_chain)."""
    bn, bt, BN, BT, up = phi0_tables(tables, G, V)
    occ = bn > 0
    bottom = {"a": side["bottom"][0], "b": side["bottom"][1]}
    hyper = words_pyp.sample_cells_hyper(bottom, bn[occ], bt[occ], BN.ravel(), BT.ravel(), hyper, sampled, rng)
    return words_chain.sample_hyper(side, up, hyper, sampled, rng)


class ColumnWordArrays:
    """``pdp-network``'s part that keeps the bottom tables of a word side indexed by [topic, column] beside the
    model (``word_col_n``, ``word_col_t``, as read) and scores held-out documents with them."""

    _COLUMN_ARRAYS = (CUSTOMERS, TABLES)

    @property
    def array_files(self) -> tuple:
        return super().array_files + (self._COLUMN_ARRAYS if self.__dict__.get("_has_column") else ())

    def bind_directory(self, directory: str) -> None:
        super().bind_directory(directory)
        self._has_column = storage.exists(storage.join(directory, f"{CUSTOMERS}.npy"))

    def bind_result(self, result) -> None:
        super().bind_result(result)
        if CUSTOMERS in result.tables:
            bn, bt = words_pyp.legal(result.tables[CUSTOMERS], result.tables[TABLES])
            self._has_column, self._trained_column = True, {CUSTOMERS: bn, TABLES: bt}

    def saved_arrays(self) -> dict:
        out = super().saved_arrays()
        trained = self.__dict__.get("_trained_column")
        return out if trained is None else dict(out, **{k: v.astype(np.int32) for k, v in trained.items()})

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        super().bind_arrays(arrays, meta)
        if CUSTOMERS in arrays:
            self._trained_column = {k: np.asarray(arrays[k], np.int64) for k in self._COLUMN_ARRAYS}

    def column_rows(self, block, hyper: dict, phi_vk) -> np.ndarray:
        """(N, K) p(w | k, g) of the block's tokens given the trained bottom tables and phi0 = ``phi_vk``."""
        side = hyper["word_pyp"]
        codes, G = values(self, block, side)
        V = self.vocab_size
        trained = self._trained_column
        Gt = trained[CUSTOMERS].shape[0] // V
        g = np.repeat(codes, np.diff(block.token_ptr()))
        w = block.words.astype(np.int64)
        seen = g < Gt
        rows = np.asarray(phi_vk, np.float64)[w].copy()
        a, b = _bottom_values(side, hyper)
        key = g[seen] * V + w[seen]
        n, t = trained[CUSTOMERS][key].astype(np.float64), trained[TABLES][key].astype(np.float64)
        totals = self.__dict__.get("_column_totals")
        if totals is None or totals[0] is not trained:      # (Gt, K) N and T once per trained tables (left to
            totals = (trained, *(trained[k].reshape(Gt, V, -1).sum(axis=1) for k in self._COLUMN_ARRAYS))  # right
            self._column_totals = totals                    # asks rows per document)
        N, T = totals[1][g[seen]], totals[2][g[seen]]
        rows[seen] = ((n - a * t) + (b + a * T) * rows[seen]) / (b + N)
        return np.ascontiguousarray(rows)

    def frozen_words(self, block, hyper: dict, words, frozen_phi) -> tuple:
        """``(frozen_phi, words)`` of a sweep with phi0 frozen: every token its own row (:meth:`column_rows`)."""
        if frozen_phi is None or not is_column(hyper):
            return super().frozen_words(block, hyper, words, frozen_phi)
        return self.column_rows(block, hyper, frozen_phi), np.arange(block.n_tokens, dtype=np.int64)

    def column_hook(self, hyper: dict, phi_vk):
        """``rows_of`` of :func:`drivers.models.pdp_network.left_to_right_scores.network_scores` (None but for this side)."""
        return (lambda doc: self.column_rows(doc, hyper, phi_vk)) if is_column(hyper) else None

    def heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        """Document completion (:func:`inference.gibbs.heldout.heldout_loglik`), every token scored with its
        document's value's row (:meth:`column_rows`)."""
        if not is_column(hyper):
            return super().heldout_loglik(block, hyper, phi_vk, schedule, seed, partition)
        return heldout.heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition,
                                      token_rows=lambda scored: self.column_rows(scored, hyper, phi_vk))

    def _column_shape(self, hyper: dict) -> tuple:
        return column_size(self, hyper["word_pyp"]), self.vocab_size

    def grown_chain(self, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``refresh`` (issue 30, 2): the bottom tables' rows g V0 + w moved to g V + w for the grown vocabulary
        and values (:func:`grown_rows`; the kept values keep their codes, new ones take the next); a partition's
        ``word_bt`` stays (its pairs keep their order)."""
        if CUSTOMERS in tables:
            G, V = self._column_shape(hyper)
            tables = dict(tables, **{name: grown_rows(tables[name], old_vocab_size, G, V)
                                     for name in (CUSTOMERS, TABLES)})
        return super().grown_chain(tables, hyper, old_vocab_size)


def grown_rows(table, V0: int, G: int, V: int) -> np.ndarray:
    """A bottom table of G0 values' rows g V0 + w (the last value the unseen one's, empty) laid out for G values
    over V words: every known value's rows at g V + w, the rest zero."""
    table = np.asarray(table)
    G0 = table.shape[0] // V0
    if G == 1:              # a level per topic (words_pyp.ONE_VALUE): one value, no unseen one
        return np.concatenate([table, np.zeros((V - V0, table.shape[1]), table.dtype)])
    if table[(G0 - 1) * V0:].any():
        raise RefusedError("the chain's [topic, column] word side has counts at the unseen value: retrain")
    out = np.zeros((G, V, table.shape[1]), table.dtype)
    out[:G0 - 1, :V0] = table[:(G0 - 1) * V0].reshape(G0 - 1, V0, -1)
    return out.reshape(G * V, -1)
