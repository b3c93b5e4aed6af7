"""Informed priors (thesis §3.3.1): prior files, their errors, and a seeded topic on real text."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from drivers.models.lda.informed_prior import PriorError, build_prior, read_prior
from drivers.store import model_store

VOCAB = pd.DataFrame({"term": ["america", "american", "americas", "fear", "hate", "table", "worried", "worry"],
                      "id": range(8)})
ANIMALS = "sheep goat* lion* horse* camel* ox oxen dove* donkey* cattle flock*"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_word_lists_with_prefix_patterns(tmp_path):
    path = write(tmp_path, "p.txt", "# LIWC-style\nanger: hate kill*\npatriot: america*\n")
    prior, names, report = build_prior(read_prior(path), VOCAB, 4, eta=0.1, high=10, low=0.01)
    assert names == ["anger", "patriot", "topic 2", "topic 3"]
    assert prior.row(1)[[0, 1, 2]].tolist() == [10, 10, 10] and prior.row(1)[3] == 0.01
    assert prior.row(0)[4] == 10 and np.count_nonzero(prior.row(0) == 10) == 1
    assert np.all(prior.row(3) == 0.1)                       # unseeded topics stay symmetric
    assert report["missing"] == {"anger": ["kill*"]} and report["missing_count"] == 1


@pytest.mark.parametrize("name,text", [
    ("p.json", json.dumps({"anxiety": ["worr*", "fear"], "anger": ["hate"]})),
    ("p.dic", "%\n1\tanxiety\n2\tanger\n%\nworr*\t1\nfear\t1\nhate\t2\n"),
])
def test_json_and_liwc_formats(tmp_path, name, text):
    prior, names, _ = build_prior(read_prior(write(tmp_path, name, text)), VOCAB, 3, eta=0.1)
    assert names[:2] == ["anxiety", "anger"]
    assert set(np.flatnonzero(prior.row(0) == 10)) == {3, 6, 7}


def test_sparse_prior(tmp_path):
    path = str(tmp_path / "p.csv")
    pd.DataFrame({"topic": [0, 0, 2], "word": ["hate", "nope", "table"], "value": [5.0, 5.0, 2.0]}).to_csv(path, index=False)
    prior, names, report = build_prior(read_prior(path), VOCAB, 3, eta=0.1)
    assert prior.row(0)[4] == 5 and prior.row(0)[0] == 0.1 and prior.row(2)[5] == 2 and np.all(prior.row(1) == 0.1)
    assert report["missing"] == {"topic 0": ["nope"]}


@pytest.mark.parametrize("name,text,message", [
    ("e.txt", "anger:\n", "empty word list"),
    ("e.json", "{}", "no topics"),
    ("m.txt", "anger: kill* murder\n", "none of the words"),
    ("many.txt", "a: hate\nb: fear\nc: table\nd: worry\n", "names 4 topics"),
])
def test_bad_word_lists(tmp_path, name, text, message):
    with pytest.raises(PriorError, match=message):
        build_prior(read_prior(write(tmp_path, name, text)), VOCAB, 3, eta=0.1)


@pytest.mark.parametrize("rows,message", [
    ({"topic": [0], "word": ["hate"], "value": [-1.0]}, "not positive finite"),
    ({"topic": [0], "word": ["hate"], "value": [float("inf")]}, "not positive finite"),
    ({"topic": [5], "word": ["hate"], "value": [1.0]}, "topic index 5"),
    ({"topic": [0, 0], "word": ["hate", "hate"], "value": [1.0, 2.0]}, "twice"),
    ({"topic": [0, 1], "word": ["hate", "nope"], "value": [1.0, 2.0]}, "none of the words of topic 'topic 1'"),
    ({"topic": ["anger", "calm"], "word": ["hate", "serene"], "value": [1.0, 2.0]}, "none of the words of topic 'calm'"),
    ({"topic": [0, 1.5], "word": ["hate", "fear"], "value": [1.0, 2.0]}, "topic 1.5 is not a topic index"),
])
def test_bad_sparse_priors(tmp_path, rows, message):
    path = str(tmp_path / "p.parquet")
    pd.DataFrame(rows).to_parquet(path)
    with pytest.raises(PriorError, match=message):
        build_prior(read_prior(path), VOCAB, 3, eta=0.1)


def seed_words_in(words, spec_words, vocab_terms):
    from drivers.models.lda.informed_prior import match_pattern
    terms = np.asarray(vocab_terms)
    order = np.argsort(terms, kind="stable")
    matched = set()
    for w in spec_words:
        matched |= set(terms[match_pattern(w, terms[order], order)].tolist())
    return [w for w in words if w in matched]


def test_seeded_topic_on_real_text(spark_session, sample_corpus, sample_model, tmp_path):
    """The seeded topic is dominated by its seed words and words that co-occur with them;
    the unseeded model (same K, data and seed) has no such topic."""
    from jobs.train import train as train_lda

    corpus, _ = sample_corpus
    prior_file = write(tmp_path, "seed.txt", f"animals: {ANIMALS}\n")
    out = tmp_path / "seeded"
    meta = train_lda(spark_session, train_args(corpus, out, "--topics", 12, "--iterations", 15, "--tol", 0,
                                               "--seed", 1, "--prior", prior_file))
    model = model_store.load_model(str(out))
    assert meta["topic_names"][0] == "animals" and model.topic_names()[0] == "animals"
    assert meta["prior"]["topics"]["animals"]["words_matched"] > 10
    terms = model.vocab["term"].tolist()
    top = [w for w, _ in model.top_words(30)[0]]
    seeded_top10 = seed_words_in(top[:10], ANIMALS.split(), terms)
    assert len(seeded_top10) >= 6, top
    assert len(top) - len(seed_words_in(top, ANIMALS.split(), terms)) >= 5, top   # co-occurring words joined
    unseeded = model_store.load_model(str(sample_model[0]))
    best = max(len(seed_words_in([w for w, _ in words[:10]], ANIMALS.split(), terms))
               for words in unseeded.top_words(10))
    assert best <= 3, unseeded.top_words(10)
    # names in every output: topics.txt, doc_topics.parquet, prior.parquet
    assert (out / "topics.txt").read_text().splitlines()[0].strip().startswith("animals:")
    doc_topics = pd.read_parquet(out / "doc_topics.parquet")
    assert set(doc_topics["top_topic"]) <= set(model.topic_names())
    animals = np.array([dict(m)["animals"] for m in doc_topics["theta_named"]])
    assert dict(doc_topics["theta_named"].iloc[0]).keys() == set(model.topic_names())
    assert animals.max() > 0.05, animals.max()   # some chapters are partly about animals
    prior = pd.read_parquet(out / "prior.parquet")
    assert set(prior["name"]) == {"animals"} and prior.loc[prior["eta"] == 10, "term"].isin(terms).all()
