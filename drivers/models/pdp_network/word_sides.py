"""pdp-network's word sides, one object per kind (:func:`of`): what the model asks of its word side (its engine
tables, a partition's initial tables and contributions, the sweep kernel and its arguments, the write-back, the
topics, the likelihood and the hyperparameter steps), each answered once here so the model never asks which kind.

- :class:`.words_dirichlet.DirichletWords` (the base of them all): one Dirichlet family indexed by topic, the engine's topic-word table M_kw with its prior
  as beta (the generic sweep, :func:`inference.pdpnet.sweep.network_sweep`);
- :class:`PypWords`: one Pitman-Yor family by topic over a corpus-level root (pyp-lda, :mod:`.words_pyp`); under
  ``cmgs``/``exact`` :class:`MultWords` (its cells in multiplicity form, :mod:`inference.pdpnet.word_mult`);
- :class:`BigramWords`: a family by [topic, previous_word] over a root per topic (tlm, :mod:`.words_bigram`), or by
  [topic, column:NAME] over one (the value the context: the differential topic models' phi0 as a Dirichlet; or by
  [topic, column:A, column:B, ...], the values' tuple the context: session 25);
- :class:`BigramPsiWords`: the same over a Pitman-Yor psi[topic] (tlm's prior 2b, :mod:`.words_bigram_psi`);
- :class:`BurstWords`: a family by [topic, document] over a root per topic (burstiness, DCMLDA: :mod:`.words_burst`),
  :class:`BurstChainWords` over a Pitman-Yor phi[topic] (hca's full burstiness, :mod:`.words_burst_chain`);
- :class:`DeepWords`: a chain of corpus-level Pitman-Yor word vectors (:mod:`.words_chain`) or a family by
  [topic, column:NAME] over phi0[topic] (:mod:`.words_column`);
- :class:`.words_stack.StackWords`: a chain with more than two Pitman-Yor levels per topic;
- :class:`.words_mix.MixWords`: a Pitman-Yor family by topic over several roots mixed by rho.
The partition-owned sides take ``words`` = (their word tables, derived, the engine's tables) in a sweep and answer
``sweep_args`` with ((the kernel's arguments before ``z``, after the topic side's counts), the local arrays)."""
from __future__ import annotations

import numpy as np

from drivers.models.pdp_network import (burst_heldout, words_bigram, words_bigram_psi, words_burst, words_burst_chain,
                                        words_chain, words_column, words_mix, words_pyp, words_stack)
from drivers.models.pdp_network.words_dirichlet import DirichletWords
from inference.pdpnet import owned_chain, owned_words, word_bigram, word_chain, word_column, word_mult


class PypWords(DirichletWords):
    """pyp-lda's word side: tables ``word_tables`` (t_wk) held by partitions; pyp-lda's kernel is the bigram
    side's with one context (the same chain)."""

    kernel = staticmethod(word_bigram.bigram_word_sweep)        # (a numba dispatcher binds as a method)
    owned_kernel = staticmethod(owned_words.owned_word_sweep)

    def count_tables(self, model) -> tuple:
        return (words_pyp.count_table(model.shared_rows, model.num_topics),)

    def initial_state(self, model, block, state: dict) -> None:
        vocab, uidx = model._local_vocab(block)
        state["word_t"] = words_pyp.initial_tables(words_pyp.own_customers(uidx, state["z"], len(vocab),
                                                                           model.num_topics))

    def table_counts(self, model, block, state: dict) -> dict:
        return {words_pyp.TABLE: (model._local_vocab(block)[0], state["word_t"].astype(np.int32))}

    def local_arrays(self, model, block, state, nwk, words, mx) -> tuple:
        """(the local arrays, those to write back): the global counts as read, the own, ``mx`` raised."""
        twk, derived = words[:2]
        vocab, uidx = model._local_vocab(block)
        own_n = words_pyp.own_customers(uidx, state["z"], len(vocab), model.num_topics)
        mx[0] = max(int(mx[0]), int(nwk.max(initial=0)))
        mx[1] = max(int(mx[1]), int(twk.max(initial=0)))
        loc = words_pyp.local_arrays(vocab, uidx, own_n, state["word_t"], nwk, twk, derived)
        return loc, loc

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        loc, written = self.local_arrays(model, block, state, nwk, words, mx)
        side = self.side
        head = tuple(loc[k] for k in ("uidx", "pword", "pctx"))
        tail = tuple(loc[k] for k in ("nloc", "tloc", "Nc", "Tc", "troot", "Troot", "own_n")) + (
            state["word_t"], net.a_names.index(side["a"]), net.b_names.index(side["b"]), float(side["beta0"]))
        return (head, tail), written

    def write_back(self, loc, nwk, words, z) -> None:
        if loc is not None:
            words_pyp.write_back(loc, nwk, words[0], words[1])

    def topic_word(self, model, tables, derived, hyper):
        return words_pyp.topic_word(tables["nwk"], tables[words_pyp.TABLE], *self.values(hyper))

    def loglik(self, model, tables, derived, hyper):
        return words_pyp.loglik(tables["nwk"], tables[words_pyp.TABLE], *self.values(hyper))

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return words_pyp.sample_hyper(self.side, tables["nwk"], tables[words_pyp.TABLE], hyper, sampled, rng)


class MultWords(PypWords):
    """pyp-lda's word side under ``cmgs``/``exact``: the word cells in multiplicity form (t_wk, no indicators;
    :mod:`inference.pdpnet.word_mult`), the same tables ``word_tables`` and own t^p <= n^p (``word_t``)."""

    kernel = staticmethod(word_mult.mult_word_sweep)
    owned_kernel = None

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        (head, tail), written = super().sweep_args(model, block, state, net, nwk, words, mx)
        return (head, tail + (self.side["multiplicity"] == "exact", word_mult.RIGHT)), written


class BigramWords(PypWords):
    """tlm's word side: keyed tables ``bigram_customers`` / ``bigram_word_tables`` over the pairs (w', w)."""

    def count_tables(self, model) -> tuple:
        column, names = words_bigram.context_column(self.side), words_bigram.context_columns(self.side)
        return words_bigram.count_tables(model.vocab_size, model.num_topics, None if column is None else 1
                                         if names is None else int(np.prod([model._columns.sizes()[n]
                                                                            for n in names])))

    def initial_state(self, model, block, state: dict) -> None:
        state["word_t"] = words_bigram.initial_tables(*model._local_pairs(block), state["z"], model.num_topics)

    def table_counts(self, model, block, state: dict) -> dict:
        return words_bigram.table_counts(*model._local_pairs(block), state, model.num_topics)

    def local_arrays(self, model, block, state, nwk, words, mx) -> tuple:
        derived = words[1]
        loc = derived.get(words_bigram.LOCAL)
        if loc is None:     # the first sweep of a synchronisation: the local copies of the global values
            loc = derived[words_bigram.LOCAL] = words_bigram.local_arrays(
                *model._local_pairs(block), state, derived, model.vocab_size, model.num_topics)
        loc["own_n"] = words_pyp.own_customers(loc["uidx"], state["z"], *state["word_t"].shape)
        mx[0] = max(int(mx[0]), int(loc["nloc"].max(initial=0)))
        mx[1] = max(int(mx[1]), int(loc["tloc"].max(initial=0)))
        return loc, None

    def topic_word(self, model, tables, derived, hyper):
        return words_bigram.topic_word(tables["nwk"], derived, *self.values(hyper)[1:])

    def loglik(self, model, tables, derived, hyper):
        return words_bigram.loglik(derived, *self.values(hyper), model.vocab_size)

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return words_bigram.sample_hyper(self.side, words_bigram.derived(tables, model.vocab_size, model.num_topics),
                                         hyper, sampled, rng)


class BigramPsiWords(BigramWords):
    """tlm's word side with psi[topic] a Pitman-Yor vector over a corpus-level root or chain (Wallach's prior 2b):
    the bigram side's keyed cells, psi's and the corpus levels' dense indicators, the [topic, column] side's kernel
    with the previous word as the value (:mod:`.words_bigram_psi`)."""

    kernel = staticmethod(word_column.column_word_sweep)
    owned_kernel = staticmethod(owned_chain.owned_chain_sweep)      # beside a shared Pitman-Yor topic vector

    def count_tables(self, model) -> tuple:
        return words_bigram_psi.count_tables(model, self.side)

    def initial_state(self, model, block, state: dict) -> None:
        words_bigram_psi.initial_state(model, block, state, self.side)

    def table_counts(self, model, block, state: dict) -> dict:
        return words_bigram_psi.table_counts(model, block, state)

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        return words_bigram_psi.sweep_args(model, block, state, net, words, mx, self.side)

    def topic_word(self, model, tables, derived, hyper):
        return words_bigram_psi.topic_word(tables, words_bigram.derived(tables, model.vocab_size, model.num_topics),
                                           self.side, hyper)

    def loglik(self, model, tables, derived, hyper):
        return words_bigram_psi.loglik(tables, words_bigram.derived(tables, model.vocab_size, model.num_topics),
                                       self.side, hyper)

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return words_bigram_psi.sample_hyper(model, self.side, tables, hyper, sampled, rng)


class BurstWords(PypWords):
    """A word vector per topic per document over phi[topic] (:mod:`.words_burst`): the documents' cells local to
    their partition, ``nwk`` phi's customers (the tables), the bigram side's kernel with the document as context."""

    kernel = staticmethod(word_bigram.burst_word_sweep)         # (the bigram kernel, the documents' rows read first)
    owned_kernel = staticmethod(owned_words.owned_word_sweep)   # beside a shared Pitman-Yor topic vector

    def count_tables(self, model) -> tuple:
        return words_burst.count_tables()

    def initial_state(self, model, block, state: dict) -> None:
        words_burst.initial_state(model, block, state)

    def table_counts(self, model, block, state: dict) -> dict:
        return words_burst.table_counts(model, block, state)

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        return words_burst.sweep_args(model, block, state, net, nwk, mx, self.side, words[1])

    def write_back(self, loc, nwk, words, z) -> None:
        words_burst.write_back(loc, nwk)

    def topic_word(self, model, tables, derived, hyper):
        return words_burst.phi_mean(tables["nwk"], float(self.side["beta0"]))

    def loglik(self, model, tables, derived, hyper):
        return words_burst.loglik(tables, *self.values(hyper))

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return words_burst.sample_hyper(self.side, tables, hyper, sampled, rng)

    def frozen_words(self, frozen_phi):
        return burst_heldout.frozen_words(frozen_phi)

    def heldout_loglik(self, model, block, hyper, phi_vk, schedule, seed, partition):
        return burst_heldout.heldout_loglik(model, block, hyper, phi_vk, schedule, seed, partition)

    def left_to_right(self, model, block, hyper, phi_vk, settings):
        return burst_heldout.left_to_right(model, block, hyper, phi_vk, settings)



class BurstChainWords(BurstWords):
    """hca's full burstiness: the burst vectors over a Pitman-Yor phi[topic] over a corpus root or chain
    (:mod:`.words_burst_chain`: the [topic, column] side's kernel with the document as the value); a held-out
    sweep (phi frozen) is :class:`BurstWords`' (its kernels chosen by :meth:`kernels`, the object unchanged)."""

    kernel = staticmethod(word_column.column_word_sweep)
    owned_kernel = staticmethod(owned_chain.owned_chain_sweep)      # beside a shared Pitman-Yor topic vector

    def count_tables(self, model) -> tuple:
        return words_burst_chain.count_tables(model, self.side)

    def initial_state(self, model, block, state: dict) -> None:
        words_burst_chain.initial_state(model, block, state, self.side)

    def table_counts(self, model, block, state: dict) -> dict:
        return words_burst_chain.table_counts(model, block, state)

    def kernels(self, words) -> tuple:
        """A held-out sweep's (phi frozen) are :class:`BurstWords`' (the object is not changed)."""
        if words[1].get(words_burst.FROZEN) is not None:
            return BurstWords.kernel, BurstWords.owned_kernel
        return self.kernel, self.owned_kernel

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        if words[1].get(words_burst.FROZEN) is not None:
            return super().sweep_args(model, block, state, net, nwk, words, mx)
        return words_burst_chain.sweep_args(model, block, state, net, nwk, words, mx, self.side)

    def write_back(self, loc, nwk, words, z) -> None:
        if loc is not None and "troot" not in loc:
            words_burst_chain.write_back(loc, nwk, words)

    def topic_word(self, model, tables, derived, hyper):
        return words_burst_chain.topic_word(tables, self.side, hyper)

    def loglik(self, model, tables, derived, hyper):
        return words_burst_chain.loglik(tables, self.side, hyper)

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return words_burst_chain.sample_hyper(self.side, tables, hyper, sampled, rng)


class DeepWords(PypWords):
    """A chain of corpus-level Pitman-Yor word vectors (pyp-lda-2) or a [topic, column:NAME] side over phi0[topic]:
    every level's indicators held by partitions (:mod:`.words_column`, :mod:`.words_chain`)."""

    @property
    def kernel(self):
        return word_column.column_word_sweep if self.side.get("column") else word_chain.chain_word_sweep

    @property
    def owned_kernel(self):
        """Beside a shared Pitman-Yor topic vector (hca-2): :func:`owned_chain.owned_chain_sweep`, a chain with no
        bottom level (:func:`owned_chain_args`)."""
        return owned_chain.owned_chain_sweep if self.side.get("column") else owned_chain_args

    def count_tables(self, model) -> tuple:
        return words_column.count_tables(model, self.side)

    def initial_state(self, model, block, state: dict) -> None:
        words_column.initial_state(model, block, state, self.side)

    def table_counts(self, model, block, state: dict) -> dict:
        return words_column.table_counts(model, block, state, self.side)

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        return words_column.word_args(model, block, state, nwk, words, mx, self.side, net)

    def write_back(self, loc, nwk, words, z) -> None:
        words_column.write_back(loc, nwk, words, z)

    def topic_word(self, model, tables, derived, hyper):
        if self.side.get("column"):
            return words_column.topic_word(tables, self.side, hyper, *model._column_shape(hyper))
        return words_chain.topic_word(tables, self.side, hyper)

    def loglik(self, model, tables, derived, hyper):
        if self.side.get("column"):
            return words_column.loglik(tables, self.side, hyper, *model._column_shape(hyper))
        return words_chain.loglik(tables, self.side, hyper)

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        if self.side.get("column"):
            return words_column.sample_hyper(self.side, tables, hyper, sampled, rng, *model._column_shape(hyper))
        return words_chain.sample_hyper(self.side, tables, hyper, sampled, rng)


def owned_chain_args(pos, reseed, seed, uidx, *args):
    """:func:`owned_chain.owned_chain_sweep` on a chain's arguments (``args`` ending with the
    :data:`.words_chain.KERNEL_ARGS` of :func:`.words_chain.kernel_args`): no bottom level (``pb`` = -1, its arrays
    empty)."""
    mid, tail = args[:-words_chain.KERNEL_ARGS], args[-words_chain.KERNEL_ARGS:]
    none, empty = np.zeros(0, np.int64), np.zeros((0, tail[0].shape[1]), np.int64)
    return owned_chain.owned_chain_sweep(pos, reseed, seed, uidx, none, none, *mid, *(empty,) * 6, *tail[:12], -1, -1,
                                         1.0, *tail[12:])


def topic_args(net, z, avals, bvals) -> tuple:
    """The topic side's arguments every network kernel takes after its word-side head (``net.ancestors`` set)."""
    return (z, net.topic_inst, *net.ancestors, net.kind, net.dim, net.off, net.alpha, net.a_of, net.b_of,
            net.par_ptr, net.par_node, net.par_gamma, net.gamma_sum, avals, bvals)


def count_args(net, cnt: dict, s) -> tuple:
    """The topic side's counts every network kernel takes (after the Stirling table or ratio tables)."""
    return (cnt["n"], cnt["tc"], cnt["tp"], cnt["Nn"], cnt["TC"], cnt["TP"], s, cnt["Se"], net.eoff, cnt["mx"])


def derived_values(model, tables: dict) -> dict:
    """The derived values of whichever word tables ``tables`` holds (by the tables, not the side: a model object not
    bound to a spec derives them too)."""
    out = words_pyp.derived(tables[words_pyp.TABLE]) if words_pyp.TABLE in tables else {}
    if words_bigram.CUSTOMERS in tables:
        out.update(words_bigram.derived(tables, model.vocab_size, model.num_topics))
    return out


def of(side: dict | None) -> DirichletWords:
    """The word side object of ``side`` (:func:`.words_pyp.word_side`'s answer, kept in the hyperparameters as
    ``word_pyp``; None: the Dirichlet side)."""
    if side is None:
        return DirichletWords()
    if side.get("burst"):
        return BurstChainWords(side) if "bottom" in side else BurstWords(side)
    if words_bigram_psi.is_psi(side):
        return BigramPsiWords(side)
    if side.get("middle"):
        return words_stack.StackWords(side)
    if side.get("mix"):
        return words_mix.MixWords(side)
    if side.get("column") or side.get("chain"):
        return DeepWords(side)
    if side.get("multiplicity"):
        return MultWords(side)
    return BigramWords(side) if side.get("bigram") else PypWords(side)
