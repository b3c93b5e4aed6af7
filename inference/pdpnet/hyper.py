"""The log of the corrected joint (E12) of a network's state (the hyperparameter steps are in
:mod:`inference.pdpnet.engine_stats`, shared by the in-process sampler and the Gibbs engine)."""
from __future__ import annotations

import math

import numpy as np

from inference.gibbs.pdp import log_poch, log_poch_incr, log_stirling_table
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, KIND_UNIFORM


def log_joint(net, n, tc, tp, Nn, TC, TP, s, Se, avals=None, bvals=None) -> float:
    """log of the corrected (E12) for per-token data (no C^N_n), with constant normalisers kept (Dirichlet
    Beta_K(alpha) and Gamma(sum gamma)/prod Gamma(gamma)), so that it is comparable across states."""
    from scipy.special import gammaln
    avals = net.a_values if avals is None else avals
    bvals = net.b_values if bvals is None else bvals
    total = 0.0
    c_all = n + tc
    for j in range(net.num_nodes):
        sl = slice(net.off[j], net.off[j + 1])
        c = c_all[sl]
        C = int(Nn[j] + TC[j])
        kd = net.kind[j]
        if kd == KIND_DIRICHLET:
            al = net.alpha[j]
            dim = int(net.dim[j])
            total += gammaln(dim * al) - dim * gammaln(al) + gammaln(al + c).sum() - gammaln(dim * al + C)
        elif kd == KIND_UNIFORM:
            total += -C * math.log(net.dim[j])
        elif kd == KIND_PYP:
            a = float(avals[net.a_of[j]])
            b = float(bvals[net.b_of[j]])
            t = tp[sl]
            if b == math.inf:                 # a mixture node: every customer its own table, (b|a)_T/(b)_C = 1
                if np.any(t != c):
                    return -math.inf
            else:
                L = log_stirling_table(a, int(c.max(initial=0)) + 1, int(t.max(initial=0)) + 1)
                total += log_poch_incr(b, a, int(TP[j])) - log_poch(b, C) + float(L[c, t].sum())
            e0, e1 = net.par_ptr[j], net.par_ptr[j + 1]
            g = net.par_gamma[e0:e1]
            if net.gamma_sum[j] < 0:          # fixed weights rho = g: prod_e rho_e^{S_e}
                total += float((Se[e0:e1] * np.log(g)).sum())
            else:
                total += gammaln(g.sum()) - gammaln(g).sum() + gammaln(g + Se[e0:e1]).sum() - gammaln(g.sum() + TP[j])
            # C^t_s per value
            total += gammaln(t + 1.0).sum()
            for e in range(e0, e1):
                total -= gammaln(s[net.eoff[e]:net.eoff[e + 1]] + 1.0).sum()
    return float(total)


__all__ = ["log_joint", "KIND_PYP"]
