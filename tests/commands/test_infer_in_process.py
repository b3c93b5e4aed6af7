"""``infer`` of a small input without Spark (:mod:`drivers.families.variational.infer_in_process`): the same
``doc_topics.parquet`` as the Spark job, number for number, for raw text with a document of unknown words only
and for one language of a polylingual model (a prepared corpus of every monolingual model: the conformance
suite); ``--master none`` starts no Spark job and names what needs Spark."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from drivers import registry
from drivers.preparation.corpus import prepare_corpus
from jobs import infer, train
from jobs.infer import InferRequest
from spark_jobs import counted_jobs, job_count
from test_prepare import records, write_jsonl
from tiny_corpora import FAMILY_FLAGS


@pytest.fixture(scope="module")
def models(spark_session, tiny_models, tmp_path_factory):
    """The tiny lda and polylda (tests/shared_runs.py) and ``words``, a model of words (the tiny corpora's terms
    hold digits, which the tokenizer drops) for raw text, made once per run by whichever pytest-xdist worker needs
    it first."""
    import shutil

    from shared_runs import made_once, run_folder

    root = run_folder(tmp_path_factory) / "infer_in_process"
    out = {name: tiny_models[name] for name in ("lda", "polylda")}
    out["words"] = str(root / "words")
    with made_once(root) as make:
        if make:
            shutil.rmtree(root, ignore_errors=True)         # a make that failed half-way
            root.mkdir()
            rng = np.random.default_rng(5)
            words = [a + b for a in ("apple", "pear", "plum", "fig", "kiwi")
                     for b in ("", "tree", "leaf", "jam", "pie")]
            texts = {f"d{i:02d}": " ".join(rng.choice(words, size=30)) for i in range(40)}
            prepare_corpus(None, write_jsonl(root / "fruit.jsonl", records(texts)), str(root / "fruit"),
                           "in-process", min_df=1, max_df=1.0, language="none")
            train.train(spark_session, train_args(str(root / "fruit"), out["words"], *FAMILY_FLAGS["variational"]))
    return out


def doc_topics(path) -> pd.DataFrame:
    return pd.read_parquet(path).reset_index(drop=True)


#: the Spark jobs of a variational infer of a prepared monolingual corpus: Parquet's schema, the range partitioner's
#: sample of the ids, the documents' shuffle, the tasks that fold them in and write their parts (it was 15)
INFER_JOBS = 4


def both(spark, model_dir, input_path, tmp_path, lang=None):
    results, tables = {}, {}
    for runs_on in ("spark", "in-process"):
        out = tmp_path / runs_on
        request = InferRequest(model_dir, str(input_path), str(out), lang=lang, runs_on=runs_on)
        with counted_jobs(spark) as ran:
            results[runs_on] = infer.infer(spark, request)
        assert (len(ran) == 0) == (runs_on == "in-process"), (runs_on, str(ran))
        if runs_on == "spark" and lang is not None:     # a prepared corpus (raw text is prepared on Spark first)
            assert len(ran) <= INFER_JOBS, f"infer ran {len(ran)} Spark jobs:\n{ran}"
        tables[runs_on] = doc_topics(out / "doc_topics.parquet")
    pd.testing.assert_frame_equal(tables["in-process"], tables["spark"], check_exact=True)
    assert {k: v for k, v in results["in-process"].items() if k != "output"} == \
        {k: v for k, v in results["spark"].items() if k != "output"}
    return tables["in-process"]


# a prepared corpus: every monolingual model's infer in this process against its Spark job, in the conformance
# suite (tests/commands/test_conformance.py, _same_without_spark: the same tiny models on the same corpora)


def test_raw_text_with_unknown_words_gives_the_spark_jobs_table(spark_session, models, tmp_path):
    vocab = pd.read_parquet(f"{models['words']}/vocab.parquet").sort_values("id").term.tolist()
    raw = write_jsonl(tmp_path / "new.jsonl", records({
        "known": " ".join(vocab[:6] + vocab[:3]),
        "mixed": " ".join(vocab[-4:]) + " zzzunknown words",
        "unknown": "zzzunknown qqqnever",
    }))
    table = both(spark_session, models["words"], raw, tmp_path)
    assert table.doc_id.tolist() == ["known", "mixed", "unknown"]
    assert table.no_known_words.tolist() == [False, False, True]


def test_one_language_of_a_polylingual_model(spark_session, models, tiny_corpora_of_kind, tmp_path):
    import os

    corpus = tiny_corpora_of_kind[registry.ALIGNED]
    language = sorted(d for d in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, d, "corpus.json")))[0]
    both(spark_session, models["polylda"], os.path.join(corpus, language), tmp_path, lang=language)


def test_master_none_names_what_needs_spark(spark_session, models, tiny_corpora_of_kind, tmp_path, capsys):
    from jobs.cli import main

    corpus = tiny_corpora_of_kind[registry.BAG_OF_WORDS]
    jobs_before = job_count(spark_session)
    main(["infer", "--model", models["lda"], "--input", corpus, "--output", str(tmp_path / "out"),
          "--master", "none"])
    assert "inferred topic proportions of" in capsys.readouterr().out
    assert job_count(spark_session) == jobs_before
    with pytest.raises(SystemExit, match="without Spark: an aligned corpus of a polylingual model"):
        main(["infer", "--model", models["polylda"], "--input", tiny_corpora_of_kind[registry.ALIGNED],
              "--output", str(tmp_path / "aligned"), "--master", "none"])
    with pytest.raises(SystemExit, match="--master none: spark-topics train runs on Spark"):
        main(["train", "--corpus", corpus, "--output", str(tmp_path / "m"), "--topics", "2", "--master", "none"])


def test_blocks_of_documents_give_the_same_table_and_a_progress_line(models, tmp_path, monkeypatch, caplog):
    """The fold-in in blocks of a few documents gives the one-block table bit for bit, with a progress line per
    block when each takes longer than the line's interval (a clock that moves 11 s per look)."""
    import itertools
    import logging
    import time

    from drivers.families.variational.infer_in_process import infer_in_process
    from drivers.store.model_store import load_model

    model = load_model(models["lda"])
    corpus = model.meta["data"]["corpus"]                  # the tiny corpus it was trained on
    infer_in_process(model, corpus, str(tmp_path / "one"))
    ticks = itertools.count(0.0, 11.0)
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks))
    with caplog.at_level(logging.INFO, logger="spark_topics.infer"):
        infer_in_process(model, corpus, str(tmp_path / "blocks"), block_documents=7)
    pd.testing.assert_frame_equal(doc_topics(tmp_path / "blocks" / "doc_topics.parquet"),
                                  doc_topics(tmp_path / "one" / "doc_topics.parquet"), check_exact=True)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("infer: document blocks")]
    assert lines and "left" in lines[0], lines
