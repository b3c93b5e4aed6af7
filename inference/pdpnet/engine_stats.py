"""What the Gibbs engine sums over partitions for a network (issue 28, 2), and the driver's steps on those sums.

* **Corpus-level topic vectors** (``hdp-lda``'s ``corpus``, Wallach's AS prior): Dirichlet roots indexed by
  ``[corpus]`` whose customers are the tables the documents send up, t^c_k = sum_d s_{corpus,d,k} (E8). Each
  partition contributes its documents' s; the sum is the engine's dense table ``network_tc`` (one row per such
  family, K columns) and every sweep reads it as the root's t^c (AD-LDA: a partition sees its own moves at once,
  the others' at the next synchronisation). A root has no table constraint, so any sum of contributions is legal.
* **Discount and concentration histograms** (keyed table ``discount_counts``): for every discount parameter p,
  the occupied Pitman-Yor cells' (c, t) pairs, and for every (p, concentration q) the vectors' table totals T_j.
  These are the whole a-dependent part of (E12) (prod_cells S^c_{t,a} prod_j (b_q|a)_{T_j}) and, with the
  partitions' sum_j log 1/q_j (E19), the b-conditional when a > 0 (E21): the driver slice-samples both from the
  sums (:func:`sample_discount`, :func:`sample_concentration`).
"""
from __future__ import annotations

import math

import numpy as np

from inference.dm.slice import sample_concentrations, slice_sample
from inference.gibbs.pdp import log_poch_incr, log_stirling_table
from inference.pdpnet.compile import KIND_PYP

MAX_GLOBAL = 8           # corpus-level topic families (rows of network_tc)
MAX_PARAMS = 8           # discount / concentration parameters in the histogram keys
RADIX = 1 << 24          # counts c, t, T below 16.7M
HIST_ROWS = 2 * MAX_PARAMS * MAX_PARAMS * RADIX * RADIX
#: a bound on a partition's histogram keys per token (the engine's table bound: without one it sends the counts
#: through reducers and refuses the resident sampler). The keys are the distinct (p, c, t) of the occupied cells
#: and (p, q, T) of the live vectors: distinct pairs whose c sum to at most M customers number at most ~(3M)^(2/3)/2,
#: distinct T summing to at most M at most sqrt(2M), and M <= tokens x the deepest chain of Pitman-Yor vectors L,
#: so 2 per token holds while L < ~2.5 sqrt(tokens) (790 at 100,000 tokens, per discount parameter); the resident
#: sampler's replies have 64 MiB of slack beyond the bound besides.
KEYS_PER_TOKEN = 2


def hist_keys(part: int, p: int, q: int, x: np.ndarray, y: np.ndarray, params: int = MAX_PARAMS) -> np.ndarray:
    """Row keys of the histogram: part 0 = cells (p, c, t), part 1 = vectors (p, q, T, 0); ``params``: the radix of
    p and q (the engine's MAX_PARAMS; in process, more: :func:`inference.pdpnet.sampler.step_hyper`)."""
    return ((((part * params + p) * params + q) * RADIX + x.astype(np.int64)) * RADIX
            + y.astype(np.int64))


def decode(keys: np.ndarray, params: int = MAX_PARAMS):
    """(part, p, q, x, y) arrays of histogram keys."""
    keys = np.asarray(keys, np.int64)
    y = keys % RADIX
    rest = keys // RADIX
    x = rest % RADIX
    rest //= RADIX
    q = rest % params
    rest //= params
    return rest // params, rest % params, q, x, y


def histogram_contribution(net, cnt, skip=None, params: int = MAX_PARAMS) -> tuple[np.ndarray, np.ndarray]:
    """A partition's ``(keys, counts (n, 1) int32)`` of the histograms (module docstring), from its counts;
    ``skip`` (J,) bool: vectors left out (shared Pitman-Yor vectors: the driver adds their global counts)."""
    is_pyp = (net.kind == KIND_PYP) if skip is None else (net.kind == KIND_PYP) & ~skip
    pyp = np.flatnonzero(is_pyp)
    if len(pyp) == 0:
        return np.zeros(0, np.int64), np.zeros((0, 1), np.int32)
    cell_node = np.repeat(np.arange(net.num_nodes), net.dim)
    c_all = cnt["n"] + cnt["tc"]
    occupied = is_pyp[cell_node] & (c_all > 0)
    cells = np.flatnonzero(occupied)
    keys = [hist_keys(0, net.a_of[cell_node[cells]], np.zeros(len(cells), np.int64), c_all[cells],
                      cnt["tp"][cells], params)]
    live = pyp[(cnt["Nn"] + cnt["TC"])[pyp] > 0]
    keys.append(hist_keys(1, net.a_of[live], net.b_of[live], cnt["TP"][live], np.zeros(len(live), np.int64),
                          params))
    uniq, counts = np.unique(np.concatenate(keys), return_counts=True)
    return uniq, counts.astype(np.int32)[:, None]


def _weighted(keys, counts, params=MAX_PARAMS):
    part, p, q, x, y = decode(keys, params)
    return part, p, q, x, y, np.asarray(counts, np.float64).reshape(-1)


def discount_log_density(a: float, c, t, wc, b_T: list) -> float:
    """log of prod_cells S^c_{t,a}^w prod (b|a)_T^w (``b_T``: (b, T array, weights) per concentration)."""
    if not 0.0 <= a < 1.0:
        return -math.inf
    L = log_stirling_table(a, int(c.max(initial=0)) + 1, int(t.max(initial=0)) + 1)
    total = float(np.dot(wc, L[c, t]))
    for b, T, w in b_T:
        total += sum(wt * log_poch_incr(float(b), a, int(Tv)) for Tv, wt in zip(T, w))
    return total


def sample_discount(a: float, keys, counts, p: int, bvals, rng: np.random.Generator, params=MAX_PARAMS) -> float:
    """One slice-sampling update (uniform prior on [0, 1)) of discount ``p`` from the summed histograms."""
    part, pp, q, x, y, w = _weighted(keys, counts, params)
    sel = (part == 0) & (pp == p)
    c, t, wc = x[sel], y[sel], w[sel]
    b_T = []
    for qq in np.unique(q[(part == 1) & (pp == p)]):
        m = (part == 1) & (pp == p) & (q == qq)
        b_T.append((bvals[qq], x[m], w[m]))
    if not len(c):
        return a
    out = slice_sample(lambda v: discount_log_density(float(v[0]), c, t, wc, b_T), np.array([a]), rng,
                       np.array([1.0]), 1)
    return float(out[0])


def sample_concentration(b: float, q: int, keys, counts, avals, sum_log_inv_q: float,
                         rng: np.random.Generator, params=MAX_PARAMS) -> float:
    """One slice-sampling update (in log b, prior 1/b) of concentration ``q`` given the auxiliary q_j's
    sum_j log 1/q_j (E19) and the vectors' table totals: prod_j (b|a_j)_{T_j} exp(-b sum log 1/q_j) / b (E21)."""
    part, p, qq, x, _, w = _weighted(keys, counts, params)
    sel = (part == 1) & (qq == q)
    groups = [(avals[pv], x[sel & (p == pv)], w[sel & (p == pv)]) for pv in np.unique(p[sel])]
    if not groups:
        return b

    def log_density(v):
        bv = float(v[0])
        s = -bv * sum_log_inv_q - math.log(bv)
        for a, T, wt in groups:
            s += sum(ww * log_poch_incr(bv, float(a), int(Tv)) for Tv, ww in zip(T, wt))
        return s

    return float(min(max(sample_concentrations(log_density, [b], rng, 1.0, 1)[0], 1e-3), 1e6))
