"""Collapsed Gibbs LDA (``lda-gibbs``) recovers an asymmetric Dirichlet alpha from data drawn from LDA.

Single process, no Spark: the model runs through ``inference.gibbs.local.run_local`` (the engine's loop for one
partition). The corpus has K = 4 topics, each on its own block of words, and a clearly asymmetric alpha; the
chain starts from the model's default symmetric alpha and learns alpha with Minka's fixed point (one step per
cycle, ``LdaGibbs.update_hyper``). Learnt topics are matched to the true ones (Hungarian on Hellinger distance)
and alpha, permuted to the true topic order, is compared with the true alpha and with the maximum-likelihood
alpha of the true document-topic counts (found here with scipy, independently of ``inference.dirichlet``).

A rare topic (alpha_k / alpha_0 = 4% of the tokens) sometimes ends up merged with another topic while a large
topic is split in two, a local mode a single chain leaves only after thousands of cycles (if ever: once the
split topic empties, its alpha drops to ``ALPHA_FLOOR`` and it stays empty). As in practice, a few short
restarts are run and the one with the highest joint log-likelihood log p(w, z | alpha, beta) is kept; merged
modes are thousands of nats below.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln

from drivers import registry
from drivers.families.gibbs.models import make_model
from drivers.models.lda_gibbs.model import DEFAULT_ALPHA, doc_topic_counts
from inference.distances import matched_hellinger
from inference.gibbs.local import run_local
from inference.gibbs.model import SegmentedBlock

TRUE_ALPHA = np.array([0.05, 0.1, 0.3, 0.8])   # sum 1.25; a symmetric alpha would be 0.3125 each
K = TRUE_ALPHA.size
WORDS_PER_TOPIC = 20
V = K * WORDS_PER_TOPIC
N_DOCS = 400
DOC_LENGTH = (50, 100)
ITERATIONS = 250
RESTARTS = 4

ALPHA_RTOL = 0.30        # every component against the true alpha
ALPHA_SUM_RTOL = 0.20    # alpha_0 against the true alpha_0
ORACLE_RTOL = 0.15       # every component against the MLE alpha of the true document-topic counts
MAX_HELLINGER = 0.3      # matched topics are recovered (a merged topic is at ~1)


def asymmetric_lda_corpus(seed: int):
    """``(docs, phi (K x V), true document-topic counts (D x K))`` drawn from LDA with alpha = TRUE_ALPHA;
    topic k puts all its mass on words [k * WORDS_PER_TOPIC, (k + 1) * WORDS_PER_TOPIC)."""
    rng = np.random.default_rng(seed)
    phi = np.zeros((K, V))
    for k in range(K):
        phi[k, k * WORDS_PER_TOPIC:(k + 1) * WORDS_PER_TOPIC] = rng.dirichlet(np.ones(WORDS_PER_TOPIC))
    cum = np.cumsum(phi, axis=1)
    docs, ndk = [], np.zeros((N_DOCS, K), dtype=np.int64)
    for d in range(N_DOCS):
        n = int(rng.integers(DOC_LENGTH[0], DOC_LENGTH[1] + 1))
        z = rng.choice(K, size=n, p=rng.dirichlet(TRUE_ALPHA))
        words = np.minimum((cum[z] < rng.random(n)[:, None]).sum(axis=1), V - 1)
        docs.append((f"d{d:05d}", [words.tolist()]))
        ndk[d] = np.bincount(z, minlength=K)
    return docs, phi, ndk


def doc_loglik(ndk: np.ndarray, alpha: np.ndarray) -> float:
    """log p(z | alpha) = sum_i [log G(a0) - log G(m_i + a0) + sum_k log G(m_ik + a_k) - log G(a_k)]."""
    return float(np.sum(gammaln(alpha.sum()) - gammaln(ndk.sum(axis=1) + alpha.sum()))
                 + np.sum(gammaln(ndk + alpha) - gammaln(alpha)))


def dirichlet_multinomial_mle(ndk: np.ndarray) -> np.ndarray:
    """The alpha maximising :func:`doc_loglik` (L-BFGS on log alpha)."""
    result = minimize(lambda x: -doc_loglik(ndk, np.exp(x)), np.zeros(ndk.shape[1]), method="L-BFGS-B")
    assert result.success, result.message
    return np.exp(result.x)


def fit(docs, seed: int, restarts: int = RESTARTS, iterations: int = ITERATIONS, **hyper):
    """The best of ``restarts`` chains by joint log-likelihood: ``(alpha (K,), topic_word (K x V), joint)``."""
    model = make_model(registry.model("lda-gibbs"), K, V)
    block = SegmentedBlock.from_segments(docs)
    best = None
    for r in range(restarts):
        prepared, state, h, nwk, nk = run_local(model, block, iterations, seed=100 * seed + r,
                                                hyper=model.initial_hyper(**hyper))
        alpha = np.asarray(h["alpha"], dtype=np.float64)
        ndk = doc_topic_counts(prepared.token_ptr(), state["z"], K)
        joint = model.word_loglik(nwk, nk, h) + doc_loglik(ndk, alpha)
        if best is None or joint > best[2]:
            best = (alpha, model.topic_word(nwk, nk, h), joint)
    return best


def alpha_mismatches(alpha: np.ndarray, truth: np.ndarray = TRUE_ALPHA) -> list[str]:
    """What is wrong with ``alpha`` (in the true topic order) as an estimate of ``truth``; empty when close."""
    problems = []
    rel = np.abs(alpha / truth - 1)
    if np.any(rel > ALPHA_RTOL):
        problems.append(f"components off by {np.round(rel, 3)} (> {ALPHA_RTOL})")
    if abs(alpha.sum() / truth.sum() - 1) > ALPHA_SUM_RTOL:
        problems.append(f"sum {alpha.sum():.3f} vs {truth.sum():.3f}")
    if not np.array_equal(np.argsort(alpha), np.argsort(truth)):
        problems.append(f"order {np.argsort(alpha)} vs {np.argsort(truth)}")
    return problems


def test_the_check_rejects_a_symmetric_alpha():
    """The closeness check can fail: symmetric alphas (the start, the true sum spread evenly) are rejected, a
    slightly perturbed true alpha is accepted."""
    for symmetric in (np.full(K, DEFAULT_ALPHA), np.full(K, TRUE_ALPHA.mean()), np.full(K, 0.3)):
        assert alpha_mismatches(symmetric), symmetric
    assert alpha_mismatches(TRUE_ALPHA[::-1].copy())
    assert not alpha_mismatches(TRUE_ALPHA * np.array([1.2, 0.85, 1.1, 0.9]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_recovers_an_asymmetric_alpha(seed):
    docs, phi, true_ndk = asymmetric_lda_corpus(seed)
    alpha, topic_word, _ = fit(docs, seed)
    distances, perm = matched_hellinger(phi, topic_word)
    assert distances.max() < MAX_HELLINGER, distances
    learnt = alpha[perm]                              # learnt[k]: the alpha of the topic matched to true topic k
    assert not alpha_mismatches(learnt), (learnt, alpha_mismatches(learnt))
    # sharper: the alpha that best explains the true assignments (the rest of the gap to TRUE_ALPHA is the
    # sampling noise of 400 documents)
    oracle = dirichlet_multinomial_mle(true_ndk)
    np.testing.assert_allclose(learnt, oracle, rtol=ORACLE_RTOL)
