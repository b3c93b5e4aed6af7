"""A word side indexed by [topic, column:NAME] on the Gibbs engine (issue 28; Chen, Buntine et al.'s differential
topic models): phi[k, g] ~ PYP(a, b, phi0_k) per topic and value g of a document's kept column, phi0_k ~ PYP over
the uniform, a Dirichlet root or a chain of corpus-level Pitman-Yor word vectors (:mod:`inference.pdpnet.
word_chain`, whose level 0 phi0 is here: its customers are the tables of the phi[k, g] above it).

The bottom level's cells are the pairs (g, w) of a partition's tokens: customers ``bn`` and indicators ``bt`` (P x
K, global), the restaurants (g, k) ``BN``/``BT`` (G x K), the partition's own ``own_bn`` (its tokens) and
``own_bt``. The moves are the network sampler's with its random numbers in its order (one partition: draw for
draw, tested): a token leaves its pair's cell (held one of its partition's indicators with probability t^p/c^p,
then leaves phi0 and up as :func:`word_chain.leave`), Z^+ = join_b + open_b Z_phi0(k), the path drawn from the
bottom up; after the tokens, the topic side's and the corpus levels' re-seating, one own customer of every phi0
cell with more than one customer is re-seated, topic by topic, words ascending (the network sampler's order).
Several partitions: the AD-LDA staleness and the race rule at every level (:mod:`drivers.models.pdp_network.words_column`)."""
from __future__ import annotations

import numba
import numpy as np

from inference.pdpnet.word_stack import stack_word_sweep


@numba.njit(cache=True, error_model="numpy")
def column_word_sweep(start, reseed, seed, pidx, pword, pval, z, topic_inst, anc_ptr, anc, kind, dim, off, alpha,
                      a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp, Nn, TC, TP, s,
                      Se, eoff, mx, bn, bt, BN, BT, own_bn, own_bt, nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n,
                      own_t, own_c, own_up, pb, bb, gb, pl, bl, gl, gsl, beta0, V):
    """One cycle from ``start`` (module docstring); token i's pair ``pidx[i]``, a pair's word (row of ``nloc``)
    ``pword`` and value ``pval``; the bottom level's discount ``avals[pb]``, concentration ``bvals[bb]``, parent
    gamma ``gb``; phi0 and the corpus levels' as :func:`word_chain.chain_word_sweep`'s. Returns -1 when done or
    the position to resume from once the Stirling table covers max c + 2 and max t + 2 (``mx``)."""
    P, K, G = bn.shape[0], bn.shape[1], BN.shape[0]
    return stack_word_sweep(start, reseed, seed, pidx, pword, pval, z, topic_inst, anc_ptr, anc, kind, dim, off,
                            alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, L3, n, tc, tp,
                            Nn, TC, TP, s, Se, eoff, mx, bn.reshape((1, P, K)), bt.reshape((1, P, K)),
                            BN.reshape((1, G, K)), BT.reshape((1, G, K)), own_bn.reshape((1, P, K)),
                            own_bt.reshape((1, P, K)), nloc, tloc, Nk, Tk, cup, tup, Cup, Tup, own_n, own_t, own_c,
                            own_up, np.full(1, pb, np.int64), np.full(1, bb, np.int64), np.full(1, gb, np.float64),
                            pl, bl, gl, gsl, beta0, V)
