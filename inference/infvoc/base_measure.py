"""The base distribution G_0 over strings of the infinite-vocabulary topic model (thesis §7.2.1). Pure numpy.

    G_0(rho) = p_WM(l = |rho| | zeta) * prod_i p(c_i | c_{i-n+1} ... c_{i-1})

* **Characters**: an order-``n`` character model, smoothed hierarchically (each order's estimate interpolated with
  the next lower order through a Dirichlet of concentration ``smoothing``, down to a uniform over the alphabet plus
  one slot for every character never seen), so every string has a positive probability. The thesis does not give
  n or the smoothing (extract §10.3); n = 3 and smoothing 1.
* **Lengths**, two fits of zeta to the word probabilities p_C:
  ``"least-squares"``, the thesis' zeta = argmin sum_rho |p_C(rho) - p_WM(rho | zeta)|^2 subject to
  sum_l zeta_l = 1 (extract §6.2), here also zeta >= 0. With c_rho = prod_i p(c_i | ...) it separates by length:
  the KKT solution is zeta_l = max(0, (a_l - mu) / b_l), a_l = sum_{|rho|=l} p_C(rho) c_rho,
  b_l = sum_{|rho|=l} c_rho^2, mu the one value that makes the zetas sum to 1 (bisection; :func:`fit_lengths`).
  Squared errors are dominated by the short words (large p_C and c_rho): on the sample corpus' 7,960 types it puts
  all the mass on lengths 3 and 4, the short-word bias the length model is there to remove. ``"kl"`` (the default):
  zeta = argmin KL(p_C || p_WM(. | zeta)), i.e. zeta_l = sum_{|rho|=l} p_C(rho), the length distribution of the
  training words. Either zeta has mass only on the lengths of the training words; a geometric tail of weight
  ``tail`` (mean the training words' mean length) gives every length a positive probability, so G_0 of a word of
  an unseen length is small, never zero.

The model is plain numbers (:meth:`CharNgramBase.to_json`): a model directory keeps it as JSON, never a pickle.
"""
from __future__ import annotations

import math

import numpy as np

#: the padding before a word's first character (a control character no tokenizer yields)
BOUNDARY = "\x02"


class CharNgramBase:
    """G_0 over strings: an order-``order`` character model and a length multinomial ``zeta``."""

    def __init__(self, order: int, smoothing: float, alphabet_size: int, counts: list[dict], zeta: np.ndarray,
                 tail: float, mean_length: float):
        self.order, self.smoothing = int(order), float(smoothing)
        self.alphabet_size = int(alphabet_size)
        #: counts[j]: context of j characters -> {character: count} (j = 0 .. order-1)
        self.counts = counts
        self._totals = [{h: float(sum(c.values())) for h, c in level.items()} for level in counts]
        self.zeta = np.asarray(zeta, dtype=np.float64)
        self.tail, self.mean_length = float(tail), float(mean_length)
        self._cache: dict = {}

    # --- fitting -------------------------------------------------------------------------------------------
    @classmethod
    def fit(cls, words, frequencies=None, order: int = 3, smoothing: float = 1.0, tail: float = 1e-3,
            lengths: str = "kl"):
        """Fit the character model on the word types ``words`` (each type once, as a dictionary lists them) and
        zeta (``lengths``: "kl" or "least-squares") on their probabilities p_C (``frequencies``, e.g. the
        collection frequencies; None: uniform over the types, a dictionary)."""
        words = [str(w) for w in words]
        if not words:
            raise ValueError("the base measure needs at least one word")
        counts = [dict() for _ in range(order)]
        alphabet = set()
        for word in words:
            padded = BOUNDARY * (order - 1) + word
            for i, c in enumerate(word):
                alphabet.add(c)
                history = padded[i:i + order - 1]
                for j in range(order):
                    context = history[len(history) - j:] if j else ""
                    level = counts[j].setdefault(context, {})
                    level[c] = level.get(c, 0) + 1
        sizes = np.array([len(w) for w in words])
        model = cls(order, smoothing, len(alphabet), counts, np.ones(1), tail, float(sizes.mean()))
        freq = np.ones(len(words)) if frequencies is None else np.asarray(frequencies, dtype=np.float64)
        p_corpus = freq / freq.sum()
        if lengths == "kl":
            model.zeta = np.bincount(sizes, weights=p_corpus) / p_corpus.sum()
        elif lengths == "least-squares":
            model.zeta = fit_lengths(sizes, p_corpus, np.exp(np.array([model.log_chars(w) for w in words])))
        else:
            raise ValueError(f"unknown length fit {lengths!r}")
        model._cache.clear()
        return model

    # --- probabilities -------------------------------------------------------------------------------------
    def char_prob(self, context: str, c: str) -> float:
        """p(c | context), interpolated down to the uniform over the alphabet and one unseen slot."""
        p = 1.0 / (self.alphabet_size + 1)
        for j in range(self.order):
            h = context[len(context) - j:] if j else ""
            level = self.counts[j].get(h)
            if level is None:
                continue
            p = (level.get(c, 0) + self.smoothing * p) / (self._totals[j][h] + self.smoothing)
        return p

    def log_chars(self, word: str) -> float:
        """sum_i log p(c_i | the n-1 characters before)."""
        padded = BOUNDARY * (self.order - 1) + word
        return float(sum(math.log(self.char_prob(padded[i:i + self.order - 1], c)) for i, c in enumerate(word)))

    def log_length(self, length: int) -> float:
        """log p_WM(l | zeta) with the geometric tail: (1 - tail) zeta_l + tail Geom(l; mean)."""
        q = 1.0 / max(self.mean_length, 1.0 + 1e-9)          # Geom on l >= 1 with mean 1/q
        geometric = q * (1.0 - q) ** (length - 1) if length >= 1 else 0.0
        fitted = self.zeta[length] if length < self.zeta.shape[0] else 0.0
        return math.log((1.0 - self.tail) * fitted + self.tail * geometric) if length >= 1 else -math.inf

    def log_prob(self, word: str) -> float:
        """log G_0(word) (cached per word in this process, at most 2^20 words)."""
        value = self._cache.get(word)
        if value is None:
            value = self.log_length(len(word)) + self.log_chars(word)
            if len(self._cache) >= 1 << 20:
                self._cache.clear()
            self._cache[word] = value
        return value

    def log_probs(self, words) -> np.ndarray:
        return np.array([self.log_prob(str(w)) for w in words], dtype=np.float64)

    # --- files ---------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"order": self.order, "smoothing": self.smoothing, "alphabet_size": self.alphabet_size,
                "zeta": self.zeta.tolist(), "tail": self.tail, "mean_length": self.mean_length,
                "counts": [{h: level for h, level in counts.items()} for counts in self.counts]}

    @classmethod
    def from_json(cls, data: dict) -> "CharNgramBase":
        return cls(data["order"], data["smoothing"], data["alphabet_size"],
                   [{h: {c: int(n) for c, n in level.items()} for h, level in counts.items()}
                    for counts in data["counts"]], np.asarray(data["zeta"]), data["tail"], data["mean_length"])


def fit_lengths(lengths: np.ndarray, p_corpus: np.ndarray, c_rho: np.ndarray) -> np.ndarray:
    """zeta (index = length, zeta[0] = 0): argmin sum_rho (p_C(rho) - zeta_|rho| c_rho)^2 s.t. sum zeta = 1,
    zeta >= 0 (the KKT solution, module docstring)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    size = int(lengths.max()) + 1
    a = np.bincount(lengths, weights=p_corpus * c_rho, minlength=size)
    b = np.bincount(lengths, weights=c_rho * c_rho, minlength=size)
    used = b > 0
    a, b = a[used], b[used]

    def total(mu):
        return np.maximum(0.0, (a - mu) / b).sum()

    lo, hi = float(np.max(a - b)), float(np.max(a))      # total(lo) >= 1 >= total(hi) = 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if total(mid) >= 1.0:
            lo = mid
        else:
            hi = mid
    zeta_used = np.maximum(0.0, (a - lo) / b)
    zeta = np.zeros(size)
    zeta[used] = zeta_used / zeta_used.sum()
    return zeta

