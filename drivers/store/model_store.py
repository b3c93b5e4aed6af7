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

A tree model (``tlda``, ``ptlda``: ``tree`` in ``model.json``) has ``tree_lambda.npy`` (K x E: the variational
parameters of the tree's edges, :class:`drivers.models.tree.layout.TreeLayout`), ``tree_concepts.npy`` (C x 2 word
ids of the
concepts' leaves) and ``topic_word.npy`` (K x V: p(w | k), a sum over the word's paths), or per language
``topic_word.<L>.npy`` = p(w | k, L) (K x V_L, rows sum to 1) beside ``vocab.<L>.parquet``. Trained by Gibbs
sampling (``inference: gibbs``, ``prior_tree`` in ``model.json``), it has ``tree_edge_counts.npy`` (K x E
(topic, edge) counts after the last iteration) in place of ``tree_lambda.npy``.

A Gibbs model (``lda-gibbs``, ``stm``, ``seqlda``, ``adatm``; written by
:mod:`drivers.families.gibbs`) has ``topic_word.npy`` (K x V posterior-mean probabilities,
rows sum to 1) instead of ``lambda.npy``; :func:`load_model` puts it in ``lambda_``.
"""
from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, NO_STOPWORDS, STOPWORDS, read_vocab
from drivers.models.tree.layout import TreeLayout
from drivers.store import model_root
from drivers.store import publish
from inference.errors import DamagedError, UsageError
from inference.layout import VocabLayout

CODE_VERSION = "0.2.0"
#: model directories of this version were written in place, without the completion marker
UNMARKED_VERSIONS = ("0.1.0",)

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


def save_tree_model(directory: str, meta: dict, vocab: pd.DataFrame, lambda_: np.ndarray, tree: TreeLayout) -> None:
    """A tree model's files (see the module docstring)."""
    storage.makedirs(directory)
    storage.save_npy(storage.join(directory, TREE_LAMBDA), np.ascontiguousarray(lambda_, dtype=np.float64))
    storage.save_npy(storage.join(directory, TREE_CONCEPTS), np.ascontiguousarray(tree.concept_words, dtype=np.int64))
    save_matrix(directory, "topic_word", tree.normalise(lambda_), vocab,
                None if tree.languages == ("",) else tree, normalise=True)
    storage.save_json(storage.join(directory, "model.json"), meta)


def save_matrix(directory: str, stem: str, matrix: np.ndarray, vocab: pd.DataFrame, layout=None,
                normalise: bool = False) -> None:
    """``<stem>.npy`` (K x V) and ``vocab.parquet``; for a multilingual ``layout`` one ``<stem>.<L>.npy`` (the
    language's columns, rows renormalised with ``normalise``) and ``vocab.<L>.parquet`` (local ids) per language."""
    cols = [c for c in ("term", "id", "df", "cf") if c in vocab.columns]
    if layout is None or len(layout.languages) == 1:
        storage.save_npy(storage.join(directory, f"{stem}.npy"), np.ascontiguousarray(matrix, dtype=np.float64))
        write_parquet(storage.join(directory, "vocab.parquet"), vocab[cols])
        return
    for language, start, stop in zip(layout.languages, layout.offsets[:-1], layout.offsets[1:]):
        part = matrix[:, start:stop]
        if normalise:
            part = part / part.sum(axis=1, keepdims=True)
        storage.save_npy(storage.join(directory, f"{stem}.{language}.npy"), np.ascontiguousarray(part, dtype=np.float64))
        words = vocab.iloc[start:stop][cols].copy()
        words["id"] = words["id"] - start
        write_parquet(storage.join(directory, f"vocab.{language}.parquet"), words)


def _load_tree_model(directory: str, meta: dict) -> TreeTopicModel:
    if meta.get("languages"):
        vocabs, offset = [], 0
        for language in meta["languages"]:
            v = _read(directory, f"vocab.{language}.parquet", read_vocab)
            vocabs.append(v.assign(id=v["id"] + offset, lang=language, local_id=v["id"]))
            offset += len(v)
        vocab = pd.concat(vocabs, ignore_index=True)
    else:
        vocab = _read(directory, "vocab.parquet", read_vocab)
    lambda_ = _read(directory, TREE_LAMBDA, storage.load_npy)
    concepts = _read(directory, TREE_CONCEPTS, storage.load_npy)
    model = TreeTopicModel(directory, meta, vocab, lambda_, concepts)
    advice = "the model directory is damaged; train the model again"
    try:
        layout = model.layout
    except (ValueError, KeyError) as exc:
        raise DamagedError(f"{directory}: {TREE_CONCEPTS} does not fit the vocabulary ({exc}): {advice}") from None
    K = int(meta["topics"])
    if lambda_.ndim != 2 or lambda_.shape != (K, layout.parameter_size) or not np.all(np.isfinite(lambda_)) \
            or np.any(lambda_ <= 0):
        raise DamagedError(f"{directory}: {TREE_LAMBDA} is not {K} x {layout.parameter_size} positive numbers (the "
                           f"tree's edges): {advice}")
    return model


def require_same_vocabulary(model: TopicModel, corpus) -> None:
    """Fail unless the corpus numbers the same terms with the same ids as the model."""
    ours, theirs = model.vocab["term"].to_numpy(), corpus.vocab["term"].to_numpy()
    if len(ours) == len(theirs) and np.array_equal(ours, theirs):
        return
    differ = int(np.sum(ours[:min(len(ours), len(theirs))] != theirs[:min(len(ours), len(theirs))]))
    raise UsageError(
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


def read_parquet(path: str) -> pd.DataFrame:
    """A Parquet file or directory as a pandas frame, read with pyarrow on the driver."""
    import pyarrow.parquet as pq

    filesystem, p = storage.resolve(path)
    return pq.read_table(p, filesystem=filesystem).to_pandas()


def write_parquet(path: str, frame: pd.DataFrame) -> None:
    storage.write_parquet(path, pa.Table.from_pandas(frame, preserve_index=False))


def save_model(directory: str, meta: dict, vocab: pd.DataFrame, lambda_: np.ndarray, layout=None) -> None:
    storage.makedirs(directory)
    save_matrix(directory, "lambda", lambda_, vocab, layout if layout is not None and layout.is_polylingual else None)
    storage.save_json(storage.join(directory, "model.json"), meta)


PRIOR_SPEC = "prior_spec.json"   # an informed prior as given (drivers/models/lda/informed_prior.py spec_to_json)


def save_prior(directory: str, prior, topic_names: list, vocab: pd.DataFrame) -> None:
    """prior.parquet: the entries of an informed prior that differ from the symmetric eta."""
    topics, ids, values = prior.entries()
    keep = values != prior.base_row[ids]
    frame = pd.DataFrame({"topic": topics[keep], "name": np.asarray(topic_names, dtype=object)[topics[keep]],
                          "id": ids[keep], "term": vocab["term"].to_numpy()[ids[keep]], "eta": values[keep]})
    write_parquet(storage.join(directory, "prior.parquet"), frame)


#: every file a model directory may hold besides the checkpoint (``L``: a language of a polylingual model)
MODEL_FILES = ("model.json", "lambda.npy", "lambda.L.npy", "topic_word.npy", "topic_word.L.npy", TREE_LAMBDA,
               TREE_CONCEPTS, TREE_EDGE_COUNTS, "vocab.parquet", "vocab.L.parquet",
               "prior.parquet", PRIOR_SPEC, "doc_topics.parquet", "segment_topics.parquet", "elbo.png",
               "loglik.png", "topics.txt", "tokenizer.json", "stopwords.txt", "stopwords.L.txt")


def is_model_file(name: str) -> bool:
    """Whether ``name`` is one of :data:`MODEL_FILES` (written by spark-topics, not by the user)."""
    for pattern in (entry.split("L") for entry in MODEL_FILES):
        if (len(pattern) == 1 and name == pattern[0]) or \
                (len(pattern) == 2 and name.startswith(pattern[0]) and name.endswith(pattern[1])
                 and len(name) > len(pattern[0]) + len(pattern[1])):
            return True
    return False


def resolve(directory: str, version: str | None = None) -> str:
    """The complete model directory to read: ``directory``, or a model root's version (default: its LATEST,
    :mod:`drivers.store.model_root`)."""
    return model_root.resolve(directory, version)


def read_meta(directory: str, version: str | None = None) -> dict:
    """``model.json`` of a completely written model directory (or a model root's version), or a one-line
    refusal."""
    directory = resolve(directory, version)
    if _unmarked(directory):
        return _read_meta(directory)
    return publish.read_consistently(directory, _read_meta, own_file=is_model_file)


def _unmarked(directory: str) -> bool:
    """A model directory written before directories were published whole (no marker, an older model.json):
    read with a warning."""
    if storage.exists(storage.join(directory, publish.MARKER)) or not storage.exists(directory):
        return False
    try:
        meta = storage.load_json(storage.join(directory, "model.json"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    package = (meta.get("code") or {}).get("package") if isinstance(meta, dict) else None
    if package in UNMARKED_VERSIONS:
        log.warning("%s was written by spark-topics %s, without a completion marker: read as it is", directory,
                    package)
        return True
    return False


def _read_meta(directory: str) -> dict:
    path = storage.join(directory, "model.json")
    if not storage.exists(path):
        raise UsageError(f"{directory} is not a model directory (no model.json)")
    try:
        meta = storage.load_json(path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DamagedError(f"{path} is not valid JSON ({exc}): the model directory is damaged; train the model again")
    missing = [key for key in ("model", "topics") if key not in (meta if isinstance(meta, dict) else {})]
    if missing:
        raise DamagedError(f"{path} lacks {', '.join(missing)}: the model directory is damaged; train the model again")
    return meta


def _read(directory: str, name: str, reader):
    path = storage.join_inside(directory, name)       # a language named in model.json is part of the name
    if not storage.exists(path):
        raise DamagedError(f"{directory} has no {name}: the model directory is incomplete; train the model again")
    try:
        return reader(path)
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise DamagedError(f"{path} cannot be read ({type(exc).__name__}: {exc}): the model directory is damaged; "
                           f"train the model again") from None


def load_model(directory: str, version: str | None = None) -> TopicModel:
    """The model in ``directory`` (or a model root's version, default LATEST), read by the family its
    ``model.json`` names and checked: its completion marker and manifest, shapes, finite and non-negative
    parameters, alpha. A damaged or incomplete directory is refused in one line; one replaced while it was read
    is read again."""
    directory = resolve(directory, version)
    if _unmarked(directory):
        return read_model_files(directory)
    return publish.read_consistently(directory, read_model_files, own_file=is_model_file)


def read_model_files(directory: str) -> TopicModel:
    """The model files of ``directory`` as :func:`load_model` checks them, without the completion marker (for the
    run that is writing the directory)."""
    from drivers import registry

    meta = _read_meta(directory)
    family = registry.of_meta(meta).family_object()
    if meta.get("tree"):
        return _load_tree_model(directory, meta)
    kind = PointTopicModel if family.kind == "sampled" else TopicModel
    if meta.get("languages"):  # polylingual: concatenate the languages in model.json's order
        stem = family.matrix_file[:-len(".npy")]
        vocabs, lambdas, offset = [], [], 0
        for language in meta["languages"]:
            v = _read(directory, f"vocab.{language}.parquet", read_vocab)
            vocabs.append(v.assign(id=v["id"] + offset, lang=language, local_id=v["id"]))
            lambdas.append(_read(directory, f"{stem}.{language}.npy", storage.load_npy))
            offset += len(v)
        if len({np.ndim(l) == 2 and np.shape(l)[0] for l in lambdas}) != 1:
            raise DamagedError(f"{directory}: the languages' {stem} files have different numbers of topics: the model "
                               f"directory is damaged; train the model again")
        model = kind(directory, meta, pd.concat(vocabs, ignore_index=True), np.hstack(lambdas))
        check_model(model, f"{stem}.<L>.npy", family.positive_parameters)
        return model
    vocab = _read(directory, "vocab.parquet", read_vocab)
    model = kind(directory, meta, vocab, _read(directory, family.matrix_file, storage.load_npy))
    check_model(model, family.matrix_file, family.positive_parameters)
    return model


def check_model(model: TopicModel, matrix_file: str, positive: bool) -> None:
    """Refuse, in one line naming the file, a topic-word matrix whose shape disagrees with model.json and the
    vocabulary, that holds NaN, infinite or negative values (zero too where ``positive``: Dirichlet parameters),
    or an alpha that is not K positive numbers."""
    K, V = int(model.meta["topics"]), len(model.vocab)
    matrix, where = model.lambda_, f"{model.directory}: {matrix_file}"
    advice = "the model directory is damaged; train the model again"
    if matrix.ndim != 2 or matrix.shape != (K, V):
        raise DamagedError(f"{where} is {'x'.join(map(str, matrix.shape))}, but model.json has {K} topics and the "
                           f"vocabulary {V} terms: {advice}")
    bad = int(np.count_nonzero(~np.isfinite(matrix)))
    if bad:
        raise DamagedError(f"{where} holds {bad} NaN or infinite values: {advice}")
    bad = int(np.count_nonzero(matrix <= 0 if positive else matrix < 0))
    if bad:
        raise DamagedError(f"{where} holds {bad} {'non-positive' if positive else 'negative'} values: {advice}")
    if "alpha" in model.meta:
        alpha = np.asarray(model.meta["alpha"], dtype=np.float64)
        if alpha.shape != (K,) or not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
            raise DamagedError(f"{model.directory}: model.json's alpha is not {K} positive numbers: {advice}")


#: ``prepare`` options that decide which words a text yields: kept with the model for raw ``infer`` input
TOKENIZER_OPTIONS = ("language", "stopwords", "min_token_length", "token_pattern", "segments", "ordered")
TOKENIZER = "tokenizer.json"


def save_tokenizer(model_dir: str, corpus_dir: str, languages=None) -> None:
    """``tokenizer.json`` (and ``stopwords[.L].txt``): how the training corpus turned text into words, kept in the
    model directory so raw text given to ``infer`` is read the same way wherever the model (or its training
    corpus) has moved. ``languages``: the sub-corpora of an aligned corpus, one entry each."""
    parts = {"": corpus_dir} if not languages else {l: storage.join(corpus_dir, l) for l in languages}
    entries = {}
    for language, directory in parts.items():
        path = storage.join(directory, CORPUS_JSON)
        options = (storage.load_json(path).get("options") or {}) if storage.exists(path) else {}
        entry = {key: options[key] for key in TOKENIZER_OPTIONS if key in options}
        entry.pop("stopwords", None)          # a path on the training machine: the words themselves are kept
        if storage.exists(storage.join(directory, STOPWORDS)):
            name = f"stopwords.{language}.txt" if language else STOPWORDS
            storage.write_bytes(storage.join(model_dir, name), storage.read_bytes(storage.join(directory, STOPWORDS)))
            entry["stopwords_file"] = name
        entries[language] = entry
    storage.save_json(storage.join(model_dir, TOKENIZER), entries)


def raw_text_options(model: TopicModel) -> dict:
    """``prepare`` options that read raw text as the model's training corpus was read (tokenizer, stop words,
    segments), from the model directory's ``tokenizer.json``; {} (prepare's defaults) without one."""
    path = storage.join(model.directory, TOKENIZER)
    if not storage.exists(path):
        return _legacy_tokenizer(model)
    entry = dict(storage.load_json(path).get(model.meta.get("language") or "") or {})
    stopwords = entry.pop("stopwords_file", None)
    options = {key: entry[key] for key in TOKENIZER_OPTIONS if key in entry}
    if stopwords:
        options.update(language=NO_STOPWORDS,
                       stopwords=storage.join_inside(model.directory, stopwords, f"{TOKENIZER}'s stopwords_file"))
    return options


def _legacy_tokenizer(model: TopicModel) -> dict:
    """A model trained before ``tokenizer.json``: its training corpus' options, when model.json names that corpus
    by an absolute path that still exists (a relative one would be read against the working directory)."""
    corpus_dir = (model.meta.get("data") or {}).get("corpus")
    if corpus_dir and model.meta.get("language"):
        corpus_dir = storage.join(corpus_dir, model.meta["language"])
    path = storage.join(corpus_dir, CORPUS_JSON) if corpus_dir else None
    if path and ("://" in path or os.path.isabs(path)) and storage.exists(path):
        log.warning("%s has no %s: raw text is tokenised with the options of its training corpus %s",
                    model.directory, TOKENIZER, corpus_dir)
        options = storage.load_json(path).get("options") or {}
        return {key: options[key] for key in TOKENIZER_OPTIONS if key in options}
    log.warning("%s has no %s and its training corpus is not at an absolute path that exists: raw text is "
                "tokenised with prepare's defaults", model.directory, TOKENIZER)
    return {}


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
