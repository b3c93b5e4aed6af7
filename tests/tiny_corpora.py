"""Tiny corpora of every corpus kind (written with pyarrow, no Spark job), for tests that run every model."""
from __future__ import annotations

import json
import os

from gibbs_corpus import sample_bigram_lm, sample_segmented_lda, terms, write_segmented_corpus

LANGUAGES = ("en", "es")


def tiny_segmented(directory):
    """40 documents of 3 segments of 10 tokens from K=3 topics over V=30 words (a bag of words too)."""
    docs, _ = sample_segmented_lda(n_docs=40, n_segments=3, seg_length=10, n_topics=3, vocab_size=30,
                                   alpha=0.3, eta=0.1, seed=21, segment_alpha=5.0)
    return write_segmented_corpus(directory, docs, terms(30))


def tiny_ordered(directory):
    """40 documents of 30 tokens in text order, drawn from a bigram language model over V=30 words."""
    docs, _, _ = sample_bigram_lm(n_docs=40, length=30, vocab_size=30, beta=20.0, seed=41)
    return write_segmented_corpus(directory, docs, terms(30), ordered=True)


def tiny_aligned(directory):
    """40 tuples in two languages (each its own 30-word vocabulary), as ``prepare --lang-column`` lays them
    out: one sub-corpus per language and the aligned corpus.json."""
    directory = str(directory)
    sizes = {}
    for i, language in enumerate(LANGUAGES):
        docs, _ = sample_segmented_lda(n_docs=40, n_segments=1, seg_length=20, n_topics=3, vocab_size=30,
                                       alpha=0.3, eta=0.1, seed=31 + i)
        write_segmented_corpus(os.path.join(directory, language), docs,
                               [f"{language}_{t}" for t in terms(30)], segmented=False)
        sizes[language] = 30
    meta = {"aligned": True, "languages": list(LANGUAGES), "documents": 40, "vocab_sizes": sizes,
            "tuples": {"complete": 40, "missing": {l: 0 for l in LANGUAGES}},
            "rejected": {"malformed": 0, "missing_language": 0, "invalid_encoding": 0}}
    with open(os.path.join(directory, "corpus.json"), "w") as f:
        json.dump(meta, f)
    return directory


#: per registered model: the corpus kind's tiny corpus is given by the conformance test; these are the flags
#: of a short, deterministic run (a new model of an existing family runs with its family's flags)
FAMILY_FLAGS = {
    # the golden models (tests/golden/tiny_models.npz) are variational EM's, also of lda and polylda (default: hybrid)
    "variational": ["--topics", 3, "--iterations", 4, "--tol", 0, "--seed", 3, "--inference", "variational"],
    "gibbs": ["--topics", 3, "--iterations", 6, "--burn-in", 4, "--lag", 1, "--samples", 2, "--seed", 3],
}
