"""``infer`` and ``evaluate`` of an infinite-vocabulary model (thesis chapter 7): its topics over any words.

Topic k is a Dirichlet process over strings truncated to its TOS, so a string w has

    p(w | k) = E_q[beta_kw] [w in TOS_k] + (the stick left after TOS_k) G_0(w),

E_q[beta_kw] the stick-breaking expectation (8.6) and the stick left prod_t E_q[1 - b_kt]; summed over every string
it is 1 (G_0 is a distribution over strings). Over the words of a prepared corpus (its own vocabulary: any word,
known to the base or entered after it, or never seen) this is a K x V topic-word matrix, and the project's
estimators apply unchanged, in this process or on Spark's blocks:

* ``infer``: each document folded in with the topics fixed (the E-step of :func:`inference.heldout.fold_in` on
  log p(w | k)); ``doc_topics.parquet`` has lda's columns (doc_id, gamma, theta, n_tokens, n_unknown). Raw text
  is prepared with the model's tokenizer and no vocabulary cut: every word is scored but the words ``prepare`` cut
  from the training corpus as too frequent (df > max_df, ``frequent_terms.parquet``), which no refresh takes in
  either; their tokens are left out, counted in n_unknown (issue 30).
* ``evaluate``: document-completion perplexity (Wallach et al. 2009, the estimator of every family) and NPMI of
  each topic's top words (by E_q[beta]) over the corpus. Rows are renormalised over the corpus' words, as the
  fixed-vocabulary models' scores are over their vocabulary: to compare with another model, score both on one
  corpus (one vocabulary). The training corpus' too frequent words are left out as ``infer`` leaves them out
  (``vocabulary.frequent_tokens``).
"""
from __future__ import annotations

import logging
from functools import partial

import numpy as np
import pyarrow as pa

from drivers import storage
from drivers.corpora import bow, in_process
from drivers.evaluation.heldout import coherence, per_partition, reference_word_ids, sum_over_blocks
from drivers.models.infvoc.model import InfVocModel
from inference.blocks import DocBlock
from inference.errors import UsageError
from inference.heldout import CompletionScore, fold_in, score_document_completion
from inference.mapper import EStepSettings

log = logging.getLogger("spark_topics.infvoc")

#: ``prepare`` options of raw text for ``infer``: every word the tokenizer keeps (no document-frequency cut)
EVERY_WORD = {"min_df": 1, "max_df": 1.0}


def topic_word_over(model: InfVocModel, terms) -> np.ndarray:
    """(K x V) p(w | k) of the strings ``terms`` (module docstring), not renormalised."""
    terms = np.asarray([str(t) for t in terms], dtype=object)
    base = np.exp(model.base.log_probs(terms)) if len(terms) else np.zeros(0)
    out = np.empty((model.num_topics, len(terms)))
    for k, ts in enumerate(model.sets):
        weights = model.expected_weights(k)
        left = float(np.prod(ts.nu2 / (ts.nu1 + ts.nu2))) if len(ts) else 1.0
        out[k] = left * base
        at = ts.index.get_indexer(terms) if len(ts) else np.full(len(terms), -1)
        out[k, at >= 0] += weights[at[at >= 0]]
    return out


def frequent_ids(model: InfVocModel, model_dir: str, terms) -> np.ndarray:
    """The ids (positions in ``terms``, a corpus' vocabulary by id) of the words ``prepare`` cut from the model's
    training corpus as too frequent (:func:`drivers.corpora.tokenizer.frequent_terms`), sorted."""
    from types import SimpleNamespace

    from drivers.corpora import tokenizer

    frequent = set(tokenizer.frequent_terms(SimpleNamespace(directory=model_dir, meta=model.meta)))
    return np.asarray([i for i, t in enumerate(terms) if str(t) in frequent], dtype=np.int64)


def without_terms(block: DocBlock, dropped: np.ndarray) -> tuple[DocBlock, np.ndarray]:
    """``block`` without the entries of the global ids ``dropped``, and the tokens each document lost."""
    if not len(dropped):
        return block, np.zeros(block.n_docs)
    keep = ~np.isin(block.global_terms(), dropped)
    lost = np.concatenate([[0.0], np.cumsum(np.where(keep, 0.0, block.counts))])[block.indptr]
    indptr = np.concatenate([[0], np.cumsum(keep)])[block.indptr]
    kept = DocBlock.from_csr(block.doc_ids, indptr, block.global_terms()[keep], block.counts[keep])
    return kept, np.diff(lost)


def _blocks(spark, corpus_dir: str, partitions: int | None):
    """The corpus in this process when it can be (small, local), else on Spark (``spark``: a session or a factory)."""
    why_not = in_process.why_not_in_process(corpus_dir)
    if why_not is None:
        return in_process.load_corpus(corpus_dir, partitions)
    if spark is None:
        raise UsageError(f"--master none: cannot read {corpus_dir} without Spark: {why_not}")
    log.info("%s: on Spark (%s)", corpus_dir, why_not)
    return bow.load_corpus(spark() if callable(spark) else spark, corpus_dir, partitions)


def infer(spark, model_dir: str, corpus_dir: str, output_dir: str, partitions: int | None = None,
          options: EStepSettings | None = None) -> dict:
    """Topic proportions of every document of a prepared corpus (any vocabulary) -> OUTPUT/doc_topics.parquet."""
    options = options or EStepSettings()
    model = InfVocModel.load(model_dir)
    corpus = _blocks(spark, corpus_dir, partitions)
    terms = corpus.vocab.sort_values("id")["term"]
    dropped = frequent_ids(model, model_dir, terms)
    topic_word = topic_word_over(model, terms)
    topic_word[:, dropped] = 0.0
    topic_word /= topic_word.sum(axis=1, keepdims=True)

    def task(partition, items):
        for _, block in items:
            block, lost = without_terms(block, dropped)
            fit = fold_in(block, topic_word, model.alpha, options.tol, options.max_iter)
            yield partition, (block.doc_ids.tolist(), fit.gamma.tolist(), fit.theta.tolist(),
                              block.doc_lengths().tolist(), lost.tolist())
    try:
        parts = per_partition(corpus.blocks, task)
    finally:
        in_process.release(corpus.blocks)
    rows = sorted((str(d), g, t, int(n), int(u)) for _, part in parts for d, g, t, n, u in zip(*part))
    columns = list(zip(*rows)) or [[]] * 5
    table = pa.table({"doc_id": pa.array(columns[0], pa.string()),
                      "gamma": pa.array(columns[1], pa.list_(pa.float64())),
                      "theta": pa.array(columns[2], pa.list_(pa.float64())),
                      "n_tokens": pa.array(columns[3], pa.int64()),
                      "n_unknown": pa.array(columns[4], pa.int64())})
    path = storage.join(output_dir, "doc_topics.parquet")
    storage.makedirs(path)
    storage.write_parquet(storage.join(path, "part-00000.parquet"), table)
    return {"documents": len(rows), "known_tokens": int(sum(columns[3])), "unknown_tokens": int(sum(columns[4])),
            "no_known_words": sum(1 for r in rows if r[3] == 0), "output": path}


def evaluate(spark, model_dir: str, corpus_dir: str, reference_dir: str | None = None, top_words: int = 10,
             seed: int = 0, partitions: int | None = None, options: EStepSettings | None = None) -> dict:
    """Document-completion perplexity and NPMI of the model on ``corpus_dir`` (module docstring)."""
    options = options or EStepSettings()
    model = InfVocModel.load(model_dir)
    corpus = _blocks(spark, corpus_dir, partitions)
    reference = corpus if reference_dir in (None, corpus_dir) else _blocks(spark, reference_dir, partitions)
    try:
        terms = corpus.vocab.sort_values("id")["term"].astype(str).to_numpy(dtype=object)
        dropped = frequent_ids(model, model_dir, terms)
        topic_word = topic_word_over(model, terms)
        topic_word[:, dropped] = 0.0
        topic_word /= topic_word.sum(axis=1, keepdims=True)
        summed = sum_over_blocks(corpus.blocks, partial(_completion, topic_word=topic_word, alpha=model.alpha,
                                                        seed=seed, options=options, dropped=dropped))
        score, frequent_tokens = CompletionScore.from_vector(summed[:-1]), float(summed[-1])
        top_terms = np.array([[w for w, _, _ in topic] for topic in model.top_words(top_words)], dtype=object)
        if top_terms.shape[1] < top_words:
            raise ValueError(f"a topic has fewer than {top_words} words")
        npmi = coherence(None, reference, reference_word_ids(top_terms, reference))
    finally:
        in_process.release(corpus.blocks)
        if reference is not corpus:
            in_process.release(reference.blocks)
    new = int(np.sum(model.known.get_indexer(terms) < 0))
    return {"model": model_dir, "corpus": corpus_dir, "reference": reference_dir or corpus_dir, "seed": seed,
            "topics": model.num_topics, "documents": corpus.num_documents, "perplexity": score.perplexity,
            "completion": {"loglik": score.loglik, "heldout_tokens": score.heldout_tokens,
                           "documents": score.documents, "skipped_short_documents": score.skipped},
            "vocabulary": {"corpus_words": len(terms), "new_to_base": new, "frequent_words": len(dropped),
                           "frequent_tokens": int(round(frequent_tokens))},
            "npmi": npmi["mean"], "npmi_per_topic": npmi["per_topic"],
            "npmi_settings": {"top_words": npmi["top_words"], "reference_documents": npmi["reference_documents"]}}


def _completion(block, topic_word, alpha, seed, options, dropped) -> np.ndarray:
    """The completion score's vector of ``block`` without the ``dropped`` words, and the tokens left out."""
    block, lost = without_terms(block, dropped)
    score = score_document_completion(block, topic_word, alpha, seed, options.tol, options.max_iter).as_vector()
    return np.append(score, lost.sum())


def format_metrics(metrics: dict) -> str:
    c = metrics["completion"]
    v = metrics["vocabulary"]
    return (f"document-completion perplexity: {metrics['perplexity']:.3f} ({c['documents']} documents, "
            f"{c['heldout_tokens']:.0f} held-out tokens, over the corpus' {v['corpus_words']} words, "
            f"{v['new_to_base']} of them not in the base vocabulary; {v.get('frequent_tokens', 0)} tokens of the "
            f"{v.get('frequent_words', 0)} words the training corpus cut as too frequent left out)\n"
            f"NPMI coherence (top {metrics['npmi_settings']['top_words']}): {metrics['npmi']:.4f}")


def raw_corpus(spark, model_dir: str, meta: dict, request, corpus_dir: str) -> dict:
    """Raw ``infer`` input prepared into ``corpus_dir`` with the model's tokenizer and every word kept."""
    from types import SimpleNamespace

    from drivers.corpora import tokenizer
    from drivers.preparation.corpus import prepare_corpus

    options = dict(tokenizer.raw_text_options(SimpleNamespace(directory=model_dir, meta=meta)), **EVERY_WORD)
    options.pop("segments", None)
    return prepare_corpus(spark, request.input, corpus_dir, request.runs_on, format=request.format,
                          id_column=request.id_column, text_column=request.text_column, **options)
