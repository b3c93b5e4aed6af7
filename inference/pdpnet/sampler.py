"""One sampler for any compiled network: the state arrays, the Stirling tables grown on demand, the sweep, the
hyperparameter steps (in-process; the Gibbs-engine model around it is issue 28 item 3)."""
from __future__ import annotations

import numpy as np

from inference.gibbs.pdp import StirlingTable, stirling_table
from inference.pdpnet import engine_stats, hyper, kernels, sweep
from inference.pdpnet.compile import KIND_PYP, CompiledNetwork


#: the engine arguments of :func:`sweep.network_sweep` when the network owns its word side
NO_ENGINE = (False, np.zeros((1, 1), np.int32), np.zeros(1, np.int64), 0.0, np.zeros((1, 1)), False)


class StirlingStack:
    """log S^N_{M, a_p} for every discount parameter p, stacked as ``L3[p, N, M]`` for the kernels; grown on
    demand (fixed discounts share the process-wide :func:`stirling_table`, sampled ones get their own table)."""

    def __init__(self, avals: np.ndarray, rows: int = 16, cols: int = 16, sampled=None):
        self.rows, self.cols = rows, cols
        self.set_values(avals, sampled)

    def set_values(self, avals: np.ndarray, sampled=None) -> None:
        """``sampled[p]``: discount p is sampled, so its table is this stack's own (the process-wide cache would
        keep one table per value ever drawn)."""
        self.avals = np.array(avals, dtype=np.float64)
        sampled = [False] * len(self.avals) if sampled is None else list(sampled)
        self.tables = [fresh_table(float(a)) if f else stirling_table(float(a)) for a, f in zip(self.avals, sampled)]
        self._stack()

    def _stack(self) -> None:
        for tab in self.tables:
            tab.ensure(self.rows - 1, self.cols - 1)
        L3 = np.full((max(1, len(self.tables)), self.rows, self.cols), -np.inf)
        for p, tab in enumerate(self.tables):
            L3[p] = tab.log[:self.rows, :self.cols]
        self.L3 = L3

    def ensure(self, max_c: int, max_t: int) -> bool:
        """Cover N <= max_c + 3 and M <= max_t + 3 (x1.5 growth); True when it grew."""
        need_r, need_c = int(max_c) + 4, int(max_t) + 4
        if need_r <= self.rows and need_c <= self.cols:
            return False
        self.rows = max(self.rows, need_r if need_r <= self.rows else max(need_r, int(self.rows * 1.5)))
        self.cols = max(self.cols, need_c if need_c <= self.cols else max(need_c, int(self.cols * 1.5)))
        self._stack()
        return True


def fresh_table(a: float) -> StirlingTable:
    return StirlingTable(a)


class NetworkSampler:
    """State of the network sampler on one corpus; ``sweep()`` runs one cycle, ``sample_hyper()`` the b/a steps.
    The table-indicator sampler whatever the spec's ``sampler`` (CMGS runs on the engine's topic-word table:
    :func:`inference.pdpnet.cmgs_run.run_cmgs`)."""

    def __init__(self, net: CompiledNetwork, seed: int = 0, reseat: bool = True, z=None):
        self.net = net
        self.seed = int(seed)
        self.reseat = bool(reseat)
        self.avals = net.a_values.copy()
        self.bvals = net.b_values.copy()
        self.anc_ptr, self.anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
        self.stirling = StirlingStack(self.avals, sampled=[net.spec.params[n].sample for n in net.a_names])
        ncell, necell, J, E = net.num_cells, int(net.eoff[-1]), net.num_nodes, len(net.par_node)
        self.n = np.zeros(ncell, np.int64)
        self.tc = np.zeros(ncell, np.int64)
        self.tp = np.zeros(ncell, np.int64)
        self.Nn = np.zeros(J, np.int64)
        self.TC = np.zeros(J, np.int64)
        self.TP = np.zeros(J, np.int64)
        self.s = np.zeros(necell, np.int64)
        self.Se = np.zeros(E, np.int64)
        self.mx = np.zeros(2, np.int64)
        rng = np.random.default_rng([self.seed, 0])
        N = len(net.words)
        self.z = (rng.integers(0, net.K, N) if z is None else np.asarray(z)).astype(np.int64)
        self.iteration = 0
        #: size 1: the sweeps check their kept Z^+ rows against a recomputation (largest relative difference)
        self.drift = np.zeros(0)
        self._run(init=True, seed=self._seed(0, 0))

    def _seed(self, iteration: int, step: int) -> int:
        return int(np.random.SeedSequence([self.seed, iteration, step]).generate_state(1)[0])

    def _run(self, init: bool, seed: int) -> None:
        counts = {"n": self.n, "tc": self.tc, "tp": self.tp, "Nn": self.Nn, "TC": self.TC, "TP": self.TP,
                  "Se": self.Se, "mx": self.mx}
        run_network(self.net, (self.anc_ptr, self.anc), self.z, self.s, counts, self.avals, self.bvals,
                    self.stirling, seed, self.reseat, init, self.drift)

    def sweep(self) -> None:
        """One cycle: every token, then (``reseat``) every occupied Pitman-Yor cell."""
        self.iteration += 1
        self._run(init=False, seed=self._seed(self.iteration, 1))

    def sample_hyper(self) -> None:
        """Every sampled b (auxiliary q_j ~ Beta(b, C_j); then Gamma (E20) when every discount of its vectors is
        a fixed 0, else a slice step, E21) and every sampled a (slice step), by the driver's steps of the Gibbs
        engine on this state's histograms (:mod:`inference.pdpnet.engine_stats`); the Stirling tables follow a."""
        counts = {"n": self.n, "tc": self.tc, "tp": self.tp, "Nn": self.Nn, "TC": self.TC, "TP": self.TP}
        rng = np.random.default_rng([self.seed, self.iteration, 1000])
        if step_hyper(self.net, counts, self.avals, self.bvals, rng):
            self.stirling.set_values(self.avals, [self.net.spec.params[nm].sample for nm in self.net.a_names])

    def log_joint(self) -> float:
        return hyper.log_joint(self.net, self.n, self.tc, self.tp, self.Nn, self.TC, self.TP, self.s, self.Se,
                               self.avals, self.bvals)

    def check(self) -> None:
        """Raise AssertionError unless the counts agree with z and s and satisfy (E10)/(E11)."""
        net = self.net
        n = np.zeros_like(self.n)
        np.add.at(n, net.off[net.topic_inst] + self.z, 1)
        np.add.at(n, net.off[net.word_inst[np.arange(len(self.z)), self.z]] + net.words, 1)
        assert np.array_equal(n, self.n), "n disagrees with z"
        child = np.repeat(np.arange(net.num_nodes), np.diff(net.par_ptr))
        tc = np.zeros_like(self.tc)
        tp = np.zeros_like(self.tp)
        for e in range(len(net.par_node)):
            se = self.s[net.eoff[e]:net.eoff[e + 1]]
            tc[net.off[net.par_node[e]]:net.off[net.par_node[e] + 1]] += se
            tp[net.off[child[e]]:net.off[child[e] + 1]] += se
            assert se.sum() == self.Se[e]
        assert np.array_equal(tc, self.tc) and np.array_equal(tp, self.tp), "tc/tp disagree with s"
        c = self.n + self.tc
        pyp_cells = np.repeat(net.kind == KIND_PYP, net.dim)
        assert np.all(tp <= c) and np.all((tp == 0) == (c == 0) | ~pyp_cells), "constraint (E10)/(E11) broken"
        J = net.num_nodes
        cell_node = np.repeat(np.arange(J), net.dim)
        assert np.array_equal(np.bincount(cell_node, self.n, J).astype(np.int64), self.Nn)
        assert np.array_equal(np.bincount(cell_node, self.tc, J).astype(np.int64), self.TC)
        assert np.array_equal(np.bincount(cell_node, self.tp, J).astype(np.int64), self.TP)


def run_network(net: CompiledNetwork, ancestors: tuple, z, s, counts: dict, avals, bvals, stirling: StirlingStack,
                seed: int, reseat: bool, init: bool, drift) -> None:
    """One cycle of the network sampler on a network that owns its word side (every token, then with ``reseat``
    every occupied Pitman-Yor cell), in place on ``z``, ``s`` and ``counts`` (:func:`rebuild_counts`' keys): the
    in-process sampler's sweep and the Gibbs engine's whole-network mode's
    (:mod:`drivers.models.pdp_network.whole_network`)."""
    pos, reseed = 0, True
    c = counts
    while True:
        stirling.ensure(c["mx"][0], c["mx"][1])
        pos = sweep.network_sweep(
            pos, reseed, seed, reseat, net.words, z, net.topic_inst, net.word_inst, ancestors[0], ancestors[1],
            net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
            net.gamma_sum, avals, bvals, stirling.L3, c["n"], c["tc"], c["tp"], c["Nn"], c["TC"], c["TP"], s,
            c["Se"], net.eoff, c["mx"], init, *NO_ENGINE, drift)
        if pos < 0:
            return
        reseed = False


def step_hyper(net: CompiledNetwork, counts: dict, avals: np.ndarray, bvals: np.ndarray, rng) -> bool:
    """Every sampled b (auxiliary q_j ~ Beta(b, C_j); then Gamma (E20) when every discount of its vectors is a fixed
    0, else a slice step, E21) and every sampled a (slice step), in place on ``avals``/``bvals``, from the state's
    histograms (:mod:`inference.pdpnet.engine_stats`); True when a discount was drawn (the Stirling tables follow)."""
    sp = net.spec
    pyp = net.kind == KIND_PYP
    P = max(engine_stats.MAX_PARAMS, len(net.a_names), len(net.b_names))   # the histogram keys' radix of p and q
    if P > 90:                                                             # (2 P^2 RADIX^2 < 2^63)
        raise ValueError("network sampler: more than 90 discount or concentration parameters")
    keys, hist = engine_stats.histogram_contribution(net, counts, None, P)
    for q, name in enumerate(net.b_names):
        if not sp.params[name].sample:
            continue
        js = np.flatnonzero(pyp & (net.b_of == q))
        C = (counts["Nn"] + counts["TC"])[js]
        live = C > 0
        sum_T = int(counts["TP"][js][live].sum())
        if sum_T == 0:
            continue
        sum_log = float(-np.log(np.maximum(rng.beta(bvals[q], C[live]), 1e-300)).sum())
        a_names = {net.a_names[p] for p in net.a_of[js]}
        if all(not sp.params[n].sample and avals[net.a_names.index(n)] == 0.0 for n in a_names):
            bvals[q] = min(max(rng.gamma(sum_T, 1.0 / max(sum_log, 1e-300)), 1e-3), 1e6)
        else:
            bvals[q] = engine_stats.sample_concentration(float(bvals[q]), q, keys, hist, avals, sum_log, rng, P)
    changed = False
    for p, name in enumerate(net.a_names):
        if sp.params[name].sample:
            avals[p] = engine_stats.sample_discount(float(avals[p]), keys, hist, p, bvals, rng, P)
            changed = True
    return changed


def rebuild_counts(net: CompiledNetwork, z: np.ndarray, s: np.ndarray, word_side: bool = True) -> dict:
    """Every derived count of the kernels from (z, s) alone: n, tc, tp per cell, N, TC, TP per vector, S per edge,
    and the running maxima ``mx`` (the Gibbs engine keeps only z and s in a partition's state)."""
    J, ncell = net.num_nodes, net.num_cells
    out = {"n": np.zeros(ncell, np.int64), "tc": np.zeros(ncell, np.int64), "tp": np.zeros(ncell, np.int64),
           "Nn": np.zeros(J, np.int64), "TC": np.zeros(J, np.int64), "TP": np.zeros(J, np.int64),
           "Se": np.zeros(len(net.par_node), np.int64), "mx": np.zeros(2, np.int64)}
    kernels.count_state(np.asarray(z, np.int64), np.asarray(s, np.int64), net.topic_inst, net.word_inst,
                        net.words, word_side, net.kind, net.off, net.par_ptr, net.par_node, net.eoff, out["n"],
                        out["tc"], out["tp"], out["Nn"], out["TC"], out["TP"], out["Se"], out["mx"])
    return out


def posterior_means(net: CompiledNetwork, counts: dict, avals: np.ndarray, bvals: np.ndarray) -> np.ndarray:
    """(cells,) the posterior mean of every vector given the counts, parents first: a root (alpha + c)/(dim alpha
    + C), a fixed uniform 1/dim, a Pitman-Yor vector ((c - a t) + (b + a T) sum_i rho_i nu_i) / (b + C) with
    rho_i = (gamma_i + S_i)/(sum gamma + T) (thesis (7.12) for any network)."""
    out = np.zeros(net.num_cells)
    kernels.mean_state(net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node,
                       net.par_gamma, net.gamma_sum, np.asarray(avals, np.float64), np.asarray(bvals, np.float64),
                       counts["n"], counts["tc"], counts["tp"], counts["Nn"], counts["TC"], counts["TP"],
                       counts["Se"], out)
    return out
