"""``spark-topics prepare``: raw text in several formats -> corpus directory (jobs/prepare.py)."""
from __future__ import annotations

import argparse
import csv
import glob
import gzip
import json
import os

import pandas as pd
import pytest

from drivers.preparation.corpus import prepare_corpus
from drivers.preparation.vocabulary import PersistedFrames
from drivers.preparation.options import PrepareError, PrepareOptions
from drivers.preparation.text import available_languages, load_stopwords
from drivers.preparation.vocabulary import build_vocabulary, count_terms, term_statistics
from inference.errors import UsageError
from jobs.prepare import add_arguments, count_or_fraction, run

# Texts with what CSV must quote (commas, quotes, newlines) and a stop word or two.
TEXTS = {
    "alpha": "Apples and pears, apples again.\nPears grow on trees.",
    "beta": 'The "red" apples grow on trees; trees grow tall.',
    "gamma": "Pears, apples and plums are fruit.",
    "delta": "Plums grow, plums fall.",
}


# ------------------------------------------------------------------ helpers


def write_txt_dir(directory, texts):
    os.makedirs(directory, exist_ok=True)
    for doc_id, text in texts.items():
        with open(os.path.join(directory, f"{doc_id}.txt"), "w", encoding="utf-8") as f:
            f.write(text)
    return str(directory)


def write_jsonl(path, records, compress=False):
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(lines)
    return str(path)


def write_lines(path, lines: list[bytes]):
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    return str(path)


def write_csv(path, records):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    return str(path)


def records(texts, id_column="id", text_column="text"):
    return [{id_column: doc_id, text_column: text} for doc_id, text in texts.items()]


def read_docs(out) -> pd.DataFrame:
    return pd.read_parquet(os.path.join(out, "docs.parquet"))


def read_vocab(out) -> dict[str, int]:
    vocab = pd.read_parquet(os.path.join(out, "vocab.parquet"))
    return dict(zip(vocab.term, vocab.id))


def read_rejects(out) -> list[dict]:
    rows = []
    for part in sorted(glob.glob(os.path.join(out, "rejects", "part-*"))):
        with open(part, encoding="utf-8") as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    return rows


def bags(out) -> dict[str, dict[str, int]]:
    """``{doc_id: {term: count}}`` read back from a corpus directory."""
    terms = {i: t for t, i in read_vocab(out).items()}
    return {row.doc_id: {terms[i]: int(c) for i, c in zip(row.term_ids, row.counts)}
            for row in read_docs(out).itertuples()}


def assert_consistent(out, corpus):
    """The contract's invariants, checked against the files on disk."""
    assert corpus["input_rows"] == corpus["documents"] + sum(corpus["rejected"].values())
    with open(os.path.join(out, "corpus.json"), encoding="utf-8") as f:
        assert json.load(f) == corpus
    docs = read_docs(out)
    assert len(docs) == corpus["documents"]
    assert int(docs.n_tokens.sum()) == corpus["tokens"]
    assert int(docs.n_oov.sum()) == corpus["oov_tokens"]
    for row in docs.itertuples():
        ids = list(row.term_ids)
        assert ids == sorted(set(ids)) and len(ids) == len(row.counts) > 0
        assert min(row.counts) > 0 and sum(row.counts) == row.n_tokens
        assert 0 <= min(ids) and max(ids) < corpus["vocab_size"]
    vocab = pd.read_parquet(os.path.join(out, "vocab.parquet")).sort_values("id")
    assert list(vocab.id) == list(range(corpus["vocab_size"]))
    rejects = read_rejects(out)
    assert len(rejects) == sum(corpus["rejected"].values())
    assert {r: sum(x["reason"] == r for x in rejects) for r in corpus["rejected"]} == corpus["rejected"]


def prepare(spark, input_path, out, **options):
    options = {"language": "english", "min_df": 1, "max_df": 1.0, **options}
    corpus = prepare_corpus(spark, str(input_path), str(out), **options)
    assert_consistent(str(out), corpus)
    return corpus


# ------------------------------------------------------------------ formats


def test_formats_give_the_same_corpus(spark_session, tmp_path):
    parquet = tmp_path / "docs.parquet"
    pd.DataFrame(records(TEXTS)).to_parquet(parquet)
    inputs = {
        "txt": write_txt_dir(tmp_path / "txt", TEXTS),
        "jsonl": write_jsonl(tmp_path / "docs.jsonl", records(TEXTS)),
        "jsonl.gz": write_jsonl(tmp_path / "docs.jsonl.gz", records(TEXTS), compress=True),
        "csv": write_csv(tmp_path / "docs.csv", records(TEXTS)),
        "parquet": str(parquet),
    }
    results = {}
    for name, path in inputs.items():
        out = tmp_path / f"out-{name}"
        corpus = prepare(spark_session, path, out)
        assert corpus["options"]["format"] == name.split(".")[0]
        results[name] = (bags(out), read_vocab(out), corpus["tokens"], corpus["oov_tokens"])

    expected_bags = {
        "alpha": {"apples": 2, "pears": 2, "grow": 1, "trees": 1},
        "beta": {"red": 1, "apples": 1, "grow": 2, "trees": 2, "tall": 1},
        "gamma": {"pears": 1, "apples": 1, "plums": 1, "fruit": 1},
        "delta": {"plums": 2, "grow": 1, "fall": 1},
    }
    for name, (doc_bags, vocab, tokens, oov) in results.items():
        assert doc_bags == expected_bags, name
        assert vocab == results["txt"][1], name
        assert (tokens, oov) == (21, 0), name


def test_format_detection_for_directories(spark_session, tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    texts = list(TEXTS.items())
    write_jsonl(folder / "a.jsonl", records(dict(texts[:2])))
    write_jsonl(folder / "b.jsonl.gz", records(dict(texts[2:])), compress=True)
    (folder / "README.md").write_text("not data")      # ignored: not a .jsonl file
    (folder / "_SUCCESS").write_text("")
    corpus = prepare(spark_session, folder, tmp_path / "out")
    assert corpus["options"]["format"] == "jsonl"
    assert corpus["documents"] == 4 and corpus["input_rows"] == 4


def test_output_keeps_input_order_and_partitions(spark_session, tmp_path):
    texts = {f"doc{i:03d}": f"word{chr(97 + i % 26)} common text" for i in range(60)}
    shuffled = dict(sorted(texts.items(), key=lambda kv: hash(kv[0]) % 97))
    path = write_jsonl(tmp_path / "docs.jsonl", records(shuffled))
    out = tmp_path / "out"
    prepare(spark_session, path, out, partitions=3)
    assert len(glob.glob(str(out / "docs.parquet" / "part-*.parquet"))) == 3
    assert list(read_docs(out).doc_id) == list(shuffled)


# ------------------------------------------------------------------ vocabulary


PRUNING_TEXTS = {
    # df: alpha 4, beta 3, gamma 2, delta 2, epsilon 1, zeta 1
    # cf: alpha 4, beta 3, gamma 3, delta 2, epsilon 1, zeta 3
    "a": "alpha beta gamma gamma",
    "b": "alpha beta delta",
    "c": "alpha gamma delta",
    "d": "alpha beta epsilon",
    "e": "zeta zeta zeta",
}


@pytest.mark.parametrize("options, expected", [
    # 5 documents; max_df 0.7 -> df <= 3.5 drops alpha; min_df 2 drops epsilon, zeta.
    # beta and gamma tie on cf = 3: alphabetical order decides.
    ({"min_df": 2, "max_df": 0.7}, ["beta", "gamma", "delta"]),
    ({"min_df": 2, "max_df": 0.6}, ["beta", "gamma", "delta"]),    # df <= 3.0 is inclusive
    ({"min_df": 2, "max_df": 3}, ["beta", "gamma", "delta"]),      # absolute max_df
    ({"min_df": 2, "max_df": 2}, ["gamma", "delta"]),
    ({"min_df": 3, "max_df": 1.0}, ["alpha", "beta"]),
    ({"min_df": 0.5, "max_df": 1.0}, ["alpha", "beta"]),           # df >= 2.5
    ({"min_df": 2, "max_df": 0.7, "max_vocab": 2}, ["beta", "gamma"]),
    ({"min_df": 1, "max_df": 1.0}, ["alpha", "beta", "gamma", "zeta", "delta", "epsilon"]),
    ({"min_df": 1, "max_df": 1.0, "max_vocab": 3}, ["alpha", "beta", "gamma"]),
])
def test_vocabulary_pruning(spark_session, options, expected):
    tokens = spark_session.createDataFrame([(d, t.split()) for d, t in PRUNING_TEXTS.items()],
                                           "doc_id string, tokens array<string>")
    with PersistedFrames() as cache:
        vocab = build_vocabulary(term_statistics(count_terms(tokens)), len(PRUNING_TEXTS), PrepareOptions(**options),
                                 cache).toPandas().sort_values("id")
    assert list(vocab.term) == expected
    assert list(vocab.id) == list(range(len(expected)))
    df = {"alpha": 4, "beta": 3, "gamma": 2, "delta": 2, "epsilon": 1, "zeta": 1}
    cf = {"alpha": 4, "beta": 3, "gamma": 3, "delta": 2, "epsilon": 1, "zeta": 3}
    assert list(vocab.df) == [df[t] for t in expected]
    assert list(vocab.cf) == [cf[t] for t in expected]


def test_pruned_documents_exactly(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", records(PRUNING_TEXTS))
    out = tmp_path / "out"
    corpus = prepare(spark_session, path, out, language="none", min_df=2, max_df=0.7)
    # ids: beta 0, gamma 1, delta 2; alpha/epsilon are out of vocabulary; e is empty.
    docs = read_docs(out).set_index("doc_id")
    assert list(docs.index) == ["a", "b", "c", "d"]
    expected = {"a": ([0, 1], [1, 2], 3, 1), "b": ([0, 2], [1, 1], 2, 1),
                "c": ([1, 2], [1, 1], 2, 1), "d": ([0], [1], 1, 2)}
    for doc_id, (ids, counts, n_tokens, n_oov) in expected.items():
        row = docs.loc[doc_id]
        assert (list(row.term_ids), list(row.counts), row.n_tokens, row.n_oov) == \
            (ids, counts, n_tokens, n_oov), doc_id
    assert corpus["rejected"] == {"malformed": 0, "invalid_encoding": 0, "duplicate_id": 0, "empty": 1}
    [reject] = read_rejects(out)
    assert (reject["id"], reject["reason"], reject["raw"]) == ("e", "empty", "zeta zeta zeta")
    assert reject["source"].startswith("file:") and reject["source"].endswith("/docs.jsonl")
    assert (corpus["tokens"], corpus["oov_tokens"]) == (8, 5)


def test_reuse_vocabulary(spark_session, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", records(PRUNING_TEXTS))
    first = tmp_path / "first"
    prepare(spark_session, train, first, language="none", min_df=2, max_df=0.7)
    new = write_jsonl(tmp_path / "new.jsonl", records({
        "x": "delta delta omega beta",      # omega unknown
        "y": "omega omega",                 # nothing known: empty
        "z": "alpha gamma",                 # alpha known to the corpus but pruned: oov
    }))
    out = tmp_path / "second"
    corpus = prepare(spark_session, new, out, language="none", vocab=str(first), min_df=5)
    assert read_vocab(out) == read_vocab(first) == {"beta": 0, "gamma": 1, "delta": 2}
    docs = read_docs(out).set_index("doc_id")
    assert list(docs.loc["x"].term_ids) == [0, 2] and list(docs.loc["x"].counts) == [1, 2]
    assert docs.loc["x"].n_oov == 1
    assert list(docs.loc["z"].term_ids) == [1] and docs.loc["z"].n_oov == 1
    assert corpus["rejected"]["empty"] == 1 and corpus["oov_tokens"] == 2
    vocab = pd.read_parquet(out / "vocab.parquet").set_index("term")
    assert (vocab.loc["beta"].df, vocab.loc["delta"].cf, vocab.loc["gamma"].df) == (1, 2, 1)


def test_reused_vocabulary_must_have_contiguous_ids(spark_session, tmp_path):
    bad = tmp_path / "vocab.parquet"          # a vocab.parquet path works as well as a corpus dir
    pd.DataFrame({"term": ["a", "b"], "id": [0, 2]}).to_parquet(bad)
    path = write_jsonl(tmp_path / "docs.jsonl", records(TEXTS))
    with pytest.raises(PrepareError, match=r"ids 0\.\.1"):
        prepare_corpus(spark_session, path, str(tmp_path / "out"), vocab=str(bad))


# ------------------------------------------------------------------ tokens


def test_stopwords_are_removed_not_counted_as_oov(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", records({
        "a": "The cat and the hat, isn't it?",
        "b": "Don’t let the cat in.",          # typographic apostrophe
    }))
    out = tmp_path / "out"
    corpus = prepare(spark_session, path, out)
    assert bags(out) == {"a": {"cat": 1, "hat": 1}, "b": {"let": 1, "cat": 1}}
    assert corpus["oov_tokens"] == 0

    custom = tmp_path / "stop.txt"
    custom.write_text("# domain words\nCat\n\n", encoding="utf-8")
    out = tmp_path / "custom"
    prepare(spark_session, path, out, stopwords=str(custom))
    assert bags(out) == {"a": {"hat": 1}, "b": {"let": 1}}

    out = tmp_path / "none"
    prepare(spark_session, path, out, language="none")
    assert bags(out)["a"] == {"the": 2, "cat": 1, "and": 1, "hat": 1, "isn't": 1, "it": 1}


def test_shipped_stopword_lists():
    assert {"english", "german", "french", "russian", "turkish"} <= set(available_languages())
    assert {"the", "and", "isn't"} <= set(load_stopwords("english"))
    assert "und" in load_stopwords("german")
    with pytest.raises(ValueError, match="available: danish"):
        load_stopwords("klingon")


def test_unicode_tokens_lowercased_and_kept(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", records({
        "de": "Straße ÄRGER Ärger Übermäßig 2024 x",
        "el": "ΟΔΟΣ Ελληνικά ελληνικά",
        "fr": "Café naïve cafe\u0301",                  # the last one with a combining accent
        "en": "God's people, o'clock",
    }))
    out = tmp_path / "out"
    prepare(spark_session, path, out, language="none")
    assert bags(out) == {
        "de": {"straße": 1, "ärger": 2, "übermäßig": 1},
        "el": {"οδος": 1, "ελληνικά": 2},
        "fr": {"café": 1, "naïve": 1, "cafe\u0301": 1},
        "en": {"god": 1, "people": 1, "o'clock": 1},
    }


def test_token_pattern_and_min_length(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", records({"a": "R2-D2 is a droid, c3po too"}))
    out = tmp_path / "out"
    prepare(spark_session, path, out, language="none", token_pattern=r"[\p{L}\p{N}]+",
            min_token_length=3)
    assert bags(out) == {"a": {"droid": 1, "c3po": 1, "too": 1}}


# ------------------------------------------------------------------ bad input


def test_empty_input_is_an_error(spark_session, tmp_path):
    path = write_lines(tmp_path / "empty.jsonl", [b""])
    with pytest.raises(PrepareError, match="no input rows"):
        prepare_corpus(spark_session, path, str(tmp_path / "out"))


def test_all_empty_documents_is_an_error_naming_the_rejects(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", records({"a": "the and of", "b": "", "c": "12 34"}))
    out = tmp_path / "out"
    with pytest.raises(PrepareError, match=r"no documents left.*empty=3.*rejects") as info:
        prepare_corpus(spark_session, path, str(out))
    assert str(out / "rejects") in str(info.value)
    assert sorted(r["id"] for r in read_rejects(out)) == ["a", "b", "c"]
    assert not (out / "corpus.json").exists()


def test_empty_vocabulary_after_pruning_is_an_error(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", records(TEXTS))
    with pytest.raises(PrepareError, match=r"no documents left.*vocabulary size 0.*min_df=10"):
        prepare_corpus(spark_session, path, str(tmp_path / "out"), min_df=10)


def test_malformed_json_rows_are_counted_and_written(spark_session, tmp_path):
    path = write_lines(tmp_path / "docs.jsonl", [
        b'{"id": "ok1", "text": "apples and pears"}',
        b'{"id": "broken", "text": "no closing quote}',
        b'{"id": "no_text"}',
        b'{"text": "no id here"}',
        b'{"id": "  ", "text": "blank id"}',
        b'[1, 2, 3]',
        b'',                                                   # blank lines are not rows
        b'{"id": 7, "text": "numeric ids are fine"}',
    ])
    out = tmp_path / "out"
    corpus = prepare(spark_session, path, out)
    assert corpus["input_rows"] == 7 and corpus["documents"] == 2
    assert corpus["rejected"]["malformed"] == 5
    rejects = read_rejects(out)
    assert [r["id"] for r in rejects] == [None, "no_text", None, None, None]
    assert rejects[0]["raw"] == '{"id": "broken", "text": "no closing quote}'
    assert rejects[1]["raw"] == '{"id": "no_text"}'
    assert all(r["reason"] == "malformed" and r["source"].endswith("docs.jsonl") for r in rejects)
    assert set(read_docs(out).doc_id) == {"ok1", "7"}


def test_malformed_csv_rows(spark_session, tmp_path):
    path = tmp_path / "docs.csv"
    path.write_text('id,text\na,"apples, pears"\nb,too,many,fields\n,no id\nc,\n', encoding="utf-8")
    out = tmp_path / "out"
    corpus = prepare(spark_session, path, out)
    assert corpus["rejected"] == {"malformed": 2, "invalid_encoding": 0, "duplicate_id": 0, "empty": 1}
    rejects = read_rejects(out)
    assert [(r["id"], r["reason"]) for r in rejects] == \
        [("b", "malformed"), (None, "malformed"), ("c", "empty")]
    assert rejects[0]["raw"] == "b,too,many,fields"
    assert bags(out) == {"a": {"apples": 1, "pears": 1}}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_unknown_columns_list_the_available_ones(spark_session, tmp_path, fmt):
    data = records(TEXTS, id_column="name", text_column="body")
    path = tmp_path / f"docs.{fmt}"
    if fmt == "jsonl":
        write_jsonl(path, data)
    elif fmt == "csv":
        write_csv(path, data)
    else:
        pd.DataFrame(data).to_parquet(path)
    with pytest.raises(PrepareError, match=r"'id', 'text' not in .*available columns: ") as info:
        prepare_corpus(spark_session, str(path), str(tmp_path / "out"))
    assert "name" in str(info.value) and "body" in str(info.value)
    corpus = prepare(spark_session, path, tmp_path / "out", id_column="name", text_column="body")
    assert corpus["documents"] == 4


def test_invalid_utf8_in_txt_files(spark_session, tmp_path):
    folder = tmp_path / "txt"
    write_txt_dir(folder, {"good": "apples and pears", "dup": "pears and plums"})
    (folder / "bad.txt").write_bytes(b"caf\xe9 latin-1 bytes")
    (folder / "empty.txt").write_bytes(b"")            # Spark's scan skips zero-length files
    (folder / "sub").mkdir()
    (folder / "sub" / "dup.txt").write_text("plums again", encoding="utf-8")
    (folder / "notes.md").write_text("not a txt file", encoding="utf-8")
    out = tmp_path / "out"
    corpus = prepare(spark_session, folder, out)
    assert corpus["rejected"] == {"malformed": 0, "invalid_encoding": 1, "duplicate_id": 1, "empty": 1}
    rejects = {r["reason"]: r for r in read_rejects(out)}
    assert rejects["invalid_encoding"]["id"] == "bad"
    assert rejects["invalid_encoding"]["raw"] == "caf\ufffd latin-1 bytes"
    assert rejects["invalid_encoding"]["source"].endswith("/bad.txt")
    assert rejects["duplicate_id"]["source"].endswith("/sub/dup.txt")   # first in path order kept
    assert rejects["empty"]["id"] == "empty"
    assert bags(out) == {"dup": {"pears": 1, "plums": 1}, "good": {"apples": 1, "pears": 1}}


def test_invalid_utf8_in_json_and_csv_rows(spark_session, tmp_path):
    jsonl = write_lines(tmp_path / "docs.jsonl", [
        b'{"id": "a", "text": "apples and pears"}',
        b'{"id": "b", "text": "caf\xe9 au lait"}',
        b'{"id": "c", "text": "replacement \xef\xbf\xbd char"}',      # a U+FFFD in the text
    ])
    corpus = prepare(spark_session, jsonl, tmp_path / "out-json")
    assert corpus["rejected"]["invalid_encoding"] == 2 and corpus["documents"] == 1
    csv_path = tmp_path / "docs.csv"
    csv_path.write_bytes(b'id,text\na,apples and pears\nb,caf\xe9 au lait\n')
    corpus = prepare(spark_session, csv_path, tmp_path / "out-csv")
    assert corpus["rejected"]["invalid_encoding"] == 1 and corpus["documents"] == 1
    assert read_rejects(tmp_path / "out-csv")[0]["id"] == "b"


def test_duplicate_ids_keep_the_first(spark_session, tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", [
        {"id": "a", "text": "apples first"},
        {"id": "b", "text": "pears"},
        {"id": "a", "text": "plums second"},
        {"id": "a", "text": "cherries third"},
    ])
    out = tmp_path / "out"
    corpus = prepare(spark_session, path, out)
    assert corpus["rejected"]["duplicate_id"] == 2 and corpus["documents"] == 2
    assert bags(out)["a"] == {"apples": 1, "first": 1}
    assert [r["raw"] for r in read_rejects(out)] == ["plums second", "cherries third"]


def test_input_rows_equal_documents_plus_rejects(spark_session, tmp_path):
    path = write_lines(tmp_path / "docs.jsonl", [
        b'{"id": "a", "text": "apples and pears"}',
        b'{"id": "a", "text": "apples again"}',              # duplicate_id
        b'{"id": "b", "text": "the and of"}',                # empty
        b'{"id": "c", "text": "caf\xe9"}',                   # invalid_encoding
        b'{"id": "d", "text": ',                             # malformed
        b'{"id": "e", "text": "pears and plums"}',
    ])
    out = tmp_path / "out"
    corpus = prepare(spark_session, path, out)
    assert corpus["input_rows"] == 6 and corpus["documents"] == 2
    assert corpus["rejected"] == {"malformed": 1, "invalid_encoding": 1, "duplicate_id": 1, "empty": 1}
    assert [r["reason"] for r in read_rejects(out)] == \
        ["duplicate_id", "empty", "invalid_encoding", "malformed"]   # input order


def test_missing_input_unknown_format_and_existing_output(spark_session, tmp_path):
    with pytest.raises(PrepareError, match="input path does not exist"):
        prepare_corpus(spark_session, str(tmp_path / "nope.jsonl"), str(tmp_path / "out"))
    odd = tmp_path / "docs.xml"
    odd.write_text("<doc/>")
    with pytest.raises(PrepareError, match="cannot tell the format.*--format"):
        prepare_corpus(spark_session, str(odd), str(tmp_path / "out"))
    with pytest.raises(PrepareError, match="unknown format 'xml'"):
        prepare_corpus(spark_session, str(odd), str(tmp_path / "out"), format="xml")

    path = write_jsonl(tmp_path / "docs.jsonl", records(TEXTS))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("someone else's file")
    with pytest.raises(PrepareError, match="not empty.*--overwrite"):
        prepare_corpus(spark_session, path, str(out))
    prepare(spark_session, path, out, overwrite=True)
    corpus = prepare(spark_session, path, out, overwrite=True, max_vocab=3)    # replaces the corpus
    assert corpus["vocab_size"] == 3 and (out / "keep.txt").exists()


# ------------------------------------------------------------------ CLI


def test_cli_flags_and_run(spark_session, tmp_path, capsys):
    from jobs.spark import add_spark_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    add_spark_arguments(parser)
    path = write_jsonl(tmp_path / "docs.jsonl", records(TEXTS))
    out = tmp_path / "out"
    args = parser.parse_args(["--input", path, "--output", str(out), "--min-df", "1",
                              "--max-df", "4", "--language", "none", "--max-vocab", "5"])
    assert (args.min_df, args.max_df) == (1, 4)
    corpus = run(args)
    assert corpus["vocab_size"] == 5 and corpus["options"]["language"] == "none"
    assert "prepared 4 documents, 5 terms" in capsys.readouterr().out
    with pytest.raises(UsageError, match="not empty"):
        run(args)
    assert count_or_fraction("0.25") == 0.25 and count_or_fraction("3") == 3
    with pytest.raises(argparse.ArgumentTypeError):
        count_or_fraction("half")
