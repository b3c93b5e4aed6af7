"""The author variant of cluster-lda continued by ``refresh`` (:mod:`drivers.families.gibbs.refresh`): the documents
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
  (:func:`drivers.refresh.batch_columns.carry_input_columns`). A revised document (a known id with another text) keeps the authors its old copy
  is counted with (the chain holds both copies under one id).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, DOCS
from drivers.models.cluster_lda.authors import AUTHORS_FILE, Authors
from inference.errors import RefusedError

#: every document's author ids in a refreshed version (doc_id, authors: list of int64)
DOCUMENT_AUTHORS = "document_authors.parquet"


def kept_authors(base) -> Authors:
    """The authors of every document of ``base``'s chain: its ``document_authors.parquet``, or (a trained model)
    its training corpus' author column read again under the model's author names."""
    names = storage.load_json(storage.join(base.directory, AUTHORS_FILE))["names"]
    path = storage.join(base.directory, DOCUMENT_AUTHORS)
    if storage.exists(path):
        import pyarrow.parquet as pq

        filesystem, resolved = storage.resolve(path)
        table = pq.read_table(resolved, filesystem=filesystem)
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
    """``kept`` with the batch's documents (``batch_dir``'s author ``column``) and its new authors appended."""
    batch = Authors.read(batch_dir, column)
    fresh = sorted(set(batch.names) - set(kept.names))
    names = kept.names + fresh
    index = {n: i for i, n in enumerate(names)}
    by_doc = {d: index_of(batch, ids, index) for d, ids in batch.by_doc.items()}
    by_doc.update(kept.by_doc)                       # an old copy keeps the authors it is counted with
    return Authors(names, by_doc)


def index_of(authors: Authors, ids: np.ndarray, index: dict) -> np.ndarray:
    return np.array([index[authors.names[i]] for i in ids], dtype=np.int64)


def save_document_authors(directory: str, authors: Authors) -> None:
    """``document_authors.parquet`` of a refreshed version: every document's author ids."""
    ids = sorted(authors.by_doc)
    storage.write_parquet(storage.join(directory, DOCUMENT_AUTHORS), pa.table({
        "doc_id": pa.array(ids, pa.string()),
        "authors": pa.array([authors.by_doc[d].tolist() for d in ids], pa.list_(pa.int64()))}))
