"""How a model's training corpus turned text into words, kept in the model directory (``tokenizer.json``,
``stopwords[.L].txt``) so that raw text given to ``infer`` is read the same way; and the words ``prepare`` cut from
it as too frequent (``frequent_terms[.L].parquet``), which no refresh adds as new words (issue 30)."""
from __future__ import annotations

import logging
import os

from drivers import storage
from drivers.corpora.files import CORPUS_JSON, FREQUENT_TERMS, NO_STOPWORDS, STOPWORDS
from drivers.store.topic_model import TopicModel

log = logging.getLogger("spark_topics.model_store")

#: ``prepare`` options that decide which words a text yields: kept with the model for raw ``infer`` input
TOKENIZER_OPTIONS = ("language", "stopwords", "min_token_length", "token_pattern", "segments", "ordered")
TOKENIZER = "tokenizer.json"


def is_tokenizer_file(name: str) -> bool:
    """Whether ``name`` in a model directory is one of the files :func:`save_tokenizer` writes (a refreshed version
    copies them from its parent)."""
    return name == TOKENIZER or (name.startswith("stopwords") and name.endswith(".txt")) or \
        (name.startswith("frequent_terms") and name.endswith(".parquet"))


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
        frequent = storage.join(directory, FREQUENT_TERMS)
        if storage.exists(frequent):         # the terms cut for df > max_df: one file, (term, df)
            name = f"frequent_terms.{language}.parquet" if language else FREQUENT_TERMS
            table = storage.read_table(frequent)
            if "term" not in table.column_names:         # Spark wrote no row and no schema
                import pyarrow as pa

                table = pa.table({"term": pa.array([], pa.string()), "df": pa.array([], pa.int64())})
            storage.write_parquet(storage.join(model_dir, name), table)
            entry["frequent_terms_file"] = name
        entries[language] = entry
    storage.save_json(storage.join(model_dir, TOKENIZER), entries)


def frequent_terms(model, language: str | None = None) -> list[str]:
    """The terms ``prepare`` cut from the model's training corpus (its ``language`` part) for df > max_df, kept
    beside the model (``frequent_terms[.L].parquet``, named in ``tokenizer.json``); [] for a model trained before
    the list (or on a corpus with a given vocabulary): a refresh then adds any word, as before."""
    path = storage.join(model.directory, TOKENIZER)
    if not storage.exists(path):
        return []
    language = language if language is not None else model.meta.get("language") or ""
    name = (storage.load_json(path).get(language) or {}).get("frequent_terms_file")
    if not name:
        return []
    table = storage.read_table(storage.join_inside(model.directory, name, f"{TOKENIZER}'s frequent_terms_file"))
    return [str(term) for term in table.column("term").to_pylist()] if "term" in table.column_names else []


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
