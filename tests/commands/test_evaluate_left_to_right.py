"""``spark-topics evaluate --method left-to-right`` on Spark (drivers/evaluation/left_to_right.py): the figures are the kernel's
per document, summed; the same for any partitioning; out-of-vocabulary tokens counted; through the command line
once (the kernel itself: tests/kernels/test_left_to_right.py; every registered model: test_conformance.py)."""
from __future__ import annotations

import json
import math
import re
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from drivers import registry
from drivers.corpora.segmented import block_from_segments_table
from drivers.families.gibbs.models import open_trained
from drivers.store.model_store import load_model
from inference.left_to_right import LeftToRight, lda_scores
from jobs import evaluate
from jobs.cli import main


@pytest.fixture(scope="module")
def models(tiny_models, tiny_corpora_of_kind):
    """lda-gibbs and lda (variational EM) trained on the tiny segmented corpus: name -> (model dir, corpus)."""
    return {name: (tiny_models[name], tiny_corpora_of_kind[registry.SEGMENTED]) for name in ("lda-gibbs", "lda")}


def _documents(corpus: str):
    """The corpus' documents as one block, sorted by id (text order: segments.parquet)."""
    return block_from_segments_table(pq.read_table(f"{corpus}/segments.parquet"))


def _direct(block, alpha, topic_word, settings) -> float:
    """sum over documents of the kernel's left-to-right log p(w_d), in this process."""
    phi_vk = (topic_word / topic_word.sum(axis=1, keepdims=True)).T
    return float(lda_scores(block.doc_ids, block.token_ptr(), block.words, alpha, phi_vk, settings)[:, 0].sum())


@pytest.mark.parametrize("name", ["lda-gibbs", "lda"])
def test_figures_are_the_kernels_summed_over_documents(spark_session, models, name):
    """Spark's figure equals the kernel run here on every document (seeded by id), whatever the partitioning:
    1 and 3 partitions give the same numbers bit for bit."""
    model_dir, corpus = models[name]
    settings = LeftToRight(particles=3, resample=True, seed=5)
    runs = [evaluate.evaluate_model(spark_session, model_dir, corpus, partitions=p, left_to_right=settings)
            for p in (1, 3)]
    one, three = (r["left_to_right"] for r in runs)
    assert one["loglik"] == three["loglik"] and one["loglik_importance"] == three["loglik_importance"]
    block = _documents(corpus)
    if name == "lda":
        saved = load_model(model_dir)
        alpha, topic_word = saved.alpha, saved.topic_word()
    else:
        saved, _ = open_trained(model_dir, registry)
        alpha, topic_word = np.asarray(saved.meta["hyper"]["alpha"]), saved.lambda_
    assert one["loglik"] == pytest.approx(_direct(block, alpha, topic_word, settings), rel=1e-12)
    assert one["tokens"] == block.n_tokens == 1200 and one["documents"] == 40 and one["skipped_oov"] == 0
    assert one["bits_per_word"] == pytest.approx(-one["loglik"] / (1200 * math.log(2)))
    assert one["token_order"] == "text order" and one["particles"] == 3 and one["resample"] is True
    other = evaluate.evaluate_model(spark_session, model_dir, corpus, left_to_right=LeftToRight(3, True, 6))
    assert other["left_to_right"]["loglik"] != one["loglik"]                # the seed matters


def test_command_line_prints_and_writes_json_with_oov_counted(spark_session, models, tmp_path, capsys):
    """`evaluate --method left-to-right --particles 4 --resample off --json FILE` on a copy of the corpus whose
    documents record out-of-vocabulary tokens that prepare removed: they are counted as skipped."""
    model_dir, corpus = models["lda-gibbs"]
    test = tmp_path / "test_corpus"
    shutil.copytree(corpus, test)
    docs = pq.read_table(f"{test}/docs.parquet")
    oov = np.arange(docs.num_rows, dtype=np.int32) % 3
    shutil.rmtree(f"{test}/docs.parquet")
    (test / "docs.parquet").mkdir()
    pq.write_table(docs.set_column(docs.schema.get_field_index("n_oov"), "n_oov", [oov]),
                   f"{test}/docs.parquet/part-0.parquet")
    path = tmp_path / "l2r.json"
    assert main(["evaluate", "--model", model_dir, "--corpus", str(test), "--method", "left-to-right",
                 "--particles", "4", "--resample", "off", "--seed", "1", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(path.read_text())
    bits = float(re.search(r"left-to-right \(lda-gibbs, 4 particles, resampling off, .*\): ([\d.]+) bits per word",
                           printed).group(1))
    assert report["bits_per_word"] == pytest.approx(bits, abs=5e-5) and 0 < bits < math.log2(30)
    assert report["method"] == {"name": "left-to-right", "particles": 4, "resample": False, "seed": 1,
                                "protocol": report["method"]["protocol"], "token_order": "text order"}
    assert report["method"]["protocol"].startswith("particles")
    assert report["tokens"] == {"scored": 1200, "skipped_oov": int(oov.sum())}
    assert f"{int(oov.sum())} out-of-vocabulary tokens skipped" in printed
    assert report["perplexity"] == pytest.approx(2 ** report["bits_per_word"])
    assert report["model"]["name"] == "lda-gibbs" and "npmi" not in report
