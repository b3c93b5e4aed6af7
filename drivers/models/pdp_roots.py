"""A network's topic roots shared by documents, on the Gibbs engine (issue 28, 1-2): Dirichlet roots indexed by
``[corpus]`` (hdp-lda's, Wallach's AS prior) or by kept columns (``[column:NAME]``: one root per value of a
document's column, e.g. its author, its section; documents DP over their value's root).

Their customers are the tables the documents send up; every partition contributes its documents' s and the
engine sums them in the dense table ``network_tc``: one row per root vector, a family's rows from its ``base``
(the corpus level: one row; a column family: one per value training saw plus one for a value it did not see,
whose trained tables are zero: held-out and new documents with another value, or whose column is not read, are
scored under that root's prior). Column values are read from the training corpus' ``docs.parquet`` (``prepare
--keep-columns NAME``; a missing value is the empty string) and kept beside the model (``network_columns.json``).
"""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.corpora.files import DOCS
from inference.errors import RefusedError, UsageError
from inference.pdpnet.engine_stats import MAX_GLOBAL
from inference.pdpnet.spec import COLUMN, NetworkSpec, is_column, parse_network

COLUMNS_FILE = "network_columns.json"


class ColumnValues:
    """Every kept column's values (sorted strings) and the training documents' value numbers."""

    def __init__(self, values: dict, by_doc: dict | None = None):
        self.values = {name: list(v) for name, v in values.items()}
        self.by_doc = by_doc or {name: {} for name in values}

    @classmethod
    def read(cls, corpus_directory: str, names: list[str]) -> "ColumnValues":
        """The ``names`` columns of the corpus' docs.parquet (one line of error when one is missing)."""
        ids, columns = _doc_columns(corpus_directory, names)
        if len(columns) < len(names):
            raise UsageError(f"network spec: {corpus_directory}/{DOCS} lacks a column of {names} (keep it with "
                             f"`spark-topics prepare --keep-columns {','.join(names)}`)")
        values, by_doc = {}, {}
        for name in names:
            values[name] = sorted(set(columns[name]))
            index = {v: i for i, v in enumerate(values[name])}
            by_doc[name] = {d: index[v] for d, v in zip(ids, columns[name])}
        return cls(values, by_doc)

    def sizes(self) -> dict:
        """Per column the number of values: training's, plus one for a value it did not see."""
        return {name: len(v) + 1 for name, v in self.values.items()}

    def layout(self, doc_ids) -> dict:
        """``CorpusLayout.columns`` of documents: ``{name: (codes, size)}`` (an unknown document: the last code)."""
        sizes = self.sizes()
        return {name: (np.array([self.by_doc[name].get(str(d), sizes[name] - 1) for d in doc_ids], np.int64),
                       sizes[name]) for name in self.values}

    def with_documents(self, corpus_directory: str) -> "ColumnValues":
        """These values with the documents of another corpus (held-out, new): a value training did not see, or a
        corpus without the column, gets the unseen value's code."""
        ids, columns = _doc_columns(corpus_directory, list(self.values))
        by_doc = {name: dict(codes) for name, codes in self.by_doc.items()}
        for name, raw in columns.items():
            index = {v: i for i, v in enumerate(self.values[name])}
            by_doc[name].update((d, index.get(v, len(index))) for d, v in zip(ids, raw))
        return ColumnValues(self.values, by_doc)

    def save(self, directory: str) -> None:
        storage.save_json(storage.join(directory, COLUMNS_FILE), {"values": self.values})

    @classmethod
    def load(cls, directory: str) -> "ColumnValues | None":
        path = storage.join(directory, COLUMNS_FILE)
        return cls(storage.load_json(path)["values"]) if storage.exists(path) else None


def _doc_columns(corpus_directory: str, names: list[str]) -> tuple[list[str], dict]:
    """``(document ids, {name: values as strings (missing: "")})`` of the corpus' docs.parquet, for the ``names``
    it has."""
    import pyarrow.dataset as ds

    fs, path = storage.resolve(storage.join(corpus_directory, DOCS))
    dataset = ds.dataset(path, filesystem=fs, format="parquet")
    names = [n for n in names if n in dataset.schema.names]
    table = dataset.to_table(columns=["doc_id", *names])
    return ([str(d) for d in table.column("doc_id").to_pylist()],
            {n: ["" if v is None else str(v) for v in table.column(n).to_pylist()] for n in names})


def shared_families(spec: NetworkSpec) -> tuple[list[str], list[str]]:
    """``(global, refused)``: the topic families shared by documents indexed by the corpus or by kept columns
    (roots or Pitman-Yor vectors: the engine's ``network_tc``, :mod:`drivers.models.pdp_shared`), and the other
    shared ones (not on the engine)."""
    out, refused = [], []
    for name in spec.order:
        node = spec.nodes[name]
        if node.over != "topic" or "document" in node.index or "segment" in node.index:
            continue
        shared_index = node.index and all(k == "corpus" or is_column(k) for k in node.index)
        (out if shared_index else refused).append(name)
    return out, refused


class SharedRoots:
    """Where each shared root's vectors sit in ``network_tc``: ``base[g]`` of family g (``families`` order), a
    vector's row ``base[g] + its key`` (the flat index of its column values)."""

    def __init__(self, spec: NetworkSpec, families: list[str], columns: ColumnValues | None):
        sizes = columns.sizes() if columns is not None else {}
        self.families = list(families)
        self.base, total = [], 0
        for name in self.families:
            self.base.append(total)
            rows = 1
            for kind in spec.nodes[name].index:
                if is_column(kind):
                    if kind[len(COLUMN):] not in sizes:
                        raise UsageError(f"network spec: node '{name}': the values of {kind} are not known (train "
                                         "reads them from the training corpus)")
                    rows *= sizes[kind[len(COLUMN):]]
            total += rows
        self.rows = max(MAX_GLOBAL, total)         # (at least MAX_GLOBAL: the saved tables of older models)

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

    def read_columns(self, spec: NetworkSpec) -> None:
        """The values of the columns ``spec`` indexes vectors by, from the training corpus (none: nothing)."""
        if spec.columns:
            if self.__dict__.get("_corpus_dir") is None:
                raise UsageError(f"network spec: indexed by {spec.columns}: train reads their values from the corpus")
            self._columns = ColumnValues.read(self._corpus_dir, spec.columns)
        self._roots = None

    def _shared_roots(self) -> SharedRoots:
        if self.__dict__.get("_roots") is None:
            spec = parse_network(self._raw)
            self._roots = SharedRoots(spec, shared_families(spec)[0], self.__dict__.get("_columns"))
        return self._roots

    def bind_corpus(self, corpus, request) -> None:
        self._corpus_dir = corpus.directory

    @classmethod
    def chain_refusal(cls, construction: dict) -> str | None:
        return None                      # bind_corpus only notes the corpus (a column network refuses below)

    def continued_chain(self, spark, old_model, base, batch, seed: int, iteration: int):
        if parse_network(self._raw).columns:
            raise RefusedError("--model pdp-network: a network indexed by kept columns cannot continue its chain "
                               "yet (a batch's new values would need new root rows): retrain on the union")
        return super().continued_chain(spark, old_model, base, batch, seed, iteration)

    def save_files(self, directory: str, result) -> None:
        if self.__dict__.get("_columns") is not None:
            self._columns.save(directory)

    def bind_directory(self, directory: str) -> None:
        self._columns, self._roots = ColumnValues.load(directory), None

    def bind_scored_corpus(self, directory: str) -> None:
        """Held-out or new documents take their own column values (a value training did not see: the prior)."""
        if self.__dict__.get("_columns") is not None:
            self._columns = self._columns.with_documents(directory)
