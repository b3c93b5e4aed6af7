"""A trained model as the jobs see it: its metadata, vocabulary and topic-word parameters, by kind (variational
lambda, a tree's edges, a sampled point estimate, given weights), and the names of a tree model's files."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from inference.tree_layout import TreeLayout
from inference.errors import UsageError
from inference.layout import VocabLayout


@dataclass
class TopicModel:
    directory: str
    meta: dict
    vocab: pd.DataFrame
    lambda_: np.ndarray

    @property
    def num_topics(self) -> int:
        return int(self.meta["topics"])

    @property
    def alpha(self) -> np.ndarray:
        return np.asarray(self.meta["alpha"], dtype=np.float64)

    @property
    def languages(self) -> list:
        return list(self.meta.get("languages") or [])

    @property
    def layout(self) -> VocabLayout:
        if self.languages:
            return VocabLayout.from_sizes(self.languages, [self.meta["vocab_sizes"][l] for l in self.languages])
        return VocabLayout.monolingual(self.lambda_.shape[1])

    def topic_word(self) -> np.ndarray:
        """E_q[beta]: lambda normalised by row (K x V), within each language for a polylingual model."""
        return self.layout.normalise(self.lambda_)

    def language_view(self, language: str) -> "TopicModel":
        """One language of a polylingual model as a monolingual model (same alpha, that language's lambda)."""
        if language not in self.languages:
            raise UsageError(f"--lang {language}: {self.directory} has no language {language!r} "
                             f"(its languages: {', '.join(self.languages)})")
        s = self.layout.slice_of(language)
        vocab = self.vocab.iloc[s].copy()
        vocab["id"] = vocab["id"] - s.start
        meta = {k: v for k, v in self.meta.items() if k not in ("languages", "vocab_sizes")}
        meta.update(model="lda", language=language, vocab_size=s.stop - s.start, polylingual_model=self.directory)
        return TopicModel(self.directory, meta, vocab.reset_index(drop=True), self.lambda_[:, s])

    def topic_names(self) -> list[str]:
        return self.meta.get("topic_names") or [f"topic {k}" for k in range(self.num_topics)]

    def top_words(self, n: int = 10) -> list[list[tuple[str, float]]]:
        beta = self.topic_word()
        terms = self.vocab["term"].to_numpy()
        out = []
        for row in beta:
            top = np.argsort(-row, kind="stable")[:n]
            out.append([(str(terms[i]), float(row[i])) for i in top])
        return out


TREE_LAMBDA = "tree_lambda.npy"
TREE_CONCEPTS = "tree_concepts.npy"
TREE_EDGE_COUNTS = "tree_edge_counts.npy"     # a Gibbs tree model's K x E (topic, edge) counts


@dataclass
class TreeTopicModel(TopicModel):
    """A tree model: ``lambda_`` holds the edge parameters (K x E) of the prior tree ``concepts``."""
    concepts: np.ndarray = None

    @property
    def layout(self) -> TreeLayout:
        sizes = [self.meta["vocab_sizes"][l] for l in self.languages] if self.languages else [len(self.vocab)]
        flat = VocabLayout.from_sizes(self.languages or [""], sizes)
        return TreeLayout(len(self.vocab), self.concepts, flat.languages, flat.offsets)

    def joint_topic_word(self) -> np.ndarray:
        """p(w | k): the sum over w's paths of the product of E_q[pi] along the path (K x V, rows sum to 1 over
        every language's words)."""
        return self.layout.normalise(self.lambda_)

    def topic_word(self) -> np.ndarray:
        """p(w | k), within each language for a multilingual tree (p(w | k, L), as a polylingual model's rows)."""
        joint = self.joint_topic_word()
        if not self.languages:
            return joint
        out = np.empty_like(joint)
        for start, stop in zip(self.layout.offsets[:-1], self.layout.offsets[1:]):
            out[:, start:stop] = joint[:, start:stop] / joint[:, start:stop].sum(axis=1, keepdims=True)
        return out

    def language_view(self, language: str) -> TopicModel:
        """One language as a monolingual model: p(w | k, language) (the topic's words of that language,
        renormalised), and for the fold-in of documents in that language the log word weights log W_kw of the
        tree."""
        if language not in self.languages:
            raise UsageError(f"--lang {language}: {self.directory} has no language {language!r} "
                             f"(its languages: {', '.join(self.languages)})")
        s = VocabLayout.from_sizes(self.languages, [self.meta["vocab_sizes"][l] for l in self.languages]) \
            .slice_of(language)
        vocab = self.vocab.iloc[s].copy()
        vocab["id"] = vocab["id"] - s.start
        meta = {k: v for k, v in self.meta.items() if k not in ("languages", "vocab_sizes", "tree")}
        meta.update(language=language, vocab_size=s.stop - s.start, polylingual_model=self.directory)
        topic_word = self.joint_topic_word()[:, s]
        log_weights = self.layout.dirichlet_expectation(self.lambda_)[:, s]
        return WeightsModel(self.directory, meta, vocab.reset_index(drop=True), log_weights,
                            topic_word / topic_word.sum(axis=1, keepdims=True))


@dataclass(frozen=True)
class LogWeightsLayout(VocabLayout):
    """The layout of explicit word weights (probabilities): log W stands for E_q[log beta] (what the fold-in
    exponentiates)."""

    def dirichlet_expectation(self, weights: np.ndarray) -> np.ndarray:
        return np.log(weights)


@dataclass
class PointTopicModel(TopicModel):
    """A sampled model (the Gibbs family): ``lambda_`` holds the posterior-mean p(w | k) (within each language of
    a multilingual model), a point estimate whose logs the fold-in uses for E_q[log beta]."""

    @property
    def layout(self) -> LogWeightsLayout:
        flat = super().layout
        return LogWeightsLayout(flat.languages, flat.offsets)

    def topic_word(self) -> np.ndarray:
        return self.lambda_

    def language_view(self, language: str) -> "PointTopicModel":
        view = super().language_view(language)
        return PointTopicModel(view.directory, view.meta, view.vocab, view.lambda_)


@dataclass(frozen=True)
class GivenLogWeightsLayout(VocabLayout):
    """The layout of explicit log word weights: log W is E_q[log beta] as it is."""

    def dirichlet_expectation(self, log_weights: np.ndarray) -> np.ndarray:
        return np.asarray(log_weights, dtype=np.float64)


@dataclass
class WeightsModel(TopicModel):
    """A model given by its fold-in log word weights (``lambda_``: log W, K x V, finite where W underflows) and
    its topic-word matrix (a language of a tree model)."""
    topic_word_matrix: np.ndarray = None

    @property
    def layout(self) -> GivenLogWeightsLayout:
        return GivenLogWeightsLayout.from_sizes([""], [self.lambda_.shape[1]])

    def topic_word(self) -> np.ndarray:
        return self.topic_word_matrix
