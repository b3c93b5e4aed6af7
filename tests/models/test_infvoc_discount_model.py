"""``--discount`` on Spark (issue 30, session 27): train and refresh --vocabulary infinite with the sticks'
Pitman-Yor discount d; the model saves and keeps d, a model saved before it loads as d = 0, and the partitions do
not change the model."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest
from test_infvoc_model import COOKING, SPORT, base_corpus, parse, themed, train_infinite, write_docs  # noqa: F401

from drivers.models.infvoc import commands as infinite
from drivers.models.infvoc.commands import _settings
from drivers.models.infvoc.model import InfVocModel
from inference.errors import UsageError
from inference.infvoc.tos import OnlineSettings
from jobs import refresh as refresh_job, train as train_job


def test_discount_is_trained_saved_kept_by_a_refresh_and_absent_means_zero(spark_session, base_corpus):
    tmp, corpus = base_corpus
    one, three = str(tmp / "discount-p1"), str(tmp / "discount-p3")
    meta = train_infinite(spark_session, corpus, one, "--discount", "0.9", "--partitions", "1", "--expand", "every")
    train_infinite(spark_session, corpus, three, "--discount", "0.9", "--partitions", "3", "--reducers", "2",
                   "--expand", "every")
    pd.testing.assert_frame_equal(pd.read_parquet(os.path.join(one, "tos.parquet")),
                                  pd.read_parquet(os.path.join(three, "tos.parquet")))
    assert meta["settings"]["discount"] == 0.9
    model = InfVocModel.load(one)
    assert model.settings.discount == 0.9
    tops = [{w for w, _, _ in topic} for topic in model.top_words(6)]
    assert sorted(len(t & set(SPORT)) for t in tops) == [0, 6] and sorted(len(t & set(COOKING)) for t in tops) == [0, 6]
    # with expand every each topic holds all 20 words; the other theme's hold less than any of its own
    sport = int(np.argmax([len(t & set(SPORT)) for t in tops]))
    held = dict(zip(model.sets[sport].terms, model.sets[sport].nu1))
    assert len(held) == 20 and max(held[w] for w in COOKING) < min(held[w] for w in SPORT)

    batch = write_docs(str(tmp / "discount-batch.jsonl.gz"), themed(np.random.default_rng(5), "c", 40,
                                                                    extra=("vuvuzela", "sport")))
    root = str(tmp / "discount-root")
    report = infinite.refresh(spark_session, parse(refresh_job, ["--model", root, "--base", one, "--input", batch,
                                                                 "--vocabulary", "infinite", "--minibatch-size", "20",
                                                                 "--passes", "1"]))
    assert InfVocModel.load(os.path.join(root, "versions", report["version"])).settings.discount == 0.9

    old = str(tmp / "discount-old")                      # a model.json written before the discount existed
    shutil.copytree(one, old)
    meta_path = os.path.join(old, "model.json")
    saved = json.load(open(meta_path))
    del saved["settings"]["discount"]
    json.dump(saved, open(meta_path, "w"))
    assert InfVocModel.load(old).settings.discount == 0.0


def test_the_discount_flag_sets_the_settings_and_is_checked():
    train_argv = ["--corpus", "c", "--output", "o", "--topics", "2", "--vocabulary", "infinite"]
    refresh_argv = ["--model", "r", "--input", "i", "--vocabulary", "infinite"]
    assert _settings(parse(train_job, train_argv + ["--discount", "0.5"]), None).discount == 0.5
    assert _settings(parse(train_job, train_argv), None).discount == OnlineSettings().discount
    assert _settings(parse(refresh_job, refresh_argv), OnlineSettings(discount=0.7)).discount == 0.7
    assert _settings(parse(refresh_job, refresh_argv + ["--discount", "0"]), OnlineSettings(discount=0.7)).discount \
        == 0.0
    for bad in ("1", "-0.2"):
        with pytest.raises(UsageError, match="discount"):
            _settings(parse(train_job, train_argv + ["--discount", bad]), None)
