"""Left-to-right evaluation of any network (Wallach et al. 2009, Alg. 3; thesis Alg. 3.3; issue 28, 3), exact in
the model: every particle carries the document's whole network state, (z, t, s) of its topic side. Pure numba.

A document's topic side starts from the trained model's: its own document and segment vectors empty, a
corpus-level Dirichlet root with the trained tables (hdp-lda's, wallach-as'). Token n of the document:

    1. (``resample``) one sweep of the network sampler's own exact moves over the earlier tokens m < n, in order
       (:func:`kernels.remove_path`, :func:`sweep.topic_zplus_rows`, :func:`ratio_path.add_path_r`; at a shared
       Pitman-Yor vector the document's own indicators move, the trained ones stay: :mod:`inference.pdpnet.owned`),
       given w_<n;
    2. p_n = sum_k P_jt(k) f_n(k): P the predictive of a new customer at the token's topic vector jt given the
       counts (c, t, s), from the roots down (:func:`predictive_rows`):
           Dirichlet root   P_j(k) = (alpha + c_k) / (dim alpha + C),       uniform  P_j(k) = 1 / dim,
           Pitman-Yor       P_j(k) = [(c_k - a t_k) + (b + a T) sum_e rho_e P_parent(e)(k)] / (b + C),
                            rho_e = (gamma_e + S_e) / (sum gamma + T);
       f_n(k) = phi_{k, w_n} / max_k phi_{k, w_n} (the scale's log is added back by the caller);
    3. z_n ~ P_jt(k) f_n(k), and its seating drawn from the same sequential process (:func:`seat_new`): join a
       table of k (weight c_k - a t_k) or open one (weight (b + a T) rho_e P_parent(e)(k)) sent up edge e, and so on.

Why 2 and 3 are not the sampler's Z^+ (001_003 §2.5): the sampler works on the table-indicator form, where a
state's weight carries t!(c - t)!/c! (the customers holding tables labelled uniformly at random), so its Z^+
ratios give the right conditional over k up to a constant but are not the sequential predictive (they do not sum
to one: for one customer at one table of a PYP(0.2, 2) segment over a Dirichlet(0.4) root, 0.70 + 0.16 where the
predictive is 0.84 + 0.16). Given (c, t), the seating is exchangeable, so the chance that the next customer joins
some table of k is E[sum_l (n_l - a)] / (b + C) = (c_k - a t_k) / (b + C) whatever the history: the Chinese
restaurant's predictive above is exact for the state (z, t, s), and the sampler's moves leave p(z, t, s | w_<n)
invariant (tested against enumeration in tests/kernels/test_pdpnet_sampler.py). So each particle's product is
unbiased for the network's p(w | Phi) (tests/kernels/test_pdpnet_left_to_right.py: against an enumeration over
(z, s) with the corrected joint E12) and the left-to-right estimate is Wallach's.
"""
from __future__ import annotations

import numba
import numpy as np

from inference.pdpnet.kernels import DIR, PYP, UNI, seat_table
from inference.pdpnet.owned import owned_add, owned_remove
from inference.pdpnet.rho import rho_den, rho_num
from inference.pdpnet.sweep import draw_topic, graph_widths, topic_zplus_rows


@numba.njit(cache=True, error_model="numpy")
def network_particles(seeds, resample, scaled, topic_inst, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                      par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, EO, n0, tc0, tp0, Nn0, TC0,
                      TP0, s0, Se0, eoff, shared, own_c0, own_t0):
    """(R, N) p_n^(r) of a document's N tokens for every particle r (module docstring); ``scaled`` (N, K) the
    tokens' scaled word factors, ``topic_inst`` (N,) their topic vectors, ``n0 ... Se0`` the counts the document
    starts from (copied per particle), ``RJ, RO, EO`` the ratio tables of a Stirling table covering N + 3 (and
    the trained counts). A shared Pitman-Yor vector (``shared``, :mod:`inference.pdpnet.owned`): the document's
    own (c, t) there are ``own_c0``/``own_t0`` (cells); the trained tables are the others', frozen."""
    N, K = scaled.shape
    R = seeds.shape[0]
    J = kind.shape[0]
    maxpar, maxanc = graph_widths(par_ptr, anc_ptr, J)
    Zb = np.zeros((maxanc, K))
    slot = np.zeros(J, np.int64)
    Z = np.zeros(J)
    terms = np.zeros(maxpar)
    pn = np.empty(J + 1, np.int64)
    pe = np.empty(J + 1, np.int64)
    cum = np.empty(K)
    mx = np.zeros(2, np.int64)
    z = np.zeros(N, np.int64)
    oc = np.zeros(J, np.int64)
    ot = np.zeros(J, np.int64)
    out = np.empty((R, N))
    rows, cols = RJ.shape[1] + 1, RJ.shape[2] + 1
    for r in range(R):
        np.random.seed(seeds[r])
        n, tc, tp, Nn, TC, TP = n0.copy(), tc0.copy(), tp0.copy(), Nn0.copy(), TC0.copy(), TP0.copy()
        s, Se = s0.copy(), Se0.copy()
        own_c, own_t = own_c0.copy(), own_t0.copy()
        for i in range(N):
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                raise ValueError("network_particles: the Stirling table must cover the document's tokens + 3")
            if resample:
                for m in range(i):
                    jt = topic_inst[m]
                    k0 = z[m]
                    _, illegal = owned_remove(jt, k0, True, shared, own_c, own_t, oc, ot, anc_ptr, anc, pn, pe,
                                              kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    if illegal:                 # the sampler's rule: a move that would leave a cell without a
                        continue                # table is not made (network_sweep does the same; undone)
                    row = topic_zplus_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of,
                                           par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, RO, n, tc, tp,
                                           Nn, TC, TP, Se)
                    total = 0.0
                    for k in range(K):
                        total += Zb[row, k] * scaled[m, k]
                        cum[k] = total
                    k = draw_topic(cum, total, K)
                    for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                        Z[anc[q]] = Zb[slot[anc[q]], k]
                    owned_add(jt, k, True, Z, terms, shared, own_c, own_t, oc, ot, anc_ptr, anc, kind, dim, off,
                              alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, RJ, EO, n,
                              tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                    z[m] = k
            jt = topic_inst[i]
            row = predictive_rows(jt, K, Zb, slot, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr,
                                  par_node, par_gamma, gamma_sum, avals, bvals, n, tc, tp, Nn, TC, TP, Se)
            total = 0.0
            for k in range(K):
                total += Zb[row, k] * scaled[i, k]
                cum[k] = total
            if not (total > 0.0 and total < np.inf):
                raise FloatingPointError("network_particles: a token's predictive is 0, NaN or inf")
            out[r, i] = total
            k = draw_topic(cum, total, K)
            for q in range(anc_ptr[jt], anc_ptr[jt + 1]):     # what the seating adds at shared cells is own
                own_c[off[anc[q]] + k] -= tc[off[anc[q]] + k]
                own_t[off[anc[q]] + k] -= tp[off[anc[q]] + k]
            seat_new(jt, k, Zb, slot, kind, off, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals,
                     n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
            for q in range(anc_ptr[jt], anc_ptr[jt + 1]):
                own_c[off[anc[q]] + k] += tc[off[anc[q]] + k]
                own_t[off[anc[q]] + k] += tp[off[anc[q]] + k]
            z[i] = k
    return out


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


@numba.njit(cache=True)
def seat_new(jt, k, P, slot, kind, off, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals, n, tc,
             tp, Nn, TC, TP, s, Se, eoff, mx):
    """Seat a new customer of value k at ``jt`` by the sequential process whose predictive
    :func:`predictive_rows` left in ``P``: at a Pitman-Yor vector join a table of k (c_k - a t_k) or open one
    (b + a T) rho_e P_parent(e)(k) whose customer goes up edge e; a root or uniform vector just counts it."""
    j = jt
    data = True
    while True:
        cell = off[j] + k
        if kind[j] != PYP:
            if data:
                n[cell] += 1
                Nn[j] += 1
            else:
                tc[cell] += 1
                TC[j] += 1
            return
        a = avals[a_of[j]]
        b = bvals[b_of[j]]
        T = TP[j]
        e0, e1 = par_ptr[j], par_ptr[j + 1]
        join = n[cell] + tc[cell] - a * tp[cell]
        lead = b + a * T
        if b == np.inf:                          # a mixture node: never joins; opens up edge e with rho_e
            join = 0.0
            lead = 1.0
        total = join
        for e in range(e0, e1):
            total += lead * rho_num(par_gamma[e], Se[e], gamma_sum[j]) / rho_den(gamma_sum[j], T) * P[
                slot[par_node[e]], k]
        if join == 0.0 and e1 - e0 == 1:         # nothing to join, one parent: forced, no random number
            edge = e0
        else:
            u = np.random.random() * total
            if u < join:
                seat_table(j, k, cell, data, -1, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                return
            u -= join
            edge = e0
            while edge < e1 - 1:
                w = lead * rho_num(par_gamma[edge], Se[edge], gamma_sum[j]) / rho_den(gamma_sum[j], T) * P[
                    slot[par_node[edge]], k]
                if u < w:
                    break
                u -= w
                edge += 1
        seat_table(j, k, cell, data, edge, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
        j = par_node[edge]
        data = False
