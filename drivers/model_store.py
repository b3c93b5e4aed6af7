"""Model directories: written by ``train``, read by ``infer``, ``evaluate`` and ``topics``.

A model directory is readable without this package::

    model.json          model type, K, V, alpha, eta, iterations, ELBO trace, data and code versions, seed
    vocab.parquet       term, id (+ df, cf)
    lambda.npy          K x V variational topic-word parameter (np.load(..., allow_pickle=False))
    doc_topics.parquet  doc_id, gamma (K), theta (K) per training document
    elbo.png            the ELBO curve

A polylingual model (``model == "polylda"``) has, instead of ``vocab.parquet`` and
``lambda.npy``, one ``vocab.<L>.parquet`` (``term``, ``id``) and one ``lambda.<L>.npy``
(K x V_L) per language L, and ``languages`` / ``vocab_sizes`` in ``model.json``. A
model with an informed prior also has ``prior.parquet`` (``topic``, ``name``,
``id``, ``term``, ``eta``: every prior entry that differs from the symmetric eta).

A Gibbs model (``lda-gibbs``, ``stm``, ``seqlda``, ``adatm``; written by
:mod:`drivers.families.gibbs`) has ``topic_word.npy`` (K x V posterior-mean probabilities,
rows sum to 1) instead of ``lambda.npy``; :func:`load_model` puts it in ``lambda_``.
"""
from __future__ import annotations

import hashlib
import logging
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from drivers import storage
from drivers.corpora.files import read_vocab
from inference.layout import VocabLayout

CODE_VERSION = "0.1.0"

log = logging.getLogger("spark_topics.model_store")


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


def require_same_vocabulary(model: TopicModel, corpus) -> None:
    """Fail unless the corpus numbers the same terms with the same ids as the model."""
    ours, theirs = model.vocab["term"].to_numpy(), corpus.vocab["term"].to_numpy()
    if len(ours) == len(theirs) and np.array_equal(ours, theirs):
        return
    differ = int(np.sum(ours[:min(len(ours), len(theirs))] != theirs[:min(len(ours), len(theirs))]))
    raise SystemExit(
        f"{corpus.directory} does not share the vocabulary of the model {model.directory} "
        f"({len(theirs)} terms vs {len(ours)}, {differ} ids naming different terms). Prepare it with the "
        f"model's vocabulary: spark-topics prepare --input RAW --output DIR "
        f"--vocab {storage.join(model.directory, 'vocab.parquet')}")


def code_version() -> dict:
    version = {"package": CODE_VERSION}
    try:
        root = Path(__file__).resolve().parent.parent
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=5)
        if commit.returncode == 0:
            version["git_commit"] = commit.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return version


def data_version(corpus_meta: dict) -> str:
    """Content hash of the corpus manifest: changes whenever the prepared corpus does."""
    return hashlib.sha256(json.dumps(corpus_meta, sort_keys=True).encode()).hexdigest()[:16]


def write_parquet(path: str, frame: pd.DataFrame) -> None:
    storage.write_parquet(path, pa.Table.from_pandas(frame, preserve_index=False))


def save_model(directory: str, meta: dict, vocab: pd.DataFrame, lambda_: np.ndarray, layout=None) -> None:
    storage.makedirs(directory)
    cols = [c for c in ("term", "id", "df", "cf") if c in vocab.columns]
    if layout is None or not layout.is_polylingual:
        storage.save_npy(storage.join(directory, "lambda.npy"), np.ascontiguousarray(lambda_, dtype=np.float64))
        write_parquet(storage.join(directory, "vocab.parquet"), vocab[cols])
    else:
        for language, s in zip(layout.languages, layout.slices()):
            storage.save_npy(storage.join(directory, f"lambda.{language}.npy"),
                             np.ascontiguousarray(lambda_[:, s], dtype=np.float64))
            part = vocab.iloc[s][cols].copy()
            part["id"] = part["id"] - s.start
            write_parquet(storage.join(directory, f"vocab.{language}.parquet"), part)
    storage.save_json(storage.join(directory, "model.json"), meta)


def save_prior(directory: str, prior, topic_names: list, vocab: pd.DataFrame) -> None:
    """prior.parquet: the entries of an informed prior that differ from the symmetric eta."""
    topics, ids, values = prior.entries()
    keep = values != prior.base_row[ids]
    frame = pd.DataFrame({"topic": topics[keep], "name": np.asarray(topic_names, dtype=object)[topics[keep]],
                          "id": ids[keep], "term": vocab["term"].to_numpy()[ids[keep]], "eta": values[keep]})
    write_parquet(storage.join(directory, "prior.parquet"), frame)


def load_model(directory: str) -> TopicModel:
    meta_path = storage.join(directory, "model.json")
    if not storage.exists(meta_path):
        raise SystemExit(f"{directory} is not a model directory (no model.json)")
    meta = storage.load_json(meta_path)
    if meta.get("languages"):  # polylingual: concatenate the languages in model.json's order
        vocabs, lambdas, offset = [], [], 0
        for language in meta["languages"]:
            v = read_vocab(storage.join(directory, f"vocab.{language}.parquet"))
            vocabs.append(v.assign(id=v["id"] + offset, lang=language, local_id=v["id"]))
            lambdas.append(storage.load_npy(storage.join(directory, f"lambda.{language}.npy")))
            offset += len(v)
        return TopicModel(directory, meta, pd.concat(vocabs, ignore_index=True), np.hstack(lambdas))
    vocab = read_vocab(storage.join(directory, "vocab.parquet"))
    if not storage.exists(storage.join(directory, "lambda.npy")) and \
            storage.exists(storage.join(directory, "topic_word.npy")):
        # a Gibbs model: the K x V posterior-mean topic-word matrix (rows sum to 1) stands in for lambda
        return TopicModel(directory, meta, vocab, storage.load_npy(storage.join(directory, "topic_word.npy")))
    lambda_ = storage.load_npy(storage.join(directory, "lambda.npy"))
    return TopicModel(directory, meta, vocab, lambda_)


#: ``prepare`` options that decide which words a text yields: reused from the training corpus on raw input
TOKENIZER_OPTIONS = ("language", "stopwords", "min_token_length", "token_pattern")


def training_corpus_options(meta: dict) -> dict | None:
    """The ``prepare`` options of the corpus the model was trained on (its ``corpus.json``), None if it is
    gone. A language view of a polylingual model reads its language's sub-corpus."""
    corpus_dir = (meta.get("data") or {}).get("corpus")
    if corpus_dir and meta.get("language"):
        corpus_dir = storage.join(corpus_dir, meta["language"])
    path = storage.join(corpus_dir, "corpus.json") if corpus_dir else None
    if path and storage.exists(path):
        return storage.load_json(path).get("options") or {}
    log.warning("training corpus %s not found: raw text is prepared with prepare's defaults", corpus_dir)
    return None


def training_tokenizer(meta: dict) -> dict:
    """The tokenizer options the training corpus was prepared with ({} if its corpus.json is gone)."""
    options = training_corpus_options(meta) or {}
    return {k: options[k] for k in TOKENIZER_OPTIONS if k in options}


def write_topics_file(directory: str, top_words: int) -> None:
    """``topics.txt``: the top words of every topic of the model in ``directory``."""
    text = format_model_topics(load_model(directory), top_words) + "\n"
    storage.write_bytes(storage.join(directory, "topics.txt"), text.encode("utf-8"))


def format_model_topics(model: TopicModel, n: int = 10, weights: bool = False) -> str:
    """The top words of every topic; a polylingual model shows each topic's languages side by side."""
    if not model.languages:
        return format_topics(model.topic_names(), model.top_words(n), n, weights)
    views = [model.language_view(l) for l in model.languages]
    tops = [v.top_words(n) for v in views]
    lines = []
    for k, name in enumerate(model.topic_names()):
        for i, language in enumerate(model.languages):
            label = f"{name} [{language}]" if i == 0 else f"[{language}]"
            words = tops[i][k]
            text = ", ".join(f"{w} {p:.4f}" for w, p in words) if weights else " ".join(w for w, _ in words)
            lines.append(f"{label:>15}: {text}")
    return "\n".join(lines)


def format_topics(names: list[str], top_words, n: int, weights: bool = False) -> str:
    if weights:
        return "\n".join(f"{name}: " + ", ".join(f"{w} {p:.4f}" for w, p in words[:n])
                         for name, words in zip(names, top_words))
    lines = []
    for name, words in zip(names, top_words):
        lines.append(f"{name:>10}: " + " ".join(w for w, _ in words[:n]))
    return "\n".join(lines)
