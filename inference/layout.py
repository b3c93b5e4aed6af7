"""How the columns of lambda are grouped into Dirichlet distributions: the topic-word structure.

The variational engine and its reducers ask the structure for E_q[log beta]
(``dirichlet_expectation``), E_q[beta] (``normalise``) and a topic's ELBO terms
(``topic_terms``); a tree prior (counts over edges) plugs in as another structure.

Monolingual LDA has one topic-word Dirichlet per topic over the whole vocabulary.
Polylingual LDA (Mimno et al. 2009) has one per (topic, language): the vocabularies
of the L languages are concatenated, language l owning the global ids
``offsets[l]:offsets[l+1]``, and every quantity that normalises a row of lambda
(E_q[log beta], the row normaliser of the reducer, the topic-word means, the
prior and entropy terms of the ELBO) does so per language slice. The E-step needs
nothing else: a word's phi uses the exp E_q[log beta] of its own column, which
is already its own language's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

from inference.elbo import topic_terms


@dataclass(frozen=True)
class VocabLayout:
    languages: tuple      # language codes; ("",) for a monolingual model
    offsets: tuple        # (L+1,) global id where each language's vocabulary starts, then V

    @classmethod
    def monolingual(cls, vocab_size: int) -> "VocabLayout":
        return cls(("",), (0, int(vocab_size)))

    @classmethod
    def from_sizes(cls, languages, sizes) -> "VocabLayout":
        offsets = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])
        return cls(tuple(str(l) for l in languages), tuple(int(o) for o in offsets))

    @property
    def vocab_size(self) -> int:
        return self.offsets[-1]

    needs_previous = False    # a reducer forms lambda_k from the statistics alone (a tree also needs the previous one)

    @property
    def parameter_size(self) -> int:
        """Entries of a topic's lambda row: one per word."""
        return self.offsets[-1]

    @property
    def is_polylingual(self) -> bool:
        return len(self.languages) > 1 or self.languages != ("",)

    def slices(self):
        return [slice(self.offsets[i], self.offsets[i + 1]) for i in range(len(self.languages))]

    def slice_of(self, language: str) -> slice:
        if language not in self.languages:
            raise KeyError(f"language {language!r} is not in the model (languages: {', '.join(self.languages)})")
        i = self.languages.index(language)
        return slice(self.offsets[i], self.offsets[i + 1])

    def sizes(self) -> list[int]:
        return [self.offsets[i + 1] - self.offsets[i] for i in range(len(self.languages))]

    def normalise(self, lam: np.ndarray) -> np.ndarray:
        """E_q[beta]: every row of lambda normalised within each language slice."""
        lam = np.asarray(lam, dtype=np.float64)
        out = np.empty_like(lam)
        for s in self.slices():
            out[..., s] = lam[..., s] / lam[..., s].sum(axis=-1, keepdims=True)
        return out

    def topic_terms(self, lambda_k: np.ndarray, eta_k: np.ndarray):
        """``(E_q[log beta_k], prior term, entropy term)`` of one topic (:func:`inference.elbo.topic_terms`)."""
        return topic_terms(lambda_k, eta_k, self)

    def entry_name(self, entry: int) -> str:
        """What entry ``entry`` of a lambda row is (for error messages)."""
        return f"word id {entry}"

    def log_word_weights(self, lam: np.ndarray, elog: np.ndarray, mean_weights: bool) -> np.ndarray:
        """The mappers' (V,) log weights of a topic: E_q[log beta_k], or log E_q[beta_k] with ``mean_weights``
        (:mod:`inference.word_weights`: the mappers exponentiate them scaled by each word's maximum)."""
        return np.log(self.normalise(lam)) if mean_weights else elog

    def accumulator_start(self, eta_row: np.ndarray) -> np.ndarray:
        """The row a reducer adds a topic's word statistics to: eta_k (lambda_k = eta_k + statistics)."""
        return eta_row

    def parameters_from(self, totals: np.ndarray, eta_row: np.ndarray, previous_row, mean_weights: bool):
        """lambda_k from the reducer's totals: the totals themselves."""
        return totals

    def dirichlet_expectation(self, lam: np.ndarray) -> np.ndarray:
        """E_q[log beta] = Psi(lambda_kv) - Psi(sum of lambda_k over v's language), for a row or a matrix."""
        lam = np.asarray(lam, dtype=np.float64)
        out = digamma(lam)
        for s in self.slices():
            out[..., s] -= digamma(lam[..., s].sum(axis=-1, keepdims=True))
        return out
