"""``spark-topics infer`` with a Gibbs model (drivers/families/gibbs/family.py): STM trained on raw text cut into
paragraphs,
then new documents, prepared and raw."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from drivers.preparation.corpus import prepare_corpus
from inference.gibbs.synthetic import stm_corpus
from jobs import infer, train
from test_infer import WORDS, infer_args
from inference.errors import UsageError


def _paragraphs(block, d) -> str:
    """Document d of a SegmentedBlock as text, one paragraph per segment."""
    return "\n\n".join(" ".join(WORDS[w] for w in block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]])
                       for s in range(block.doc_ptr[d], block.doc_ptr[d + 1]))


@pytest.fixture(scope="module")
def stm_model(spark_session, tmp_path_factory):
    root = tmp_path_factory.mktemp("infer_gibbs")
    block, truth = stm_corpus(num_docs=120, num_topics=3, vocab_size=len(WORDS), seg_range=(3, 6),
                              len_range=(8, 15), alpha=0.3, seed=5)
    raw = root / "train.jsonl"
    raw.write_text("".join(json.dumps({"id": str(block.doc_ids[d]), "text": _paragraphs(block, d)}) + "\n"
                           for d in range(block.n_docs)))
    corpus = str(root / "corpus")
    prepare_corpus(spark_session, str(raw), corpus, segments="paragraph", min_df=1, max_df=1.0)
    model_dir = str(root / "model")
    train.train(spark_session, train_args(corpus, model_dir, "--model", "stm", "--topics", 3,
                                                      "--iterations", 20, "--seed", 0, "--partitions", 2))
    return model_dir, corpus, block, root


def _theta(path) -> pd.DataFrame:
    return pd.read_parquet(path).sort_values("doc_id").reset_index(drop=True)


def test_infer_prepared_corpus_matches_the_training_estimates(spark_session, stm_model, tmp_path):
    """On its own training documents the frozen-topic sampler finds the proportions training found; every
    document and segment gets a row, in order."""
    model_dir, corpus, block, _ = stm_model
    result = infer.run(infer_args("--model", model_dir, "--input", corpus, "--output", tmp_path / "out",
                                  "--sweeps", 30))
    assert result["documents"] == block.n_docs and result["segments"] == block.n_segments
    ours, trained = _theta(tmp_path / "out" / "doc_topics.parquet"), _theta(f"{model_dir}/doc_topics.parquet")
    assert list(ours["doc_id"]) == list(trained["doc_id"])
    a, b = np.stack(ours["theta"]), np.stack(trained["theta"])
    np.testing.assert_allclose(a.sum(1), 1.0)
    hellinger = np.sqrt(np.clip(1 - np.sqrt(a * b).sum(1), 0, None))
    shuffled = np.sqrt(np.clip(1 - np.sqrt(a * b[np.random.default_rng(0).permutation(len(b))]).sum(1), 0, None))
    assert hellinger.mean() < 0.15 and hellinger.mean() < 0.4 * shuffled.mean(), (hellinger.mean(), shuffled.mean())
    segments = pd.read_parquet(tmp_path / "out" / "segment_topics.parquet")
    assert len(segments) == block.n_segments
    first = segments[segments["doc_id"] == ours["doc_id"][0]].sort_values("segment")
    assert first["segment"].tolist() == list(range(len(first)))
    # a prepared corpus keeps its segments
    with pytest.raises(UsageError):
        infer.run(infer_args("--model", model_dir, "--input", corpus, "--output", tmp_path / "x",
                             "--segments", "sentence"))


def test_infer_raw_text_is_cut_as_the_training_corpus(spark_session, stm_model, tmp_path, capsys):
    """Raw text is prepared with the model's vocabulary and cut into paragraphs as the training corpus was;
    a document without a known word is counted, not inferred."""
    model_dir, _, block, _ = stm_model
    raw = tmp_path / "new.jsonl"
    raw.write_text(json.dumps({"id": "copy", "text": _paragraphs(block, 0)}) + "\n"
                   + json.dumps({"id": "strange", "text": "zyzzyva quux"}) + "\n")
    result = infer.run(infer_args("--model", model_dir, "--input", raw, "--output", tmp_path / "out"))
    assert result["documents"] == 1 and result["no_known_words"] == 1
    segments = pd.read_parquet(tmp_path / "out" / "segment_topics.parquet")
    assert len(segments) == block.doc_ptr[1] - block.doc_ptr[0]         # the copy's paragraphs
    assert "no known words" in capsys.readouterr().out
