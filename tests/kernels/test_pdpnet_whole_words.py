"""Whole-network mode's held-out word side (issue 28, 3; :mod:`drivers.models.pdp_network.whole_words`): the
shared word vectors frozen at the trained state's posterior means (saved and found again by (family, key)), the
document's own word vectors seated per particle. Left to right against the sequential process enumerated (every
z and seating) on tiny specs trained in process: a burst side burst[topic, document] over a Pitman-Yor phi[topic]
and a [topic, previous_word] side; the particles' products are unbiased for p(w | the frozen trained state), and
a wrong seating (join weight c instead of c - a t) is told apart. No Spark."""
from __future__ import annotations

import numpy as np
import pytest

from drivers.models.pdp_network import whole_heldout, whole_words
from drivers.models.pdp_network.left_to_right_scores import document_particles
from drivers.models.pdp_network.whole_network import NetworkModel
from inference.gibbs.model import SegmentedBlock
from inference.gibbs.tables import CountTable, merge
from inference.left_to_right import LeftToRight
from inference.pdpnet.sampler import NetworkSampler

V, K = 4, 2
THETA = {"index": ["document"], "over": "topic", "dirichlet": 0.6}
BURST = {"name": "burst-whole",
         "nodes": {"theta": THETA, "base": {"index": ["corpus"], "over": "word", "uniform": True},
                   "phi": {"index": ["topic"], "over": "word", "pyp": {"a": 0.2, "b": 2.0},
                           "parents": [{"node": "base", "index": ["corpus"]}]},
                   "burst": {"index": ["topic", "document"], "over": "word", "pyp": {"a": 0.3, "b": 1.5},
                             "parents": [{"node": "phi", "index": ["topic"]}]}},
         "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "burst", "index": ["topic", "document"]}}
BIGRAM = {"name": "bigram-whole",
          "nodes": {"theta": THETA, "psi": {"index": ["topic"], "over": "word", "dirichlet": 0.5},
                    "phi": {"index": ["topic", "previous_word"], "over": "word", "pyp": {"a": 0.3, "b": 1.0},
                            "parents": [{"node": "psi", "index": ["topic"]}]}},
          "topic": {"node": "theta", "index": ["document"]},
          "word": {"node": "phi", "index": ["topic", "previous_word"]}}
TEST_DOC = [0, 2, 0, 0]


def trained(spec, sweeps=8, cls=NetworkModel):
    """A model (``cls``) in whole-network mode whose trained state is an in-process sampler's after ``sweeps`` sweeps on a
    small corpus (the tables as the engine publishes them), and that sampler."""
    rng = np.random.default_rng(3)
    docs = [(f"d{i}", [list(rng.integers(0, V, rng.integers(4, 9)))]) for i in range(10)]
    block = SegmentedBlock.from_segments(docs)
    model = cls(K, V)
    model._raw, model._whole = spec, "test"
    net = model.whole_net(block, spec)
    sampler = NetworkSampler(net, seed=5)
    for _ in range(sweeps):
        sampler.sweep()
    cnt = {"n": sampler.n, "tc": sampler.tc, "tp": sampler.tp}
    topic = whole_heldout.shared_contribution(net, cnt, sampler.s)
    model._trained_whole = whole_heldout.trained_of_tables({
        name: merge(CountTable(name, whole_heldout.ROWS, K, "keyed"), [topic[name]]) for name in topic})
    words = merge(CountTable(whole_words.TABLE, whole_words.rows(V), 1, "keyed"),
                  [whole_words.contribution(net, cnt, sampler.s)])
    model._trained_words = (np.asarray(words.keys, np.int64), np.asarray(words.counts, np.int64))
    hyper = {"network": spec, "beta": 0.01, "a_values": dict(zip(net.a_names, map(float, sampler.avals))),
             "b_values": dict(zip(net.b_names, map(float, sampler.bvals)))}
    return model, hyper, net, sampler


def vector_mean(net, sampler, family: str, key: int, parent_mean: np.ndarray) -> np.ndarray:
    """A trained Pitman-Yor vector's posterior mean over one parent, from the sampler's cells (an absent vector:
    its parent's)."""
    j = np.flatnonzero((net.family == net.spec.order.index(family)) & (net.key == key))
    if len(j) == 0:
        return parent_mean
    j = int(j[0])
    cells = slice(net.off[j], net.off[j + 1])
    c, t = (sampler.n + sampler.tc)[cells], sampler.tp[cells]
    a, b = sampler.avals[net.a_of[j]], sampler.bvals[net.b_of[j]]
    return ((c - a * t) + (b + a * t.sum()) * parent_mean) / (b + c.sum())


def burst_exact(words, ctx, m, alpha, a, b, gamma=(1.0,), wrong=None) -> float:
    """p(w) of the sequential process enumerated: z_n ~ (alpha + c_k) / (K alpha + n), then w_n at the burst vector
    (k, its context ``ctx[n]``): join a table of size s holding w_n (weight s - a; ``wrong="join"``: s) or open one sent up parent e ((b + a T) rho_e m_e,k(w_n), rho_e = (gamma_e + S_e) /
    (sum gamma + T); ``wrong="rho"``: gamma_e / sum gamma), over b + C."""

    def rec(i, counts, tables):
        if i == len(words):
            return 1.0
        w, total = words[i], 0.0
        for k in range(K):
            pk = (alpha + counts[k]) / (K * alpha + i)
            here = tables.get((ctx[i], k), ())
            C, T = sum(s for _, s, _ in here), len(here)
            den, lead = b + C, b + a * T
            nxt = list(counts)
            nxt[k] += 1
            for q, (word, size, e) in enumerate(here):
                if word == w:
                    seated = {**tables, (ctx[i], k): here[:q] + ((word, size + 1, e),) + here[q + 1:]}
                    total += pk * (size - (0.0 if wrong == "join" else a)) / den * rec(i + 1, nxt, seated)
            for e in range(len(gamma)):
                S = 0 if wrong == "rho" else sum(1 for tb in here if tb[2] == e)
                rho = (gamma[e] + S) / (sum(gamma) + (0 if wrong == "rho" else T))
                total += pk * lead * rho * m[e][k, w] / den * rec(i + 1, nxt, {**tables,
                                                                              (ctx[i], k): here + ((w, 1, e),)})
        return total

    return rec(0, [0] * K, {})


BURST_SEGMENT = dict(BURST, nodes=dict(BURST["nodes"], burst=dict(BURST["nodes"]["burst"], index=["topic", "segment"])),
                     word={"node": "burst", "index": ["topic", "segment"]})


@pytest.mark.parametrize("spec, segments", [(BURST, [TEST_DOC]), (BURST_SEGMENT, [TEST_DOC[:2], TEST_DOC[2:]])],
                         ids=["document", "segment"])
@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_burst_left_to_right_is_unbiased_for_the_frozen_trained_state(resample, spec, segments):
    """Burst vectors per (topic, document), or per (topic, segment): the segments the contexts."""
    model, hyper, net, sampler = trained(spec)
    assert model.word_predictive and whole_words.own_shape(net.spec) == "one"
    m = np.stack([vector_mean(net, sampler, "phi", k, np.full(V, 1.0 / V)) for k in range(K)])
    doc = SegmentedBlock.from_segments([("t0", segments)])
    ctx = [0] * len(TEST_DOC) if spec is BURST else [0] * len(segments[0]) + [1] * len(segments[1])
    frozen = whole_words.frozen_net(model, doc, hyper)          # the trained means, found by (family, key)
    phi = np.flatnonzero(frozen.family == frozen.spec.order.index("phi"))
    np.testing.assert_allclose(frozen.means[frozen.off[phi][:, None] + np.arange(V)], m, rtol=1e-12)
    hooks = whole_heldout.word_hooks(model, hyper)
    probs, scale = document_particles(doc, np.ones((V, K)), LeftToRight(particles=20000, resample=resample, seed=2),
                                      lambda d: whole_heldout.document_start(model, d, hyper), hooks["words_of"])
    j = net.spec.order.index("burst")
    a, b = (float(v[o[np.flatnonzero(net.family == j)[0]]]) for v, o in ((sampler.avals, net.a_of),
                                                                          (sampler.bvals, net.b_of)))
    exact, wrong = (burst_exact(TEST_DOC, ctx, [m], 0.6, a, b, wrong=w) for w in (None, "join"))
    weights = np.exp(np.log(probs * scale).sum(axis=1)) / exact
    se = weights.std() / np.sqrt(len(weights))
    assert abs(weights.mean() - 1.0) < 4 * se, (weights.mean(), se)
    assert abs(weights.mean() - wrong / exact) > 8 * se, (wrong / exact, se)      # the test tells it apart
    first = (np.array([0.5, 0.5]) * m[:, TEST_DOC[0]]).sum()     # the empty burst vectors: p_1 = sum_k P(k) m_k
    np.testing.assert_allclose(probs[:, 0] * scale[0], first, rtol=1e-9)


def test_a_previous_word_side_scores_its_own_vectors_frozen():
    """[topic, previous_word]: every token's row is the trained mean of ITS vector phi[k, w'] (not the topics'
    token-weighted average, which topic_word.npy holds); the particles are unbiased for sum_z p(z) prod m."""
    import itertools

    model, hyper, net, sampler = trained(BIGRAM)
    assert model.word_predictive and whole_words.own_shape(net.spec) is None
    doc = SegmentedBlock.from_segments([("t0", [TEST_DOC])])
    frozen = whole_words.frozen_net(model, doc, hyper)
    rows = np.zeros((len(TEST_DOC), K))
    for k in range(K):
        jp = int(np.flatnonzero((net.family == net.spec.order.index("psi")) & (net.key == k))[0])
        cp = (sampler.n + sampler.tc)[net.off[jp]:net.off[jp + 1]]
        psi = (0.5 + cp) / (0.5 * V + cp.sum())
        for i, w in enumerate(TEST_DOC):
            key = int(frozen.key[frozen.word_inst[i, k]])
            rows[i, k] = vector_mean(net, sampler, "phi", key, psi)[w]
    np.testing.assert_allclose(whole_words.prior_rows(model, doc, hyper), rows, rtol=1e-9)
    topics = model.topics_of(net, {k: getattr(sampler, k) for k in ("n", "tc", "tp", "Nn", "TC", "TP", "Se")},
                             sampler.avals, sampler.bvals)
    assert np.abs(topics[:, TEST_DOC].T - rows).max() > 0.01      # the posterior means' rows were not these
    hooks = whole_heldout.word_hooks(model, hyper)
    probs, scale = document_particles(doc, np.ones((V, K)), LeftToRight(particles=20000, seed=4),
                                      lambda d: whole_heldout.document_start(model, d, hyper),
                                      rows_of=hooks["rows_of"])
    exact = 0.0
    for z in itertools.product(range(K), repeat=len(TEST_DOC)):
        p, counts = 1.0, [0] * K
        for i, k in enumerate(z):
            p *= (0.6 + counts[k]) / (K * 0.6 + i) * rows[i, k]
            counts[k] += 1
        exact += p
    weights = np.exp(np.log(probs * scale).sum(axis=1)) / exact
    assert abs(weights.mean() - 1.0) < 4 * weights.std() / np.sqrt(len(weights)), weights.mean()


TOPIC = {"name": "topic-whole", "nodes": {"theta": THETA, "base": BURST["nodes"]["base"], "phi": BURST["nodes"]["phi"]},
         "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "phi", "index": ["topic"]}}


def test_completion_and_left_to_right_differ_from_the_posterior_means_for_burst_and_equal_them_for_topic():
    """Document completion (the held-out block's sweep samples its own burst vectors, the scored tokens read
    them) and left to right move away from the topics' posterior means for the burst spec; for a word side
    indexed by [topic] alone the network's predictive IS the posterior means: the same numbers (the old path and
    the new one forced give the same chain and scores)."""
    from inference.gibbs.heldout import HeldoutSchedule, frozen_proportions

    rng = np.random.default_rng(11)
    test = SegmentedBlock.from_segments([(f"t{i}", [[int(w) for w in rng.integers(0, V, 8)]]) for i in range(4)])
    schedule = HeldoutSchedule(iterations=6, burn_in=2, lag=2, samples=2, observed=0.5)
    settings = LeftToRight(particles=50, seed=3)
    got = {}
    for name, spec in (("burst", BURST), ("topic", TOPIC)):
        model, hyper, net, sampler = trained(spec, cls=NetworkModel if name == "burst" else Forced)
        phi_vk = model.topics_of(net, {k: getattr(sampler, k) for k in ("n", "tc", "tp", "Nn", "TC", "TP", "Se")},
                                 sampler.avals, sampler.bvals).T
        hooks = whole_heldout.word_hooks(model, hyper)
        assert ("words_of" in hooks) == (name == "burst") and ("rows_of" in hooks) == (name == "topic")
        new = (model.heldout_loglik(test, hyper, phi_vk, schedule, 7, 0),
               model.left_to_right(test, hyper, phi_vk, settings).per_document)
        model = trained(spec)[0]
        model._trained_words = None                        # the posterior means' path (a session-25 directory)
        assert not model.word_predictive
        got[name] = new, (model.heldout_loglik(test, hyper, phi_vk, schedule, 7, 0),
                          model.left_to_right(test, hyper, phi_vk, settings).per_document)
    model, hyper, net, sampler = trained(BURST)                # infer: the block's sweep with its word side
    acc = frozen_proportions(model, test, hyper, np.ones((V, K)), schedule, 7, 0)
    np.testing.assert_allclose(acc["doc"].sum(axis=1), acc["samples"][0], rtol=1e-9)
    (new_c, new_l), (old_c, old_l) = got["burst"]
    assert abs(new_c[0] - old_c[0]) > 0.5 and np.abs(new_l[:, 0] - old_l[:, 0]).max() > 0.1, (new_c, old_c)
    (new_c, new_l), (old_c, old_l) = got["topic"]
    np.testing.assert_allclose(new_c, old_c, rtol=1e-9)
    np.testing.assert_allclose(new_l, old_l, rtol=1e-9)


class Forced(NetworkModel):
    """The word predictive's path forced on a [topic] word side (which the model serves by the posterior means)."""
    word_predictive = True


def test_the_trained_word_side_is_saved_and_read_back_and_an_old_directory_is_scored_by_the_means():
    """model.json's arrays carry the word side's trained counts (whole_word_*.npy); a directory without them (session
    25) is read with the topics' posterior means."""
    from drivers.models.pdp_network.whole_network import WHOLE

    model, hyper, _, _ = trained(BURST)
    model._trained_whole = {name: (keys, counts) for name, (keys, counts) in model._trained_whole.items()}
    arrays = model.saved_arrays()
    assert set(whole_words.ARRAYS) <= set(arrays) and set(model.array_files) == set(arrays)
    meta = {"hyper": dict(hyper, **{WHOLE: "test"})}
    for files, predictive in ((arrays, True), ({k: v for k, v in arrays.items() if k not in whole_words.ARRAYS}, False)):
        back = NetworkModel(K, V)
        back._whole_files, back._whole_word_files = True, predictive
        assert set(back.array_files) == set(files)
        back.bind_arrays(files, meta)
        assert back.word_predictive == predictive
        if predictive:
            for a, b in zip(back._trained_words, model._trained_words):
                np.testing.assert_array_equal(a, b)


def test_the_word_table_is_published_only_where_the_held_out_path_reads_it_and_old_directories_score_the_same():
    """A word side indexed by [topic] alone (scored by the topics' posterior means) declares no ``whole_words``
    table and saves no ``whole_word_*.npy``; burst vectors do. A [topic] directory written before (with the files)
    loads them and scores as one without: document completion and left to right equal."""
    from drivers.models.pdp_network.whole_network import WHOLE
    from inference.gibbs.heldout import HeldoutSchedule

    burst, topic = trained(BURST)[0], trained(TOPIC)[0]
    assert burst.publishes_words and whole_words.TABLE in {t.name for t in burst.count_tables()}
    assert not topic.publishes_words and whole_words.TABLE not in {t.name for t in topic.count_tables()}
    model, hyper, net, sampler = trained(TOPIC)
    old = model.saved_arrays()                       # the files a training before this change saved
    assert set(whole_words.ARRAYS) <= set(old)
    model._trained_words = None                      # bind_result of tables without whole_words
    assert set(model.array_files) == set(model.saved_arrays()) and not set(whole_words.ARRAYS) & set(model.array_files)
    phi_vk = model.topics_of(net, {k: getattr(sampler, k) for k in ("n", "tc", "tp", "Nn", "TC", "TP", "Se")},
                             sampler.avals, sampler.bvals).T
    rng = np.random.default_rng(11)
    test = SegmentedBlock.from_segments([(f"t{i}", [[int(w) for w in rng.integers(0, V, 8)]]) for i in range(4)])
    schedule = HeldoutSchedule(iterations=6, burn_in=2, lag=2, samples=2, observed=0.5)
    meta = {"hyper": dict(hyper, **{WHOLE: "test"})}
    scores = []
    for files in (old, {k: v for k, v in old.items() if k not in whole_words.ARRAYS}):
        back = NetworkModel(K, V)
        back._whole_files, back._whole_word_files = True, whole_words.ARRAYS[0] in files
        assert set(back.array_files) == set(files)
        back.bind_arrays(files, meta)
        assert not back.word_predictive
        scores.append((back.heldout_loglik(test, meta["hyper"], phi_vk, schedule, 7, 0),
                       back.left_to_right(test, meta["hyper"], phi_vk, LeftToRight(particles=20, seed=3)).per_document))
    for a, b in zip(*scores):
        np.testing.assert_array_equal(a, b)


ROOT = {"index": ["corpus"], "over": "word", "dirichlet": 0.5}
TWO = {"phi": {"node": "phi", "index": ["topic"], "gamma": 0.8}, "root": {"node": "root", "index": ["corpus"],
                                                                       "gamma": 1.3}}
BURST_TWO = dict(BURST, nodes=dict(BURST["nodes"], root=ROOT, burst=dict(BURST["nodes"]["burst"],
                                                                          parents=list(TWO.values()))))


@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_own_vectors_over_two_frozen_parents_mixed_by_rho_are_unbiased(resample):
    """burst[topic, document] over phi[topic] and the corpus root (rho ~ Dirichlet(0.8, 1.3) integrated out): the
    particles (own_word_particles) against the process enumerated; rho without the own tables' S_e is told apart."""
    model, hyper, net, sampler = trained(BURST_TWO)
    assert model.word_predictive and whole_words.own_shape(net.spec) == "several"
    phi = np.stack([vector_mean(net, sampler, "phi", k, np.full(V, 1.0 / V)) for k in range(K)])
    jr = int(np.flatnonzero(net.family == net.spec.order.index("root"))[0])
    cr = (sampler.n + sampler.tc)[net.off[jr]:net.off[jr + 1]]
    root = np.tile((0.5 + cr) / (0.5 * V + cr.sum()), (K, 1))
    doc = SegmentedBlock.from_segments([("t0", [TEST_DOC])])
    hooks = whole_heldout.word_hooks(model, hyper)
    probs, scale = document_particles(doc, np.ones((V, K)), LeftToRight(particles=20000, resample=resample, seed=2),
                                      lambda d: whole_heldout.document_start(model, d, hyper), hooks["words_of"],
                                      word_kernel=hooks["word_kernel"])
    jb = int(np.flatnonzero(net.family == net.spec.order.index("burst"))[0])
    a, b = sampler.avals[net.a_of[jb]], sampler.bvals[net.b_of[jb]]
    exact, wrong = (burst_exact(TEST_DOC, [0] * len(TEST_DOC), [phi, root], 0.6, a, b, (0.8, 1.3), wrong=w)
                    for w in (None, "rho"))
    weights = np.exp(np.log(probs * scale).sum(axis=1)) / exact
    se = weights.std() / np.sqrt(len(weights))
    assert abs(weights.mean() - 1.0) < 4 * se, (weights.mean(), se)
    assert abs(weights.mean() - wrong / exact) > 4 * se, (wrong / exact, se)


def own_exact(words, alpha, vectors, word_node, wrong=False) -> float:
    """p(w) of the sequential process enumerated for own vectors over own and frozen parents: z_n ~ (alpha + c_k) /
    (K alpha + n), then w_n at the token's vector (``word_node``, its key at token n, k): join a table of size s
    holding w_n (weight s - a; ``wrong``: s at the token's vector) or open one sent up edge e ((b + a T) rho_e x the
    parent's predictive, rho_e = (gamma_e + S_e) / (sum gamma + T)), its customer seated at an own parent the same
    way, over b + C. ``vectors[name]``: (a, b, keys per token, [(gamma_e, an own parent's name or frozen (K, V)
    means)])."""

    def seat(tables, name, i, k, w):
        """[(probability, tables)] of seating a customer of w at ``name``'s vector of token i at topic k."""
        a, b, keys, parents = vectors[name]
        key = (name, keys[i], k)
        here = tables.get(key, ())
        C, T, gsum = sum(s for _, s, _ in here), len(here), sum(g for g, _ in parents)
        out = []
        for q, (word, size, e) in enumerate(here):
            if word == w:
                sub = 0.0 if wrong and name == word_node else a
                out.append(((size - sub) / (b + C), {**tables, key: here[:q] + ((word, size + 1, e),) + here[q + 1:]}))
        for e, (g, parent) in enumerate(parents):
            lead = (b + a * T) * (g + sum(1 for tb in here if tb[2] == e)) / (gsum + T) / (b + C)
            above = seat(tables, parent, i, k, w) if isinstance(parent, str) else [(parent[k, w], tables)]
            out += [(lead * p, {**tb, key: tb.get(key, ()) + ((w, 1, e),)}) for p, tb in above]
        return out

    def rec(i, counts, tables):
        if i == len(words):
            return 1.0
        total = 0.0
        for k in range(K):
            nxt = list(counts)
            nxt[k] += 1
            for p, tb in seat(tables, word_node, i, k, words[i]):
                total += (alpha + counts[k]) / (K * alpha + i) * p * rec(i + 1, nxt, tb)
        return total

    return rec(0, [0] * K, {})


DOC_LEVEL = {"index": ["topic", "document"], "over": "word", "pyp": {"a": 0.4, "b": 0.8},
             "parents": [{"node": "phi", "index": ["topic"]}]}
BURST_CHAIN = dict(BURST, nodes=dict(BURST["nodes"], bdoc=DOC_LEVEL, burst=dict(
    BURST["nodes"]["burst"], index=["topic", "segment"], parents=[{"node": "bdoc", "index": ["topic", "document"]}])),
    word={"node": "burst", "index": ["topic", "segment"]})
CHAIN_TWO = dict(BURST_CHAIN, nodes=dict(BURST_CHAIN["nodes"], root=ROOT, bdoc=dict(DOC_LEVEL,
                                                                                   parents=list(TWO.values()))))
GRAPH = dict(BURST_CHAIN, nodes=dict(BURST_CHAIN["nodes"], burst=dict(BURST_CHAIN["nodes"]["burst"], parents=[
    {"node": "bdoc", "index": ["topic", "document"], "gamma": 0.8},
    {"node": "phi", "index": ["topic"], "gamma": 1.3}])))


@pytest.mark.parametrize("spec, shape", [(BURST_CHAIN, "chain"), (CHAIN_TWO, "chain"), (GRAPH, "graph")],
                         ids=["chain", "chain-two-parents", "own-and-shared-parents"])
@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_own_vectors_over_own_parents_are_seated_level_by_level_and_unbiased(resample, spec, shape):
    """burst[topic, segment] over bdoc[topic, document] over the frozen phi[topic] (or phi[topic] and the corpus
    root mixed by rho; or burst over bdoc and phi mixed by rho), two segments: the particles (own_word_particles up
    the own vectors) against the process enumerated; a join weight s (not s - a) is told apart."""
    model, hyper, net, sampler = trained(spec)
    assert model.word_predictive and whole_words.own_shape(net.spec) == shape
    phi = np.stack([vector_mean(net, sampler, "phi", k, np.full(V, 1.0 / V)) for k in range(K)])
    doc = SegmentedBlock.from_segments([("t0", [TEST_DOC[:2], TEST_DOC[2:]])])
    hooks = whole_heldout.word_hooks(model, hyper)
    assert "seated level by level" in hooks["protocol"]
    probs, scale = document_particles(doc, np.ones((V, K)), LeftToRight(particles=20000, resample=resample, seed=2),
                                      lambda d: whole_heldout.document_start(model, d, hyper), hooks["words_of"],
                                      word_kernel=hooks["word_kernel"])
    ab = {}
    for name in ("burst", "bdoc"):
        j = int(np.flatnonzero(net.family == net.spec.order.index(name))[0])
        ab[name] = (sampler.avals[net.a_of[j]], sampler.bvals[net.b_of[j]])
    above = [(1.0, phi)]
    if spec is CHAIN_TWO:
        jr = int(np.flatnonzero(net.family == net.spec.order.index("root"))[0])
        cr = (sampler.n + sampler.tc)[net.off[jr]:net.off[jr + 1]]
        above = [(0.8, phi), (1.3, np.tile((0.5 + cr) / (0.5 * V + cr.sum()), (K, 1)))]
    ups = [(0.8, "bdoc"), (1.3, phi)] if spec is GRAPH else [(1.0, "bdoc")]
    vectors = {"burst": ab["burst"] + ([0, 0, 1, 1], ups), "bdoc": ab["bdoc"] + ([0] * 4, above)}
    exact, wrong = (own_exact(TEST_DOC, 0.6, vectors, "burst", wrong=w) for w in (False, True))
    weights = np.exp(np.log(probs * scale).sum(axis=1)) / exact
    se = weights.std() / np.sqrt(len(weights))
    assert abs(weights.mean() - 1.0) < 4 * se, (weights.mean(), se)
    assert abs(weights.mean() - wrong / exact) > 4 * se, (wrong / exact, se)
    first = 0.5 * sum(g / sum(g for g, _ in above) * m[:, TEST_DOC[0]] for g, m in above).sum()     # empty vectors
    np.testing.assert_allclose(probs[:, 0] * scale[0], first, rtol=1e-9)


DCM = {"name": "dcm-whole",
       "nodes": {"theta": THETA, "dcm": {"index": ["topic", "document"], "over": "word", "dirichlet": 0.3}},
       "topic": {"node": "theta", "index": ["document"]}, "word": {"node": "dcm", "index": ["topic", "document"]}}


def dcm_exact(words, alpha, beta) -> float:
    """p(w) of DCMLDA's document enumerated over z: z_n ~ (alpha + c_k) / (K alpha + n), w_n ~ (beta + c_kw) /
    (V beta + c_k), the document's own Dirichlet(beta) word vector per topic (a Polya urn)."""

    def rec(i, ck, ckw):
        if i == len(words):
            return 1.0
        total = 0.0
        for k in range(K):
            w = words[i]
            p = (alpha + ck[k]) / (K * alpha + i) * (beta + ckw.get((k, w), 0)) / (V * beta + ck[k])
            total += p * rec(i + 1, ck[:k] + (ck[k] + 1,) + ck[k + 1:], {**ckw, (k, w): ckw.get((k, w), 0) + 1})
        return total

    return rec(0, (0,) * K, {})


@pytest.mark.parametrize("resample", [True, False], ids=["resample", "no-resample"])
def test_an_own_dirichlet_word_vector_is_a_polya_urn_per_particle(resample):
    """DCMLDA written as a network (a Dirichlet(0.3) word vector per topic per document, no parent): left to right
    seats the document's tokens in its own vectors (a DP(0, V beta) over the uniform: the same urn), unbiased for
    the enumerated p(w); the frozen prior means (every token 1/V) are told apart."""
    model, hyper, net, _ = trained(DCM)
    assert model.word_predictive and whole_words.own_shape(net.spec) == "several"
    doc = SegmentedBlock.from_segments([("t0", [TEST_DOC])])
    hooks = whole_heldout.word_hooks(model, hyper)
    exact = dcm_exact(TEST_DOC, 0.6, 0.3)
    weights = []
    for seed in (2, 3, 4, 5):     # 80,000 particles (the weights vary by 2.6%: the mean is checked to 0.04%)
        probs, scale = document_particles(doc, np.ones((V, K)), LeftToRight(particles=20000, resample=resample,
                                                                             seed=seed),
                                          lambda d: whole_heldout.document_start(model, d, hyper), hooks["words_of"],
                                          word_kernel=hooks["word_kernel"])
        weights.append(np.exp(np.log(probs * scale).sum(axis=1)) / exact)
    weights = np.concatenate(weights)
    se = weights.std() / np.sqrt(len(weights))
    assert abs(weights.mean() - 1.0) < 4 * se, (weights.mean(), se)
    assert abs(V ** -len(TEST_DOC) / exact - 1.0) > 4 * se       # the empty vectors' means: 1/V a token
