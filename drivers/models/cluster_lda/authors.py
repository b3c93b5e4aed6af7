"""The author variant of the cluster-based topic model (Wallach §5.4, Fig. 5.6; extract §4.7).

Every cluster also has an author distribution q_c ~ Dir(eta1 q), q ~ Dir(eta0 v) (5.52)-(5.54), v uniform over
the A authors, and a document's authors are drawn from its cluster's q_c, independently of its topics; the
cluster step weighs a cluster by N_c P(z_d | c) P(a_d | c) (5.58), P(a_d | c) the predictives (5.55) of the
document's author tokens added one at a time (5.59). N_a|c counts every author token of the cluster (5.56); the
corpus level N_a is the number of clusters with a (minimal path) or of a's tokens (maximal) (5.57).

The authors come from a column of the prepared corpus' ``docs.parquet`` (``prepare --keep-columns COLUMN``):
a list of names, a JSON list's text, or one string of names separated by ``;``. ``train --author-column COLUMN`` reads it on the
driver (the model then carries every training document's author ids to the executors); the author names are
kept in ``authors.json`` beside the model. Held-out and new documents are scored and placed without their
authors (their topics only).

**Refresh.** The author variant continued by ``refresh`` (:mod:`drivers.families.gibbs.refresh`): the documents
of the kept chain keep their authors, a batch's documents bring theirs, and authors never seen before enter.

* **Authors by id, ids only grow.** The model's authors keep their ids (``authors.json``'s names, in order); a
  batch's new authors get the next ids (sorted by name among themselves). A cluster's row [N_c, M_c1..M_cT,
  N_a1|c..N_aA|c] grows by zero columns at its end (the chain's ``grown_chain`` pads keyed tables' columns): an
  old cluster has no token of a new author yet, and a new document is seated with its authors as a training
  document is.
* **Every document's authors kept.** The chain sweeps the old documents again, so their author tokens must be the
  ones their counts hold: a version keeps every document's author ids (``document_authors.parquet``); a model
  trained without it (the base) has them in its training corpus (``prepare --keep-columns``), read again. The
  batch's come from its prepared corpus, to which the refresh carries the input's author column
  (:mod:`drivers.refresh.batch_columns`). A revised document (a known id with another text) takes its new text's
  authors: its old copy leaves the chain (:mod:`drivers.families.gibbs.revisions`).
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, DOCS
from inference.errors import RefusedError, UsageError
from inference.gibbs import cluster_ids

AUTHORS_FILE = "authors.json"
SEPARATOR = ";"


def list_names(value) -> list[str]:
    """The names of a list column's value: a list, a JSON list's text, or names separated by ";" (none: [])."""
    if value is None:
        return []
    if isinstance(value, str):
        if value.strip().startswith("["):        # a JSON list (JSON lines input keeps a column as its JSON text)
            return list_names(json.loads(value))
        return [n.strip() for n in value.split(SEPARATOR) if n.strip()]
    return [str(n).strip() for n in value if n is not None and str(n).strip()]


class Authors:
    """The authors of the training documents: ``names`` (A,), sorted, and every document's author ids."""

    def __init__(self, names: list[str], by_doc: dict):
        self.names = list(names)
        self.by_doc = by_doc

    @property
    def count(self) -> int:
        return len(self.names)

    @classmethod
    def read(cls, corpus_directory: str, column: str) -> "Authors":
        """The ``column`` of the corpus' docs.parquet (one line of error when it is missing)."""
        import pyarrow.parquet as pq

        fs, path = storage.resolve(storage.join(corpus_directory, DOCS))
        try:
            table = pq.read_table(path, columns=["doc_id", column], filesystem=fs)
        except (KeyError, ValueError) as exc:
            raise UsageError(f"--author-column {column}: {corpus_directory}/{DOCS} has no column {column!r} "
                             f"(keep it with `spark-topics prepare --keep-columns {column}`)") from exc
        docs = [(str(d), list_names(v)) for d, v in zip(table.column("doc_id").to_pylist(),
                                                        table.column(column).to_pylist())]
        names = sorted({n for _, ns in docs for n in ns})
        index = {n: i for i, n in enumerate(names)}
        return cls(names, {d: np.array([index[n] for n in ns], dtype=np.int64) for d, ns in docs})

    def of_block(self, doc_ids) -> tuple[np.ndarray, np.ndarray]:
        """``(author_ptr (D+1,), author_ids)`` of the block's documents (none for a document not known)."""
        lists = [self.by_doc.get(str(d), np.zeros(0, np.int64)) for d in doc_ids]
        ptr = np.r_[0, np.cumsum([a.shape[0] for a in lists])].astype(np.int64)
        return ptr, (np.concatenate(lists).astype(np.int64) if lists else np.zeros(0, np.int64))


def no_authors(n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """``(author_ptr, author_ids)`` of documents without authors."""
    return np.zeros(n_docs + 1, np.int64), np.zeros(0, np.int64)


def author_counts(author_ptr: np.ndarray, author_ids: np.ndarray, rows: np.ndarray, num_rows: int,
                  num_authors: int) -> np.ndarray:
    """N_a|c (rows x A) of the documents in cluster rows ``rows``."""
    counts = np.zeros((num_rows, num_authors), dtype=np.int64)
    np.add.at(counts, (np.repeat(rows, np.diff(author_ptr)), author_ids), 1)
    return counts


def corpus_authors(cat: np.ndarray, maximal: bool) -> np.ndarray:
    """N_a (5.57): the clusters with a (minimal) or a's tokens (maximal)."""
    return cat.sum(axis=0, dtype=np.int64) if maximal else (cat > 0).sum(axis=0).astype(np.int64)


#: every document's author ids in a refreshed version (doc_id, authors: list of int64)
DOCUMENT_AUTHORS = "document_authors.parquet"


def kept_authors(base) -> Authors:
    """The authors of every document of ``base``'s chain: its ``document_authors.parquet``, or (a trained model)
    its training corpus' author column read again under the model's author names."""
    names = storage.load_json(storage.join(base.directory, AUTHORS_FILE))["names"]
    path = storage.join(base.directory, DOCUMENT_AUTHORS)
    if storage.exists(path):
        table = storage.read_table(path)
        return Authors(names, {str(d): np.asarray(a, dtype=np.int64) for d, a in
                               zip(table.column("doc_id").to_pylist(), table.column("authors").to_pylist())})
    corpus = (base.meta.get("data") or {}).get("corpus")
    if not corpus or not storage.exists(storage.join(corpus, CORPUS_JSON)):
        raise RefusedError(f"{base.directory}: the author variant's training corpus {corpus!r} (its documents' "
                           f"authors) is not there any more: retrain on the union")
    read = Authors.read(corpus, base.meta["author_column"])
    if read.names != names:
        raise RefusedError(f"{corpus}: its authors are not the ones {base.directory} was trained with: retrain")
    return read


def grown_authors(kept: Authors, batch_dir: str, column: str) -> Authors:
    """``kept`` with the batch's documents (``batch_dir``'s author ``column``: a revised document's replace its old
    copy's) and its new authors appended."""
    batch = Authors.read(batch_dir, column)
    fresh = sorted(set(batch.names) - set(kept.names))
    names = kept.names + fresh
    index = {n: i for i, n in enumerate(names)}
    by_doc = dict(kept.by_doc)      # a revised document's authors are its new text's (its old copy leaves the chain)
    by_doc.update({d: index_of(batch, ids, index) for d, ids in batch.by_doc.items()})
    return Authors(names, by_doc)


def index_of(authors: Authors, ids: np.ndarray, index: dict) -> np.ndarray:
    return np.array([index[authors.names[i]] for i in ids], dtype=np.int64)


def save_document_authors(directory: str, authors: Authors) -> None:
    """``document_authors.parquet`` of a refreshed version: every document's author ids."""
    ids = sorted(authors.by_doc)
    storage.write_parquet(storage.join(directory, DOCUMENT_AUTHORS), pa.table({
        "doc_id": pa.array(ids, pa.string()),
        "authors": pa.array([authors.by_doc[d].tolist() for d in ids], pa.list_(pa.int64()))}))


class AuthorVariant:
    """The author variant's part of :class:`drivers.models.cluster_lda.model.ClusterLDA`: its authors, read at
    training (``bind_corpus``), their names kept in ``authors.json``, and the kernels' author arguments."""

    keeps_document_authors = False    # a refreshed version (continued_chain): save every document's author ids

    def set_authors(self, authors: Authors) -> None:
        """The authors (none: the plain model); a cluster's row is [N_c, M_c1..M_cT, N_a1|c..N_aA|c]."""
        self.authors = authors
        self.num_authors = authors.count
        self.columns = 1 + self.num_topics + self.num_authors
        self.id_space = cluster_ids.id_space(self.columns)

    def bind_corpus(self, corpus, request) -> None:
        if self.author_column:
            self.set_authors(Authors.read(corpus.directory, self.author_column))

    def save_files(self, directory: str, result) -> None:
        if self.author_column:
            storage.save_json(storage.join(directory, AUTHORS_FILE), {"column": self.author_column,
                                                                      "names": self.authors.names})
        if self.keeps_document_authors:
            save_document_authors(directory, self.authors)

    @classmethod
    def chain_refusal(cls, construction: dict) -> str | None:
        """The plain model and the author variant continue their chain (:meth:`continued_chain`)."""
        return None

    def continued_chain(self, spark, old_model, base, batch, seed: int, iteration: int):
        """The author variant: every old document keeps its authors, the batch's bring theirs, new authors get the
        next ids (:func:`kept_authors`, :func:`grown_authors`); the clusters' rows then grow by zero columns
        (``grown_chain``)."""
        if self.author_column:
            kept = kept_authors(base)
            self.set_authors(kept if batch is None else grown_authors(kept, batch.directory, self.author_column))
            self.keeps_document_authors = True
        return None

    def bind_directory(self, directory: str) -> None:
        if self.author_column:
            self.set_authors(Authors(storage.load_json(storage.join(directory, AUTHORS_FILE))["names"], {}))

    def author_args(self, doc_ids, cat: np.ndarray, hyper: dict, known: bool = True) -> tuple:
        """The kernels' author arguments: the documents' author tokens (none unless ``known``), N_a|c (``cat``,
        rows x A), its row sums, the corpus level, eta1, eta0."""
        ptr, ids = self.authors.of_block(doc_ids) if known else no_authors(len(doc_ids))
        ka = corpus_authors(cat, self.maximal)
        return (ptr, ids, cat, cat.sum(axis=1), ka, np.array([ka.sum()], np.int64), float(hyper.get("eta1", 1.0)),
                float(hyper.get("eta0", 1.0)))

