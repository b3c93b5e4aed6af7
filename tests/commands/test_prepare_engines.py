"""``prepare`` in this process (:mod:`drivers.preparation.in_process`) writes the corpus the Spark job writes: every
file compared, on inputs with what each reader must get right (encodings, repeated ids, blank and malformed rows,
Unicode tokens, segments, kept columns, a reused vocabulary, partitions); small inputs start no Spark at all."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus_files import corpus_content
from spark_jobs import counted_jobs
from drivers.preparation.corpus import prepare_corpus
from drivers.preparation.in_process.tokens import Tokenizer
from drivers.preparation.in_process.reading import NeedsSpark
from drivers.preparation.options import PrepareError
from drivers.preparation.text import DEFAULT_TOKEN_PATTERN
from test_prepare import TEXTS, records, write_jsonl, write_lines, write_txt_dir

TRICKY = {
    "de": "Straße ÄRGER Ärger Übermäßig 2024 x. Ärger again!\n\nA new paragraph: Straße.",
    "el": "ΟΔΟΣ Ελληνικά ελληνικά; ΟΔΟΣ.",
    "fr": "Café naïve cafe\u0301 — l’été. « Il pleut ! » dit-il.",
    "en": "God's people, o'clock; isn’t it? Don't.\n \n\u2029Next   paragraph… here",
    "math": "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 letters and an ﬁ ligature, İstanbul and ǅemal",
    "cjk": "東京は大きい。とても大きい！ 東京",
}


def no_spark():
    raise AssertionError("Spark was started for an input prepared in this process")


def both(spark, input_path, tmp_path, name, jobs=None, **options):
    """Prepare ``input_path`` with each engine; returns the two corpora's contents (``jobs``: a list that gets the
    call sites of the Spark engine's jobs)."""
    options = {"min_df": 1, "max_df": 1.0, **options}
    contents = []
    for engine, session in (("spark", spark), ("in-process", no_spark)):
        out = tmp_path / f"{name}-{engine}"
        with counted_jobs(spark) as ran:
            prepare_corpus(session, str(input_path), str(out), engine, **options)
        contents.append(corpus_content(str(out)))
        if engine == "spark" and jobs is not None:
            jobs.extend(ran)
    return contents


def assert_same(spark_corpus, local_corpus):
    assert set(spark_corpus) == set(local_corpus)
    for name in spark_corpus:
        assert local_corpus[name] == spark_corpus[name], name


def test_jsonl_with_every_kind_of_row_segments_and_kept_columns(spark_session, tmp_path):
    lines = [json.dumps({"id": doc_id, "text": text, "date": f"2024-0{i + 1}-01"}, ensure_ascii=False).encode()
             for i, (doc_id, text) in enumerate(TRICKY.items())]
    lines += [
        b'{"id": 7, "text": "numeric ids are read as written", "date": 2024}',
        b'{"id": " padded ", "text": "spaces around the id are trimmed", "date": null}',
        b'{"id": "de", "text": "a repeated id is a duplicate", "date": "x"}',
        b'{"id": "bad", "text": "caf\xe9 au lait", "date": "x"}',
        b'{"id": "fffd", "text": "replacement \xef\xbf\xbd char", "date": "x"}',
        b'{"id": "no_text"}',
        b'{"text": "no id here"}',
        b'[1, 2, 3]',
        b'   ',
        b'',
        b'{"id": "stop", "text": "the and of it", "date": "x"}',
    ]
    path = write_lines(tmp_path / "docs.jsonl", lines)
    jobs = []
    spark_corpus, local_corpus = both(spark_session, path, tmp_path, "jsonl", jobs, segments="sentence", ordered=True,
                                      keep_columns=("date",))
    assert_same(spark_corpus, local_corpus)
    # corpus.json's counts are observed by the jobs that write the files (no job reads them back) and the input
    # rows and those to tokenise are counted in one job: 41 Spark jobs here (AQE runs each shuffle as a job), 48 before
    assert len(jobs) <= 42, jobs
    assert {r["reason"] for r in local_corpus["rejects"]} == {"malformed", "invalid_encoding", "duplicate_id",
                                                              "empty"}
    assert local_corpus["corpus.json"]["segmentation"]["segments"] > len(TRICKY)


def test_txt_folder_and_gzipped_jsonl_folder(spark_session, tmp_path):
    folder = write_txt_dir(tmp_path / "txt", {**TEXTS, "dup": "pears and plums", "para": TRICKY["en"]})
    (folder_path := tmp_path / "txt" / "bad.txt").write_bytes(b"caf\xe9 latin-1 bytes")
    (tmp_path / "txt" / "empty.txt").write_bytes(b"")
    (tmp_path / "txt" / "bom.txt").write_bytes("\ufeffbyte order mark first".encode())
    (tmp_path / "txt" / "sub").mkdir()
    (tmp_path / "txt" / "sub" / "dup.txt").write_text("plums again", encoding="utf-8")
    (tmp_path / "txt" / "notes.md").write_text("not a txt file", encoding="utf-8")
    (tmp_path / "txt" / "_hidden.txt").write_text("hidden", encoding="utf-8")
    assert folder_path.exists()
    assert_same(*both(spark_session, folder, tmp_path, "txt", segments="paragraph", language="none"))

    parts = tmp_path / "parts"
    parts.mkdir()
    items = list(TEXTS.items())
    write_jsonl(parts / "a.jsonl", records(dict(items[:2])))
    write_jsonl(parts / "b.jsonl.gz", records(dict(items[2:])), compress=True)
    (parts / "_SUCCESS").write_text("")
    assert_same(*both(spark_session, parts, tmp_path, "parts", min_df=2, max_df=0.9, max_vocab=4,
                      partitions=3))


def test_parquet_with_integer_ids_binary_text_and_a_reused_vocabulary(spark_session, tmp_path):
    table = pa.table({"id": pa.array([3, 1, 2, 1, None], pa.int64()),
                      "text": pa.array([t.encode() for t in TRICKY.values()][:4] + [b"caf\xe9"], pa.binary()),
                      "year": pa.array([1999, 2000, 2001, 2002, 2003], pa.int32())})
    path = tmp_path / "docs.parquet"
    pq.write_table(table, path)
    spark_corpus, local_corpus = both(spark_session, path, tmp_path, "parquet", keep_columns=("year",),
                                      language="german")
    assert_same(spark_corpus, local_corpus)
    vocab = tmp_path / "parquet-in-process"
    jsonl = write_jsonl(tmp_path / "new.jsonl", records({"x": TRICKY["de"], "y": "unknown words only",
                                                         "z": TRICKY["math"]}))
    assert_same(*both(spark_session, jsonl, tmp_path, "reused", vocab=str(vocab), min_df=5))


def test_both_engines_write_the_terms_cut_as_too_frequent(spark_session, tmp_path):
    """``frequent_terms.parquet`` (issue 30): the terms of df > --max-df, df descending then term, the same from
    both engines (a fraction and a number of documents; the other tests compare the empty list of --max-df 1.0,
    written without a Spark job); a given vocabulary cuts nothing (no list)."""
    docs = {f"d{i}": " ".join(["patch"] + ["fix"] * (i < 5) + ["bpo", "zeta"] * (i < 4) + ["gh"] * (i < 3)
                             + [f"only{'abcdef'[i]}", f"pair{'ab'[i % 2]}"]) for i in range(6)}
    path = write_jsonl(tmp_path / "docs.jsonl", records(docs))
    expected = [("patch", 6), ("fix", 5), ("bpo", 4), ("zeta", 4)]
    for name, max_df, cut in (("fraction", 0.5, expected), ("count", 4, expected[:2])):
        spark_corpus, local_corpus = both(spark_session, path, tmp_path, name, max_df=max_df)
        assert_same(spark_corpus, local_corpus)
        assert [(r["term"], r["df"]) for r in local_corpus["frequent_terms"]] == cut, name
        assert local_corpus["corpus.json"]["frequent_terms"] == {"file": "frequent_terms.parquet", "terms": len(cut)}
    corpus = prepare_corpus(no_spark, path, str(tmp_path / "given"), vocab=str(tmp_path / "fraction-spark"))
    assert "frequent_terms" not in corpus and not (tmp_path / "given" / "frequent_terms.parquet").exists()


def test_small_inputs_start_no_spark_and_what_needs_spark_gets_it(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", records(TEXTS))
    corpus = prepare_corpus(no_spark, path, str(tmp_path / "auto"), min_df=1)     # auto: this process
    assert corpus["documents"] == 4

    broken = write_lines(tmp_path / "broken.jsonl", [b'{"id": "a", "text": "apples and pears"}',
                                                     b"{'id': 'b', 'text': 'single quotes'}"])
    with pytest.raises(PrepareError, match="without Spark: a JSON line Python's parser refuses"):
        prepare_corpus(no_spark, broken, str(tmp_path / "forced"), "in-process", min_df=1)
    assert not (tmp_path / "forced").exists()
    corpus = prepare_corpus(lambda: spark_session, broken, str(tmp_path / "fallback"), min_df=1)
    spark_corpus = prepare_corpus(spark_session, broken, str(tmp_path / "spark"), "spark", min_df=1)
    assert corpus == {**spark_corpus, "input": corpus["input"]}

    csv_path = tmp_path / "docs.csv"
    csv_path.write_text("id,text\na,apples\n", encoding="utf-8")
    with pytest.raises(PrepareError, match="without Spark: csv input"):
        prepare_corpus(no_spark, str(csv_path), str(tmp_path / "csv"), "in-process")


@pytest.mark.parametrize("pattern, text", [
    (DEFAULT_TOKEN_PATTERN, "it'sé god's l’été o'clock"),
    (r"[\p{L}\p{N}]+", "R2-D2 c3po ٣٤ 𝔘𝔫𝔦"),
    (r"(?U)\w+", "naïve_ünïcode x1"),
])
def test_the_tokenizer_reads_java_patterns_as_spark_does(spark_session, pattern, text):
    frame = spark_session.createDataFrame([(text,)], "text string")
    from drivers.preparation.text import tokenize

    expected = tokenize(frame, "text", "tokens", pattern=pattern, min_token_length=2).first().tokens
    assert Tokenizer(pattern, 2, ()).tokens(text) == expected


@pytest.mark.parametrize("pattern", [r"\w+", r"[\p{Alpha}]+", r"\d+|\s"])
def test_patterns_java_reads_differently_need_spark(pattern):
    with pytest.raises(NeedsSpark):
        Tokenizer(pattern, 1, ())


def test_the_prepare_command_of_a_small_input_starts_no_spark(tmp_path, capsys):
    from pyspark.sql import SparkSession

    from jobs.cli import main

    path = write_jsonl(tmp_path / "docs.jsonl", records(TEXTS))
    active = SparkSession.getActiveSession()
    assert main(["prepare", "--input", path, "--output", str(tmp_path / "out"), "--min-df", "1",
                 "--master", "none"]) in (0, None)
    assert "prepared 4 documents" in capsys.readouterr().out
    assert SparkSession.getActiveSession() is active
    assert pd.read_parquet(tmp_path / "out" / "docs.parquet").doc_id.tolist() == list(TEXTS)
