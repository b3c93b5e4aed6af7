"""Online LDA with an infinite vocabulary on Spark (drivers/models/infvoc): train over minibatches, refresh a
root with raw documents whose words the base never saw, `topics` marking them; the same model for any number of
partitions; bounded memory under refreshes full of unique junk words, the dropped words remembered."""
from __future__ import annotations

import argparse
import gzip
import json
import os

import numpy as np
import pandas as pd
import pytest

from drivers.models.infvoc import commands as infinite
from drivers.models.infvoc.model import NEW_MARK, InfVocModel
from drivers.preparation.corpus import prepare_corpus
from inference.infvoc import dropped
from spark_jobs import job_count
from jobs import refresh as refresh_job, topics as topics_job, \
    train as train_job

SPORT = ["goal", "match", "team", "player", "score", "league", "coach", "stadium", "referee", "season"]
COOKING = ["flour", "sugar", "oven", "bake", "butter", "recipe", "dough", "salt", "kitchen", "bread"]


def write_docs(path, docs):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for doc_id, words in docs:
            f.write(json.dumps({"id": doc_id, "text": " ".join(words)}) + "\n")
    return path


def themed(rng, prefix, n, extra=None):
    docs = []
    for i in range(n):
        theme = SPORT if i % 2 == 0 else COOKING
        words = list(rng.choice(theme, 14))
        if extra and (i % 2 == 0) == (extra[1] == "sport"):
            words += [extra[0]] * 3
        docs.append((f"{prefix}{i:04d}", words))
    return docs


@pytest.fixture(scope="module")
def base_corpus(spark_session, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("infvoc")
    rng = np.random.default_rng(0)
    # "bpo" in every document: prepare cuts it (df > --max-df 0.5), the model keeps the list (frequent_terms.parquet)
    raw = write_docs(str(tmp / "base.jsonl.gz"), [(d, w + ["bpo"]) for d, w in themed(rng, "a", 80)])
    corpus = str(tmp / "corpus")
    prepare_corpus(spark_session, raw, corpus)
    return tmp, corpus


def parse(job, argv):
    parser = argparse.ArgumentParser()
    job.add_arguments(parser, argv)
    return parser.parse_args(argv)


def train_infinite(spark, corpus, output, *extra):
    args = parse(train_job, ["--corpus", corpus, "--output", output, "--topics", "2", "--vocabulary", "infinite",
                             "--minibatch-size", "20", "--reorder-delay", "2", "--truncation", "30",
                             "--alpha-beta", "50", "--seed", "3", "--tau0", "1", "--kappa", "0.6",
                             "--passes", "1", "--expand", "sampled", *extra])      # Algorithm 4 unless extra says
    return infinite.train(spark, args)


def test_train_refresh_and_topics_mark_new_words(spark_session, base_corpus, capsys):
    tmp, corpus = base_corpus
    model_dir = str(tmp / "model")
    meta = train_infinite(spark_session, corpus, model_dir, "--passes", "2")
    assert meta["minibatches"] == 8 and meta["documents"] == 80      # D counts a document once over the passes
    model = InfVocModel.load(model_dir)
    tops = [{w for w, _, _ in topic} for topic in model.top_words(6)]
    assert sorted(len(t & set(SPORT)) for t in tops) == [0, 6] and sorted(len(t & set(COOKING)) for t in tops) == [0, 6]
    assert all(len(s) <= 20 for s in model.sets)                 # the 20 words of the base, no junk
    assert not model.new_words()
    assert set(pd.read_parquet(os.path.join(model_dir, "doc_topics.parquet"))["doc_id"]) == \
        {f"a{i:04d}" for i in range(80)}

    # a refresh from raw text: "vuvuzela" (sport documents only) was never seen, nothing is re-prepared
    rng = np.random.default_rng(1)
    batch = write_docs(str(tmp / "batch.jsonl.gz"), themed(rng, "b", 40, extra=("vuvuzela", "sport")))
    root = str(tmp / "root")
    report = infinite.refresh(spark_session, parse(refresh_job, ["--model", root, "--base", model_dir, "--input", batch,
                                                 "--vocabulary", "infinite", "--minibatch-size", "20", "--passes", "1"]))
    assert "vuvuzela" in report["new_words"]
    latest = InfVocModel.load(os.path.join(root, "versions", report["version"]))
    sport = int(np.argmax([len({w for w, _, _ in t} & set(SPORT)) for t in latest.top_words(10)]))
    assert "vuvuzela" in set(latest.sets[sport].terms)
    weights = latest.expected_weights(sport)
    rank = list(latest.sets[sport].terms[np.argsort(-weights, kind="stable")]).index("vuvuzela")
    assert rank < 12                                            # one of the sport topic's main words now
    capsys.readouterr()
    text = topics_job.run(parse(topics_job, ["--model-dir", root, "--top-words", "12"]))
    assert "vuvuzela" + NEW_MARK in text and "goal" + NEW_MARK not in text

    # infer and evaluate read the refreshed version, in this process (--master none: no Spark job); the word that
    # entered after the base is scored
    from jobs.cli import main

    test_raw = write_docs(str(tmp / "test.jsonl.gz"), themed(np.random.default_rng(2), "t", 20,
                                                             extra=("vuvuzela", "sport")))
    out = str(tmp / "inferred")
    jobs_before = job_count(spark_session)
    main(["infer", "--model-dir", root, "--input", test_raw, "--output", out, "--master", "none"])
    thetas = pd.read_parquet(os.path.join(out, "doc_topics.parquet")).set_index("doc_id")["theta"]
    assert len(thetas) == 20 and all(np.argmax(thetas[f"t{i:04d}"]) == (sport if i % 2 == 0 else 1 - sport)
                                     for i in range(20))
    test_corpus = os.path.join(out, "corpus")                 # prepared with every word: vuvuzela kept
    scores = {}
    for name, directory in (("base", model_dir), ("refreshed", root)):
        main(["evaluate", "--model-dir", directory, "--corpus", test_corpus, "--master", "none", "--top-words", "5",
              "--output", str(tmp / f"{name}.json")])
        scores[name] = json.load(open(tmp / f"{name}.json"))
    assert job_count(spark_session) == jobs_before
    assert scores["refreshed"]["vocabulary"] == {"corpus_words": 21, "new_to_base": 1, "frequent_words": 0,
                                                 "frequent_tokens": 0}
    assert scores["refreshed"]["perplexity"] < 0.9 * scores["base"]["perplexity"]   # base: vuvuzela from G_0 only
    assert scores["refreshed"]["npmi"] > 0.5


def test_a_second_pass_counts_no_document_twice_in_d(spark_session, base_corpus):
    """D of (7.6), the documents seen so far: a second pass over the base (train or refresh --passes) is the same
    update as continuing with D fixed at the corpus' size; counting the 80 documents again (D = 100..160) was not."""
    from drivers.models.infvoc.commands import corpus_documents
    from drivers.models.infvoc.engine import run_stream
    from drivers.storage import read_vocab

    tmp, corpus = base_corpus
    twice = str(tmp / "twice")
    train_infinite(spark_session, corpus, twice, "--passes", "2")
    once = str(tmp / "once")
    train_infinite(spark_session, corpus, once)
    continued = InfVocModel.load(once)
    continued.settings.corpus_size = 80.0
    documents = corpus_documents(spark_session, corpus, read_vocab(os.path.join(corpus, "vocab.parquet")))
    run_stream(spark_session.sparkContext, continued, documents, 20, 2)    # D fixed: no count to keep
    expected = InfVocModel.load(twice)
    assert continued.minibatches == expected.minibatches == 8
    for a, b in zip(expected.sets, continued.sets):
        assert list(a.terms) == list(b.terms)
        np.testing.assert_allclose(a.nu1, b.nu1, rtol=1e-12)
        np.testing.assert_allclose(a.nu2, b.nu2, rtol=1e-12)
    assert expected.documents == 80

    batch = write_docs(str(tmp / "passes.jsonl.gz"), themed(np.random.default_rng(5), "p", 40))
    report = infinite.refresh(spark_session, parse(refresh_job, ["--model", str(tmp / "passes-root"), "--base", once,
                                                                 "--input", batch, "--vocabulary", "infinite",
                                                                 "--minibatch-size", "20", "--passes", "3"]))
    assert report["minibatches"] == [5, 10]                         # 2 minibatches a pass, 3 passes
    assert InfVocModel.load(os.path.join(str(tmp / "passes-root"), "versions", report["version"])).documents == 120


def test_the_words_the_base_cut_as_too_frequent_stay_out_of_a_refresh(spark_session, base_corpus):
    """Issue 30: "bpo", in every document of the base (prepare cut it) and of the batch, enters no topic at a
    refresh, even with ``--expand every`` (each word of a minibatch into every topic); before, a refresh took every
    word of a batch (on python-news such words were 9% of the later tokens). A word never seen still enters, and the
    version carries the list to the next refresh."""
    tmp, corpus = base_corpus
    model_dir = str(tmp / "model-frequent")
    train_infinite(spark_session, corpus, model_dir)
    assert pd.read_parquet(os.path.join(model_dir, "frequent_terms.parquet")).to_dict("list") == \
        {"term": ["bpo"], "df": [80]}
    docs = themed(np.random.default_rng(6), "f", 20, extra=("vuvuzela", "sport"))
    batch = write_docs(str(tmp / "frequent.jsonl.gz"), [(d, w + ["bpo", "bpo"]) for d, w in docs])
    root = str(tmp / "frequent-root")
    report = infinite.refresh(spark_session, parse(refresh_job, ["--model", root, "--base", model_dir, "--input", batch,
                                                                 "--vocabulary", "infinite", "--minibatch-size", "20",
                                                                 "--expand", "every", "--passes", "1"]))
    version = os.path.join(root, "versions", report["version"])
    model = InfVocModel.load(version)
    assert "vuvuzela" in report["new_words"] and all("vuvuzela" in set(s.terms) for s in model.sets)
    assert "bpo" not in report["new_words"] and not any("bpo" in set(s.terms) for s in model.sets)
    assert os.path.exists(os.path.join(version, "frequent_terms.parquet"))


def test_same_model_for_any_number_of_partitions(spark_session, base_corpus):
    tmp, corpus = base_corpus
    train_infinite(spark_session, corpus, str(tmp / "p1"), "--partitions", "1")
    train_infinite(spark_session, corpus, str(tmp / "p3"), "--partitions", "3", "--reducers", "2")
    one, three = (pd.read_parquet(str(tmp / d / "tos.parquet")) for d in ("p1", "p3"))
    pd.testing.assert_frame_equal(one, three)


def test_refreshes_with_unique_junk_words_keep_memory_bounded_and_remember_the_dropped(spark_session, base_corpus):
    """Two refreshes of 60 documents, each with 5 words never seen before and never seen again: every TOS is cut
    to T = 30 at each reordering (the refreshes end on one), the Bloom filters of dropped words (16 KiB a topic)
    are saved with each version and read by the next refresh, and the themes' words stay in their topics."""
    tmp, corpus = base_corpus
    model_dir = str(tmp / "bloom-base")
    train_infinite(spark_session, corpus, model_dir, "--dropped-words", "bloom")
    root, rng, junk_seen = str(tmp / "bloom-root"), np.random.default_rng(5), []
    for r in range(2):
        docs = themed(rng, f"j{r}", 60)
        junk = [["zq" + "".join(chr(97 + int(c)) for c in f"{r}{i:02d}{j}") for j in range(5)] for i in range(60)]
        junk_seen += [w for words in junk for w in words]
        batch = write_docs(str(tmp / f"junk{r}.jsonl.gz"), [(d, w + j) for (d, w), j in zip(docs, junk)])
        report = infinite.refresh(spark_session, parse(refresh_job, ["--model", root, "--input", batch,
                                                                     "--vocabulary", "infinite", "--minibatch-size",
                                                                     "10", "--passes", "1"] + (["--base", model_dir] if r == 0 else [])))
        assert report["minibatches"] == [5 + 6 * r, 10 + 6 * r] and max(report["tos_sizes"]) <= 30
        version = os.path.join(root, "versions", report["version"])
        assert np.load(os.path.join(version, "dropped.npy"), allow_pickle=False).shape == (2, dropped.BITS // 8)
        model = InfVocModel.load(version)
        assert model.settings.dropped_words == "bloom"
        # every junk word entered some topic's TOS (each token is drawn to a topic) and left them all
        gone = [w for w in junk_seen if not any(w in set(topic.terms) for topic in model.sets)]
        assert len(gone) > 250 * (r + 1)
        assert np.any([dropped.contains(topic.dropped, gone) for topic in model.sets], axis=0).all()
        tops = [{w for w, _, _ in t} for t in model.top_words(8)]
        assert sorted(len(t & set(SPORT)) for t in tops) == [0, 8] and sorted(len(t & set(COOKING)) for t in tops) == [0, 8]


def test_jobs_that_cannot_read_an_infinite_model_refuse_it_in_one_line():
    from drivers import registry
    from inference.errors import RefusedError

    with pytest.raises(RefusedError, match="--vocabulary infinite"):
        registry.of_meta({"model": "lda-infvoc", "vocabulary": "infinite"})


def test_corpus_size_and_dropped_words_flags_set_the_online_settings():
    """train's --corpus-size is D of (7.6) ('cumulative': 0, the documents seen so far); refresh's default keeps
    the model's D and --dropped-words its mode; a bad D is one line."""
    from drivers.models.infvoc.commands import _settings
    from inference.errors import UsageError
    from inference.infvoc.tos import OnlineSettings

    train_argv = ["--corpus", "c", "--output", "o", "--topics", "3", "--vocabulary", "infinite"]
    assert _settings(parse(train_job, train_argv), None).corpus_size == 0
    trained = _settings(parse(train_job, train_argv + ["--corpus-size", "10017", "--dropped-words", "bloom"]), None)
    assert (trained.corpus_size, trained.dropped_words) == (10017.0, "bloom")
    refresh_argv = ["--model", "r", "--input", "i", "--vocabulary", "infinite"]
    kept = _settings(parse(refresh_job, refresh_argv), trained)
    assert (kept.corpus_size, kept.dropped_words) == (10017.0, "bloom")
    assert _settings(parse(refresh_job, refresh_argv + ["--corpus-size", "500"]), trained).corpus_size == 500.0
    assert _settings(parse(refresh_job, refresh_argv), OnlineSettings()).dropped_words == "forget"
    with pytest.raises(UsageError, match="--corpus-size"):
        _settings(parse(refresh_job, refresh_argv + ["--corpus-size", "many"]), trained)



def test_expand_every_puts_each_word_in_every_topic_and_still_separates_themes(spark_session, base_corpus):
    """``--expand every`` (the thesis' code): each of the corpus' 20 words sits in both topics' TOS from the
    minibatch it first came in (T = 30 never cuts), yet the two themes come out as the two topics' top words."""
    tmp, corpus = base_corpus
    model_dir = str(tmp / "model-every")
    meta = train_infinite(spark_session, corpus, model_dir, "--expand", "every")
    assert meta["settings"]["expand"] == "every"
    model = InfVocModel.load(model_dir)
    assert [sorted(s.terms) for s in model.sets] == [sorted(SPORT + COOKING)] * 2
    tops = [{w for w, _, _ in topic} for topic in model.top_words(6)]
    assert sorted(len(t & set(SPORT)) for t in tops) == [0, 6] and sorted(len(t & set(COOKING)) for t in tops) == [0, 6]


def test_reseed_below_reseeds_the_starved_topics_from_minibatch_documents(spark_session, base_corpus, caplog):
    """``--reseed-below`` (issue 30, off by default): 6 topics for 2 themes leave topics starved; at each
    reordering those are re-seeded from documents of the minibatch (the log names them; each such topic's TOS is
    then its document's words), and the setting is saved and kept by a refresh."""
    import logging

    from drivers.models.infvoc.commands import _settings
    from inference.infvoc.tos import OnlineSettings

    tmp, corpus = base_corpus
    model_dir = str(tmp / "model-reseed")
    with caplog.at_level(logging.INFO, logger="spark_topics.infvoc"):
        meta = train_infinite(spark_session, corpus, model_dir, "--topics", "6", "--reseed-below", "0.5")
    assert meta["settings"]["reseed"] == 0.5
    reseeds = [r.getMessage() for r in caplog.records if "re-seeded" in r.getMessage()]
    # U = 2: reorderings at 2 and 4; 4 is the run's last minibatch, so no re-seed there (session 26: a seed saved
    # with no data after it); before, topics were re-seeded at 4 too
    assert reseeds and all(m.startswith("minibatch 2:") for m in reseeds)
    assert InfVocModel.load(model_dir).settings.reseed == 0.5
    refresh_argv = ["--model", "r", "--input", "i", "--vocabulary", "infinite"]
    assert _settings(parse(refresh_job, refresh_argv), OnlineSettings(reseed=0.5)).reseed == 0.5
    assert _settings(parse(refresh_job, refresh_argv), OnlineSettings()).reseed == 0.0
    assert meta["settings"]["reseed_draw"] == "words"                      # h30b: the draw saved and kept as well
    kept = OnlineSettings(reseed=0.5, reseed_draw="uniform")
    assert _settings(parse(refresh_job, refresh_argv), kept).reseed_draw == "uniform"
    assert _settings(parse(refresh_job, refresh_argv + ["--reseed-draw", "uniform"]), None).reseed_draw == "uniform"
    assert meta["settings"]["reseed_against"] == "mean"                    # h30c: what f is a fraction of, kept
    assert _settings(parse(refresh_job, refresh_argv), OnlineSettings(reseed_against="document")).reseed_against \
        == "document"
    assert _settings(parse(refresh_job, refresh_argv + ["--reseed-against", "document"]), None).reseed_against \
        == "document"


def test_the_defaults_are_passes_auto_and_every_and_algorithm_4_stays_reachable():
    """Issue 30: with one pass of a few minibatches the topics do not separate (README, "Defaults"), so ``--passes``
    defaults to 'auto', at least 60 online steps over a corpus or a batch (at most 20 passes), and a new model to
    ``--expand every``; ``--passes 1 --expand sampled`` is Algorithm 4, and a refresh keeps a model's expansion."""
    from types import SimpleNamespace

    from drivers.models.infvoc.commands import _settings, passes_of
    from inference.infvoc.tos import OnlineSettings

    train_argv = ["--corpus", "c", "--output", "o", "--topics", "3", "--vocabulary", "infinite",
                  "--minibatch-size", "155"]
    args = parse(train_job, train_argv)
    # python-news-joined's parts (349-350 documents: 3 minibatches), python-news' (2,504: 17), the whole 10,017
    assert [passes_of(args, n) for n in (1, 349, 350, 2504, 9300, 9301, 10017)] == [20, 20, 20, 4, 1, 1, 1]
    assert _settings(args, None).expand == "every"
    thesis = parse(train_job, train_argv + ["--passes", "1", "--expand", "sampled"])
    assert passes_of(thesis, 10) == 1 and _settings(thesis, None).expand == "sampled"
    refresh_args = parse(refresh_job, ["--model", "r", "--input", "i", "--vocabulary", "infinite"])
    assert passes_of(refresh_args, 40) == 20 and passes_of(SimpleNamespace(passes="3", minibatch_size=9), 1) == 3
    assert _settings(refresh_args, _settings(thesis, None)).expand == "sampled"
    # session 26: a refresh's step, the schedule's by default, kept from the model or given
    assert _settings(refresh_args, None).refresh_weight == "schedule"
    assert _settings(refresh_args, OnlineSettings(refresh_weight="share")).refresh_weight == "share"
    assert _settings(parse(refresh_job, ["--model", "r", "--input", "i", "--vocabulary", "infinite", "--refresh-weight",
                                         "share"]), None).refresh_weight == "share"
    from inference.errors import UsageError
    with pytest.raises(UsageError, match="--passes"):
        passes_of(SimpleNamespace(passes="many", minibatch_size=9), 1)


def test_infer_and_evaluate_leave_out_the_words_the_base_cut_as_too_frequent(spark_session, base_corpus):
    """Issue 30: raw text's "bpo" (cut from the base by prepare, df > --max-df; no refresh takes it in) is not
    scored through G_0 by ``infer`` or ``evaluate``: its tokens count as unknown, and theta is the theta of the same
    documents without it (before, it was scored and moved theta)."""
    from jobs.cli import main

    tmp, corpus = base_corpus
    model_dir = str(tmp / "model-scoring")
    train_infinite(spark_session, corpus, model_dir)
    docs = themed(np.random.default_rng(8), "s", 12)
    thetas, scores = {}, {}
    for name, extra in (("plain", []), ("bpo", ["bpo", "bpo", "bpo"])):
        raw = write_docs(str(tmp / f"scoring-{name}.jsonl.gz"), [(d, w + extra) for d, w in docs])
        out = str(tmp / f"scoring-{name}")
        main(["infer", "--model-dir", model_dir, "--input", raw, "--output", out, "--master", "none"])
        thetas[name] = pd.read_parquet(os.path.join(out, "doc_topics.parquet")).set_index("doc_id")
        main(["evaluate", "--model-dir", model_dir, "--corpus", os.path.join(out, "corpus"), "--master", "none",
              "--top-words", "5", "--output", str(tmp / f"scoring-{name}.json")])
        scores[name] = json.load(open(tmp / f"scoring-{name}.json"))
    assert (thetas["bpo"]["n_unknown"] == 3).all() and (thetas["plain"]["n_unknown"] == 0).all()
    assert (thetas["bpo"]["n_tokens"] == thetas["plain"]["n_tokens"]).all()
    np.testing.assert_allclose(np.stack(thetas["bpo"]["theta"]), np.stack(thetas["plain"]["theta"]), rtol=1e-12)
    assert scores["bpo"]["vocabulary"]["frequent_tokens"] == 36 and scores["bpo"]["vocabulary"]["frequent_words"] == 1
    assert scores["bpo"]["completion"]["heldout_tokens"] == scores["plain"]["completion"]["heldout_tokens"]
