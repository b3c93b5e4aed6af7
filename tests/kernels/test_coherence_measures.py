"""inference/coherence_measures.py against gensim's own CoherenceModel (u_mass, c_npmi, c_v), and topic diversity
and topic matching against direct definitions."""
import numpy as np
import pytest

from inference import coherence_measures as cm

gensim = pytest.importorskip("gensim")
from gensim.corpora import Dictionary  # noqa: E402
from gensim.models.coherencemodel import CoherenceModel  # noqa: E402


def texts_and_topics(seed: int = 3, vocab: int = 40, docs: int = 60, topics: int = 6, n: int = 8):
    """Documents of 0 to 250 tokens (shorter and longer than both windows, words repeated within a window) drawn
    from three word groups, and topics of n distinct words."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    texts = []
    for d in range(docs):
        group = rng.integers(0, 3)
        p = np.full(vocab, 0.2)
        p[group * 10:(group + 1) * 10] += 3.0
        p /= p.sum()
        texts.append([words[i] for i in rng.choice(vocab, size=int(rng.integers(0, 250)), p=p)])
    texts[0] = []                                            # an empty document is a window too
    texts[1] = ["w1", "w2", "w1"]                            # shorter than every window
    top = [list(rng.choice(vocab - 2, size=n, replace=False)) for _ in range(topics)]
    return texts, [[words[i] for i in row] for row in top]


def ours(texts, topics, measure):
    dictionary = Dictionary(texts)
    ids = np.asarray([[dictionary.token2id[w] for w in row] for row in topics])
    word_ids = np.unique(ids)
    index = np.searchsorted(word_ids, ids)
    documents = [np.asarray([dictionary.token2id[w] for w in text], dtype=np.int64) for text in texts]
    if measure == "u_mass":
        documents = [np.unique(doc) for doc in documents]       # a bag of words: the corpus docs.parquet holds
    counts = cm.count_documents(documents, index, word_ids, cm.WINDOWS[measure])
    return cm.MEASURES[measure](index, counts)


@pytest.mark.parametrize("measure", ["u_mass", "c_npmi", "c_v"])
def test_measures_match_gensim(measure):
    texts, topics = texts_and_topics()
    dictionary = Dictionary(texts)
    model = CoherenceModel(topics=topics, texts=texts, corpus=[dictionary.doc2bow(t) for t in texts],
                           dictionary=dictionary, coherence=measure, topn=len(topics[0]), processes=1)
    expected = np.asarray(model.get_coherence_per_topic())
    got = ours(texts, topics, measure)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert np.isclose(got.mean(), model.get_coherence(), rtol=1e-9)


def test_window_counts_against_enumerated_windows():
    """A window's word set as gensim slides it (the word leaving drops out even if a copy stays), counted by
    enumerating the windows one by one."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(-1, 5, size=40)
    window = 6
    expected_occ, expected_pair, present = np.zeros(5, int), {}, None
    for start in range(len(tokens) - window + 1):
        if present is None:
            present = {t for t in tokens[:window] if t >= 0}
        else:
            present.discard(tokens[start - 1])
            if tokens[start + window - 1] >= 0:
                present.add(tokens[start + window - 1])
        for a in present:
            expected_occ[a] += 1
            for b in present:
                if a < b:
                    expected_pair[(a, b)] = expected_pair.get((a, b), 0) + 1
    keys = np.asarray(sorted(a * 5 + b for a in range(5) for b in range(a + 1, 5)), dtype=np.int64)
    occ, joint = np.zeros(5, np.int64), np.zeros(keys.size, np.int64)
    assert cm.window_counts(tokens.astype(np.int64), window, 5, keys, occ, joint) == len(tokens) - window + 1
    np.testing.assert_array_equal(occ, expected_occ)
    np.testing.assert_array_equal(joint, [expected_pair.get(divmod(int(k), 5), 0) for k in keys])


def test_topic_diversity():
    phi = np.array([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4], [0.4, 0.0, 0.3, 0.3]])
    # top 2: {0,1}, {3,2}, {0,2|3}: ties broken by lower id -> {0, 2}; distinct {0,1,2,3} of 6
    assert cm.topic_diversity(phi, 2) == pytest.approx(4 / 6)
    assert cm.topic_diversity(np.eye(4), 1) == 1.0


def test_matched_topics_recover_a_permutation():
    rng = np.random.default_rng(1)
    phi = rng.dirichlet(np.full(30, 0.1), size=5)
    order = np.array([3, 0, 4, 1, 2])
    same = cm.matched_topics(phi, phi[order])
    assert [b for _, b in same["matching"]] == list(np.argsort(order))
    assert same["mean_js_divergence"] == pytest.approx(0.0, abs=1e-12)
    assert same["mean_top_word_jaccard"] == 1.0
    other = cm.matched_topics(phi, rng.dirichlet(np.full(30, 0.1), size=5))
    assert other["mean_js_divergence"] > 0.1 and other["mean_top_word_jaccard"] < 1.0
    # the Jensen-Shannon divergence against its definition
    p, q = phi[0], phi[1]
    m = (p + q) / 2
    kl = lambda a, b: np.sum(np.where(a > 0, a * np.log2(a / b), 0.0))  # noqa: E731
    assert cm.js_divergence_matrix(phi[:1], phi[1:2])[0, 0] == pytest.approx(0.5 * kl(p, m) + 0.5 * kl(q, m))
