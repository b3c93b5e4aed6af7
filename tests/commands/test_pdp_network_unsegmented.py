"""A network that indexes no vector by segment trains, evaluates and infers on a corpus prepared without
``--segments`` (each document one segment); one that does is refused up front in one line (issue 28, 3: every
shipped spec works; a new user's first corpus has no segments)."""
from __future__ import annotations

import numpy as np
import pytest

from drivers import registry
from drivers.families.gibbs.models import needs_segments
from inference.errors import UsageError
from jobs.evaluate import evaluate_model
from jobs.train import train

SPEC = registry.MODELS.get("pdp-network")
#: every shipped spec, and whether it reads segments
SHIPPED_SEGMENTS = {"lda": False, "hdp-lda": False, "pyp-lda": False, "pyp-lda-2": False, "wallach-as": False,
                    "hdp-pyp-lda": False, "author-topic": False, "tlm": False, "tlm-h2b": False, "hca": False,
                    "hca-2": False, "burst-lda": False, "burst-pyp-lda": False, "hca-burst": False,
                    "topic-transition": False, "pyp-lda-3": False, "pyp-lda-mix": False,
                    "stm": True, "seqlda": True, "adatm": True}


@pytest.mark.parametrize("network, segments", sorted(SHIPPED_SEGMENTS.items()))
def test_which_shipped_networks_read_segments(network, segments):
    from drivers.models.pdp_network.engine_specs import SHIPPED, read_spec_file

    assert sorted(p.stem for p in SHIPPED.glob("*.json")) == sorted(SHIPPED_SEGMENTS)     # every shipped spec here
    assert needs_segments(SPEC, {"network": network}) is segments
    assert needs_segments(SPEC, {"network": read_spec_file(network)}) is segments      # model.json's hyper
    assert needs_segments(registry.MODELS.get("stm")) and not needs_segments(registry.MODELS.get("lda-gibbs"))


def test_a_network_without_segments_runs_on_an_unsegmented_corpus(spark_session, tmp_path):
    from conftest import sample_lda_corpus, train_args, write_corpus

    docs, _ = sample_lda_corpus(n_docs=40, n_topics=3, vocab_size=15, doc_length=12, alpha=0.3, eta=0.1, seed=3)
    corpus = write_corpus(spark_session, str(tmp_path / "corpus"), docs, [f"w{i:02d}" for i in range(15)])
    with pytest.raises(UsageError, match="has no segments: prepare it with `spark-topics prepare --segments"):
        train(spark_session, train_args(corpus, tmp_path / "stm", "--model", "pdp-network", "--network", "stm",
                                        "--topics", 3, "--iterations", 2))
    model_dir = str(tmp_path / "hdp")
    meta = train(spark_session, train_args(corpus, model_dir, "--model", "pdp-network", "--network", "hdp-lda",
                                           "--topics", 3, "--iterations", 4, "--burn-in", 2, "--lag", 1,
                                           "--samples", 2, "--seed", 1))
    assert meta["data"]["documents"] == 40
    metrics = evaluate_model(spark_session, model_dir, corpus)
    assert 1.0 < metrics["perplexity"] < 15 and np.isfinite(metrics["perplexity"])
