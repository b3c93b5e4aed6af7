"""Pitman-Yor topic-word vectors on the Gibbs engine (issue 28, pyp-lda): the network sweep whose word side is
phi_k ~ PYP(a, b, nu) for every topic k over one corpus-level word vector nu (a Dirichlet(beta0) root or the fixed
uniform 1/V), with the table counts split by partition.

Global state (the engine's dense V x K tables, summed over partitions): the customers n_wk (``nwk``) and the
table indicators t_wk (``word_tables``); derived: N_k, T_k = sum_w t_wk, the root's customers t_w = sum_k t_wk
and their total. **Indicator ownership**: a table indicator (table-indicator form, Du thesis §3.6) is held by a
customer, so by that customer's partition: a partition keeps its customers n^p_wk (from z) and the indicators
they hold t^p_wk (state ``word_t``, U x K over the block's distinct words; 0 <= t^p <= n^p), and t_wk = sum_p
t^p_wk. A partition's customers may sit at tables whose indicator another partition holds. The moves (001_003
extract §2.4-2.6, as :mod:`inference.pdpnet.kernels`):

* **decrement**: the leaving customer held one of its partition's indicators with probability t^p/n^p (the
  indicators are exchangeable among the partition's customers); a move that would leave the cell's other
  customers without a table (t_wk = 1 < n_wk) is refused (the token stays: an identity move);
* **increment** of word w at topic k: join = S^{c+1}_t / S^c_t (c+1-t)/(c+1) / (b + N_k) and open =
  (b + a T_k)/(b + N_k) S^{c+1}_{t+1} / S^c_t (t+1)/(c+1) nu_w with c = n_wk, t = t_wk (global), nu_w =
  (beta0 + t_w)/(V beta0 + sum t) (:func:`word_zplus`); the token's topic is drawn from Z^+_topic(k) (join +
  open), then open or join;
* **re-seating**: every own customer of every cell leaves and comes back once per cycle (redraws whether it holds
  an indicator; O(1) each against the token step's O(K), so t_wk of a frequent word reaches its equilibrium in a
  few cycles, not one table per cycle as with one customer per cell).

With one partition this is the network sampler exactly (its conditionals are the joint's). With several it is
the AD-LDA approximation the engine uses for every global count: a partition sees the others' counts as of the
last synchronisation. The one consequence for the constraints: two partitions may remove a cell's last
indicators in the same sweep (t_wk = 0 < n_wk after the merge); every partition with customers there then opens
one table for them before its next sweep (the repair, :func:`drivers.models.pdp_network.words_pyp.local_arrays`), and the driver's
steps and every other partition read such a cell as t_wk = 1 (:func:`drivers.models.pdp_network.words_pyp.legal`). A
partition must not read it as t = 0: S^c_0 = 0 for c > 0 makes the cell's join and open terms NaN, and a NaN
sum of weights drew topic 0 for every token of the word (on the WEB chapters with two partitions one topic took
55% of the tokens and the perplexity was 10% worse than one partition's); a weight sum that is not finite and
positive now raises.

The sweep is :func:`inference.pdpnet.word_bigram.bigram_word_sweep` (this side is its special case: every word its
own pair, one context per topic, the root one column); this module keeps the cell's terms and the ownership draws
both sides use.
"""
from __future__ import annotations

import numpy as np
import numba

from inference.gibbs.common import token_kernel
from inference.pdpnet.sweep import ratio_tables


@token_kernel
def base_weight(w, tw, Tsum, beta0, V):
    """nu_w: (beta0 + t_w) / (V beta0 + sum t), or 1/V for the uniform root (beta0 <= 0)."""
    if beta0 <= 0.0:
        return 1.0 / V
    return (beta0 + tw[w]) / (V * beta0 + Tsum)


@token_kernel
def word_terms(c, t, C, T, a, b, nu, RJp, ROp):
    """(join, open) of one word cell (module docstring)."""
    inv = 1.0 / (b + C)
    return RJp[c, t] * inv, (b + a * T) * ROp[c, t] * nu * inv


@numba.njit(cache=True)
def word_zplus(w, nwk, twk, nk, tk, tw, Tsum, a, b, beta0, p, L3):
    """(K,) Z^+ of word w at every topic's vector (join + open), from the Stirling table ``L3`` (tests)."""
    RJ, RO = ratio_tables(L3)
    K = nwk.shape[1]
    nu = base_weight(w, tw, Tsum, beta0, nwk.shape[0])
    out = np.empty(K)
    for k in range(K):
        j, o = word_terms(nwk[w, k], twk[w, k], nk[k], tk[k], a, b, nu, RJ[p], RO[p])
        out[k] = j + o
    return out


@token_kernel
def opens(jn, op):
    """Whether a customer arriving at a word cell with terms (join, open) opens a table; forced (no random
    number, issue 28) when there is no table to join."""
    return jn == 0.0 or np.random.random() * (jn + op) >= jn


@token_kernel
def _leave(w, u, k, own_n, own_t, nwk, twk):
    """Draw whether a leaving own customer of cell (u, k) held a table indicator (its partition's t^p of its
    n^p): 1 yes, 0 no, -1 when that leaves the cell's other customers without a table (refused). Forced (no
    random number, issue 28) when every own customer or none holds an indicator."""
    t = own_t[u, k]
    if t == own_n[u, k] or (t > 0 and np.random.random() * own_n[u, k] < t):
        if twk[w, k] == 1 and nwk[w, k] > 1:
            return -1
        return 1
    return 0
