"""`spark-topics tree`: FreeDict dictd and TSV dictionaries -> one concept per single-word pair in the corpus
vocabularies, the coverage report, the tree directory."""
from __future__ import annotations

import gzip
import json
import os
import re

import pandas as pd
import pytest

from drivers.models.tree.dictionaries import languages_of, read_dictionaries, split_translations
from drivers.models.tree.prior_tree import build_concepts, load_tree
from prerequisites import require
from inference.errors import UsageError

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64(n: int) -> str:
    out = ""
    while True:
        out = B64[n % 64] + out
        n //= 64
        if n == 0:
            return out


def write_dictd(directory, name: str, entries: dict) -> str:
    """A dictd dictionary as FreeDict ships it: ``name.index`` and the gzip-compatible ``name.dict.dz``."""
    body, index = b"", []
    for headword, text in [("00databaseinfo", "An info page, not an entry")] + list(entries.items()):
        data = text.encode("utf-8")
        index.append(f"{headword.lower()}\t{b64(len(body))}\t{b64(len(data))}")
        body += data
    with gzip.open(os.path.join(directory, f"{name}.dict.dz"), "wb") as f:
        f.write(body)
    path = os.path.join(directory, f"{name}.index")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(sorted(index)) + "\n")
    return path


def test_dictd_entries_become_pairs(tmp_path):
    path = write_dictd(tmp_path, "freedict-eng-spa", {
        "abhorrence": "abhorrence /əbhɔrəns/\n1. aversión, horror\n",
        "robbed of sleep": "robbed of sleep /ɹˈɒbd/\nrobadas al sueño <f>\n",
        "ability": "ability /əbilitiː/\n1. capacidad; habilidad\n2. poder (de hacer)\n",
    })
    assert languages_of(path) == ("en", "es")
    assert languages_of(path, {"spa": "sp"}) == ("en", "sp")
    pairs = sorted(p[:4] for p in read_dictionaries([path]))
    assert pairs == sorted([("en", "abhorrence", "es", "aversión"), ("en", "abhorrence", "es", "horror"),
                            ("en", "robbed of sleep", "es", "robadas al sueño"),
                            ("en", "ability", "es", "capacidad"), ("en", "ability", "es", "habilidad"),
                            ("en", "ability", "es", "poder")])
    assert split_translations("1. a <m>, b (gloss)\n2. c d\n") == ["a", "b", "c d"]
    with pytest.raises(ValueError, match="cannot tell the languages"):
        languages_of(str(tmp_path / "mydict.index"))


def test_unreadable_dictionaries_are_refused_naming_the_file(tmp_path):
    """A Latin-1 TSV (UnicodeDecodeError), a corrupt or truncated .dict.dz (BadGzipFile, EOFError) and a Latin-1
    index ended the tree job with the exception's name alone; now a DictionaryError (the job's one line) names the
    file and what is wrong."""
    from drivers.models.tree.dictionaries import DictionaryError

    tsv = tmp_path / "pairs.tsv"
    tsv.write_bytes("en\thate\tes\todio\nen\tcafe\tes\tcaf\xe9\n".encode("latin-1"))
    with pytest.raises(DictionaryError, match=r"pairs\.tsv is not UTF-8 text \(invalid continuation byte at byte "
                                              r"\d+\): save it as UTF-8"):
        list(read_dictionaries([str(tsv)]))
    index = write_dictd(tmp_path, "freedict-eng-spa", {"hate": "hate /h/\nodio\n"})
    dz = tmp_path / "freedict-eng-spa.dict.dz"
    whole = dz.read_bytes()
    for damaged in (b"not gzip at all", whole[:len(whole) // 2]):
        dz.write_bytes(damaged)
        with pytest.raises(DictionaryError, match=r"freedict-eng-spa\.dict\.dz is not a readable dictzip \(gzip\) "
                                                  r"file \((BadGzipFile|EOFError): .*\): install"):
            list(read_dictionaries([index]))
    dz.write_bytes(whole)
    with open(index, "ab") as f:
        f.write("caf\xe9\tA\tB\n".encode("latin-1"))
    with pytest.raises(DictionaryError, match=r"freedict-eng-spa\.index is not UTF-8 text"):
        list(read_dictionaries([index]))


def simple_tokenize(language, phrases):
    return [re.findall(r"[^\W\d_]{2,}", p.lower()) for p in phrases]


def test_one_concept_per_single_word_pair_in_the_vocabularies():
    """Words are keyed by (language, word): en "son" and es "son" stay apart; a pair read from both directions
    is one concept; every drop has its reason; the report counts paths per word."""
    vocabulary = {("en", w): i for i, w in enumerate(["son", "water", "house", "sea"])}
    vocabulary.update({("es", w): 4 + i for i, w in enumerate(["hijo", "agua", "casa", "son", "mar"])})
    pairs = [("en", "son", "es", "hijo"), ("es", "hijo", "en", "son"),      # both directions: one concept
             ("en", "water", "es", "agua"), ("en", "water", "es", "mar"),   # water: two paths
             ("en", "sea", "es", "mar"), ("en", "house", "es", "casa"),
             ("en", "son", "es", "son"),                                    # a homograph pair: two words
             ("en", "big house", "es", "casona"),                           # multi-word
             ("en", "fire", "es", "fuego"),                                 # not in the vocabulary
             ("en", "water", "fr", "eau")]                                  # a language the corpus lacks
    concepts, report = build_concepts(pairs, simple_tokenize, vocabulary, ("en", "es"))
    assert list(zip(concepts["word_a"], concepts["word_b"])) == [
        ("house", "casa"), ("sea", "mar"), ("son", "hijo"), ("son", "son"), ("water", "agua"), ("water", "mar")]
    assert set(concepts["lang_a"]) == {"en"} and set(concepts["lang_b"]) == {"es"}
    assert report["dropped"] == {"other_language": 1, "multi_word": 1, "same_word": 0, "not_in_vocabulary": 1,
                                 "duplicate": 1}
    assert report["languages"]["en"] == {"linked_words": 4, "several_paths": 2, "max_paths": 2,
                                         "paths_histogram": {"1": 2, "2": 2}}
    assert report["languages"]["es"]["paths_histogram"] == {"1": 4, "2": 1}
    mono = build_concepts([("en", "sea", "en", "ocean"), ("en", "sea", "es", "sea")], simple_tokenize,
                          {("", "sea"): 0, ("", "ocean"): 1}, ("",))[1]
    assert mono["concepts"] == 1 and mono["dropped"]["same_word"] == 1


@pytest.fixture(scope="module")
def aligned_corpus(spark_session, tmp_path_factory):
    from drivers.preparation.aligned import prepare_aligned

    base = tmp_path_factory.mktemp("tree_corpus")
    rows = []
    english = ["the son drinks water by the sea", "a house by the water", "the son of the house", "sea and water"]
    spanish = ["el hijo bebe agua junto al mar", "una casa junto al agua", "el hijo de la casa", "mar y agua"]
    for i in range(8):
        rows.append({"id": f"t{i}", "lang": "en", "text": english[i % 4]})
        rows.append({"id": f"t{i}", "lang": "es", "text": spanish[i % 4]})
    with open(base / "input.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    prepare_aligned(spark_session, str(base / "input.jsonl"), str(base / "corpus"), "lang", min_df=1, max_df=1.0,
                    overwrite=True)
    return base


def test_tree_job_writes_the_tree_and_its_report(spark_session, aligned_corpus, tmp_path, capsys):
    from jobs import tree

    dictd = write_dictd(tmp_path, "freedict-eng-spa", {
        "son": "son /sʌn/\nhijo\n", "water": "water /wɔːtə/\n1. agua\n2. mar\n",
        "house": "house /haus/\ncasa, hogar\n", "fire": "fire /faiə/\nfuego\n"})
    tsv = tmp_path / "extra.tsv"
    tsv.write_text("# more pairs\nen\tsea\tes\tmar\nes\tcasa\ten\thouse\n", encoding="utf-8")
    import argparse

    args = argparse.Namespace(dictionary=f"{dictd},{tsv}", corpus=str(aligned_corpus / "corpus"),
                              output=str(tmp_path / "tree"), languages=None, master=None, conf=[])
    meta = tree.run(args)
    printed = capsys.readouterr().out
    assert "5 concepts from 8 dictionary pairs" in printed and "en: 4 linked words" in printed
    concepts, saved = load_tree(str(tmp_path / "tree"))
    assert saved["report"] == meta["report"] and saved["languages"] == ["en", "es"]
    assert list(zip(concepts["word_a"], concepts["word_b"])) == [("house", "casa"), ("sea", "mar"), ("son", "hijo"),
                                                                  ("water", "agua"), ("water", "mar")]
    assert meta["report"]["dropped"]["duplicate"] == 1 and meta["report"]["dropped"]["not_in_vocabulary"] == 2
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    with pytest.raises(UsageError, match="not a prepared corpus"):
        tree.build(spark_session, [dictd], str(tmp_path / "nowhere"), str(tmp_path / "t2"))
    (tmp_path / "unrelated").mkdir()
    unrelated = write_dictd(tmp_path / "unrelated", "freedict-eng-spa", {"cat": "cat\ngato\n", "dog": "dog\nperro\n"})
    with pytest.raises(UsageError, match=r"no concept: none of the 2 dictionary pairs has both its words in the "
                                         r"vocabularies .*\(2 not in vocabulary\).*nothing was written"):
        tree.build(spark_session, [unrelated], str(aligned_corpus / "corpus"), str(tmp_path / "t3"))
    assert not (tmp_path / "t3").exists()


def test_debian_freedict_files_read():
    require(os.path.exists("/usr/share/dictd/freedict-eng-spa.index"), "Debian's dict-freedict-eng-spa")
    pairs = list(read_dictionaries(["/usr/share/dictd/freedict-eng-spa.index"]))
    assert len(pairs) > 5000 and all(p[0] == "en" and p[2] == "es" for p in pairs)
    frame = pd.DataFrame([p[:4] for p in pairs], columns=["la", "a", "lb", "b"])
    assert (frame["a"] == "water").any() and not frame["b"].str.contains("<").any()
