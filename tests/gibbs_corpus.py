"""Test helpers for the Gibbs models: small segmented corpora in the ``prepare --segments`` format.

Written with pyarrow (no Spark job), as Spark would lay them out: ``docs.parquet/``
(bag of words per document), ``segments.parquet/`` (ordered segments),
``vocab.parquet/`` and ``corpus.json``.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def write_segmented_corpus(directory, docs, terms, segmented: bool = True, ordered: bool = False):
    """``docs = [(doc_id, [[word ids of segment 0], [segment 1], ...])]``; empty segments are dropped; with
    ``ordered`` the segments are the tokens in text order (``prepare --ordered --segments``)."""
    directory = str(directory)
    V = len(terms)
    doc_rows = {"doc_id": [], "term_ids": [], "counts": [], "n_tokens": [], "n_oov": []}
    seg_rows = {"doc_id": [], "segments": [], "segment_index": []}
    df, cf = np.zeros(V, np.int64), np.zeros(V, np.int64)
    dropped = 0
    for doc_id, segments in docs:
        words = np.concatenate([np.asarray(s, dtype=np.int64) for s in segments] or [np.zeros(0, np.int64)])
        if words.size == 0:
            continue
        ids, counts = np.unique(words, return_counts=True)
        df[ids] += 1
        cf[ids] += counts
        doc_rows["doc_id"].append(str(doc_id))
        doc_rows["term_ids"].append(ids.astype(np.int32).tolist())
        doc_rows["counts"].append(counts.astype(np.int32).tolist())
        doc_rows["n_tokens"].append(int(words.size))
        doc_rows["n_oov"].append(0)
        kept = [(j, [int(w) for w in s]) for j, s in enumerate(segments) if len(s)]
        dropped += len(segments) - len(kept)
        seg_rows["doc_id"].append(str(doc_id))
        seg_rows["segments"].append([s for _, s in kept])
        seg_rows["segment_index"].append([j for j, _ in kept])
    os.makedirs(directory, exist_ok=True)
    schema = pa.schema([("doc_id", pa.string()), ("term_ids", pa.list_(pa.int32())),
                        ("counts", pa.list_(pa.int32())), ("n_tokens", pa.int32()), ("n_oov", pa.int32())])
    _write(pa.table(doc_rows, schema=schema), f"{directory}/docs.parquet")
    if segmented:
        sschema = pa.schema([("doc_id", pa.string()), ("segments", pa.list_(pa.list_(pa.int32()))),
                             ("segment_index", pa.list_(pa.int32()))])
        _write(pa.table(seg_rows, schema=sschema), f"{directory}/segments.parquet")
    vschema = pa.schema([("term", pa.string()), ("id", pa.int32()), ("df", pa.int64()), ("cf", pa.int64())])
    _write(pa.table({"term": list(terms), "id": list(range(V)), "df": df.tolist(), "cf": cf.tolist()},
                    schema=vschema), f"{directory}/vocab.parquet")
    meta = {"format_version": 1, "documents": len(doc_rows["doc_id"]), "vocab_size": V,
            "tokens": int(cf.sum()), "oov_tokens": 0, "input_rows": len(docs),
            "rejected": {"malformed": 0, "invalid_encoding": 0, "duplicate_id": 0,
                         "empty": len(docs) - len(doc_rows["doc_id"])}}
    if segmented:
        meta["segmentation"] = {"mode": "test", "segments": int(sum(len(s) for s in seg_rows["segments"])),
                                "empty_segments_dropped": dropped}
    if ordered:
        meta["ordered"] = {"file": "segments.parquet"}
    with open(f"{directory}/corpus.json", "w") as f:
        json.dump(meta, f)
    return directory


def sample_bigram_lm(n_docs, length, vocab_size, beta, seed, base_concentration=1.0):
    """Documents drawn from the hierarchical Dirichlet bigram model (Wallach 3.2-3.4): n ~ Dir(base_concentration),
    every context's (the previous word's, or the start's, V) phi ~ Dir(beta n); returns (docs, n, phi)."""
    rng = np.random.default_rng(seed)
    n = rng.dirichlet(np.full(vocab_size, base_concentration))
    phi = rng.dirichlet(beta * n, size=vocab_size + 1)
    docs = []
    for d in range(n_docs):
        words, previous = [], vocab_size
        for _ in range(length):
            previous = int(rng.choice(vocab_size, p=phi[previous]))
            words.append(previous)
        docs.append((f"d{d:05d}", [words]))
    return docs, n, phi


def _write(table, path):
    os.makedirs(path, exist_ok=True)
    pq.write_table(table, f"{path}/part-00000.parquet")


def sample_segmented_lda(n_docs, n_segments, seg_length, n_topics, vocab_size, alpha, eta, seed,
                         segment_alpha=None):
    """Documents of ``n_segments`` segments drawn from LDA (one theta per document, or per segment
    from Dir(segment_alpha * theta_doc) when ``segment_alpha`` is given); returns (docs, beta)."""
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(vocab_size, eta), size=n_topics)
    cum = np.cumsum(beta, axis=1)
    docs = []
    for d in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, alpha))
        segments = []
        for _ in range(n_segments):
            nu = theta if segment_alpha is None else rng.dirichlet(segment_alpha * theta + 1e-3)
            z = rng.choice(n_topics, size=seg_length, p=nu)
            words = np.minimum((cum[z] < rng.random(seg_length)[:, None]).sum(axis=1), vocab_size - 1)
            segments.append(words.tolist())
        docs.append((f"d{d:05d}", segments))
    return docs, beta


def terms(vocab_size):
    return [f"w{i:04d}" for i in range(vocab_size)]
