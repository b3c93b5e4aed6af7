"""Infinite vocabulary against a fixed vocabulary on a stream sorted by time (issue 30; thesis Fig. 7.6, Table 7.1).

The corpus (``--corpus``, pinned in :mod:`infvoc_corpora`): ``python-news``, the 10,017 entries of CPython's
release notes as Debian's python3.11 ships them (2015-02 to 2023-02, labelled by their section: Library, Core and
Builtins, IDLE, Windows, Build, ...), ``python-news-joined``, the same entries joined into 1,398 documents of 20
newsgroups' lengths (one section of one release each, 143 tokens on average), ``debian-changelogs``, the 14,862
entries of the pinned Debian changelogs (labelled by the package's Debian section), or ``git-relnotes``, the 5,979
entries of git's 74 feature releases' notes (1.5.0 .. 2.39.0, labelled fixes / features / internal). Sorted by
date; the first quarter trains the base models, the rest arrives in ``--batches`` refreshes, in date order:

* **infvoc**: ``train --vocabulary infinite`` on the base, then ``refresh --vocabulary infinite`` with each batch
  (raw text; every word may enter a topic);
* **fixvoc**: the project's online LDA on the base's vocabulary (the thesis' "null" vocabulary, here the base
  quarter's rather than the first minibatch's): ``train`` (the same K), then ``refresh --mode online`` with each
  batch, new words never admitted (``--min-new-df`` above the corpus size); the same tau0 and kappa. With
  ``--fixvoc minibatches``, the thesis' fixvoc hybrid-null instead: online over infvoc's minibatches, one step each,
  the first minibatch's vocabulary.

Both are scored at the end of the stream by NPMI coherence of each topic's 10 top words (document co-occurrence,
averaged over the 45 pairs and the topics; a pair that never co-occurs scores -1) on the whole stream, its last batch
(where the new words are) and a corpus that is not the stream (python-news: the Python docs, :mod:`infvoc_reference`). Document classification (thesis Table 7.1): every
entry of the stream is inferred under each final model (``infer``: fixvoc with its vocabulary, infvoc over every
word) and classifiers of the topic proportions (a linear SVM, the thesis' Weka SMO with its defaults, and a
multinomial logistic regression; scikit-learn, ``pip install -e .[bench]``) are trained on the training entries and scored on the test entries:
``--split date`` the last 40% of the stream (the thesis' split of 20 newsgroups by date; python-news' default),
``--split package`` the entries of a hashed 8% of the packages (debian-changelogs' default); debian-changelogs is
also scored on a label the words carry, the source package (:mod:`infvoc_package_label`). Beside the tests::

    .venv/bin/python tests/bench/bench_infvoc.py --corpus python-news --topics 50 --minibatch-size 155 \
        --alpha-beta 1000 --truncation 2000 --reorder-delay 10 --tau0 64 --kappa 0.6 [--seed 1]
    .venv/bin/python tests/bench/bench_infvoc.py --corpus debian-changelogs --topics 20 --batches 3

**Pre-registered (session 25, issue 30), before either model ran on it: ``git-relnotes``**, the third stream sorted
by time (digest ``cfdd7234a8c8f7cd``; base to v1.8.2, test from v2.16). Settings: the bench's defaults, the
changelogs' (K 20, 3 batches, S 256, T 4000, U 10, tau0 1, kappa 0.6; infvoc's CLI defaults), ``--seed 0`` and
``1``, ``--tag h30git``. Label: the part of the notes (``infvoc_corpora.git_relnotes``), ``--split date``; the words
carry it (whole tf-idf, linear SVM: 0.667 balanced on this split, chance 0.333, measured before). Rule: NPMI (whole
stream) **holds** if infvoc > fixvoc on both seeds; classification **holds** if for both seeds and both classifiers
infvoc's balanced accuracy >= fixvoc's - the spread (the larger of the two models' |seed 0 - seed 1| for that
classifier). Reported whatever it shows.

**Pre-registered (session 26, issue 30), before any run of it: ``--refresh-weight share``.** Today a refresh's
steps take the schedule's eps_i, the counter going on from the model's (with ``--passes auto`` >= 60 steps, which
keep prod(1 - eps_i) = 5-13% of the topics before the batch whatever its share: the lean to the last batch). With
``share`` all of a refresh's steps take one eps, 1 - (1 - n/D)^(1/steps) (n the batch's documents, D the documents
seen, the batch's included; ``inference.infvoc.tos.share_step``), so the batch weighs n/D (1/2, 1/3, 1/4 for 3
equal batches) and the model before it the rest; passes, the local step and train are unchanged. Runs: infvoc
only (``--fixvoc none``; fixvoc's code is unchanged, its committed numbers are used: joined ``h30def`` 0.099 / 0.097
NPMI, SVM 0.645 / 0.610, logistic 0.555 / 0.542; git-relnotes ``h30git`` 0.052 / 0.052, 0.333 / 0.361, 0.410 /
0.420), ``--refresh-weight share --tag h30share``, seeds 0 and 1, on python-news-joined (the ``h30def`` flags),
git-relnotes and debian-changelogs (the bench's defaults, ``--batches 3``). Rule: ``share`` becomes the default only
if on python-news-joined AND git-relnotes, for both seeds, the whole-stream NPMI is > fixvoc's and for both seeds
and both classifiers infvoc's balanced accuracy >= fixvoc's - the spread (the larger of the two models' |seed 0 -
seed 1|), AND on debian-changelogs the whole-stream NPMI is >= the defaults' (0.245 / 0.275) - their spread (0.030)
on each seed run. A stream not run by the deadline counts as not met. Reported whatever it shows.

**Pre-registered (session 27, issue 30, h30p), before any run on the rule's streams: ``--discount 0.05``.** The
topics' sticks as a Pitman-Yor GEM(d, alpha^beta), V_t ~ Beta(1 - d, alpha^beta + t d) (``inference.infvoc.tos.
prior_sticks``; d = 0 today's GEM(alpha^beta)). d chosen by the in-process screen on python-news single entries
(``infvoc_sweep.py --corpus python-news --topics 50 --minibatch-size 155 --tau0 64 --kappa 0.6 --passes auto
--grid expand=every discount=...``, seed 0): the largest whole-stream NPMI with SVM balanced not below d = 0's -
0.02. Whole-stream NPMI / SVM balanced: d = 0 0.0262 / 0.202, 0.05 0.0268 / 0.255, 0.1 -0.003 / 0.214, 0.2 0.003 /
0.277, 0.3 -0.015 / 0.282, 0.5 -0.053 / 0.237, 0.8 -0.601 / 0.091, 0.9 -0.451 / 0.092, 0.95 -0.334 / 0.102 (the
large discounts collapse the topics: after the base, d = 0.8 leaves one topic 76% of the evidence). 0.05 wins by
0.0006, within any noise: the screen does not favour a discount. Runs: infvoc only (``--fixvoc none``, fixvoc's
committed numbers), ``--discount 0.05 --tag h30p-d05``, seeds 0 and 1, on git-relnotes (the bench's defaults),
python-news-joined (the ``h30def`` flags) and debian-changelogs (``--topics 20 --batches 3``, if its digest is
``ef352a739057fbe1``); first one control, today's defaults on git-relnotes seed 0 (``--tag h30p-ctl``; the
committed 0.027 is used unless it does not reproduce). Rule: 0.05 becomes the default only if for both seeds on
python-news-joined AND git-relnotes the whole-stream NPMI is above today's defaults' (joined 0.089 / 0.087,
git-relnotes 0.027 / 0.029) and both classifiers' balanced accuracy >= today's defaults' - the spread (the larger
of the two models' |seed 0 - seed 1| for that classifier; defaults: joined SVM 0.642 / 0.634, logistic 0.598 /
0.593; git-relnotes SVM 0.380 / 0.353, logistic 0.448 / 0.404), AND on debian-changelogs the whole-stream NPMI
>= 0.245 / 0.275 - 0.030 on each seed. A stream not run by 15:15 UTC counts as not met. Reported whatever it shows,
against fixvoc too.

**Pre-registered (session 27, issue 30, h30a), before any run on these streams: ``--alpha-theta fit``** (alpha^theta
learned online: each minibatch the mappers' kept-sample statistics sum_d mean_s Psi(alpha_k + n_dk) - Psi(A + N_d),
the minibatch's Newton optimum as one corpus of D documents, alpha <- (1 - eps_i) alpha + eps_i alpha_hat;
``inference.infvoc.doc_prior``). Runs: infvoc only (``--fixvoc none``, fixvoc's committed numbers), ``--alpha-theta
fit --tag h30a-fit``, seeds 0 and 1, in the order git-relnotes s0, s1, python-news-joined s0, s1 (the ``h30def``
flags: ``--topics 50 --minibatch-size 155 --alpha-beta 1000 --truncation 2000 --reorder-delay 10 --tau0 64 --kappa
0.6``), debian-changelogs (``--topics 20 --batches 3``, only if its corpus digest is ef352a739057fbe1). Rule: ``fit``
becomes the default only if for seeds 0 and 1, on python-news-joined AND git-relnotes, the whole-stream NPMI is above
today's defaults' (joined 0.089 / 0.087, git-relnotes 0.027 / 0.029) and both classifiers' balanced accuracy >=
today's defaults' minus the spread (joined SVM 0.642 / 0.634, logistic 0.598 / 0.593; git-relnotes SVM 0.380 / 0.353,
logistic 0.448 / 0.404; the spread the larger |seed 0 - seed 1| of the defaults' and fit's runs for that classifier),
AND on debian-changelogs the whole-stream NPMI >= 0.245 / 0.275 minus 0.030. A stream not run by the deadline (15:15
UTC) counts as not met. Reported against fixvoc too (joined 0.099 / 0.097 NPMI, SVM 0.645 / 0.610, logistic 0.555 /
0.542; git-relnotes 0.052 / 0.052, 0.333 / 0.361, 0.410 / 0.420; changelogs 0.235 / 0.244), with the final alpha
(sorted) and the top words of its 3 largest-alpha topics. Reported whatever it shows.

**Pre-registered (session 27, issue 30, h30s), before any of its runs: five seeds.** Today's defaults (main's code
at 46b0aa7, no new flags), both models (fixvoc ``batches``), seeds 2, 3 and 4 (``--tag h30s-sN``), one run at a
time, stream by stream in this order: debian-changelogs (``--topics 20 --batches 3``), git-relnotes (the bench's
defaults, session 25's settings), python-news-joined (``--topics 50 --minibatch-size 155 --alpha-beta 1000
--truncation 2000 --reorder-delay 10 --tau0 64 --kappa 0.6``). Seeds 0 and 1 are the committed runs: changelogs
``lead27-sN`` (2026-11-29: NPMI 0.2469 / 0.2806 vs 0.2578 / 0.2513; source-package SVM 0.344 / 0.376 vs 0.358 /
0.392, logistic 0.349 / 0.377 vs 0.347 / 0.357), git-relnotes ``h30git``, python-news-joined ``h30def``. Rule, per
stream over seeds 0-4: the NPMI target (whole stream) **holds** if infvoc's is above fixvoc's on at least 4 of the 5
seeds AND the mean paired difference (infvoc - fixvoc) is above 0; **level** if neither model wins 4 of 5 (else it
fails: fixvoc wins 4 of 5, or infvoc wins 4 with a mean difference <= 0); classification (the headline balanced
accuracies, SVM and logistic, each; the changelogs' on the source-package label) **holds** if infvoc's mean over
the seeds >= fixvoc's mean - the standard error of the paired differences. A stream whose seeds do not all finish
by the deadline is reported as partial (which seeds). Reported whatever it shows; no default changes.

**Pre-registered (session 27, issue 30, lead), before any of its runs: python-news, five seeds.** The same rule as
h30s' paragraph above, on the fourth stream, python-news' single entries (``--corpus python-news --topics 50
--minibatch-size 155 --alpha-beta 1000 --truncation 2000 --reorder-delay 10 --tau0 64 --kappa 0.6``; today's
defaults, both models), seeds 2, 3 and 4 (``--tag lead27-sN``, code of main at 77bd2df), seeds 0 and 1 the committed
``h30def`` runs (NPMI whole stream infvoc 0.053 / 0.034 vs fixvoc 0.015 / 0.035; SVM balanced 0.289 / 0.234 vs
0.210 / 0.183; logistic balanced 0.297 / 0.254 vs 0.231 / 0.198). A seed not finished by 15:35 UTC is reported as
partial. Reported whatever it shows; no default changes.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import re
import shutil
import time
from collections import Counter

from bench_common import CACHE, bench_session  # noqa: E402  (first: puts the project on sys.path)
from infvoc_corpora import CORPORA, digest
from infvoc_fixvoc import fixvoc_on_minibatches
from infvoc_folds import pooled_accuracy
from infvoc_package_label import package_labels
from infvoc_reference import REFERENCES

def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"id": r["id"], "text": r["text"]}) + "\n")
    return str(path)


def classification_accuracy(frame, labels: dict, test_ids: set, predictions: dict | None = None) -> dict:
    """Accuracies on the test documents of two classifiers of theta trained on the others (scikit-learn, the
    project's ``bench`` extra): the thesis' Weka SMO with its defaults (a linear SVM, C = 1, features scaled to
    [0, 1], one-vs-one) and a multinomial logistic regression; the majority class' accuracy and each one's
    balanced accuracy (mean recall over the test's classes). ``frame``: doc_id, theta. ``predictions``, if given,
    gets each classifier's (test labels, predicted labels)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.svm import SVC

    frame = frame[frame["doc_id"].isin(labels)].sort_values("doc_id")
    features = np.stack([np.asarray(t, dtype=np.float64) for t in frame["theta"]])
    target = np.array([labels[d] for d in frame["doc_id"]])
    test = frame["doc_id"].isin(test_ids).to_numpy()
    classes, counts = np.unique(target[~test], return_counts=True)
    out = {"test_documents": int(test.sum()), "classes": int(len(np.unique(target))),
           "majority": float((target[test] == classes[np.argmax(counts)]).mean())}
    for name, model in (("svm", make_pipeline(MinMaxScaler(), SVC(kernel="linear", C=1.0))),
                        ("logistic", LogisticRegression(max_iter=1000))):
        predicted = model.fit(features[~test], target[~test]).predict(features[test])
        if predictions is not None:
            predictions[name] = (target[test], predicted)
        out[name] = float((predicted == target[test]).mean())
        out[name + "_balanced"] = float(balanced_accuracy_score(target[test], predicted))
    return out


TOKEN = re.compile(r"[^\W\d_]+(?:'(?!s\b)[^\W\d_]+)*")


def document_sets(rows, stopwords) -> list[set]:
    return [{t for t in (m.group(0).lower() for m in TOKEN.finditer(r["text"])) if len(t) >= 2 and t not in stopwords}
            for r in rows]


def npmi(topics: list[list[str]], documents: list[set]) -> float:
    """Mean over topics of the mean NPMI of their top words' pairs (document co-occurrence in ``documents``)."""
    n = len(documents)
    words = {w for t in topics for w in t}
    where = {w: set() for w in words}
    for i, doc in enumerate(documents):
        for w in doc & words:
            where[w].add(i)
    scores = []
    for top in topics:
        pairs = []
        for a, b in itertools.combinations(top, 2):
            joint = len(where[a] & where[b])
            if joint == 0:
                pairs.append(-1.0)
                continue
            p_ab, p_a, p_b = joint / n, len(where[a]) / n, len(where[b]) / n
            pairs.append(1.0 if p_ab == 1.0 else math.log(p_ab / (p_a * p_b)) / -math.log(p_ab))
        scores.append(sum(pairs) / len(pairs))
    return sum(scores) / len(scores)


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag, kind, default in (("--topics", int, 20), ("--batches", int, 3), ("--minibatch-size", int, 256),
                                ("--alpha-beta", float, 1000.0), ("--truncation", int, 4000),
                                ("--reorder-delay", int, 10), ("--tau0", float, 1.0), ("--kappa", float, 0.6)):
        parser.add_argument(flag, type=kind, default=default)
    parser.add_argument("--passes", default=None, help="passes of the infinite model's base training and of each of its "
                        "refreshes (a number or auto; default: none given, the CLI's default)")
    parser.add_argument("--reseed-below", default=None,
                        help="infvoc's --reseed-below (default: none given, the CLI's default)")
    parser.add_argument("--reseed-draw", default=None, help="infvoc's --reseed-draw (default: the CLI's)")
    parser.add_argument("--reseed-against", default=None, help="infvoc's --reseed-against (default: the CLI's)")
    parser.add_argument("--retrain", action="store_true",
                        help="also time a retrain of each model on the whole stream (prepare timed apart)")
    parser.add_argument("--ranking", choices=("base", "counts"), default="base",
                        help="infvoc's ranking score: G_0 x counts (the thesis) or counts (its code)")
    parser.add_argument("--corpus-size", default="cumulative",
                        help="D of both online updates (infvoc's 7.6, fixvoc's online refresh): 'cumulative' (the "
                             "documents seen so far) or the stream's size")
    parser.add_argument("--iterations", type=int, default=20, help="fixvoc: EM iterations (base and refreshes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--refresh-weight", default=None, help="infvoc's --refresh-weight (default: the CLI's)")
    parser.add_argument("--discount", default=None, help="infvoc's --discount (default: the CLI's)")
    parser.add_argument("--alpha-theta", default=None, help="infvoc's --alpha-theta (default: the CLI's)")
    parser.add_argument("--fixvoc", choices=("batches", "minibatches", "none"), default="batches",
                        help="fixvoc: train on the base, then one online refresh per batch of --iterations EM "
                             "iterations (batches), or the thesis' fixvoc hybrid-null (minibatches): online over "
                             "infvoc's minibatches, one pass, one step each, the vocabulary of the first minibatch; "
                             "none: not trained nor scored (compare with an earlier run's fixvoc)")
    parser.add_argument("--expand", choices=("sampled", "every"), default=None,
                        help="infvoc's --expand: every topic (its code) or the topics a word is sampled into "
                             "(default: none given, the CLI's default)")
    parser.add_argument("--fixvoc-from", default=None,
                        help="the folder of an earlier run with the same fixvoc settings: its fixvoc models are "
                             "copied, not trained again")
    parser.add_argument("--fixvoc-only", action="store_true",
                        help="train fixvoc again beside the infvoc models of an earlier run in the same folder")
    parser.add_argument("--tag", default="", help="a suffix of the run's folder (keeps runs of other code apart)")
    parser.add_argument("--reuse", action="store_true", help="score the models of an earlier run again (no training)")
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="python-news")
    parser.add_argument("--min-section", type=int, default=None,
                        help="classification: labels with this many entries (default: python-news 1, debian 200)")
    parser.add_argument("--split", choices=("date", "package"), default=None,
                        help="classification's test documents: the last 40%% of the stream (date, the thesis' "
                             "split; python-news' default) or the entries of a hashed 8%% of the packages "
                             "(package: debian-changelogs' default)")
    options = parser.parse_args()

    from drivers.models.infvoc import commands as infinite
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.corpus import prepare_corpus
    from drivers.preparation.text import stopword_list
    from drivers.store import model_store
    from jobs import refresh, train

    spark = bench_session("bench-infvoc")
    work = CACHE / (f"infvoc-{options.corpus}-K{options.topics}-tau{options.tau0:g}"
                    f"{'' if options.corpus_size == 'cumulative' else '-D' + options.corpus_size}"
                    f"{'' if options.alpha_beta == 1000 else f'-ab{options.alpha_beta:g}'}"
                    f"{'' if options.ranking == 'base' else '-' + options.ranking}-{options.seed}"
                    f"{'-' + options.tag if options.tag else ''}")
    if not options.reuse and not options.fixvoc_only:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    rows = CORPORA[options.corpus]()
    debian = options.corpus == "debian-changelogs"
    quarter = len(rows) // 4
    size = -(-(len(rows) - quarter) // options.batches)
    base_rows = rows[:quarter]
    batch_rows = [rows[quarter + i * size: quarter + (i + 1) * size] for i in range(options.batches)]
    base = write_jsonl(work / "base.jsonl", base_rows)
    batches = [write_jsonl(work / f"batch{i + 1}.jsonl", b) for i, b in enumerate(batch_rows)]
    print(f"{options.corpus}: {len(rows)} entries ({rows[0]['id'][:8]} .. {rows[-1]['id'][:8]}, digest "
          f"{digest(rows)[:16]}); base "
          f"{len(base_rows)} (to {base_rows[-1]['id'][:8]}), then {options.batches} batches of ~{size}; "
          f"K={options.topics}")
    if not options.reuse and not options.fixvoc_only:
        prepare_corpus(spark, base, str(work / "c0"))

    def parse(job, argv):
        p = argparse.ArgumentParser()
        job.add_arguments(p, [str(a) for a in argv])
        args = p.parse_args([str(a) for a in argv])
        args.master = getattr(args, "master", None)          # the CLI's common flag: no --master
        return args

    inf_seconds, fix_seconds, sizes = [], [], []
    if options.fixvoc_only:
        shutil.rmtree(work / "fix-root", ignore_errors=True)
        shutil.rmtree(work / "fix-base", ignore_errors=True)
    if not options.reuse and not options.fixvoc_only:
        # infvoc
        schedule = ["--alpha-beta", options.alpha_beta, "--truncation", options.truncation, "--reorder-delay",
                    options.reorder_delay, "--minibatch-size", options.minibatch_size,
                    *(["--passes", options.passes] if options.passes is not None else []),
                    *(["--reseed-below", options.reseed_below] if options.reseed_below is not None else []),
                    *(["--reseed-draw", options.reseed_draw] if options.reseed_draw is not None else []),
                    *(["--reseed-against", options.reseed_against] if options.reseed_against else []),
                    *(["--refresh-weight", options.refresh_weight] if options.refresh_weight else []),
                    *(["--discount", options.discount] if options.discount is not None else []),
                    *(["--alpha-theta", options.alpha_theta] if options.alpha_theta else [])]
        began = time.time()
        infinite.train(spark, parse(train, ["--corpus", work / "c0", "--output", work / "inf-base", "--topics",
                                            options.topics, "--vocabulary", "infinite", "--tau0", options.tau0,
                                            "--kappa", options.kappa, "--seed", options.seed,
                                            "--corpus-size", options.corpus_size, "--ranking", options.ranking,
                                            *(["--expand", options.expand] if options.expand else []),
                                            *schedule]))
        inf_seconds = [time.time() - began]
        print(f"infvoc base: {json.load(open(work / 'inf-base' / 'model.json')).get('passes')} passes")
        sizes = []
        for i, batch in enumerate(batches):
            began = time.time()
            report = infinite.refresh(spark, parse(refresh, ["--model", work / "inf-root", "--input", batch,
                                                             "--vocabulary", "infinite", "--tau0", options.tau0,
                                                             "--kappa", options.kappa, "--corpus-size",
                                                             options.corpus_size, *schedule]
                                                   + (["--base", work / "inf-base"] if i == 0 else [])))
            inf_seconds.append(time.time() - began)
            sizes.append((min(report["tos_sizes"]), max(report["tos_sizes"]), report["new_words_in_topics"]))
            print(f"infvoc refresh {i + 1}: {report.get('passes')} passes, minibatches {report['minibatches']}, "
                  f"eps {report.get('eps') or 'the schedule'}, "
                  f"{inf_seconds[-1]:.0f} s")
    inf_model = InfVocModel.load(model_store.resolve(str(work / "inf-root")))

    if options.fixvoc_from and not options.reuse:
        for name in ("fix-base", "fix-root"):
            shutil.copytree(CACHE / options.fixvoc_from / name, work / name, symlinks=True)
    elif not options.reuse and options.fixvoc == "minibatches":
        fix_seconds = fixvoc_on_minibatches(spark, work, [base_rows, *batch_rows], options, parse, write_jsonl)
    elif not options.reuse and options.fixvoc == "batches":
        # fixvoc: online LDA on the base vocabulary
        began = time.time()
        train.train(spark, train.parse_request(["--corpus", work / "c0", "--output", work / "fix-base", "--topics",
                                                options.topics, "--iterations", options.iterations, "--seed", options.seed]))
        fix_seconds = [time.time() - began]
        for i, batch in enumerate(batches):
            flags = ["--model", work / "fix-root", "--input", batch, "--mode", "online", "--iterations",
                     options.iterations, "--min-new-df", 10 ** 9, "--tau0", options.tau0, "--kappa", options.kappa,
                     "--corpus-size", options.corpus_size]
            began = time.time()
            refresh.refresh_root(spark, refresh.request_from(parse(refresh, flags + (["--base", work / "fix-base"]
                                                                                  if i == 0 else []))))
            fix_seconds.append(time.time() - began)
    models = ("infvoc", "fixvoc") if options.fixvoc != "none" else ("infvoc",)
    fix_model = model_store.load_model(str(work / "fix-root")) if "fixvoc" in models else None
    if options.retrain and not options.reuse:   # issue 30's cost: a refresh against a retrain on the whole stream
        began = time.time()
        prepare_corpus(spark, write_jsonl(work / "all.jsonl", rows), str(work / "c-all"))
        prepared = time.time() - began
        began = time.time()
        infinite.train(spark, parse(train, ["--corpus", work / "c-all", "--output", work / "inf-retrain", "--topics",
                                            options.topics, "--vocabulary", "infinite", "--tau0", options.tau0,
                                            "--kappa", options.kappa, "--seed", options.seed, "--corpus-size",
                                            options.corpus_size, "--ranking", options.ranking,
                                            *(["--expand", options.expand] if options.expand else []), *schedule]))
        retrained = time.time() - began
        began = time.time()
        train.train(spark, train.parse_request(["--corpus", work / "c-all", "--output", work / "fix-retrain",
                                                "--topics", options.topics, "--iterations", options.iterations,
                                                "--seed", options.seed]))
        print(f"retrain on the whole stream ({len(rows)} documents): prepare {prepared:.0f} s; infvoc train "
              f"{retrained:.0f} s ({json.load(open(work / 'inf-retrain' / 'model.json')).get('passes')} passes); "
              f"fixvoc train {time.time() - began:.0f} s; infvoc's refreshes {' / '.join(f'{x:.0f}' for x in inf_seconds[1:])} s")

    # classification: every entry of the stream inferred under each final model
    import pandas as pd

    from drivers.families import InferRequest
    from jobs.infer import infer as infer_job

    least = options.min_section if options.min_section is not None else (200 if debian else 1)
    counted = Counter(r["label"] for r in rows)
    labels = {r["id"]: r["label"] for r in rows if r["label"] and counted[r["label"]] >= least}
    if (options.split or ("package" if debian else "date")) == "date":
        test_ids = {r["id"] for r in rows[int(0.6 * len(rows)):]}
        split = f"test: the last 40% of the stream (from {rows[int(0.6 * len(rows))]['id'][:8]})"
    else:
        test_packages = {r["package"] for r in rows if hashlib.sha256(r["package"].encode()).digest()[0] < 52}
        test_ids = {r["id"] for r in rows if r["package"] in test_packages}
        split = f"test: the entries of {len(test_packages)} packages"
    everything_path = write_jsonl(work / "stream.jsonl", rows)
    package_split = package_labels(rows) if debian else None
    accuracy = {}
    for name, root in (("infvoc", work / "inf-root"), ("fixvoc", work / "fix-root"))[:len(models)]:
        out = work / f"{name}-inferred"
        infer_job(spark, InferRequest(model_store.resolve(str(root)), everything_path, str(out)))
        accuracy[name] = classification_accuracy(pd.read_parquet(out / "doc_topics.parquet"), labels, test_ids)
        if debian:   # every labelled package tested once (5 folds), per entry and per package (infvoc_folds)
            accuracy[name + "-folds"] = pooled_accuracy(pd.read_parquet(out / "doc_topics.parquet"), labels,
                                                        {r["id"]: r["package"] for r in rows})
            # the label the words carry: the top 20 source packages, each one's later 40% tested (infvoc_package_label)
            accuracy[name + "-package"] = classification_accuracy(pd.read_parquet(out / "doc_topics.parquet"),
                                                                  *package_split)
        # the thesis' features (its code's gamma.txt): each document's theta when the stream reached it
        stream = pd.read_parquet(root / "doc_topics", columns=["doc_id", "theta"])
        accuracy[name + "-stream"] = classification_accuracy(stream, labels, test_ids)
    print(f"classification: {len(labels)} entries labelled by section "
          f"({', '.join(f'{s} {n}' for s, n in counted.most_common() if s and n >= least)}); {split}")

    stop = set(stopword_list("english"))
    everything, last = document_sets(rows, stop), document_sets(batch_rows[-1], stop)
    reference, reference_name = None, "no reference"
    if options.corpus in REFERENCES:
        paragraphs, reference_digest = REFERENCES[options.corpus]()
        reference = document_sets([{"text": t} for t in paragraphs], stop)
        reference_name = f"{len(reference)} paragraphs, digest {reference_digest[:16]}"
    df = Counter(w for d in everything for w in d)
    inf_words = [[w for w, _, _ in t] for t in inf_model.top_words(300)]
    fix_words = [[w for w, _ in t] for t in fix_model.top_words(300)] if fix_model is not None else []
    new = sum(m for t in inf_model.top_words(10) for _, _, m in t)
    print(f"\n{'model':<8} {'NPMI (whole stream)':>20} {'NPMI (last batch)':>18} {'NPMI, words df>=50':>19} "
          f"{'NPMI (reference)':>17} {'median df':>10} {'SVM':>6} {'logistic':>9} {'seconds: base, refreshes':>26}")
    for name, words, seconds in (("infvoc", inf_words, inf_seconds), ("fixvoc", fix_words, fix_seconds))[:len(models)]:
        top = [t[:10] for t in words]
        common = [[w for w in t if df[w] >= 50][:10] for t in words]
        median = sorted(df[w] for t in top for w in t)[len(top) * 5]
        outside = npmi(top, reference) if reference is not None else float("nan")
        print(f"{name:<8} {npmi(top, everything):>20.4f} {npmi(top, last):>18.4f} {npmi(common, everything):>19.4f} "
              f"{outside:>17.4f} {median:>10} {accuracy[name]['svm']:>6.3f} {accuracy[name]['logistic']:>9.3f} "
              f"{' / '.join(f'{s:.0f}' for s in seconds):>26}")
    print(f"NPMI (reference): {reference_name}")
    print(f"infvoc: TOS sizes (min, max, words new to the base in the topics) after each refresh: {sizes}; "
          f"{new} of the {10 * options.topics} top words are new to the base; base vocabulary "
          f"{len(inf_model.known)} words" + (f", fixvoc's {fix_model.lambda_.shape[1]}" if fix_model else ""))
    a = accuracy
    print(f"classification: majority class {a['infvoc']['majority']:.3f} of {a['infvoc']['test_documents']} test "
          f"entries; chance {1 / a['infvoc']['classes']:.3f}; balanced accuracy (mean recall over classes): "
          + "; ".join(f"{m}: SVM {a[m]['svm_balanced']:.3f}, logistic {a[m]['logistic_balanced']:.3f}" for m in models))
    for features in ("", "-stream"):
        print(f"classification, theta {'inferred under the final model' if not features else 'as the stream reached each document'}: "
              + "; ".join(f"{m}: SVM {a[m + features]['svm']:.3f} (balanced {a[m + features]['svm_balanced']:.3f}), "
                          f"logistic {a[m + features]['logistic']:.3f} (balanced {a[m + features]['logistic_balanced']:.3f})"
                          for m in models))
    if debian:
        print("classification, 5 folds of the packages pooled (infvoc_folds), balanced: " + "; ".join(
            f"{m}: per entry SVM {a[m + '-folds']['entry_svm_balanced']:.3f}, logistic "
            f"{a[m + '-folds']['entry_logistic_balanced']:.3f}; per package ({a[m + '-folds']['package_count']}) SVM "
            f"{a[m + '-folds']['package_svm_balanced']:.3f}, logistic {a[m + '-folds']['package_logistic_balanced']:.3f}"
            for m in models))
        print("classification, label the source package (top 20, each one's last 40% by date tested), balanced: "
              + "; ".join(f"{m}: SVM {a[m + '-package']['svm_balanced']:.3f}, logistic "
                          f"{a[m + '-package']['logistic_balanced']:.3f}" for m in models)
              + f"; majority {a['infvoc-package']['majority']:.3f}, chance {1 / a['infvoc-package']['classes']:.3f}")
    print("accuracy " + json.dumps(accuracy))
    for k, words in enumerate(inf_model.top_words(10)[:5]):
        print(f"  infvoc topic {k}: " + " ".join(w + ("+" if m else "") for w, _, m in words))
    alpha = inf_model.alpha      # alpha^theta (--alpha-theta fit learns it; session 27)
    print("infvoc alpha^theta sorted: " + " ".join(f"{a:.4f}" for a in sorted(alpha, reverse=True)))
    for k in sorted(range(len(alpha)), key=lambda j: -alpha[j])[:3]:
        print(f"  infvoc topic {k} (alpha {alpha[k]:.4f}): "
              + " ".join(w + ("+" if m else "") for w, _, m in inf_model.top_words(10)[k]))
    for k, words in enumerate(fix_model.top_words(10)[:5] if fix_model is not None else []):
        print(f"  fixvoc topic {k}: " + " ".join(w for w, _ in words))
    spark.stop()


if __name__ == "__main__":
    main()
