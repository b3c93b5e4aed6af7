"""``spark-topics infer``: topic proportions of new documents under a trained model.

The topics are fixed: every document gets the variational E-step of Alg. 1 (eq
3.4 with exp E_q[log beta] from the model's lambda and the model's alpha) from the
cold start gamma_dk = alpha_k + N_d / K, as ``train`` runs it, but without lambda
statistics (:func:`inference.heldout.fold_in`).

``--input`` is either a prepared corpus directory (it has ``corpus.json``) that
shares the model's vocabulary, or raw text in any format ``prepare`` reads; raw
text is first prepared into ``OUT_DIR/corpus`` with the model's vocabulary
(``prepare --vocab MODEL_DIR/vocab.parquet``), so words the model never saw are
ignored and counted as unknown.

Output ``OUT_DIR/doc_topics.parquet``: ``doc_id``, ``gamma`` (K), ``theta`` (K,
gamma normalised), ``n_tokens`` (known tokens), ``n_unknown`` (tokens not in the
model's vocabulary; null where ``prepare`` did not record it), ``no_known_words``
(true for documents with no known word: ``prepare`` rejects them as ``empty``;
they get gamma = alpha, theta = alpha / sum alpha, the prior mean).
"""
from __future__ import annotations

import argparse
import logging
from functools import partial

import numpy as np

from drivers import storage
from inference.heldout import fold_in
from inference.mapper import EStepSettings
from jobs.corpus import Corpus, load_corpus
from jobs.model_store import TopicModel, load_model
from jobs.spark import get_spark

log = logging.getLogger("spark_topics.infer")

#: ``prepare`` options that decide which words a text yields: reused from the training corpus
TOKENIZER_OPTIONS = ("language", "stopwords", "min_token_length", "token_pattern")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="MODEL_DIR written by `spark-topics train`")
    parser.add_argument("--input", required=True, metavar="PATH",
                        help="a prepared corpus directory with the model's vocabulary, or raw text "
                             "(any input of `spark-topics prepare`)")
    parser.add_argument("--output", required=True, metavar="OUT_DIR",
                        help="writes OUT_DIR/doc_topics.parquet (and OUT_DIR/corpus for raw input)")
    parser.add_argument("--format", default="auto", help="raw input format, as in `prepare` (default: auto)")
    parser.add_argument("--id-column", default="id", help="document id column of raw JSON/CSV/Parquet input")
    parser.add_argument("--text-column", default="text", help="text column of raw JSON/CSV/Parquet input")
    parser.add_argument("--lang", default=None,
                        help="polylingual model: the language of the input documents (a new document in one "
                             "language); an aligned corpus (prepare --lang-column) as input uses every language "
                             "of each tuple")
    parser.add_argument("--partitions", type=int, default=None, help="document partitions (default: by size)")
    parser.add_argument("--estep-tol", type=float, default=1e-3, help="per-document mean |delta gamma| tolerance")
    parser.add_argument("--estep-max-iter", type=int, default=100, help="cap on per-document phi/gamma passes")
    g = parser.add_argument_group("Gibbs models (lda-gibbs, stm, seqlda, adatm)")
    g.add_argument("--segments", default=None,
                   help="raw input: how to cut documents into segments, as `prepare --segments` (default: as the "
                        "model's training corpus was)")
    g.add_argument("--sweeps", type=int, default=50, help="sweeps of the model's sampler per document")
    g.add_argument("--samples", type=int, default=5, help="samples averaged over the second half of the sweeps")
    g.add_argument("--seed", type=int, default=0, help="seed of the sampler")


# --------------------------------------------------------------------------- model + corpus

def exp_elogbeta(model: TopicModel) -> np.ndarray:
    """exp(E_q[log beta_kv]) = exp(Psi(lambda_kv) - Psi(sum_v lambda_kv)), K x V (sums within a language)."""
    return np.exp(model.layout.dirichlet_expectation(model.lambda_))


def require_model_vocabulary(model: TopicModel, corpus: Corpus) -> None:
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


def open_model_and_corpus(spark, model_dir: str, corpus_dir: str, partitions: int | None = None,
                          lang: str | None = None):
    """The model and the corpus as blocks, after checking that they share the vocabulary.

    A polylingual model reads either one language (``lang``: the model's view of that
    language, a monolingual corpus) or an aligned corpus (every language of a tuple).
    """
    from jobs.aligned import is_aligned, load_aligned_corpus

    model = load_model(model_dir)
    if model.meta.get("model") not in ("lda", "polylda"):
        raise SystemExit(f"{model_dir} is a {model.meta.get('model')!r} model: the variational E-step folds in "
                         f"documents for lda/polylda models only")
    if model.languages and lang is None and is_aligned(corpus_dir):
        corpus_langs = storage.load_json(storage.join(corpus_dir, "corpus.json"))["languages"]
        corpus = load_aligned_corpus(spark, corpus_dir, partitions, [l for l in model.languages if l in corpus_langs])
        for language in corpus.layout.languages:
            require_model_vocabulary(model.language_view(language), load_vocab_only(corpus, language))
        if corpus.layout.languages != tuple(model.languages):  # a subset: the model's columns of those languages
            keep = np.concatenate([np.arange(model.layout.slice_of(l).start, model.layout.slice_of(l).stop)
                                   for l in corpus.layout.languages])
            model = type(model)(model.directory, dict(model.meta, languages=list(corpus.layout.languages)),
                                model.vocab.iloc[keep].reset_index(drop=True), model.lambda_[:, keep])
        return model, corpus
    if model.languages:
        if lang is None:
            raise SystemExit(f"{model_dir} is polylingual ({', '.join(model.languages)}): pass --lang for "
                             f"documents in one language, or an aligned corpus (prepare --lang-column)")
        model = model.language_view(lang)
    elif lang is not None:
        raise SystemExit(f"--lang applies to polylingual models; {model_dir} is monolingual")
    corpus = load_corpus(spark, corpus_dir, partitions)
    require_model_vocabulary(model, corpus)
    return model, corpus


def load_vocab_only(corpus: Corpus, language: str) -> Corpus:
    """A Corpus shell with one language's vocabulary of an aligned corpus (for vocabulary checks)."""
    part = corpus.vocab[corpus.vocab["lang"] == language]
    vocab = part.assign(id=part["local_id"]).reset_index(drop=True)
    return Corpus(storage.join(corpus.directory, language), {}, vocab, None, 0)


def is_prepared_corpus(path: str) -> bool:
    return storage.exists(storage.join(path, "corpus.json"))


def prepare_with_model_vocabulary(spark, model: TopicModel, input_path: str, corpus_dir: str, **read_options) -> dict:
    """Run ``prepare`` on raw text with the model's vocabulary (and its training tokenizer, when known)."""
    from jobs.prepare import PrepareError, prepare_corpus

    language = model.meta.get("language")  # a language view of a polylingual model
    vocab = f"vocab.{language}.parquet" if language else "vocab.parquet"
    options = dict(read_options, vocab=storage.join(model.directory, vocab), overwrite=True)
    options.update(training_tokenizer(model))
    try:
        return prepare_corpus(spark, input_path, corpus_dir, **options)
    except PrepareError as exc:
        raise SystemExit(f"spark-topics infer: {exc}") from None


def training_tokenizer(model: TopicModel) -> dict:
    """The tokenizer options the training corpus was prepared with, or {} if its corpus.json is unreadable."""
    corpus_dir = (model.meta.get("data") or {}).get("corpus")
    if corpus_dir and model.meta.get("language"):
        corpus_dir = storage.join(corpus_dir, model.meta["language"])
    path = storage.join(corpus_dir, "corpus.json") if corpus_dir else None
    if path and storage.exists(path):
        options = storage.load_json(path).get("options") or {}
        return {k: options[k] for k in TOKENIZER_OPTIONS if k in options}
    log.warning("training corpus %s not found: raw text is tokenised with prepare's defaults", corpus_dir)
    return {}


# --------------------------------------------------------------------------- inference

def _infer_task(items, bc_params, options: EStepSettings):
    """Spark task: gamma and theta of every document of the partition's block."""
    topic_word, alpha = bc_params.value
    for _, block in items:
        fit = fold_in(block, topic_word, alpha, options.tol, options.max_iter)
        for doc_id, gamma, theta in zip(block.doc_ids, fit.gamma.tolist(), fit.theta.tolist()):
            yield str(doc_id), gamma, theta


def empty_documents(spark, corpus_dir: str):
    """Ids of the documents ``prepare`` rejected as ``empty`` (no known word), as a DataFrame."""
    from pyspark.sql import functions as F
    from jobs.prepare import REJECTS, REJECTS_SCHEMA

    path = storage.join(corpus_dir, REJECTS)
    if not storage.exists(path):
        return spark.createDataFrame([], "doc_id string")
    return (spark.read.schema(REJECTS_SCHEMA).json(path).where(F.col("reason") == "empty")
            .select(F.col("id").alias("doc_id")))


def infer_documents(spark, model_dir: str, corpus_dir: str, output_dir: str,
                    options: EStepSettings | None = None, partitions: int | None = None,
                    lang: str | None = None) -> dict:
    """Topic proportions of every document of a prepared corpus; writes OUT_DIR/doc_topics.parquet.

    Returns the counts printed by the job: documents, known and unknown tokens,
    documents with no known words.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, StringType, StructField, StructType

    options = options or EStepSettings()
    model, corpus = open_model_and_corpus(spark, model_dir, corpus_dir, partitions, lang)
    alpha = model.alpha
    sc = spark.sparkContext
    sc.setJobDescription("infer: E-step with the model's topics")
    bc_params = sc.broadcast((exp_elogbeta(model), alpha))
    schema = StructType([StructField("doc_id", StringType(), False),
                         StructField("gamma", ArrayType(DoubleType(), False), False),
                         StructField("theta", ArrayType(DoubleType(), False), False)])
    fitted = spark.createDataFrame(corpus.blocks.mapPartitions(partial(_infer_task, bc_params=bc_params,
                                                                       options=options)), schema)
    parts = ([storage.join(corpus_dir, l) for l in corpus.layout.languages] if corpus.layout is not None
             else [corpus_dir])
    sizes = None
    for part in parts:  # an aligned corpus: a tuple's tokens are summed over its languages
        s = spark.read.parquet(storage.join(part, "docs.parquet")).select(
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


def run(args) -> dict:
    from jobs import evaluate_gibbs

    spark = get_spark("spark-topics infer", args.master, args.conf)
    if evaluate_gibbs.is_gibbs_model(args.model):
        return run_gibbs(spark, args)
    corpus_dir = args.input
    if not is_prepared_corpus(args.input):
        corpus_dir = storage.join(args.output, "corpus")
        log.info("preparing %s with the model's vocabulary into %s", args.input, corpus_dir)
        model = load_model(args.model)
        if model.languages:
            if not args.lang:
                raise SystemExit(f"{args.model} is polylingual ({', '.join(model.languages)}): pass --lang for raw "
                                 f"text in one language, or prepare aligned input with --lang-column and "
                                 f"--vocab {args.model} first")
            model = model.language_view(args.lang)
        prepare_with_model_vocabulary(spark, model, args.input, corpus_dir,
                                      format=args.format, id_column=args.id_column, text_column=args.text_column)
    result = infer_documents(spark, args.model, corpus_dir, args.output,
                             EStepSettings(args.estep_tol, args.estep_max_iter), args.partitions, args.lang)
    print(f"inferred topic proportions of {result['documents']} documents -> {result['output']}")
    print(f"known tokens: {result['known_tokens']}; unknown tokens (not in the model's vocabulary, ignored): "
          f"{result['unknown_tokens']}; documents with no known words (theta = alpha / sum alpha, "
          f"flagged no_known_words): {result['no_known_words']}")
    return result


def run_gibbs(spark, args) -> dict:
    """``infer`` with a Gibbs model: jobs/infer_gibbs.py."""
    from jobs.infer_gibbs import infer_gibbs, training_segments

    if args.lang is not None:
        raise SystemExit("--lang applies to polylingual models")
    corpus_dir, rejected = args.input, 0
    if not is_prepared_corpus(args.input):
        corpus_dir = storage.join(args.output, "corpus")
        model = load_model(args.model)
        segments = args.segments or training_segments(model.meta)
        log.info("preparing %s with the model's vocabulary into %s (segments: %s)", args.input, corpus_dir,
                 segments or "one per document")
        prepared = prepare_with_model_vocabulary(spark, model, args.input, corpus_dir, format=args.format,
                                                 id_column=args.id_column, text_column=args.text_column,
                                                 segments=segments)
        rejected = int((prepared.get("rejected") or {}).get("empty", 0))
    elif args.segments:
        raise SystemExit("--segments applies to raw input; a prepared corpus keeps its segments")
    result = infer_gibbs(spark, args.model, corpus_dir, args.output, args.sweeps, args.samples, args.seed,
                         args.partitions)
    result["no_known_words"] = rejected
    print(f"inferred topic proportions of {result['documents']} documents ({result['segments']} segments, "
          f"{result['tokens']} known tokens; {args.sweeps} sweeps, {result['samples']} samples) -> "
          f"{result['output']}, {result['segment_output']}")
    if rejected:
        print(f"documents with no known words (not inferred, listed in {storage.join(corpus_dir, 'rejects')}): "
              f"{rejected}")
    return result


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("infer"))
