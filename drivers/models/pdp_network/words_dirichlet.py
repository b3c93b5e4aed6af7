"""pdp-network's Dirichlet word side, the base of every word side object (:mod:`.word_sides`, :mod:`.words_stack`):
the engine's topic-word table M_kw with its prior as beta, nothing of its own; its hooks' defaults (no tables, the
generic sweep, the model's own held-out and refresh paths) are what a side without such a part inherits."""
from __future__ import annotations


class DirichletWords:
    """The engine's own topic-word table: nothing of its own to keep, sweep, write back or step."""

    kernel = owned_kernel = None

    def __init__(self, side: dict | None = None):
        self.side = side

    def count_tables(self, model) -> tuple:
        return ()

    def initial_state(self, model, block, state: dict) -> None:
        return None

    def table_counts(self, model, block, state: dict) -> dict:
        return {}

    def sweep_args(self, model, block, state, net, nwk, words, mx) -> tuple:
        return None, None

    def write_back(self, loc, nwk, words, z) -> None:
        return None

    def kernels(self, words) -> tuple:
        """(the sweep kernel, the one beside shared Pitman-Yor topic vectors) of a sweep with ``words``."""
        return self.kernel, self.owned_kernel

    def topic_word(self, model, tables, derived, hyper):
        """(K, V) the topics, or None: the engine's (from ``nwk`` and beta)."""
        return None

    def loglik(self, model, tables, derived, hyper):
        """log p(w | z) of the word side, or None: the engine's."""
        return None

    def sample_hyper(self, model, tables, hyper, sampled, rng) -> dict:
        return hyper

    # ---- held out (None: the model's own paths)
    def frozen_words(self, frozen_phi):
        """The ``words`` of a held-out sweep with the topics frozen, or None (the Dirichlet sweep's frozen phi)."""
        return None

    def heldout_loglik(self, model, block, hyper, phi_vk, schedule, seed, partition):
        """Document completion's [log p, tokens, documents], or None."""
        return None

    def left_to_right(self, model, block, hyper, phi_vk, settings):
        """Left to right's scores, or None."""
        return None

    def grown_tables(self, model, tables: dict, hyper: dict, old_vocab_size: int) -> tuple[dict, dict]:
        """``refresh``: the side's own tables grown to the new vocabulary (before the model's padding of the dense
        ones). The burst side's need nothing: ``nwk``, phi's and the corpus levels' tables are dense (padded),
        ``burst_hist`` holds no word, and a partition's cells keep their order (pairs d V + w sorted by (d, w) for
        any V >= the old); new documents' burst vectors start at their partitions' ``initial_state``."""
        return tables, hyper

    def values(self, hyper) -> tuple:
        """(a, b, beta0) of a one-level Pitman-Yor side."""
        return (float(hyper["a_values"][self.side["a"]]), float(hyper["b_values"][self.side["b"]]),
                float(self.side["beta0"]))
