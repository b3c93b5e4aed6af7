"""The top words of a model's topics as text (``spark-topics topics``, ``topics.txt``): a polylingual model's languages
side by side, a tree model's linked words marked."""
from __future__ import annotations

import numpy as np

from drivers import storage
from drivers.store.model_store import _read, read_model_files
from drivers.store.topic_model import TREE_CONCEPTS, TopicModel, TreeTopicModel


def write_topics_file(directory: str, top_words: int) -> None:
    """``topics.txt``: the top words of every topic of the model in ``directory``."""
    text = format_model_topics(read_model_files(directory), top_words) + "\n"
    storage.write_bytes(storage.join(directory, "topics.txt"), text.encode("utf-8"))


#: the mark of a word that a concept of the prior tree links to a translation (``topics`` of a tree model)
LINKED_MARK = "~"


def tree_concepts(model: TopicModel) -> np.ndarray | None:
    """The concepts (C x 2 word ids) of a tree model's prior tree, of either engine; None for other models."""
    if isinstance(model, TreeTopicModel):
        return model.concepts
    if model.meta.get("prior_tree") is not None:      # a tree model of the Gibbs engine
        return _read(model.directory, TREE_CONCEPTS, storage.load_npy)
    return None


def format_model_topics(model: TopicModel, n: int = 10, weights: bool = False) -> str:
    """The top words of every topic; a polylingual model shows each topic's languages side by side; a tree
    model marks the words a concept links (``word~``)."""
    linked = None
    concepts = tree_concepts(model)
    if concepts is not None and len(concepts):
        ids = np.unique(concepts)
        linked = set(zip(model.vocab["lang"].to_numpy()[ids], model.vocab["term"].to_numpy()[ids])) \
            if "lang" in model.vocab.columns else {("", t) for t in model.vocab["term"].to_numpy()[ids]}

    def mark(language, words):
        if linked is None:
            return words
        return [(w + LINKED_MARK if (language, w) in linked else w, p) for w, p in words]

    if not model.languages:
        text = format_topics(model.topic_names(), [mark("", t) for t in model.top_words(n)], n, weights)
        return text if linked is None else text + f"\n({LINKED_MARK}: linked to a word by a concept of the tree)"
    views = [model.language_view(l) for l in model.languages]
    tops = [[mark(l, t) for t in v.top_words(n)] for l, v in zip(model.languages, views)]
    lines = []
    for k, name in enumerate(model.topic_names()):
        for i, language in enumerate(model.languages):
            label = f"{name} [{language}]" if i == 0 else f"[{language}]"
            words = tops[i][k]
            text = ", ".join(f"{w} {p:.4f}" for w, p in words) if weights else " ".join(w for w, _ in words)
            lines.append(f"{label:>15}: {text}")
    if linked is not None:
        lines.append(f"({LINKED_MARK}: linked to a translation by a concept of the tree)")
    return "\n".join(lines)


def format_topics(names: list[str], top_words, n: int, weights: bool = False) -> str:
    if weights:
        return "\n".join(f"{name}: " + ", ".join(f"{w} {p:.4f}" for w, p in words[:n])
                         for name, words in zip(names, top_words))
    lines = []
    for name, words in zip(names, top_words):
        lines.append(f"{name:>10}: " + " ".join(w for w, _ in words[:n]))
    return "\n".join(lines)
