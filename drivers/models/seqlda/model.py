"""Sequential LDA (SeqLDA, thesis ch. 6; Du, Buntine & Jin, ICDM 2010) on the Gibbs engine.

Generative process (thesis §6.3): mu_i0 ~ Dir(alpha); for the segments j = 1..J_i
of document i in layout order, mu_ij ~ PDP(a, b_i, mu_i,j-1); z ~ mu_ij;
w ~ phi_z. Restaurant j's tables are proxy customers of restaurant j-1, so its
customers for topic k number n_ijk + t_i,j+1,k. Joint with mu and phi
integrated out (6.3)::

    prod_i Beta_K(alpha + t_i1) / Beta_K(alpha)
        prod_j (b_i|a)_{T_ij} / (b_i)_{N_ij + T_i,j+1} prod_k S^{n_ijk + t_i,j+1,k}_{t_ijk, a}
    x prod_k Beta_W(gamma + M_k) / Beta_W(gamma)

subject to t_ijk = 0 iff n_ijk + t_i,j+1,k = 0 and t_ijk <= n_ijk + t_i,j+1,k;
the zeros of t_i.k form a suffix starting at u_ik.

Sampler (thesis Algorithm 5, collapsed multiplicity Gibbs): per token remove it
with the cascade of forced table removals towards j = 1 (pitfall 3), draw its
topic from the three cases (6.4)-(6.6) by u_ik (proportionalities: the common
1/(b + N_ij + T_i,j+1) is dropped), add it (tables at u_ik..j when u_ik <= j),
then redraw t_ijk of the new topic from (6.7) on its support
[max(1, t_i,j-1,k - n_i,j-1,k), min(n_ijk + t_i,j+1,k, M_max)] (pitfall 5).
``sampler="exact"`` instead removes tables stochastically up the chain (the
token, then each removed table's proxy, sat alone with probability
S^{c-1}_{t-1} / S^c_t) and draws topic and new-table path from the seating
predictive; the thesis' forced-only removal is not exactly invariant for (6.3)
(z-marginal TV 0.05-0.19 on enumerable chains, tests/models/test_seqlda.py).
Optional (``table_sweep``, default on): after each document, the table counts of
pass-through restaurants (n_ijk = 0, t_i,j+1,k >= 2), which no token move ever
redraws, are redrawn from (6.7) too (a valid extra Gibbs step).

Kernel cost per token (thesis §11.2: O(K) plus the product over j' = u_ik..j
plus O(n) for (6.7)): the products of G_j' over the restaurants above j and
each topic's factor of (6.4)-(6.6) are kept along a segment and refreshed for
the token's old and new topic only, in full only when a move adds or removes a
table above j (a few percent of tokens after burn-in); the exact sampler keeps
its chain rows V_l the same way, recomputed from the lowest stale row, and walks
them for the new-table path only as far as the draw needs. The per-token helpers
run without numba's reference counting (see ``common.token_kernel``). On the WEB
chapters split into sentences (K = 20, about 36 segments per document) a CMGS
sweep costs about 2.7x an LDA-Gibbs sweep in CPU time (6.3x before), the exact
sampler about 4x (19x before).

Hyperparameters: ``a`` fixed (global). ``b_i`` per document, state-resident
(``state["b"]``), drawn in ``local_hyper_update`` with the auxiliaries
q_ij ~ Beta(b_i, N_ij + T_i,j+1) (6.11): for a = 0 from
Gamma(sum_j T_ij, rate sum_j log 1/q_ij); for a > 0 from (6.12) with the same
1/b prior by an exact slice sampler on log b. ``alpha`` by Newton-Raphson
(thesis §6.5, Minka's O(K) Hessian inverse) on the driver from the first
segments' table counts t_i1k ((6.8) corrected: t*_{i,0,k} -> t*_{i,1,k}): each
partition returns gradient and Hessian terms at the broadcast alpha, the driver
takes one Newton step per cycle (a fixed-point step when Newton would leave
alpha > 0), limited to a factor 2 per cycle, after ``alpha_burn_in`` cycles.
"""
from __future__ import annotations

import numpy as np

from drivers.models.seqlda.kernels import alpha_newton_terms, seqlda_init, seqlda_sweep
from inference import left_to_right
from inference.gibbs.franchise_left_to_right import chain, franchise_scores
from inference.dirichlet import alpha_newton_step
from inference.gibbs.common import (TABLE_SAMPLER, check_cmgs_hyper, check_pdp, dirichlet_mean, frozen_args,
                                    longest_span, parse_hyper, positive_vector)
from inference.gibbs.model import PDP_CONCENTRATION, PDP_DISCOUNT, GibbsModel, SegmentedBlock
from inference.gibbs.pdp import sample_chain_concentrations, stirling_table


DEFAULT_ALPHA = 0.1
DEFAULT_BETA = 0.01
DEFAULT_A = 0.0
DEFAULT_B = 10.0
DEFAULT_M_MAX = 1000
DEFAULT_ALPHA_BURN_IN = 20


class SeqLDA(GibbsModel):
    """Sequential LDA with the collapsed multiplicity Gibbs sampler on the segment chain (thesis ch. 6)."""

    #: a revised document leaves the chain by these axes (inference.gibbs.continuation)
    state_axes = {"z": "token", "n": "segment", "t": "segment", "b": "document"}

    name = "seqlda"
    options = GibbsModel.options + (PDP_DISCOUNT, PDP_CONCENTRATION, TABLE_SAMPLER)

    def initial_hyper(self, **overrides) -> dict:
        """Defaults alpha = 0.1 (optimised after 20 cycles), beta = 0.01, a = 0, b = 10 (initial b_i, sampled),
        m_max = 1000.

        Overrides (``None`` = default): ``alpha``, ``beta``, ``a``, ``b``, ``sample_b``, ``optimize_alpha``,
        ``alpha_burn_in`` / ``b_burn_in`` (cycles before updating), ``m_max`` (cap on a table count),
        ``table_sweep`` (redraw pass-through table counts after each document), ``sampler``: ``"cmgs"`` (thesis
        Algorithm 5, default) or ``"exact"`` (stochastic table removal + seating predictive, see
        :func:`seqlda_sweep`).
        """
        K = self.num_topics
        hyper = parse_hyper(overrides, [
            ("alpha", DEFAULT_ALPHA, lambda v: positive_vector(v, K, "alpha")),
            ("beta", DEFAULT_BETA, float),
            ("a", DEFAULT_A, float),
            ("b", DEFAULT_B, float),
            ("sample_b", True, bool),
            ("optimize_alpha", True, bool),
            ("alpha_burn_in", DEFAULT_ALPHA_BURN_IN, int),
            ("b_burn_in", 0, int),
            ("m_max", DEFAULT_M_MAX, int),
            ("table_sweep", True, bool),
            ("sampler", "cmgs", str),
        ])
        check_cmgs_hyper(hyper)
        return hyper

    @staticmethod
    def _sizes(block: SegmentedBlock, hyper) -> tuple[int, int]:
        """(M_max cap on a table count, largest customer count + 1 the kernels may look up)."""
        mcap = max(1, min(longest_span(block.token_ptr()), int(hyper.get("m_max", DEFAULT_M_MAX))))
        return mcap, longest_span(block.seg_ptr) + mcap + 1

    def init_state(self, block, hyper, nwk, nk, seed) -> dict:
        z, n, t = seqlda_init(block.doc_ptr, block.seg_ptr, block.words, self.num_topics, nwk, nk, seed)
        return {"z": z, "n": n, "t": t, "b": np.full(block.n_docs, float(hyper["b"]))}

    def _bdoc(self, block, state, hyper) -> np.ndarray:
        if hyper.get("sample_b", True) and "b" in state:
            return state["b"]
        return np.full(block.n_docs, float(hyper["b"]))

    def sweep(self, block, state, hyper, nwk, nk, seed, frozen_phi=None) -> None:
        a = float(hyper["a"])
        check_pdp(a, float(hyper["b"]))
        mcap, rows = self._sizes(block, hyper)
        table = stirling_table(a).ensure(rows + 1, mcap)
        phi, frozen = frozen_args(frozen_phi)
        seqlda_sweep(block.doc_ptr, block.seg_ptr, block.words, state["z"], state["n"], state["t"],
                     self._bdoc(block, state, hyper), nwk, nk, np.asarray(hyper["alpha"], dtype=np.float64),
                     float(hyper["beta"]), a, table.log, table.ratio, table.cratio, mcap, phi, frozen,
                     bool(hyper.get("table_sweep", True)), hyper.get("sampler", "cmgs") == "exact", seed)

    def local_hyper_update(self, block, state, hyper, seed) -> None:
        """b_i per document (6.11)/(6.12), in the state."""
        if not hyper.get("sample_b", True) or int(hyper.get("cycles", 0)) < int(hyper.get("b_burn_in", 0)):
            return
        if "b" not in state:
            state["b"] = np.full(block.n_docs, float(hyper["b"]))
        sample_chain_concentrations(block.doc_ptr, block.seg_ptr, state["t"], state["t"], state["b"], float(hyper["a"]),
                                    seed)

    def partition_stats(self, block, state, hyper, seed) -> np.ndarray:
        """Newton terms of alpha at the broadcast alpha (:func:`alpha_newton_terms`), then [sum_i b_i, D]."""
        K = self.num_topics
        out = np.zeros(2 * K + 5)
        if hyper.get("optimize_alpha", True):
            out[:2 * K + 3] = alpha_newton_terms(block.doc_ptr, state["t"], np.asarray(hyper["alpha"], np.float64))
        b = self._bdoc(block, state, hyper)
        out[2 * K + 3] = float(np.sum(b))
        out[2 * K + 4] = float(block.n_docs)
        return out

    def update_hyper(self, hyper, stats, num_documents, seed) -> dict:
        """One Newton step on alpha; ``b_mean`` (mean of the b_i) for the record."""
        K = self.num_topics
        hyper = dict(hyper, cycles=int(hyper.get("cycles", 0)) + 1)
        stats = np.asarray(stats, dtype=np.float64)
        if hyper.get("optimize_alpha", True) and hyper["cycles"] > int(hyper.get("alpha_burn_in", 0)):
            hyper["alpha"] = alpha_newton_step(np.asarray(hyper["alpha"], np.float64), stats[:2 * K + 3]).tolist()
        if stats.shape[0] >= 2 * K + 5 and stats[2 * K + 4] > 0:
            hyper["b_mean"] = float(stats[2 * K + 3] / stats[2 * K + 4])
        return hyper

    def left_to_right(self, block, hyper, phi_vk, settings) -> left_to_right.LeftToRightScores:
        """Every particle carries the document's seating in its chain of segment PDPs
        (:mod:`inference.gibbs.franchise_left_to_right`); a test document's b_i is not sampled: the training
        documents' mean ``b_mean`` (``b`` when b is fixed), said in the protocol."""
        b = float(hyper.get("b_mean", hyper["b"])) if hyper.get("sample_b", True) else float(hyper["b"])
        return franchise_scores(block, hyper["alpha"], float(hyper["a"]), b, phi_vk, settings, chain,
                                f"particles: every particle seats the document's tokens in its chain of segment PDPs "
                                f"(exact given b_i = {b:.4g}, the training documents' mean)")

    def doc_topic(self, block, state, hyper) -> np.ndarray:
        """(D, K) mu-hat_i0k = (alpha_k + t_i1k) / sum_k (alpha_k + t_i1k) ((6.8), t of the first segment)."""
        t1 = np.zeros((block.n_docs, self.num_topics))
        has = np.diff(block.doc_ptr) > 0
        t1[has] = state["t"][block.doc_ptr[:-1][has]]
        return dirichlet_mean(t1, hyper["alpha"])

    def segment_topic(self, block, state, hyper) -> np.ndarray:
        """(S, K) mu-hat_ij (6.9), recursively from mu-hat_i0:
        [(a T_ij + b_i) mu_i,j-1 + n_ijk + t_i,j+1,k - a t_ijk] / (b_i + N_ij + T_i,j+1)."""
        a = float(hyper["a"])
        b = self._bdoc(block, state, hyper)
        mu0 = self.doc_topic(block, state, hyper)
        n = state["n"].astype(np.float64)
        t = state["t"].astype(np.float64)
        out = np.empty_like(n)
        for d in range(block.n_docs):
            s0, s1 = int(block.doc_ptr[d]), int(block.doc_ptr[d + 1])
            prev = mu0[d]
            for s in range(s0, s1):
                cust = n[s] + (t[s + 1] if s + 1 < s1 else 0.0)
                T = t[s].sum()
                prev = ((a * T + b[d]) * prev + cust - a * t[s]) / (b[d] + cust.sum())
                out[s] = prev
        return out
