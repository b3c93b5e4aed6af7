"""``spark-topics evaluate``: held-out perplexity, held-out ELBO and NPMI coherence of a model.

Three Spark jobs over the blocks of the test corpus (each partition's result is
collected and summed on the driver in partition order, so the numbers do not
depend on the cluster):

* document-completion perplexity (:mod:`inference.heldout`): each test document's
  tokens are split in half, theta is folded in from the observed half with the
  topics' log beta, and perplexity = exp(-sum log p(held-out tokens) / held-out
  tokens). :func:`score_topic_word` applies the same estimator to any K x V
  topic-word matrix and alpha (the benchmark scores Spark MLlib and scikit-learn
  with it);
* held-out ELBO per token: the per-document terms of eq (3.4) for the whole test
  documents, fitted by the E-step with E_q[log beta] from the model's lambda, plus
  the alpha terms (:func:`inference.elbo.alpha_terms`), divided by the test tokens;
* NPMI coherence of each topic's top words over a reference corpus (default: the
  test corpus): per partition, the binary document x top-word indicator X gives
  the co-occurrence counts X^T X, summed over partitions.
"""
from __future__ import annotations

import argparse
import json
import logging
from functools import partial

import numpy as np

from drivers import storage
from inference.elbo import alpha_terms
from inference.heldout import (CompletionScore, cooccurrence_counts, distinct_word_ids, fold_in,
                               npmi_coherence, score_document_completion, top_word_ids)
from jobs.corpus import Corpus, load_corpus
from inference.mapper import EStepSettings
from jobs.aligned import is_aligned
from jobs.infer import exp_elogbeta, open_model_and_corpus, require_model_vocabulary
from jobs.model_store import load_model
from jobs.spark import get_spark

log = logging.getLogger("spark_topics.evaluate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None, help="MODEL_DIR written by `spark-topics train`")
    parser.add_argument("--language-models", default=None, metavar="L=DIR,...",
                        help="aligned test corpus only: one monolingual model per language (the baseline of "
                             "cross-language retrieval) instead of one polylingual --model")
    parser.add_argument("--corpus", required=True,
                        help="test CORPUS_DIR prepared with the model's vocabulary "
                             "(`spark-topics prepare ... --vocab MODEL_DIR/vocab.parquet`)")
    parser.add_argument("--reference", default=None,
                        help="CORPUS_DIR whose document co-occurrences define NPMI (default: the test corpus)")
    parser.add_argument("--top-words", type=int, default=10, help="top words per topic for NPMI")
    parser.add_argument("--seed", type=int, default=0, help="seed of the observed/held-out token split")
    parser.add_argument("--output", default=None, help="also write the metrics to this JSON file")
    parser.add_argument("--partitions", type=int, default=None, help="document partitions (default: by size)")
    parser.add_argument("--estep-tol", type=float, default=1e-3, help="per-document mean |delta gamma| tolerance")
    parser.add_argument("--estep-max-iter", type=int, default=100, help="cap on per-document phi/gamma passes")
    parser.add_argument("--heldout-observed", default="model", metavar="F|all",
                        help="Gibbs models: document completion with a fraction F of every test segment observed, "
                             "or 'all' (every word fitted and scored); default: the protocol the model was "
                             "trained with (0.5 if it records none)")


# --------------------------------------------------------------------------- deterministic sums

def sum_over_blocks(blocks, block_fn) -> np.ndarray:
    """sum over partitions of ``block_fn(block)`` (an array), added on the driver in partition order."""
    def task(partition, items):
        for _, block in items:
            yield partition, block_fn(block)

    parts = sorted(blocks.mapPartitionsWithIndex(task).collect(), key=lambda r: r[0])
    if not parts:
        raise ValueError("the corpus has no blocks")
    total = np.zeros_like(parts[0][1])
    for _, value in parts:
        total = total + value
    return total


# --------------------------------------------------------------------------- the three metrics

def _completion_vector(block, bc_params, seed: int, options: EStepSettings) -> np.ndarray:
    topic_word, alpha = bc_params.value
    return score_document_completion(block, topic_word, alpha, seed, options.tol, options.max_iter).as_vector()


def score_topic_word(spark, corpus: Corpus, topic_word: np.ndarray, alpha, seed: int = 0,
                     options: EStepSettings | None = None) -> CompletionScore:
    """Document-completion score of any topic-word matrix (K x V, rows normalised here) and alpha on a corpus."""
    topic_word = np.asarray(topic_word, dtype=np.float64)
    if topic_word.shape[1] != corpus.vocab_size or np.any(topic_word < 0):
        raise ValueError(f"topic_word must be nonnegative K x {corpus.vocab_size}, got shape {topic_word.shape}")
    topic_word = topic_word / topic_word.sum(axis=1, keepdims=True)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (topic_word.shape[0],)).copy()
    sc = spark.sparkContext
    sc.setJobDescription("evaluate: document-completion perplexity")
    bc_params = sc.broadcast((topic_word, alpha))
    try:
        total = sum_over_blocks(corpus.blocks, partial(_completion_vector, bc_params=bc_params, seed=seed,
                                                       options=options or EStepSettings()))
    finally:
        bc_params.destroy()
        sc.setJobDescription(None)
    return CompletionScore.from_vector(total)


def _elbo_vector(block, bc_params, options: EStepSettings) -> np.ndarray:
    eb, alpha = bc_params.value
    fit = fold_in(block, eb, alpha, options.tol, options.max_iter)
    return np.concatenate([[fit.doc_elbo.sum(), block.n_docs, block.n_tokens], fit.alpha_stats])


def heldout_elbo(spark, corpus: Corpus, lambda_exp_elogbeta: np.ndarray, alpha: np.ndarray,
                 options: EStepSettings | None = None) -> dict:
    """sum_d [E_q log p(w_d, theta_d, z_d | alpha, beta) - E_q log q(theta_d, z_d)] over the test documents.

    The per-document part of eq (3.4) with the topics fixed at q(beta) (E_q[log beta]
    from lambda): the kernel's document terms plus the alpha terms. Returns the total
    and its value per test token.
    """
    sc = spark.sparkContext
    sc.setJobDescription("evaluate: held-out ELBO")
    bc_params = sc.broadcast((lambda_exp_elogbeta, alpha))
    try:
        total = sum_over_blocks(corpus.blocks, partial(_elbo_vector, bc_params=bc_params,
                                                       options=options or EStepSettings()))
    finally:
        bc_params.destroy()
        sc.setJobDescription(None)
    doc_terms, n_docs, n_tokens, alpha_stats = total[0], total[1], total[2], total[3:]
    elbo = float(doc_terms + alpha_terms(alpha, alpha_stats, n_docs))
    return {"elbo": elbo, "per_token": elbo / n_tokens, "documents": int(n_docs), "tokens": float(n_tokens)}


def reference_word_ids(top_terms: np.ndarray, reference: Corpus) -> np.ndarray:
    """Reference-corpus ids of the (K x N) top terms; a term the reference lacks gets an id past its vocabulary
    (it then occurs in no reference document, so its pairs score NPMI -1)."""
    index = dict(zip(reference.vocab["term"], reference.vocab["id"].astype(np.int64)))
    missing = {t: reference.vocab_size + i for i, t in enumerate(sorted(set(top_terms.ravel()) - set(index)))}
    return np.vectorize(lambda t: index.get(t, missing.get(t)), otypes=[np.int64])(top_terms)


def coherence(spark, reference: Corpus, top_words: np.ndarray) -> dict:
    """NPMI coherence of (K x N) top word ids (reference vocabulary ids) over the reference corpus."""
    word_ids = distinct_word_ids(top_words)
    sc = spark.sparkContext
    sc.setJobDescription("evaluate: NPMI co-occurrence counts")
    counts = sum_over_blocks(reference.blocks, partial(cooccurrence_counts, word_ids=word_ids))
    sc.setJobDescription(None)
    result = npmi_coherence(top_words, word_ids, counts, reference.num_documents)
    return dict(result, top_words=int(top_words.shape[1]), reference_documents=reference.num_documents)


# --------------------------------------------------------------------------- the job

def evaluate_model(spark, model_dir: str, corpus_dir: str, reference_dir: str | None = None,
                   top_words: int = 10, seed: int = 0, options: EStepSettings | None = None,
                   partitions: int | None = None, heldout_observed: float | None | str = "model") -> dict:
    """All metrics of the model in ``model_dir`` on the test corpus ``corpus_dir``."""
    options = options or EStepSettings()
    from jobs import evaluate_gibbs
    if evaluate_gibbs.is_gibbs_model(model_dir):   # lda-gibbs, stm, seqlda, adatm: jobs/evaluate_gibbs.py
        return evaluate_gibbs.evaluate(spark, model_dir, corpus_dir, reference_dir, top_words, seed, partitions,
                                       observed=heldout_observed)
    if is_aligned(corpus_dir):
        return evaluate_aligned(spark, language_models(model_dir, None), corpus_dir, top_words, seed,
                                options, partitions)
    model, corpus = open_model_and_corpus(spark, model_dir, corpus_dir, partitions)
    if model.languages:
        raise SystemExit(f"{model_dir} is a polylingual model: evaluate it on an aligned test corpus "
                         f"(prepare --lang-column ... --vocab {model_dir}, or the heldout/ of --holdout-fraction)")
    reference = corpus if reference_dir in (None, corpus_dir) else load_corpus(spark, reference_dir, partitions)
    try:
        metrics = topic_model_metrics(spark, model, corpus, reference, top_words, seed, options)
    finally:
        corpus.blocks.unpersist()
        reference.blocks.unpersist()
    return dict(metrics, model=model_dir, corpus=corpus_dir)


def topic_model_metrics(spark, model, corpus: Corpus, reference: Corpus, top_words: int, seed: int,
                        options: EStepSettings) -> dict:
    """Document-completion perplexity, held-out ELBO and NPMI of a (monolingual view of a) model."""
    completion = score_topic_word(spark, corpus, model.topic_word(), model.alpha, seed, options)
    elbo = heldout_elbo(spark, corpus, exp_elogbeta(model), model.alpha, options)
    terms = model.vocab["term"].to_numpy()[top_word_ids(model.topic_word(), top_words)]
    npmi = coherence(spark, reference, reference_word_ids(terms, reference))
    return {
        "model": model.directory, "corpus": corpus.directory, "reference": reference.directory, "seed": seed,
        "topics": model.num_topics, "documents": corpus.num_documents,
        "perplexity": completion.perplexity,
        "completion": {"loglik": completion.loglik, "heldout_tokens": completion.heldout_tokens,
                       "documents": completion.documents, "skipped_short_documents": completion.skipped},
        "heldout_elbo_per_token": elbo["per_token"], "heldout_elbo": elbo,
        "npmi": npmi["mean"], "npmi_per_topic": npmi["per_topic"],
        "npmi_settings": {"top_words": npmi["top_words"], "reference_documents": npmi["reference_documents"]},
        "estep": {"tol": options.tol, "max_iter": options.max_iter},
    }


def language_models(model_dir: str | None, language_dirs: str | None) -> dict:
    """language -> monolingual model: the views of one polylingual model, or one model per language."""
    if language_dirs:
        models = {}
        for item in language_dirs.split(","):
            lang, _, directory = item.partition("=")
            if not directory:
                raise SystemExit(f"--language-models: {item!r} is not LANG=MODEL_DIR")
            models[lang.strip()] = load_model(directory.strip())
        return models
    if model_dir is None:
        raise SystemExit("evaluate needs --model (or --language-models for an aligned test corpus)")
    model = load_model(model_dir)
    if not model.languages:
        raise SystemExit(f"{model_dir} is monolingual: on an aligned test corpus evaluate a polylingual model, "
                         f"or give one model per language with --language-models, or evaluate one "
                         f"language's sub-corpus (CORPUS_DIR/<lang>)")
    return {language: model.language_view(language) for language in model.languages}


def document_thetas(spark, model, corpus: Corpus, options: EStepSettings) -> dict:
    """doc_id -> theta (posterior mean of the fold-in) for every document of the corpus."""
    from jobs.infer import _infer_task

    sc = spark.sparkContext
    bc_params = sc.broadcast((exp_elogbeta(model), model.alpha))
    try:
        rows = corpus.blocks.mapPartitions(partial(_infer_task, bc_params=bc_params, options=options)).collect()
    finally:
        bc_params.destroy()
    return {doc_id: np.asarray(theta) for doc_id, _, theta in rows}


def evaluate_aligned(spark, models: dict, corpus_dir: str, top_words: int = 10, seed: int = 0,
                     options: EStepSettings | None = None, partitions: int | None = None) -> dict:
    """Per-language document completion (each language of a tuple alone) and cross-language retrieval.

    Retrieval: theta from each language alone; for every ordered language pair (A, B) and
    every tuple present in both, is the tuple's B document the nearest (Hellinger) to its
    A document among all B documents? (precision at 1, mean rank, mean aligned divergence.)
    """
    from itertools import permutations

    from inference.retrieval import retrieval_scores

    options = options or EStepSettings()
    corpus_langs = storage.load_json(storage.join(corpus_dir, "corpus.json"))["languages"]
    languages = [l for l in models if l in corpus_langs]
    if not languages:
        raise SystemExit(f"no language of the model(s) ({', '.join(models)}) is in {corpus_dir} "
                         f"({', '.join(corpus_langs)})")
    per_language, thetas = {}, {}
    for language in languages:
        model = models[language]
        corpus = load_corpus(spark, storage.join(corpus_dir, language), partitions)
        require_model_vocabulary(model, corpus)
        try:
            spark.sparkContext.setJobDescription(f"evaluate language {language}")
            per_language[language] = topic_model_metrics(spark, model, corpus, corpus, top_words, seed, options)
            thetas[language] = document_thetas(spark, model, corpus, options)
        finally:
            corpus.blocks.unpersist()
    retrieval = {}
    for a, b in permutations(languages, 2):
        ids = sorted(set(thetas[a]) & set(thetas[b]))
        if len(ids) >= 2:
            retrieval[f"{a}->{b}"] = retrieval_scores(np.stack([thetas[a][i] for i in ids]),
                                                      np.stack([thetas[b][i] for i in ids]))
    spark.sparkContext.setJobDescription(None)
    return {"corpus": corpus_dir, "aligned": True, "languages": languages,
            "models": {l: m.meta.get("polylingual_model", m.directory) for l, m in models.items()},
            "per_language": per_language, "retrieval": retrieval}


def format_aligned_metrics(metrics: dict) -> str:
    lines = []
    for language, m in metrics["per_language"].items():
        lines.append(f"[{language}] document-completion perplexity {m['perplexity']:.3f} "
                     f"({m['completion']['documents']} documents), held-out ELBO/token "
                     f"{m['heldout_elbo_per_token']:.4f}, NPMI {m['npmi']:.4f}")
    for pair, r in metrics["retrieval"].items():
        lines.append(f"retrieval {pair}: precision@1 {r['precision_at_1']:.3f} (chance {r['chance_precision']:.3f}), "
                     f"mean rank {r['mean_rank']:.1f} of {r['documents']}, Hellinger aligned "
                     f"{r['mean_aligned_divergence']:.3f} vs all pairs {r['mean_divergence_all_pairs']:.3f}")
    return "\n".join(lines)


def format_metrics(metrics: dict) -> str:
    if metrics.get("gibbs"):
        from jobs import evaluate_gibbs
        return evaluate_gibbs.format_metrics(metrics)
    c = metrics["completion"]
    per_topic = " ".join(f"{v:.3f}" for v in metrics["npmi_per_topic"])
    return "\n".join([
        f"document-completion perplexity: {metrics['perplexity']:.3f} "
        f"({c['documents']} documents, {c['heldout_tokens']:.0f} held-out tokens, "
        f"{c['skipped_short_documents']} documents with < 2 tokens skipped)",
        f"held-out ELBO per token:        {metrics['heldout_elbo_per_token']:.4f}",
        f"NPMI coherence (top {metrics['npmi_settings']['top_words']}): {metrics['npmi']:.4f}",
        f"NPMI per topic: {per_topic}",
    ])


def run(args) -> dict:
    spark = get_spark("spark-topics evaluate", args.master, args.conf)
    options = EStepSettings(args.estep_tol, args.estep_max_iter)
    if args.language_models:
        if not is_aligned(args.corpus):
            raise SystemExit("--language-models needs an aligned test corpus (prepare --lang-column)")
        metrics = evaluate_aligned(spark, language_models(None, args.language_models), args.corpus,
                                   args.top_words, args.seed, options, args.partitions)
    elif args.model is None:
        raise SystemExit("evaluate needs --model MODEL_DIR")
    else:
        observed = getattr(args, "heldout_observed", "model")
        if observed != "model":
            from jobs.train_gibbs import observed_fraction
            try:
                observed = observed_fraction(observed)
            except argparse.ArgumentTypeError as exc:
                raise SystemExit(f"--heldout-observed: {exc}") from None
        metrics = evaluate_model(spark, args.model, args.corpus, args.reference, args.top_words, args.seed,
                                 options, args.partitions, observed)
    print(format_aligned_metrics(metrics) if metrics.get("aligned") else format_metrics(metrics))
    if args.output:
        storage.write_bytes(args.output, (json.dumps(metrics, indent=2) + "\n").encode("utf-8"))
        print(f"metrics written to {args.output}")
    return metrics


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("evaluate"))
