"""The hierarchical Dirichlet bigram language model (MacKay & Peto 1995; Wallach §2.2, the thesis' HDLM baseline)
on the Gibbs engine.

Every context w' (the previous word; a segment's first word has the start context, id V) has its own
distribution over the next word, phi_w' ~ Dir(beta n) with one base measure n shared by all contexts (3.2)-(3.4).
With phi integrated out the evidence of the bigram counts N_{w|w'} is (3.5)

    P(w | beta n) = prod_w' Gamma(beta) / Gamma(N_w' + beta) prod_w Gamma(N_{w|w'} + beta n_w) / Gamma(beta n_w)

and the predictive (3.6)/(3.7) is (N_{w|w'} + beta n_w) / (N_w' + beta), an interpolation of the context's
bigram frequencies with n (3.8)/(3.9). beta n is set to the maximum of the evidence (empirical Bayes, Fig.
3.1b) by the thesis' fixed point (2.13)/(2.58) on the histograms of the counts (2.50)-(2.53),

    [beta n_w]* = beta n_w sum_{w'} [Psi(N_{w|w'} + beta n_w) - Psi(beta n_w)] / sum_{w'} [Psi(N_w' + beta) - Psi(beta)],

until no beta n_w moves by 1e-6 (§1.6; a word never seen after any context keeps the floor
:data:`MIN_PSEUDOCOUNT`, MacKay & Peto's zero pseudocount, pitfall 3).

There is nothing latent: the statistics are the counts, a keyed table ``bigrams`` with key w' V + w (the
(V + 1) x V row space is never allocated), counted once by the partitions; the driver's global step runs the
fixed point (``latent = False``: no sweep, no synchronisation). Held-out documents are scored as the thesis
scores the HDLM, every word left to right: p(w_n | w_{n-1}) with the training counts and the document's own
earlier bigrams (each test document on its own, §6.2's parallel form); ``infer`` gives every document its
log-likelihood and per-word perplexity. ``topic_word.npy`` is the base measure n (1 x V: the unigram the
contexts back off to, related to the number of contexts a word follows), so ``topics`` shows its top words.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from inference import left_to_right
from inference.constraints import POSITIVE
from inference.dm import CountHistograms, estimate
from inference.gibbs.model import GibbsModel, SegmentedBlock
from inference.gibbs.tables import CountTable, KeyedCounts, merge_keyed
from inference.options import ModelOption

MIN_PSEUDOCOUNT = 1e-10
TOLERANCE = 1e-6
MAX_STEPS = 2000


def bigram_keys(block: SegmentedBlock, vocab_size: int) -> np.ndarray:
    """(N,) int64 key w' V + w of every token: its previous word in the segment, or the start context V."""
    V = int(vocab_size)
    previous = np.empty(block.n_tokens, dtype=np.int64)
    previous[1:] = block.words[:-1]
    starts = block.seg_ptr[:-1]
    previous[starts[starts < block.n_tokens]] = V
    return previous * V + block.words


def fixed_point(keys: np.ndarray, counts: np.ndarray, vocab_size: int, alpha_m: np.ndarray,
                tolerance: float = TOLERANCE, max_steps: int = MAX_STEPS) -> tuple[np.ndarray, int]:
    """beta n maximising the evidence (3.5) of the bigram counts (``keys`` w' V + w, ``counts``), by the fixed
    point (2.58) from ``alpha_m`` (:mod:`inference.dm`, "exact": the digamma recurrence on the histograms of the
    counts (2.50)-(2.53), one term per count value, not per context); returns it and the steps taken."""
    V = int(vocab_size)
    hist = CountHistograms(V).add_sparse(keys // V, keys % V, counts)
    start = np.maximum(np.asarray(alpha_m, dtype=np.float64), MIN_PSEUDOCOUNT)
    found = estimate(hist, "exact", start, tol=tolerance, max_iter=max_steps)
    return found.alpha_m, found.iterations


def log_evidence(keys: np.ndarray, counts: np.ndarray, vocab_size: int, alpha_m: np.ndarray) -> float:
    """log P(w | beta n) of (3.5) (the contexts' Dirichlet-multinomials)."""
    V = int(vocab_size)
    a = np.asarray(alpha_m, dtype=np.float64)
    alpha = a.sum()
    totals = np.bincount(keys // V, weights=counts, minlength=V + 1)
    totals = totals[totals > 0]
    words = keys % V
    return float(totals.shape[0] * gammaln(alpha) - gammaln(totals + alpha).sum()
                 + (gammaln(counts + a[words]) - gammaln(a[words])).sum())


class BigramLM(GibbsModel):
    """The HDLM of MacKay & Peto (Wallach §2.2): no topics (``--topics`` is not used; the model has one
    "topic", the base measure), nothing to sample."""

    name = "bigram-lm"
    options = (ModelOption("beta", "initial concentration beta of every context's Dirichlet (3.3), with a uniform "
                                   "base measure n (default V: a pseudocount of 1 a word); the fixed point "
                                   "optimises beta n", constraint=POSITIVE),)
    latent = False
    heldout_protocol = ("every word left to right, p(w | previous word) from the training bigrams and the "
                        "document's earlier ones (eq 3.6)")
    document_files = ("doc_perplexity.parquet",)
    array_files = ("bigram_keys", "bigram_counts", "base_measure")

    def __init__(self, num_topics: int, vocab_size: int):
        super().__init__(num_topics, vocab_size)
        self.trained = None     # keys, counts, alpha_m (beta n), context totals
        #: counts of documents outside the corpus being counted (a refreshed model's), added before the fit
        self.kept_counts: dict[str, KeyedCounts] | None = None

    def initial_hyper(self, beta=None, optimize=True, tolerance=TOLERANCE, max_steps=MAX_STEPS) -> dict:
        b = float(self.vocab_size) if beta is None else float(beta)
        if not math.isfinite(b) or b <= 0:
            raise ValueError(f"beta must be a positive number, got {beta}")
        return {"beta": b, "base_measure": None, "optimize": bool(optimize),
                "tolerance": float(tolerance), "max_steps": int(max_steps)}

    def alpha_m(self, hyper: dict) -> np.ndarray:
        """beta n (V,) of the hyperparameters (``base_measure`` None: uniform)."""
        n = hyper.get("base_measure")
        n = np.full(self.vocab_size, 1.0 / self.vocab_size) if n is None else np.asarray(n, dtype=np.float64)
        return float(hyper["beta"]) * n

    # ---- the one table, counted once
    def count_tables(self) -> tuple:
        V = self.vocab_size
        return (CountTable("bigrams", (V + 1) * V, 1, "keyed", cells_per_token=1),)

    def table_counts(self, block, state, local) -> dict:
        keys, counts = np.unique(bigram_keys(block, self.vocab_size), return_counts=True)
        return {"bigrams": (keys, counts.astype(np.int32)[:, None])}

    def derive(self, tables: dict) -> dict:
        return {}

    def initial_state(self, block, hyper, seed) -> dict:
        return {"tokens": np.array([block.n_tokens], dtype=np.int64)}

    def check_state(self, block, state) -> None:
        tokens = state.get("tokens") if isinstance(state, dict) else None
        if tokens is None or tokens.tolist() != [block.n_tokens]:
            raise TypeError(f"{self.name}: the state is the block's token count")

    def sweep_tables(self, block, state, hyper, tables, derived, seed) -> None:
        raise RuntimeError(f"{self.name} has nothing to sample (latent = False)")

    # ---- the driver: the fixed point
    def global_step(self, tables, hyper, stats, seed):
        if self.kept_counts is not None:
            tables = {name: merge_keyed(value.columns, np.r_[value.keys, self.kept_counts[name].keys],
                                        np.vstack([value.counts, self.kept_counts[name].counts]))
                      for name, value in tables.items()}
        if not hyper.get("optimize", True):
            return tables, hyper, None
        bigrams = tables["bigrams"]
        a, steps = fixed_point(bigrams.keys, bigrams.counts[:, 0].astype(np.int64), self.vocab_size,
                               self.alpha_m(hyper), float(hyper.get("tolerance", TOLERANCE)),
                               int(hyper.get("max_steps", MAX_STEPS)))
        beta = float(a.sum())
        return tables, dict(hyper, beta=beta, base_measure=(a / beta).tolist(), fixed_point_steps=steps), None

    def loglik(self, tables, derived, hyper) -> float:
        bigrams = tables["bigrams"]
        return log_evidence(bigrams.keys, bigrams.counts[:, 0].astype(np.int64), self.vocab_size,
                            self.alpha_m(hyper))

    # ---- outputs
    def summarise_sample(self, summary, tables, derived, hyper) -> np.ndarray:
        return np.zeros(0)

    def topic_word_of_samples(self, summary, samples, tables, derived, hyper) -> np.ndarray:
        a = self.alpha_m(hyper)
        return (a / a.sum())[None, :]

    def accumulate_sample(self, block, state, hyper, acc) -> dict:
        return dict(acc, samples=acc["samples"] + 1)

    def bind_result(self, result) -> None:
        bigrams = result.tables["bigrams"]
        self._bind(bigrams.keys, bigrams.counts[:, 0], self.alpha_m(result.hyper))

    def _bind(self, keys, counts, alpha_m) -> None:
        keys, counts = np.asarray(keys, dtype=np.int64), np.asarray(counts, dtype=np.int64)
        V = self.vocab_size
        self.trained = {"keys": keys, "counts": counts, "alpha_m": np.asarray(alpha_m, dtype=np.float64),
                        "totals": np.bincount(keys // V, weights=counts, minlength=V + 1)}

    def saved_arrays(self) -> dict:
        t = self.trained
        return {"bigram_keys": t["keys"], "bigram_counts": t["counts"].astype(np.int32),
                "base_measure": t["alpha_m"]}

    def bind_arrays(self, arrays: dict, meta: dict) -> None:
        self._bind(arrays["bigram_keys"], arrays["bigram_counts"], arrays["base_measure"])

    def describe(self) -> dict:
        t = self.trained
        return {"topics": 1, "iterations": 1, "burn_in": 0, "lag": 1, "samples": 1,
                "contexts": int(np.count_nonzero(t["totals"])), "bigrams": int(t["keys"].shape[0])}

    def document_proportions(self, item: dict):
        block = item["block"]
        return np.ones((block.n_docs, 1)), np.ones((block.n_segments, 1))

    def document_outputs(self, item: dict) -> dict:
        block = item["block"]
        acc = item.get("acc") or {}
        loglik = acc["loglik"] if "loglik" in acc else self.document_logliks(block)
        tokens = np.diff(block.token_ptr()).astype(np.int64)
        return {"doc_perplexity.parquet": {"doc_id": np.asarray(block.doc_ids, dtype=object), "tokens": tokens,
                                           "loglik": loglik, "perplexity": np.exp(-loglik / np.maximum(tokens, 1))}}

    # ---- the predictive
    def token_log_probabilities(self, block: SegmentedBlock) -> np.ndarray:
        """(N,) log p(w_n | w_{n-1}) of every token, left to right within its document: the training counts plus
        the document's own earlier bigrams (3.6)."""
        t, V = self.trained, self.vocab_size
        keys = bigram_keys(block, V)
        contexts = keys // V
        doc = np.repeat(np.arange(block.n_docs, dtype=np.int64), np.diff(block.token_ptr()))
        earlier_pairs = _earlier_equal(doc, keys)
        earlier_contexts = _earlier_equal(doc, contexts)
        at = KeyedCounts(t["keys"], t["counts"].astype(np.int32)[:, None]).find(keys)
        trained = np.zeros(keys.shape[0], dtype=np.int64)
        trained[at >= 0] = t["counts"][at[at >= 0]]
        a = t["alpha_m"]
        return np.log((trained + earlier_pairs + a[block.words]) /
                      (t["totals"][contexts] + earlier_contexts + a.sum()))

    def document_logliks(self, block: SegmentedBlock) -> np.ndarray:
        doc = np.repeat(np.arange(block.n_docs), np.diff(block.token_ptr()))
        return np.bincount(doc, weights=self.token_log_probabilities(block), minlength=block.n_docs)

    def heldout_loglik(self, block, hyper, phi_vk, schedule, seed, partition) -> np.ndarray:
        return np.array([float(self.token_log_probabilities(block).sum()), float(block.n_tokens),
                         float(block.n_docs)])

    def infer_sums(self, block, hyper, phi_vk, schedule, seed, partition) -> dict:
        return {"samples": np.ones(1), "loglik": self.document_logliks(block)}

    def left_to_right(self, block, hyper, phi_vk, settings) -> left_to_right.LeftToRightScores:
        """Exact: nothing is latent, so p(w_d) is the product of the predictives (3.6) left to right (the
        training bigrams and the document's earlier ones); particles are not used."""
        return left_to_right.exact_scores(block, self.vocab_size, self.document_logliks,
                                          "exact: the bigram predictive chain (3.6), nothing latent")


def _earlier_equal(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For every position, how many earlier positions of the same group hold the same value."""
    order = np.lexsort((np.arange(values.shape[0]), values, group))
    g, v = group[order], values[order]
    start = np.r_[True, (g[1:] != g[:-1]) | (v[1:] != v[:-1])] if values.shape[0] else np.zeros(0, bool)
    run_start = np.maximum.accumulate(np.where(start, np.arange(values.shape[0]), 0))
    out = np.empty(values.shape[0], dtype=np.int64)
    out[order] = np.arange(values.shape[0]) - run_start
    return out
