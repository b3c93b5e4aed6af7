"""``pdp-network``: a topic model given as a network spec (``--network FILE`` or the name of a shipped spec in
sample_data/networks/) on the Gibbs engine (issue 28, 3).

What runs on the engine now: topic vectors per document and/or segment, over vectors shared by documents (the
corpus, a kept column's value or a list column's values) that are Dirichlet roots (their customers, the documents'
tables, in ``network_tc``: :mod:`.shared_roots`) or Pitman-Yor vectors (their tables owned by partitions,
``network_tp``: :mod:`.shared_pyp`); a word side of one of the kinds of :mod:`.word_sides` (the engine's Dirichlet
topic-word table; pyp-lda's Pitman-Yor family by topic; tlm's by [topic, previous_word]; a chain of corpus-level
word vectors or a family by [topic, column:NAME]), asked once per step, never by kind. The rest is refused in one
line here; the registry's model (:mod:`.whole_network`) trains it on one partition instead (whole-network mode).
Concentrations: partitions draw q_j ~ Beta(b, C_j); when every discount of b's vectors is a fixed 0 the driver
draws b from Gamma (E20), otherwise b and every sampled discount are slice-sampled on the driver from the summed
(c, t) and T_j histograms (table ``discount_counts``, :mod:`inference.pdpnet.engine_stats`; the steps:
:mod:`drivers.models.pdp_network.hyper_steps`).

The topic side runs the spec's ``"sampler"`` (``--sampler`` overrides): Du's table indicators (default, exactly
invariant), his collapsed multiplicity sampler (``cmgs``, :mod:`inference.pdpnet.cmgs`: not exactly invariant; the
shipped seqlda.json declares it) or the exact multiplicity sampler (``exact``, :mod:`inference.pdpnet.multiplicity`,
:mod:`inference.pdpnet.multiplicity_dag` at multi-parent vectors: exactly invariant); beside shared Pitman-Yor
vectors both run :mod:`inference.pdpnet.cmgs_owned` (documents in multiplicity form, the shared tables owned).
A partition's state is ``z`` (int32) and ``s`` (the table attributions of every parent edge and topic); every
other count is rebuilt from them (:func:`inference.pdpnet.sampler.rebuild_counts`) unless the model object
remembers the counts its last sweep of that state left (:mod:`drivers.models.pdp_network.block_memo`).
"""
from __future__ import annotations

import json

import numpy as np

from drivers.models.pdp_network import (left_to_right_scores, shared_pyp, word_sides, words_bigram,
                                        words_column, words_pyp, words_stack)
from drivers.corpora.kinds import BAG_OF_WORDS, ORDERED, SEGMENTED
from drivers.models.pdp_network.hyper_steps import NetworkHyper
from drivers.models.pdp_network.block_memo import BlockMemo, CountsMemo
from drivers.models.pdp_network.shared_roots import SharedRootsModel
from drivers.models.pdp_network.shared_pyp import SharedPypModel
from drivers.models.pdp_network.engine_specs import (CMGS_NOTE, EXACT_NOTE, INDICATORS_NOTE, NETWORK, SAMPLER,
                                                     check_engine_network, needs_histograms, read_spec_file)
from inference.gibbs.model import GibbsModel
from inference.gibbs.tables import CountTable
from inference.pdpnet import (cmgs_owned, cmgs_owned_words, cmgs_run, cmgs_shared_tokens, engine_stats, kernels, owned,
                              sweep)
from inference.pdpnet.engine_stats import MAX_GLOBAL
from inference.pdpnet.compile import CorpusLayout, compile_network
from inference.pdpnet.sampler import StirlingStack, posterior_means, rebuild_counts
from inference.pdpnet.spec import parse_network

NO_DRIFT = np.zeros(0)     # network_sweep's self-check of its kept rows: off
NO_HISTOGRAM = (np.zeros(0, np.int64), np.zeros((0, 1), np.int32))


class PdpNetwork(words_stack.StackWordArrays, words_column.ColumnWordArrays, words_bigram.BigramArrays,
                 SharedPypModel, SharedRootsModel, NetworkHyper, GibbsModel):
    """Any network of Dirichlet / Pitman-Yor vectors (module docstring) with the table-indicator sampler or CMGS."""

    name = "pdp-network"
    options = (NETWORK, SAMPLER)

    @classmethod
    def corpus_kind(cls, settings: dict) -> str:
        """The corpus the network (``settings["network"]``: train's file or name, or model.json's spec) reads: the
        tokens in text order when a vector is indexed by previous_word, segments when one is indexed by segment
        (an unsegmented corpus is one segment per document), else any."""
        raw = settings.get("network")
        spec = parse_network(raw if isinstance(raw, dict) else read_spec_file(raw or NETWORK.default))
        return ORDERED if spec.reads_order else SEGMENTED if spec.reads_segments else BAG_OF_WORDS

    def initial_hyper(self, network=None, sampler=None, **overrides) -> dict:
        """The spec (``network``: a file or a shipped spec's name) and its hyperparameters; ``sampler`` replaces
        the spec's ``"sampler"`` (validated with the spec)."""
        raw = read_spec_file(network or NETWORK.default)
        if sampler is not None:
            raw = dict(raw, sampler=sampler)
        spec = parse_network(raw)
        beta, global_families = check_engine_network(spec)
        self._raw, self._roots = raw, None
        self.read_columns(spec)
        self._word_pyp = words_pyp.word_side(spec)
        shared_pyp.check(spec, global_families, self._word_pyp)
        self.bind_shared(spec, global_families)
        hyper = {"network": raw, "beta": float(beta), "global_families": global_families,
                 "topic_sampler": {"cmgs": CMGS_NOTE, "exact": EXACT_NOTE}.get(spec.sampler, INDICATORS_NOTE),
                 "b_values": {n: p.value for n, p in spec.params.items() if p.kind == "b" and p.value < np.inf},
                 "a_values": {n: p.value for n, p in spec.params.items() if p.kind == "a"}}
        return hyper if self._word_pyp is None else dict(hyper, word_pyp=self._word_pyp)

    # ---- compiled network of a block (cached per block object)
    def _compiled(self, block, hyper):
        return self._compiled_raw(block, hyper["network"])

    def _memo(self, kind: str):
        """The model object's memory of ``kind`` (nets, vocab, counts: :mod:`drivers.models.pdp_network.block_memo`)."""
        memo = self.__dict__.setdefault("_memos", {})
        if kind not in memo:
            kinds = {"counts": CountsMemo, "roots": CountsMemo, "owned": shared_pyp.OwnedTables}
            memo[kind] = kinds.get(kind, BlockMemo)()
        return memo[kind]

    def __getstate__(self):
        """The model as shipped to the executors: without what it remembers of the driver's blocks."""
        return {k: v for k, v in self.__dict__.items() if k != "_memos"}

    def corpus_layout(self, block) -> CorpusLayout:
        """The block's documents, segments, words and kept columns' values as the network compiler reads them."""
        columns = self.column_values
        return CorpusLayout(block.doc_ptr.astype(np.int64), block.seg_ptr.astype(np.int64),
                            block.words.astype(np.int64), self.vocab_size,
                            columns.layout(block.doc_ids) if columns is not None else {})

    def _compiled_raw(self, block, raw):
        key = json.dumps(raw, sort_keys=True)
        net = self._memo("nets").get(block, key)
        if net is None:
            net = self._memo("nets").put(block, compile_network(parse_network(raw), self.corpus_layout(block),
                                                                self.num_topics, word_side=False), key)
        return net

    def _local_counts(self, net, block, state) -> dict:
        """The counts of (z, s) without the corpus-level rows (read only): the last sweep's while unchanged."""
        cnt = self._memo("counts").recall(block, state)
        return cnt if cnt is not None else rebuild_counts(net, state["z"].astype(np.int64), state["s"],
                                                          word_side=False)

    @staticmethod
    def _values(net, hyper):
        avals = np.array([hyper["a_values"][n] for n in net.a_names], np.float64)
        bvals = np.array([hyper["b_values"].get(n, np.inf) for n in net.b_names], np.float64)  # inf: a mixture
        return avals, bvals

    def _counts(self, net, block, state, hyper, global_tc, init=False, global_tables=None):
        """The kernels' counts from (z, s); a shared vector's t^c (and a shared Pitman-Yor vector's t, its edges'
        S) is ``global_tc``'s row (the sum over every partition; ``global_tables`` the engine's other tables) or,
        without it, the trained model's plus this block's own (held-out documents, ``infer``); the own go to
        ``cnt["own"]`` (:func:`shared_pyp.substitute`).
        ``init``: from s alone, no token counted (the initialising sweep adds every token of z itself)."""
        cnt = self._memo("counts").take(block, state)
        if init:
            cnt = rebuild_counts(net, np.zeros(0, np.int64), state["s"], word_side=False)
        elif cnt is None:
            cnt = rebuild_counts(net, state["z"].astype(np.int64), state["s"], word_side=False)
        if global_tc is not None:       # the sums over every partition (a shared Pitman-Yor vector's t too)
            self.shared_substitute(net, cnt, lambda g, own, n: global_tc[g] - n, global_tables)
        elif self.__dict__.get("_trained_tc") is not None:      # the trained model's plus the block's own
            self.shared_substitute(net, cnt, lambda g, own, n: own + self._trained_tc[g])
        return cnt

    def _run(self, block, state, hyper, nwk, nk, seed, frozen_phi, init, global_tc=None, words=None,
             global_tables=None):
        """``words``: the Pitman-Yor word side's (tables, derived) (:mod:`drivers.models.pdp_network.words_pyp`); a shared
        Pitman-Yor vector's sweep is :func:`owned.owned_sweep` (its own tables ``cnt["own"]``)."""
        net = self._compiled(block, hyper)
        z = state["z"].astype(np.int64)
        s = state["s"]
        frozen_phi, words_of = self.frozen_words(block, hyper, net.words, frozen_phi)   # (per token: bigram, column)
        cnt = self._counts(net, block, state, hyper, global_tc, init, global_tables)
        avals, bvals = self._values(net, hyper)
        if getattr(net, "ancestors", None) is None:       # once per compiled block (kept with it)
            net.ancestors = kernels.ancestor_lists(net.par_ptr, net.par_node)
        stirling = StirlingStack(avals, sampled=[net.spec.params[n].sample for n in net.a_names])
        frozen = frozen_phi is not None
        phi = np.ascontiguousarray(frozen_phi, dtype=np.float64) if frozen else np.zeros((1, 1))
        pos, reseed = 0, True
        multiplicity = net.spec.sampler in ("cmgs", "exact")
        hybrid = multiplicity and not init and self._own_shared(net, cnt)     # beside shared Pitman-Yor vectors
        side = self.word_side
        mxw = np.zeros(2, np.int64) if hybrid else cnt["mx"]     # (the hybrid's word cells: their own maxima)
        (head, tail), loc = ((None, None), None) if words is None else side.sweep_args(self, block, state, net, nwk,
                                                                                       words, mxw)
        kernel, owned_kernel = (None, None) if words is None else side.kernels(words)
        if multiplicity and (init or hybrid or words is None):      # (else pyp-lda's word side: word_mult, below)
            sampled = [net.spec.params[n].sample for n in net.a_names]
            tables = lambda mx: self._memo("owned").get(avals, sampled, mx)     # noqa: E731
            if not hybrid:
                cmgs_run.run_cmgs(net, block.seg_ptr[block.doc_ptr], z, s, cnt, avals, bvals, nwk, nk,
                                  float(hyper["beta"]), frozen_phi, seed, init)
            elif words is None and cmgs_shared_tokens.tokens_at_shared(net, cnt["own"][0]):   # tokens at it
                cmgs_shared_tokens.run_shared_tokens(net, z, s, cnt, avals, bvals, nwk, nk, float(hyper["beta"]),
                                                     frozen_phi, seed, stirling)
            elif words is None:                            # (cmgs_owned)
                cmgs_owned.run_hybrid(net, z, s, cnt, avals, bvals, nwk, nk, float(hyper["beta"]), frozen_phi,
                                      seed, tables)
            else:                                          # and hca's word side (cmgs_owned_words)
                pw = tail[8]
                cmgs_owned_words.run_hybrid_words(net, z, s, cnt, avals, bvals, seed, tables, head, tail,
                                                  StirlingStack(avals[[pw]], sampled=[sampled[pw]]))
            pos = -1
        topic, counts = word_sides.topic_args(net, z, avals, bvals), word_sides.count_args(net, cnt, s)
        dirichlet = (nwk, nk, float(hyper["beta"]), phi, frozen)
        while pos >= 0:
            if "own" in cnt and not init:       # a shared Pitman-Yor vector's own tables (inference.pdpnet.owned)
                ratios = self._memo("owned").get(avals, [net.spec.params[n].sample for n in net.a_names], cnt["mx"])
                if words is not None:           # both sides' indicators owned (hca: owned_words, hca-2: owned_chain)
                    pos = owned_kernel(pos, reseed, seed, *head, *topic, *ratios, *counts, *cnt["own"], *tail)
                else:
                    pos = owned.owned_sweep(pos, reseed, seed, words_of, *topic, *ratios, *counts, *dirichlet,
                                            *cnt["own"])
            else:
                stirling.ensure(cnt["mx"][0], cnt["mx"][1])
                if words is not None:           # the word side's own kernel (word_sides)
                    pos = kernel(pos, reseed, seed, *head, *topic, stirling.L3, *counts, *tail)
                else:
                    pos = sweep.network_sweep(pos, reseed, seed, True, words_of, *topic[:2], net.word_inst,
                                              *topic[2:], stirling.L3, *counts, init, True, *dirichlet, NO_DRIFT)
            reseed = False
        if words is not None:
            side.write_back(loc, nwk, words, z)
        state["z"][:] = z
        self.remember_root_rows(net, block, state, cnt)
        if not init and not self._shared_roots().nodes(net):
            self._memo("counts").remember(block, state, cnt)     # (an initialisation's are not a recount)

    def _own_shared(self, net, cnt: dict) -> bool:
        """Whether the block's network has shared Pitman-Yor vectors; their own tables in ``cnt["own"]`` (in
        process, without the engine's or a trained model's tables: the block's own counts, one partition)."""
        if "own" not in cnt:
            mask = shared_pyp.shared_mask(net, self._shared_roots().nodes(net))
            if not mask.any():
                return False
            cnt["own"] = (mask, cnt["tc"].copy(), cnt["tp"].copy())
        return True

    def _local_vocab(self, block):
        """(vocab (U,), index of every token) of the block's distinct words (remembered per block object)."""
        got = self._memo("vocab").get(block)
        if got is None:
            vocab, uidx = np.unique(block.words, return_inverse=True)
            got = self._memo("vocab").put(block, (vocab.astype(np.int64), uidx.astype(np.int64).reshape(-1)))
        return got

    def _local_pairs(self, block):
        """(pairs (U,), index of every token) of the block's distinct (previous word, word) pairs (remembered)."""
        got = self._memo("pairs").get(block)
        keys = self._token_keys(block, self.__dict__.get("_word_pyp")) if got is None else None   # (a column's
        return got if got is not None else self._memo("pairs").put(block, words_bigram.local_pairs(    # value: g V + w)
            block, self.vocab_size, keys))

    def initial_state(self, block, hyper, seed) -> dict:
        """The network's initial state; with a Pitman-Yor word side also the partition's own tables ``word_t``."""
        nwk = np.zeros((self.shared_rows, self.num_topics), dtype=np.int32)
        state = self.init_state(block, hyper, nwk, np.zeros(self.num_topics, dtype=np.int64), seed)
        word_sides.of(hyper.get("word_pyp")).initial_state(self, block, state)
        return state

    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        net = self._compiled(block, hyper)
        z = np.random.default_rng(seed).integers(0, self.num_topics, block.n_tokens).astype(np.int32)
        state = {"z": z, "s": np.zeros(int(net.eoff[-1]), np.int64)}
        self._run(block, state, hyper, nwk, nk, seed, None, init=True)
        return state

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        words = word_sides.of(hyper.get("word_pyp")).frozen_words(frozen_phi)     # (the burst side's: its own)
        self._run(block, state, hyper, nwk, nk, seed, None if words else frozen_phi, init=False, words=words)

    # ---- the engine's tables: the word counts, the corpus-level roots' t^c, the discount histograms
    def count_tables(self) -> tuple:
        tables = (CountTable("nwk", self.shared_rows, self.num_topics, "dense", cells_per_token=1),
                  CountTable("network_tc", self._shared_roots().rows if self.__dict__.get("_raw") is not None
                             else MAX_GLOBAL, self.num_topics, "dense"),
                  CountTable("discount_counts", engine_stats.HIST_ROWS, 1, "keyed",
                             cells_per_token=engine_stats.KEYS_PER_TOKEN)) + self.shared_tables(self.num_topics)
        return tables + self.word_side.count_tables(self)

    def table_counts(self, block, state, local) -> dict:
        raw = self.__dict__.get("_raw")
        net = self._compiled_raw(block, raw)
        cnt = self._local_counts(net, block, state)
        rows = self._shared_roots().nodes(net)
        out = {"nwk": self.shared_counts(block, state, local), "network_tc": shared_pyp.customers(net, cnt, rows),
               "discount_counts": engine_stats.histogram_contribution(net, cnt, shared_pyp.shared_mask(net, rows))
               if needs_histograms(net.spec) else NO_HISTOGRAM}
        out.update(self.shared_table_counts(net, cnt, state["s"], rows))
        out.update(self.word_side.table_counts(self, block, state))
        return out

    def derive(self, tables: dict) -> dict:
        return dict(super().derive(tables), **word_sides.derived_values(self, tables))

    def sweep_tables(self, block, state, hyper, tables, derived, seed) -> None:
        words = (tables.get(words_pyp.TABLE), derived, tables) if hyper.get("word_pyp") is not None else None
        self._run(block, state, hyper, tables["nwk"], derived["nk"], seed, None, init=False,
                  global_tc=tables["network_tc"], words=words, global_tables=tables)

    def bind_hyper(self, hyper: dict) -> None:
        """The network spec and its word side, from the hyperparameters (a reopened chain, a trained model)."""
        self._raw, self._roots = hyper.get("network", self.__dict__.get("_raw")), None
        self._word_pyp = hyper.get("word_pyp", self.__dict__.get("_word_pyp"))
        if self._raw is not None:
            self.bind_shared(parse_network(self._raw), hyper.get("global_families", []))

    # ---- the word side's own topics and likelihood (word_sides; None: the engine's)
    @property
    def word_side(self) -> word_sides.DirichletWords:
        return word_sides.of(self.__dict__.get("_word_pyp"))

    def sample_topic_word(self, tables, derived, hyper) -> np.ndarray:
        got = word_sides.of(hyper.get("word_pyp")).topic_word(self, tables, derived, hyper)
        return super().sample_topic_word(tables, derived, hyper) if got is None else got

    def loglik(self, tables, derived, hyper) -> float:
        got = word_sides.of(hyper.get("word_pyp")).loglik(self, tables, derived, hyper)
        return super().loglik(tables, derived, hyper) if got is None else got

    # ---- evaluation
    def left_to_right(self, block, hyper, phi_vk, settings):
        """Exact in the model: the particles carry each test document's network state (z, t, s)."""
        got = word_sides.of(hyper.get("word_pyp")).left_to_right(self, block, hyper, phi_vk, settings)
        if got is not None:         # the word side's own (burst_heldout)
            return got
        return left_to_right_scores.network_scores(block, phi_vk, settings, lambda doc: self.test_document_start(
            doc, hyper), *self.word_hook(hyper), self.column_hook(hyper, phi_vk))

    def heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        """Document completion: the word side's own (burst_heldout) or the models' (a column side's rows, ...)."""
        got = word_sides.of(hyper.get("word_pyp")).heldout_loglik(self, block, hyper, phi_vk, schedule, seed,
                                                                    partition)
        return super().heldout_loglik(block, hyper, phi_vk, schedule, seed, partition) if got is None else got

    def grown_chain(self, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``refresh``: the word side's own tables grown first, then the rest (the mixins')."""
        tables, hyper = word_sides.of(hyper.get("word_pyp")).grown_tables(self, tables, hyper, old_vocab_size)
        return super().grown_chain(tables, hyper, old_vocab_size)

    def test_document_start(self, doc, hyper) -> tuple:
        """A test document's (compiled network, counts: its own vectors empty, the corpus-level roots' tables the
        trained ones, discounts, concentrations, which discounts are sampled)."""
        net = self._compiled(doc, hyper)
        cnt = self._counts(net, doc, {"z": np.zeros(0, np.int32), "s": np.zeros(int(net.eoff[-1]), np.int64)}, hyper,
                          None, init=True)
        return (net, cnt, *self._values(net, hyper), [net.spec.params[n].sample for n in net.a_names])

    # ---- outputs
    def segment_topic(self, block, state, hyper) -> np.ndarray:
        """(S, K) posterior mean of every segment's topic vector (its tokens' draw); an empty segment: its
        document's row. When the topic draw reads theta[previous_word]: :func:`transition_rows` per segment."""
        if words_bigram.reads_previous_topics(hyper.get("network")):
            return transition_rows(block.seg_ptr, state["z"], self._token_means(block, state, hyper))
        net = self._compiled(block, hyper)
        cnt = self.with_root_rows(net, block, state, self._local_counts(net, block, state))
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

    def _token_means(self, block, state, hyper) -> np.ndarray:
        """(N, K) the posterior mean (7.12) of the vector every token's topic is drawn from (the shared rows as the
        last sweep of this state left them)."""
        net = self._compiled(block, hyper)
        cnt = self.with_root_rows(net, block, state, self._local_counts(net, block, state))
        means = posterior_means(net, cnt, *self._values(net, hyper))
        return means[net.off[net.topic_inst][:, None] + np.arange(self.num_topics)]

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        """(D, K) the token-weighted mean of the document's segment rows; when the topic draw reads
        theta[previous_word], :func:`transition_rows` per document."""
        if words_bigram.reads_previous_topics(hyper.get("network")):
            return transition_rows(block.token_ptr(), state["z"], self._token_means(block, state, hyper))
        return self._doc_rows(block, self.segment_topic(block, state, hyper), np.diff(block.seg_ptr))


def transition_rows(ptr, z, token_means) -> np.ndarray:
    """(R, K) the proportions of the token ranges ``ptr`` (documents, segments) when every token's topic is drawn
    from theta[its previous word] (session 25): (n_rk + m_rk) / (N_r + 1), n_rk the range's tokens of topic k
    (z) and m_r the mean over its tokens of their vectors' posterior means ``token_means`` (the predictive of a
    token's topic given its previous word): the range's topic counts with one pseudo-token from that predictive.
    An empty range: 1/K."""
    ptr = np.asarray(ptr, np.int64)
    R, K = len(ptr) - 1, token_means.shape[1]
    lengths = np.diff(ptr)
    of = np.repeat(np.arange(R), lengths)
    counts = np.zeros((R, K))
    np.add.at(counts, (of, np.asarray(z, np.int64)), 1.0)
    mean = np.zeros((R, K))
    np.add.at(mean, of, token_means)
    has = lengths > 0
    mean[has] /= lengths[has, None]
    out = np.full((R, K), 1.0 / K)
    out[has] = (counts[has] + mean[has]) / (lengths[has, None] + 1.0)
    return out
