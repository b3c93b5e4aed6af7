"""Left-to-right evaluation of any network (Wallach et al. 2009, Alg. 3; thesis Alg. 3.3; issue 28, 3), exact in
the model: every particle carries the document's whole network state, (z, t, s) of its topic side. Pure numba.

A document's topic side starts from the trained model's: its own document and segment vectors empty, a
corpus-level Dirichlet root with the trained tables (hdp-lda's, wallach-as'). Token n of the document:

    1. (``resample``) one sweep of the network sampler's own exact moves over the earlier tokens m < n, in order
       (:func:`kernels.remove_path`'s draw, :func:`sweep.topic_zplus_rows`' Z^+, :func:`ratio_path.path_step_r`;
       at a shared Pitman-Yor vector the document's customers are seated by the restaurant continued from the
       trained counts, which stay: :mod:`inference.pdpnet.doc_restaurant`), given w_<n;
    2. p_n = sum_k P_jt(k) f_n(k): P the predictive of a new customer at the token's topic vector jt given the
       counts (c, t, s), from the roots down (:func:`predictive_rows`):
           Dirichlet root   P_j(k) = (alpha + c_k) / (dim alpha + C),       uniform  P_j(k) = 1 / dim,
           Pitman-Yor       P_j(k) = [(c_k - a t_k) + (b + a T) sum_e rho_e P_parent(e)(k)] / (b + C),
                            rho_e = (gamma_e + S_e) / (sum gamma + T);
       f_n(k) = phi_{k, w_n} / max_k phi_{k, w_n} (the scale's log is added back by the caller);
    3. z_n ~ P_jt(k) f_n(k), and its seating drawn from the same sequential process (:func:`doc_restaurant.doc_add`
       with ``pred``): join a table of k (weight c_k - a t_k) or open one (weight (b + a T) rho_e P_parent(e)(k))
       sent up edge e, and so on.

Why 2 and 3 are not the sampler's Z^+ (001_003 §2.5): the sampler works on the table-indicator form, where a
state's weight carries t!(c - t)!/c! (the customers holding tables labelled uniformly at random), so its Z^+
ratios give the right conditional over k up to a constant but are not the sequential predictive (they do not sum
to one: for one customer at one table of a PYP(0.2, 2) segment over a Dirichlet(0.4) root, 0.70 + 0.16 where the
predictive is 0.84 + 0.16). Given (c, t), the seating is exchangeable, so the chance that the next customer joins
some table of k is E[sum_l (n_l - a)] / (b + C) = (c_k - a t_k) / (b + C) whatever the history: the Chinese
restaurant's predictive above is exact for the state (z, t, s), and the sampler's moves leave p(z, t, s | w_<n)
invariant (tested against enumeration in tests/kernels/test_pdpnet_sampler.py). So each particle's product is
unbiased for the network's p(w | Phi) (tests/kernels/test_pdpnet_left_to_right.py: against an enumeration over
(z, s) with the corrected joint E12; under shared Pitman-Yor vectors for p(w | their trained tables),
tests/kernels/test_pdpnet_shared_left_to_right.py) and the left-to-right estimate is Wallach's.
"""
from __future__ import annotations

import numba
import numpy as np

from inference.pdpnet.doc_restaurant import doc_add, doc_remove, doc_rows
from inference.pdpnet.kernels import DIR, UNI
from inference.pdpnet.rho import rho_den, rho_num
from inference.pdpnet.sweep import draw_topic, topic_scratch


@numba.njit(cache=True, error_model="numpy")
def network_particles(seeds, resample, scaled, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                      par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, n0, tc0, tp0, Nn0, TC0,
                      TP0, s0, Se0, eoff, shared, own_c0, own_t0):
    """(R, N) p_n^(r) of a document's N tokens for every particle r (module docstring), ``scaled`` (N, K) the
    tokens' scaled word factors, ``topic_inst`` (N,) their topic vectors, ``n0 ... Se0`` the counts the document
    starts from (copied per particle), ``RJ, RO, EO`` the ratio tables of a Stirling table covering the document's
    own vectors' cells (N + 3). A shared Pitman-Yor vector (``shared``): the trained (c, t) are the cells' less
    ``own_c0``/``own_t0`` (the document's, empty), and its customers are seated by the restaurant continued from
    them (:mod:`inference.pdpnet.doc_restaurant`)."""
    N, K = scaled.shape
    R = seeds.shape[0]
    J = kind.shape[0]
    Z, terms, Zb, slot, pn, pe, cum, maxpar, maxanc = topic_scratch(par_ptr, anc_ptr, J, K)
    pt = np.empty(J + 1, np.int64)
    mx = np.zeros(2, np.int64)
    z = np.zeros(N, np.int64)
    c0, t0 = trained_cells(shared, off, n0, tc0, tp0, own_c0, own_t0)
    tsize = np.zeros(N * maxanc + 1, np.int64)
    tcell = np.zeros(N * maxanc + 1, np.int64)
    tedge = np.zeros(N * maxanc + 1, np.int64)
    hi = np.zeros(1, np.int64)
    out = np.empty((R, N))
    rows, cols = RJ.shape[1] + 1, RJ.shape[2] + 1
    for r in range(R):
        np.random.seed(seeds[r])
        n, tc, tp, Nn, TC, TP = n0.copy(), tc0.copy(), tp0.copy(), Nn0.copy(), TC0.copy(), TP0.copy()
        s, Se = s0.copy(), Se0.copy()
        grp = np.zeros_like(c0)
        tsize[:] = 0
        hi[0] = 0
        for i in range(N):
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                raise ValueError("network_particles: the Stirling table must cover the document's tokens + 3")
            if resample:
                for m in range(i):
                    jt = topic_inst[m]
                    _, refused = doc_remove(jt, z[m], True, shared, c0, grp, tsize, tcell, tedge, hi, pn, pe, pt,
                                            kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    if refused:                 # the sampler's rule: a move that would leave a cell without a
                        continue                # table is not made (network_sweep does the same; undone)
                    row = doc_rows(jt, K, Zb, slot, shared, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                   par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp, Nn, TC, TP, Se)
                    z[m] = _draw(m, row, Zb, scaled, cum, K, jt, anc_ptr, anc, slot, Z)
                    doc_add(jt, z[m], True, False, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim,
                            off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n,
                            tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            jt = topic_inst[i]
            row = predictive_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                  par_node, par_gamma, gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se)
            total = 0.0
            for k in range(K):
                total += Zb[row, k] * scaled[i, k]
            if not (total > 0.0 and total < np.inf):
                raise FloatingPointError("network_particles: a token's predictive is 0, NaN or inf")
            out[r, i] = total
            z[i] = _draw(i, row, Zb, scaled, cum, K, jt, anc_ptr, anc, slot, Z)
            doc_add(jt, z[i], True, True, Z, terms, shared, c0, t0, grp, tsize, tcell, tedge, hi, kind, dim, off,
                    alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn,
                    TC, TP, s, Se, eoff, mx)
    return out


@numba.njit(cache=True)
def _draw(i, row, Zb, scaled, cum, K, jt, anc_ptr, anc, slot, Z):
    """Token i's topic drawn from ``Zb[row, k] scaled[i, k]``; ``Z`` gets the ancestors' rows at it."""
    total = 0.0
    for k in range(K):
        total += Zb[row, k] * scaled[i, k]
        cum[k] = total
    k = draw_topic(cum, total, K)
    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
        Z[anc[q]] = Zb[slot[anc[q]], k]
    return k


@numba.njit(cache=True)
def trained_cells(shared, off, n0, tc0, tp0, own_c0, own_t0):
    """(c0, t0): the trained customers and tables of every shared Pitman-Yor vector's cells (0 elsewhere), the
    cells' counts less the document's own, which must be empty (its seating there is not known)."""
    c0 = np.zeros_like(tc0)
    t0 = np.zeros_like(tp0)
    for j in range(shared.shape[0]):
        if shared[j]:
            for cell in range(off[j], off[j + 1]):
                if n0[cell] + own_c0[cell] + own_t0[cell] != 0:
                    raise ValueError("left-to-right: the document starts with customers at a shared vector")
                c0[cell] = tc0[cell] - own_c0[cell]
                t0[cell] = tp0[cell] - own_t0[cell]
    return c0, t0


@numba.njit(cache=True)
def predictive_rows(jt, K, P, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                    gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se):
    """``P[r, k]``: the predictive of value k at the r-th ancestor of ``jt`` (ascending ids, parents first;
    ``slot[x]`` = r), each row summing to one (module docstring); returns the row of ``jt``."""
    r = 0
    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
        x = anc[q]
        slot[x] = r
        o = off[x]
        C = Nn[x] + TC[x]
        if kind[x] == DIR:
            den = alpha[x] * dim[x] + C
            for k in range(K):
                P[r, k] = (alpha[x] + (n[o + k] + tc[o + k])) / den
        elif kind[x] == UNI:
            for k in range(K):
                P[r, k] = 1.0 / dim[x]
        else:
            a = avals[a_of[x]]
            b = bvals[b_of[x]]
            T = TP[x]
            den = b + C
            lead = 1.0 if b == np.inf else (b + a * T) / den     # b infinite: a mixture node
            for k in range(K):
                above = 0.0
                for e in range(par_ptr[x], par_ptr[x + 1]):
                    above += rho_num(par_gamma[e], Se[e], gamma_sum[x]) / rho_den(gamma_sum[x], T) * P[
                        slot[par_node[e]], k]
                P[r, k] = (n[o + k] + tc[o + k] - a * tp[o + k]) / den + lead * above
        r += 1
    return r - 1
