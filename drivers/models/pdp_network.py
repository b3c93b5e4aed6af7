"""``pdp-network``: a topic model given as a network spec (``--network FILE`` or the name of a shipped spec in
sample_data/networks/) on the Gibbs engine (issue 28, 3).

What runs on the engine now: networks whose topic side is partition-local (every topic-side family indexed by
document and/or segment, so every vector lives in one partition's documents) and whose word draw is one
Dirichlet family indexed by topic (the engine's topic-word table M_kw, with the family's prior as beta): lda,
stm, seqlda, adatm. Sampled concentrations need a = 0 (the auxiliary-variable Gamma step on the driver, E20,
from the partitions' (sum T_j, sum log 1/q_j)); sampled discounts are refused. Global topic-side vectors
(hdp-lda's corpus level) and Pitman-Yor word sides (pyp-lda) are refused here with one line: they need the
engine's typed statistics for the network's global nodes (not done).

A partition's state is ``z`` (int32) and ``s`` (the table attributions of every parent edge and topic); every
other count is rebuilt from them at each sweep (:func:`inference.pdpnet.sampler.rebuild_counts`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from inference.errors import UsageError
from inference.gibbs.model import GibbsModel
from inference.options import ModelOption
from inference.pdpnet import kernels, sweep
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.hyper import sample_concentration  # noqa: F401 (the in-process sampler's b step)
from inference.pdpnet.sampler import StirlingStack, posterior_means, rebuild_counts
from inference.pdpnet.spec import NetworkSpec, parse_network

SHIPPED = Path(__file__).resolve().parents[2] / "sample_data" / "networks"
NETWORK = ModelOption("network", "network spec: a JSON file, or the name of a shipped one (lda, stm, seqlda, adatm)",
                      type=str, default="stm", metavar="FILE", path=True)


def read_spec_file(name_or_path: str) -> dict:
    """The raw spec of a file, or of a shipped spec by name; one line when neither exists or it is not JSON."""
    p = Path(name_or_path)
    # a shipped spec's name: the command line made it absolute as it does every path flag (jobs/spark.local_path)
    if not p.exists() and p.suffix == "" and (SHIPPED / f"{p.name}.json").exists():
        p = SHIPPED / f"{p.name}.json"
    try:
        return json.loads(p.read_text())
    except OSError:
        shipped = ", ".join(sorted(q.stem for q in SHIPPED.glob("*.json")))
        raise UsageError(f"--network {name_or_path}: no such file, nor a shipped spec ({shipped})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--network {p}: not JSON ({exc.msg} at line {exc.lineno})") from None


def check_engine_network(spec: NetworkSpec) -> float:
    """Refuse (one line naming the node) what the engine cannot run yet; returns the word side's beta."""
    word = spec.nodes[spec.word.node]
    if word.kind != "dirichlet" or word.index != ("topic",) or spec.word.index != ("topic",):
        raise UsageError(f"network spec: node '{word.name}': on the Gibbs engine the word draw must be a Dirichlet "
                         "family indexed by [topic] (Pitman-Yor word sides are not on the engine yet)")
    for name in spec.order:
        node = spec.nodes[name]
        if node.over != "topic":
            continue
        if not set(node.index) <= {"document", "segment"} or not node.index:
            raise UsageError(f"network spec: node '{name}': indexed by {list(node.index)}: a vector shared by "
                             "several documents, not on the Gibbs engine yet (only document/segment vectors)")
    for p in spec.params.values():
        if p.sample and p.kind == "a":
            raise UsageError(f"network spec: parameter '{p.name}': sampled discounts are not on the Gibbs engine yet")
    for node in spec.nodes.values():
        if node.kind == "pyp" and spec.params[node.b].sample and spec.params[node.a].value != 0.0:
            raise UsageError(f"network spec: node '{node.name}': a sampled b needs a = 0 on the Gibbs engine")
    return word.alpha


class PdpNetwork(GibbsModel):
    """Any network of Dirichlet / Pitman-Yor vectors (module docstring) with the table-indicator sampler."""

    name = "pdp-network"
    options = (NETWORK,)

    def initial_hyper(self, network=None, **overrides) -> dict:
        raw = read_spec_file(network or NETWORK.default)
        spec = parse_network(raw)
        beta = check_engine_network(spec)
        return {"network": raw, "beta": float(beta),
                "b_values": {n: p.value for n, p in spec.params.items() if p.kind == "b"},
                "a_values": {n: p.value for n, p in spec.params.items() if p.kind == "a"}}

    # ---- compiled network of a block (cached per block object)
    def _compiled(self, block, hyper):
        key = (id(block), json.dumps(hyper["network"], sort_keys=True))
        cache = self.__dict__.setdefault("_nets", {})
        if key not in cache:
            layout = CorpusLayout(block.doc_ptr.astype(np.int64), block.seg_ptr.astype(np.int64),
                                  block.words.astype(np.int64), self.vocab_size)
            cache.clear()
            cache[key] = compile_network(parse_network(hyper["network"]), layout, self.num_topics, word_side=False)
        return cache[key]

    @staticmethod
    def _values(net, hyper):
        avals = np.array([hyper["a_values"][n] for n in net.a_names], np.float64)
        bvals = np.array([hyper["b_values"][n] for n in net.b_names], np.float64)
        return avals, bvals

    def _run(self, block, state, hyper, nwk, nk, seed, frozen_phi, init):
        net = self._compiled(block, hyper)
        z = state["z"].astype(np.int64)
        s = state["s"]
        cnt = rebuild_counts(net, z, s, word_side=False)
        avals, bvals = self._values(net, hyper)
        anc_ptr, anc = kernels.ancestor_lists(net.par_ptr, net.par_node)
        stirling = StirlingStack(avals)
        frozen = frozen_phi is not None
        phi = np.ascontiguousarray(frozen_phi, dtype=np.float64) if frozen else np.zeros((1, 1))
        pos, reseed = 0, True
        while pos >= 0:
            stirling.ensure(cnt["mx"][0], cnt["mx"][1])
            pos = sweep.network_sweep(
                pos, reseed, seed, True, net.words, z, net.topic_inst, net.word_inst, anc_ptr, anc, net.kind,
                net.dim, net.off, net.alpha, net.a_of, net.b_of, net.par_ptr, net.par_node, net.par_gamma,
                net.gamma_sum, avals, bvals, stirling.L3, cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"],
                cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"], init, True, nwk, nk, float(hyper["beta"]), phi,
                frozen)
            reseed = False
        state["z"][:] = z

    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        net = self._compiled(block, hyper)
        z = np.random.default_rng(seed).integers(0, self.num_topics, block.n_tokens).astype(np.int32)
        state = {"z": z, "s": np.zeros(int(net.eoff[-1]), np.int64)}
        self._run(block, state, hyper, nwk, nk, seed, None, init=True)
        return state

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        self._run(block, state, hyper, nwk, nk, seed, frozen_phi, init=False)

    # ---- concentrations (a = 0): partitions draw q_j, the driver draws b (E20)
    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        net = self._compiled(block, hyper)
        spec = net.spec
        names = [n for n in net.b_names if spec.params[n].sample]
        if not names:
            return np.zeros(0)
        cnt = rebuild_counts(net, state["z"].astype(np.int64), state["s"], word_side=False)
        rng = np.random.default_rng(seed)
        out = np.zeros(2 * len(names))
        for r, name in enumerate(names):
            js = np.flatnonzero((net.kind == 1) & (net.b_of == net.b_names.index(name)))
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
        rng = np.random.default_rng(seed)
        b_values = dict(hyper["b_values"])
        for r, name in enumerate(names):
            shape, rate = float(stats[2 * r]), float(stats[2 * r + 1])
            if shape > 0 and rate > 0:
                b_values[name] = float(min(max(rng.gamma(shape, 1.0 / rate), 1e-3), 1e6))
        return dict(hyper, b_values=b_values)

    # ---- outputs
    def segment_topic(self, block, state, hyper) -> np.ndarray:
        """(S, K) posterior mean of every segment's topic vector (its tokens' draw); an empty segment: its
        document's row."""
        net = self._compiled(block, hyper)
        cnt = rebuild_counts(net, state["z"].astype(np.int64), state["s"], word_side=False)
        avals, bvals = self._values(net, hyper)
        means = posterior_means(net, cnt, avals, bvals)
        K = self.num_topics
        S = block.n_segments
        out = np.full((S, K), 1.0 / K)
        lengths = np.diff(block.seg_ptr)
        has = lengths > 0
        first = block.seg_ptr[:-1][has]
        inst = net.topic_inst[first]
        out[has] = means[net.off[inst][:, None] + np.arange(K)]
        doc = self._doc_rows(block, out, lengths)
        out[~has] = doc[block.doc_of_segment()[~has]]
        return out

    @staticmethod
    def _doc_rows(block, seg, lengths):
        K = seg.shape[1]
        w = seg * lengths[:, None]
        doc = np.zeros((block.n_docs, K))
        np.add.at(doc, block.doc_of_segment(), w)
        tot = doc.sum(axis=1, keepdims=True)
        return np.where(tot > 0, doc / np.where(tot > 0, tot, 1), 1.0 / K)

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        """(D, K) the token-weighted mean of the document's segment rows."""
        return self._doc_rows(block, self.segment_topic(block, state, hyper), np.diff(block.seg_ptr))
