"""Inference with a variational family's model: the fold-in E-step over a prepared corpus on Spark (``infer``), the
model's exp E_q[log beta] and a corpus opened against the model's vocabulary."""
from __future__ import annotations

import re
from functools import partial

import numpy as np

from drivers import storage
from drivers.corpora.aligned import is_aligned, load_aligned_corpus
from drivers.corpora import in_process as local_corpus
from drivers.corpora.bow import Corpus
from drivers.corpora.files import CORPUS_JSON, DOCS, REJECTS, rejects_schema
from drivers.store.model_store import load_model, require_same_vocabulary
from drivers.store.topic_model import TopicModel
from inference.errors import UsageError
from inference.heldout import fold_in, word_factor
from inference.mapper import EStepSettings


def name_words(message: str, vocab) -> str:
    """``message`` with every "word id N" followed by the word itself (and its language)."""
    terms = dict(zip(vocab["id"].astype(int), vocab["term"]))
    languages = dict(zip(vocab["id"].astype(int), vocab["lang"])) if "lang" in vocab.columns else {}

    def name(match):
        i = int(match.group(1))
        if i not in terms:
            return match.group(0)
        return f"word id {i} ({terms[i]!r}" + (f", {languages[i]})" if i in languages else ")")
    return re.sub(r"word id (\d+)", name, message)


def exp_elogbeta(model: TopicModel) -> tuple[np.ndarray, np.ndarray]:
    """The fold-in's word factor: exp(E_q[log beta_kv]) = exp(Psi(lambda_kv) - Psi(sum_v lambda_kv)), K x V (sums
    within a language), each word's column scaled to a maximum of 1, and the (V,) logs of the scales
    (:func:`inference.heldout.word_factor`; pass them to ``fold_in(log_scale=...)`` for the exact ELBO)."""
    return word_factor(model.layout.dirichlet_expectation(model.lambda_))


def open_model_and_corpus(spark, model: TopicModel | str, corpus_dir: str, partitions: int | None = None,
                          lang: str | None = None):
    """The model and the corpus as blocks, after checking that they share the vocabulary (``spark`` None: a
    monolingual corpus, its blocks loaded in this process).

    A polylingual model reads either one language (``lang``: the model's view of that
    language, a monolingual corpus) or an aligned corpus (every language of a tuple).
    """
    model = load_model(model) if isinstance(model, str) else model
    if model.languages and lang is None and is_aligned(corpus_dir):
        corpus_langs = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))["languages"]
        corpus = load_aligned_corpus(spark, corpus_dir, partitions, [l for l in model.languages if l in corpus_langs])
        for language in corpus.layout.languages:
            require_same_vocabulary(model.language_view(language), language_vocabulary(corpus, language))
        if corpus.layout.languages != tuple(model.languages):  # a subset: the model's columns of those languages
            keep = np.concatenate([np.arange(model.layout.slice_of(l).start, model.layout.slice_of(l).stop)
                                   for l in corpus.layout.languages])
            model = type(model)(model.directory, dict(model.meta, languages=list(corpus.layout.languages)),
                                model.vocab.iloc[keep].reset_index(drop=True), model.lambda_[:, keep])
        return model, corpus
    if model.languages:
        if lang is None:
            raise UsageError(f"{model.directory} is polylingual ({', '.join(model.languages)}): pass --lang for "
                             f"documents in one language, or an aligned corpus (prepare --lang-column)")
        model = model.language_view(lang)
    elif lang is not None:
        raise UsageError(f"--lang applies to polylingual models; {model.directory} is monolingual")
    corpus = local_corpus.opened(spark, corpus_dir, partitions)
    require_same_vocabulary(model, corpus)
    return model, corpus


def language_vocabulary(corpus: Corpus, language: str) -> Corpus:
    """A Corpus shell with one language's vocabulary of an aligned corpus (for vocabulary checks)."""
    part = corpus.vocab[corpus.vocab["lang"] == language]
    vocab = part.assign(id=part["local_id"]).reset_index(drop=True)
    return Corpus(storage.join(corpus.directory, language), {}, vocab, None, 0)


def infer_task(items, bc_params, options: EStepSettings):
    """Spark task: gamma and theta of every document of the partition's block."""
    (topic_word, _), alpha = bc_params.value
    for _, block in items:
        fit = fold_in(block, topic_word, alpha, options.tol, options.max_iter)
        for doc_id, gamma, theta in zip(block.doc_ids, fit.gamma.tolist(), fit.theta.tolist()):
            yield str(doc_id), gamma, theta


def empty_documents(spark, corpus_dir: str):
    """Ids of the documents ``prepare`` rejected as ``empty`` (no known word), as a DataFrame."""
    from pyspark.sql import functions as F

    path = storage.join(corpus_dir, REJECTS)
    if not storage.exists(path):
        return spark.createDataFrame([], "doc_id string")
    return (spark.read.schema(rejects_schema()).json(path).where(F.col("reason") == "empty")
            .select(F.col("id").alias("doc_id")))


def infer_documents(spark, model: TopicModel | str, corpus_dir: str, output_dir: str,
                    options: EStepSettings | None = None, partitions: int | None = None,
                    lang: str | None = None) -> dict:
    """Topic proportions of every document of a prepared corpus; writes OUT_DIR/doc_topics.parquet.

    Returns the counts printed by the job: documents, known and unknown tokens,
    documents with no known words.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, StringType, StructField, StructType

    options = options or EStepSettings()
    model, corpus = open_model_and_corpus(spark, model, corpus_dir, partitions, lang)
    alpha = model.alpha
    sc = spark.sparkContext
    sc.setJobDescription("infer: E-step with the model's topics")
    bc_params = sc.broadcast((exp_elogbeta(model), alpha))
    schema = StructType([StructField("doc_id", StringType(), False),
                         StructField("gamma", ArrayType(DoubleType(), False), False),
                         StructField("theta", ArrayType(DoubleType(), False), False)])
    fitted = spark.createDataFrame(corpus.blocks.mapPartitions(partial(infer_task, bc_params=bc_params,
                                                                       options=options)), schema)
    parts = ([storage.join(corpus_dir, l) for l in corpus.layout.languages] if corpus.layout is not None
             else [corpus_dir])
    sizes = None
    for part in parts:  # an aligned corpus: a tuple's tokens are summed over its languages
        s = spark.read.parquet(storage.join(part, DOCS)).select(
            "doc_id", F.col("n_tokens").cast("long"), F.col("n_oov").cast("long").alias("n_unknown"))
        sizes = s if sizes is None else sizes.unionByName(s)
    sizes = sizes.groupBy("doc_id").agg(F.sum("n_tokens").alias("n_tokens"), F.sum("n_unknown").alias("n_unknown"))
    known = fitted.join(sizes, "doc_id").withColumn("no_known_words", F.lit(False))
    prior_mean = (alpha / alpha.sum()).tolist()
    empty = None
    for part in parts:
        e = empty_documents(spark, part)
        empty = e if empty is None else empty.unionByName(e)
    unknown_only = (empty.distinct().join(sizes.select("doc_id"), "doc_id", "left_anti")
                    .select("doc_id", F.lit(alpha.tolist()).cast("array<double>").alias("gamma"),
                            F.lit(prior_mean).cast("array<double>").alias("theta"),
                            F.lit(0).cast("long").alias("n_tokens"),
                            F.lit(None).cast("long").alias("n_unknown"),
                            F.lit(True).alias("no_known_words")))
    path = storage.join(output_dir, "doc_topics.parquet")
    known.unionByName(unknown_only).orderBy("doc_id").write.mode("overwrite").parquet(path)
    bc_params.destroy()
    corpus.blocks.unpersist()
    sc.setJobDescription(None)

    written = spark.read.parquet(path).agg(
        F.count("*").alias("documents"), F.sum("n_tokens").alias("tokens"),
        F.sum("n_unknown").alias("unknown"), F.sum(F.col("no_known_words").cast("int")).alias("empty")).first()
    return {"documents": int(written.documents), "known_tokens": int(written.tokens or 0),
            "unknown_tokens": int(written.unknown or 0), "no_known_words": int(written.empty or 0),
            "output": path}
