"""prepare --segments: ordered segments (paragraphs, sentences, a column of pre-split text) beside the
unchanged bag of words, empty segments dropped and counted, and loading them as SegmentedBlocks."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
from drivers.corpora.segmented import load_segmented_corpus
from drivers.preparation.corpus import prepare_corpus
from inference.errors import UsageError

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


def test_split_rules_and_segment_column(spark_session):
    """The sentence rule (Unicode terminators, closing quotes, no split inside 3.5) and the column parser."""
    from pyspark.sql import functions as F
    from drivers.preparation.segments import join_segment_column, split_pattern

    texts = ["First one here. «Second one!» Third?\nStill third, 3.5 apples… Fourth",
             "日本語です。次の文です！最後", "नमस्ते दुनिया। दूसरा वाक्य", "a b\n\n\n  \n c d\r\n\r\ne"]
    frame = spark_session.createDataFrame([(t,) for t in texts], "text string")
    rows = frame.select(F.split("text", split_pattern("sentence"), -1).alias("s"),
                        F.split("text", split_pattern("paragraph"), -1).alias("p")).collect()
    clean = [[x.strip() for x in r.s if x.strip()] for r in rows]
    assert clean[0] == ["First one here.", "«Second one!", "Third?", "Still third, 3.5 apples…", "Fourth"]
    assert clean[1] == ["日本語です。", "次の文です！", "最後"]
    assert clean[2] == ["नमस्ते दुनिया।", "दूसरा वाक्य"]
    assert [x.strip() for x in rows[3].p] == ["a b", "c d", "e"]
    assert len(rows[0].p) == 1

    raw = spark_session.createDataFrame(
        [("x", '["red green", "blue"]', None, None), ("y", '"not a list"', None, None),
         ("z", "[]", None, None), ("w", '["a", null]', None, None)],
        "doc_id string, text string, raw string, reason string")
    raw = raw.withColumn("source", F.lit("s")).withColumn("order", F.lit(0))
    out = {r.doc_id: r for r in join_segment_column(raw).collect()}
    assert out["x"].text == "red green\u2029blue" and out["x"].reason is None
    assert all(out[d].reason == "malformed" and out[d].raw for d in "yzw")


def test_parquet_segment_column_and_loading_blocks(spark_session, tmp_path):
    w = ["red", "green", "blue", "cyan", "pink", "gold", "gray"]
    frame = pd.DataFrame({"doc": [f"d{i}" for i in range(40)],
                          "parts": [[f"{w[i % 7]} {w[(i + 1) % 7]}", w[(i + 2) % 7], "  ", f"{w[i % 5]} {w[i % 3]}"]
                                    for i in range(40)]})
    frame.loc[40] = ["bad", None]                       # no segment list: malformed
    src = tmp_path / "in.parquet"
    frame.to_parquet(src)
    out = str(tmp_path / "pq")
    meta = prepare_corpus(spark_session, str(src), out, segments="parts", id_column="doc", **OPTS)
    assert meta["documents"] == 40 and meta["rejected"]["malformed"] == 1
    assert meta["segmentation"] == dict(meta["segmentation"], mode="column", column="parts", segments=120,
                                        empty_segments_dropped=0)
    assert sorted(_segments(out)["d3"][1]) == [0, 1, 2]      # the blank piece is not a segment
    frame = frame.iloc[:40]
    frame["parts"] = [[p for p in parts if p.strip()] for parts in frame["parts"]]
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
    for split in ("train", "test"):
        part = load_segmented_corpus(spark_session, out, 2, heldout_fraction=0.3, split=split)
        ids[split] = sorted(i for _, b in part.blocks.collect() for i in b.doc_ids)
        part.blocks.unpersist()
    assert 4 <= len(ids["test"]) <= 20
    assert sorted(ids["train"] + ids["test"]) == sorted(frame["doc"])
    from drivers.corpora.segmented import heldout_condition
    again = spark_session.createDataFrame([(d,) for d in frame["doc"]], "doc_id string").where(
        heldout_condition(0.3)).select("doc_id").collect()
    assert sorted(r.doc_id for r in again) == ids["test"]     # a pure function of the id


def test_ordered_keeps_every_documents_tokens_in_text_order(spark_session, tmp_path):
    """prepare --ordered: the tokens in text order after stop words and vocabulary (ordered.parquet, one segment
    per document; with --segments the segments, named in corpus.json) beside the usual bag of words; a model of
    word order reads them, any other model the bag of words, and a corpus without them is refused to the first."""
    import shutil

    import pytest

    docs = [{"id": "a", "text": "gamma alpha the beta\n\nalpha gamma zeta"},
            {"id": "b", "text": "beta of beta alpha"}, {"id": "c", "text": "zeta gamma delta"}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    options = dict(OPTS, language="english", min_df=2)          # "the", "of": stop words; "delta": once
    ordered, both = str(tmp_path / "ordered"), str(tmp_path / "both")
    meta = prepare_corpus(spark_session, str(src), ordered, ordered=True, **options)
    meta_both = prepare_corpus(spark_session, str(src), both, ordered=True, segments="paragraph", **options)
    assert meta["ordered"] == {"file": "ordered.parquet", "documents": 3} and meta["options"]["ordered"] is True
    assert meta_both["ordered"] == {"file": "segments.parquet"} and "ordered" not in meta_both["segmentation"]
    vocab = pd.read_parquet(f"{ordered}/vocab.parquet").sort_values("id")["term"].to_numpy()
    frame = pd.read_parquet(f"{ordered}/ordered.parquet").set_index("doc_id")
    text = {d: [[str(t) for t in vocab[np.asarray(s, dtype=int)]] for s in frame.loc[d, "segments"]] for d in "abc"}
    assert text == {"a": [["gamma", "alpha", "beta", "alpha", "gamma", "zeta"]], "b": [["beta", "beta", "alpha"]],
                    "c": [["zeta", "gamma"]]}

    def words(corpus):
        out = {}
        for _, block in corpus.blocks.collect():
            ptr = block.token_ptr()
            out.update({d: [str(t) for t in vocab[block.words[ptr[i]:ptr[i + 1]]]]
                        for i, d in enumerate(block.doc_ids)})
        return out

    assert words(load_segmented_corpus(spark_session, ordered, 2, ordered=True)) == \
        {d: t[0] for d, t in text.items()}
    bags = words(load_segmented_corpus(spark_session, ordered, 2))           # the bag of words, as before
    assert bags["a"] == ["alpha", "alpha", "beta", "gamma", "gamma", "zeta"]     # by term id (frequency order)
    assert [len(s) for s in pd.read_parquet(f"{both}/segments.parquet").set_index("doc_id").loc["a", "segments"]] \
        == [3, 3] and load_segmented_corpus(spark_session, both, 2, ordered=True).num_segments == 4
    legacy = tmp_path / "legacy"                 # a corpus prepared without --ordered (unmarked: read as it is)
    shutil.copytree(ordered, legacy)
    (legacy / "_SUCCESS").unlink()
    (legacy / "corpus.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "ordered"}))
    with pytest.raises(UsageError, match="prepare --ordered"):
        load_segmented_corpus(spark_session, str(legacy), 2, ordered=True)
