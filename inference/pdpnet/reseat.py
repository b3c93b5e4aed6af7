"""The re-seating pass of the network sweep (001_003 extract §2.6: the s-moving operators, both at once; the
move of :mod:`inference.pdpnet.kernels`' module docstring), split from :mod:`inference.pdpnet.sweep`."""
from __future__ import annotations

from inference.gibbs.common import token_kernel
from inference.pdpnet.kernels import PYP, remove_path, undo_path
from inference.pdpnet.ratio_path import add_path_r, eval_zplus_r


@token_kernel
def reseat_cells(pos, N, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals,
                 L3, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, anc_ptr, anc, Z, terms, pnA, peA):
    """The re-seating pass from position ``pos`` (N + cell): one customer of every Pitman-Yor cell whose customers
    are all its children's tables (n = 0 < t^c), vector by vector (vectors without children's tables skipped
    whole). A cell with own data is not re-seated here: the token steps already remove and re-add each of its
    data customers (a token that keeps its topic is exactly a re-seating of one), and a re-seating of such a cell
    moved a data customer too. Nor is a cell of a vector with one parent whose one customer is one child's table:
    its one table is forced, and the move re-seats that table at the parent, as the hand-written SeqLDA's table
    step skips restaurants with fewer than two tables from the next segment. Returns -1 when done or the position
    to resume from."""
    J = kind.shape[0]
    rows = L3.shape[1]
    cols = L3.shape[2]
    ncell = off[J]
    if pos >= N + ncell:
        return -1
    cell = pos - N
    lo, hi = 0, J - 1           # the vector of this cell
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if off[mid] <= cell:
            lo = mid
        else:
            hi = mid - 1
    for j in range(lo, J):
        if kind[j] != PYP or TC[j] == 0:
            continue
        one = 1 if par_ptr[j + 1] - par_ptr[j] == 1 else 0
        for cell in range(max(pos - N, off[j]), off[j + 1]):
            if n[cell] > 0 or tc[cell] <= one:
                continue
            if mx[0] + 3 > rows or mx[1] + 3 > cols:
                return N + cell
            v = cell - off[j]
            da, ia = remove_path(j, v, False, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se,
                                 eoff, mx)
            if ia:
                undo_path(da, v, False, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                continue
            eval_zplus_r(j, v, Z, terms, anc_ptr, anc, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                       par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
            add_path_r(j, v, False, Z, terms, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma,
                     gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
    return -1
