"""Synthetic segmented corpora drawn from each structured model's own generative process (known parameters).

Every generator returns ``(block, truth)``: a :class:`SegmentedBlock` and a dict
with the true ``phi`` (K x V), ``alpha``, ``a``, ``b``, ``z`` (topic of every
token, layout order), ``t`` (S x K true table counts of the Chinese restaurant
representation) and per-document / per-segment proportions where defined.

The segment PDPs are simulated by their Chinese restaurant processes with the
base measure's draw explicit (mu_i) and the segment proportions integrated out,
which is exact (thesis (2.9)): a customer joins an occupied table with
probability ∝ (m - a) or opens a new one with probability ∝ (b + a T), whose
dish is a draw from the base. In SeqLDA a new table of segment j is a customer
of segment j-1's restaurant (the Chinese restaurant franchise along the chain).

Plain module of functions (other models add theirs here); Python loops are fine
at these sizes.
"""
from __future__ import annotations

import numpy as np


from inference.gibbs.model import SegmentedBlock


def draw_topics(rng: np.random.Generator, num_topics: int, vocab_size: int, beta: float) -> np.ndarray:
    """(K, V) phi_k ~ Dir(beta)."""
    return rng.dirichlet(np.full(vocab_size, beta), size=num_topics)


class _Restaurant:
    """A PDP(a, b, base) restaurant in multiplicity-with-occupancies form: dish and size of every table."""

    __slots__ = ("dish", "size")

    def __init__(self):
        self.dish: list[int] = []
        self.size: list[int] = []

    def seat(self, rng, a, b, draw_base) -> int:
        """Seat one customer by (2.9); returns its dish. ``draw_base()`` draws a dish for a new table."""
        T = len(self.dish)
        weights = np.empty(T + 1)
        weights[:T] = np.asarray(self.size, dtype=np.float64) - a
        weights[T] = b + a * T
        j = int(np.searchsorted(np.cumsum(weights), rng.random() * weights.sum(), side="right"))
        if j >= T:
            k = int(draw_base())
            self.dish.append(k)
            self.size.append(1)
            return k
        self.size[j] += 1
        return self.dish[j]

    def table_counts(self, K) -> np.ndarray:
        return np.bincount(np.asarray(self.dish, dtype=np.int64), minlength=K).astype(np.int32)


def _layout(rng, num_docs, seg_range, len_range):
    """Numbers of segments per document and words per segment (inclusive ranges)."""
    J = rng.integers(seg_range[0], seg_range[1] + 1, size=num_docs)
    return [rng.integers(len_range[0], len_range[1] + 1, size=j) for j in J]


def _block(doc_words, num_docs):
    width = len(str(max(num_docs - 1, 0)))
    docs = [(f"d{d:0{width}d}", segs) for d, segs in enumerate(doc_words)]
    return SegmentedBlock.from_segments(docs)


def _start(seed, num_docs, num_topics, vocab_size, seg_range, len_range, alpha, beta, phi):
    """The draws every generator makes first, in this order: phi_k ~ Dir(beta) (unless given), the layout,
    the document-level proportions ~ Dir(alpha) (mu_i, SeqLDA's mu_i0). Returns (rng, alpha_v, phi, layout, mu)."""
    rng = np.random.default_rng(seed)
    alpha_v = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (num_topics,)).copy()
    phi = draw_topics(rng, num_topics, vocab_size, beta) if phi is None else np.asarray(phi)
    layout = _layout(rng, num_docs, seg_range, len_range)
    mu = rng.dirichlet(alpha_v, size=num_docs)
    return rng, alpha_v, phi, layout, mu


def _segment(rng, L, seat, phi, vocab_size, K, zs, ns):
    """One segment of L customers seated by ``seat()`` (returns a topic), then its words w ~ phi_z; appends z and
    the topic counts n to ``zs`` / ``ns`` and returns the words."""
    z = np.array([seat() for _ in range(int(L))], dtype=np.int32)
    w = np.array([rng.choice(vocab_size, p=phi[k]) for k in z], dtype=np.int32)
    zs.append(z)
    ns.append(np.bincount(z, minlength=K).astype(np.int32))
    return w


def _truth(zs, K, **counts):
    """``z`` (all tokens, layout order) and every (S x K) int32 count array of ``counts`` (lists of rows)."""
    out = {"z": np.concatenate(zs) if zs else np.zeros(0, np.int32)}
    out.update({key: np.array(rows, dtype=np.int32).reshape(-1, K) for key, rows in counts.items()})
    return out


def stm_corpus(num_docs=50, num_topics=4, vocab_size=60, seg_range=(5, 10), len_range=(10, 30), alpha=0.5,
               beta=0.05, a=0.0, b=5.0, seed=0, phi=None):
    """Documents from STM (thesis §5.3): mu_i ~ Dir(alpha), nu_ij ~ PDP(a, b, mu_i), z ~ nu_ij, w ~ phi_z.

    truth: phi, alpha, a, b, mu (D x K), nu (S x K, the empirical topic shares are in n/N), z, n, t (S x K).
    """
    K = num_topics
    rng, alpha_v, phi, layout, mu = _start(seed, num_docs, K, vocab_size, seg_range, len_range, alpha, beta, phi)
    doc_words, zs, ts, ns = [], [], [], []
    for d, lengths in enumerate(layout):
        segs = []
        for L in lengths:
            r = _Restaurant()
            segs.append(_segment(rng, L, lambda: r.seat(rng, a, b, lambda: rng.choice(K, p=mu[d])), phi, vocab_size,
                                 K, zs, ns))
            ts.append(r.table_counts(K))
        doc_words.append(segs)
    block = _block(doc_words, num_docs)
    truth = {"phi": phi, "alpha": alpha_v, "a": float(a), "b": float(b), "mu": mu, **_truth(zs, K, n=ns, t=ts)}
    return block, truth


def seqlda_corpus(num_docs=50, num_topics=4, vocab_size=60, seg_range=(5, 10), len_range=(10, 30), alpha=0.5,
                  beta=0.05, a=0.0, b=5.0, seed=0, phi=None):
    """Documents from SeqLDA (thesis §6.3): mu_i0 ~ Dir(alpha), mu_ij ~ PDP(a, b, mu_i,j-1), z ~ mu_ij, w ~ phi_z.

    Restaurants are filled segment by segment in layout order; a new table at segment j is a customer of
    segment j-1 (exchangeability makes the arrival order irrelevant). truth: phi, alpha, a, b, mu0 (D x K),
    z, n, t (S x K, t[s] = tables of segment s, the proxy customers it sends to its predecessor).
    """
    K = num_topics
    rng, alpha_v, phi, layout, mu0 = _start(seed, num_docs, K, vocab_size, seg_range, len_range, alpha, beta, phi)
    doc_words, zs, ts, ns = [], [], [], []
    for d, lengths in enumerate(layout):
        chain: list[_Restaurant] = []

        def seat(j):  # a customer at restaurant j (0-based); new tables recurse to j-1, then to mu_i0
            base = (lambda: rng.choice(K, p=mu0[d])) if j == 0 else (lambda: seat(j - 1))
            return chain[j].seat(rng, a, b, base)

        segs = []
        for j, L in enumerate(lengths):
            chain.append(_Restaurant())
            segs.append(_segment(rng, L, lambda: seat(j), phi, vocab_size, K, zs, ns))
        ts.extend(r.table_counts(K) for r in chain)
        doc_words.append(segs)
    block = _block(doc_words, num_docs)
    truth = {"phi": phi, "alpha": alpha_v, "a": float(a), "b": float(b), "mu0": mu0, **_truth(zs, K, n=ns, t=ts)}
    return block, truth


def adatm_corpus(num_docs=50, num_topics=4, vocab_size=60, seg_range=(5, 10), len_range=(10, 30), alpha=0.5,
                 beta=0.05, a=0.2, b=10.0, lambda_s=1.0, lambda_t=1.0, seed=0, phi=None):
    """Documents from AdaTM (thesis §7.2): mu_i ~ Dir(alpha), rho_ij ~ Beta(lambda_T, lambda_S) (weight of
    nu_{i,j-1}; the pairing of (7.2)/(7.9)/(7.10)), nu_ij ~ PDP(a, b, rho_ij nu_{i,j-1} + (1 - rho_ij) mu_i),
    nu_i1 ~ PDP(a, b, mu_i), z ~ nu_ij, w ~ phi_z.

    A new table at segment j > 1 is sent to segment j-1 (a customer there) with probability rho_ij, else its
    dish is drawn from mu_i (the multi-floor restaurant of thesis §2.4). truth: phi, alpha, a, b, lambda_s,
    lambda_t, mu (D x K), rho (S,; 0 for first segments), z, n, t (S x K tables sent to the previous segment),
    s (S x K tables sent to the document).
    """
    K = num_topics
    rng, alpha_v, phi, layout, mu = _start(seed, num_docs, K, vocab_size, seg_range, len_range, alpha, beta, phi)
    doc_words, zs, ns, ts, ss, rhos = [], [], [], [], [], []
    for d, lengths in enumerate(layout):
        chain: list[_Restaurant] = []
        rho = [0.0] + [float(rng.beta(lambda_t, lambda_s)) for _ in range(len(lengths) - 1)]
        t_cnt = np.zeros((len(lengths), K), dtype=np.int32)
        s_cnt = np.zeros((len(lengths), K), dtype=np.int32)

        def seat(j):  # a customer at restaurant j (0-based); a new table goes to j-1 (prob rho_j) or to mu_i
            def base():
                if j > 0 and rng.random() < rho[j]:
                    k = seat(j - 1)
                    t_cnt[j, k] += 1
                else:
                    k = int(rng.choice(K, p=mu[d]))
                    s_cnt[j, k] += 1
                return k
            return chain[j].seat(rng, a, b, base)

        segs = []
        for j, L in enumerate(lengths):
            chain.append(_Restaurant())
            segs.append(_segment(rng, L, lambda: seat(j), phi, vocab_size, K, zs, ns))
        ts.extend(t_cnt)
        ss.extend(s_cnt)
        rhos.extend(rho)
        doc_words.append(segs)
    block = _block(doc_words, num_docs)
    truth = {"phi": phi, "alpha": alpha_v, "a": float(a), "b": float(b), "lambda_s": float(lambda_s),
             "lambda_t": float(lambda_t), "mu": mu, "rho": np.array(rhos), **_truth(zs, K, n=ns, t=ts, s=ss)}
    return block, truth
