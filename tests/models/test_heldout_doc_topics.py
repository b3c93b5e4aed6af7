"""A Gibbs model trained with ``--heldout-fraction`` lists every document of its corpus in doc_topics.parquet (and
segment_topics.parquet): the training split's with ``heldout`` false, the held-out split's with ``heldout`` true,
inferred with the topics fixed; model.json says so (issue 29, 6)."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from conftest import train_args
from drivers import registry
from drivers.corpora.segmented import heldout_condition
from jobs import train
from tiny_corpora import FAMILY_FLAGS

#: one Gibbs model per shape of output (the code is the family's): segment proportions (stm, the model whose
#: doc_topics lacked them), its own per-document table (dp-mixture's clusters), ordered tokens (bigram-lm);
#: lda-gibbs in tests/models/test_gibbs_lda.py
MODELS = ["stm", "dp-mixture", "bigram-lm"]


@pytest.mark.parametrize("name", MODELS)
def test_doc_topics_cover_the_heldout_split(spark_session, tiny_corpora_of_kind, name, tmp_path):
    corpus = tiny_corpora_of_kind[registry.model(name).corpus]
    out = tmp_path / name
    meta = train.train(spark_session, train_args(corpus, out, "--model", name, *FAMILY_FLAGS["gibbs"],
                                                 "--heldout-fraction", 0.3, "--heldout-iterations", 4))
    ids = pd.read_parquet(os.path.join(corpus, "docs.parquet"), columns=["doc_id"])["doc_id"]
    held = {r.doc_id for r in spark_session.read.parquet(os.path.join(corpus, "docs.parquet"))
            .where(heldout_condition(0.3)).select("doc_id").collect()}
    assert 0 < len(held) < len(ids) and meta["heldout"]["documents"] == len(held)

    doc = pd.read_parquet(out / "doc_topics.parquet")
    assert sorted(doc["doc_id"]) == sorted(ids) and doc["doc_id"].is_unique
    assert set(doc.loc[doc["heldout"], "doc_id"]) == held
    assert (~doc["heldout"]).sum() == meta["data"]["documents"] == len(ids) - len(held)
    theta = np.stack(doc["theta"].to_numpy())
    assert theta.shape[1] == meta["topics"]
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    segments = pd.read_parquet(out / "segment_topics.parquet")
    assert set(segments["doc_id"]) == set(ids) and set(segments.loc[segments["heldout"], "doc_id"]) == held
    saved = json.loads((out / "model.json").read_text())
    assert saved["doc_topics"]["heldout_documents"] == len(held) and "every document" in saved["doc_topics"]["covers"]
