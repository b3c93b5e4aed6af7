"""Pre-registered (session 24, issue 30): do infvoc's topics classify *new* packages better than fixvoc's?

Written and committed before either model was scored on these packages. Session 23 found, *post hoc*, on the
changelogs' top 20 source packages (:mod:`infvoc_package_label`), that infvoc recalls the 10 packages with no entry
in the bench's base quarter better than fixvoc (by 0.03-0.08 on both seeds and classifiers) and the 10 older ones
worse. This file states a test of that finding on packages it did not use:

* **Corpus**: ``debian-changelogs`` (this machine's 14,838 entries, digest ``ef352a739057fbe1``); the base quarter
  is the bench's (the first len // 4 entries by date, to 2011-06-08).
* **Packages** (:func:`later_packages`): among the source packages ranked after session 23's top 20 (by entry
  count, ties by name), the first 10 with no entry in the base quarter (*new*: their words came after the base
  vocabulary) and the first 10 with entries there (*old*); 20 labels = K. Computed from the corpus alone:
  new samba, pipewire, openjdk-17, gnutls28, ghostscript, sphinx, x265, apparmor, libsdl2, git (56-93 entries);
  old aalib, bzip2, directfb, acl, gsettings-desktop-schemas, hunspell, nspr, libidn, gzip, libdvdread (75-94).
* **Split**: each package's last 40% of its entries by date tested, as session 23's.
* **Models**: the bench's final models with the defaults, ``bench_infvoc.py --corpus debian-changelogs --topics 20
  --batches 3 --seed S --tag h30pre`` for S = 0 and 1; features: theta inferred under the final model (the run's
  ``*-inferred/doc_topics.parquet``); nothing set for this label.
* **Classifiers**: :func:`bench_infvoc.classification_accuracy` (the linear SVM and the logistic regression),
  fitted on the 20 packages' training entries.
* **Metric**: each package's recall on its test entries; the statistic is **d_new** = the mean recall of the 10
  new packages, infvoc's minus fixvoc's: 4 values (2 seeds x 2 classifiers).
* **Decision**: the finding **replicates** if d_new > 0 in all four *and* their mean is at least +0.03 (the low
  end of session 23's range); otherwise it does not. Reported beside it, not part of the decision: each d_new's
  95% interval from 1,000 paired bootstrap draws of the test entries (generator seed 0), d_old the same for the
  old packages (session 23: -0.03 .. -0.06), both models' balanced accuracy over the 20.
* **Precondition** (model-free, fixed before scoring): the words carry the label, the whole tf-idf's linear SVM
  at least 0.30 balanced (chance 0.05; ``infvoc_label_ceiling.py --label later``), else the test is void.
  Measured before scoring: 0.623 (LSA of 20 dimensions: SVM 0.177, logistic 0.163); 1,503 entries labelled, 602
  tested (majority 0.063).

    PYTHONPATH=<scikit-learn> .venv/bin/python tests/bench/infvoc_new_packages.py \\
        --run out/bench/infvoc-debian-changelogs-K20-tau1-0-h30pre --run out/bench/infvoc-debian-changelogs-K20-tau1-1-h30pre
"""
from __future__ import annotations

from infvoc_package_label import TOP, labels_of, ranked_sources

EACH = 10
MEAN_AT_LEAST = 0.03


def later_packages(rows, skip: int = TOP, each: int = EACH) -> tuple[list, list, dict]:
    """(new, old, doc folder -> source): after the ``skip`` sources with the most entries, the first ``each``
    sources with no entry in the base quarter (new) and the first ``each`` with one (old), in rank order."""
    sources, ranked = ranked_sources(rows)
    in_base = {sources[r["package"]] for r in rows[:len(rows) // 4]}
    later = [s for s, _ in ranked[skip:]]
    return ([s for s in later if s not in in_base][:each], [s for s in later if s in in_base][:each], sources)


def later_labels(rows) -> tuple[dict, set]:
    """The pre-registered label: (doc id -> source package of the 20 :func:`later_packages`, the test ids)."""
    new, old, sources = later_packages(rows)
    return labels_of(rows, sources, set(new) | set(old))


def decide(d_new: list[float]) -> bool:
    """The pre-registered decision: every d_new above 0 and their mean at least :data:`MEAN_AT_LEAST`."""
    return all(d > 0 for d in d_new) and sum(d_new) / len(d_new) >= MEAN_AT_LEAST


def main() -> None:
    """Both final models of each run scored on the pre-registered label; d_new, d_old, intervals, the decision."""
    import argparse

    import numpy as np
    import pandas as pd
    from bench_infvoc import classification_accuracy
    from infvoc_corpora import CORPORA, digest

    parser = argparse.ArgumentParser()
    parser.add_argument("--run", action="append", required=True, help="a debian-changelogs bench run's folder")
    parser.add_argument("--draws", type=int, default=1000)
    options = parser.parse_args()
    rows = CORPORA["debian-changelogs"]()
    new, old, _ = later_packages(rows)
    labels, test_ids = later_labels(rows)
    print(f"debian-changelogs: {len(rows)} entries, digest {digest(rows)[:16]}; new {new}; old {old}; "
          f"{len(labels)} labelled, {len(test_ids)} tested")
    d_new = []
    for run in options.run:
        scored, predicted = {}, {}
        for name in ("infvoc", "fixvoc"):
            predicted[name] = {}
            frame = pd.read_parquet(f"{run}/{name}-inferred/doc_topics.parquet")
            scored[name] = classification_accuracy(frame, labels, test_ids, predicted[name])
        print(f"{run}: balanced SVM infvoc {scored['infvoc']['svm_balanced']:.3f} fixvoc "
              f"{scored['fixvoc']['svm_balanced']:.3f}; logistic infvoc {scored['infvoc']['logistic_balanced']:.3f} "
              f"fixvoc {scored['fixvoc']['logistic_balanced']:.3f}; majority {scored['infvoc']['majority']:.3f}")
        generator = np.random.default_rng(0)
        for classifier in ("svm", "logistic"):
            truth, a = predicted["infvoc"][classifier]
            _, b = predicted["fixvoc"][classifier]

            def gap(i, group):
                recall = [((a[i][truth[i] == p] == p).mean() - (b[i][truth[i] == p] == p).mean())
                          for p in group if (truth[i] == p).any()]
                return float(np.mean(recall))

            every = np.arange(len(truth))
            draws = [generator.integers(0, len(truth), len(truth)) for _ in range(options.draws)]
            for group, name in ((new, "d_new"), (old, "d_old")):
                low, high = np.quantile([gap(i, group) for i in draws], [0.025, 0.975])
                value = gap(every, group)
                if name == "d_new":
                    d_new.append(value)
                per = " ".join(f"{p} {(a[truth == p] == p).mean():.2f}/{(b[truth == p] == p).mean():.2f}"
                               for p in group)
                print(f"  {classifier} {name} {value:+.3f} (95%: {low:+.3f} .. {high:+.3f}); recall infvoc/fixvoc: {per}")
    print(f"d_new: {', '.join(f'{d:+.3f}' for d in d_new)}; mean {np.mean(d_new):+.3f}; "
          f"pre-registered decision: {'REPLICATES' if decide(d_new) else 'DOES NOT REPLICATE'}")


if __name__ == "__main__":
    import bench_common  # noqa: F401  (puts the project on sys.path)
    main()
