"""AdaTM, the adaptive topic model (Du thesis ch.7), sampled by the blocked table-indicator Gibbs sampler.

Model (thesis §7.2, with nu_{i,0} = mu_i)::

    mu_i     ~ Dirichlet_K(alpha)
    rho_ij   ~ Beta(lambda_T, lambda_S)        weight of the previous-segment edge (see "pairing" below)
    nu_ij    ~ PYP(a, b, rho_ij nu_{i,j-1} + (1 - rho_ij) mu_i)
    z_ijl    ~ Discrete(nu_ij),  w_ijl ~ Discrete_W(phi_{z_ijl}),  phi_k ~ Dirichlet_W(beta)

Chinese-restaurant reading: segment j of document i is a restaurant, its
customers for topic k are its own words n_{i,j,k} plus the proxy tables
t*_{i,j+1,k} of the next segment; each table is sent either to the previous
segment (t*_{i,j,k}) or to the document (s*_{i,j,k}); t*_{i,1,k} = 0.

Per-partition state (plain arrays, as the engine's ``.npz``): ``z`` (N,),
``n``, ``t``, ``s`` (S x K int32, global segment index). Per-document sums
(N_{i,j}, T_{i,j}, S_{i,j}, sum_j s*_{i,j,k}) are rebuilt by the kernel at the
start of every document. Hyperparameters ``alpha`` (K), ``beta``, ``a``,
``lambda_s``, ``lambda_t`` are fixed (the thesis' perplexity runs: alpha = 0.1,
lambda_S = lambda_T = 1, beta = 0.01, a = 0.2); ``b`` is "optimised
automatically" in the thesis (§7.4.3, the scheme of ch. 6, details not given):
here, with a = 0 (default; the thesis finds AdaTM's perplexity insensitive to
a), b is drawn once per cycle by the auxiliary-variable step of STM's (5.8)
applied to (7.2), whose b-terms are prod_ij b^{T_ij+S_ij} Gamma(b) /
Gamma(b + N_ij + T_{i,j+1}): q_ij ~ Beta(b, N_ij + T_{i,j+1}) per restaurant
with customers (``partition_stats``), b ~ Gamma(sum (T+S), rate sum log 1/q)
on the driver (improper prior 1/b) -- the same a and b treatment as STM and
SeqLDA, so the orderings compare the models, not their settings
(``sample_b=False`` or a > 0: b fixed, default 10). ``max_tables`` caps the
tables per (segment, topic) (the Stirling cache's columns, thesis §3.3: a
node at the cap cannot open another table); ``btigs_exact`` see below.

Derivation notes (the places where the printed thesis is wrong or silent):

* (7.2) denominator: (b)_{N_ij + T_{i,j+1}} (customers of restaurant j), not
  (b)_{N_ij + T_ij + 1}.
* Pairing: (7.2), (7.9), (7.10), (7.12) all pair lambda_S with S (document
  edge) and lambda_T with T (previous-segment edge); the sampler follows the
  equations, so rho (weight of nu_{i,j-1}) ~ Beta(lambda_T, lambda_S), and the
  generator :func:`generate_adatm` draws it that way.
* Segment 1: nu_{i,1} ~ PYP(a, b, mu_i) has no rho (its two edges both lead
  to mu_i), so its tables go to mu_i with probability 1 and (7.2) has no Beta
  factor for j = 1; the (u1=-1, u2=1) term of (7.10) therefore carries no
  (S_{i,1}+lambda_S)/(S_{i,1}+lambda_S+lambda_T) factor.
* Algorithm 6: "return" inside the loop means "break" (the decrements after
  the loop must run); the removal probabilities (7.5)-(7.7) use the counts
  *including* the customer being removed (pitfall 9).
* Lone table (thesis §7.3.2 case 2b, pitfall 4): the thesis forces a node
  with one table and more customers to keep it. That is not a Gibbs step: it
  removes the "stay" branch of the exact move from some states only, and the
  chain's stationary distribution is then biased (tests enumerate a tiny
  posterior: total variation ~0.15 over (z, t, s), ~0.04 on z alone).
  Default ``btigs_exact=True``: the indicator is drawn by (7.5)-(7.7) with no
  override; if that leaves nodes with customers but no table, the word is
  re-inserted with z fixed and a chain u2 <= the lowest such node (the only
  completions of positive probability, weights from the same (7.9)/(7.10)).
  ``btigs_exact=False`` gives the thesis rule.
* Algorithm 7's guard "j' <= u' and j' > 1" drops every (7.9) term when
  u' = -1 (the word's topic already has customers in its segment). Enumerated
  here instead: (0, j) [(7.8)], (1, j') for 2 <= j' <= j [(7.9)] and
  (-1, j') for 1 <= j' <= j [(7.10)]; invalid configurations (joining a table
  in an empty restaurant) get weight exactly 0 from S^1_{0,a} = 0.

Kernel cost per token (extract §11.2 asks for cached prefix products): summed
over the indicator, (7.8)-(7.10) obey a recursion along the chain, the
"arrival weights" W[x, k] of one new customer of topic k at restaurant x
(:func:`_arrival_weights`); row g gives Algorithm 7's topic totals. The sweep
keeps the rows below the current segment for the whole document and
recomputes only those a move made stale (a chain that leaves the segment), so
a token costs O(K) plus O(K) per stale row instead of O(K j); u given z is
then drawn by walking the chain only as far as the draw needs; the per-token
helpers run without numba's reference counting (``common.token_kernel``). On
the WEB chapters split into sentences (K = 20, about 36 segments per document)
a sweep costs about 4x LDA-Gibbs's in CPU time (8x with reference counting,
33x before the kept rows).
"""
from __future__ import annotations

import numpy as np

from drivers.models.adatm.kernels import (_b_auxiliary, _conditional_kernel, _init_kernel, _remove_token,
                                          _segment_topic_kernel, _sweep_kernel, btigs_factors)
from inference import left_to_right
from inference.gibbs.franchise_left_to_right import adaptive, franchise_scores
from inference.constraints import POSITIVE
from inference.dirichlet import gamma_concentration_step
from inference.gibbs.common import frozen_args, longest_span
from inference.gibbs.model import PDP_CONCENTRATION, PDP_DISCOUNT, GibbsModel, SegmentedBlock
from inference.gibbs.pdp import sample_chain_concentrations
from inference.options import ModelOption


DEFAULT_MAX_TABLES = 256  # column cap M_max of the Stirling cache (thesis §3.3 footnote 4)


# ---------------------------------------------------------------------------------------------------------------
# The GibbsModel
# ---------------------------------------------------------------------------------------------------------------

_DUMMY_PHI = np.zeros((1, 1))


class AdaTM(GibbsModel):
    """Adaptive topic model (thesis ch.7) with the BTIGS sampler (§7.3); alpha, a, lambdas fixed, b sampled
    (a = 0) or fixed."""

    #: a revised document leaves the chain by these axes (inference.gibbs.continuation)
    state_axes = {"z": "token", "n": "segment", "t": "segment", "s": "segment", "b": "document"}

    name = "adatm"
    options = GibbsModel.options + (PDP_DISCOUNT, PDP_CONCENTRATION,
                                    ModelOption("lambda_s", "Beta prior lambda_S", constraint=POSITIVE),
                                    ModelOption("lambda_t", "Beta prior lambda_T", constraint=POSITIVE))

    def initial_hyper(self, **overrides) -> dict:
        """Thesis §7.4 perplexity defaults alpha 0.1, gamma(beta) 0.01, lambda_S = lambda_T = 1, b "optimised
        automatically using the scheme discussed in Chapter 6" (``sample_b``, from b = 10, after ``b_burn_in``
        cycles). ``b_scope="document"``: that scheme, a b_i per document drawn as SeqLDA's (6.11)/(6.12) with
        AdaTM's tables (t* + s*) and customers (n + t* of the next segment), any a;
        ``"global"``: one b drawn as STM's (5.8) (needs a = 0, otherwise b stays fixed).
        ``sample_b=False``: b fixed."""
        K = self.num_topics
        hyper = {"alpha": [0.1] * K, "beta": 0.01, "a": 0.0, "b": 10.0, "lambda_s": 1.0, "lambda_t": 1.0,
                 "max_tables": DEFAULT_MAX_TABLES, "btigs_exact": True, "sample_b": True, "b_burn_in": 0,
                 "b_scope": "global"}
        for key, value in overrides.items():
            if value is None:
                continue
            if key not in hyper and key != "optimize_alpha":
                raise TypeError(f"AdaTM has no hyperparameter {key!r} (known: {', '.join(sorted(hyper))})")
            if key == "optimize_alpha":          # the engine's --fixed-alpha; alpha is always fixed here
                if value:
                    raise ValueError("AdaTM keeps alpha fixed (thesis §7.4 perplexity runs: alpha = 0.1)")
                continue
            if key == "alpha":
                value = np.broadcast_to(np.asarray(value, dtype=float), (K,)).tolist()
            elif key in ("max_tables", "b_burn_in"):
                value = int(value)
            elif key in ("btigs_exact", "sample_b"):
                value = bool(value)
            elif key == "b_scope":
                if value not in ("global", "document"):
                    raise ValueError(f"b_scope must be 'global' or 'document', got {value!r}")
            else:
                value = float(value)
            hyper[key] = value
        if not 0.0 <= hyper["a"] < 1.0 or hyper["b"] <= -hyper["a"]:
            raise ValueError(f"PDP needs 0 <= a < 1 and b > -a, got a={hyper['a']}, b={hyper['b']}")
        if hyper["lambda_s"] <= 0 or hyper["lambda_t"] <= 0:
            raise ValueError("lambda_s and lambda_t must be positive")
        return hyper

    # -- state ---------------------------------------------------------------------------------------------
    def init_state(self, block: SegmentedBlock, hyper: dict, nwk: np.ndarray, nk: np.ndarray, seed: int) -> dict:
        K = self.num_topics
        S = block.n_segments
        z = np.zeros(block.n_tokens, dtype=np.int32)
        n = np.zeros((S, K), dtype=np.int32)
        t = np.zeros((S, K), dtype=np.int32)
        s = np.zeros((S, K), dtype=np.int32)
        _init_kernel(block.doc_ptr, block.seg_ptr, block.words, K, z, n, t, s, nwk, nk, seed)
        state = {"z": z, "n": n, "t": t, "s": s}
        if self._per_document(hyper):
            state["b"] = np.full(block.n_docs, float(hyper["b"]))
        return state

    @staticmethod
    def _per_document(hyper) -> bool:
        return bool(hyper.get("sample_b", False)) and hyper.get("b_scope", "global") == "document"

    def _bdoc(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """b of every document: the state's b_i (``b_scope="document"``) or the global b repeated."""
        if self._per_document(hyper) and "b" in state:
            return state["b"]
        return np.full(block.n_docs, float(hyper["b"]))

    def factors(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """The Stirling factor table sized for this block: c < longest document, m <= max(cap, current max)."""
        tp = block.token_ptr()
        longest = longest_span(tp, 0)
        m_now = int((state["t"] + state["s"]).max()) if state["t"].size else 0
        cols = min(max(int(hyper.get("max_tables", DEFAULT_MAX_TABLES)), m_now), longest + 1) + 1
        return btigs_factors(hyper["a"], longest + 2, max(cols, 2))

    def _args(self, hyper):
        K = self.num_topics
        alpha = np.ascontiguousarray(np.broadcast_to(np.asarray(hyper["alpha"], dtype=np.float64), (K,)))
        return (alpha, float(hyper["beta"]), float(hyper["a"]), float(hyper["b"]),
                float(hyper["lambda_s"]), float(hyper["lambda_t"]))

    def _kernel_args(self, block, state, hyper):
        """``_args`` with b replaced by the per-document array the sweep and estimate kernels take."""
        alpha, beta, a, _, lam_s, lam_t = self._args(hyper)
        return alpha, beta, a, np.ascontiguousarray(self._bdoc(block, state, hyper)), lam_s, lam_t

    def sweep(self, block: SegmentedBlock, state: dict, hyper: dict, nwk: np.ndarray, nk: np.ndarray,
              seed: int, frozen_phi: np.ndarray | None = None) -> None:
        A = self.factors(block, state, hyper)
        phi, frozen = frozen_args(frozen_phi, _DUMMY_PHI)
        _sweep_kernel(block.doc_ptr, block.seg_ptr, block.words, state["z"], state["n"], state["t"], state["s"],
                      nwk, nk, *self._kernel_args(block, state, hyper), A, phi, frozen,
                      bool(hyper.get("btigs_exact", True)), int(seed))

    # -- b (thesis §7.4.3: "optimised automatically using the scheme discussed in Chapter 6") ----------------
    def samples_b(self, hyper) -> bool:
        """A global b drawn on the driver (``b_scope="global"``, a = 0)."""
        return bool(hyper.get("sample_b", False)) and float(hyper["a"]) == 0.0 and not self._per_document(hyper)

    def local_hyper_update(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> None:
        """``b_scope="document"``: every b_i by (6.11)/(6.12) over the document's restaurants, tables t* + s*,
        customers n + t* of the next segment (:func:`pdp.sample_chain_concentrations`)."""
        if not self._per_document(hyper) or int(hyper.get("cycles", 0)) < int(hyper.get("b_burn_in", 0)):
            return
        if "b" not in state:
            state["b"] = np.full(block.n_docs, float(hyper["b"]))
        sample_chain_concentrations(block.doc_ptr, block.seg_ptr, state["t"] + state["s"], state["t"], state["b"],
                                    float(hyper["a"]), int(seed))

    def partition_stats(self, block: SegmentedBlock, state: dict, hyper: dict, seed: int) -> np.ndarray:
        """Global b: [sum_ij (T_ij + S_ij), sum_ij log 1/q_ij], q_ij ~ Beta(b, N_ij + T_{i,j+1}) drawn here.
        Per-document b: [sum_i b_i, D] (the mean is recorded). Zeros when b is fixed."""
        if self._per_document(hyper):
            return np.array([float(np.sum(self._bdoc(block, state, hyper))), float(block.n_docs)])
        if not self.samples_b(hyper):
            return np.zeros(2)
        return np.array(_b_auxiliary(block.doc_ptr, state["n"], state["t"], state["s"], float(hyper["b"]),
                                     int(seed)))

    def update_hyper(self, hyper: dict, stats: np.ndarray, num_documents: int, seed: int) -> dict:
        """Global b ~ Gamma(shape = sum (T + S), rate = sum log 1/q) (improper prior 1/b, as STM's (5.8));
        per-document b: ``b_mean`` for the record."""
        hyper = gamma_concentration_step(hyper, stats, self.samples_b(hyper), seed)
        if self._per_document(hyper) and len(stats) == 2 and stats[1] > 0:
            hyper["b_mean"] = float(stats[0] / stats[1])
        return hyper

    # -- estimates -----------------------------------------------------------------------------------------
    def left_to_right(self, block, hyper, phi_vk, settings) -> left_to_right.LeftToRightScores:
        """Every particle carries the document's seating: segment restaurants whose new tables go to the previous
        segment or to the document, rho collapsed per restaurant (Beta(lambda_T, lambda_S), thesis §7.2)
        (:mod:`inference.gibbs.franchise_left_to_right`); the ``max_tables`` cap of training is not applied."""
        return franchise_scores(block, hyper["alpha"], float(hyper["a"]), float(hyper["b"]), phi_vk, settings,
                                adaptive, "particles: every particle seats the document's tokens in its adaptive "
                                "segment PDPs (exact, no max_tables cap)", float(hyper["lambda_t"]),
                                float(hyper["lambda_s"]))

    def doc_topic(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """(7.11)."""
        return self._estimates(block, state, hyper)[0]

    def segment_topic(self, block: SegmentedBlock, state: dict, hyper: dict) -> np.ndarray:
        """(7.12), recursive in j with nu_{i,0} = mu-hat_i (7.11)."""
        return self._estimates(block, state, hyper)[1]

    def _estimates(self, block, state, hyper):
        alpha, _, a, bdoc, lam_s, lam_t = self._kernel_args(block, state, hyper)
        return _segment_topic_kernel(block.doc_ptr, state["n"], state["t"], state["s"], alpha, a, bdoc, lam_s, lam_t)

    # -- test hooks ----------------------------------------------------------------------------------------
    def remove_token(self, block: SegmentedBlock, state: dict, nwk: np.ndarray, nk: np.ndarray, token: int,
                     seed: int, frozen: bool = False):
        """Algorithm 6 (thesis rule, so the state stays valid) for one token; returns the drawn (u1, u2)
        (u2 a global segment index)."""
        return _remove_token(block.doc_ptr, block.seg_ptr, block.words, int(token), state["z"], state["n"],
                             state["t"], state["s"], nwk, nk, frozen, False, int(seed))

    def conditional(self, block: SegmentedBlock, state: dict, hyper: dict, nwk: np.ndarray, nk: np.ndarray,
                    token: int, frozen_phi: np.ndarray | None = None) -> np.ndarray:
        """Kernel weights for a removed token: ``(terms, totals)``, terms (K, 1+2J) p(z=k, u) in the column
        layout of :func:`_topic_terms` (used to draw u), totals (K,) from :func:`_arrival_weights` (used to draw z)."""
        A = self.factors(block, state, hyper)
        phi, frozen = frozen_args(frozen_phi, _DUMMY_PHI)
        alpha, beta, a, bdoc, lam_s, lam_t = self._kernel_args(block, state, hyper)
        doc = int(np.searchsorted(block.doc_ptr, np.searchsorted(block.seg_ptr, token, side="right") - 1,
                                  side="right")) - 1
        return _conditional_kernel(block.doc_ptr, block.seg_ptr, block.words, int(token), state["n"], state["t"],
                                   state["s"], nwk, nk, alpha, beta, a, float(bdoc[doc]), lam_s, lam_t, A, phi,
                                   frozen)


# ---------------------------------------------------------------------------------------------------------------
# Generator: AdaTM's own generative process (thesis §7.2)
# ---------------------------------------------------------------------------------------------------------------

def _pyp_discrete(rng, a, b, base, sticks):
    """nu ~ PYP(a, b, Discrete(base)) by stick-breaking (thesis Def. 2.4), V_i ~ Beta(1-a, b+ia);
    the mass left after ``sticks`` atoms goes to the base (truncation)."""
    i = np.arange(1, sticks + 1)
    v = rng.beta(1.0 - a, b + i * a)
    w = v * np.concatenate([[1.0], np.cumprod(1.0 - v)[:-1]])
    atoms = rng.choice(base.shape[0], size=sticks, p=base)
    nu = np.bincount(atoms, weights=w, minlength=base.shape[0])
    nu += max(0.0, 1.0 - w.sum()) * base
    return nu / nu.sum()


def generate_adatm(num_docs: int, num_segments, segment_length, num_topics: int, vocab_size: int, *,
                   alpha=0.1, beta: float = 0.05, a: float = 0.2, b: float = 10.0, lambda_s: float = 1.0,
                   lambda_t: float = 1.0, phi: np.ndarray | None = None, seed: int = 0, sticks: int = 400):
    """Documents drawn from AdaTM (thesis §7.2): returns ``(block, truth)``.

    ``num_segments`` / ``segment_length``: ints or callables ``rng -> int``. rho (weight of nu_{i,j-1}) is
    drawn from Beta(lambda_T, lambda_S), the pairing of (7.2)/(7.9)/(7.10); segment 1 has base mu_i.
    ``truth``: ``phi`` (K, V), ``mu`` (D, K), ``nu`` (S, K), ``rho`` (S,; 0 for first segments), ``z`` (N,)
    (in the block's token order: document ids are zero-padded so sorting keeps the generation order).
    """
    rng = np.random.default_rng(seed)
    K, V = num_topics, vocab_size
    if phi is None:
        phi = rng.dirichlet(np.full(V, beta), size=K)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), (K,))
    n_seg = num_segments if callable(num_segments) else (lambda r: int(num_segments))
    seg_len = segment_length if callable(segment_length) else (lambda r: int(segment_length))
    docs, mus, nus, rhos, zs = [], [], [], [], []
    for d in range(num_docs):
        mu = rng.dirichlet(alpha)
        prev = mu
        segments = []
        for j in range(n_seg(rng)):
            if j == 0:
                rho, base = 0.0, mu
            else:
                rho = rng.beta(lambda_t, lambda_s)
                base = rho * prev + (1.0 - rho) * mu
            nu = _pyp_discrete(rng, a, b, base, sticks)
            L = seg_len(rng)
            z = rng.choice(K, size=L, p=nu)
            cum = np.cumsum(phi[z], axis=1)
            w = (rng.random(L)[:, None] > cum).sum(axis=1).clip(max=V - 1)
            segments.append(w.astype(np.int32))
            zs.append(z)
            nus.append(nu)
            rhos.append(rho)
            prev = nu
        mus.append(mu)
        docs.append((f"d{d:06d}", segments))
    block = SegmentedBlock.from_segments(docs)
    truth = {"phi": phi, "mu": np.array(mus).reshape(-1, K), "nu": np.array(nus).reshape(-1, K),
             "rho": np.array(rhos), "z": np.concatenate(zs).astype(np.int32) if zs else np.zeros(0, np.int32)}
    return block, truth
