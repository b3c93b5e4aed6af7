"""``pdp-network``'s concentrations and discounts on the Gibbs engine (issue 28, 2): partitions draw q_j ~ Beta(b,
C_j) (E19) for their own vectors; the driver draws b by (E20) when every discount of its vectors is a fixed 0, else
slice-samples it with the sampled discounts in the global step (E21) from the summed histograms (table
``discount_counts``, :mod:`inference.pdpnet.engine_stats`). A Pitman-Yor word side's steps read the global word
tables (:mod:`drivers.models.pdp_network.words_pyp`); a shared Pitman-Yor topic vector's the global rows of ``network_tc`` and
``network_tp`` (its q_j drawn on the driver, :func:`drivers.models.pdp_network.shared_pyp.driver_stats`)."""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import shared_pyp, word_sides, words_pyp
from drivers.models.pdp_network.engine_specs import slice_b_names
from inference.pdpnet import engine_stats
from inference.pdpnet.compile import KIND_PYP
from inference.pdpnet.spec import parse_network


def shared_b_names(spec, families) -> set:
    """The concentrations of shared Pitman-Yor vectors: stepped in the global step (their C_j are global)."""
    return {spec.nodes[n].b for n in families if spec.nodes[n].kind == "pyp" and spec.params[spec.nodes[n].b].sample}


class NetworkHyper:
    """The hyperparameter steps of :class:`drivers.models.pdp_network.PdpNetwork` (module docstring)."""

    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        net = self._compiled(block, hyper)
        spec = net.spec
        names = [n for n in net.b_names if spec.params[n].sample]
        if not names:
            return np.zeros(0)
        cnt = self._local_counts(net, block, state)
        skip = shared_pyp.shared_mask(net, self._shared_roots().nodes(net))
        rng = np.random.default_rng(seed)
        out = np.zeros(2 * len(names))
        for r, name in enumerate(names):
            js = np.flatnonzero((net.kind == KIND_PYP) & (net.b_of == net.b_names.index(name)) & ~skip)
            C = cnt["Nn"][js] + cnt["TC"][js]
            live = C > 0
            q = rng.beta(hyper["b_values"][name], C[live])
            out[2 * r] = cnt["TP"][js][live].sum()
            out[2 * r + 1] = -np.log(np.maximum(q, 1e-300)).sum()
        return out

    def update_hyper(self, hyper, stats, num_documents, seed) -> dict:
        spec = parse_network(hyper["network"])
        names = sorted(n for n, p in spec.params.items() if p.kind == "b" and p.sample)
        if not names or len(stats) == 0:
            return hyper
        skip = slice_b_names(spec, hyper["a_values"]) | shared_b_names(spec, hyper.get("global_families", []))
        rng = np.random.default_rng(seed)
        b_values = dict(hyper["b_values"])
        for r, name in enumerate(names):
            shape, rate = float(stats[2 * r]), float(stats[2 * r + 1])
            if name not in skip and name not in words_pyp.side_params(hyper.get("word_pyp")) and shape > 0 \
                    and rate > 0:
                b_values[name] = float(min(max(rng.gamma(shape, 1.0 / rate), 1e-3), 1e6))
        return dict(hyper, b_values=b_values)

    def global_step(self, tables, hyper, stats, seed) -> tuple:
        """Slice-sample the concentrations of vectors with discounts (E21) and the sampled discounts from the
        summed histograms (module :mod:`inference.pdpnet.engine_stats`), the shared Pitman-Yor vectors' from the
        global rows; a shared Pitman-Yor vector's b with a fixed zero discount by (E20)."""
        spec = parse_network(hyper["network"])
        side = hyper.get("word_pyp")
        sampled, word_rng = {n: p.sample for n, p in spec.params.items()}, np.random.default_rng([seed, 1])
        hyper = word_sides.of(side).sample_hyper(self, tables, hyper, sampled, word_rng)   # the word side's own
        own = words_pyp.side_params(side)
        gamma_b = shared_b_names(spec, hyper.get("global_families", [])) - slice_b_names(spec, hyper["a_values"])
        sliced = slice_b_names(spec, hyper["a_values"]) - own
        a_sampled = sorted(n for n, p in spec.params.items() if p.kind == "a" and p.sample and n not in own)
        if not sliced and not a_sampled and not gamma_b:
            return tables, hyper, None
        hist_keys, hist_counts = np.zeros(0, np.int64), np.zeros(0)
        if "discount_counts" in tables and (sliced or a_sampled):
            hist = tables["discount_counts"]
            hist_keys, hist_counts = np.asarray(hist.keys, np.int64), np.asarray(hist.counts, np.float64).reshape(-1)
        extra = {}
        if shared_pyp.TABLE in tables:
            keys, counts, extra = shared_pyp.driver_stats(spec, self._shared_roots(), tables, hyper,
                                                          np.random.default_rng([seed, 2]))
            hist_keys, hist_counts = np.concatenate([hist_keys, keys]), np.concatenate([hist_counts, counts])
        a_names = sorted(n for n, p in spec.params.items() if p.kind == "a")
        b_names = sorted(n for n, p in spec.params.items() if p.kind == "b")
        b_sampled = sorted(n for n in b_names if spec.params[n].sample)
        avals = np.array([hyper["a_values"][n] for n in a_names])
        bvals = np.array([hyper["b_values"].get(n, np.inf) for n in b_names])    # a mixture's b = inf: not kept
        rng = np.random.default_rng(seed)

        def b_stat(name, i):
            r = b_sampled.index(name)
            own_stat = float(stats[2 * r + i]) if len(stats) > 2 * r + i else 0.0
            return own_stat + extra.get(name, (0.0, 0.0))[i]

        for name in sorted(gamma_b):
            shape, rate = b_stat(name, 0), b_stat(name, 1)
            if shape > 0 and rate > 0:
                bvals[b_names.index(name)] = float(min(max(rng.gamma(shape, 1.0 / rate), 1e-3), 1e6))
        for name in sorted(sliced):
            q = b_names.index(name)
            bvals[q] = engine_stats.sample_concentration(float(bvals[q]), q, hist_keys, hist_counts, avals,
                                                         b_stat(name, 1), rng)
        for name in a_sampled:
            p = a_names.index(name)
            avals[p] = engine_stats.sample_discount(float(avals[p]), hist_keys, hist_counts, p, bvals, rng)
        hyper = dict(hyper, a_values={n: float(v) for n, v in zip(a_names, avals)},
                     b_values={n: float(v) for n, v in zip(b_names, bvals) if v < np.inf})
        return tables, hyper, None
