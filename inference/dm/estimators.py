"""Every estimator of Dirichlet-multinomial hyperparameters alpha m of thesis ch. 2, from count histograms.

Methods (:data:`METHODS`; extract §1.2-1.7), all maximising the evidence (2.6) (LOO: its leave-one-out
approximation (2.24)), or with a gamma hyperprior (§1.8) the posterior (2.69):

* ``fixed-point``: Minka's fixed point (2.13) in the histogram form (2.54): one digamma pair per distinct count;
* ``exact``: the same update by the digamma recurrence (2.58), Alg. 2.2 (the thesis' choice for later chapters);
* ``approximate``: the update (2.61) with MacKay & Peto's digamma difference (2.60) ("Apprx.");
* ``leave-one-out``: Minka's fixed point on the leave-one-out evidence (2.28);
* ``mackay-peto``: MacKay & Peto's fixed point (2.48), its statistics from the histograms (2.62-2.65, "MP+H");
  valid only where every alpha m_k < 1 and alpha > 1;
* ``newton``: Minka's Newton iteration (2.14)-(2.23) with his Levenberg-Marquardt damping (Alg. 2.1).

Every method is symmetric (one alpha m_k = alpha / K for all k, from the histogram pooled over items) or asymmetric.
Internally a parameter u_j is shared by w_j items (asymmetric: w = 1, one per item; symmetric: one of weight K):
alpha = sum_j w_j u_j, and every update is the asymmetric one with the group's pooled histogram and w_j times the
group-length terms. With a gamma hyperprior Gamma(c, s) in log(alpha m_k) (2.72) the fixed points become

    (2.74)  u* = (u A + w c) / (w S + w / s)     (A, S: the method's numerator and denominator sums),

and MacKay & Peto's quadratic (2.40) becomes (V + w c) x^2 + (G - w K(alpha) - w/s) x - H = 0, x = 1/u.
The hyperprior's update is the derivation's ``+ 1/s`` (MALLET's ``- 1/scale`` is not what (2.73) gives).

Convergence: every |Delta alpha m_k| < ``tol`` (1e-6, §2.4.1). An item never observed has its maximum at
alpha m_k = 0 (extract §7.3): without a hyperprior its value stops at :data:`FLOOR`; values stay below
:data:`CEILING` (data less dispersed than a multinomial has its maximum at alpha = infinity).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from inference.dm.evidence import GammaPrior
from inference.dm.histograms import CountHistograms
from inference.dm import sums
from inference.dm.sums import (DIGAMMA, JUMP, LOGGAMMA, TRIGAMMA, entry_sums, mackay_peto_k, mackay_peto_statistics,
                               recurrence_sums)

FLOOR = 1e-10
CEILING = 1e10
TOL = 1e-6
MAX_ITER = 100_000

FIXED_POINT, EXACT, APPROXIMATE, LEAVE_ONE_OUT = 0, 1, 2, 3
METHODS = ("fixed-point", "exact", "approximate", "leave-one-out", "mackay-peto", "newton")
_FIXED_POINTS = {"fixed-point": FIXED_POINT, "exact": EXACT, "approximate": APPROXIMATE,
                 "leave-one-out": LEAVE_ONE_OUT}


@dataclass(frozen=True)
class Estimate:
    """The estimate alpha m (K,), and how it was reached."""
    alpha_m: np.ndarray
    method: str
    iterations: int
    converged: bool

    @property
    def alpha(self) -> float:
        return float(self.alpha_m.sum())

    @property
    def m(self) -> np.ndarray:
        return self.alpha_m / self.alpha_m.sum()


@numba.njit(cache=True)
def scaled_sums(kind, ptr, n, c, z):
    """(J,) z_j times the method's sum of group j: digamma differences (fixed point by digamma or by the recurrence),
    their approximation, or the leave-one-out terms."""
    if kind == FIXED_POINT:
        return recurrence_sums(DIGAMMA, ptr, n, c, z, 0)
    if kind == EXACT:
        return recurrence_sums(DIGAMMA, ptr, n, c, z, JUMP)
    if kind == APPROXIMATE:
        return entry_sums(sums.APPROXIMATE, ptr, n, c, z)
    return entry_sums(sums.LEAVE_ONE_OUT, ptr, n, c, z)


@numba.njit(cache=True)
def _fixed_point_loop(kind, ptr, n, c, w, lengths, lfreqs, u, shape, inv_scale, tol, max_iter, floor, ceil):
    """Iterate u_j <- (A_j + w_j c) / (w_j S / alpha + w_j / s) until every |Delta u_j| < tol (2.13, 2.28, 2.54,
    2.58, 2.61 and 2.74); A_j = u_j sum_n C_j(n) D(n, u_j), S = alpha sum_n C_.(n) D(n, alpha)."""
    u = u.copy()
    length_ptr = np.array([0, lengths.shape[0]], dtype=np.int64)
    for it in range(1, max_iter + 1):
        alpha = np.sum(w * u)
        s = scaled_sums(kind, length_ptr, lengths, lfreqs, np.array([alpha]))[0] / alpha
        new = (scaled_sums(kind, ptr, n, c, u) + w * shape) / (w * (s + inv_scale))
        if _moved(u, new, floor, ceil) < tol:
            return u, it, True
    return u, max_iter, False


@numba.njit(cache=True)
def _moved(u, new, floor, ceil):
    """u := ``new`` clipped to [floor, ceil]; the largest change."""
    change = 0.0
    for j in range(u.shape[0]):
        value = min(max(new[j], floor), ceil)
        change = max(change, abs(value - u[j]))
        u[j] = value
    return change


@numba.njit(cache=True)
def mackay_peto_value(V, G, H, w, k_alpha, shape, inv_scale):
    """The positive root u = 1/x of (V + w c) x^2 + (G - w K(alpha) - w/s) x - H = 0 (2.40, 2.48), by the
    cancellation-free form of the quadratic formula."""
    a = V + w * shape
    b = G - w * (k_alpha + inv_scale)
    root = np.sqrt(b * b + 4.0 * a * H)
    if b <= 0.0:
        return 2.0 * a / (root - b) if root - b > 0.0 else np.inf
    return (b + root) / (2.0 * H) if H > 0.0 else np.inf


@numba.njit(cache=True)
def _mackay_peto_loop(V, G, H, w, lengths, lfreqs, u, shape, inv_scale, tol, max_iter, floor, ceil):
    """Alternate (2.48) for every group with alpha = sum_j w_j u_j; only K(alpha) changes between iterations."""
    u = u.copy()
    new = np.empty_like(u)
    for it in range(1, max_iter + 1):
        k_alpha = mackay_peto_k(lengths, lfreqs, np.sum(w * u))
        for j in range(u.shape[0]):
            new[j] = mackay_peto_value(V[j], G[j], H[j], w[j], k_alpha, shape, inv_scale)
        if _moved(u, new, floor, ceil) < tol:
            return u, it, True
    return u, max_iter, False


@numba.njit(cache=True)
def _grouped_log_posterior(ptr, n, c, w, lengths, lfreqs, u, shape, inv_scale, jump):
    """log evidence (Alg. 2.3) of the grouped parameters plus the hyperprior's terms that depend on u."""
    items = recurrence_sums(LOGGAMMA, ptr, n, c, u, jump)
    alpha = 0.0
    value = 0.0
    for j in range(u.shape[0]):
        alpha += w[j] * u[j]
        value += items[j] + w[j] * (shape * np.log(u[j]) - u[j] * inv_scale)
    z = np.array([alpha])
    return value - recurrence_sums(LOGGAMMA, np.array([0, lengths.shape[0]], np.int64), lengths, lfreqs, z, jump)[0]


@numba.njit(cache=True)
def _newton_loop(ptr, n, c, w, lengths, lfreqs, u, shape, inv_scale, tol, max_iter, floor, ceil, jump):
    """Minka's Newton iteration (Alg. 2.1): gradient (2.14), Hessian diag(q) + z w w^T (2.17)-(2.19) inverted in
    O(J) (2.21)-(2.23) over the items seen at least once (the others stay at the floor), damped by q - lambda until
    the step keeps every u positive and raises the objective (lambda 0.1, /10 on success, x10 on failure, abort
    beyond 1e6: Minka's fastfit; the thesis' listing lost it).
    ``jump``: of :func:`recurrence_sums` (0: a digamma, trigamma and lgamma per entry, Minka's own form)."""
    u = u.copy()
    free = (ptr[1:] > ptr[:-1]) | (shape > 0.0)         # an item never seen, without a hyperprior: at the floor
    u[~free] = floor
    length_ptr = np.array([0, lengths.shape[0]], dtype=np.int64)
    old = _grouped_log_posterior(ptr, n, c, w, lengths, lfreqs, u, shape, inv_scale, jump)
    lam = 0.1
    z = np.empty(1)
    for it in range(1, max_iter + 1):
        alpha = np.sum(w * u)
        z[0] = alpha
        s = recurrence_sums(DIGAMMA, length_ptr, lengths, lfreqs, z, jump)[0] / alpha
        zc = -recurrence_sums(TRIGAMMA, length_ptr, lengths, lfreqs, z, jump)[0]
        g = recurrence_sums(DIGAMMA, ptr, n, c, u, jump) / u - w * s + w * (shape / u - inv_scale)
        q0 = recurrence_sums(TRIGAMMA, ptr, n, c, u, jump) - w * shape / (u * u)
        new = u.copy()
        accepted = False
        while lam <= 1e6:
            inv_q = np.where(free, 1.0 / (q0 - lam), 0.0)
            b = np.sum(w * g * inv_q) / (1.0 / zc + np.sum(w * w * inv_q))
            step = (g - w * b) * inv_q
            if np.all(step < u):
                new = u - step
                value = _grouped_log_posterior(ptr, n, c, w, lengths, lfreqs, new, shape, inv_scale, jump)
                if value > old:
                    old = value
                    lam /= 10.0
                    accepted = True
                    break
            lam *= 10.0
        if not accepted:
            return u, it, True                      # no step raises the objective: at its maximum
        if _moved(u, new, floor, ceil) < tol:
            return u, it, True
    return u, max_iter, False


def grouped_histograms(hist: CountHistograms, symmetric: bool):
    """``(ptr, n, c, w)``: the histograms of the parameters u_j and the items each stands for."""
    if symmetric:
        n, c = hist.pooled_histogram()
        return (np.array([0, n.shape[0]], np.int64), n, c.astype(np.float64),
                np.array([float(hist.num_items)]))
    ptr, n, c = hist.item_histograms()
    return ptr, n, c.astype(np.float64), np.ones(hist.num_items)


def default_start(hist: CountHistograms, alpha: float = 1.0) -> np.ndarray:
    """alpha m with m_k = (observations of k + 1) / (observations + K): the common start of every method."""
    totals = hist.item_totals().astype(np.float64)
    return alpha * (totals + 1.0) / (totals.sum() + hist.num_items)


def estimate(hist: CountHistograms, method: str = "exact", start=None, symmetric: bool = False,
             prior: GammaPrior | None = None, tol: float = TOL, max_iter: int = MAX_ITER) -> Estimate:
    """alpha m (K,) maximising the evidence (or the posterior under ``prior``) of the histograms' groups by
    ``method``, from ``start`` (K values, or a number: alpha m_k for every k; default :func:`default_start`).
    ``max_iter=1`` is one step (one M-step of Gibbs EM, Alg. 3.1, per call)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    start = _start(hist, start)
    if hist.num_groups == 0:
        return Estimate(start, method, 0, True)
    ptr, n, c, w = grouped_histograms(hist, symmetric)
    lengths, lfreqs = hist.length_histogram()
    u = np.array([start.mean()]) if symmetric else start
    u, its, ok = _run(method, (ptr, n, c, w, lengths, lfreqs.astype(np.float64)), u, prior, tol, max_iter, True)
    return Estimate(np.full(hist.num_items, u[0]) if symmetric else u, method, its, ok)


@dataclass(frozen=True)
class Contexts:
    """A (D, K) count matrix as one entry per nonzero count, item by item (``ptr``, ``n``), and the context lengths:
    what :func:`estimate_contexts` reads."""
    num_items: int
    ptr: np.ndarray
    n: np.ndarray
    lengths: np.ndarray
    start: np.ndarray

    @classmethod
    def of(cls, counts) -> "Contexts":
        counts = np.asarray(counts, dtype=np.int64)
        if counts.ndim != 2 or (counts.size and counts.min() < 0):
            raise ValueError("counts must be a (contexts, items) matrix of counts >= 0")
        items, docs = np.nonzero(counts.T)
        n = counts[docs, items]
        ptr = np.searchsorted(items, np.arange(counts.shape[1] + 1)).astype(np.int64)
        lengths = counts.sum(axis=1)
        start = default_start(CountHistograms(counts.shape[1]).add_counts(counts))
        return cls(counts.shape[1], ptr, n, lengths[lengths > 0], start)


def estimate_contexts(counts, method: str, start=None, tol: float = TOL, max_iter: int = MAX_ITER) -> Estimate:
    """Asymmetric alpha m from a (D, K) count matrix (or its :class:`Contexts`), computed as the thesis timed
    Minka's methods and MacKay & Peto's without histograms (§2.4): every sum runs over the contexts' nonzero counts
    one by one (a digamma, trigamma or lgamma per count; MacKay & Peto's N_fk counted context by context). The
    same estimates as :func:`estimate`, slower: the baselines of the chapter's comparison and the tests' reference."""
    if method not in ("fixed-point", "leave-one-out", "mackay-peto", "newton"):
        raise ValueError(f"method must be fixed-point, leave-one-out, mackay-peto or newton, got {method!r}")
    contexts = counts if isinstance(counts, Contexts) else Contexts.of(counts)
    start = contexts.start if start is None else \
        np.broadcast_to(np.asarray(start, np.float64), (contexts.num_items,)).copy()
    if contexts.lengths.shape[0] == 0:
        return Estimate(start, method, 0, True)
    data = (contexts.ptr, contexts.n, np.ones(contexts.n.shape[0]), np.ones(contexts.num_items), contexts.lengths,
            np.ones(contexts.lengths.shape[0]))
    u, its, ok = _run(method, data, start, None, tol, max_iter, False)
    return Estimate(u, method, its, ok)


def _start(hist: CountHistograms, start) -> np.ndarray:
    start = default_start(hist) if start is None else \
        np.broadcast_to(np.asarray(start, np.float64), (hist.num_items,)).copy()
    if not (np.all(np.isfinite(start)) and np.all(start > 0)):
        raise ValueError("the start alpha m must be positive and finite")
    return start


def _run(method: str, data, u, prior: GammaPrior | None, tol: float, max_iter: int, histograms: bool):
    """The method's loop on ``data`` = (ptr, n, c, w, lengths, length frequencies): histograms (``histograms``) or
    one entry per context."""
    ptr, n, c, w, lengths, lfreqs = data
    shape, inv_scale = (0.0, 0.0) if prior is None else (float(prior.shape), 1.0 / float(prior.scale))
    floor = FLOOR if shape == 0 else 0.0
    args = (w, lengths, lfreqs, u, shape, inv_scale, float(tol), int(max_iter), floor, CEILING)
    if method in _FIXED_POINTS:
        u, its, ok = _fixed_point_loop(_FIXED_POINTS[method], ptr, n, c, *args)
    elif method == "mackay-peto":
        u, its, ok = _mackay_peto_loop(*mackay_peto_statistics(ptr, n, c, histograms), *args)
    else:
        u, its, ok = _newton_loop(ptr, n, c, *args, JUMP if histograms else 0)
    return u, int(its), bool(ok)


