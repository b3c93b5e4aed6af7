"""Slow, direct references for the network sampler tests: the corrected joint (E12) from (z, s) alone, its
table-indicator form, and the enumeration of every legal (z, s) of a tiny network."""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import gammaln

from inference.gibbs.pdp import log_stirling_table
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, KIND_UNIFORM


def counts_of(net, z, s):
    """(n, tc, tp) per cell recomputed from z and s only."""
    ncell = net.num_cells
    n = np.zeros(ncell, np.int64)
    for i, k in enumerate(z):
        n[net.off[net.topic_inst[i]] + k] += 1
        n[net.off[net.word_inst[i, k]] + net.words[i]] += 1
    tc = np.zeros(ncell, np.int64)
    tp = np.zeros(ncell, np.int64)
    child = np.repeat(np.arange(net.num_nodes), np.diff(net.par_ptr))
    for e in range(len(net.par_node)):
        se = np.asarray(s[net.eoff[e]:net.eoff[e + 1]])
        p, c = net.par_node[e], child[e]
        tc[net.off[p]:net.off[p + 1]] += se
        tp[net.off[c]:net.off[c + 1]] += se
    return n, tc, tp


def reference_log_joint(net, z, s, avals=None, bvals=None, indicators=False, literal=False):
    """log (E12), corrected (roots over E_j empty, (b)_{N_j + sum_k t^c_jk}), per-token data, normalisers kept;
    ``indicators``: the table-indicator form, C^t_s replaced by t!(c-t)!/c! per cell (Du thesis (3.18)).
    ``literal``: the paper's printed denominator (b)_{N_j + sum_k t^p_jk} (the typo the extract corrects), for
    showing that the tests can tell the two apart. -inf for a state that breaks (E10)/(E11)."""
    avals = net.a_values if avals is None else avals
    bvals = net.b_values if bvals is None else bvals
    n, tc, tp = counts_of(net, z, s)
    total = 0.0
    for j in range(net.num_nodes):
        lo, hi = net.off[j], net.off[j + 1]
        c = n[lo:hi] + tc[lo:hi]
        C = int(c.sum())
        if net.kind[j] == KIND_DIRICHLET:
            al, K = net.alpha[j], int(net.dim[j])
            total += gammaln(K * al) - K * gammaln(al) + sum(gammaln(al + x) for x in c) - gammaln(K * al + C)
            continue
        if net.kind[j] == KIND_UNIFORM:
            total -= C * math.log(net.dim[j])
            continue
        a, b = float(avals[net.a_of[j]]), float(bvals[net.b_of[j]])
        t = tp[lo:hi]
        if np.any(t > c) or np.any((t == 0) != (c == 0)):
            return -math.inf
        T = int(t.sum())
        if b == math.inf:                 # a mixture node: legal only with t = c, where (b|a)_T/(b)_C S^c_c = 1
            if np.any(t != c):
                return -math.inf
        else:
            cust = int(n[lo:hi].sum()) + T if literal else C
            total += sum(math.log(b + m * a) for m in range(T)) - (gammaln(b + cust) - gammaln(b))
            L = log_stirling_table(a, int(c.max()) + 2, int(c.max()) + 2)
            total += sum(L[x, y] for x, y in zip(c, t))
        edges = range(net.par_ptr[j], net.par_ptr[j + 1])
        g = np.array([net.par_gamma[e] for e in edges])
        S = np.array([sum(s[net.eoff[e]:net.eoff[e + 1]]) for e in edges])
        if net.gamma_sum[j] < 0:                  # fixed mixing weights rho = g ("weights": "uniform")
            total += float((S * np.log(g)).sum())
        else:
            total += gammaln(g.sum()) - gammaln(g).sum() + gammaln(g + S).sum() - gammaln(g.sum() + T)
        for v in range(hi - lo):
            sv = [s[net.eoff[e] + v] for e in edges]
            if indicators:
                total += gammaln(t[v] + 1) + gammaln(c[v] - t[v] + 1) - gammaln(c[v] + 1)
            else:
                total += gammaln(t[v] + 1) - sum(gammaln(x + 1) for x in sv)
    return float(total)


def _compositions(total, parts):
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def enumerate_states(net, literal=False):
    """Every legal (z, s) of the network: list of (z tuple, s tuple, log E12)."""
    N, K = len(net.words), net.K
    J = net.num_nodes
    pyp = [j for j in range(J) if net.kind[j] == KIND_PYP]
    out = []
    for z in itertools.product(range(K), repeat=N):
        n = np.zeros(net.num_cells, np.int64)
        for i, k in enumerate(z):
            n[net.off[net.topic_inst[i]] + k] += 1
            n[net.off[net.word_inst[i, k]] + net.words[i]] += 1
        s0 = np.zeros(int(net.eoff[-1]), np.int64)

        def fill(idx, s, tc):
            if idx < 0:
                out.append((tuple(z), tuple(int(x) for x in s)))
                return
            j = pyp[idx]
            lo = net.off[j]
            edges = list(range(net.par_ptr[j], net.par_ptr[j + 1]))
            options = []
            for v in range(int(net.dim[j])):
                c = n[lo + v] + tc[lo + v]
                opts = []
                for t in (range(1, c + 1) if c > 0 else [0]):
                    opts.extend(_compositions(t, len(edges)))
                options.append(opts)
            for choice in itertools.product(*options):
                s2, tc2 = s.copy(), tc.copy()
                for v, split in enumerate(choice):
                    for e, x in zip(edges, split):
                        s2[net.eoff[e] + v] = x
                        p = net.par_node[e]
                        tc2[net.off[p] + v] += x
                fill(idx - 1, s2, tc2)

        fill(len(pyp) - 1, s0, np.zeros(net.num_cells, np.int64))
    return [(z, s, reference_log_joint(net, z, s, literal=literal)) for z, s in out]
