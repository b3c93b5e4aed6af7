"""Left-to-right evaluation kernel (inference/left_to_right.py) against enumeration on tiny models.

Slow references: p(w | Phi, alpha m) by summing over all K^N topic assignments, and the exact law of one
particle (the Gibbs sweeps and the draws of z_n as linear maps on measures over z_<n), from which the two
claims of the module docstring follow exactly: the expected particle product E[prod_n p_n] is p(w) (with and
without resampling), and the limit of the left-to-right estimate for infinitely many particles is prod_n
E_q[p_n] (not p(w) without resampling). The kernel is then checked against these by Monte Carlo with bounds of
4 standard errors.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln

from inference.left_to_right import (LeftToRight, bits_per_word, estimate_document, lda_scores,
                                     particle_seeds)

PHI_VK = np.array([[0.70, 0.05, 0.10],        # V = 4 words x K = 3 topics (columns sum to 1)
                   [0.10, 0.80, 0.05],
                   [0.15, 0.05, 0.70],
                   [0.05, 0.10, 0.15]])
ALPHA = np.array([0.3, 0.5, 0.2])
DOCS = [np.array([0, 1, 0, 2]), np.array([2, 2, 1, 0, 3]), np.array([1, 0, 1])]


# --------------------------------------------------------------------------- slow references

def exact_log_p(words, alpha, phi_vk) -> float:
    """log p(w | Phi, alpha) = log sum_z DM(z | alpha) prod_n phi[w_n, z_n], by enumeration."""
    K, A, N = len(alpha), alpha.sum(), len(words)
    total = 0.0
    for z in itertools.product(range(K), repeat=N):
        counts = np.bincount(z, minlength=K)
        log_dm = gammaln(A) - gammaln(N + A) + np.sum(gammaln(counts + alpha) - gammaln(alpha))
        total += math.exp(log_dm) * np.prod(phi_vk[words, list(z)])
    return math.log(total)


def _conditional(z, m, f, alpha):
    """p(z_m = k | z_-m, w_m) over the positions of z (a tuple), z_m left out."""
    counts = np.bincount([z[i] for i in range(len(z)) if i != m], minlength=len(alpha)).astype(float)
    p = (counts + alpha) * f[m]
    return p / p.sum()


def _sweep(measure, f, alpha):
    """One Gibbs sweep over positions 0..n-1 in order, as a map on a measure over z (tuples of length n)."""
    n = len(next(iter(measure)))
    for m in range(n):
        new = {}
        for z, mass in measure.items():
            for k, q in enumerate(_conditional(z, m, f, alpha)):
                key = z[:m] + (k,) + z[m + 1:]
                new[key] = new.get(key, 0.0) + mass * q
        measure = new
    return measure


def particle_law(words, alpha, phi_vk, resample):
    """Exact law of one particle: (E[prod_n p_n], [E_q p_n for every n]) with q the unweighted particle law."""
    f = phi_vk[words]
    weighted, unweighted = {(): 1.0}, {(): 1.0}
    factors = []
    for n in range(len(words)):
        if resample and n:
            weighted, unweighted = _sweep(weighted, f, alpha), _sweep(unweighted, f, alpha)
        expectation = 0.0
        new_w, new_u = {}, {}
        for z in set(weighted) | set(unweighted):
            counts = np.bincount(z, minlength=len(alpha)).astype(float)
            terms = (counts + alpha) * f[n]
            p_n = terms.sum() / (n + alpha.sum())
            expectation += unweighted.get(z, 0.0) * p_n
            for k in range(len(alpha)):
                q = terms[k] / terms.sum()
                new_w[z + (k,)] = weighted.get(z, 0.0) * p_n * q
                new_u[z + (k,)] = unweighted.get(z, 0.0) * q
        weighted, unweighted = new_w, new_u
        factors.append(expectation)
    return sum(weighted.values()), np.array(factors)


# --------------------------------------------------------------------------- the references agree with the claims

@pytest.mark.parametrize("resample", [False, True])
def test_expected_particle_product_is_exact(resample):
    """E[prod_n p_n] of one particle is p(w | Phi, alpha m): SIS with the optimal proposal, AIS with sweeps."""
    for words in DOCS:
        expected, _ = particle_law(words, ALPHA, PHI_VK, resample)
        assert math.log(expected) == pytest.approx(exact_log_p(words, ALPHA, PHI_VK), abs=1e-12)


def test_left_to_right_without_resampling_is_inconsistent():
    """prod_n E_q[p_n] (the limit for infinitely many particles) differs from p(w) without resampling from the
    third token on (for N <= 2 it is exact)."""
    words = DOCS[0]
    _, factors = particle_law(words[:2], ALPHA, PHI_VK, False)
    assert np.log(factors).sum() == pytest.approx(exact_log_p(words[:2], ALPHA, PHI_VK), abs=1e-12)
    _, factors = particle_law(words, ALPHA, PHI_VK, False)
    assert abs(np.log(factors).sum() - exact_log_p(words, ALPHA, PHI_VK)) > 1e-3


# --------------------------------------------------------------------------- the kernel against them

def _mean_and_error(log_weights):
    w = np.exp(log_weights)
    return w.mean(), w.std(ddof=1) / math.sqrt(len(w))


@pytest.mark.parametrize("resample", [False, True])
def test_kernel_particle_products_are_unbiased(resample):
    """The mean of the kernel's particle products (R = 20,000 independent particles) is p(w) within 4 standard
    errors, for every document."""
    for d, words in enumerate(DOCS):
        est = estimate_document(PHI_VK[words], ALPHA, particle_seeds(7, f"doc{d}", 20000), resample)
        mean, err = _mean_and_error(est.particle_log_weight)
        exact = math.exp(exact_log_p(words, ALPHA, PHI_VK))
        assert abs(mean - exact) < 4 * err, (d, mean, exact, err)
        assert est.log_importance == pytest.approx(math.log(mean), abs=1e-12)


@pytest.mark.parametrize("resample", [False, True])
def test_kernel_factors_match_their_exact_limit(resample):
    """Every token's particle average (R = 20,000) is E_q[p_n] of the exact particle law within 4 standard
    errors: the kernel's sweeps and draws follow the algorithm."""
    for d, words in enumerate(DOCS):
        est = estimate_document(PHI_VK[words], ALPHA, particle_seeds(3, f"doc{d}", 20000), resample)
        _, factors = particle_law(words, ALPHA, PHI_VK, resample)
        mean = np.exp(est.token_log_p)          # the particles' mean of p_n^(r)
        # a bound on 4 standard errors from the range of p_n^(r), which lies in [min_k f_n(k), max_k f_n(k)]
        f = PHI_VK[words]
        bound = 4 * (f.max(axis=1) - f.min(axis=1)) / 2 / math.sqrt(20000)
        assert np.all(np.abs(mean - factors) < bound), (d, mean, factors)


def test_resampling_reduces_the_bias_of_the_limit():
    """Both limits overestimate log p(w) on these documents; resampling brings it closer (the 5-token document:
    0.065 nats with resampling, 0.31 without)."""
    for words in DOCS:
        exact = exact_log_p(words, ALPHA, PHI_VK)
        bias = {rs: np.log(particle_law(words, ALPHA, PHI_VK, rs)[1]).sum() - exact for rs in (False, True)}
        assert 0 < bias[True] < bias[False]


def test_many_particles_importance_estimate_agrees_with_the_exact_marginal():
    """The importance estimate is consistent: 20,000 particles give log p(w) within 0.01 nats."""
    for d, words in enumerate(DOCS):
        est = estimate_document(PHI_VK[words], ALPHA, particle_seeds(11, f"doc{d}", 20000), True)
        assert est.log_importance == pytest.approx(exact_log_p(words, ALPHA, PHI_VK), abs=1e-2)


def test_one_particle_estimates_agree():
    """With R = 1 the left-to-right estimate is the particle's product (the unbiased one)."""
    est = estimate_document(PHI_VK[DOCS[1]], ALPHA, particle_seeds(0, "d", 1), True)
    assert est.log_left_to_right == pytest.approx(est.log_importance, abs=1e-12)


# --------------------------------------------------------------------------- the block scorer

def _block(docs):
    ptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
    return np.concatenate(docs).astype(np.int32), ptr


def test_scores_are_per_document_and_deterministic():
    """A document's row depends on the seed and its id only: the same alone or among others, twice the same;
    another seed gives another estimate."""
    settings = LeftToRight(particles=5, resample=True, seed=4)
    words, ptr = _block(DOCS)
    ids = ["a", "b", "c"]
    together = lda_scores(ids, ptr, words, ALPHA, PHI_VK, settings)
    np.testing.assert_array_equal(together, lda_scores(ids, ptr, words, ALPHA, PHI_VK, settings))
    w1, p1 = _block([DOCS[1]])
    np.testing.assert_array_equal(together[1], lda_scores(["b"], p1, w1, ALPHA, PHI_VK, settings)[0])
    other = lda_scores(ids, ptr, words, ALPHA, PHI_VK, LeftToRight(particles=5, resample=True, seed=5))
    assert not np.array_equal(other[:, 0], together[:, 0])
    np.testing.assert_array_equal(together[:, 2], [4, 5, 3])
    np.testing.assert_array_equal(together[:, 3], 0)


def test_out_of_vocabulary_tokens_are_skipped_and_counted():
    """Ids outside 0..V-1 neither score nor condition: the document scores as without them, 2 skipped."""
    settings = LeftToRight(particles=4, seed=1)
    clean, ptr = _block([DOCS[0]])
    dirty, dptr = _block([np.array([0, 4, 1, 0, -1, 2])])
    a = lda_scores(["x"], ptr, clean, ALPHA, PHI_VK, settings)[0]
    b = lda_scores(["x"], dptr, dirty, ALPHA, PHI_VK, settings)[0]
    np.testing.assert_array_equal(b, [a[0], a[1], 4, 2])


def test_long_document_of_tiny_probabilities_stays_finite():
    """3,000 tokens whose probabilities are ~1e-200 (a huge vocabulary): the estimate is the one of the
    unscaled topics plus 3000 log 1e-200, finite (rows are scaled, sums kept in logs)."""
    rng = np.random.default_rng(0)
    words = rng.integers(0, 4, 3000)
    seeds = particle_seeds(0, "long", 2)
    plain = estimate_document(PHI_VK[words], ALPHA, seeds, False)
    tiny = estimate_document(PHI_VK[words] * 1e-200, ALPHA, seeds, False)
    assert np.isfinite(tiny.log_left_to_right)
    assert tiny.log_left_to_right == pytest.approx(plain.log_left_to_right + 3000 * math.log(1e-200), rel=1e-12)
    resampled = estimate_document(PHI_VK[words[:400]] * 1e-200, ALPHA, seeds, True)
    assert np.isfinite(resampled.log_left_to_right)


def test_bits_per_word():
    assert bits_per_word(-8 * math.log(2) * 10, 10) == pytest.approx(8.0)


# --------------------------------------------------------------------------- the STM's seating particles

def _stirling(n: int, t: int, a: float) -> float:
    """Generalised Stirling number S^n_{t,a}: S^{n+1}_t = S^n_{t-1} + (n - t a) S^n_t, S^0_0 = 1."""
    table = np.zeros((n + 1, n + 1))
    table[0, 0] = 1.0
    for m in range(n):
        for u in range(1, m + 2):
            table[m + 1, u] = table[m, u - 1] + (m - u * a) * table[m, u]
    return table[n, t]


def exact_stm_log_p(segments, alpha, a, b, phi_vk) -> float:
    """log p(w | Phi, alpha, a, b) of one STM document: sum over topics z and table counts t of (5.2)."""
    K = len(alpha)
    words = [w for s in segments for w in s]
    seg_of = [j for j, s in enumerate(segments) for _ in s]
    J = len(segments)

    def pochhammer(x, step, m):
        return np.prod([x + i * step for i in range(m)]) if m else 1.0

    def log_beta(v):
        return np.sum(gammaln(v)) - gammaln(np.sum(v))

    total = 0.0
    for z in itertools.product(range(K), repeat=len(words)):
        n = np.zeros((J, K), dtype=int)
        for j, k in zip(seg_of, z):
            n[j, k] += 1
        word_part = np.prod(phi_vk[words, list(z)])
        ranges = [range(1, n[j, k] + 1) if n[j, k] else range(0, 1) for j in range(J) for k in range(K)]
        topic_part = 0.0
        for flat in itertools.product(*ranges):
            t = np.array(flat).reshape(J, K)
            value = math.exp(log_beta(alpha + t.sum(axis=0)) - log_beta(alpha))
            for j in range(J):
                value *= pochhammer(b, a, t[j].sum()) / pochhammer(b, 1.0, n[j].sum())
                for k in range(K):
                    value *= _stirling(n[j, k], t[j, k], a)
            topic_part += value
        total += word_part * topic_part
    return math.log(total)


STM_DOCS = [[[0, 1], [2, 0]], [[1, 1, 3], [0]], [[2], [2, 0], [1]]]
PHI_2 = PHI_VK[:, :2] / PHI_VK[:, :2].sum(axis=0)


@pytest.mark.parametrize("a,resample", [(0.0, False), (0.0, True), (0.4, True)])
def test_stm_particle_products_are_unbiased_for_the_enumerated_marginal(a, resample):
    """The STM's seating particles (R = 20,000): the mean of their products is the STM's p(w) by enumeration over
    topics and table counts, (5.2), within 4 standard errors; with one segment and b -> infinity nothing
    checks this, so the documents have 2-3 segments."""
    from inference.gibbs.franchise_left_to_right import estimate_franchise_document, star

    alpha, b = np.array([0.4, 0.7]), 1.5
    for d, segments in enumerate(STM_DOCS):
        words = np.array([w for s in segments for w in s])
        ptr = np.concatenate([[0], np.cumsum([len(s) for s in segments])])
        est = estimate_franchise_document(PHI_2[words], ptr, star(len(segments)), alpha, a, b,
                                          particle_seeds(9, f"s{d}", 20000), resample)
        mean, err = _mean_and_error(est.particle_log_weight)
        exact = math.exp(exact_stm_log_p(segments, alpha, a, b, PHI_2))
        assert abs(mean - exact) < 4 * err, (d, mean, exact, err)
        lda = math.exp(exact_log_p(words, alpha, PHI_2))
        assert abs(lda - exact) > 8 * err                       # the STM's p(w) is not LDA's: the test can tell


def exact_seqlda_log_p(segments, alpha, a, b, phi_vk) -> float:
    """log p(w | Phi, alpha, a, b) of one SeqLDA document: sum over topics z and the chain's table counts t of
    (6.3) (restaurant j's customers: its tokens and the tables of j+1)."""
    K = len(alpha)
    words = [w for s in segments for w in s]
    seg_of = [j for j, s in enumerate(segments) for _ in s]
    J = len(segments)

    def pochhammer(x, step, m):
        return np.prod([x + i * step for i in range(m)]) if m else 1.0

    def log_beta(v):
        return np.sum(gammaln(v)) - gammaln(np.sum(v))

    def tables(j, n, below):
        """sum over t_j..t_1 given t_{j+1} = below of the factors of restaurants j..1 and the root."""
        if j < 0:
            return math.exp(log_beta(alpha + below) - log_beta(alpha))
        customers = n[j] + below
        total = 0.0
        for t in itertools.product(*[range(1, c + 1) if c else range(0, 1) for c in customers]):
            t = np.array(t)
            value = pochhammer(b, a, t.sum()) / pochhammer(b, 1.0, customers.sum())
            for k in range(K):
                value *= _stirling(customers[k], t[k], a)
            total += value * tables(j - 1, n, t)
        return total

    total = 0.0
    for z in itertools.product(range(K), repeat=len(words)):
        n = np.zeros((J, K), dtype=int)
        for j, k in zip(seg_of, z):
            n[j, k] += 1
        total += np.prod(phi_vk[words, list(z)]) * tables(J - 1, n, np.zeros(K, dtype=int))
    return math.log(total)


@pytest.mark.parametrize("a,resample", [(0.0, False), (0.3, True)])
def test_seqlda_particle_products_are_unbiased_for_the_enumerated_marginal(a, resample):
    """SeqLDA's chain of seatings (R = 20,000): the mean of the particle products is (6.3) summed over topics and
    table counts, within 4 standard errors; not STM's p(w) (the restaurant tree matters)."""
    from inference.gibbs.franchise_left_to_right import chain, estimate_franchise_document

    alpha, b = np.array([0.4, 0.7]), 1.5
    for d, segments in enumerate(STM_DOCS):
        words = np.array([w for s in segments for w in s])
        ptr = np.concatenate([[0], np.cumsum([len(s) for s in segments])])
        est = estimate_franchise_document(PHI_2[words], ptr, chain(len(segments)), alpha, a, b,
                                          particle_seeds(4, f"q{d}", 20000), resample)
        mean, err = _mean_and_error(est.particle_log_weight)
        exact = math.exp(exact_seqlda_log_p(segments, alpha, a, b, PHI_2))
        assert abs(mean - exact) < 4 * err, (d, mean, exact, err)
        assert abs(math.exp(exact_stm_log_p(segments, alpha, a, b, PHI_2)) - exact) > 8 * err


def crf_log_p(segments, links, alpha, a, b, phi_vk, lam_t=1.0, lam_s=1.0) -> float:
    """log p(w) of a segmented PDP model by enumerating its generative Chinese restaurant franchise, token by token
    (every table a token joins, or a new table whose dish comes from the previous restaurant or the root, rho
    collapsed: (T_prev + lambda_T) / (T + lambda_T + lambda_S)); ``links`` per segment: 0 root, 1 previous,
    2 adaptive. An independent reading of the models, checked against (5.2) and (6.3) below."""
    K = len(alpha)

    def arrive(r, state):
        """[(probability, dish, new state)] of one customer arriving at restaurant r."""
        tables, roots = state
        mine = tables[r]
        N = sum(size for _, size, _ in mine)
        T = len(mine)
        out = []
        for i, (dish, size, up) in enumerate(mine):
            new = list(mine)
            new[i] = (dish, size + 1, up)
            out.append(((size - a) / (b + N), dish, (tables[:r] + (tuple(new),) + tables[r + 1:], roots)))
        opening = (b + a * T) / (b + N)
        to_prev = {0: 0.0, 1: 1.0}.get(links[r], None)
        if to_prev is None:
            to_prev = (sum(1 for _, _, up in mine if up == "prev") + lam_t) / (T + lam_t + lam_s)
        if to_prev > 0:
            for p, dish, (tabs, rts) in arrive(r - 1, state):
                new = tabs[r] + ((dish, 1, "prev"),)
                out.append((opening * to_prev * p, dish, (tabs[:r] + (new,) + tabs[r + 1:], rts)))
        if to_prev < 1:
            for k in range(K):
                p = (roots[k] + alpha[k]) / (sum(roots) + alpha.sum())
                new = mine + ((k, 1, "root"),)
                out.append((opening * (1 - to_prev) * p, k, (tables[:r] + (new,) + tables[r + 1:],
                                                            roots[:k] + (roots[k] + 1,) + roots[k + 1:])))
        return out

    tokens = [(j, w) for j, s in enumerate(segments) for w in s]

    def total(i, state):
        if i == len(tokens):
            return 1.0
        j, w = tokens[i]
        return sum(p * phi_vk[w, dish] * total(i + 1, new) for p, dish, new in arrive(j, state))

    return math.log(total(0, (tuple(() for _ in segments), (0,) * K)))


def test_the_franchise_reference_is_the_table_count_joints():
    """The generative enumeration equals (5.2) for the star and (6.3) for the chain (a = 0.3)."""
    alpha, a, b = np.array([0.4, 0.7]), 0.3, 1.5
    for segments in STM_DOCS[:2]:
        J = len(segments)
        assert crf_log_p(segments, [0] * J, alpha, a, b, PHI_2) == pytest.approx(
            exact_stm_log_p(segments, alpha, a, b, PHI_2), abs=1e-12)
        assert crf_log_p(segments, [0] + [1] * (J - 1), alpha, a, b, PHI_2) == pytest.approx(
            exact_seqlda_log_p(segments, alpha, a, b, PHI_2), abs=1e-12)


@pytest.mark.parametrize("resample", [False, True])
def test_adatm_particle_products_are_unbiased_for_the_enumerated_franchise(resample):
    """AdaTM's adaptive seatings (lambda_T = 0.5, lambda_S = 2, a = 0.2; R = 20,000): the mean of the particle
    products is the franchise's p(w) within 4 standard errors, and neither STM's nor SeqLDA's."""
    from inference.gibbs.franchise_left_to_right import adaptive, estimate_franchise_document

    alpha, a, b = np.array([0.4, 0.7]), 0.2, 1.5
    told = {"star": False, "chain": False}
    for d, segments in enumerate(STM_DOCS):
        J = len(segments)
        words = np.array([w for s in segments for w in s])
        ptr = np.concatenate([[0], np.cumsum([len(s) for s in segments])])
        est = estimate_franchise_document(PHI_2[words], ptr, adaptive(J), alpha, a, b,
                                          particle_seeds(6, f"ada{d}", 20000), resample, lambda_t=0.5, lambda_s=2.0)
        mean, err = _mean_and_error(est.particle_log_weight)
        exact = math.exp(crf_log_p(segments, [0] + [2] * (J - 1), alpha, a, b, PHI_2, 0.5, 2.0))
        assert abs(mean - exact) < 4 * err, (d, mean, exact, err)
        for name, other in (("star", [0] * J), ("chain", [0] + [1] * (J - 1))):
            told[name] |= abs(math.exp(crf_log_p(segments, other, alpha, a, b, PHI_2)) - exact) > 4 * err
    assert all(told.values()), told                    # the test can tell AdaTM from STM and from SeqLDA
