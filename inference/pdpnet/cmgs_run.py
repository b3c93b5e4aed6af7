"""The Python side of the CMGS sampler (:mod:`inference.pdpnet.cmgs`) and of the exact multiplicity sampler
(:mod:`inference.pdpnet.multiplicity`): the arrays their kernels read beyond the compiled network (root sums, chain
depth, a bound on customers, the documents' pass-through ranges), the Stirling tables, and one cycle on a
partition's counts (issue 28)."""
from __future__ import annotations

import numpy as np

from inference.errors import UsageError
from inference.gibbs.pdp import StirlingTable, stirling_table
from inference.pdpnet.cmgs import cmgs_init, cmgs_sweep
from inference.pdpnet.cmgs_dag import cmgs_dag_sweep
from inference.pdpnet.kernels import DIR, PYP, ancestor_lists
from inference.pdpnet.multiplicity import exact_sweep
from inference.pdpnet.multiplicity_dag import exact_dag_sweep


def check_single_parent(net) -> None:
    """Refuse (one line naming the node) a topic-side Pitman-Yor vector with more than one parent."""
    many = np.flatnonzero((net.kind == PYP) & (np.diff(net.par_ptr) != 1))
    if len(many):
        name = net.spec.order[int(net.family[many[0]])]
        raise UsageError(f"network spec: node '{name}': sampler '{net.spec.sampler}' needs one parent per "
                         f"Pitman-Yor vector (it has {int(np.diff(net.par_ptr)[many[0]])}); use \"sampler\": \"indicators\"")


def root_sums(net) -> np.ndarray:
    """(J,) sum alpha of every Dirichlet root, summed component by component (the built-ins' order)."""
    out = np.zeros(net.num_nodes)
    for j in np.flatnonzero(net.kind == DIR):
        acc = 0.0
        for _ in range(int(net.dim[j])):
            acc += float(net.alpha[j])
        out[j] = acc
    return out


def layout_arrays(net, doc_tok_ptr: np.ndarray) -> dict:
    """What ``cmgs_sweep`` needs of the graph beyond the compiled arrays: the root sums, the deepest chain of
    one-parent vectors, a bound on any cell's customers (the tokens below a vector: the Stirling tables' size),
    and per document (``doc_tok_ptr``: token offsets) the range of Pitman-Yor vectors its pass-through step
    visits (its tokens' vectors and their Pitman-Yor ancestors)."""
    check_single_parent(net)
    J = net.num_nodes
    single = np.diff(net.par_ptr) == 1
    parent = np.full(J, -1, np.int64)
    parent[single] = net.par_node[net.par_ptr[:-1][single]]
    below = np.bincount(net.topic_inst, minlength=J).astype(np.int64)
    depth = np.zeros(J, np.int64)
    for x in range(J - 1, -1, -1):                       # children have larger ids
        if parent[x] >= 0:
            below[parent[x]] += below[x]
    for x in range(J):
        if parent[x] >= 0:
            depth[x] = depth[parent[x]] + 1
    pyp = net.kind == PYP
    ends, los, his = [], [], []
    for d in range(len(doc_tok_ptr) - 1):
        t0, t1 = int(doc_tok_ptr[d]), int(doc_tok_ptr[d + 1])
        if t1 == t0:
            continue
        lo, hi = J, -1
        for x in np.unique(net.topic_inst[t0:t1]):
            while x >= 0 and pyp[x]:
                lo, hi = min(lo, x), max(hi, x)
                x = parent[x]
        if hi >= 0:
            ends.append(t1)
            los.append(lo)
            his.append(hi + 1)
    return {"asum": root_sums(net), "maxdepth": int(depth.max(initial=0)) + 1,
            "cmax": int(below[pyp].max(initial=0)), "pass_end": np.array(ends, np.int64),
            "pass_lo": np.array(los, np.int64), "pass_hi": np.array(his, np.int64)}


def stirling_ratios(avals, sampled, cmax: int, logs: bool = False):
    """(ratio3, cratio3): S^{c+1}_t / S^c_t and S^c_t / S^c_{t-1} per discount, covering c <= cmax + 1 (the
    process-wide tables of :func:`inference.gibbs.pdp.stirling_table` for fixed discounts, as the built-ins);
    ``logs``: (log3, ratio3, cratio3), log3 the log S^c_t."""
    tabs = [(StirlingTable(float(a)) if f else stirling_table(float(a))).ensure(cmax + 3, cmax + 3)
            for a, f in zip(avals, sampled)] or [stirling_table(0.0).ensure(cmax + 3, cmax + 3)]
    names = ("log", "ratio", "cratio") if logs else ("ratio", "cratio")
    if len(tabs) == 1:
        return tuple(getattr(tabs[0], nm)[None] for nm in names)
    r = min(t.ratio.shape[0] for t in tabs)
    c = min(t.ratio.shape[1] for t in tabs)
    return tuple(np.stack([getattr(t, nm)[:r, :c] for t in tabs]) for nm in names)


def multi_parent(net) -> bool:
    """Whether a topic-side Pitman-Yor vector has several parents (then :mod:`inference.pdpnet.cmgs_dag` runs)."""
    return bool(np.any((net.kind == PYP) & (np.diff(net.par_ptr) > 1)))


def dag_layout(net, doc_tok_ptr: np.ndarray) -> dict:
    """:func:`layout_arrays` for :func:`cmgs_dag_sweep`: the root sums, a bound on any cell's customers (the tokens
    whose vector has it as an ancestor: a customer's path visits a vector once), the ancestor lists, every vector's
    one Dirichlet ancestor (or -1 everywhere when a token's vector has several) and per document the range of
    Pitman-Yor vectors among its tokens' vectors and their ancestors."""
    anc_ptr, anc = ancestor_lists(net.par_ptr, net.par_node)
    below = np.zeros(net.num_nodes, np.int64)
    tokens = np.bincount(net.topic_inst, minlength=net.num_nodes)
    for x in np.flatnonzero(tokens):
        below[anc[anc_ptr[x]:anc_ptr[x + 1]]] += tokens[x]
    pyp = net.kind == PYP
    ends, los, his = [], [], []
    for d in range(len(doc_tok_ptr) - 1):
        t0, t1 = int(doc_tok_ptr[d]), int(doc_tok_ptr[d + 1])
        xs = [int(a) for x in np.unique(net.topic_inst[t0:t1]) for a in anc[anc_ptr[x]:anc_ptr[x + 1]] if pyp[a]]
        if xs:
            ends.append(t1)
            los.append(min(xs))
            his.append(max(xs) + 1)
    roots = [anc[anc_ptr[x]:anc_ptr[x + 1]][net.kind[anc[anc_ptr[x]:anc_ptr[x + 1]]] == DIR] for x in range(len(pyp))]
    root_of = np.array([r[0] if len(r) == 1 else -1 for r in roots], np.int64)
    if np.any(root_of[np.unique(net.topic_inst)] < 0):       # affine rows only if every token vector has one root
        root_of[:] = -1
    return {"asum": root_sums(net), "cmax": int(below[pyp].max(initial=0)), "anc_ptr": anc_ptr, "anc": anc,
            "root_of": root_of,
            "pass_end": np.array(ends, np.int64),
            "pass_lo": np.array(los, np.int64), "pass_hi": np.array(his, np.int64)}


NO_CHECK = np.zeros(0)


def run_cmgs(net, doc_tok_ptr, z, s, cnt: dict, avals, bvals, nwk, nk, beta: float, frozen_phi, seed: int,
             init: bool, check=NO_CHECK, removal: int = 0) -> None:
    """One CMGS cycle, or one of the exact multiplicity sampler under ``"sampler": "exact"`` (``removal``: its
    test switch, :func:`inference.pdpnet.multiplicity.remove_token`), (``init``: count z and open one table per
    occupied cell instead) on the counts ``cnt`` of
    :func:`inference.pdpnet.sampler.rebuild_counts`, the engine's topic-word table ``nwk``/``nk`` (untouched with
    ``frozen_phi``, the topics fixed); z, s and the counts in place. ``check``: :func:`cmgs_sweep`'s self-check."""
    dag = multi_parent(net)
    lay = getattr(net, "cmgs", None)
    if lay is None:
        lay = net.cmgs = (dag_layout if dag else layout_arrays)(net, np.asarray(doc_tok_ptr, np.int64))
    frozen = frozen_phi is not None
    phi = np.ascontiguousarray(frozen_phi, dtype=np.float64) if frozen else np.zeros((1, 1))
    args = (net.kind, net.off, net.par_ptr, net.par_node, net.eoff, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"],
            cnt["TC"], cnt["TP"], s, cnt["Se"])
    if init:
        cmgs_init(z, net.topic_inst, net.words, *args, nwk, nk, frozen)
    elif net.spec.sampler == "exact":
        (_exact_dag if dag else _exact)(net, lay, z, s, cnt, avals, bvals, nwk, nk, beta, phi, frozen, seed, check,
                                        removal)
    elif dag:
        sampled = [net.spec.params[nm].sample for nm in net.a_names]
        ratio3, cratio3 = stirling_ratios(avals, sampled, lay["cmax"])
        cmgs_dag_sweep(int(seed), net.words, z, net.topic_inst, net.kind, net.dim, net.off, net.alpha, lay["asum"],
                       net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
                       np.asarray(avals, np.float64), np.asarray(bvals, np.float64),
                       ratio3, cratio3, lay["anc_ptr"], lay["anc"], lay["root_of"],
                       cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff,
                       lay["pass_end"], lay["pass_lo"], lay["pass_hi"], nwk, nk, float(beta), phi, frozen)
    else:
        _sweep(net, lay, z, s, cnt, avals, bvals, nwk, nk, beta, phi, frozen, seed, check)
    if len(cnt["n"]):                     # the running maxima the table-indicator code keeps (an upper bound)
        cnt["mx"][0] = max(int(cnt["mx"][0]), int((cnt["n"] + cnt["tc"]).max()))
        cnt["mx"][1] = max(int(cnt["mx"][1]), int(cnt["tp"].max()))


def _sweep(net, lay, z, s, cnt, avals, bvals, nwk, nk, beta, phi, frozen, seed, check) -> None:
    sampled = [net.spec.params[nm].sample for nm in net.a_names]
    ratio3, cratio3 = stirling_ratios(avals, sampled, lay["cmax"])
    cmgs_sweep(int(seed), net.words, z, net.topic_inst, net.kind, net.dim, net.off, net.alpha, lay["asum"],
               net.a_of, net.b_of, net.par_ptr, net.par_node, np.asarray(avals, np.float64),
               np.asarray(bvals, np.float64), ratio3, cratio3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
               cnt["TP"], s, cnt["Se"], net.eoff, lay["pass_end"], lay["pass_lo"], lay["pass_hi"], nwk, nk,
               float(beta), phi, frozen, lay["maxdepth"], check)


def _exact(net, lay, z, s, cnt, avals, bvals, nwk, nk, beta, phi, frozen, seed, check, removal) -> None:
    sampled = [net.spec.params[nm].sample for nm in net.a_names]
    log3, ratio3, cratio3 = stirling_ratios(avals, sampled, lay["cmax"], logs=True)
    exact_sweep(int(seed), net.words, z, net.topic_inst, net.kind, net.dim, net.off, net.alpha, lay["asum"],
                net.a_of, net.b_of, net.par_ptr, net.par_node, np.asarray(avals, np.float64),
                np.asarray(bvals, np.float64), log3, ratio3, cratio3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"],
                cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff, lay["pass_end"], lay["pass_lo"], lay["pass_hi"], nwk, nk,
                float(beta), phi, frozen, lay["maxdepth"], int(removal), check)


def _exact_dag(net, lay, z, s, cnt, avals, bvals, nwk, nk, beta, phi, frozen, seed, check, removal) -> None:
    sampled = [net.spec.params[nm].sample for nm in net.a_names]
    log3, ratio3, cratio3 = stirling_ratios(avals, sampled, lay["cmax"], logs=True)
    exact_dag_sweep(int(seed), net.words, z, net.topic_inst, net.kind, net.dim, net.off, net.alpha, lay["asum"],
                    net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum,
                    np.asarray(avals, np.float64), np.asarray(bvals, np.float64), log3, ratio3, cratio3,
                    lay["anc_ptr"], lay["anc"], cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s,
                    cnt["Se"], net.eoff, lay["pass_end"], lay["pass_lo"], lay["pass_hi"], nwk, nk, float(beta), phi,
                    frozen, int(removal))
