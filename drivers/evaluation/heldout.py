"""Held-out estimators and coherence on Spark, for every family: one place, the same numbers for every system.

* :func:`score_topic_word`: document-completion perplexity of any K x V topic-word
  matrix and alpha (:mod:`inference.heldout`: each test document's tokens are split
  in half, theta is folded in from the observed half, the other half is scored);
  the variational models and the benchmark's peers (Spark MLlib, scikit-learn) are
  scored with it;
* :func:`heldout_elbo`: the per-document terms of eq (3.4) for whole test documents
  with the topics fixed at q(beta), plus the alpha terms;
* :func:`score_heldout`: the Gibbs models' held-out perplexity (thesis eq 5.10,
  :mod:`inference.gibbs.heldout`: the model's own sampler on the observed part with
  phi fixed);
* :func:`coherence`: NPMI of each topic's top words over a reference corpus (per
  partition the binary document x top-word indicator X gives X^T X, summed).

Every partition's result is collected and summed on the driver in partition
order, so the numbers do not depend on the cluster.
"""
from __future__ import annotations

import contextlib
import logging
from functools import partial

import numpy as np

from drivers.corpora.in_process import Shared
from drivers.progress import ticking
from inference.elbo import alpha_terms
from inference.gibbs.heldout import HeldoutSchedule, perplexity
from inference.gibbs.model import GibbsModel
from inference.heldout import (CompletionScore, PairCounts, cooccurrence_counts, distinct_word_ids, fold_in,
                               npmi_coherence, score_document_completion, top_word_ids, word_pairs)
from inference.mapper import EStepSettings

log = logging.getLogger("spark_topics.evaluate")


# --------------------------------------------------------------------------- deterministic sums

def per_partition(blocks, task) -> list:
    """``task(partition, items)``'s results over every partition of ``blocks`` (an RDD of ``(partition, block)``,
    or in this process a list of them, :mod:`drivers.corpora.in_process`, with a progress line every few
    seconds), in partition order."""
    if isinstance(blocks, list):
        parts = [r for p, block in ticking(blocks, len(blocks), "evaluate: blocks", log)
                 for r in task(p, iter([(p, block)]))]
    else:
        parts = blocks.mapPartitionsWithIndex(task).collect()
    return sorted(parts, key=lambda r: r[0])


def _describe(spark, text: str | None) -> None:
    if spark is not None:
        spark.sparkContext.setJobDescription(text)


@contextlib.contextmanager
def shared(spark, value, description: str):
    """``value`` as the tasks read it (``.value``): a Spark broadcast, destroyed after the block, or with ``spark``
    None (the blocks in this process) the value itself; the Spark jobs described as ``description``."""
    _describe(spark, description)
    bc = Shared(value) if spark is None else spark.sparkContext.broadcast(value)
    try:
        yield bc
    finally:
        if spark is not None:
            bc.destroy()
        _describe(spark, None)


def sum_over_blocks(blocks, block_fn) -> np.ndarray:
    """sum over partitions of ``block_fn(block)`` (an array), added on the driver in partition order."""
    def task(partition, items):
        for _, block in items:
            yield partition, block_fn(block)

    parts = per_partition(blocks, task)
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


def score_topic_word(spark, corpus, topic_word: np.ndarray, alpha, seed: int = 0,
                     options: EStepSettings | None = None) -> CompletionScore:
    """Document-completion score of any topic-word matrix (K x V, rows normalised here) and alpha on a corpus
    (``spark`` None: its blocks a list, in this process)."""
    topic_word = np.asarray(topic_word, dtype=np.float64)
    if topic_word.shape[1] != corpus.vocab_size or np.any(topic_word < 0):
        raise ValueError(f"topic_word must be nonnegative K x {corpus.vocab_size}, got shape {topic_word.shape}")
    topic_word = topic_word / topic_word.sum(axis=1, keepdims=True)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (topic_word.shape[0],)).copy()
    with shared(spark, (topic_word, alpha), "evaluate: document-completion perplexity") as bc_params:
        total = sum_over_blocks(corpus.blocks, partial(_completion_vector, bc_params=bc_params, seed=seed,
                                                       options=options or EStepSettings()))
    return CompletionScore.from_vector(total)


def _elbo_vector(block, bc_params, options: EStepSettings) -> np.ndarray:
    (eb, log_scale), alpha = bc_params.value
    fit = fold_in(block, eb, alpha, options.tol, options.max_iter, log_scale)
    return np.concatenate([[fit.doc_elbo.sum(), block.n_docs, block.n_tokens], fit.alpha_stats])


def heldout_elbo(spark, corpus, lambda_exp_elogbeta: tuple, alpha: np.ndarray,
                 options: EStepSettings | None = None) -> dict:
    """sum_d [E_q log p(w_d, theta_d, z_d | alpha, beta) - E_q log q(theta_d, z_d)] over the test documents.

    The per-document part of eq (3.4) with the topics fixed at q(beta) (E_q[log beta]
    from lambda, given as the word factor ``(scaled weights, log scales)`` of
    :func:`inference.heldout.word_factor`): the kernel's document terms plus the alpha terms.
    Returns the total and its value per test token.
    """
    with shared(spark, (lambda_exp_elogbeta, alpha), "evaluate: held-out ELBO") as bc_params:
        total = sum_over_blocks(corpus.blocks, partial(_elbo_vector, bc_params=bc_params,
                                                       options=options or EStepSettings()))
    doc_terms, n_docs, n_tokens, alpha_stats = total[0], total[1], total[2], total[3:]
    elbo = float(doc_terms + alpha_terms(alpha, alpha_stats, n_docs))
    return {"elbo": elbo, "per_token": elbo / n_tokens, "documents": int(n_docs), "tokens": float(n_tokens)}


def reference_word_ids(top_terms: np.ndarray, reference) -> np.ndarray:
    """Reference-corpus ids of the (K x N) top terms; a term the reference lacks gets an id past its vocabulary
    (it then occurs in no reference document, so its pairs score NPMI -1)."""
    index = dict(zip(reference.vocab["term"], reference.vocab["id"].astype(np.int64)))
    missing = {t: reference.vocab_size + i for i, t in enumerate(sorted(set(top_terms.ravel()) - set(index)))}
    return np.vectorize(lambda t: index.get(t, missing.get(t)), otypes=[np.int64])(top_terms)


def coherence(spark, reference, top_words: np.ndarray) -> dict:
    """NPMI coherence of (K x N) top word ids (reference vocabulary ids) over the reference corpus."""
    word_ids = distinct_word_ids(top_words)
    _describe(spark, "evaluate: NPMI co-occurrence counts")
    index = np.searchsorted(word_ids, top_words)
    i, j = np.triu_indices(top_words.shape[1], k=1)
    pairs = word_pairs((index[:, i], index[:, j]))
    counts = PairCounts(len(word_ids), pairs, sum_over_blocks(
        reference.blocks, partial(cooccurrence_counts, word_ids=word_ids, pairs=pairs)))
    _describe(spark, None)
    result = npmi_coherence(top_words, word_ids, counts, reference.num_documents)
    return dict(result, top_words=int(top_words.shape[1]), reference_documents=reference.num_documents)


def topic_coherence(spark, terms, topic_word: np.ndarray, reference, top_words: int) -> dict:
    """NPMI of the ``top_words`` most probable terms of every topic (``terms``: the model's vocabulary, by id)
    over the reference corpus, matched to it by term."""
    top_terms = np.asarray(terms)[top_word_ids(topic_word, top_words)]
    return coherence(spark, reference, reference_word_ids(top_terms, reference))


# --------------------------------------------------------------------------- Gibbs models: held-out perplexity

def _heldout_task(partition, items, model, bc, schedule, seed):
    hyper, phi_vk = bc.value
    for _, block in items:
        yield partition, model.heldout_loglik(block, hyper, phi_vk, schedule, seed, partition)


def score_heldout(spark, model: GibbsModel, hyper: dict, topic_word: np.ndarray, blocks,
                  schedule: HeldoutSchedule, seed: int = 0) -> dict:
    """Held-out perplexity of the documents in ``blocks`` by the model's predictive (``model.heldout_loglik``; by
    default inference/gibbs/heldout.py), summed in partition order (``spark`` None: ``blocks`` a list, in this
    process)."""
    with shared(spark, (hyper, np.ascontiguousarray(topic_word.T)),
                f"{model.name}: held-out perplexity ({schedule.iterations} sweeps per document, topics fixed)") as bc:
        parts = per_partition(blocks, partial(_heldout_task, model=model, bc=bc, schedule=schedule, seed=seed))
    total = np.zeros(3)
    for _, value in parts:
        total += value
    loglik, tokens, docs = total
    return {"perplexity": perplexity(loglik, tokens) if tokens else None, "loglik": float(loglik),
            "tokens": int(tokens), "documents": int(docs), "iterations": schedule.iterations,
            "burn_in": schedule.burn_in, "lag": schedule.lag, "samples": schedule.samples,
            "observed": schedule.observed, "seed": seed,
            **({"protocol": model.heldout_protocol} if model.heldout_protocol else {})}


def crosslingual_coherence(spark, aligned, top_words: dict) -> dict:
    """CNPMI of every pair of languages (:func:`inference.heldout.crosslingual_npmi`) over an aligned corpus loaded
    as tuples (``aligned``: its blocks hold global ids); ``top_words``: language -> (K x N) global ids of each
    topic's top words in that language (the same topics in every language: one polylingual or tree model)."""
    from itertools import combinations

    from inference.heldout import crosslingual_npmi

    languages = list(top_words)
    word_ids = distinct_word_ids(np.concatenate([np.asarray(top_words[l]) for l in languages], axis=1))
    sc = spark.sparkContext
    sc.setJobDescription("evaluate: crosslingual co-occurrence counts (CNPMI)")
    index = {l: np.searchsorted(word_ids, np.asarray(top_words[l])) for l in languages}
    n = next(iter(index.values())).shape[1]
    pairs = word_pairs(*[(np.repeat(index[a], n, axis=1), np.tile(index[b], (1, n)))
                         for a, b in combinations(languages, 2)])
    counts = PairCounts(len(word_ids), pairs, sum_over_blocks(
        aligned.blocks, partial(cooccurrence_counts, word_ids=word_ids, pairs=pairs)))
    sc.setJobDescription(None)
    return {f"{a}-{b}": crosslingual_npmi(top_words[a], top_words[b], word_ids, counts, aligned.num_documents)
            for a, b in combinations(languages, 2)}
