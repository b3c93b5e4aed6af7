"""Hyperparameters of a network: concentrations b by auxiliary variables ([001] §3.3, E18-E21) and discounts a by
slice sampling (the paper gives no sampler for a), and the log of the corrected joint (E12).

b (one parameter, shared by the Pitman-Yor vectors that name it): with q_j ~ Beta(b, C_j) for every vector with
C_j > 0 customers, the b-conditional is prod_j (b|a_j)_{T_j} exp(-b sum_j log 1/q_j) times the prior 1/b (the
project's convention, as STM/SeqLDA); when every a_j = 0 that is Gamma(sum_j T_j, rate sum_j log 1/q_j) (E20),
otherwise one slice-sampling update of log b (Neal 2003: stepping out, shrinkage), exact.

a (one discount parameter): a uniform prior on [0, 1); the conditional is prod_j (b_j|a)_{T_j}
prod_k S^{c_jk}_{t_jk, a} over the vectors that name it; one slice-sampling update on [0, 1) with the Stirling
numbers computed afresh for every a evaluated (O(max c * max t) each).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from inference.gibbs.pdp import log_poch, log_poch_incr, log_stirling_table
from inference.pdpnet.compile import KIND_DIRICHLET, KIND_PYP, KIND_UNIFORM

B_MIN, B_MAX = 1e-3, 1e6


@numba.njit(cache=True)
def _log_b_density(x, avec, Tvec, sum_log_q):
    b = math.exp(x)
    s = b * sum_log_q
    for r in range(Tvec.shape[0]):
        s += log_poch_incr(b, avec[r], Tvec[r])
    return s


@numba.njit(cache=True)
def sample_concentration(b, avec, Tvec, Cvec, seed):
    """One update of a shared concentration b from the vectors' (a_j, T_j, C_j) (module docstring)."""
    np.random.seed(seed)
    sum_t = 0
    sum_log_q = 0.0
    all_zero = True
    for r in range(Tvec.shape[0]):
        if Cvec[r] == 0:
            continue
        q = np.random.beta(b, Cvec[r])
        sum_log_q += math.log(max(q, 1e-300))
        sum_t += Tvec[r]
        if avec[r] != 0.0:
            all_zero = False
    if sum_t == 0:
        return b
    if all_zero:
        return min(max(np.random.gamma(sum_t, 1.0 / max(-sum_log_q, 1e-300)), B_MIN), B_MAX)
    x0 = math.log(b)
    logy = _log_b_density(x0, avec, Tvec, sum_log_q) + math.log(1.0 - np.random.random())
    left = x0 - np.random.random()
    right = left + 1.0
    lo_lim, hi_lim = math.log(B_MIN), math.log(B_MAX)
    steps = 0
    while left > lo_lim and steps < 50 and _log_b_density(left, avec, Tvec, sum_log_q) > logy:
        left -= 1.0
        steps += 1
    steps = 0
    while right < hi_lim and steps < 50 and _log_b_density(right, avec, Tvec, sum_log_q) > logy:
        right += 1.0
        steps += 1
    left = max(left, lo_lim)
    right = min(right, hi_lim)
    x_new = x0
    for _ in range(200):
        x = left + (right - left) * np.random.random()
        if _log_b_density(x, avec, Tvec, sum_log_q) > logy:
            x_new = x
            break
        if x < x0:
            left = x
        else:
            right = x
    return min(max(math.exp(x_new), B_MIN), B_MAX)


def discount_log_density(a: float, c: np.ndarray, t: np.ndarray, bvec: np.ndarray, Tvec: np.ndarray) -> float:
    """log of prod_j (b_j|a)_{T_j} prod_cells S^{c}_{t, a} (the a-dependent part of E12)."""
    if not 0.0 <= a < 1.0:
        return -math.inf
    L = log_stirling_table(a, int(c.max(initial=0)) + 1, int(t.max(initial=0)) + 1)
    s = float(L[c, t].sum())
    for b, T in zip(bvec, Tvec):
        s += log_poch_incr(float(b), a, int(T))
    return s


def sample_discount(a: float, c: np.ndarray, t: np.ndarray, bvec: np.ndarray, Tvec: np.ndarray,
                    rng: np.random.Generator) -> float:
    """One slice-sampling update of a discount on [0, 1) (uniform prior) given the occupied cells (c, t) and the
    vectors' (b_j, T_j) of the vectors that use it."""
    f0 = discount_log_density(a, c, t, bvec, Tvec)
    logy = f0 + math.log(1.0 - rng.random())
    left, right = 0.0, 1.0 - 1e-9
    for _ in range(100):
        x = left + (right - left) * rng.random()
        if discount_log_density(x, c, t, bvec, Tvec) > logy:
            return x
        if x < a:
            left = x
        else:
            right = x
    return a


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
            L = log_stirling_table(a, int(c.max(initial=0)) + 1, int(t.max(initial=0)) + 1)
            total += log_poch_incr(b, a, int(TP[j])) - log_poch(b, C) + float(L[c, t].sum())
            e0, e1 = net.par_ptr[j], net.par_ptr[j + 1]
            g = net.par_gamma[e0:e1]
            total += gammaln(g.sum()) - gammaln(g).sum() + gammaln(g + Se[e0:e1]).sum() - gammaln(g.sum() + TP[j])
            # C^t_s per value
            total += gammaln(t + 1.0).sum()
            for e in range(e0, e1):
                total -= gammaln(s[net.eoff[e]:net.eoff[e + 1]] + 1.0).sum()
    return float(total)


__all__ = ["sample_concentration", "sample_discount", "discount_log_density", "log_joint", "KIND_PYP"]
