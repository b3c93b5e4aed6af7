"""prepare --segments: ordered segments (paragraphs, sentences, a column of pre-split text) beside the
unchanged bag of words, empty segments dropped and counted, and loading them as SegmentedBlocks."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from jobs.prepare import PrepareError, prepare_corpus
from jobs.segments import load_segmented_corpus

OPTS = dict(min_df=1, max_df=1.0, language="none", overwrite=True)


def _segments(corpus_dir):
    vocab = pd.read_parquet(f"{corpus_dir}/vocab.parquet").sort_values("id")["term"].to_numpy()
    frame = pd.read_parquet(f"{corpus_dir}/segments.parquet")
    return {row.doc_id: ([[str(t) for t in vocab[np.asarray(s, dtype=int)]] for s in row.segments],
                         list(row.segment_index)) for row in frame.itertuples()}


def _bags(corpus_dir):
    frame = pd.read_parquet(f"{corpus_dir}/docs.parquet")
    return {row.doc_id: dict(zip(row.term_ids.tolist(), row.counts.tolist())) for row in frame.itertuples()}


def test_paragraphs_keep_order_and_match_the_bag_of_words(spark_session, tmp_path):
    docs = [
        {"id": "a", "text": "alpha beta\r\n\r\ngamma gamma delta\n \n\n\nthe of and\n\nbeta alpha"},
        {"id": "b", "text": "one paragraph only, with words"},
        {"id": "c", "text": "the and"},                      # no word left: rejected as empty, no segments
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    out = str(tmp_path / "corpus")
    meta = prepare_corpus(spark_session, str(src), out, segments="paragraph",
                          **dict(OPTS, language="english"))
    segs = _segments(out)
    assert segs["a"] == ([["alpha", "beta"], ["gamma", "gamma", "delta"], ["beta", "alpha"]], [0, 1, 3])
    assert segs["b"] == ([["one", "paragraph", "words"]], [0])     # "only", "with": stop words
    assert "c" not in segs and meta["rejected"]["empty"] == 1
    assert meta["segmentation"]["mode"] == "paragraph"
    assert meta["segmentation"]["segments"] == 4 and meta["segmentation"]["empty_segments_dropped"] == 1
    # docs.parquet is the usual bag of words, and equals the union of the segments
    vocab = pd.read_parquet(f"{out}/vocab.parquet").set_index("term")["id"]
    for doc_id, bag in _bags(out).items():
        words = [vocab[t] for seg in segs[doc_id][0] for t in seg]
        ids, counts = np.unique(words, return_counts=True)
        assert bag == dict(zip(ids.tolist(), counts.tolist()))


def test_sentences_unicode_and_column_mode(spark_session, tmp_path):
    docs = [
        {"id": "en", "text": "First one here. «Second one!» Third?\nStill third, 3.5 apples… Fourth"},
        {"id": "ja", "text": "日本語です。次の文です！最後"},
        {"id": "hi", "text": "नमस्ते दुनिया। दूसरा वाक्य"},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    out = str(tmp_path / "sent")
    prepare_corpus(spark_session, str(src), out, segments="sentence", **OPTS)
    segs = _segments(out)
    assert segs["en"][0] == [["first", "one", "here"], ["second", "one"], ["third", "still", "third", "apples"],
                             ["fourth"]] or segs["en"][0] == [["first", "one", "here"], ["second", "one"],
                                                              ["third"], ["still", "third", "apples"], ["fourth"]]
    assert segs["ja"][0] == [["日本語です"], ["次の文です"], ["最後"]]
    assert segs["hi"][0] == [["नमस्ते", "दुनिया"], ["दूसरा", "वाक्य"]]

    rows = [{"id": "x", "paras": ["red green", "blue", "", "green red red"]},
            {"id": "y", "paras": "not a list"},
            {"id": "z", "paras": ["solo"]}]
    src = tmp_path / "cols.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = str(tmp_path / "cols")
    meta = prepare_corpus(spark_session, str(src), out, segments="paras", **OPTS)
    segs = _segments(out)
    assert segs["x"] == ([["red", "green"], ["blue"], ["green", "red", "red"]], [0, 1, 2])
    assert segs["z"] == ([["solo"]], [0])
    assert meta["rejected"]["malformed"] == 1 and meta["documents"] == 2
    assert meta["segmentation"]["mode"] == "column" and meta["segmentation"]["column"] == "paras"
    with pytest.raises(PrepareError, match="--segments"):
        prepare_corpus(spark_session, str(src), str(tmp_path / "bad"), segments="id", **OPTS)


def test_parquet_segment_column_and_loading_blocks(spark_session, tmp_path):
    w = ["red", "green", "blue", "cyan", "pink", "gold", "gray"]
    frame = pd.DataFrame({"doc": [f"d{i}" for i in range(40)],
                          "parts": [[f"{w[i % 7]} {w[(i + 1) % 7]}", w[(i + 2) % 7], f"{w[i % 5]} {w[i % 3]}"]
                                    for i in range(40)]})
    src = tmp_path / "in.parquet"
    frame.to_parquet(src)
    out = str(tmp_path / "pq")
    meta = prepare_corpus(spark_session, str(src), out, segments="parts", id_column="doc", **OPTS)
    assert meta["documents"] == 40 and meta["segmentation"]["segments"] == 120
    corpus = load_segmented_corpus(spark_session, out, 3)
    try:
        blocks = dict(corpus.blocks.collect())
        assert sorted(blocks) == [0, 1, 2] and corpus.segmented
        assert sum(b.n_docs for b in blocks.values()) == 40 and corpus.num_tokens == 40 * 5
        vocab = corpus.vocab["term"].to_numpy()
        for block in blocks.values():
            assert list(block.doc_ids) == sorted(block.doc_ids)
            for d, doc_id in enumerate(block.doc_ids):
                i = int(doc_id[1:])
                segs = [vocab[block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]]].tolist()
                        for s in range(block.doc_ptr[d], block.doc_ptr[d + 1])]
                assert segs == [p.split() for p in frame["parts"][i]]
    finally:
        corpus.blocks.unpersist()
    # a deterministic held-out split by a hash of the id: disjoint, complete, the same every time
    ids = {}
    for split in ("train", "test", "test"):
        part = load_segmented_corpus(spark_session, out, 2, heldout_fraction=0.3, split=split)
        ids.setdefault(split, []).append(sorted(i for _, b in part.blocks.collect() for i in b.doc_ids))
        part.blocks.unpersist()
    assert ids["test"][0] == ids["test"][1] and 4 <= len(ids["test"][0]) <= 20
    assert sorted(ids["train"][0] + ids["test"][0]) == sorted(frame["doc"])
