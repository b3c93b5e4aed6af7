"""Building a prior tree's concepts from bilingual dictionaries for a prepared corpus: what ``spark-topics tree``
runs, and what a refresh of a tree model runs again over the grown vocabulary (:mod:`drivers.models.tree.growth`).

Phrases are normalised with the corpus' own tokenizer; single-word pairs whose two words are in the corpus
vocabularies become concepts (:func:`drivers.models.tree.prior_tree.build_concepts`).
"""
from __future__ import annotations

from drivers import storage
from drivers.corpora.files import CORPUS_JSON
from drivers.models.tree.dictionaries import read_dictionaries
from drivers.models.tree.prior_tree import build_concepts
from inference.errors import UsageError


def corpus_vocabulary(corpus_dir: str) -> tuple[dict, tuple, dict]:
    """((language, word) -> global id, the corpus' languages, its tokenizer options per language)."""
    from drivers.corpora.aligned import aligned_vocab, is_aligned

    meta_path = storage.join(corpus_dir, CORPUS_JSON)
    if not storage.exists(meta_path):
        raise UsageError(f"{corpus_dir} is not a prepared corpus (no {CORPUS_JSON}): run spark-topics prepare first")
    meta = storage.load_json(meta_path)
    if is_aligned(corpus_dir):          # global ids over the languages' concatenated vocabularies
        languages = tuple(meta["languages"])
        vocab, _ = aligned_vocab(corpus_dir, languages)
        options = {l: (storage.load_json(storage.join(corpus_dir, l, CORPUS_JSON)).get("options") or {})
                   for l in languages}
        return dict(zip(zip(vocab["lang"], vocab["term"]), vocab["id"].astype(int))), languages, options
    vocab = storage.read_vocab(storage.join(corpus_dir, "vocab.parquet"))
    return (dict(zip(zip([""] * len(vocab), vocab["term"]), vocab["id"].astype(int))), ("",),
            {"": meta.get("options") or {}})


def spark_tokenizer(spark, options: dict):
    """``tokenize(language, phrases)`` with the corpus' own tokenizer (its pattern and minimum length; no stop-word
    removal, so a phrase with a stop word in it still counts as several words)."""
    from drivers.preparation.text import DEFAULT_TOKEN_PATTERN, tokenize as tokenize_frame

    def tokenize(language: str, phrases: list[str]) -> list[list[str]]:
        opts = options.get(language) or {}
        frame = spark.createDataFrame([(i, p) for i, p in enumerate(phrases)], "i long, text string")
        rows = tokenize_frame(frame, "text", "tokens", pattern=opts.get("token_pattern") or DEFAULT_TOKEN_PATTERN,
                              min_token_length=int(opts.get("min_token_length") or 2)).select("i", "tokens").collect()
        by_index = {r["i"]: list(r["tokens"]) for r in rows}
        return [by_index[i] for i in range(len(phrases))]
    return tokenize


def dictionary_concepts(spark, dictionaries: list[str], corpus_dir: str, languages: dict | None = None):
    """``(concepts, coverage report, the corpus' languages, the dictionaries' pair count)``: the concepts the
    dictionaries give over the vocabulary of ``corpus_dir`` (``languages``: a dictionary name's code -> the corpus'
    language, ``tree --languages``)."""
    vocabulary, corpus_languages, options = corpus_vocabulary(corpus_dir)
    pairs = list(read_dictionaries(dictionaries, languages))
    if not pairs:
        raise UsageError(f"no translation pairs in {', '.join(dictionaries)}")
    spark.sparkContext.setJobDescription("tree: tokenise the dictionaries' phrases")
    concepts, report = build_concepts(pairs, spark_tokenizer(spark, options), vocabulary, corpus_languages)
    spark.sparkContext.setJobDescription(None)
    return concepts, report, corpus_languages, len(pairs)
