"""How much of the changelogs' label the words carry, without a topic model (issue 30): the bench's classification
of the debian-changelogs stream (a package's Debian section, the sections of 200 labelled entries or more) from
features of the same unsupervised kind, fitted on every entry as the topic models are: tf-idf of the words (letters,
2+ characters, df >= 2) reduced by LSA (truncated SVD) to ``--dims`` dimensions (the topics' count), and the
whole tf-idf (a linear SVM: what the words say at most, linearly). Scored as the bench scores the topic models: on
``--split package``'s test entries (:func:`bench_infvoc.classification_accuracy`) and over 5 folds of the packages,
per entry and per package (:func:`infvoc_folds.pooled_accuracy`).

    PYTHONPATH=<scikit-learn> .venv/bin/python tests/bench/infvoc_label_ceiling.py --dims 20 [--label package]

``--label package``: the source package of the top 20 (:mod:`infvoc_package_label`), each package's last 40% of
its entries tested; LSA and the whole tf-idf scored on that split. ``--label later``: the 20 sources of
:mod:`infvoc_new_packages` (session 24's pre-registered test), the same split.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter

import bench_common  # noqa: F401  (first: puts the project on sys.path)
import numpy as np
import pandas as pd
from bench_infvoc import classification_accuracy
from infvoc_corpora import CORPORA
from infvoc_folds import fold_of, pooled_accuracy
from infvoc_new_packages import later_labels
from infvoc_package_label import package_labels


def main() -> None:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.svm import LinearSVC

    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", choices=("section", "package", "later"), default="section")
    options = parser.parse_args()
    rows = CORPORA["debian-changelogs"]()
    if options.label != "section":
        return package_ceiling(rows, options)
    counted = Counter(r["label"] for r in rows)
    labels = {r["id"]: r["label"] for r in rows if r["label"] and counted[r["label"]] >= 200}
    packages = {r["id"]: r["package"] for r in rows}
    test_ids = {r["id"] for r in rows if hashlib.sha256(r["package"].encode()).digest()[0] < 52}
    words = TfidfVectorizer(min_df=2, sublinear_tf=True, token_pattern=r"[^\W\d_]{2,}")
    tfidf = words.fit_transform([r["text"] for r in rows])
    lsa = TruncatedSVD(options.dims, random_state=options.seed).fit_transform(tfidf)
    frame = pd.DataFrame({"doc_id": [r["id"] for r in rows], "theta": list(lsa)})
    out = {"lsa_split": classification_accuracy(frame, labels, test_ids),
           "lsa_folds": pooled_accuracy(frame, labels, packages)}
    keep = np.array([r["id"] in labels for r in rows])
    target = np.array([labels[r["id"]] for r in rows if r["id"] in labels])
    fold = np.array([fold_of(r["package"]) for r in rows if r["id"] in labels])
    predicted = np.empty(len(target), dtype=target.dtype)
    for f in range(5):
        test = fold == f
        predicted[test] = LinearSVC().fit(tfidf[keep][~test], target[~test]).predict(tfidf[keep][test])
    out["tfidf_folds_entry_svm_balanced"] = float(balanced_accuracy_score(target, predicted))
    out["tfidf_split_entry_svm_balanced"] = float(balanced_accuracy_score(target[fold == 0], predicted[fold == 0]))
    sections = Counter(target)
    out["packages_per_section"] = {s: len({packages[d] for d, v in labels.items() if v == s}) for s in sections}
    out["test_packages_per_section"] = {s: len({packages[d] for d, v in labels.items() if v == s and d in test_ids})
                                        for s in sections}
    print(f"debian-changelogs: {len(rows)} entries, {len(labels)} labelled, {tfidf.shape[1]} words; LSA {options.dims}")
    print("RESULT " + json.dumps(out))


def package_ceiling(rows, options) -> None:
    """The package label's ceiling: LSA and the whole tf-idf (linear SVM) on its per-package date split."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.svm import LinearSVC

    labels, test_ids = (package_labels if options.label == "package" else later_labels)(rows)
    words = TfidfVectorizer(min_df=2, sublinear_tf=True, token_pattern=r"[^\W\d_]{2,}")
    tfidf = words.fit_transform([r["text"] for r in rows])
    lsa = TruncatedSVD(options.dims, random_state=options.seed).fit_transform(tfidf)
    frame = pd.DataFrame({"doc_id": [r["id"] for r in rows], "theta": list(lsa)})
    out = {"lsa_split": classification_accuracy(frame, labels, test_ids)}
    keep = np.array([r["id"] in labels for r in rows])
    ids = [r["id"] for r in rows if r["id"] in labels]
    target = np.array([labels[d] for d in ids])
    test = np.array([d in test_ids for d in ids])
    predicted = LinearSVC().fit(tfidf[keep][~test], target[~test]).predict(tfidf[keep][test])
    out["tfidf_split_entry_svm_balanced"] = float(balanced_accuracy_score(target[test], predicted))
    out["entries"] = dict(Counter(target).most_common())
    print(f"debian-changelogs, label {options.label}: {len(rows)} entries, {len(labels)} labelled ({len(set(target))} "
          f"packages, {int(test.sum())} tested), {tfidf.shape[1]} words; LSA {options.dims}")
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
