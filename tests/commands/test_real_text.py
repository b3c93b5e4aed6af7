"""The README's main path on real text: prepare sample_data, train LDA, read the topics back."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.store import model_store



def test_elbo_non_decreasing_on_real_text(sample_model):
    _, meta = sample_model
    elbo = np.array([r["elbo"] for r in meta["elbo_trace"]])
    assert len(elbo) == 15 and np.all(np.isfinite(elbo))
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:])), np.diff(elbo)
    assert elbo[-1] > elbo[0]
    assert meta["eta"] != pytest.approx(1.0 / 12)   # eta was learnt


def test_topics_are_distinct_words_of_the_corpus(sample_model, sample_corpus, capsys):
    out, _ = sample_model
    model = model_store.load_model(str(out))
    tops = model.top_words(10)
    assert len(tops) == 12
    first_words = {words[0][0] for words in tops}
    assert len(first_words) >= 8, tops          # topics are not all the same
    from jobs import topics
    import argparse
    parser = argparse.ArgumentParser()
    topics.add_arguments(parser)
    text = topics.run(parser.parse_args(["--model-dir", str(out), "-n", "5"]))
    assert text.count("\n") == 11 and tops[0][0][0] in text
