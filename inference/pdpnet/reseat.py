"""The re-seating pass of the network sweep (001_003 extract §2.6: the s-moving operators, both at once; the
move of :mod:`inference.pdpnet.kernels`' module docstring), split from :mod:`inference.pdpnet.sweep`."""
from __future__ import annotations

from inference.gibbs.common import token_kernel
from inference.pdpnet.kept_rows import enter_ancestors
from inference.pdpnet.kernels import PYP, _count, remove_path, seat_at_node, undo_path
from inference.pdpnet.ratio_path import node_terms_r


@token_kernel
def reseat_cells(pos, N, kind, dim, off, alpha, a_of, b_of, par_ptr, par_node, par_gamma, gamma_sum, avals, bvals,
                 L3, RJ, EO, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx, anc_ptr, anc, Z, ZK, TK, zok, rnode, rslot, pnA,
                 peA):
    """The re-seating pass from position ``pos`` (N + cell): one customer of every Pitman-Yor cell whose customers
    are all its children's tables (n = 0 < t^c), vector by vector (vectors without children's tables skipped
    whole). A cell with own data is not re-seated here: the token steps already remove and re-add each of its
    data customers (a token that keeps its topic is exactly a re-seating of one), and a re-seating of such a cell
    moved a data customer too. Nor is a cell of a vector with one parent whose one customer is one child's table:
    its one table is forced, and the move re-seats that table at the parent, as the hand-written SeqLDA's table
    step skips restaurants with fewer than two tables from the next segment. Returns -1 when done or the position
    to resume from.

    Z^+ of value v at the ancestors of the cell's vector (``ZK[v, slot]``) is kept from cell to cell: the
    ancestors sit in slots (``rnode``/``rslot``, ascending ids) and ``zok[v]`` slots are current for v; a path
    whose highest node is in slot m changes the counts of nodes in slots >= m only (a path goes to parents, which
    have smaller ids), so every value's Z from slot m on is recomputed, by :func:`node_terms_r` on the same counts
    as :func:`eval_zplus_r` (the same values bit for bit; issue 28, 1: the full walk up 20-segment chains per
    cell was a fifth of a seqlda.json sweep). Their terms are kept with them (``TK[v, slot]``): the path draws
    from them (a node's counts do not change before the path reaches it), as :func:`add_path_r` would."""
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
    K = zok.shape[0]
    for v in range(K):
        zok[v] = 0
    cur = -1
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
            if j != cur:
                same = enter_ancestors(j, rnode, rslot, anc_ptr, anc)
                invalidate(zok, same)
                cur = j
            da, ia = remove_path(j, v, False, pnA, peA, kind, off, par_ptr, par_node, n, tc, tp, Nn, TC, TP, s, Se,
                                 eoff, mx)
            if ia:
                undo_path(da, v, False, pnA, peA, off, n, tc, tp, Nn, TC, TP, s, Se, eoff, mx)
                continue
            invalidate(zok, rslot[pnA[da - 1]])
            Zv = ZK[v]
            Tv = TK[v]
            L = anc_ptr[j + 1] - anc_ptr[j]
            for r in range(zok[v]):             # the kept ones, where node_terms_r reads them
                Z[rnode[r]] = Zv[r]
            for r in range(zok[v], L):
                x = rnode[r]
                Z[x] = node_terms_r(x, v, Z, Tv[r], kind, dim, off, alpha, a_of, b_of, par_ptr, par_node,
                                    par_gamma, gamma_sum, avals, bvals, RJ, EO, n, tc, tp, Nn, TC, TP, Se)
                Zv[r] = Z[x]
            zok[v] = L
            x = j
            while kind[x] == PYP:
                x2 = seat_at_node(x, v, off[x] + v, False, Tv[rslot[x]], Z[x], par_ptr, par_node, n, tc, tp, Nn,
                                  TC, TP, s, Se, eoff, mx)
                if x2 < 0:
                    break
                x = x2
            if kind[x] != PYP:
                _count(x, off[x] + v, False, 1, n, tc, Nn, TC, mx, False)
            invalidate(zok, rslot[x])
    return -1


@token_kernel
def invalidate(zok, m):
    """Every value's kept Z^+ is current in slots below m at most."""
    for v in range(zok.shape[0]):
        if zok[v] > m:
            zok[v] = m
