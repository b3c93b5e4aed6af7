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
parameters of the tree's edges, :class:`inference.tree_layout.TreeLayout`), ``tree_concepts.npy`` (C x 2 word
ids of the
concepts' leaves) and ``topic_word.npy`` (K x V: p(w | k), a sum over the word's paths), or per language
``topic_word.<L>.npy`` = p(w | k, L) (K x V_L, rows sum to 1) beside ``vocab.<L>.parquet``. Trained by Gibbs
sampling (``inference: gibbs``, ``prior_tree`` in ``model.json``), it has ``tree_edge_counts.npy`` (K x E
(topic, edge) counts after the last iteration) in place of ``tree_lambda.npy``.

A Gibbs model (``lda-gibbs``, ``stm``, ``seqlda``, ``adatm``; written by
:mod:`drivers.families.gibbs.family`) has ``topic_word.npy`` (K x V posterior-mean probabilities,
rows sum to 1) instead of ``lambda.npy``; :func:`load_model` puts it in ``lambda_``.
"""
from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from drivers import storage
from inference.tree_layout import TreeLayout
from drivers.store import model_root, publish
from drivers.store.topic_model import (PointTopicModel, TREE_CONCEPTS, TREE_EDGE_COUNTS, TREE_LAMBDA, TopicModel,
                                       TreeTopicModel)
from inference.errors import DamagedError, UsageError
from inference.layout import VocabLayout


CODE_VERSION = "0.2.0"
#: model directories of this version were written in place, without the completion marker
UNMARKED_VERSIONS = ("0.1.0",)

log = logging.getLogger("spark_topics.model_store")


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
    if stem == TOPIC_WORD[:-len(".npy")]:        # the common file: the joint p(w | k) over every language
        save_topic_word(directory, matrix)
    for language, start, stop in zip(layout.languages, layout.offsets[:-1], layout.offsets[1:]):
        part = matrix[:, start:stop]
        if normalise:
            part = part / part.sum(axis=1, keepdims=True)
        storage.save_npy(storage.join(directory, f"{stem}.{language}.npy"),
                         np.ascontiguousarray(part, dtype=np.float64))
        words = vocab.iloc[start:stop][cols].copy()
        words["id"] = words["id"] - start
        write_parquet(storage.join(directory, f"vocab.{language}.parquet"), words)


def _load_tree_model(directory: str, meta: dict) -> TreeTopicModel:
    if meta.get("languages"):
        vocabs, offset = [], 0
        for language in meta["languages"]:
            v = _read(directory, f"vocab.{language}.parquet", storage.read_vocab)
            vocabs.append(v.assign(id=v["id"] + offset, lang=language, local_id=v["id"]))
            offset += len(v)
        vocab = pd.concat(vocabs, ignore_index=True)
    else:
        vocab = _read(directory, "vocab.parquet", storage.read_vocab)
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


def run_stamp(started: float) -> dict:
    """The code that made a model and the seconds it took since ``started`` (``time.time()``)."""
    return {"code": code_version(), "train_seconds": round(time.time() - started, 3)}


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
    """A variational model's files: ``lambda.npy`` (per language ``lambda.<L>.npy``), the vocabulary, the common
    ``topic_word.npy`` (:func:`variational_topic_word`) and model.json."""
    storage.makedirs(directory)
    polylingual = layout is not None and layout.is_polylingual
    save_matrix(directory, "lambda", lambda_, vocab, layout if polylingual else None)
    save_topic_word(directory, variational_topic_word(lambda_, layout if polylingual else None))
    storage.save_json(storage.join(directory, "model.json"), meta)


#: the file every model directory has (README "Model directory"): K x V, rows sum to 1
TOPIC_WORD = "topic_word.npy"


def variational_topic_word(lambda_: np.ndarray, layout=None) -> np.ndarray:
    """E_q[beta] as one K x V distribution per topic: lambda normalised by row; a polylingual model (one Dirichlet
    per language, no joint over the languages) weighs each language's E_q[beta_k,L] by 1 / (number of languages)."""
    flat = layout if layout is not None else VocabLayout.monolingual(lambda_.shape[1])
    return flat.normalise(lambda_) / len(flat.languages)


def save_topic_word(directory: str, topic_word: np.ndarray) -> None:
    """``topic_word.npy``: the model's p(w | k) over its whole vocabulary (a polylingual model's languages
    concatenated in model.json's order), K x V float64, rows summing to 1, saved without pickle."""
    storage.save_npy(storage.join(directory, TOPIC_WORD), np.ascontiguousarray(topic_word, dtype=np.float64))


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
               "loglik.png", "topics.txt", "tokenizer.json", "stopwords.txt", "stopwords.L.txt",
               "frequent_terms.parquet", "frequent_terms.L.parquet")


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


@dataclass(frozen=True)
class MatrixFormat:
    """How a family's model directory keeps its K x V topic-word matrix."""
    matrix_file: str            # lambda.npy (per language: lambda.<L>.npy)
    positive: bool              # Dirichlet parameters (> 0), not probabilities (>= 0)
    kind: type                  # the TopicModel it is read into


#: the variational family's lambda (Dirichlet parameters) and a sampled family's posterior-mean probabilities
VARIATIONAL = MatrixFormat("lambda.npy", True, TopicModel)
SAMPLED = MatrixFormat("topic_word.npy", False, PointTopicModel)


def matrix_format(directory: str, meta: dict) -> MatrixFormat:
    """The format of a model directory's matrix: by model.json's ``inference`` (``gibbs``: sampled; ``variational``
    or ``hybrid``, which variational models record in their ``settings``: variational); a directory written before
    model.json recorded it by the file it holds (every model now also writes ``topic_word.npy``)."""
    inference = meta.get("inference") or (meta.get("settings") or {}).get("inference")
    if inference is not None:
        return SAMPLED if inference == "gibbs" else VARIATIONAL
    stem = "topic_word" if not meta.get("languages") else f"topic_word.{meta['languages'][0]}"
    sampled = storage.exists(storage.join_inside(directory, f"{stem}.npy")) and not storage.exists(
        storage.join_inside(directory, f"{stem.replace('topic_word', 'lambda', 1)}.npy"))
    return SAMPLED if sampled else VARIATIONAL


def read_model_files(directory: str) -> TopicModel:
    """The model files of ``directory`` as :func:`load_model` checks them, without the completion marker (for the
    run that is writing the directory)."""
    meta = _read_meta(directory)
    if meta.get("tree"):
        return _load_tree_model(directory, meta)
    family = matrix_format(directory, meta)
    kind = family.kind
    if meta.get("languages"):  # polylingual: concatenate the languages in model.json's order
        stem = family.matrix_file[:-len(".npy")]
        vocabs, lambdas, offset = [], [], 0
        for language in meta["languages"]:
            v = _read(directory, f"vocab.{language}.parquet", storage.read_vocab)
            vocabs.append(v.assign(id=v["id"] + offset, lang=language, local_id=v["id"]))
            lambdas.append(_read(directory, f"{stem}.{language}.npy", storage.load_npy))
            offset += len(v)
        if len({np.ndim(l) == 2 and np.shape(l)[0] for l in lambdas}) != 1:
            raise DamagedError(f"{directory}: the languages' {stem} files have different numbers of topics: the model "
                               f"directory is damaged; train the model again")
        model = kind(directory, meta, pd.concat(vocabs, ignore_index=True), np.hstack(lambdas))
        check_model(model, f"{stem}.<L>.npy", family.positive)
        return model
    vocab = _read(directory, "vocab.parquet", storage.read_vocab)
    model = kind(directory, meta, vocab, _read(directory, family.matrix_file, storage.load_npy))
    check_model(model, family.matrix_file, family.positive)
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


