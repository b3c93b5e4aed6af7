"""tlm.json (issue 28: the topic-based language model as a network, phi[topic, previous_word] over psi[topic]) reads
the tokens in text order: refused in one line on a corpus prepared without ``--ordered``, trained on one prepared
with it; its held-out documents scored left to right with the bigram predictive (train's split and evaluate agree)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from drivers import registry
from drivers.families.gibbs.models import corpus_kind, needs_order, needs_segments
from drivers.models.pdp_network.engine_specs import read_spec_file
from drivers.store.model_store import load_model
from inference.errors import UsageError
from jobs.evaluate import evaluate_model
from jobs.train import train

SPEC = registry.MODELS.get("pdp-network")


def test_a_network_indexed_by_previous_word_reads_ordered_tokens():
    for settings in ({"network": "tlm"}, {"network": read_spec_file("tlm")}):
        assert corpus_kind(SPEC, settings) == registry.ORDERED
        assert needs_order(SPEC, settings) and not needs_segments(SPEC, settings)
    assert not needs_order(SPEC, {"network": "lda"}) and needs_segments(SPEC, {"network": "stm"})
    assert needs_order(registry.MODELS.get("tlm")) and not needs_order(registry.MODELS.get("lda-gibbs"))


def test_tlm_network_trains_on_an_ordered_corpus_only(spark_session, tiny_corpora_of_kind, tmp_path):
    from conftest import train_args

    flags = ("--model", "pdp-network", "--network", "tlm", "--topics", 3, "--iterations", 4, "--burn-in", 2,
             "--lag", 1, "--samples", 2, "--seed", 1)
    with pytest.raises(UsageError, match="keeps no word order: prepare it with `spark-topics prepare --ordered`"):
        train(spark_session, train_args(tiny_corpora_of_kind[registry.BAG_OF_WORDS], tmp_path / "bag", *flags))
    model_dir = tmp_path / "tlm"
    corpus = tiny_corpora_of_kind[registry.ORDERED]
    meta = train(spark_session, train_args(corpus, model_dir, *flags, "--heldout-fraction", 0.2))
    hyper = json.loads((model_dir / "model.json").read_text())["hyper"]
    assert hyper["word_pyp"]["bigram"] and hyper["b_values"]["phi.b"] != 100.0
    np.testing.assert_allclose(load_model(str(model_dir)).lambda_.sum(axis=1), 1.0)
    V = load_model(str(model_dir)).lambda_.shape[1]
    # held out (left to right, the bigram predictive): better than uniform over the vocabulary
    assert 1.0 < meta["heldout"]["perplexity"] < V, meta["heldout"]
    assert meta["heldout"]["protocol"].startswith("left to right"), meta["heldout"]      # not document completion
    again = evaluate_model(spark_session, str(model_dir), corpus, seed=1)
    assert again["perplexity"] == pytest.approx(meta["heldout"]["perplexity"], rel=1e-9)


def test_tlm_h2b_network_trains_and_scores_left_to_right(spark_session, tiny_corpora_of_kind, tmp_path):
    """tlm-h2b.json (psi[topic] a DP over a corpus-level Dirichlet root, Wallach's prior 2b): trained on the engine,
    every level's b sampled, its held-out documents scored left to right with psi frozen at its trained predictive
    (train's split and evaluate agree: the frozen psi is saved beside the model)."""
    from conftest import train_args

    model_dir = tmp_path / "h2b"
    corpus = tiny_corpora_of_kind[registry.ORDERED]
    meta = train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network", "tlm-h2b",
                                           "--topics", 3, "--iterations", 4, "--burn-in", 2, "--lag", 1, "--samples",
                                           2, "--seed", 1, "--heldout-fraction", 0.2))
    hyper = json.loads((model_dir / "model.json").read_text())["hyper"]
    assert hyper["word_pyp"]["bottom"][2] == "phi" and hyper["b_values"]["phi.b"] != 100.0 \
        and hyper["b_values"]["psi.b"] != 100.0, hyper["b_values"]
    assert (model_dir / "bigram_psi.npy").exists()
    V = load_model(str(model_dir)).lambda_.shape[1]
    assert 1.0 < meta["heldout"]["perplexity"] < V, meta["heldout"]
    assert meta["heldout"]["protocol"].startswith("left to right"), meta["heldout"]
    again = evaluate_model(spark_session, str(model_dir), corpus, seed=1)
    assert again["perplexity"] == pytest.approx(meta["heldout"]["perplexity"], rel=1e-9)
