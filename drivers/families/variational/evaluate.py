"""Evaluation of a variational family's model (``evaluate``): held-out perplexity and the held-out ELBO, NPMI
coherence; on an aligned corpus per language, with cross-language retrieval and CNPMI; the metrics' lines."""
from __future__ import annotations

from functools import partial

import numpy as np

from drivers import storage
from drivers.corpora.aligned import is_aligned, load_aligned_corpus
from drivers.corpora import in_process as local_corpus
from drivers.corpora.bow import Corpus, load_corpus
from drivers.corpora.files import CORPUS_JSON
from drivers.evaluation.heldout import heldout_elbo, score_topic_word, topic_coherence
from drivers.evaluation.standard_coherence import DOCUMENT_NPMI
from drivers.families.variational.infer import exp_elogbeta, infer_task, open_model_and_corpus
from drivers.store.model_store import load_model, require_same_vocabulary
from inference.errors import UsageError
from inference.mapper import EStepSettings


def evaluate_model(spark, model_dir: str, corpus_dir: str, reference_dir: str | None = None,
                   top_words: int = 10, seed: int = 0, options: EStepSettings | None = None,
                   partitions: int | None = None) -> dict:
    """All metrics of the model in ``model_dir`` on the test corpus ``corpus_dir`` (``spark`` None: in this
    process, on the blocks the Spark job makes, so the same figures; a monolingual corpus only)."""
    options = options or EStepSettings()
    if is_aligned(corpus_dir):
        return evaluate_aligned(spark, language_models(model_dir, None), corpus_dir, top_words, seed,
                                options, partitions)
    model, corpus = open_model_and_corpus(spark, model_dir, corpus_dir, partitions)
    if model.languages:
        raise UsageError(f"{model_dir} is a polylingual model: evaluate it on an aligned test corpus "
                         f"(prepare --lang-column ... --vocab {model_dir}, or the heldout/ of --holdout-fraction)")
    reference = corpus
    try:
        if reference_dir not in (None, corpus_dir):
            reference = local_corpus.opened(spark, reference_dir, partitions)
        metrics = topic_model_metrics(spark, model, corpus, reference, top_words, seed, options)
    finally:
        local_corpus.release(corpus.blocks)
        local_corpus.release(reference.blocks)
    return dict(metrics, model=model_dir, corpus=corpus_dir)


def topic_model_metrics(spark, model, corpus: Corpus, reference: Corpus, top_words: int, seed: int,
                        options: EStepSettings) -> dict:
    """Document-completion perplexity, held-out ELBO and NPMI of a (monolingual view of a) model."""
    completion = score_topic_word(spark, corpus, model.topic_word(), model.alpha, seed, options)
    elbo = heldout_elbo(spark, corpus, exp_elogbeta(model), model.alpha, options)
    npmi = topic_coherence(spark, model.vocab["term"].to_numpy(), model.topic_word(), reference, top_words)
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
                raise UsageError(f"--language-models: {item!r} is not LANG=MODEL_DIR")
            models[lang.strip()] = load_model(directory.strip())
        return models
    if model_dir is None:
        raise UsageError("evaluate needs --model (or --language-models for an aligned test corpus)")
    model = load_model(model_dir)
    if not model.languages:
        raise UsageError(f"{model_dir} is monolingual: on an aligned test corpus evaluate a polylingual model, "
                         f"or give one model per language with --language-models, or evaluate one "
                         f"language's sub-corpus (CORPUS_DIR/<lang>)")
    return {language: model.language_view(language) for language in model.languages}


def document_thetas(spark, model, corpus: Corpus, options: EStepSettings) -> dict:
    """doc_id -> theta (posterior mean of the fold-in) for every document of the corpus."""
    sc = spark.sparkContext
    bc_params = sc.broadcast((exp_elogbeta(model), model.alpha))
    try:
        rows = corpus.blocks.mapPartitions(partial(infer_task, bc_params=bc_params, options=options)).collect()
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
    corpus_langs = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))["languages"]
    languages = [l for l in models if l in corpus_langs]
    if not languages:
        raise UsageError(f"no language of the model(s) ({', '.join(models)}) is in {corpus_dir} "
                         f"({', '.join(corpus_langs)})")
    per_language, thetas = {}, {}
    for language in languages:
        model = models[language]
        corpus = load_corpus(spark, storage.join(corpus_dir, language), partitions)
        require_same_vocabulary(model, corpus)
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
    sources = {m.meta.get("polylingual_model", m.directory) for m in models.values()}
    cnpmi = crosslingual_topic_coherence(spark, models, corpus_dir, languages, top_words, partitions) \
        if len(sources) == 1 and len(languages) > 1 else {}
    return {"corpus": corpus_dir, "aligned": True, "languages": languages,
            "models": {l: m.meta.get("polylingual_model", m.directory) for l, m in models.items()},
            "per_language": per_language, "retrieval": retrieval, "cnpmi": cnpmi}


def crosslingual_topic_coherence(spark, views: dict, corpus_dir: str, languages: list, top_words: int,
                                 partitions: int | None) -> dict:
    """CNPMI of one multilingual model's topics (its language views) over the aligned tuples of ``corpus_dir``."""
    from drivers.evaluation.heldout import crosslingual_coherence
    from inference.heldout import top_word_ids

    aligned = load_aligned_corpus(spark, corpus_dir, partitions, languages)
    try:
        offsets = dict(zip(aligned.layout.languages, aligned.layout.offsets))
        tops = {l: top_word_ids(views[l].topic_word(), top_words) + offsets[l] for l in languages}
        result = crosslingual_coherence(spark, aligned, tops)
    finally:
        aligned.blocks.unpersist()
    return {pair: {"mean": r["mean"], "top_words": top_words} for pair, r in result.items()}


def format_aligned_metrics(metrics: dict) -> str:
    lines = []
    for language, m in metrics["per_language"].items():
        lines.append(f"[{language}] document-completion perplexity {m['perplexity']:.3f} "
                     f"({m['completion']['documents']} documents), held-out ELBO/token "
                     f"{m['heldout_elbo_per_token']:.4f}, document-level NPMI {m['npmi']:.4f}")
    for pair, r in metrics["retrieval"].items():
        lines.append(f"retrieval {pair}: precision@1 {r['precision_at_1']:.3f} (chance {r['chance_precision']:.3f}), "
                     f"MRR {r['mean_reciprocal_rank']:.3f}, mean rank {r['mean_rank']:.1f} of {r['documents']}, "
                     f"Hellinger aligned {r['mean_aligned_divergence']:.3f} vs all pairs "
                     f"{r['mean_divergence_all_pairs']:.3f}")
    for pair, r in (metrics.get("cnpmi") or {}).items():
        lines.append(f"crosslingual coherence CNPMI {pair} (top {r['top_words']}, over the aligned tuples): "
                     f"{r['mean']:.4f}")
    return "\n".join(lines)


def format_metrics(metrics: dict) -> str:
    c = metrics["completion"]
    per_topic = " ".join(f"{v:.3f}" for v in metrics["npmi_per_topic"])
    return "\n".join([
        f"document-completion perplexity: {metrics['perplexity']:.3f} "
        f"({c['documents']} documents, {c['heldout_tokens']:.0f} held-out tokens, "
        f"{c['skipped_short_documents']} documents with < 2 tokens skipped)",
        f"held-out ELBO per token:        {metrics['heldout_elbo_per_token']:.4f}",
        f"{DOCUMENT_NPMI} (top {metrics['npmi_settings']['top_words']}): {metrics['npmi']:.4f}",
        f"document-level NPMI per topic: {per_topic}",
    ])
