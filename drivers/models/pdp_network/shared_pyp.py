"""Pitman-Yor (or DP) topic vectors shared by documents on the Gibbs engine (issue 28): a corpus-level or kept-column
vector (hca's PYP document prior, the 3-level HDP: documents DP over ``corpus`` PYP over a root), its tables owned
by partitions (the sweep: :mod:`inference.pdpnet.owned`).

Tables: its customers, the tables the documents send up (and the tokens, when tokens are drawn from the vector
itself: a partition keeps its own as its n, the others' are read as t^c), are its rows of ``network_tc`` (as a
Dirichlet root's); its own tables t_k the same rows of ``network_tp`` (each partition's own indicators, its s on
the vector's parent edge, summed; with several parents also per edge, ``network_ts``). Its tables are the
customers of its parents, roots (``network_tc``'s rows) or the uniform vector.
The trained rows are saved as ``network_tp.npy`` beside ``network_tc.npy``; held-out and ``infer`` sweeps read
them plus the block's own. The driver's hyperparameter steps read the global (c, t) of these vectors
(:func:`driver_stats`); the partitions leave them out of their histograms and q_j.
"""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.models.pdp_network import words_pyp
from inference.errors import UsageError
from inference.gibbs.tables import CountTable
from inference.pdpnet.compile import KIND_PYP
from inference.pdpnet.spec import NetworkSpec, parse_network

TABLE = "network_tp"
#: a shared Pitman-Yor vector's tables per parent edge (several parents): row g P + i its i-th edge's s
EDGES = "network_ts"


def check(spec: NetworkSpec, families: list[str], word_side: dict | None) -> None:
    """Refuse (one line naming the node) the shared Pitman-Yor vectors the engine cannot run yet (``word_side``:
    :func:`drivers.models.pdp_network.words_pyp.word_side`'s answer; every word side runs beside them since session
    25, the burst side's included). An ``if_missing`` parent runs: a reference
    from a corpus- or column-indexed vector always has a value, so its fallback never applies (session 23)."""
    for name in families:
        node = spec.nodes[name]
        if node.kind != "pyp":
            continue
        if spec.sampler in ("cmgs", "exact") and not multiplicity_shape(spec, families):
            raise UsageError(f"network spec: node '{name}': a shared Pitman-Yor vector under \"sampler\": "
                             f"\"{spec.sampler}\" runs below it document vectors only, each over it alone "
                             "(hdp-pyp-lda's shape), or the tokens themselves over a root; use \"sampler\": "
                             "\"indicators\"")
        if (word_side or {}).get("middle"):         # (words_stack: no owned kernel)
            raise UsageError(f"network spec: node '{name}': a shared Pitman-Yor vector beside a chain of word "
                             "vectors with more than two levels per topic is not on the Gibbs engine")
        if (word_side or {}).get("mix"):            # (words_mix: no owned kernel)
            raise UsageError(f"network spec: node '{name}': a shared Pitman-Yor vector beside a word vector with "
                             "several parents is not on the Gibbs engine")


def multiplicity_shape(spec: NetworkSpec, families: list[str]) -> bool:
    """Whether the multiplicity samplers run beside the shared Pitman-Yor vectors
    (:mod:`inference.pdpnet.cmgs_owned`): the token's vector a Pitman-Yor (or DP) vector of its own with one
    parent, a shared Pitman-Yor vector, and no vector below it; or the token's vector the shared one, over one root
    (:mod:`inference.pdpnet.cmgs_shared_tokens`)."""
    name = spec.topic.node
    node = spec.nodes[name]
    shared = {n for n in families if spec.nodes[n].kind == "pyp"}
    below = any(r.node == name for nd in spec.nodes.values() for r in nd.parents)
    if name in shared and len(node.parents) == 1 and spec.nodes[node.parents[0].node].kind != "pyp" and not below:
        return True         # tokens drawn from the shared vector itself (inference.pdpnet.cmgs_shared_tokens)
    return (node.kind == "pyp" and not node.mixture and name not in families and len(node.parents) == 1
            and node.parents[0].node in shared and node.parents[0].if_missing is None and not below)


def has_shared_pyp(spec: NetworkSpec, families: list[str]) -> bool:
    return any(spec.nodes[n].kind == "pyp" for n in families)


def edge_width(spec: NetworkSpec, families: list[str]) -> int:
    """P, the most parents of a shared Pitman-Yor vector: table ``network_ts`` has P rows per vector when P > 1."""
    return max([len(spec.nodes[n].parents) for n in families if spec.nodes[n].kind == "pyp"], default=1)


def own_edges(net, s, nodes: list, P: int) -> tuple[np.ndarray, np.ndarray]:
    """A partition's contribution to ``network_ts``: every shared Pitman-Yor vector's own s per parent edge."""
    rows = [(g, j) for g, j in nodes if net.kind[j] == KIND_PYP]
    out = np.zeros((len(rows) * P, net.K), np.int32)
    for r, (_, j) in enumerate(rows):
        for i, e in enumerate(range(net.par_ptr[j], net.par_ptr[j + 1])):
            out[r * P + i] = s[net.eoff[e]:net.eoff[e] + net.K]
    ids = np.repeat(np.array([g for g, _ in rows], np.int64) * P, P) + np.tile(np.arange(P), len(rows))
    return ids.astype(np.int64), out


def legal(tc, tp) -> np.ndarray:
    """t with the cells whose last tables left in two partitions at once (c > 0, t = 0) read as t = 1 (the
    partitions' repair before their next sweep, :func:`inference.pdpnet.owned.repair`; the word side's rule)."""
    return words_pyp.legal(tc, tp)[1]


def customers(net, cnt: dict, nodes: list) -> tuple[np.ndarray, np.ndarray]:
    """A partition's contribution to ``network_tc``: (rows, customers n + t^c of every shared vector): its
    documents' tables, and its tokens when tokens are drawn from the shared vector itself."""
    c = np.zeros((len(nodes), net.K), np.int32)
    for r, (_, j) in enumerate(nodes):
        c[r] = cnt["tc"][net.off[j]:net.off[j + 1]] + cnt["n"][net.off[j]:net.off[j + 1]]
    return np.array([g for g, _ in nodes], np.int64), c


def substitute(net, cnt: dict, nodes: list, tc_of, tp_of, se_of=None, P: int = 1) -> None:
    """Put the global rows into the counts: every shared vector's t^c (``tc_of(row, own t^c, own n)``: its
    customers but the partition's own tokens there, which stay its n), a shared Pitman-Yor vector's t (``tp_of``)
    and its parent edges' S: its T with one parent, else ``se_of(g P + i, own S)`` for the i-th edge (the own s
    stay in the state: a leaving table's parent is drawn from them); the partition's own (t^c, t) go to
    ``cnt["own"]`` = (shared (J,) bool, own_c, own_t) when there is a shared Pitman-Yor vector. ``mx`` covers
    the global cells."""
    shared = np.zeros(net.num_nodes, np.bool_)
    own_c, own_t = cnt["tc"].copy(), cnt["tp"].copy()
    for g, j in nodes:
        lo, hi = net.off[j], net.off[j + 1]
        cnt["tc"][lo:hi] = tc_of(g, cnt["tc"][lo:hi], cnt["n"][lo:hi])
        cnt["TC"][j] = cnt["tc"][lo:hi].sum()
        if net.kind[j] == KIND_PYP:
            shared[j] = True
            cnt["tp"][lo:hi] = tp_of(g, cnt["tp"][lo:hi])
            cnt["TP"][j] = cnt["tp"][lo:hi].sum()
            if se_of is None:
                cnt["Se"][net.par_ptr[j]] = cnt["TP"][j]
            for i, e in enumerate(range(net.par_ptr[j], net.par_ptr[j + 1]) if se_of is not None else ()):
                cnt["Se"][e] = se_of(g * P + i, cnt["Se"][e])
            cnt["mx"][0] = max(int(cnt["mx"][0]), int((cnt["tc"][lo:hi] + cnt["n"][lo:hi]).max(initial=0)))
            cnt["mx"][1] = max(int(cnt["mx"][1]), int(cnt["tp"][lo:hi].max(initial=0)))
    if shared.any():
        cnt["own"] = (shared, own_c, own_t)


def shared_mask(net, nodes: list) -> np.ndarray:
    """(J,) the shared Pitman-Yor vectors of ``net`` (left out of a partition's histograms and q_j)."""
    out = np.zeros(net.num_nodes, np.bool_)
    for _, j in nodes:
        out[j] = net.kind[j] == KIND_PYP
    return out


def own_rows(net, cnt: dict, nodes: list) -> tuple[np.ndarray, np.ndarray]:
    """A partition's contribution to ``network_tp``: (rows, own t of its shared Pitman-Yor vectors)."""
    rows = [(g, j) for g, j in nodes if net.kind[j] == KIND_PYP]
    tp = np.zeros((len(rows), net.K), np.int32)
    for r, (_, j) in enumerate(rows):
        tp[r] = cnt["tp"][net.off[j]:net.off[j + 1]]
    return np.array([g for g, _ in rows], np.int64), tp


def family_rows(spec: NetworkSpec, roots) -> list:
    """(name, a name, b name, rows) of every shared Pitman-Yor family (its rows of the tables)."""
    out = []
    ends = list(roots.base[1:]) + [None]
    for g, name in enumerate(roots.families):
        node = spec.nodes[name]
        if node.kind == "pyp":
            stop = ends[g] if ends[g] is not None else roots.rows      # (rows past the last family's are 0)
            out.append((name, node.a, node.b, slice(roots.base[g], stop)))
    return out


def driver_stats(spec: NetworkSpec, roots, tables: dict, hyper: dict, rng: np.random.Generator):
    """The shared Pitman-Yor vectors' part of the driver's steps, from the global rows: histogram keys and counts
    of their occupied cells' (c, t) and their T (:mod:`inference.pdpnet.engine_stats`), and per sampled b its
    (sum T_j, sum_j log 1/q_j) with q_j ~ Beta(b, C_j) drawn here (E19)."""
    a_names = sorted(n for n, p in spec.params.items() if p.kind == "a")
    b_names = sorted(n for n, p in spec.params.items() if p.kind == "b")
    keys, b_stats = [], {}
    for _, a, b, rows in family_rows(spec, roots):
        c = np.asarray(tables["network_tc"][rows], np.int64)
        t = legal(c, tables[TABLE][rows])
        p, q = a_names.index(a), b_names.index(b)
        occ = c > 0
        C, T = c.sum(axis=1), t.sum(axis=1)
        live = C > 0
        keys.append(words_pyp.cells_keys(c[occ], t[occ], T[live], p, q))
        if spec.params[b].sample and live.any():
            qj = rng.beta(hyper["b_values"][b], C[live])
            old = b_stats.get(b, (0.0, 0.0))
            b_stats[b] = (old[0] + float(T[live].sum()), old[1] - float(np.log(np.maximum(qj, 1e-300)).sum()))
    uniq, counts = np.unique(np.concatenate(keys) if keys else np.zeros(0, np.int64), return_counts=True)
    return uniq, counts.astype(np.float64), b_stats


class OwnedTables:
    """The Stirling stack and its ratio tables of :func:`inference.pdpnet.owned.owned_sweep`, kept while the
    discounts stay (held-out sweeps, iterations with fixed discounts) and grown with headroom: a shared vector's
    cells hold thousands of customers, and the tables cost more than a sweep's tokens."""

    def __init__(self):
        self.key, self.stack, self.ratios = None, None, None

    def get(self, avals: np.ndarray, sampled: list, mx) -> tuple:
        from inference.pdpnet.ratio_path import open_exp_table
        from inference.pdpnet.sampler import StirlingStack
        from inference.pdpnet.sweep import ratio_tables

        key = (np.asarray(avals, np.float64).tobytes(), tuple(sampled))
        if key != self.key:
            self.key, self.stack, self.ratios = key, StirlingStack(avals, sampled=sampled), None
        if self.stack.ensure(int(mx[0] * 1.2) + 16, int(mx[1] * 1.2) + 16) or self.ratios is None:
            self.ratios = (*ratio_tables(self.stack.L3), open_exp_table(self.stack.L3))
        return self.ratios


class SharedPypModel:
    """``pdp-network``'s part that keeps the shared Pitman-Yor vectors' table counts (``network_tp``; with several
    parents their tables per edge, ``network_ts``) beside ``network_tc``: the engine tables, the trained arrays
    saved and read back (an older model: none)."""

    def bind_shared(self, spec: NetworkSpec, families: list[str]) -> None:
        self._has_tp = has_shared_pyp(spec, families)
        self._edge_width = edge_width(spec, families)
        self._has_ts = self._edge_width > 1

    def _extra(self) -> tuple:
        return ((TABLE,) if self.__dict__.get("_has_tp") else ()) + ((EDGES,) if self.__dict__.get("_has_ts") else ())

    @property
    def array_files(self) -> tuple:
        return ("network_tc",) + self._extra()

    def bind_directory(self, directory: str) -> None:
        super().bind_directory(directory)
        self._has_tp = storage.exists(storage.join(directory, f"{TABLE}.npy"))
        self._has_ts = storage.exists(storage.join(directory, f"{EDGES}.npy"))

    def _rows(self, name: str) -> int:
        return self._shared_roots().rows * (self.__dict__.get("_edge_width", 1) if name == EDGES else 1)

    def shared_tables(self, K: int) -> tuple:
        return tuple(CountTable(name, self._rows(name), K, "dense") for name in self._extra())

    def shared_table_counts(self, net, cnt: dict, s, nodes: list) -> dict:
        """A partition's rows of ``network_tp`` (and ``network_ts``)."""
        out = {TABLE: own_rows(net, cnt, nodes)} if self.__dict__.get("_has_tp") else {}
        return dict(out, **{EDGES: own_edges(net, s, nodes, self._edge_width)}) if self._has_ts else out

    def shared_substitute(self, net, cnt: dict, tc_of, tables=None) -> None:
        """:func:`substitute` with the engine's global rows (``tables``) or the trained ones plus the block's own."""
        nodes, P = self._shared_roots().nodes(net), self.__dict__.get("_edge_width", 1)
        if tables is not None:
            se_of = (lambda r, own: int(tables[EDGES][r].sum())) if EDGES in tables else None
            substitute(net, cnt, nodes, tc_of, lambda g, own: tables[TABLE][g], se_of, P)
            return
        trained_tp = legal(self._trained_tc, self.__dict__.get("_trained_tp", 0))     # (race: t = 1)
        ts = self.__dict__.get("_trained_ts")
        se_of = (lambda r, own: own + int(ts[r].sum())) if ts is not None else None
        substitute(net, cnt, nodes, tc_of, lambda g, own: own + trained_tp[g], se_of, P)

    def grown_chain(self, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``network_tp``'s (and ``network_ts``'s) rows moved to the grown layout as ``network_tc``'s
        (:meth:`drivers.models.pdp_network.shared_roots.SharedRootsModel.grown_chain`, after this)."""
        old = self.__dict__.get("_old_roots")
        if old is not None:
            rows = self._shared_roots().moved_rows(old, parse_network(self._raw))
            for name in self._extra():
                P, t = self._rows(name) // self._shared_roots().rows, np.asarray(tables[name])
                moved = np.zeros((self._rows(name), t.shape[1]), t.dtype)
                moved[(rows[:, None] * P + np.arange(P)).ravel()] = t[:len(rows) * P]
                tables = dict(tables, **{name: moved})
        return super().grown_chain(tables, hyper, old_vocab_size)

    def bind_result(self, result) -> None:
        self._trained_tc = np.asarray(result.tables["network_tc"], np.int64)
        for name, key in ((TABLE, "_trained_tp"), (EDGES, "_trained_ts")):
            if name in result.tables:
                setattr(self, key, np.asarray(result.tables[name], np.int64))

    def saved_arrays(self) -> dict:
        shape = (self._shared_roots().rows, self.num_topics)
        out = {"network_tc": self.__dict__.get("_trained_tc", np.zeros(shape, np.int64))}
        for name, key in ((TABLE, "_trained_tp"), (EDGES, "_trained_ts")):
            if name in self._extra():
                out[name] = self.__dict__.get(key, np.zeros((self._rows(name), self.num_topics), np.int64))
        return out

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        if "network_tc" in arrays:
            self._trained_tc = np.asarray(arrays["network_tc"], np.int64)
        for name, key in ((TABLE, "_trained_tp"), (EDGES, "_trained_ts")):
            if name in arrays:
                setattr(self, key, np.asarray(arrays[name], np.int64))
        self.bind_hyper(meta.get("hyper", {}))
