"""The changelogs' classification scored over every package (issue 30): the label, a package's Debian section, is
the package's, and the bench's ``--split package`` tests the entries of one hashed 8% of the packages, where 5 of
the 7 sections present have 1-7 packages (devel: 3, 857 entries; admin: 1), so a section's recall is a few
packages' luck. Here the labelled packages are cut into 5 folds by the same hash (fold 0 is ``--split package``'s
test set); each fold is scored by the classifiers of :func:`bench_infvoc.classification_accuracy`'s kinds trained on
the other four, and the predictions of all folds are pooled (every labelled entry tested once, by a model that never
saw its package). Two units, the same features for every model: each **entry** (its theta) and each **package** (the
mean theta of its entries: the label's own unit). A screening aid of the bench; the same scoring for both models.
"""
from __future__ import annotations

import hashlib

FOLDS = 5


def fold_of(package: str) -> int:
    """The package's fold: the first byte of its SHA-256 in FOLDS ranges (fold 0: bytes 0-51, ``--split package``)."""
    return hashlib.sha256(package.encode()).digest()[0] * FOLDS // 256


def pooled_accuracy(frame, labels: dict, packages: dict) -> dict:
    """Balanced accuracy and accuracy of the SVM and the logistic regression, predictions pooled over the folds, per
    entry and per package. ``frame``: doc_id, theta; ``labels``/``packages``: doc id -> section / package."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.svm import SVC

    frame = frame[frame["doc_id"].isin(labels)].sort_values("doc_id")
    theta = np.stack([np.asarray(t, dtype=np.float64) for t in frame["theta"]])
    owner = np.array([packages[d] for d in frame["doc_id"]])
    units = {"entry": (theta, np.array([labels[d] for d in frame["doc_id"]]), owner)}
    names = sorted(set(owner))
    section = {packages[d]: labels[d] for d in frame["doc_id"]}
    units["package"] = (np.stack([theta[owner == p].mean(axis=0) for p in names]),
                        np.array([section[p] for p in names]), np.array(names))
    out = {}
    for unit, (features, target, groups) in units.items():
        fold = np.array([fold_of(g) for g in groups])
        for name, make in (("svm", lambda: make_pipeline(MinMaxScaler(), SVC(kernel="linear", C=1.0))),
                           ("logistic", lambda: LogisticRegression(max_iter=1000))):
            predicted = np.empty(len(target), dtype=target.dtype)
            for f in range(FOLDS):
                test = fold == f
                predicted[test] = make().fit(features[~test], target[~test]).predict(features[test])
            out[f"{unit}_{name}"] = float((predicted == target).mean())
            out[f"{unit}_{name}_balanced"] = float(balanced_accuracy_score(target, predicted))
        out[f"{unit}_count"] = int(len(target))
    return out
