"""p(w | k) of an infinite-vocabulary topic over any strings (drivers/models/infvoc/scoring.py) against a direct
stick-breaking computation: a word of the TOS gets its stick expectation (8.6) plus the leftover stick times G_0, any
other string the leftover times G_0; over every string the mass is 1."""
from __future__ import annotations

import numpy as np
import pandas as pd

from drivers.models.infvoc.model import InfVocModel
from drivers.models.infvoc.scoring import topic_word_over
from inference.infvoc.base_measure import CharNgramBase
from inference.infvoc.tos import OnlineSettings, TopicSet


def model_of(sets):
    base = CharNgramBase.fit(["goal", "match", "team", "bread", "flour", "oven"])
    return InfVocModel(sets, base, np.full(len(sets), 0.5), OnlineSettings(), pd.Index(["goal", "bread"]))


def test_topic_word_over_any_strings_is_the_truncated_stick_plus_g0():
    terms = np.array(["goal", "match", "vuvuzela"], dtype=object)
    nu1, nu2 = np.array([3.0, 2.0, 1.5]), np.array([5.0, 4.0, 6.0])
    model = model_of([TopicSet(terms, nu1, nu2, np.zeros(3), np.zeros(3, dtype=np.int64)), TopicSet.empty()])
    words = ["vuvuzela", "oven", "goal", "zzzz"]
    got = topic_word_over(model, words)
    g0 = np.exp(model.base.log_probs(np.array(words, dtype=object)))
    stick = [nu1[0] / (nu1[0] + nu2[0])]                 # E[b_t] prod_{s<t} E[1 - b_s], slowly
    for t in (1, 2):
        stick.append(nu1[t] / (nu1[t] + nu2[t]) * np.prod([nu2[s] / (nu1[s] + nu2[s]) for s in range(t)]))
    left = np.prod([nu2[s] / (nu1[s] + nu2[s]) for s in range(3)])
    np.testing.assert_allclose(got[0], [stick[2] + left * g0[0], left * g0[1], stick[0] + left * g0[2],
                                        left * g0[3]], rtol=1e-12)
    np.testing.assert_allclose(sum(stick) + left, 1.0, rtol=1e-12)     # TOS mass + leftover = 1
    np.testing.assert_allclose(got[1], g0, rtol=1e-12)                  # an empty topic is G_0
    assert got[0, 0] > 100 * got[1, 0]                   # a word that entered the topic outweighs G_0 alone
