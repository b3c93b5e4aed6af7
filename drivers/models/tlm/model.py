"""The topic-based language model (Wallach 2008 §3.4; Wallach 2006) on the Gibbs engine: a bigram topic model.

Every document has topic proportions theta_d ~ Dir(alpha m) (3.21); token n draws z_n ~ theta_d and then its word
from the distribution of its topic and previous word, w_n ~ phi_{w_{n-1} z_n} (3.20). The first token of a segment
has no previous word: its context is a start symbol (id V, one context per topic), recorded in ``model.json`` as
``first_token_context``. Priors over phi (``--prior-variant``):

* ``1``, ``2``: non-hierarchical, phi_{w't} ~ Dir(beta n) (3.22) or Dir(beta n_t) (3.23), with the base measures
  optimised by Gibbs EM (Alg. 3.1, :mod:`drivers.models.tlm.hyper`);
* ``h1``, ``h2a``, ``h2b``, ``h3``: hierarchical (Table 3.3), the base measures integrated out, the internal draws
  replaced by the minimal or maximal path assumption (``--path``), beta, beta0 (beta1) slice-sampled.

alpha m is optimised by the same fixed point (2.58) on the documents' topic histograms (``--fixed-alpha``: not).

The Gibbs conditional is (3.28)/(3.54): p(z_n = t | .) ∝ (N_{t|d} + alpha m_t) P(w_n | w_{n-1}, t, .), the token
taken out of every count first (:mod:`drivers.models.tlm.kernels`). Global statistics: ``bigram_topics``, the
keyed table N_{w|w't} (key (w' V + w) K + t, :mod:`drivers.models.tlm.counts`), and ``doc_topic_histograms``,
the documents' topic-count histograms C_t(n), C_.(n) as a keyed table (:meth:`CountHistograms.rows`) for the
alpha m step. A partition sweeps on its own copies of the counts of the pairs its tokens use (AD-LDA).

Outputs: ``topic_word.npy`` every topic's unigram estimate (N_{w|t} + beta_t q_t(w)) / (N_t + beta_t) (q_t the
base measure it backs off to) of the final state, ``doc_topics`` (3.31) averaged over the samples,
``bigram_topic_keys.npy``/``bigram_topic_counts.npy`` the final N_{w|w't}. Held-out documents are scored left to
right (Alg. 3.3, one state per particle: :meth:`TopicLM.left_to_right`; the training state frozen, every test
document on its own, §6.2), every word of a document from its first.
"""
from __future__ import annotations

import numpy as np

from inference import left_to_right
from inference.constraints import AT_LEAST_1, POSITIVE, StrOptions
from inference.errors import RefusedError
from inference.dm import CountHistograms
from inference.gibbs.model import GibbsModel, SegmentedBlock
from inference.gibbs.tables import CountTable, KeyedCounts
from drivers.models.tlm.counts import (HIERARCHICAL, PATHS, VARIANTS, local_counts, pair_keys, prior_of,
                                        split_keys, upper_counts)
from drivers.models.tlm.hyper import (SamplePool, SequentialEvidence, alpha_step, base_measure_step,
                                       concentration_names, dirichlet_log_evidence, sample_concentrations)
from drivers.models.tlm.kernels import document_topics, left_to_right_document, tlm_sweep
from inference.heldout import document_seed
from inference.options import ModelOption

DEFAULT_ALPHA = 0.1
DEFAULT_BETA_PER_WORD = 0.1
TOLERANCE = 1e-6
MAX_STEPS = 1000
FIRST_TOKEN_CONTEXT = ("start symbol: a segment's first token follows the start context, id V (one context per "
                       "topic)")
_LOCAL = "_tlm_local"       # a partition's counts between the sweeps of one synchronisation


def _doc_seed(seed: int, doc_id) -> int:
    """The kernels' seed (numba's generator takes 32 bits) of a document: a function of (seed, doc_id) only."""
    return document_seed(seed, str(doc_id)) & 0xFFFFFFFF


class TopicLM(GibbsModel):
    """Wallach's topic-based language model; ``num_topics`` T."""

    name = "tlm"
    options = (
        ModelOption("prior_variant", "prior over the bigram distributions: 1, 2 (non-hierarchical, Gibbs EM), h1, "
                    "h2a, h2b, h3 (hierarchical, slice-sampled concentrations); default 2", str,
                    metavar="1|2|h1|h2a|h2b|h3", constraint=StrOptions(tuple(VARIANTS))),
        ModelOption("path", "counts of the hierarchical priors' upper levels: minimal (type counts) or maximal (raw "
                    "counts, the thesis' ch. 3; default)", str, metavar="minimal|maximal",
                    constraint=StrOptions(PATHS)),
        ModelOption("beta", "initial concentration beta of every (previous word, topic) context (default 0.1 V)",
                    constraint=POSITIVE),
        ModelOption("beta0", "initial concentration beta0 of the top level (hierarchical; default 0.1 V)",
                    constraint=POSITIVE),
        ModelOption("beta1", "initial concentration beta1 of the middle level (h2b, h3; default 0.1 V)",
                    constraint=POSITIVE),
        ModelOption("em_samples", "Gibbs EM (Alg. 3.1): samples S of the E-step, one per synchronisation, pooled "
                    "in each M-step of alpha m and beta n (default 1)", int, metavar="S", constraint=AT_LEAST_1))
    array_files = ("bigram_topic_keys", "bigram_topic_counts")
    heldout_protocol = ("left to right (Alg. 3.3), one state per particle (--heldout-samples particles), training "
                        "state frozen, each particle's earlier tokens in its counts, every word scored")

    def __init__(self, num_topics: int, vocab_size: int):
        super().__init__(num_topics, vocab_size)
        if (int(vocab_size) + 1) * int(vocab_size) * int(num_topics) >= 1 << 62:
            raise ValueError(f"tlm: (V + 1) V K = {(vocab_size + 1) * vocab_size * num_topics} keys do not fit int64")
        self.trained = None
        self._pool = None       # the driver's samples since the last M-step (Gibbs EM with em_samples > 1)

    def __getstate__(self):
        """The model as shipped to the executors: the driver's pool of Gibbs EM stays on the driver."""
        return dict(self.__dict__, _pool=None)

    # ---- hyperparameters
    def initial_hyper(self, alpha=None, optimize_alpha=True, prior_variant=None, path=None, beta=None, beta0=None,
                      beta1=None, optimize_beta=True, sample_hyper=True, slice_iterations=5, slice_width=1.0,
                      tolerance=TOLERANCE, max_steps=MAX_STEPS, em_samples=None) -> dict:
        K, V = self.num_topics, self.vocab_size
        variant = "2" if prior_variant is None else str(prior_variant)
        if variant not in VARIANTS:
            raise ValueError(f"prior_variant must be one of {', '.join(VARIANTS)}, got {prior_variant!r}")
        if path is not None and variant not in HIERARCHICAL:
            raise ValueError(f"--path applies to the hierarchical prior variants ({', '.join(HIERARCHICAL)}), "
                             f"not to --prior-variant {variant}")
        if path is not None and path not in PATHS:
            raise ValueError(f"path must be minimal or maximal, got {path!r}")
        a = np.full(K, DEFAULT_ALPHA) if alpha is None else np.broadcast_to(
            np.asarray(alpha, dtype=np.float64), (K,)).copy()
        if not (np.all(np.isfinite(a)) and np.all(a > 0)):
            raise ValueError(f"alpha must be a positive number or {K} positive numbers")
        values = {}
        for key, value in (("beta", beta), ("beta0", beta0), ("beta1", beta1)):
            values[key] = DEFAULT_BETA_PER_WORD * V if value is None else float(value)
            if not (np.isfinite(values[key]) and values[key] > 0):
                raise ValueError(f"{key} must be a positive number, got {value}")
        hyper = {"prior_variant": variant, "alpha": a.tolist(), "beta": values["beta"],
                 "optimize_alpha": bool(optimize_alpha), "tolerance": float(tolerance), "max_steps": int(max_steps),
                 "cycles": 0, "em_samples": 1 if em_samples is None else int(em_samples), "em_pooled": 0}
        if hyper["em_samples"] < 1:
            raise ValueError(f"em_samples must be at least 1, got {em_samples}")
        if variant in HIERARCHICAL:
            hyper.update(path=path or "maximal", beta0=values["beta0"], sample_hyper=bool(sample_hyper),
                         slice_iterations=int(slice_iterations), slice_width=float(slice_width))
            if "beta1" in concentration_names(variant):
                hyper["beta1"] = values["beta1"]
        else:
            hyper.update(beta_n=None, optimize_beta=bool(optimize_beta))
        return hyper

    def prior(self, hyper: dict):
        return prior_of(hyper, self.num_topics, self.vocab_size)

    # ---- tables
    def count_tables(self) -> tuple:
        V, K = self.vocab_size, self.num_topics
        return (CountTable("bigram_topics", (V + 1) * V * K, 1, "keyed", cells_per_token=1),
                CountTable("doc_topic_histograms", (K + 1) << 32, 1, "keyed", cells_per_token=2))

    def table_counts(self, block, state, local) -> dict:
        keys, counts = np.unique(pair_keys(block, self.vocab_size) * self.num_topics + state["z"],
                                 return_counts=True)
        hist_keys, hist_counts = CountHistograms(self.num_topics).add_observations(block.token_ptr(),
                                                                                   state["z"]).rows()
        return {"bigram_topics": (keys, counts.astype(np.int32)[:, None]),
                "doc_topic_histograms": (hist_keys, hist_counts.astype(np.int32)[:, None])}

    def derive(self, tables: dict) -> dict:
        """Nothing: a partition derives the context totals and upper levels of its pairs from the table (they
        depend on the prior variant, in the hyperparameters)."""
        return {}

    def initial_state(self, block, hyper, seed) -> dict:
        return {"z": np.random.default_rng(seed).integers(0, self.num_topics, block.n_tokens).astype(np.int32)}

    def _local(self, pairs, keys, counts, hyper) -> tuple:
        prior = self.prior(hyper)
        derived = upper_counts(keys, counts, self.vocab_size, self.num_topics, prior.variant, prior.minimal)
        return prior, local_counts(pairs, keys, counts, derived, self.vocab_size, self.num_topics, prior.variant,
                                   prior.minimal)

    def sweep_tables(self, block, state, hyper, tables, derived, seed) -> None:
        if _LOCAL not in derived:
            keys = pair_keys(block, self.vocab_size)
            pairs = np.unique(keys)
            table = tables["bigram_topics"]
            prior, local = self._local(pairs, table.keys, table.counts[:, 0].astype(np.int64), hyper)
            derived[_LOCAL] = (prior, local, local.pair_of(keys))
        prior, local, pair_of = derived[_LOCAL]
        tlm_sweep(block.token_ptr(), pair_of, state["z"], np.asarray(hyper["alpha"], dtype=np.float64),
                  *prior.scalars(), *local.arrays(), seed)

    # ---- the driver: Gibbs EM's M-step or the slice sampler
    def global_step(self, tables, hyper, stats, seed):
        """Gibbs EM's M-step once ``em_samples`` samples are pooled (alpha m; beta n of priors 1, 2), and the
        slice sampler of the hierarchical priors' concentrations after every synchronisation."""
        hyper = dict(hyper, cycles=int(hyper.get("cycles", 0)) + 1)
        tol, steps = float(hyper.get("tolerance", TOLERANCE)), int(hyper.get("max_steps", MAX_STEPS))
        variant = hyper["prior_variant"]
        fit_beta = variant not in HIERARCHICAL and hyper.get("optimize_beta", True)
        if hyper.get("optimize_alpha", True) or fit_beta:
            pool = self._pooled(tables, hyper, fit_beta)
            if pool is not None:
                if hyper.get("optimize_alpha", True):
                    hyper["alpha"] = alpha_step(pool.alpha, hyper["alpha"], tol, steps).tolist()
                if fit_beta:
                    bn = base_measure_step(pool.contexts, self.prior(hyper).bn, tol, steps)
                    hyper["beta_n"] = bn[0].tolist() if variant == "1" else bn.tolist()
                    hyper["beta"] = float(bn.sum(axis=1).mean())
        if variant in HIERARCHICAL and hyper.get("sample_hyper", True):
            evidence = SequentialEvidence(tables["bigram_topics"], self.vocab_size, self.num_topics,
                                          self.prior(hyper))
            hyper.update(sample_concentrations(evidence, hyper, np.random.default_rng(seed)))
        return tables, hyper, None

    def _pooled(self, tables: dict, hyper: dict, with_contexts: bool):
        """Add this synchronisation's sample to the driver's pool; the pool once it holds ``em_samples`` samples
        (then emptied), else None. ``hyper["em_pooled"]`` counts the pooled samples, so a run resumed from a
        checkpoint taken inside a pool (whose samples were never written) refuses rather than pools fewer."""
        pooled = int(hyper.get("em_pooled", 0))
        if pooled and (self._pool is None or self._pool.size != pooled):
            raise RefusedError(f"tlm: the checkpoint is in the middle of Gibbs EM's pool of {hyper['em_samples']} "
                               f"samples ({pooled} pooled, not in the checkpoint): resume from a run whose "
                               f"--checkpoint-every is a multiple of --em-samples")
        if self._pool is None:
            self._pool = SamplePool(self.vocab_size, self.num_topics, hyper["prior_variant"])
        self._pool.add(tables, with_contexts)
        if self._pool.size < int(hyper.get("em_samples", 1)):
            hyper["em_pooled"] = self._pool.size
            return None
        pool, self._pool = self._pool, None
        hyper["em_pooled"] = 0
        return pool

    def grown_chain(self, tables, hyper, old_vocab_size):
        """A chain over ``old_vocab_size`` words for this vocabulary: N_{w|w't} re-keyed ((w' V + w) K + t; the
        start context V_old becomes V), the histograms as they are; priors 1 and 2: every new word's beta n_t
        entry starts at its row's mean (as every word starts), and the next M-step fits it."""
        V0, V, K = int(old_vocab_size), self.vocab_size, self.num_topics
        table = tables["bigram_topics"]
        previous, word, topic = split_keys(table.keys, V0, K)
        previous = np.where(previous == V0, V, previous)
        keys = (previous * V + word) * K + topic
        order = np.argsort(keys, kind="stable")
        grown = dict(tables, bigram_topics=KeyedCounts(keys[order], table.counts[order]))
        if hyper.get("beta_n") is None or V == V0:
            return grown, hyper
        bn = np.asarray(hyper["beta_n"], dtype=np.float64)
        rows = np.atleast_2d(bn)
        rows = np.hstack([rows, np.repeat(rows.mean(axis=1, keepdims=True), V - V0, axis=1)])
        return grown, dict(hyper, beta_n=(rows[0] if bn.ndim == 1 else rows).tolist(),
                           beta=float(rows.sum(axis=1).mean()))

    def loglik(self, tables, derived, hyper) -> float:
        """log P(w | z, U): (3.26), or (3.55) for the hierarchical priors."""
        prior = self.prior(hyper)
        if hyper["prior_variant"] in HIERARCHICAL:
            return SequentialEvidence(tables["bigram_topics"], self.vocab_size, self.num_topics, prior)(
                prior.beta, prior.beta0, prior.beta1)
        return dirichlet_log_evidence(tables["bigram_topics"], self.vocab_size, self.num_topics, prior)

    # ---- outputs
    def sample_topic_word(self, tables, derived, hyper) -> np.ndarray:
        return self.topic_word_of_table(tables["bigram_topics"], hyper)

    def topic_word_of_table(self, table: KeyedCounts, hyper: dict) -> np.ndarray:
        """(K, V) (N_{w|t} + beta_t q_t(w)) / (N_t + beta_t)."""
        V, K = self.vocab_size, self.num_topics
        prior = self.prior(hyper)
        _, word, topic = split_keys(table.keys, V, K)
        n = np.zeros((K, V))
        np.add.at(n, (topic, word), table.counts[:, 0])
        up = upper_counts(table.keys, table.counts[:, 0], V, K, prior.variant, prior.minimal)
        q = prior.upper(up["mid"], up["mid_t"], up["top"], up["toptot"])
        beta = prior.beta_t if hyper["prior_variant"] not in HIERARCHICAL else np.full(K, prior.beta)
        phi = (n + beta[:, None] * q) / (n.sum(axis=1) + beta)[:, None]
        return phi / phi.sum(axis=1, keepdims=True)

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        """(D, K) (N_{t|d} + alpha m_t) / (N_d + alpha) (3.31)."""
        alpha = np.asarray(hyper["alpha"], dtype=np.float64)
        doc = np.repeat(np.arange(block.n_docs), np.diff(block.token_ptr()))
        ndk = np.zeros((block.n_docs, self.num_topics))
        np.add.at(ndk, (doc, state["z"]), 1.0)
        theta = ndk + alpha
        return theta / theta.sum(axis=1, keepdims=True)

    def segment_topic(self, block, state, hyper) -> np.ndarray:
        return self.doc_topic(block, state, hyper)[block.doc_of_segment()]

    def bind_result(self, result) -> None:
        table = result.tables["bigram_topics"]
        self._bind(table.keys, table.counts[:, 0], result.hyper)

    def _bind(self, keys, counts, hyper) -> None:
        self.trained = {"keys": np.asarray(keys, dtype=np.int64), "counts": np.asarray(counts, dtype=np.int64),
                        "hyper": dict(hyper)}

    def saved_arrays(self) -> dict:
        return {"bigram_topic_keys": self.trained["keys"],
                "bigram_topic_counts": self.trained["counts"].astype(np.int32)}

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        self._bind(arrays["bigram_topic_keys"], arrays["bigram_topic_counts"], meta["hyper"])

    def describe(self) -> dict:
        hyper = self.trained["hyper"] if self.trained else {}
        return {"first_token_context": FIRST_TOKEN_CONTEXT, "prior_variant": hyper.get("prior_variant"),
                "path": hyper.get("path"), "bigram_topic_cells": int(self.trained["keys"].shape[0])
                if self.trained else 0}

    # ---- the predictive, given the trained state
    def _block_counts(self, block: SegmentedBlock, hyper: dict):
        t = self.trained
        keys = pair_keys(block, self.vocab_size)
        prior, local = self._local(np.unique(keys), t["keys"], t["counts"], hyper)
        return prior, local, local.pair_of(keys)

    def heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        """``evaluate``'s default method: the left-to-right estimate with ``schedule.samples`` particles."""
        scores = self.left_to_right(block, hyper, phi_vk, left_to_right.LeftToRight(schedule.samples, True, seed))
        rows = scores.per_document
        return np.array([rows[:, left_to_right.LEFT_TO_RIGHT].sum(), rows[:, left_to_right.SCORED].sum(),
                         float(block.n_docs)])

    def left_to_right(self, block, hyper, phi_vk, settings) -> left_to_right.LeftToRightScores:
        """Left-to-right (Alg. 3.3, one state per particle; :func:`left_to_right_document`) of every document: the
        training state frozen, each particle's earlier tokens in the counts it scores the next word with (the
        model's own predictive), words outside the vocabulary skipped (the previous word of the next one is the
        last known word)."""
        known = left_to_right.known_tokens(block.words, self.vocab_size)
        doc = np.repeat(np.arange(block.n_docs), np.diff(block.token_ptr()))
        skipped = np.bincount(doc, weights=~known, minlength=block.n_docs)
        kept = block if known.all() else _known_only(block, known)
        prior, local, pair_of = self._block_counts(kept, hyper)
        alpha_m = np.asarray(hyper["alpha"], dtype=np.float64)
        ptr = kept.token_ptr()
        out = np.zeros((block.n_docs, left_to_right.COLUMNS))
        for d in range(block.n_docs):
            probs = left_to_right_document(pair_of[ptr[d]:ptr[d + 1]], alpha_m, settings.particle_seeds(
                block.doc_ids[d]), bool(settings.resample), *prior.scalars(), *local.arrays())
            logs = np.log(probs)
            top = logs.max(axis=0) if probs.shape[1] else np.zeros(0)
            estimate = left_to_right.DocumentEstimate(top + np.log(np.mean(np.exp(logs - top), axis=0)),
                                                      logs.sum(axis=1))
            out[d] = (estimate.log_left_to_right, estimate.log_importance if probs.shape[1] else 0.0,
                      ptr[d + 1] - ptr[d], skipped[d])
        protocol = (f"particles: z of the document's tokens with the training counts frozen and each particle's "
                    f"earlier tokens in the bigram-topic counts ({hyper['prior_variant']}"
                    f"{', ' + hyper['path'] + ' path' if hyper.get('path') else ''})")
        return left_to_right.LeftToRightScores(out, protocol)

    def infer_sums(self, block, hyper, phi_vk, schedule, seed, partition) -> dict:
        prior, local, pair_of = self._block_counts(block, hyper)
        alpha_m = np.asarray(hyper["alpha"], dtype=np.float64)
        ptr = block.token_ptr()
        doc = np.zeros((block.n_docs, self.num_topics))
        for d in range(block.n_docs):
            sums, _ = document_topics(pair_of[ptr[d]:ptr[d + 1]], alpha_m, schedule.iterations, schedule.burn_in,
                                      schedule.lag, schedule.samples, *prior.scalars(), *local.arrays(),
                                      _doc_seed(seed, block.doc_ids[d]))
            doc[d] = sums
        return {"samples": np.array([float(schedule.samples)]), "doc": doc, "seg": doc[block.doc_of_segment()]}


def _known_only(block: SegmentedBlock, known: np.ndarray) -> SegmentedBlock:
    """The block without the tokens ``known`` marks False (segments and documents kept, maybe empty)."""
    kept = np.concatenate([[0], np.cumsum(known)])
    return SegmentedBlock(block.doc_ids, block.doc_ptr, kept[block.seg_ptr].astype(np.int64), block.words[known])
