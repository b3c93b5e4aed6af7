"""Prior trees from bilingual dictionaries (thesis §5.1; ``../shared/spec/trees.md`` §1.3, §5.1): the concepts, the
coverage report, and the tree directory.

A two-level tree: every single-word translation pair whose two words are both in the corpus vocabularies is one
concept node under the root with the two words as its leaves (one concept per pair, no transitive merging: merged
pairs form giant components); every other word hangs from the root; a word in several concepts has several
paths. Words are keyed by (language, word), so homographs across languages (en "son", es "son") stay apart; a
monolingual corpus has one vocabulary, language "" (a pair's languages then only say which dictionary it came from).

Tree directory::

    tree.json          languages, the corpus it was built for, the coverage report
    concepts.parquet   concept, lang_a, word_a, lang_b, word_b (one row per concept)
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from drivers import storage
from inference.errors import DamagedError, UsageError

TREE_JSON = "tree.json"
CONCEPTS = "concepts.parquet"
FORMAT = 1

#: why a dictionary pair did not become a concept (the report's keys, in the order they are tested)
DROP_REASONS = ("other_language", "multi_word", "same_word", "not_in_vocabulary", "duplicate")


def build_concepts(pairs, tokenize, vocabulary: dict, languages: tuple) -> tuple[pd.DataFrame, dict]:
    """Concepts and the coverage report from raw pairs ``(lang_a, phrase_a, lang_b, phrase_b, ...)``.

    ``tokenize(language, phrases) -> list of token lists`` is the corpus' tokenizer (no stop-word removal: a
    phrase is a single word when it gives exactly one token); ``vocabulary`` maps (language, word) to the
    corpus' global word id; ``languages``: the corpus' languages (``("",)`` for a monolingual corpus).
    """
    monolingual = tuple(languages) == ("",)
    rows = [(str(p[0]), str(p[1]), str(p[2]), str(p[3])) for p in pairs]
    dropped = Counter()
    by_language: dict[str, set] = {}
    for lang_a, phrase_a, lang_b, phrase_b in rows:
        by_language.setdefault("" if monolingual else lang_a, set()).add(phrase_a)
        by_language.setdefault("" if monolingual else lang_b, set()).add(phrase_b)
    tokens = {}
    for language, phrases in by_language.items():
        phrases = sorted(phrases)
        if language in languages:
            tokens.update({(language, p): tuple(t) for p, t in zip(phrases, tokenize(language, phrases))})
    seen, concepts = set(), []
    for lang_a, phrase_a, lang_b, phrase_b in rows:
        if monolingual:
            lang_a = lang_b = ""
        if lang_a not in languages or lang_b not in languages:
            dropped["other_language"] += 1
            continue
        words_a, words_b = tokens[(lang_a, phrase_a)], tokens[(lang_b, phrase_b)]
        if len(words_a) != 1 or len(words_b) != 1:
            dropped["multi_word"] += 1
            continue
        a, b = (lang_a, words_a[0]), (lang_b, words_b[0])
        if a == b:
            dropped["same_word"] += 1
            continue
        if a not in vocabulary or b not in vocabulary:
            dropped["not_in_vocabulary"] += 1
            continue
        key = (a, b) if a <= b else (b, a)        # eng-spa and spa-eng give the same concept
        if key in seen:
            dropped["duplicate"] += 1
            continue
        seen.add(key)
        concepts.append(key)
    concepts.sort()
    frame = pd.DataFrame({"concept": np.arange(len(concepts), dtype=np.int64),
                          "lang_a": [a[0] for a, _ in concepts], "word_a": [a[1] for a, _ in concepts],
                          "lang_b": [b[0] for _, b in concepts], "word_b": [b[1] for _, b in concepts]})
    return frame, coverage_report(frame, len(rows), dropped, languages)


def coverage_report(concepts: pd.DataFrame, pairs_read: int, dropped: Counter, languages) -> dict:
    """Concepts, linked words per language, words with several paths, the path-count histogram, pairs dropped
    and why."""
    degree = Counter(zip(concepts["lang_a"], concepts["word_a"])) + Counter(zip(concepts["lang_b"], concepts["word_b"]))
    per_language = {}
    for language in languages:
        counts = [n for (lang, _), n in degree.items() if lang == language]
        histogram = Counter(counts)
        per_language[language] = {"linked_words": len(counts), "several_paths": sum(1 for n in counts if n > 1),
                                  "max_paths": max(counts, default=0),
                                  "paths_histogram": {str(k): histogram[k] for k in sorted(histogram)}}
    return {"pairs_read": pairs_read, "concepts": int(len(concepts)),
            "dropped": {reason: int(dropped.get(reason, 0)) for reason in DROP_REASONS},
            "languages": per_language}


def format_report(report: dict) -> str:
    lines = [f"{report['concepts']} concepts from {report['pairs_read']} dictionary pairs; dropped: "
             + ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in report["dropped"].items() if n)]
    for language, entry in report["languages"].items():
        lines.append(f"  {language or 'words'}: {entry['linked_words']} linked words, {entry['several_paths']} with "
                     f"several paths (at most {entry['max_paths']}); paths per linked word: "
                     + ", ".join(f"{k}: {n}" for k, n in entry["paths_histogram"].items()))
    return "\n".join(lines)


def save_tree(directory: str, concepts: pd.DataFrame, meta: dict) -> None:
    """The tree directory, published whole as a model is (:mod:`drivers.store.publish`; the user's other files in it are
    kept)."""
    import pyarrow as pa

    from drivers.store import publish

    with publish.published(directory, "spark-topics tree", _is_tree_file) as staging:
        storage.write_parquet(storage.join(staging, CONCEPTS), pa.Table.from_pandas(concepts, preserve_index=False))
        storage.save_json(storage.join(staging, TREE_JSON), dict(meta, format=FORMAT))


def _is_tree_file(name: str) -> bool:
    return name in (TREE_JSON, CONCEPTS)


def load_tree(directory: str) -> tuple[pd.DataFrame, dict]:
    """(concepts, tree.json) of a tree directory, checked (against its manifest when it has one)."""
    from drivers.store import publish

    if storage.exists(storage.join(directory, publish.MARKER)):
        publish.require_complete(directory)
        publish.give_back(directory, _is_tree_file)
    meta_path = storage.join(directory, TREE_JSON)
    if not storage.exists(meta_path):
        raise UsageError(f"{directory} is not a prior tree (no {TREE_JSON}): build one with spark-topics tree")
    meta = storage.load_json(meta_path)
    if meta.get("format") != FORMAT:
        raise DamagedError(f"{directory}: a tree of format {meta.get('format')}, this spark-topics reads {FORMAT}")
    concepts = storage.read_table(storage.join(directory, CONCEPTS)).to_pandas()
    if len(concepts) != meta["report"]["concepts"]:
        raise DamagedError(f"{directory}: {CONCEPTS} has {len(concepts)} concepts, {TREE_JSON} says "
                           f"{meta['report']['concepts']}")
    return concepts, meta


def concept_word_ids(concepts: pd.DataFrame, vocabulary: dict) -> np.ndarray:
    """(C, 2) global word ids of every concept's leaves; a word missing from ``vocabulary`` is refused (the tree
    was built for another corpus)."""
    out = np.empty((len(concepts), 2), dtype=np.int64)
    for i, (la, wa, lb, wb) in enumerate(zip(concepts["lang_a"], concepts["word_a"], concepts["lang_b"],
                                             concepts["word_b"])):
        for j, key in enumerate(((la, wa), (lb, wb))):
            if key not in vocabulary:
                raise UsageError(f"the tree's word {key[1]!r} ({key[0] or 'no language'}) is not in the corpus "
                                 f"vocabulary: was the tree built for another corpus? (spark-topics tree --corpus)")
            out[i, j] = vocabulary[key]
    return out
