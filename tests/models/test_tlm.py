"""The topic-based language model (Wallach §3.4, :mod:`drivers.models.tlm.model`) without Spark: the sampler's
conditionals against the joint computed directly (non-hierarchical priors) and against the sequential joint with
the token last (hierarchical priors, both path assumptions), the path counts against a slow reference after random
add/remove sequences and after sweeps, the limits that are exactly bigram-lm (one topic) and LDA (no previous
words), Gibbs EM's M-step, and recovery of planted bigram topics from data drawn from the model."""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy.special import gammaln

from gibbs_corpus import sample_bigram_lm
from drivers.models.bigram_lm import BigramLM, bigram_keys, fixed_point
from drivers.models.bigram_lm import log_evidence as bigram_log_evidence
from inference.gibbs.heldout import HeldoutSchedule
from inference.gibbs.model import SegmentedBlock
from inference.gibbs.tables import merge
from drivers.models.tlm.model import TopicLM
from drivers.models.tlm.counts import local_counts, pair_keys, upper_counts
from drivers.models.tlm.hyper import SequentialEvidence
from drivers.models.tlm.kernels import add_token, remove_token, tlm_sweep, topic_weights

HIERARCHICAL = [(v, p) for v in ("h1", "h2a", "h2b", "h3") for p in ("minimal", "maximal")]


def tiny_block(seed, V=4, docs=3, length=5):
    rng = np.random.default_rng(seed)
    return SegmentedBlock.from_segments([(f"d{d}", [rng.integers(0, V, length).tolist(),
                                                    rng.integers(0, V, 2).tolist()]) for d in range(docs)])


def recount(model, block, z):
    counts = model.table_counts(block, {"z": z}, None)
    return {t.name: merge(t, [counts[t.name]]) for t in model.count_tables()}


def kernel_conditional(model, block, z, hyper, n):
    """The sampler's p(z_n = t | z_-n, w) (3.28)/(3.54): the weights the sweep draws from."""
    K = model.num_topics
    table = recount(model, block, z)["bigram_topics"]
    keys = pair_keys(block, model.vocab_size)
    prior, local = model._local(np.unique(keys), table.keys, table.counts[:, 0].astype(np.int64), hyper)
    p = local.pair_of(keys)[n]
    doc = int(np.searchsorted(block.token_ptr(), n, side="right") - 1)
    ptr = block.token_ptr()
    ndk = np.bincount(z[ptr[doc]:ptr[doc + 1]], minlength=K).astype(np.int64)
    ndk[z[n]] -= 1
    remove_token(p, z[n], prior.variant, prior.minimal, *local.arrays())
    cum = np.empty(K)
    total = topic_weights(p, ndk, np.asarray(hyper["alpha"]), cum, prior.variant, prior.beta, prior.beta0,
                          prior.beta1, prior.bn, prior.beta_t, *local.arrays())
    return np.diff(np.r_[0.0, cum]) / total


def normalised(log_values):
    values = np.exp(np.asarray(log_values) - max(log_values))
    return values / values.sum()


def tokens(block, V):
    """(previous word, word, document) of every token, read directly."""
    out = []
    for d in range(block.n_docs):
        for s in range(block.doc_ptr[d], block.doc_ptr[d + 1]):
            previous = V
            for w in block.words[block.seg_ptr[s]:block.seg_ptr[s + 1]]:
                out.append((previous, int(w), d))
                previous = int(w)
    return out


def log_p_z(z, docs, alpha_m, D):
    """log P(z | alpha m) (3.27), directly."""
    value = 0.0
    for d in range(D):
        n = np.bincount(z[docs == d], minlength=alpha_m.shape[0])
        value += gammaln(alpha_m.sum()) - gammaln(n.sum() + alpha_m.sum()) + np.sum(gammaln(n + alpha_m) -
                                                                                    gammaln(alpha_m))
    return value


def direct_joint(block, z, V, K, alpha_m, bn):
    """log P(w, z | U) of the non-hierarchical priors, (3.26) + (3.27), from dense counts N[w', t, w]."""
    toks = tokens(block, V)
    N = np.zeros((V + 1, K, V))
    for (previous, w, _), t in zip(toks, z):
        N[previous, t, w] += 1
    value = 0.0
    for previous, t in itertools.product(range(V + 1), range(K)):
        value += gammaln(bn[t].sum()) - gammaln(N[previous, t].sum() + bn[t].sum()) + np.sum(
            gammaln(N[previous, t] + bn[t]) - gammaln(bn[t]))
    return value + log_p_z(z, np.array([d for _, _, d in toks]), alpha_m, block.n_docs)


@pytest.mark.parametrize("variant", ["1", "2"])
def test_conditionals_of_the_non_hierarchical_priors_are_the_joint(variant):
    V, K = 4, 3
    rng = np.random.default_rng(5)
    block = tiny_block(1, V)
    model = TopicLM(K, V)
    alpha_m = rng.uniform(0.1, 2.0, K)
    bn = rng.uniform(0.05, 1.5, (K, V))
    if variant == "1":
        bn[:] = bn[0]
    hyper = model.initial_hyper(alpha=alpha_m, prior_variant=variant)
    hyper["beta_n"] = bn[0].tolist() if variant == "1" else bn.tolist()
    z = rng.integers(0, K, block.n_tokens).astype(np.int32)
    for n in range(block.n_tokens):
        joint = []
        for t in range(K):
            zt = z.copy()
            zt[n] = t
            joint.append(direct_joint(block, zt, V, K, alpha_m, bn))
        np.testing.assert_allclose(kernel_conditional(model, block, z, hyper, n), normalised(joint), rtol=1e-10)


class SlowHierarchy:
    """The hierarchical priors' predictive (3.39)/(3.47)/(3.48)/(3.53) with every upper-level count computed from
    the bottom counts N_{w|w't} from scratch: raw sums (maximal path) or numbers of nonzero counts below (minimal
    path, where a level's count is a function of the counts below it)."""

    def __init__(self, variant, minimal, V, K, beta, beta0, beta1):
        self.variant, self.minimal, self.V, self.K = variant, minimal, V, K
        self.beta, self.beta0, self.beta1 = beta, beta0, beta1
        self.N = Counter()

    def _c(self, count):
        return (1 if count > 0 else 0) if self.minimal else count

    def levels(self):
        """mid (V, K) N^_{w|t} or per pair N^_{w|w'}, top (V,) N^_w."""
        V, K = self.V, self.K
        if self.variant == "h1":
            top = np.zeros(V)
            for (_, _, w), c in self.N.items():
                top[w] += self._c(c)
            return None, top
        if self.variant in ("h2a", "h2b"):
            mid = np.zeros((V, K))
            for (_, t, w), c in self.N.items():
                mid[w, t] += self._c(c)
            return mid, np.array([sum(self._c(m) for m in mid[w]) for w in range(V)])
        mid = np.zeros((V + 1, V))
        for (previous, _, w), c in self.N.items():
            mid[previous, w] += self._c(c)
        return mid, np.array([sum(self._c(m) for m in mid[:, w]) for w in range(V)])

    def prob(self, previous, t, w):
        V = self.V
        mid, top = self.levels()
        q0 = (top[w] + self.beta0 / V) / (top.sum() + self.beta0)
        if self.variant == "h1":
            q = q0
        elif self.variant == "h2a":
            q = (mid[w, t] + self.beta0 / V) / (mid[:, t].sum() + self.beta0)
        elif self.variant == "h2b":
            q = (mid[w, t] + self.beta1 * q0) / (mid[:, t].sum() + self.beta1)
        else:
            q = (mid[previous, w] + self.beta1 * q0) / (mid[previous].sum() + self.beta1)
        context = sum(c for (a, b, _), c in self.N.items() if a == previous and b == t)
        return (self.N[(previous, t, w)] + self.beta * q) / (context + self.beta)

    def sequential(self, observations):
        """log P(w | z) (3.55) of (previous, topic, word) observations in order."""
        value = 0.0
        for previous, t, w in observations:
            value += np.log(self.prob(previous, t, w))
            self.N[(previous, t, w)] += 1
        return value


def hier_hyper(model, variant, path, rng):
    hyper = model.initial_hyper(alpha=rng.uniform(0.2, 2.0, model.num_topics), prior_variant=variant, path=path)
    hyper.update(beta=float(rng.uniform(0.5, 4.0)), beta0=float(rng.uniform(0.5, 4.0)))
    if "beta1" in hyper:
        hyper["beta1"] = float(rng.uniform(0.5, 4.0))
    return hyper


@pytest.mark.parametrize("variant,path", HIERARCHICAL)
def test_conditionals_of_the_hierarchical_priors_are_the_sequential_joint_with_the_token_last(variant, path):
    """(3.54): p(z_n = t | .) ∝ P(w, z) with n the last to arrive, P(w | z) by (3.55) from a slow reference."""
    V, K = 4, 3
    rng = np.random.default_rng(hash((variant, path)) % 1000)
    block = tiny_block(2, V)
    model = TopicLM(K, V)
    hyper = hier_hyper(model, variant, path, rng)
    alpha_m = np.asarray(hyper["alpha"])
    toks = tokens(block, V)
    docs = np.array([d for _, _, d in toks])
    z = rng.integers(0, K, block.n_tokens).astype(np.int32)
    for n in range(block.n_tokens):
        joint = []
        for t in range(K):
            zt = z.copy()
            zt[n] = t
            order = [i for i in range(len(toks)) if i != n] + [n]
            slow = SlowHierarchy(variant, path == "minimal", V, K, hyper["beta"], hyper["beta0"],
                                 hyper.get("beta1", 1.0))
            joint.append(slow.sequential([(toks[i][0], zt[i], toks[i][1]) for i in order])
                         + log_p_z(zt, docs, alpha_m, block.n_docs))
        np.testing.assert_allclose(kernel_conditional(model, block, z, hyper, n), normalised(joint), rtol=1e-10)


@pytest.mark.parametrize("variant,path", HIERARCHICAL)
def test_sequential_evidence_is_the_slow_reference(variant, path):
    V, K = 5, 3
    rng = np.random.default_rng(7)
    block = tiny_block(3, V, docs=4, length=8)
    model = TopicLM(K, V)
    hyper = hier_hyper(model, variant, path, rng)
    z = rng.integers(0, K, block.n_tokens).astype(np.int32)
    table = recount(model, block, z)["bigram_topics"]
    evidence = SequentialEvidence(table, V, K, model.prior(hyper))
    previous, word = evidence.pairs[evidence.order_pair] // V, evidence.pairs[evidence.order_pair] % V
    slow = SlowHierarchy(variant, path == "minimal", V, K, hyper["beta"], hyper["beta0"], hyper.get("beta1", 1.0))
    expected = slow.sequential(list(zip(previous.tolist(), evidence.order_topic.tolist(), word.tolist())))
    assert Counter(zip(previous.tolist(), evidence.order_topic.tolist(), word.tolist())) == Counter(
        (p, int(t), w) for (p, w, _), t in zip(tokens(block, V), z))
    np.testing.assert_allclose(evidence(hyper["beta"], hyper["beta0"], hyper.get("beta1", 1.0)), expected,
                               rtol=1e-12)
    np.testing.assert_allclose(model.loglik({"bigram_topics": table}, {}, hyper), expected, rtol=1e-12)


def assert_levels(local, slow, variant, V):
    mid, top = slow.levels()
    if variant != "h2a":                                # 2a has no top level: n_t ~ Dir(beta0 u)
        np.testing.assert_array_equal(local.top, top)
        assert local.toptot[0] == top.sum()
    if variant in ("h2a", "h2b"):
        np.testing.assert_array_equal(local.mid, mid)
        np.testing.assert_array_equal(local.mid_t, mid.sum(axis=0))
    if variant == "h3":
        np.testing.assert_array_equal(local.midp, mid[local.pair_prev, local.pair_word])
        np.testing.assert_array_equal(local.mid_ctx, mid.sum(axis=1))
    for p in range(local.pair_keys.shape[0]):
        for t in range(local.pair_counts.shape[1]):
            assert local.pair_counts[p, t] == slow.N[(int(local.pair_prev[p]), t, int(local.pair_word[p]))]


@pytest.mark.parametrize("variant,path", HIERARCHICAL)
def test_path_counts_after_random_adds_and_removes_are_the_slow_reference(variant, path):
    V, K = 5, 3
    rng = np.random.default_rng(11)
    model = TopicLM(K, V)
    hyper = model.initial_hyper(prior_variant=variant, path=path)
    prior = model.prior(hyper)
    pairs = np.unique(rng.integers(0, (V + 1) * V, 12))
    empty = np.zeros(0, np.int64)
    local = local_counts(pairs, empty, empty, upper_counts(empty, empty, V, K, prior.variant, prior.minimal), V, K,
                         prior.variant, prior.minimal)
    if variant in ("h2a", "h2b"):
        local.mid = np.zeros((V, K), np.int64)
    if variant == "h3":
        local.mid_ctx = np.zeros(V + 1, np.int64)
    slow = SlowHierarchy(variant, path == "minimal", V, K, 1.0, 1.0, 1.0)
    held = []
    for step in range(400):
        if held and rng.random() < 0.45:
            p, t = held.pop(int(rng.integers(len(held))))
            remove_token(p, t, prior.variant, prior.minimal, *local.arrays())
            slow.N[(int(local.pair_prev[p]), t, int(local.pair_word[p]))] -= 1
        else:
            p, t = int(rng.integers(pairs.shape[0])), int(rng.integers(K))
            add_token(p, t, prior.variant, prior.minimal, *local.arrays())
            slow.N[(int(local.pair_prev[p]), t, int(local.pair_word[p]))] += 1
            held.append((p, t))
        assert_levels(local, slow, variant, V)
    keys = np.array(sorted(((int(local.pair_keys[p]) * K + t) for p, t in set(held))), dtype=np.int64)
    counts = np.array([Counter((int(local.pair_keys[p]) * K + t) for p, t in held)[k] for k in keys])
    derived = upper_counts(keys, counts, V, K, prior.variant, prior.minimal)
    np.testing.assert_array_equal(derived["top"], local.top)
    assert derived["toptot"][0] == local.toptot[0]
    if variant in ("h2a", "h2b"):
        np.testing.assert_array_equal(derived["mid"], local.mid)
    if variant == "h3":
        np.testing.assert_array_equal(derived["mid_ctx"], local.mid_ctx)


@pytest.mark.parametrize("variant,path", [("2", None)] + HIERARCHICAL)
def test_a_sweep_leaves_the_counts_of_its_new_assignments(variant, path):
    V, K = 6, 4
    rng = np.random.default_rng(13)
    block = tiny_block(4, V, docs=5, length=20)
    model = TopicLM(K, V)
    hyper = model.initial_hyper(prior_variant=variant, path=path)
    z = rng.integers(0, K, block.n_tokens).astype(np.int32)
    keys = pair_keys(block, V)
    table = recount(model, block, z)["bigram_topics"]
    prior, local = model._local(np.unique(keys), table.keys, table.counts[:, 0].astype(np.int64), hyper)
    before = z.copy()
    for seed in range(3):
        tlm_sweep(block.token_ptr(), local.pair_of(keys), z, np.asarray(hyper["alpha"]), *prior.scalars(),
                  *local.arrays(), seed)
    assert not np.array_equal(before, z)
    table = recount(model, block, z)["bigram_topics"]
    _, fresh = model._local(np.unique(keys), table.keys, table.counts[:, 0].astype(np.int64), hyper)
    for name in ("pair_counts", "ctx_totals", "mid", "mid_t", "midp", "mid_ctx", "top", "toptot"):
        np.testing.assert_array_equal(getattr(local, name), getattr(fresh, name), err_msg=name)


def test_one_topic_is_bigram_lm():
    """K = 1, prior 1: the M-step is bigram-lm's fixed point, the evidence its (3.5), and the left-to-right
    held-out score its exact predictive (3.6), whatever the particles."""
    V = 8
    docs, _, _ = sample_bigram_lm(n_docs=12, length=25, vocab_size=V, beta=6.0, seed=3)
    train = SegmentedBlock.from_segments(docs[:9])
    test = SegmentedBlock.from_segments(docs[9:])
    model = TopicLM(1, V)
    hyper = model.initial_hyper(prior_variant="1", beta=float(V))
    z = np.zeros(train.n_tokens, np.int32)
    tables = recount(model, train, z)
    _, fitted, _ = model.global_step(tables, hyper, np.zeros(0), 0)
    keys, counts = np.unique(bigram_keys(train, V), return_counts=True)
    expected, _ = fixed_point(keys, counts, V, np.ones(V), max_steps=1000)
    np.testing.assert_allclose(fitted["beta_n"], expected, rtol=1e-12)
    assert model.loglik(tables, {}, fitted) == pytest.approx(bigram_log_evidence(keys, counts, V, expected),
                                                             rel=1e-12)
    model._bind(tables["bigram_topics"].keys, tables["bigram_topics"].counts[:, 0], fitted)
    lm = BigramLM(1, V)
    lm._bind(keys, counts, expected)
    mine = model.heldout_loglik(test, fitted, None, HeldoutSchedule.default(10, 3), 0, 0)
    np.testing.assert_allclose(mine, lm.heldout_loglik(test, {}, None, None, 0, 0), rtol=1e-12)


def test_without_previous_words_prior_2_is_lda():
    """Segments of one token: every context is the start, and prior 2 with symmetric beta n_t = b is LDA: the
    conditional is (4.3), (n_dk + alpha_k)(n_kw + b) / (n_k + V b)."""
    V, K, b = 6, 3, 0.3
    rng = np.random.default_rng(17)
    block = SegmentedBlock.from_segments([(f"d{d}", [[int(w)] for w in rng.integers(0, V, 7)]) for d in range(4)])
    model = TopicLM(K, V)
    hyper = model.initial_hyper(alpha=rng.uniform(0.2, 1.0, K), prior_variant="2", beta=V * b)
    z = rng.integers(0, K, block.n_tokens).astype(np.int32)
    alpha = np.asarray(hyper["alpha"])
    ptr = block.token_ptr()
    for n in range(block.n_tokens):
        mask = np.arange(block.n_tokens) != n
        d = int(np.searchsorted(ptr, n, side="right") - 1)
        in_doc = mask & (np.arange(block.n_tokens) >= ptr[d]) & (np.arange(block.n_tokens) < ptr[d + 1])
        ndk = np.bincount(z[in_doc], minlength=K)
        nkw = np.bincount(z[mask & (block.words == block.words[n])], minlength=K)
        nk = np.bincount(z[mask], minlength=K)
        lda = (ndk + alpha) * (nkw + b) / (nk + V * b)
        np.testing.assert_allclose(kernel_conditional(model, block, z, hyper, n), lda / lda.sum(), rtol=1e-12)


def sample_tlm(n_docs, length, V, K, alpha, beta, seed):
    """Documents drawn from the TLM with prior 2: n_t ~ Dir(1), every (w', t) context's phi ~ Dir(beta n_t), so
    every topic follows every word, each with its own next words (topics over disjoint words would be no more
    than the previous word says: one topic explains them as well); returns (docs, z, phi (V + 1, K, V))."""
    rng = np.random.default_rng(seed)
    n = rng.dirichlet(np.ones(V), size=K)
    phi = np.stack([[rng.dirichlet(beta * n[t]) for t in range(K)] for _ in range(V + 1)])
    docs, zs = [], []
    for d in range(n_docs):
        theta = rng.dirichlet(np.full(K, alpha))
        words, previous = [], V
        for _ in range(length):
            t = int(rng.choice(K, p=theta))
            previous = int(rng.choice(V, p=phi[previous, t]))
            words.append(previous)
            zs.append(t)
        docs.append((f"d{d:04d}", [words]))
    return docs, np.array(zs), phi


def run_chain(model, block, hyper, iterations, seed):
    """The engine's loop in one process: sweep, recount, the driver's global step."""
    z = model.initial_state(block, hyper, seed)["z"]
    tables = recount(model, block, z)
    for it in range(1, iterations + 1):
        model.sweep_tables(block, {"z": z}, hyper, {k: v.copy() for k, v in tables.items()}, model.derive(tables),
                           seed * 1000 + it)
        tables = recount(model, block, z)
        tables, hyper, _ = model.global_step(tables, hyper, np.zeros(0), seed * 1000 + it)
    return z, tables, hyper


@pytest.mark.parametrize("variant,path", [("2", None), ("h2a", "minimal")])
def test_recovers_planted_bigram_topics(variant, path):
    V, K = 12, 2
    docs, truth, phi = sample_tlm(n_docs=60, length=40, V=V, K=K, alpha=0.1, beta=2.0, seed=23)
    block = SegmentedBlock.from_segments(docs)
    order = np.argsort([d for d, _ in docs])          # from_segments sorts the documents by id (already sorted)
    assert np.array_equal(order, np.arange(len(docs)))
    model = TopicLM(K, V)
    z, tables, hyper = run_chain(model, block, model.initial_hyper(prior_variant=variant, path=path), 40, 1)
    accuracy = max(np.mean(np.asarray(perm)[z] == truth) for perm in itertools.permutations(range(K)))
    assert accuracy > 0.95
    assert np.all((np.asarray(hyper["alpha"]) > 0.04) & (np.asarray(hyper["alpha"]) < 0.25))    # planted 0.1
    if variant == "2":
        assert 1.4 < hyper["beta"] < 3.0                                                          # planted 2
    # the bigram distributions of the well-used contexts, against the planted phi
    table = tables["bigram_topics"]
    perm = max(itertools.permutations(range(K)), key=lambda p: np.mean(np.asarray(p)[z] == truth))
    keys = pair_keys(block, V)
    _, local = model._local(np.unique(keys), table.keys, table.counts[:, 0].astype(np.int64), hyper)
    errors = []
    for previous in range(V + 1):
        for t in range(K):
            rows = local.pair_prev == previous
            total = local.pair_counts[rows, t].sum()
            if total >= 40:
                estimate = np.zeros(V)
                estimate[local.pair_word[rows]] = local.pair_counts[rows, t] / total
                errors.append(0.5 * np.abs(estimate - phi[previous, perm[t]]).sum())
    assert len(errors) >= 6 and np.mean(errors) < 0.2


class SlowDirichlet(SlowHierarchy):
    """The non-hierarchical predictive (3.29) with the bottom counts of :class:`SlowHierarchy`."""

    def __init__(self, V, K, bn):
        super().__init__("none", False, V, K, 0.0, 0.0, 0.0)
        self.bn = bn

    def prob(self, previous, t, w):
        context = sum(c for (a, b, _), c in self.N.items() if a == previous and b == t)
        return (self.N[(previous, t, w)] + self.bn[t, w]) / (context + self.bn[t].sum())


@pytest.mark.parametrize("variant,path", [("2", None), ("h2b", "minimal"), ("h3", "maximal")])
def test_left_to_right_importance_estimate_converges_to_the_enumerated_probability(variant, path):
    """The hook's importance column (the mean of the particles' products, unbiased) against p(w_d | training) by
    enumeration of the document's topics, with its earlier tokens in the counts; K = 1 is the same exactly."""
    from inference.left_to_right import IMPORTANCE, LEFT_TO_RIGHT, LeftToRight
    V, K = 3, 2
    rng = np.random.default_rng(29)
    train = tiny_block(8, V, docs=4, length=6)
    test = SegmentedBlock.from_segments([("x", [[0, 2, 2], [1]])])
    model = TopicLM(K, V)
    hyper = hier_hyper(model, variant, path, rng) if path else model.initial_hyper(
        alpha=rng.uniform(0.3, 1.5, K), prior_variant="2")
    bn = rng.uniform(0.2, 1.0, (K, V))
    if not path:
        hyper["beta_n"] = bn.tolist()
    z = rng.integers(0, K, train.n_tokens).astype(np.int32)
    table = recount(model, train, z)["bigram_topics"]
    model._bind(table.keys, table.counts[:, 0], hyper)
    alpha_m = np.asarray(hyper["alpha"])
    toks = tokens(test, V)
    logs = []
    for zs in itertools.product(range(K), repeat=len(toks)):
        slow = SlowDirichlet(V, K, bn) if not path else SlowHierarchy(
            variant, path == "minimal", V, K, hyper["beta"], hyper["beta0"], hyper.get("beta1", 1.0))
        for (previous, w, _), t in zip(tokens(train, V), z):
            slow.N[(previous, int(t), w)] += 1
        value, ndk = 0.0, np.zeros(K)
        for n, ((previous, w, _), t) in enumerate(zip(toks, zs)):
            value += np.log((ndk[t] + alpha_m[t]) / (n + alpha_m.sum())) + np.log(slow.prob(previous, t, w))
            slow.N[(previous, t, w)] += 1
            ndk[t] += 1
        logs.append(value)
    exact = np.log(np.exp(logs).sum())
    rows = model.left_to_right(test, hyper, None, LeftToRight(4000, True, 3)).per_document
    assert rows[0, IMPORTANCE] == pytest.approx(exact, abs=0.02)
    assert rows[0, 2:].tolist() == [4, 0]
    again = model.left_to_right(test, hyper, None, LeftToRight(4000, True, 3)).per_document
    np.testing.assert_array_equal(rows, again)
    off = model.left_to_right(test, hyper, None, LeftToRight(4000, False, 3)).per_document
    assert off[0, IMPORTANCE] == pytest.approx(exact, abs=0.02) and off[0, LEFT_TO_RIGHT] != rows[0, LEFT_TO_RIGHT]


def test_left_to_right_skips_words_outside_the_vocabulary():
    from inference.left_to_right import LeftToRight
    V, K = 4, 2
    model = TopicLM(K, V)
    hyper = model.initial_hyper(prior_variant="h1")
    train = tiny_block(9, V)
    table = recount(model, train, np.zeros(train.n_tokens, np.int32))["bigram_topics"]
    model._bind(table.keys, table.counts[:, 0], hyper)
    with_oov = SegmentedBlock.from_segments([("a", [[1, 7, 2, 3]]), ("b", [[9]]), ("c", [[0, 1]])])
    without = SegmentedBlock.from_segments([("a", [[1, 2, 3]]), ("b", [[]]), ("c", [[0, 1]])])
    settings = LeftToRight(5, True, 1)
    rows = model.left_to_right(with_oov, hyper, None, settings).per_document
    np.testing.assert_array_equal(rows[:, 3], [1, 1, 0])
    np.testing.assert_array_equal(rows[:, :3], model.left_to_right(without, hyper, None, settings).per_document[:, :3])
