"""lda-gibbs' ``--beta-update`` (drivers/models/lda_gibbs/beta_update.py), no Spark: the evidence (5.15) against a
direct lnGamma sum, ``optimise`` against scipy's maximiser of it, ``sample``'s chain against the posterior on a grid,
recovery of a known beta from data drawn from LDA, the default (fixed) unchanged bit for bit, refresh's replay."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import gammaln

from drivers import registry
from drivers.families.gibbs.refresh import has_global_step, refusal
from drivers.models.lda_gibbs.beta_update import HYPER_SCALE, log_words_given_topics, updated_beta
from drivers.models.lda_gibbs.model import LdaGibbs
from inference.gibbs.local import run_local
from inference.gibbs.model import SegmentedBlock


def direct_evidence(nwk: np.ndarray, beta: float) -> float:
    """(5.15) summed over topics, straight from the dense counts."""
    V = nwk.shape[0]
    totals = nwk.sum(axis=0)
    return float(np.sum(gammaln(nwk + beta)) - nwk.shape[1] * V * gammaln(beta)
                 + np.sum(gammaln(V * beta) - gammaln(totals + V * beta)))


def random_counts(seed: int, V: int = 40, K: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, 0.2), size=K)
    return np.stack([rng.multinomial(int(rng.integers(30, 300)), p) for p in phi], axis=1).astype(np.int32)


def test_evidence_and_optimised_beta_are_the_direct_ones():
    nwk = random_counts(0)
    for beta in (1e-3, 0.07, 2.5):
        assert log_words_given_topics(nwk, beta) == pytest.approx(direct_evidence(nwk, beta), rel=1e-11)
    best = minimize_scalar(lambda x: -direct_evidence(nwk, np.exp(x)), bounds=(-12, 6), method="bounded",
                           options={"xatol": 1e-10})
    for start in (0.01, 3.0):
        got = updated_beta("optimise", nwk, start, np.random.default_rng(0))
        assert got == pytest.approx(np.exp(best.x), rel=1e-5)
    assert updated_beta("fixed", nwk, 0.3, np.random.default_rng(0)) == 0.3


def test_sampled_beta_has_the_grid_posterior_as_its_stationary_law():
    """A chain of ``sample`` updates (each 5 slice draws) on fixed counts follows the posterior of beta under (5.15)
    and the Gamma(1, 1000) hyperprior, computed on a grid of log beta (Kolmogorov distance of the draws' CDF)."""
    nwk = random_counts(1, V=25, K=2)
    rng = np.random.default_rng(2)
    beta, draws = 1.0, []
    for i in range(900):
        beta = updated_beta("sample", nwk, beta, rng)
        if i >= 50:
            draws.append(np.log(beta))
    logs = np.linspace(-6, 3, 2001)
    log_post = np.array([direct_evidence(nwk, np.exp(x)) - np.exp(x) / HYPER_SCALE + x for x in logs])
    post = np.exp(log_post - log_post.max())
    cdf = np.cumsum(post) / post.sum()
    empirical = np.searchsorted(np.sort(draws), logs, side="right") / len(draws)
    assert np.max(np.abs(empirical - cdf)) < 0.08
    # a density off by a factor beta (the Jacobian left out) is far from the draws
    shifted = np.exp(log_post - logs - (log_post - logs).max())
    assert np.max(np.abs(empirical - np.cumsum(shifted) / shifted.sum())) > 0.1


def lda_corpus(seed: int, beta: float, V: int = 120, K: int = 4, docs: int = 150, length: int = 80):
    """``(block, true topic-word counts V x K)`` drawn from LDA with phi_k ~ Dir(beta), theta_d ~ Dir(0.5)."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, beta), size=K)
    out, nwk = [], np.zeros((V, K), np.int32)
    for d in range(docs):
        z = rng.choice(K, size=length, p=rng.dirichlet(np.full(K, 0.5)))
        words = np.array([rng.choice(V, p=phi[k]) for k in z])
        np.add.at(nwk, (words, z), 1)
        out.append((f"d{d:04d}", [words.tolist()]))
    return SegmentedBlock.from_segments(out), nwk


@pytest.mark.parametrize("how", ["optimise", "sample"])
def test_recovers_beta_from_data_drawn_from_lda(how):
    """From beta = 1 (20x too smooth), the chain's beta ends within 25% of the maximiser of (5.15) at the TRUE
    topic-word counts (the oracle) and of the truth; with beta fixed it stays at 1."""
    true_beta = 0.05
    block, true_nwk = lda_corpus(3, true_beta)
    oracle = updated_beta("optimise", true_nwk, 1.0, np.random.default_rng(0))
    model = LdaGibbs(4, true_nwk.shape[0])
    hyper = model.initial_hyper(alpha=0.5, beta=1.0, optimize_alpha=False, beta_update=how)
    learnt = []
    run_local(model, block, 60, seed=4, hyper=hyper,
              on_iteration=lambda it, state, h: learnt.append(h["beta"]) if it > 40 else None)
    got = float(np.mean(learnt))
    assert got == pytest.approx(oracle, rel=0.25)
    assert got == pytest.approx(true_beta, rel=0.25)


def test_fixed_is_the_old_chain_bit_for_bit():
    """No beta_update (or fixed) keeps model.json's hyperparameters and the chain as they were."""
    block, nwk = lda_corpus(5, 0.1, docs=30, length=40)
    model = LdaGibbs(4, nwk.shape[0])
    old = model.initial_hyper()
    assert "beta_update" not in old and "beta_update" not in model.initial_hyper(beta_update="fixed")
    a = run_local(model, block, 5, seed=1, hyper=old)
    b = run_local(model, block, 5, seed=1, hyper=model.initial_hyper(beta_update="fixed"))
    np.testing.assert_array_equal(a[1]["z"], b[1]["z"])
    assert a[2] == b[2]
    with pytest.raises(ValueError, match="beta_update"):
        model.initial_hyper(beta_update="maximise")


def test_refresh_replays_the_global_step_only_of_a_chain_that_learns_beta():
    """A kept lda-gibbs chain with beta fixed needs no last statistics (chains kept before they were saved stay
    refreshable); one that learns beta takes the step the run skipped after its last iteration."""
    model = LdaGibbs(3, 10)
    assert not has_global_step(model) and not has_global_step(model, {"beta": 0.01})
    assert has_global_step(model, {"beta": 0.01, "beta_update": "sample"})
    assert refusal(registry.MODELS["lda-gibbs"]) is None
