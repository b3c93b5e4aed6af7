"""``pdp-network``'s whole-network mode (issue 28, 2): a spec the split engine refuses (a shape it has not learnt to
split between partitions: :func:`split_refusal`, the one line it would print) trains on ONE partition whose state is
the whole network, the word side's vectors too, swept by the in-process sampler (:func:`inference.pdpnet.sampler.
run_network`, Du's table indicators whatever the spec's ``"sampler"``); no global statistic needs splitting.

The partition's state: ``z`` (int32), ``s`` (every edge's attributions), ``avals``/``bvals`` (the discounts and
concentrations, stepped in the partition after every sweep: :func:`inference.pdpnet.sampler.step_hyper`) and
``clock`` = (seed, iteration). Sweep t draws from SeedSequence([seed, t, 1]) and its hyperparameter step from
[seed, t, 1000], the in-process sampler's (:class:`inference.pdpnet.sampler.NetworkSampler` with that seed, the
engine's seed of the partition's initialisation): the engine in this mode is that sampler draw for draw, and a
resumed chain continues it.
Tables: ``nwk`` (the tokens' (word, topic) counts), ``whole_shared`` and ``whole_shared_s`` (keyed: the topic side's
vectors indexed neither by document nor segment, their (n, tc, tp) and their parent edges' s; what held-out documents
start from, :mod:`drivers.models.pdp_network.whole_heldout`). The partition's statistics (one partition, so their sum
is its own): the discounts, concentrations, log p(w | z) of the topics' posterior means and the topics themselves
(K x V: the word side's posterior means at each topic, thesis (7.12); a word family indexed by more than the topic:
the token-weighted mean of its vectors at the topic).
"""
from __future__ import annotations

import json
import logging

import numpy as np

from drivers.engines import memory
from drivers.models.pdp_network import shared_pyp, whole_heldout, whole_refresh, whole_words, words_pyp
from drivers.models.pdp_network.engine_specs import NETWORK, check_engine_network, read_spec_file
from drivers.models.pdp_network.model import PdpNetwork
from inference.errors import RefusedError, UsageError
from inference.gibbs.model import GibbsModel
from inference.gibbs.tables import CountTable
from inference.pdpnet import kernels
from inference.pdpnet.compile import compile_network
from inference.pdpnet.sampler import StirlingStack, posterior_means, rebuild_counts, run_network, step_hyper
from inference.pdpnet.spec import NetworkSpec, parse_network

log = logging.getLogger("spark_topics.train")

#: the hyperparameters' entry naming why the spec runs whole (the split engine's refusal)
WHOLE = "whole_network"
NOTE = ("indicators: Du's table-indicator sampler on the whole network in one partition (whole-network mode, the "
        "in-process sampler), exactly invariant")
NO_DRIFT = np.zeros(0)


def split_refusal(spec: NetworkSpec) -> str | None:
    """The one line the split engine refuses ``spec`` with (the node it cannot place), or None: it runs split."""
    try:
        _, families = check_engine_network(spec)
        shared_pyp.check(spec, families, words_pyp.word_side(spec))
    except UsageError as exc:
        return str(exc)
    return None


def spec_of(settings: dict) -> NetworkSpec:
    """The spec of train's flags (``network``, ``sampler``) or of model.json's hyperparameters."""
    raw = settings.get("network")
    raw = raw if isinstance(raw, dict) else read_spec_file(raw or NETWORK.default)
    return parse_network(raw if settings.get("sampler") is None else dict(raw, sampler=settings["sampler"]))


def state_bytes(spec: NetworkSpec, K: int, V: int, docs: int, segments: int, tokens: int, sizes: dict) -> int:
    """Python memory of the one partition (an upper bound from the index sizes, before compiling): dense cells, V per
    word vector, K per topic vector, each n, tc, tp and the s of every parent edge (int64), twice (the state's
    counts and the sweep's), and per token its word vector at every topic (N x K int64)."""
    size = {"corpus": 1, "document": docs, "segment": segments, "topic": K, "previous_word": V + 1}
    cells = 0
    for node in spec.nodes.values():
        count = 1
        for kind in node.index:
            count *= size.get(kind, sizes.get(kind.partition(":")[2], docs))
        cells += count * (K if node.over == "topic" else V) * (3 + len(node.parents))
    return memory.PYTHON_BASE_BYTES + 2 * 8 * cells + 8 * tokens * (K + 4)


def check_memory(needed: int) -> None:
    """Refuse (one line saying what to set) a state that one task cannot hold: local mode, three quarters of this
    machine; a cluster, ``spark.executor.pyspark.memory`` when set."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    conf = dict(sc.getConf().getAll()) if sc is not None else {}
    given = conf.get("spark.executor.pyspark.memory")
    machine = memory.physical_memory()
    local = conf.get("spark.master", "local").startswith("local")
    if given is not None and not local and memory.parse_size(given) < needed:
        raise RefusedError(f"whole-network mode: its one partition needs about {memory.format_size(needed)} of "
                           f"Python memory, more than spark.executor.pyspark.memory={given}: set --conf "
                           f"spark.executor.pyspark.memory={memory.format_size(needed)}, or use fewer topics or a "
                           f"smaller vocabulary (prepare --max-vocab)")
    if machine is not None and needed > 0.75 * machine:
        raise RefusedError(f"whole-network mode: its one partition needs about {memory.format_size(needed)} of "
                           f"Python memory (dense cells: V per word vector), more than this machine can give "
                           f"({memory.format_size(machine)} in all): use fewer topics, a smaller vocabulary (prepare "
                           f"--max-vocab) or a spec the split engine runs")


class WholeNetworkMode:
    """The model's hooks in whole-network mode (module docstring); every other spec goes to the split model."""

    @classmethod
    def corpus_partitions(cls, settings: dict) -> int | None:
        """The partitions training must use under train's ``settings`` whatever ``--partitions`` says (asked by the
        Gibbs family before the corpus loads): 1 in whole-network mode, else None (any)."""
        return 1 if split_refusal(spec_of(settings)) is not None else None

    @property
    def whole(self) -> str | None:
        return self.__dict__.get("_whole")

    @property
    def word_predictive(self) -> bool:
        """Held out, the word side is the network's own (:mod:`.whole_words`), not the topics' posterior means: a
        word side indexed by more than [topic] (or with the document's own vectors) and its trained state saved."""
        return bool(self.whole) and self.__dict__.get("_trained_words") is not None and \
            whole_words.needs_predictive(parse_network(self._raw))

    @property
    def publishes_words(self) -> bool:
        """Whether training publishes the word side's keyed table ``whole_words`` (and saves ``whole_word_*.npy``):
        only when the held-out path reads it (:func:`.whole_words.needs_predictive`; a word side indexed by [topic]
        alone is scored by the topics' posterior means) and the vocabulary fits its keys (V < 2^20)."""
        return bool(self.whole) and self.vocab_size < whole_words.MAX_V and \
            whole_words.needs_predictive(parse_network(self._raw))

    def bind_corpus(self, corpus, request) -> None:
        super().bind_corpus(corpus, request)
        self._corpus_sizes = (corpus.num_documents, corpus.num_segments, corpus.num_tokens)

    def initial_hyper(self, network=None, sampler=None, **overrides) -> dict:
        raw = read_spec_file(network or NETWORK.default)
        spec = parse_network(raw if sampler is None else dict(raw, sampler=sampler))
        reason = split_refusal(spec)
        if reason is None:
            self._whole = None
            return super().initial_hyper(network, sampler, **overrides)
        raw = raw if sampler is None else dict(raw, sampler=sampler)
        self._raw, self._roots, self._word_pyp = raw, None, None
        self.read_columns(spec)
        columns = self.column_values
        docs, segments, tokens = self.__dict__.get("_corpus_sizes", (0, 0, 0))
        check_memory(state_bytes(spec, self.num_topics, self.vocab_size, docs, segments, tokens,
                                 columns.sizes() if columns is not None else {}))
        log.warning("%s: runs on one partition (whole-network mode: the in-process sampler on the whole network, "
                    "no speed-up across executors)", reason)
        self._whole = reason
        word = spec.nodes[spec.word.node]
        return {"network": raw, "beta": float(word.alpha) if word.kind == "dirichlet" else 0.01, WHOLE: reason,
                "global_families": [], "topic_sampler": NOTE,
                "b_values": {n: p.value for n, p in spec.params.items() if p.kind == "b" and p.value < np.inf},
                "a_values": {n: p.value for n, p in spec.params.items() if p.kind == "a"}}

    def bind_hyper(self, hyper: dict) -> None:
        self._whole = hyper.get(WHOLE, self.__dict__.get("_whole"))
        super().bind_hyper(hyper)

    # ---- the whole network of the block (compiled once per block object)
    def whole_net(self, block, raw):
        key = "whole:" + json.dumps(raw, sort_keys=True)
        net = self._memo("nets").get(block, key)
        if net is None:
            net = compile_network(parse_network(raw), self.corpus_layout(block), self.num_topics, word_side=True)
            net.ancestors = kernels.ancestor_lists(net.par_ptr, net.par_node)
            self._memo("nets").put(block, net, key)
        return net

    def _whole_counts(self, net, block, state) -> dict:
        cnt = self._memo("counts").take(block, state)
        return cnt if cnt is not None else rebuild_counts(net, state["z"].astype(np.int64), state["s"])

    def _stirling(self, net, avals):
        return StirlingStack(avals, sampled=[net.spec.params[n].sample for n in net.a_names])

    # ---- training: one partition, the in-process sampler's sweeps and steps
    def count_tables(self) -> tuple:
        if not self.whole:
            return super().count_tables()
        spec = parse_network(self._raw)
        cells, edges = whole_heldout.cells_per_token(spec)
        words = (CountTable(whole_words.TABLE, whole_words.rows(self.vocab_size), 1, "keyed",
                            cells_per_token=whole_words.cells_per_token(spec)),) if self.publishes_words else ()
        return (CountTable("nwk", self.vocab_size, self.num_topics, "dense", cells_per_token=1),
                CountTable(whole_heldout.CELLS, whole_heldout.ROWS, self.num_topics, "keyed", cells_per_token=cells),
                CountTable(whole_heldout.EDGES, whole_heldout.ROWS, self.num_topics, "keyed",
                           cells_per_token=edges)) + words

    def initial_state(self, block, hyper, seed) -> dict:
        if not self.whole:
            return super().initial_state(block, hyper, seed)
        net = self.whole_net(block, hyper["network"])
        avals, bvals = net.a_values.copy(), net.b_values.copy()    # NetworkSampler's start (the spec's values)
        z = np.random.default_rng([int(seed), 0]).integers(0, net.K, len(net.words)).astype(np.int64)
        state = {"z": z.astype(np.int32), "s": np.zeros(int(net.eoff[-1]), np.int64), "avals": avals,
                 "bvals": bvals, "clock": np.array([int(seed), 0], np.int64)}
        cnt = rebuild_counts(net, np.zeros(0, np.int64), state["s"])
        run_network(net, net.ancestors, z, state["s"], cnt, avals, bvals, self._stirling(net, avals),
                    _seed(int(seed), 0, 0), True, True, NO_DRIFT)
        state["z"][:] = z
        self._memo("counts").remember(block, state, cnt)
        return state

    def sweep_tables(self, block, state, hyper, tables, derived, seed) -> None:
        """Sweep t = clock[1] + 1 of the in-process sampler (module docstring; the engine's ``seed`` is not read)."""
        if not self.whole:
            return super().sweep_tables(block, state, hyper, tables, derived, seed)
        net = self.whole_net(block, hyper["network"])
        cnt = self._whole_counts(net, block, state)
        state["clock"][1] += 1
        z = state["z"].astype(np.int64)
        run_network(net, net.ancestors, z, state["s"], cnt, state["avals"], state["bvals"],
                    self._stirling(net, state["avals"]), _seed(*state["clock"], 1), True, False, NO_DRIFT)
        state["z"][:] = z
        self._memo("counts").remember(block, state, cnt)

    def local_hyper_update(self, block, state, hyper, seed) -> None:
        """The in-process sampler's hyperparameter step after the sweep (``sample_hyper``: its seed, not the
        engine's); a held-out state's values are the trained ones."""
        if not self.whole:
            return super().local_hyper_update(block, state, hyper, seed)
        if whole_heldout.HELD in state:
            return None
        net = self.whole_net(block, hyper["network"])
        cnt = self._memo("counts").recall(block, state)
        cnt = cnt if cnt is not None else rebuild_counts(net, state["z"].astype(np.int64), state["s"])
        step_hyper(net, cnt, state["avals"], state["bvals"], np.random.default_rng([*map(int, state["clock"]), 1000]))

    def table_counts(self, block, state, local) -> dict:
        if not self.whole:
            return super().table_counts(block, state, local)
        net = self.whole_net(block, self._raw)
        cnt = self._memo("counts").recall(block, state)
        cnt = cnt if cnt is not None else rebuild_counts(net, state["z"].astype(np.int64), state["s"])
        return {"nwk": GibbsModel.shared_counts(self, block, state, local),
                **whole_heldout.shared_contribution(net, cnt, state["s"]),
                **({whole_words.TABLE: whole_words.contribution(net, cnt, state["s"])}
                   if self.publishes_words else {})}

    def topics_of(self, net, cnt, avals, bvals) -> np.ndarray:
        """(K, V) the word side's posterior means at every topic (module docstring)."""
        means = posterior_means(net, cnt, avals, bvals)
        K, V = net.K, net.V
        phi = np.zeros((K, V))
        for k in range(K):
            inst, weight = np.unique(net.word_inst[:, k], return_counts=True)
            rows = means[net.off[inst][:, None] + np.arange(V)]
            phi[k] = weight @ rows / weight.sum()
        return phi / phi.sum(axis=1, keepdims=True)

    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        """(discounts, concentrations, log p(w | z), the K x V topics) of the partition's state."""
        if not self.whole:
            return super().partition_stats(block, state, hyper, seed)
        net = self.whole_net(block, hyper["network"])
        cnt = self._memo("counts").recall(block, state)
        cnt = cnt if cnt is not None else rebuild_counts(net, state["z"].astype(np.int64), state["s"])
        phi = self.topics_of(net, cnt, state["avals"], state["bvals"])
        loglik = float(np.log(phi[state["z"], block.words]).sum())
        return np.concatenate([state["avals"], state["bvals"], [loglik], phi.ravel()])

    def update_hyper(self, hyper, stats, num_documents, seed) -> dict:
        """The partition's values into the hyperparameters; its topics and likelihood kept for this iteration's
        sample (the driver's model object)."""
        if not self.whole:
            return super().update_hyper(hyper, stats, num_documents, seed)
        spec = parse_network(hyper["network"])
        a_names = sorted(n for n, p in spec.params.items() if p.kind == "a")
        b_names = sorted(n for n, p in spec.params.items() if p.kind == "b")
        A, B = len(a_names), len(b_names)
        self.__dict__.setdefault("_memos", {})["whole_stats"] = (float(stats[A + B]), stats[A + B + 1:].reshape(
            self.num_topics, self.vocab_size))
        return dict(hyper, a_values={n: float(v) for n, v in zip(a_names, stats[:A])},
                    b_values={n: float(v) for n, v in zip(b_names, stats[A:A + B]) if v < np.inf})

    def global_step(self, tables, hyper, stats, seed) -> tuple:
        return super().global_step(tables, hyper, stats, seed) if not self.whole else (tables, hyper, None)

    def sample_topic_word(self, tables, derived, hyper) -> np.ndarray:
        if not self.whole:
            return super().sample_topic_word(tables, derived, hyper)
        return self.__dict__["_memos"]["whole_stats"][1].copy()

    def loglik(self, tables, derived, hyper) -> float:
        if not self.whole:
            return super().loglik(tables, derived, hyper)
        return self.__dict__["_memos"]["whole_stats"][0]

    # ---- proportions: of the training state (the whole network) or of held-out documents (whole_heldout)
    def segment_topic(self, block, state, hyper) -> np.ndarray:
        if not self.whole:
            return super().segment_topic(block, state, hyper)
        if whole_heldout.HELD in state:
            net = whole_heldout.held_net(self, block, hyper)
            cnt = whole_heldout.counts(net, state)
            avals, bvals = self._values(net, hyper)
        else:
            net = self.whole_net(block, hyper["network"])
            cnt = self._memo("counts").recall(block, state)
            cnt = cnt if cnt is not None else rebuild_counts(net, state["z"].astype(np.int64), state["s"])
            avals, bvals = state["avals"], state["bvals"]
        return whole_heldout.segment_rows(self, net, block, posterior_means(net, cnt, avals, bvals))

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        if not self.whole:
            return super().doc_topic(block, state, hyper)
        return self._doc_rows(block, self.segment_topic(block, state, hyper), np.diff(block.seg_ptr))

    # ---- held-out documents and new ones (whole_heldout), the trained shared vectors
    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        if not self.whole:
            return super().init_state(block, hyper, nwk, nk, seed)
        return whole_heldout.init_state(self, block, hyper, nwk, nk, seed)

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        if not self.whole:
            return super().sweep(block, state, hyper, nwk, nk, seed, frozen_phi)
        whole_heldout.sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi)

    def heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        if not self.word_predictive:
            return super().heldout_loglik(block, hyper, phi_vk, schedule, seed, partition)
        return whole_heldout.completion(self, block, hyper, schedule, seed, partition)

    def left_to_right(self, block, hyper, phi_vk, settings):
        if not self.whole:
            return super().left_to_right(block, hyper, phi_vk, settings)
        return whole_heldout.left_to_right(self, block, hyper, phi_vk, settings)

    def bind_result(self, result) -> None:
        if not self.whole:
            return super().bind_result(result)
        self._trained_whole = whole_heldout.trained_of_tables(result.tables)
        words = result.tables.get(whole_words.TABLE)
        self._trained_words = None if words is None else (np.asarray(words.keys, np.int64),
                                                          np.asarray(words.counts, np.int64))

    @property
    def array_files(self) -> tuple:
        if not (self.whole or self.__dict__.get("_whole_files")):
            return super().array_files
        files = self.__dict__.get("_whole_word_files")       # a directory's; a training's: what it publishes
        return whole_heldout.ARRAYS + (whole_words.ARRAYS if (self.publishes_words if files is None else files) else ())

    def saved_arrays(self) -> dict:
        if not self.whole:
            return super().saved_arrays()
        words = self.__dict__.get("_trained_words")
        return dict(whole_heldout.saved(self._trained_whole),
                    **({} if words is None else dict(zip(whole_words.ARRAYS, words))))

    def bind_directory(self, directory: str) -> None:
        self._whole_files = whole_heldout.has_files(directory)
        self._whole_word_files = whole_words.has_files(directory)    # a session-25 directory has none: means
        super().bind_directory(directory)

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        if not self.__dict__.get("_whole_files"):
            return super().bind_arrays(arrays, meta)
        self._trained_whole = whole_heldout.trained_of_arrays(arrays)
        self._trained_words = (np.asarray(arrays[whole_words.ARRAYS[0]], np.int64), np.asarray(
            arrays[whole_words.ARRAYS[1]], np.int64)) if whole_words.ARRAYS[0] in arrays else None
        self.bind_hyper(meta.get("hyper", {}))

    def continued_chain(self, spark, old_model, base, batch, seed: int, iteration: int):
        """``refresh`` in whole-network mode: the batch's documents join the one partition
        (:mod:`drivers.models.pdp_network.whole_refresh`)."""
        if self.whole:
            return whole_refresh.continued_chain(self, spark, old_model, base, batch, iteration)
        return super().continued_chain(spark, old_model, base, batch, seed, iteration)


def _seed(seed: int, iteration: int, step: int) -> int:
    """The in-process sampler's seed of ``step`` at ``iteration`` (:meth:`NetworkSampler._seed`)."""
    return int(np.random.SeedSequence([int(seed), int(iteration), int(step)]).generate_state(1)[0])


class NetworkModel(WholeNetworkMode, PdpNetwork):
    """``pdp-network`` as the registry runs it: split between partitions (:class:`PdpNetwork`), or whole on one
    when the split engine refuses the spec (module docstring)."""
