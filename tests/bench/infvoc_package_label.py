"""A label of the changelogs that the words carry (issue 30): the **source package** an entry belongs to.

The section label (a package's Debian section, :mod:`infvoc_folds`) is barely carried by the words (tf-idf with a
linear SVM: 0.276 balanced over 8 sections), so it tests neither model. Decided before either model was scored
on it (session 23), for these reasons:

* **Label**: the source package of the changelog an entry is in (the name of its first header line: a doc folder's
  changelog is its source's). An entry says what changed in *that* package (its upstream's name, its programs,
  its files, its maintainers), the words an infinite vocabulary takes in, as a newsgroup post's words say its
  group.
* **Which packages**: the ``TOP`` = 20 sources with the most entries (at least 100 each on this machine's stream;
  20 = K, the bench's topics), so every label has 40 or more test entries; chance balanced accuracy 1/20.
* **Split**: within each package, its entries in date order, the last 40% tested (the thesis' split of 20
  newsgroups by date, applied per label so every label is on both sides): a package's later entries are predicted
  from its earlier ones, and most of the tested entries are in the stream's later batches, where the new words are.

Both models are scored alike (:func:`bench_infvoc.classification_accuracy` on theta inferred under the final
model); the label's ceiling without a topic model: ``infvoc_label_ceiling.py --label package``.
"""
from __future__ import annotations

import gzip
from collections import Counter

from infvoc_corpora import HEADER

TOP = 20
TEST_SHARE = 0.4


def source_of(folder: str) -> str:
    """The source package of a doc folder's Debian changelog (its first header line's name)."""
    with gzip.open(f"/usr/share/doc/{folder}/changelog.Debian.gz", "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            match = HEADER.match(line)
            if match:
                return match.group(1)
    return folder


def ranked_sources(rows) -> tuple[dict, list]:
    """(doc folder -> source package, the sources with their entry counts, most entries first, ties by name)."""
    sources = {folder: source_of(folder) for folder in {r["package"] for r in rows}}
    counted = Counter(sources[r["package"]] for r in rows)
    return sources, sorted(counted.items(), key=lambda item: (-item[1], item[0]))


def labels_of(rows, sources: dict, chosen: set, share: float = TEST_SHARE) -> tuple[dict, set]:
    """(doc id -> source package for the entries of the ``chosen`` sources, the test ids: each source's last
    ``share`` of its entries by date). ``rows`` sorted by id (date first), as the corpus gives them."""
    labels, entries = {}, {}
    for r in rows:
        source = sources[r["package"]]
        if source in chosen:
            labels[r["id"]] = source
            entries.setdefault(source, []).append(r["id"])
    test_ids = set()
    for ids in entries.values():
        test_ids.update(ids[len(ids) - round(share * len(ids)):])
    return labels, test_ids


def package_labels(rows, top: int = TOP, share: float = TEST_SHARE) -> tuple[dict, set]:
    """(doc id -> source package for the entries of the ``top`` sources with the most entries, the test ids: each
    source's last ``share`` of its entries by date). ``rows`` sorted by id (date first), as the corpus gives them."""
    sources, ranked = ranked_sources(rows)
    return labels_of(rows, sources, {s for s, _ in ranked[:top]}, share)


def main() -> None:
    """Both final models of a changelogs bench run scored on the package label, with a paired bootstrap of the
    test entries for the difference of their balanced accuracies (the classifiers fitted once)."""
    import argparse

    import numpy as np
    import pandas as pd
    from bench_infvoc import classification_accuracy
    from infvoc_corpora import CORPORA
    from sklearn.metrics import balanced_accuracy_score

    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True, help="a debian-changelogs bench run's folder")
    parser.add_argument("--draws", type=int, default=1000)
    options = parser.parse_args()
    rows = CORPORA["debian-changelogs"]()
    labels, test_ids = package_labels(rows)
    in_base = {labels[r["id"]] for r in rows[:len(rows) // 4] if r["id"] in labels}   # the bench's base quarter
    scored, predicted = {}, {}
    for name in ("infvoc", "fixvoc"):
        predicted[name] = {}
        frame = pd.read_parquet(f"{options.run}/{name}-inferred/doc_topics.parquet")
        scored[name] = classification_accuracy(frame, labels, test_ids, predicted[name])
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                      for k, v in scored[name].items()))
    generator = np.random.default_rng(0)
    for classifier in ("svm", "logistic"):
        truth, a = predicted["infvoc"][classifier]
        _, b = predicted["fixvoc"][classifier]
        draws = []
        for _ in range(options.draws):
            i = generator.integers(0, len(truth), len(truth))
            draws.append(balanced_accuracy_score(truth[i], a[i]) - balanced_accuracy_score(truth[i], b[i]))
        low, high = np.quantile(draws, [0.025, 0.975])
        recall = {m: {p: float((y[truth == p] == p).mean()) for p in np.unique(truth)}
                  for m, y in (("infvoc", a), ("fixvoc", b))}
        print(f"{classifier} mean recall, the {len(in_base)} packages with entries in the base / the "
              f"{len(recall['infvoc']) - len(in_base)} without: " + "; ".join(
                  f"{m} {np.mean([v for p, v in r.items() if p in in_base]):.3f} / "
                  f"{np.mean([v for p, v in r.items() if p not in in_base]):.3f}" for m, r in recall.items()))
        print(f"{classifier} balanced, infvoc - fixvoc: {scored['infvoc'][classifier + '_balanced'] - scored['fixvoc'][classifier + '_balanced']:+.3f} "
              f"(95% of {options.draws} paired bootstrap draws of the test entries: {low:+.3f} .. {high:+.3f})")


if __name__ == "__main__":
    import bench_common  # noqa: F401  (puts the project on sys.path)
    main()
