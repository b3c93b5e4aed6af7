"""The increment moves of :mod:`inference.pdpnet.kernels` (node terms, Z^+ at the ancestors, the path draw) read
from Stirling ratio tables built once per sweep call instead of exp of log Stirling differences per call (issue
28, 3: the exps of ``add_path`` were a quarter of an STM token step). Operation for operation the same arithmetic
as :func:`kernels.node_terms` (the join table ``RJ`` of :func:`inference.pdpnet.sweep.ratio_tables` and the open
table ``EO`` = exp(log S^{c+1}_{t+1} - log S^c_t) below), so the same draws bit for bit (tested). The sweeps
check the running maxima against the Stirling table before every step, so the tables cover every lookup."""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import PYP, _count, pyp_terms, root_term, seat_at_node, seat_forced, seat_table


@numba.njit(cache=True)
def open_exp_table(L3):
    """``EO[p, c, t]`` = S^{c+1}_{t+1} / S^c_t for every stored (c, t) with t <= c (0 elsewhere)."""
    P, R, M = L3.shape
    EO = np.zeros((P, R - 1, M - 1))
    for p in range(P):
        for c in range(R - 1):
            for t in range(min(c + 1, M - 1)):
                EO[p, c, t] = math.exp(L3[p, c + 1, t + 1] - L3[p, c, t])
    return EO


@token_kernel
def node_terms_r(j, v, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
                 avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se):
    """:func:`kernels.node_terms` from the ratio tables."""
    cell = off[j] + v
    c = n[cell] + tc[cell]
    if kind[j] != PYP:
        return root_term(j, c, Nn[j] + TC[j], terms, kind, dim, alpha)
    p = a_of[j]
    t = tp[cell]
    return pyp_terms(j, c, t, RJ[p, c, t], EO[p, c, t], Z, terms, a_of, b_of, par_ptr, par_node, par_gamma,
                     gamma_sum, avals, bvals, Nn, TC, TP, Se)


@token_kernel
def eval_zplus_r(j, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                 gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se):
    """:func:`kernels.eval_zplus` from the ratio tables."""
    for q in range(anc_ptr[j], anc_ptr[j + 1]):
        x = anc[q]
        Z[x] = node_terms_r(x, v, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                            gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
    return Z[j]


@token_kernel
def add_path_r(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
               avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """:func:`kernels.add_path` from the ratio tables; returns (the node before the path's last, its last node)
    (-1: none before), the path's two highest nodes (parents have smaller ids)."""
    prev = -1
    while True:
        nxt = path_step_r(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                          gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        if nxt < 0:
            return prev, j
        prev = j
        j = nxt
        data = False


@token_kernel
def path_step_r(j, v, data, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum,
                avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx):
    """One node of :func:`add_path_r`: a root counts the customer (returns -1), a Pitman-Yor node seats it by its
    terms (``Z`` holds its parents' Z^+ of v) and returns the parent a new table goes to (-1: joined a table)."""
    cell = off[j] + v
    if kind[j] != PYP:
        _count(j, cell, data, 1, n, tc, Nn, TC, mx, False)
        return -1
    if seat_forced(j, cell, par_ptr, n, tc):
        return par_node[seat_table(j, v, cell, data, par_ptr[j], n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)]
    total = node_terms_r(j, v, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                         gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
    return seat_at_node(j, v, cell, data, terms, total, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
