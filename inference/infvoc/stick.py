"""Stick-breaking expectations of a topic's truncation ordered set, and the word factor of the hybrid local step
(thesis §7.3.2, eqs 7.2-7.4). Pure numpy.

A topic's TOS holds atoms t = 1..T_k with Beta(nu1_kt, nu2_kt) sticks. The expected log weight of atom t is the
stick-breaking expectation the thesis itself uses in (8.6) (the printed (7.3) runs the nu2 sum to s <= t, one term
too far; extract §6.4 and §10):

    E[log beta_kt] = Psi(nu1_kt) - Psi(nu1_kt + nu2_kt) + sum_{s<t} (Psi(nu2_ks) - Psi(nu1_ks + nu2_ks))      (8.6)

A word outside topic k's TOS (t > T_k, the truncation-free case (7.4)) gets the expected log of the stick left
after the truncation, sum_{s<=T_k} (Psi(nu2_ks) - Psi(nu1_ks + nu2_ks)) (the natural reading of (7.4)'s range),
**times G_0(w)**: in the Chinese restaurant the leftover mass opens a new table whose dish is drawn from G_0
(the argument §7.3.3 gives for the ranking score). (7.4) as printed has no G_0 factor; without it a word would be
drawn to the topics that do NOT know it (their leftover, about alpha^beta / (alpha^beta + N_k), is far above any
single word's weight), and a new word with any topic's TOS would never be assigned to that topic. The factor is
the same for every topic that lacks the word, so among those it changes nothing; ``with_base=False`` gives (7.4)
as printed.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma


def expected_log_sticks(nu1: np.ndarray, nu2: np.ndarray) -> tuple[np.ndarray, float]:
    """``(E[log beta_kt] for t = 1..T_k (8.6), E[log of the stick left after T_k] (7.4))`` of one topic."""
    nu1 = np.asarray(nu1, dtype=np.float64)
    nu2 = np.asarray(nu2, dtype=np.float64)
    if nu1.shape[0] == 0:
        return np.zeros(0), 0.0
    total = digamma(nu1 + nu2)
    log_rest = np.cumsum(digamma(nu2) - total)          # sum_{s<=t} E[log(1 - b_ks)]
    before = np.concatenate([[0.0], log_rest[:-1]])      # sum_{s<t}
    return digamma(nu1) - total + before, float(log_rest[-1])


def word_log_weights(words, topic_sets, log_base: np.ndarray, with_base: bool = True) -> np.ndarray:
    """(U, K) log word factor of (7.2) for the words ``words`` (unique strings): E[log beta_{k, T_k(w)}] where w is
    in topic k's TOS (7.3 as 8.6), else the leftover stick's E[log] + log G_0(w) (7.4, module docstring).
    ``topic_sets``: one object per topic with ``index`` (a pandas Index of its terms in TOS order), ``nu1``,
    ``nu2``; ``log_base``: (U,) log G_0 of the words."""
    words = np.asarray(words, dtype=object)
    K = len(topic_sets)
    out = np.empty((words.shape[0], K))
    for k, topic in enumerate(topic_sets):
        e_log, leftover = expected_log_sticks(topic.nu1, topic.nu2)
        position = topic.index.get_indexer(words) if len(topic.index) else np.full(words.shape[0], -1)
        inside = position >= 0
        out[:, k] = leftover + (log_base if with_base else 0.0)
        out[inside, k] = e_log[position[inside]]
    return out
