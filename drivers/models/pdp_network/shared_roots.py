"""A network's topic roots shared by documents, on the Gibbs engine (issue 28, 1-2): Dirichlet roots indexed by
``[corpus]`` (hdp-lda's, Wallach's AS prior) or by kept columns (``[column:NAME]``: one root per value of a
document's column, e.g. its author, its section; documents DP over their value's root) or by list columns
(``[list:NAME]``: one root per value, e.g. per author; a document's vector has one parent per value of its list).
A document's posterior means read its roots' rows as the last sweep left them
(:meth:`SharedRootsModel.with_root_rows`).

Their customers are the tables the documents send up; every partition contributes its documents' s and the
engine sums them in the dense table ``network_tc``: one row per root vector, a family's rows from its ``base``
(the corpus level: one row; a column family: one per value training saw plus one for a value it did not see,
whose trained tables are zero: held-out and new documents with another value, or whose column is not read, are
scored under that root's prior). Column values are read from the training corpus' ``docs.parquet`` (``prepare
--keep-columns NAME``; a missing value is the empty string) and kept beside the model (``network_columns.json``).

**Refresh** (issue 30, 2; as cluster-lda's authors, :mod:`drivers.models.cluster_lda.authors`): the old documents
keep their values, a batch's documents bring theirs (the refresh carries the kept columns into the batch's corpus,
:mod:`drivers.refresh.batch_columns`), values never seen get the next numbers (sorted among themselves): ids only
grow. A family's rows of ``network_tc`` move to the grown layout (an old value keeps its number, its row moves only
as the flat index and the families' bases grow; a new value's row starts at zero). A refreshed version keeps every
document's value numbers (``network_document_columns.parquet``); a trained model's are its training corpus' read
again. A family indexed by ``previous_word`` (V + 1 rows, the start context last) follows the vocabulary the same
way (session 25): an old word keeps its row, the start row moves from V0 to V, a new word's row starts at zero.
"""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, DOCS
from drivers.models.cluster_lda.authors import list_names
from inference.errors import RefusedError, UsageError
from inference.pdpnet.engine_stats import MAX_GLOBAL
from inference.pdpnet.spec import NetworkSpec, is_column, parse_network
from inference.pdpnet.spec_graph import column_name

COLUMNS_FILE = "network_columns.json"
PREVIOUS_WORD = "previous_word"
#: every document's value numbers in a refreshed version (doc_id, one int64 column per kept column)
DOCUMENT_COLUMNS = "network_document_columns.parquet"


class ColumnValues:
    """Every kept column's values (sorted strings) and the training documents' value numbers: an int per document,
    or for a list column (``lists``, ``list:NAME``) a tuple of ints (its distinct values in their order; an empty
    list is the missing value "")."""

    def __init__(self, values: dict, by_doc: dict | None = None, lists=()):
        self.values = {name: list(v) for name, v in values.items()}
        self.by_doc = by_doc or {name: {} for name in values}
        self.lists = sorted(lists)

    def _codes(self, name: str, raw: list, index: dict, unseen: int | None = None) -> list:
        """The value numbers of documents' ``raw`` values of column ``name`` (``unseen``: a value not in
        ``index``)."""
        code = index.__getitem__ if unseen is None else (lambda v: index.get(v, unseen))
        return [tuple(code(v) for v in r) if name in self.lists else code(r) for r in raw]

    @classmethod
    def read(cls, corpus_directory: str, names: list[str], lists=()) -> "ColumnValues":
        """The ``names`` columns of the corpus' docs.parquet, ``lists`` among them read as lists (one line of error
        when one is missing)."""
        ids, columns = _doc_columns(corpus_directory, names, lists)
        if len(columns) < len(names):
            raise UsageError(f"network spec: {corpus_directory}/{DOCS} lacks a column of {names} (keep it with "
                             f"`spark-topics prepare --keep-columns {','.join(names)}`)")
        out = cls({name: sorted(set(_flat(columns[name], name in lists))) for name in names}, None, lists)
        for name in names:
            index = {v: i for i, v in enumerate(out.values[name])}
            out.by_doc[name] = dict(zip(ids, out._codes(name, columns[name], index)))
        return out

    def sizes(self) -> dict:
        """Per column the number of values: training's, plus one for a value it did not see."""
        return {name: len(v) + 1 for name, v in self.values.items()}

    def layout(self, doc_ids) -> dict:
        """``CorpusLayout.columns`` of documents: ``{name: (codes, size)}``, a list column's ``(ptr, codes, size)``
        (an unknown document: the last code, the unseen value's)."""
        sizes, out = self.sizes(), {}
        for name in self.values:
            unseen = sizes[name] - 1
            if name not in self.lists:
                out[name] = (np.array([self.by_doc[name].get(str(d), unseen) for d in doc_ids], np.int64), sizes[name])
                continue
            rows = [self.by_doc[name].get(str(d), (unseen,)) for d in doc_ids]
            ptr = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
            out[name] = (ptr, np.array([c for r in rows for c in r], np.int64), sizes[name])
        return out

    def with_documents(self, corpus_directory: str) -> "ColumnValues":
        """These values with the documents of another corpus (held-out, new): a value training did not see, or a
        corpus without the column, gets the unseen value's code."""
        ids, columns = _doc_columns(corpus_directory, list(self.values), self.lists)
        by_doc = {name: dict(codes) for name, codes in self.by_doc.items()}
        for name, raw in columns.items():
            index = {v: i for i, v in enumerate(self.values[name])}
            by_doc[name].update(zip(ids, self._codes(name, raw, index, len(index))))
        return ColumnValues(self.values, by_doc, self.lists)

    def grown(self, corpus_directory: str) -> "ColumnValues":
        """These values with a refresh batch's documents (``corpus_directory``): values never seen appended, sorted
        among themselves (a batch without the column: the missing value ""); a revised document's replace its old
        copy's."""
        ids, columns = _doc_columns(corpus_directory, list(self.values), self.lists)
        out = ColumnValues(self.values, {}, self.lists)
        for name, old in self.values.items():
            raw = columns.get(name, [("",) if name in self.lists else ""] * len(ids))
            out.values[name] = old + sorted(set(_flat(raw, name in self.lists)) - set(old))
            index = {v: i for i, v in enumerate(out.values[name])}
            out.by_doc[name] = dict(self.by_doc.get(name, {}))
            out.by_doc[name].update(zip(ids, out._codes(name, raw, index)))
        return out

    def save(self, directory: str) -> None:
        storage.save_json(storage.join(directory, COLUMNS_FILE),
                          {"values": self.values, **({"lists": self.lists} if self.lists else {})})

    def save_documents(self, directory: str) -> None:
        """``network_document_columns.parquet``: every document's value numbers (a refreshed version)."""
        import pyarrow as pa

        ids = sorted(set().union(*(set(codes) for codes in self.by_doc.values())))
        storage.write_parquet(storage.join(directory, DOCUMENT_COLUMNS), pa.table(
            {"doc_id": pa.array(ids, pa.string()),
             **{name: pa.array([list(codes[d]) if name in self.lists else codes[d] for d in ids],
                               pa.list_(pa.int64()) if name in self.lists else pa.int64())
                for name, codes in self.by_doc.items()}}))

    @classmethod
    def kept(cls, base) -> "ColumnValues":
        """The values of every document of ``base``'s chain: its ``network_document_columns.parquet`` or (a trained
        model) its training corpus' columns read again under the model's values."""
        saved = cls.load(base.directory)
        path = storage.join(base.directory, DOCUMENT_COLUMNS)
        if storage.exists(path):
            table = storage.read_table(path)
            ids = [str(d) for d in table.column("doc_id").to_pylist()]
            return cls(saved.values, {name: dict(zip(ids, (tuple(c) if name in saved.lists else c for c in
                                                           table.column(name).to_pylist())))
                                      for name in saved.values}, saved.lists)
        corpus = (base.meta.get("data") or {}).get("corpus")
        if not corpus or not storage.exists(storage.join(corpus, CORPUS_JSON)):
            raise RefusedError(f"{base.directory}: the training corpus {corpus!r} of its network (its documents' "
                               f"column values) is not there any more: retrain on the union")
        read = cls.read(corpus, list(saved.values), saved.lists)
        if read.values != saved.values:
            raise RefusedError(f"{corpus}: its column values are not the ones {base.directory} was trained with: "
                               "retrain")
        return read

    @classmethod
    def load(cls, directory: str) -> "ColumnValues | None":
        path = storage.join(directory, COLUMNS_FILE)
        if not storage.exists(path):
            return None
        saved = storage.load_json(path)
        return cls(saved["values"], None, saved.get("lists", ()))


def _flat(raw: list, is_list: bool) -> list:
    return [v for r in raw for v in r] if is_list else raw


def _doc_columns(corpus_directory: str, names: list[str], lists=()) -> tuple[list[str], dict]:
    """``(document ids, {name: values as strings (missing: "")})`` of the corpus' docs.parquet, for the ``names``
    it has; a column of ``lists``: per document a tuple of its distinct names (a list, a JSON list's text or
    names separated by ";", as cluster-lda's authors; none: ("",))."""
    import pyarrow.dataset as ds

    fs, path = storage.resolve(storage.join(corpus_directory, DOCS))
    dataset = ds.dataset(path, filesystem=fs, format="parquet")
    names = [n for n in names if n in dataset.schema.names]
    table = dataset.to_table(columns=["doc_id", *names])
    return ([str(d) for d in table.column("doc_id").to_pylist()],
            {n: [tuple(dict.fromkeys(list_names(v))) or ("",) if n in lists else "" if v is None else str(v)
                 for v in table.column(n).to_pylist()] for n in names})


def flat_moved(key, was: list[int], now: list[int]) -> np.ndarray:
    """Flat indices over kinds of sizes ``was`` (the last varies fastest) moved to the sizes ``now`` (as large or
    larger): a code keeps its number, a kind's last code (a column's unseen value, the start context) stays last."""
    key, new = np.array(key, np.int64), np.zeros(np.shape(key), np.int64)
    for at in range(len(was) - 1, -1, -1):
        code = key % was[at]
        key //= was[at]
        new += np.where(code == was[at] - 1, now[at] - 1, code) * int(np.prod(now[at + 1:], dtype=np.int64))
    return new


def shared_families(spec: NetworkSpec) -> tuple[list[str], list[str]]:
    """``(global, refused)``: the topic families shared by documents indexed by the corpus, by kept columns or by
    the previous word (roots or Pitman-Yor vectors: the engine's ``network_tc``, :mod:`drivers.models.pdp_network.
    shared_pyp`; a previous_word family has V + 1 rows, the start context last: session 24), and the other shared
    ones (not on the engine). A topic-side vector indexed by ``topic`` never reaches here: the parser refuses it
    (the topic draw and a document's parents know no topic: a token's topic is what the draw draws; unreached, it
    has no data path), so the engine needs no refusal of its own."""
    out, refused = [], []
    for name in spec.order:
        node = spec.nodes[name]
        if node.over != "topic" or "document" in node.index or "segment" in node.index:
            continue
        shared_index = node.index and all(k in ("corpus", PREVIOUS_WORD) or is_column(k) for k in node.index)
        (out if shared_index else refused).append(name)
    return out, refused


class SharedRoots:
    """Where each shared root's vectors sit in ``network_tc``: ``base[g]`` of family g (``families`` order), a
    vector's row ``base[g] + its key`` (the flat index of its column values)."""

    def __init__(self, spec: NetworkSpec, families: list[str], columns: ColumnValues | None,
                 vocab_size: int | None = None):
        self.sizes = sizes = columns.sizes() if columns is not None else {}
        self.previous = None if vocab_size is None else vocab_size + 1      # a previous_word family's rows
        self.families = list(families)
        self.base, total = [], 0
        for name in self.families:
            self.base.append(total)
            rows = 1
            for kind in spec.nodes[name].index:
                if kind == PREVIOUS_WORD:
                    if self.previous is None:
                        raise UsageError(f"network spec: node '{name}': indexed by previous_word: the vocabulary's "
                                         "size is not known")
                    rows *= self.previous
                if is_column(kind):
                    if column_name(kind) not in sizes:
                        raise UsageError(f"network spec: node '{name}': the values of {kind} are not known (train "
                                         "reads them from the training corpus)")
                    rows *= sizes[column_name(kind)]
            total += rows
        self.rows = max(MAX_GLOBAL, total)         # (at least MAX_GLOBAL: the saved tables of older models)

    def _size(self, kind: str) -> int:
        return self.previous if kind == PREVIOUS_WORD else self.sizes[column_name(kind)]

    def moved_rows(self, old: "SharedRoots", spec: NetworkSpec) -> np.ndarray:
        """The row in this layout of every row of ``old``'s (same families, columns with as many values or more,
        a vocabulary as large or larger: an old value or word keeps its number, the unseen value's row and the
        previous word's start context stay their family's last)."""
        out = []
        for g, name in enumerate(self.families):
            kinds = [k for k in spec.nodes[name].index if is_column(k) or k == PREVIOUS_WORD]
            rows = int(np.prod([old._size(k) for k in kinds])) if kinds else 1
            out.append(self.base[g] + flat_moved(np.arange(rows, dtype=np.int64), [old._size(k) for k in kinds],
                                                 [self._size(k) for k in kinds]))
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def nodes(self, net) -> list:
        """(row of network_tc, instance id) of every shared root vector present in ``net``."""
        order = list(net.spec.order)
        out = []
        for g, name in enumerate(self.families):
            for j in np.flatnonzero(net.family == order.index(name)):
                out.append((self.base[g] + int(net.key[j]), int(j)))
        return out


class SharedRootsModel:
    """``pdp-network``'s part that knows its shared roots: the kept columns' values (read at training from the
    corpus, ``bind_corpus``; kept beside the model), and where every root vector sits in ``network_tc``."""

    @property
    def column_values(self) -> ColumnValues | None:
        """The kept columns' values the model is bound to (None: its spec reads no column, or none is bound)."""
        return self.__dict__.get("_columns")

    def read_columns(self, spec: NetworkSpec) -> None:
        """The values of the columns ``spec`` indexes vectors by, from the training corpus (none: nothing)."""
        if spec.columns:
            if self.__dict__.get("_corpus_dir") is None:
                raise UsageError(f"network spec: indexed by {spec.columns}: train reads their values from the corpus")
            self._columns = ColumnValues.read(self._corpus_dir, spec.columns, spec.lists)
        self._roots = None

    def _shared_roots(self) -> SharedRoots:
        if self.__dict__.get("_roots") is None:
            spec = parse_network(self._raw)
            self._roots = SharedRoots(spec, shared_families(spec)[0], self.column_values, self.vocab_size)
        return self._roots

    def bind_corpus(self, corpus, request) -> None:
        self._corpus_dir = corpus.directory

    def remember_root_rows(self, net, block, state: dict, cnt: dict) -> None:
        """The shared roots' rows a sweep of ``state`` left in ``cnt`` (the engine's sums, or the trained rows plus
        the block's own, with the block's moves since), for :meth:`with_root_rows`."""
        roots = self._shared_roots().nodes(net)
        if roots:
            self._memo("roots").remember(block, state, {j: (cnt["tc"][net.off[j]:net.off[j + 1]].copy(),
                                                            cnt["tp"][net.off[j]:net.off[j + 1]].copy(),
                                                            cnt["Se"][net.par_ptr[j]:net.par_ptr[j + 1]].copy())
                                                        for _, j in roots})

    def with_root_rows(self, net, block, state: dict, cnt: dict) -> dict:
        """``cnt`` (a block's own counts) with the shared vectors' rows of the last sweep of this very state (the
        posterior means (7.12) of a document's vectors read its roots' every customer, not only the partition's;
        a state no sweep here left: its own counts only)."""
        rows = self._memo("roots").recall(block, state)
        if not rows:
            return cnt
        cnt = dict(cnt, **{key: cnt[key].copy() for key in ("tc", "TC", "tp", "TP", "Se")})
        for j, (customers, tables, edges) in rows.items():    # (a shared Pitman-Yor vector's tables too; a root
            cnt["tc"][net.off[j]:net.off[j + 1]], cnt["TC"][j] = customers, customers.sum()            # has none)
            cnt["tp"][net.off[j]:net.off[j + 1]], cnt["TP"][j] = tables, tables.sum()
            cnt["Se"][net.par_ptr[j]:net.par_ptr[j + 1]] = edges if len(edges) > 1 else cnt["TP"][j]  # (its rho
        return cnt                                                        # sums to 1: S = T with one parent)

    @classmethod
    def chain_refusal(cls, construction: dict) -> str | None:
        return None                      # bind_corpus only notes the corpus (continued_chain reads the values)

    def continued_chain(self, spark, old_model, base, batch, seed: int, iteration: int):
        """A network indexed by kept columns: every old document keeps its values, the batch's bring theirs, new
        values get the next numbers (:meth:`ColumnValues.kept`, :meth:`ColumnValues.grown`); ``network_tc``'s
        rows then move to the grown layout (:meth:`grown_chain`), as they do for a family indexed by
        previous_word when the vocabulary grows."""
        spec = parse_network(self._raw)
        if spec.columns:
            kept = ColumnValues.kept(base)
            self._columns = kept if batch is None else kept.grown(batch.directory)
            self._old_roots, self._roots, self._keeps_documents = old_model._shared_roots(), None, True
        elif any(PREVIOUS_WORD in spec.nodes[name].index for name in shared_families(spec)[0]):
            self._old_roots, self._roots = old_model._shared_roots(), None       # (the rows follow the vocabulary)
        return super().continued_chain(spark, old_model, base, batch, seed, iteration)

    def grown_chain(self, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``network_tc``'s rows moved from the old values' layout to the grown one (new rows: zero)."""
        old = self.__dict__.pop("_old_roots", None)
        if old is not None:
            tc = np.asarray(tables["network_tc"])
            rows = self._shared_roots().moved_rows(old, parse_network(self._raw))
            if tc[len(rows):].any():
                raise RefusedError("the chain's network_tc has counts beyond its roots' rows: retrain on the union")
            moved = np.zeros((self._shared_roots().rows, tc.shape[1]), tc.dtype)
            moved[rows] = tc[:len(rows)]
            tables = dict(tables, network_tc=moved)
        return super().grown_chain(tables, hyper, old_vocab_size)

    def save_files(self, directory: str, result) -> None:
        if self.column_values is not None:
            self._columns.save(directory)
            if self.__dict__.get("_keeps_documents"):
                self._columns.save_documents(directory)

    def bind_directory(self, directory: str) -> None:
        self._columns, self._roots = ColumnValues.load(directory), None

    def bind_scored_corpus(self, directory: str) -> None:
        """Held-out or new documents take their own column values (a value training did not see: the prior)."""
        if self.column_values is not None:
            self._columns = self._columns.with_documents(directory)
