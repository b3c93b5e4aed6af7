"""PDP machinery for the collapsed multiplicity Gibbs samplers: generalised Stirling numbers and Pochhammers.

Generalised Stirling numbers S^N_{M,a} (thesis (3.4); 001_003 extract E4)::

    S^{N+1}_{M,a} = S^N_{M-1,a} + (N - M a) S^N_{M,a}   (M <= N),
    S^N_{M,a} = 0 for M > N,   S^N_{0,a} = delta_{N,0}.

They overflow quickly, so they are kept as ``log S`` (thesis §3.3, pitfall 1)
in a :class:`StirlingTable` for one fixed discount ``a``: rows ``N = 0..rows-1``,
columns ``M = 0..cols-1`` (the column cap M_max of thesis footnote 4), grown on
demand with :meth:`StirlingTable.ensure`. Growing computes only the new cells
with the same floating-point operations, so a grown table equals a table built
at the larger size in one go, bit for bit. ``stirling_table(a)`` keeps one table
per ``a`` per process.

Kernels read the arrays directly: ``table.log`` (``log S``, ``-inf`` where
S = 0) and ``table.ratio`` (``ratio[N, M] = S^{N+1}_{M,a} / S^N_{M,a}``, the
factor of a CMGS "join an existing table" move; 0 where S^N_M = 0) and
``table.cratio`` (``cratio[N, M] = S^N_M / S^N_{M-1}`` for 2 <= M <= N, else 0:
the step between neighbouring table counts, so table-count conditionals can be
accumulated as products without logs). The jitted
lookups :func:`log_stirling` / :func:`log_stirling_ratio` raise ``IndexError``
for a cell with ``M <= N`` that is not in the table (never a silent zero);
``M > N`` is a true zero and gives ``-inf``.

Pochhammer symbols (thesis (3.2)): ``log_poch_incr(b, a, T) = log (b|a)_T``
evaluated as the product prod_{t<T} (b + t a) in log space (pitfall 12: no
division by ``a``; the equal Gamma form only for long products with b/a <= 1000), and
``log_poch(b, N) = log (b)_N = lgamma(b+N) - lgamma(b)``.
"""
from __future__ import annotations

import math
import threading

import numba
import numpy as np

__all__ = ["StirlingTable", "stirling_table", "log_stirling_table", "log_stirling", "log_stirling_ratio",
           "log_stirling_ratio_new_table", "log_poch_incr", "log_poch", "log_poch_incr_step",
           "sample_chain_concentrations", "B_MIN", "B_MAX"]

_NEG_INF = -np.inf


@numba.njit(cache=True)
def _fill_log_stirling(L, old_rows, old_cols, a):
    """Fill every cell of ``L`` outside the already computed block ``[:old_rows, :old_cols]`` by (3.4) in log space."""
    rows, cols = L.shape
    if old_rows == 0:
        L[0, 0] = 0.0
        for m in range(1, cols):
            L[0, m] = -np.inf
        old_rows = 1
        old_cols = cols
    for n in range(rows - 1):
        for m in range(cols):
            if n + 1 < old_rows and m < old_cols:
                continue
            if m == 0 or m > n + 1:
                L[n + 1, m] = -np.inf
                continue
            x = L[n, m - 1]                      # S^n_{m-1}
            y = L[n, m]                          # S^n_m (zero when m > n)
            if y == -np.inf:
                L[n + 1, m] = x
            else:
                y = y + math.log(n - m * a)
                if x == -np.inf:
                    L[n + 1, m] = y
                elif x > y:
                    L[n + 1, m] = x + math.log1p(math.exp(y - x))
                else:
                    L[n + 1, m] = y + math.log1p(math.exp(x - y))


def log_stirling_table(a: float, rows: int, cols: int) -> np.ndarray:
    """A fresh (rows x cols) array of log S^N_{M,a} (N < rows, M < cols); ``-inf`` where S = 0."""
    if not 0.0 <= a < 1.0:
        raise ValueError(f"discount a must be in [0, 1), got {a}")
    L = np.full((max(int(rows), 1), max(int(cols), 1)), -np.inf)
    _fill_log_stirling(L, 0, 0, float(a))
    return L


def _ratio_from_log(L: np.ndarray) -> np.ndarray:
    """ratio[N, M] = S^{N+1}_M / S^N_M for N < rows-1 (0 where S^N_M = 0)."""
    with np.errstate(invalid="ignore"):
        r = np.exp(L[1:] - L[:-1])
    r[~np.isfinite(L[:-1])] = 0.0
    return r


def _column_ratio_from_log(L: np.ndarray) -> np.ndarray:
    """cratio[N, M] = S^N_M / S^N_{M-1} for 2 <= M <= N (0 elsewhere: column 0, column 1, M > N)."""
    out = np.zeros_like(L)
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.exp(L[:, 1:] - L[:, :-1])
    ok = np.isfinite(L[:, 1:]) & np.isfinite(L[:, :-1])
    out[:, 1:][ok] = r[ok]
    return out


class StirlingTable:
    """log S^N_{M,a} for one discount ``a``, grown on demand (thesis §3.3; extract §3).

    Attributes ``log`` (rows x cols) and ``ratio`` ((rows-1) x cols) are plain
    float64 arrays that jitted kernels index directly; they are replaced (not
    mutated) when the table grows, so an array already handed to a kernel stays
    valid.
    """

    def __init__(self, a: float, rows: int = 64, cols: int = 64):
        if not 0.0 <= a < 1.0:
            raise ValueError(f"discount a must be in [0, 1), got {a}")
        self.a = float(a)
        self._lock = threading.Lock()
        self.log = log_stirling_table(self.a, rows, cols)
        self.ratio = _ratio_from_log(self.log)
        self.cratio = _column_ratio_from_log(self.log)

    @property
    def rows(self) -> int:
        return int(self.log.shape[0])

    @property
    def cols(self) -> int:
        return int(self.log.shape[1])

    def ensure(self, n_max: int, m_max: int) -> "StirlingTable":
        """Grow (never shrink) so that S^N_M is stored for every N <= n_max, M <= m_max; returns self.

        Sizes grow geometrically (x1.5) so repeated small requests stay cheap.
        """
        need_r, need_c = int(n_max) + 1, int(m_max) + 1
        if need_r <= self.rows and need_c <= self.cols:
            return self
        with self._lock:
            r0, c0 = self.rows, self.cols
            if need_r <= r0 and need_c <= c0:
                return self
            r1 = r0 if need_r <= r0 else max(need_r, int(r0 * 1.5))
            c1 = c0 if need_c <= c0 else max(need_c, int(c0 * 1.5))
            L = np.full((r1, c1), -np.inf)
            L[:r0, :c0] = self.log
            _fill_log_stirling(L, r0, c0, self.a)
            self.ratio = _ratio_from_log(L)
            self.cratio = _column_ratio_from_log(L)
            self.log = L
        return self

    def log_value(self, n: int, m: int) -> float:
        """log S^n_{m,a} (Python-side, grows the table when needed)."""
        if m > n:
            return -math.inf
        self.ensure(n, m)
        return float(self.log[n, m])


_TABLES: dict[float, StirlingTable] = {}
_TABLES_LOCK = threading.Lock()


def stirling_table(a: float) -> StirlingTable:
    """The process-wide :class:`StirlingTable` for discount ``a`` (created on first use)."""
    a = float(a)
    with _TABLES_LOCK:
        table = _TABLES.get(a)
        if table is None:
            table = _TABLES[a] = StirlingTable(a)
        return table


@numba.njit(cache=True)
def log_stirling(L, n, m):
    """log S^n_{m,a} from a table ``L``; ``-inf`` for m > n; raises IndexError outside the table."""
    if m > n or m < 0:
        return -np.inf
    if n >= L.shape[0] or m >= L.shape[1]:
        raise IndexError("generalised Stirling number outside the table: grow it with StirlingTable.ensure")
    return L[n, m]


@numba.njit(cache=True)
def log_stirling_ratio(L, n, m):
    """log (S^{n+1}_{m,a} / S^n_{m,a}): a customer joins one of m existing tables (thesis (5.3), (6.6))."""
    return log_stirling(L, n + 1, m) - log_stirling(L, n, m)


@numba.njit(cache=True)
def log_stirling_ratio_new_table(L, n, m):
    """log (S^{n+1}_{m+1,a} / S^n_{m,a}): a customer opens a new table (BTIGS, thesis §3.4)."""
    return log_stirling(L, n + 1, m + 1) - log_stirling(L, n, m)


_POCH_PRODUCT_MAX = 64


@numba.njit(cache=True)
def log_poch_incr(b, a, T):
    """log (b|a)_T = log prod_{t<T} (b + t a) (thesis (3.2)); product form (pitfall 12) for a = 0 or short T."""
    if T <= 0:
        return 0.0
    if a == 0.0:
        return T * math.log(b)
    if T <= _POCH_PRODUCT_MAX or b > 1e3 * a:   # Gamma form cancels badly when b/a is large
        s = 0.0
        for t in range(T):
            s += math.log(b + t * a)
        return s
    return T * math.log(a) + math.lgamma(b / a + T) - math.lgamma(b / a)


@numba.njit(cache=True)
def log_poch_incr_step(b, a, T):
    """log (b|a)_{T+1} - log (b|a)_T = log(b + T a)."""
    return math.log(b + T * a)


@numba.njit(cache=True)
def log_poch(b, N):
    """log (b)_N = lgamma(b + N) - lgamma(b) (rising factorial, thesis (3.2))."""
    if N <= 0:
        return 0.0
    return math.lgamma(b + N) - math.lgamma(b)


# ---------------------------------------------------------------------------------------------------------------
# concentration of a document's chain of restaurants, per document (thesis §6.5, eqs 6.11 / 6.12)

B_MIN, B_MAX = 1e-3, 1e6


@numba.njit(cache=True)
def _log_concentration_density(x, a, tables, nseg, sum_log_q):
    """log density of x = log b under (6.12) with prior 1/b: sum_j log (b|a)_{T_j} + b sum_j log q_j."""
    b = math.exp(x)
    s = b * sum_log_q
    for j in range(nseg):
        s += log_poch_incr(b, a, tables[j])
    return s


@numba.njit(cache=True)
def sample_chain_concentrations(doc_ptr, seg_ptr, tables, proxies, bdoc, a, seed):
    """One update of every document's concentration b_i (thesis §6.5), in place in ``bdoc``.

    Restaurant j of document i has ``sum_k tables[j, k]`` tables (T_ij) and ``N_ij + sum_k proxies[j+1, k]``
    customers (its words plus the tables its child sends up): SeqLDA passes ``tables = proxies = t``; AdaTM
    passes ``tables = t + s`` (both edges) and ``proxies = t``. b_i enters the joint as
    prod_j (b_i|a)_{T_ij} Gamma(b_i) / Gamma(b_i + C_ij), so with q_ij ~ Beta(b_i, C_ij) per restaurant with
    customers: a = 0, b_i ~ Gamma(sum_j T_ij, rate sum_j log 1/q_ij) (6.11); a > 0, one slice-sampling update
    (Neal 2003, stepping out + shrinkage, exact) of log b_i under (6.12); improper prior 1/b in both cases."""
    np.random.seed(seed)
    K = tables.shape[1]
    jmax = 0
    for d in range(doc_ptr.shape[0] - 1):
        jmax = max(jmax, doc_ptr[d + 1] - doc_ptr[d])
    Tj = np.zeros(jmax, dtype=np.int64)
    for d in range(doc_ptr.shape[0] - 1):
        s0, s1 = doc_ptr[d], doc_ptr[d + 1]
        b = bdoc[d]
        nseg = 0
        sum_t = 0
        sum_log_q = 0.0
        for s in range(s0, s1):
            Ts = 0
            for k in range(K):
                Ts += tables[s, k]
            cust = seg_ptr[s + 1] - seg_ptr[s]
            if s + 1 < s1:
                for k in range(K):
                    cust += proxies[s + 1, k]
            if cust == 0:
                continue
            q = np.random.beta(b, cust)
            sum_log_q += math.log(max(q, 1e-300))
            Tj[nseg] = Ts
            nseg += 1
            sum_t += Ts
        if sum_t == 0:
            continue
        if a == 0.0:
            b = np.random.gamma(sum_t, 1.0 / max(-sum_log_q, 1e-300))
        else:
            x0 = math.log(b)
            logy = _log_concentration_density(x0, a, Tj, nseg, sum_log_q) + math.log(1.0 - np.random.random())
            width = 1.0
            left = x0 - width * np.random.random()
            right = left + width
            lo_lim, hi_lim = math.log(B_MIN), math.log(B_MAX)
            steps = 0
            while left > lo_lim and steps < 50 and _log_concentration_density(left, a, Tj, nseg, sum_log_q) > logy:
                left -= width
                steps += 1
            steps = 0
            while right < hi_lim and steps < 50 and _log_concentration_density(right, a, Tj, nseg, sum_log_q) > logy:
                right += width
                steps += 1
            left = max(left, lo_lim)
            right = min(right, hi_lim)
            x_new = x0
            for _ in range(200):
                x = left + (right - left) * np.random.random()
                if _log_concentration_density(x, a, Tj, nseg, sum_log_q) > logy:
                    x_new = x
                    break
                if x < x0:
                    left = x
                else:
                    right = x
            b = math.exp(x_new)
        bdoc[d] = min(max(b, B_MIN), B_MAX)
