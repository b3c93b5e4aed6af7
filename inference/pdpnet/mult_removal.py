"""The multiplicity samplers' removal of a token from a cell in multiplicity form (issue 28; ``"sampler": "cmgs"`` /
``"exact"``), one rule for the kernels that keep such cells (:mod:`.cmgs_owned`'s document cells, :mod:`.word_mult`'s
word cells, :mod:`.cmgs_shared_tokens`' shared vector's, :mod:`.cmgs_owned_words`' both): whether the leaving
customer took its table, and whether a partition may make that move on its own tables."""
from __future__ import annotations

import math

import numpy as np

from inference.gibbs.common import token_kernel

#: test switch of the kernels (``wrong``): 1 the exact removal with t/c (the indicators' probability, wrong at a
#: multiplicity cell)
RIGHT, WRONG_REMOVAL = 0, 1


@token_kernel
def sat_alone(c, t, exact, wrong, L3, q):
    """Whether the leaving customer of a cell with c customers, t tables (before the decrement) takes its table:
    cmgs only when forced (t = c); exact with probability S^{c-1}_{t-1} / S^c_t of the discount ``q``'s log Stirling
    table ``L3[q]`` (no random number at t = c or t = 1 < c)."""
    if t == c:
        return True
    if not exact or t == 1:
        return False
    if wrong == WRONG_REMOVAL:
        return np.random.random() < t / c
    return np.random.random() < math.exp(L3[q, c - 1, t - 1] - L3[q, c, t])


@token_kernel
def own_removal(c, t, mine_t, mine_n, exact, wrong, L3, q):
    """(:func:`sat_alone`, refused): with several partitions a removal that takes a table the partition does not
    hold (``mine_t`` = 0) or keeps one it cannot (``mine_t`` = ``mine_n``, its own customers) is refused (the
    identity; never with one partition, where own = global)."""
    gone = sat_alone(c, t, exact, wrong, L3, q)
    return gone, (gone and mine_t == 0) or (not gone and mine_t == mine_n)
