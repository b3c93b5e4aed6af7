"""pdp-network's chain of word vectors with more than two levels per topic on the Gibbs engine (issue 28):
phi[topic] ~ PYP over phi1[topic] ~ PYP over ... over phi_B[topic] ~ PYP over a root or a chain of corpus-level
Pitman-Yor vectors. The [topic, column] side with one value (:mod:`.words_column`, ``words_pyp.ONE_VALUE``) whose
bottom is a stack of B levels phi..phi_{B-1} (the sweep: :mod:`inference.pdpnet.word_stack`); phi_B is its phi0
(``word_tables``), the corpus levels ``word_chain`` (:mod:`.words_chain`).

Tables: ``word_col_n`` (phi's customers, the tokens), ``word_col_t`` (phi's indicators) and ``word_col_mid`` (the
indicators of levels 1..B-1, level b's at rows (b-1) V + w); level b's customers are level b-1's tables, phi0's
sum over them. A partition's state ``word_bst`` (B, P, K) holds its indicators at every bottom level (0 <= t^p <=
c^p, its own customers at level b its own indicators at b-1). The race rule at every level from the bottom up, as
words_chain's: a cell with customers and no table after the merge is read as one table (one more customer a level
up), and a partition with own customers there opens it before its next sweep. The topics are phi_B's posterior
means; held-out tokens read phi's rows, every level's mean over the one above (:func:`rows_over`)."""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.models.pdp_network import words_chain, words_column, words_pyp
from drivers.models.pdp_network.words_dirichlet import DirichletWords
from inference.errors import RefusedError
from inference.gibbs.tables import CountTable
from inference.pdpnet import word_stack

MID = "word_col_mid"
STATE = "word_bst"


def depth(side: dict) -> int:
    """B, the per-topic levels below phi0 (phi's and the middle ones)."""
    return 1 + len(side.get("middle", ()))


def level_params(side: dict) -> list:
    """The bottom levels' [a, b, name], phi's first."""
    return [side["bottom"]] + list(side.get("middle", ()))


def count_tables(model, side: dict) -> tuple:
    V, K, B = model.vocab_size, model.num_topics, depth(side)
    return words_column.count_tables(model, side) + (CountTable(MID, (B - 1) * V, K, "dense", cells_per_token=B - 1),)


def initial_state(model, block, state: dict, side: dict) -> None:
    """One indicator per occupied own cell at every level (a legal start)."""
    vocab, _ = model._local_vocab(block)
    pairs, pidx, pword, _, _ = words_column.local_pairs(model, block, side)
    own = words_pyp.own_customers(pidx, state["z"], len(pairs), model.num_topics)
    bst = np.repeat((own > 0)[None], depth(side), axis=0).astype(np.int64)
    state[STATE] = bst
    own0 = np.zeros((len(vocab), model.num_topics), np.int64)
    np.add.at(own0, pword, bst[-1])
    state["word_t"] = (own0 > 0).astype(np.int32)
    if words_chain.levels(side):
        state["word_up"] = words_chain.initial_tables(state["word_t"], words_chain.levels(side))


def table_counts(model, block, state: dict, side: dict) -> dict:
    vocab = model._local_vocab(block)[0]
    pairs, pidx, _, _, _ = words_column.local_pairs(model, block, side)
    V, bst = model.vocab_size, state[STATE]
    own_bn = words_pyp.own_customers(pidx, state["z"], len(pairs), model.num_topics).astype(np.int32)
    out = {words_pyp.TABLE: (vocab, state["word_t"].astype(np.int32)), words_column.CUSTOMERS: (pairs, own_bn),
           words_column.TABLES: (pairs, bst[0].astype(np.int32)),
           MID: (np.concatenate([b * V + pairs for b in range(len(bst) - 1)]),
                 np.concatenate(list(bst[1:])).astype(np.int32))}
    if "word_up" in state:
        out[words_chain.TABLE] = (vocab, state["word_up"].astype(np.int32))
    return out


def read_levels(tables: dict, B: int) -> tuple:
    """(customers, indicators) (B, V, K) of the bottom levels as read: the race cells read as one table, bottom up
    (a read table is one more customer a level up); their restaurants' totals (B, K); phi0's tables as
    words_chain reads them (its customers the top level's tables)."""
    n, t = words_pyp.legal(tables[words_column.CUSTOMERS], tables[words_column.TABLES])
    V = n.shape[0]
    mid = np.asarray(tables[MID], np.int64).reshape(B - 1, V, -1)
    bn, bt = [n], [t]
    for b in range(1, B):
        c = bt[-1]
        bn.append(c)
        bt.append(np.where((c > 0) & (mid[b - 1] == 0), 1, mid[b - 1]))
    bn, bt = np.stack(bn), np.stack(bt)
    up = {"nwk": bt[-1], words_pyp.TABLE: tables.get(words_pyp.TABLE),       # (None in held-out rows)
          words_chain.TABLE: tables.get(words_chain.TABLE, np.zeros((V, 0), np.int64))}
    return bn, bt, bn.sum(axis=1), bt.sum(axis=1), up


def word_args(model, block, state, nwk, words, mx, side, net) -> tuple:
    """((:func:`inference.pdpnet.word_stack.stack_word_sweep`'s arguments before ``z``, after ``mx``), the local
    arrays): the global counts as read from the partition's copies of the tables (``words``: (word_tables,
    derived, the tables)), its own; its race cells with own customers repaired, bottom up."""
    pairs, pidx, pword, pval, _ = words_column.local_pairs(model, block, side)
    tables, V, K, B = words[2], model.vocab_size, model.num_topics, depth(side)
    bn, bt, BN, BT, up = read_levels(tables, B)
    bst = state[STATE]
    raw = np.concatenate([np.asarray(tables[words_column.TABLES])[None],
                          np.asarray(tables[MID]).reshape(B - 1, V, K)])[:, pairs]
    own_bn = np.empty_like(bst)
    own_bn[0] = words_pyp.own_customers(pidx, state["z"], len(pairs), K)
    for b in range(B):
        if b:
            own_bn[b] = bst[b - 1]
        bst[b][(bn[b][pairs] > 0) & (raw[b] == 0) & (own_bn[b] > 0)] += 1
    vocab = model._local_vocab(block)[0]
    own0 = np.zeros((len(vocab), K), np.int64)
    np.add.at(own0, pword, bst[-1])
    state.setdefault("word_up", np.zeros((len(vocab), 0), np.int32))
    loc = words_chain.local_arrays(vocab, None, own0, state["word_t"], state["word_up"], up["nwk"],
                                   up[words_pyp.TABLE], up[words_chain.TABLE],
                                   dict(nk=up["nwk"].sum(axis=0), **words_chain.derived(up)))
    if state["word_up"].shape[1] == 0:
        del state["word_up"]
    loc.update(pairs=pairs, pidx=pidx, pword=pword, pval=pval, bn=np.ascontiguousarray(bn[:, pairs]),
               bt=np.ascontiguousarray(bt[:, pairs]), BN=BN[:, None, :].copy(), BT=BT[:, None, :].copy(),
               own_bn=own_bn, own_bt=bst, z0=state["z"].copy(), tables=tables)
    mx[0] = max(int(mx[0]), int(loc["bn"].max(initial=0)), int(loc["nloc"].max(initial=0)),
                int(loc["cup"].max(initial=0)))
    mx[1] = max(int(mx[1]), int(loc["bt"].max(initial=0)), int(loc["tloc"].max(initial=0)),
                int(loc["tup"].max(initial=0)))
    chain = words_chain.kernel_args(loc, side, net.a_names, net.b_names, V)
    lv = level_params(side)
    bottom = (np.array([net.a_names.index(x[0]) for x in lv], np.int64),
              np.array([net.b_names.index(x[1]) for x in lv], np.int64),
              np.array([side["bottom_gamma"]] + list(side["middle_gammas"]), np.float64))
    return (tuple(loc[k] for k in ("pidx", "pword", "pval")), tuple(loc[k] for k in ("bn", "bt", "BN", "BT",
                                                                                       "own_bn", "own_bt"))
            + chain[:12] + bottom + chain[12:]), loc


def write_back(loc: dict, nwk, words, z) -> None:
    """The sweep's moves into the partition's copies of the tables (``nwk``: its tokens' moves)."""
    tables, pairs, vocab = loc["tables"], loc["pairs"], loc["vocab"]
    V, B = tables[words_column.CUSTOMERS].shape[0], loc["bt"].shape[0]
    tables[words_column.CUSTOMERS][pairs] = loc["bn"][0]
    tables[words_column.TABLES][pairs] = loc["bt"][0]
    for b in range(1, B):
        tables[MID][(b - 1) * V + pairs] = loc["bt"][b]
    tables[words_pyp.TABLE][vocab] = loc["tloc"]
    if words_chain.TABLE in tables:
        tables[words_chain.TABLE][vocab] = loc["tup"]
    words_ = vocab[loc["pword"][loc["pidx"]]]
    np.add.at(nwk, (words_, np.asarray(z, np.int64)), 1)
    np.add.at(nwk, (words_, loc["z0"].astype(np.int64)), -1)


def _values(side: dict, hyper: dict) -> list:
    return [(float(hyper["a_values"][a]), float(hyper["b_values"][b])) for a, b, _ in level_params(side)]


def topic_word(tables: dict, side: dict, hyper: dict) -> np.ndarray:
    """(K, V) phi_B's posterior mean (the topics; the levels below are over it)."""
    return words_chain.topic_word(read_levels(tables, depth(side))[4], side, hyper)


def rows_over(tables: dict, side: dict, hyper: dict, phi_vk) -> np.ndarray:
    """(V, K) phi's posterior predictive given phi_B = ``phi_vk``: every level's ((c - a t) + (b + a T) parent) /
    (b + C) from level B-1 down (thesis (7.12))."""
    bn, bt, BN, BT, _ = read_levels(tables, depth(side))
    rows = np.asarray(phi_vk, np.float64)
    for b in range(depth(side) - 1, -1, -1):
        a, c = _values(side, hyper)[b]
        rows = ((bn[b] - a * bt[b]) + (c + a * BT[b]) * rows) / (c + BN[b])
    return rows


def loglik(tables: dict, side: dict, hyper: dict) -> float:
    bn, bt, BN, BT, up = read_levels(tables, depth(side))
    total = 0.0
    for b, (a, c) in enumerate(_values(side, hyper)):
        occ = bn[b] > 0
        total += words_pyp.cells_loglik(bn[b][occ], bt[b][occ], BN[b], BT[b], a, c)
    return total + words_chain.loglik(up, side, hyper)


def sample_hyper(side: dict, tables: dict, hyper: dict, sampled: dict, rng) -> dict:
    """Every bottom level's b and a (restaurants the topics), phi's first, then phi0's and the corpus levels'."""
    bn, bt, BN, BT, up = read_levels(tables, depth(side))
    for b, (a_name, b_name, _) in enumerate(level_params(side)):
        occ = bn[b] > 0
        hyper = words_pyp.sample_cells_hyper({"a": a_name, "b": b_name}, bn[b][occ], bt[b][occ], BN[b], BT[b],
                                             hyper, sampled, rng)
    return words_chain.sample_hyper(side, up, hyper, sampled, rng)


class StackWords(DirichletWords):
    """The word side object (:mod:`.word_sides`) of a chain with more than two levels per topic: the functions
    above; no owned kernel (the split engine refuses it beside a shared Pitman-Yor topic vector:
    :func:`.shared_pyp.check`); the held-out hooks the base's (None: the model's, StackWordArrays.column_rows), its
    refresh hook too (refused: StackWordArrays.grown_chain)."""

    kernel = staticmethod(word_stack.stack_word_sweep)
    owned_kernel = None

    def count_tables(self, model) -> tuple:
        return count_tables(model, self.side)

    def initial_state(self, model, block, state: dict) -> None:
        initial_state(model, block, state, self.side)

    def table_counts(self, model, block, state: dict) -> dict:
        return table_counts(model, block, state, self.side)

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        return word_args(model, block, state, nwk, words, mx, self.side, net)

    def write_back(self, loc, nwk, words, z) -> None:
        write_back(loc, nwk, words, z)

    def topic_word(self, model, tables, derived, hyper):
        return topic_word(tables, self.side, hyper)

    def loglik(self, model, tables, derived, hyper):
        return loglik(tables, self.side, hyper)

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return sample_hyper(self.side, tables, hyper, sampled, rng)


class StackWordArrays:
    """``pdp-network``'s part that keeps the middle levels' tables (``word_col_mid``, raw) beside the model with
    the bottom's (:class:`.words_column.ColumnWordArrays`) and scores held-out tokens with phi's rows over them
    (:func:`rows_over`)."""

    @property
    def array_files(self) -> tuple:
        return super().array_files + ((MID,) if self.__dict__.get("_has_mid") else ())

    def bind_directory(self, directory: str) -> None:
        super().bind_directory(directory)
        self._has_mid = storage.exists(storage.join(directory, f"{MID}.npy"))

    def bind_result(self, result) -> None:
        super().bind_result(result)
        if MID in result.tables:
            self._has_mid, self._trained_mid = True, np.asarray(result.tables[MID], np.int64)

    def saved_arrays(self) -> dict:
        out = super().saved_arrays()
        mid = self.__dict__.get("_trained_mid")
        return out if mid is None else dict(out, **{MID: mid.astype(np.int32)})

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        super().bind_arrays(arrays, meta)
        if MID in arrays:
            self._trained_mid = np.asarray(arrays[MID], np.int64)

    def column_rows(self, block, hyper: dict, phi_vk) -> np.ndarray:
        """(N, K) p(w | k) of the block's tokens: phi's rows over phi_B = ``phi_vk`` (every middle level's)."""
        side = hyper["word_pyp"]
        if not side.get("middle"):
            return super().column_rows(block, hyper, phi_vk)
        trained = dict(self._trained_column, **{MID: self._trained_mid})
        rows = rows_over(trained, side, hyper, phi_vk)
        return np.ascontiguousarray(rows[block.words.astype(np.int64)])

    def grown_chain(self, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        if (hyper.get("word_pyp") or {}).get("middle"):
            raise RefusedError("refresh: a chain of word vectors with more than two levels per topic is not "
                               "continued (retrain)")
        return super().grown_chain(tables, hyper, old_vocab_size)
