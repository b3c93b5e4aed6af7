"""Infinite vocabulary against a fixed vocabulary on a stream sorted by time (issue 30, 3; thesis Fig. 7.6).

The corpus: the entries of the Debian package changelogs installed on this machine
(``/usr/share/doc/*/changelog.Debian.gz``), one document per entry (package, version, its text), deduplicated by
(package, version), sorted by the entry's date. The first quarter trains the base models; the rest arrives in
``--batches`` refreshes, in date order:

* **infvoc**: ``train --vocabulary infinite`` on the base, then ``refresh --vocabulary infinite`` with each batch
  (raw text; every word may enter a topic);
* **fixvoc**: the project's online LDA on the base's vocabulary (the thesis' "null" vocabulary): ``train`` (hybrid,
  the same K), then ``refresh --mode online`` with each batch, new words never admitted (``--min-new-df`` above
  the corpus size).

Both are scored at the end of the stream by NPMI coherence of each topic's 10 top words (document co-occurrence,
averaged over the 45 pairs and the topics; a pair that never co-occurs scores -1), with two reference corpora: the
whole stream and its last batch (where the new words are). The TOS sizes after each refresh show the memory bound.
Document classification (thesis Table 7.1): every entry of the stream is inferred under each final model
(``infer``: fixvoc with its vocabulary, infvoc over every word), and a multinomial logistic regression (Spark ML) on
the topic proportions predicts the Debian section of the entry's package (``dpkg-query``; sections with at least
``--min-section`` entries), trained on the packages of 80% of the package names (by a hash) and scored on the rest,
so no package is in both. Beside the tests::

    .venv/bin/python tests/bench/bench_infvoc.py --topics 20 --batches 3
"""
from __future__ import annotations

import argparse
import email.utils
import glob
import gzip
import itertools
import json
import math
import re
import shutil
import time
from collections import Counter

from bench_common import CACHE, bench_session  # noqa: E402  (first: puts the project on sys.path)

HEADER = re.compile(r"^([a-z0-9][a-z0-9+.-]*) \(([^)]+)\) ")
TRAILER = re.compile(r"^ -- .*?>\s\s?(.+)$")


def changelog_entries(pattern: str = "/usr/share/doc/*/changelog.Debian.gz") -> list[dict]:
    """One row per changelog entry: id (date, package, version: sorts by time), text, package (the binary
    package whose doc folder holds the changelog)."""
    seen, rows = set(), []
    for path in sorted(glob.glob(pattern)):
        try:
            lines = gzip.open(path, "rt", encoding="utf-8", errors="replace").read().splitlines()
        except (OSError, EOFError):
            continue
        head, body = None, []
        for line in lines:
            match = HEADER.match(line)
            if match:
                head, body = match.groups(), []
                continue
            trailer = TRAILER.match(line)
            if trailer and head:
                try:
                    when = email.utils.parsedate_to_datetime(trailer.group(1).strip())
                except (TypeError, ValueError):
                    head = None
                    continue
                if head not in seen and body:
                    seen.add(head)
                    rows.append({"id": f"{when.astimezone(email.utils.datetime.timezone.utc):%Y%m%dT%H%M%S}"
                                       f"-{head[0]}-{head[1]}", "text": " ".join(body),
                                 "package": path.split("/")[-2]})
                head = None
            elif head:
                text = line.strip()
                if text:
                    body.append(text)
    return sorted(rows, key=lambda r: r["id"])


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"id": r["id"], "text": r["text"]}) + "\n")
    return str(path)


def sections() -> dict:
    """package -> Debian section of the installed packages."""
    import subprocess

    out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Section}\n"], check=True, capture_output=True,
                         text=True).stdout
    return {p.split(":")[0]: s.split("/")[-1] for p, s in (line.split("\t") for line in out.splitlines() if "\t" in line)}


def classification_accuracy(spark, doc_topics_path: str, labels: dict, test_packages: set) -> tuple:
    """(accuracy of a multinomial logistic regression on theta, of the majority class, test documents, balanced
    accuracy: the mean over the test's classes of their recall)."""
    import pandas as pd
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.linalg import Vectors

    frame = pd.read_parquet(doc_topics_path, columns=["doc_id", "theta"])
    frame = frame[frame["doc_id"].isin(labels)]
    classes = sorted({labels[d][1] for d in frame["doc_id"]})
    rows = [(Vectors.dense(list(t)), float(classes.index(labels[d][1])), labels[d][0] in test_packages)
            for d, t in zip(frame["doc_id"], frame["theta"])]
    data = spark.createDataFrame(rows, ["features", "label", "test"])
    train, test = data.where("not test"), data.where("test")
    fit = LogisticRegression(maxIter=200, regParam=1e-4, family="multinomial").fit(train)
    scored = fit.transform(test).select("label", "prediction").toPandas()
    majority = train.groupBy("label").count().orderBy("count", ascending=False).first()["label"]
    balanced = float((scored["label"] == scored["prediction"]).groupby(scored["label"]).mean().mean())
    return (float((scored["label"] == scored["prediction"]).mean()), float((scored["label"] == majority).mean()),
            len(scored), balanced)


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
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--minibatch-size", type=int, default=256)
    parser.add_argument("--alpha-beta", type=float, default=1000.0)
    parser.add_argument("--truncation", type=int, default=4000)
    parser.add_argument("--reorder-delay", type=int, default=10)
    parser.add_argument("--tau0", type=float, default=1.0)
    parser.add_argument("--kappa", type=float, default=0.6)
    parser.add_argument("--passes", type=int, default=1, help="passes of the infinite model's base training")
    parser.add_argument("--iterations", type=int, default=20, help="fixvoc: EM iterations (base and refreshes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reuse", action="store_true", help="score the models of an earlier run again (no training)")
    parser.add_argument("--min-section", type=int, default=200, help="classification: sections with this many entries")
    options = parser.parse_args()

    from drivers.models.infvoc import commands as infinite
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.corpus import prepare_corpus
    from drivers.preparation.text import stopword_list
    from drivers.store import model_root, model_store
    from jobs import refresh, train

    spark = bench_session("bench-infvoc")
    work = CACHE / f"infvoc-debian-{options.seed}"
    if not options.reuse:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    rows = changelog_entries()
    quarter = len(rows) // 4
    size = -(-(len(rows) - quarter) // options.batches)
    base_rows = rows[:quarter]
    batch_rows = [rows[quarter + i * size: quarter + (i + 1) * size] for i in range(options.batches)]
    base = write_jsonl(work / "base.jsonl", base_rows)
    batches = [write_jsonl(work / f"batch{i + 1}.jsonl", b) for i, b in enumerate(batch_rows)]
    print(f"Debian changelog entries: {len(rows)} ({rows[0]['id'][:8]} .. {rows[-1]['id'][:8]}); base "
          f"{len(base_rows)} (to {base_rows[-1]['id'][:8]}), then {options.batches} batches of ~{size}; "
          f"K={options.topics}")
    if not options.reuse:
        prepare_corpus(spark, base, str(work / "c0"))

    def parse(job, argv):
        p = argparse.ArgumentParser()
        job.add_arguments(p, [str(a) for a in argv])
        return p.parse_args([str(a) for a in argv])

    inf_seconds, fix_seconds, sizes = [], [], []
    if not options.reuse:
        # infvoc
        schedule = ["--alpha-beta", options.alpha_beta, "--truncation", options.truncation, "--reorder-delay",
                    options.reorder_delay, "--minibatch-size", options.minibatch_size]
        began = time.time()
        infinite.train(spark, parse(train, ["--corpus", work / "c0", "--output", work / "inf-base", "--topics",
                                            options.topics, "--vocabulary", "infinite", "--tau0", options.tau0,
                                            "--kappa", options.kappa, "--passes", options.passes, "--seed", options.seed,
                                            *schedule]))
        inf_seconds = [time.time() - began]
        sizes = []
        for i, batch in enumerate(batches):
            began = time.time()
            report = infinite.refresh(spark, parse(refresh, ["--model", work / "inf-root", "--input", batch,
                                                             "--vocabulary", "infinite", "--tau0", options.tau0,
                                                             "--kappa", options.kappa, *schedule]
                                                   + (["--base", work / "inf-base"] if i == 0 else [])))
            inf_seconds.append(time.time() - began)
            sizes.append((min(report["tos_sizes"]), max(report["tos_sizes"]), report["new_words_in_topics"]))
    inf_model = InfVocModel.load(model_store.resolve(str(work / "inf-root")))

    if not options.reuse:
        # fixvoc: online LDA on the base vocabulary
        began = time.time()
        train.train(spark, train.parse_request(["--corpus", work / "c0", "--output", work / "fix-base", "--topics",
                                                options.topics, "--iterations", options.iterations, "--seed", options.seed]))
        fix_seconds = [time.time() - began]
        for i, batch in enumerate(batches):
            flags = ["--model", work / "fix-root", "--input", batch, "--mode", "online", "--iterations",
                     options.iterations, "--min-new-df", 10 ** 9, "--tau0", options.tau0, "--kappa", options.kappa]
            began = time.time()
            refresh.refresh_root(spark, refresh.request_from(parse(refresh, flags + (["--base", work / "fix-base"]
                                                                                  if i == 0 else []))))
            fix_seconds.append(time.time() - began)
    fix_model = model_store.load_model(str(work / "fix-root"))

    # classification: every entry of the stream inferred under each final model
    import hashlib

    from drivers.families import InferRequest
    from jobs.infer import infer as infer_job

    section_of = sections()
    counted = Counter(section_of.get(r["package"]) for r in rows)
    labels = {r["id"]: (r["package"], section_of[r["package"]]) for r in rows
              if section_of.get(r["package"]) and counted[section_of[r["package"]]] >= options.min_section}
    test_packages = {p for p, _ in labels.values() if hashlib.sha256(p.encode()).digest()[0] < 52}
    everything_path = write_jsonl(work / "stream.jsonl", rows)
    accuracy = {}
    for name, root in (("infvoc", work / "inf-root"), ("fixvoc", work / "fix-root")):
        out = work / f"{name}-inferred"
        infer_job(spark, InferRequest(model_store.resolve(str(root)), everything_path, str(out)))
        accuracy[name] = classification_accuracy(spark, str(out / "doc_topics.parquet"), labels, test_packages)
    print(f"classification: {len(labels)} entries labelled by section "
          f"({', '.join(f'{s} {n}' for s, n in counted.most_common() if s and n >= options.min_section)}); "
          f"test: the entries of {len(test_packages)} packages")

    stop = set(stopword_list("english"))
    everything, last = document_sets(rows, stop), document_sets(batch_rows[-1], stop)
    df = Counter(w for d in everything for w in d)
    inf_words = [[w for w, _, _ in t] for t in inf_model.top_words(300)]
    fix_words = [[w for w, _ in t] for t in fix_model.top_words(300)]
    new = sum(m for t in inf_model.top_words(10) for _, _, m in t)
    print(f"\n{'model':<8} {'NPMI (whole stream)':>20} {'NPMI (last batch)':>18} {'NPMI, words df>=50':>19} "
          f"{'median df':>10} {'accuracy':>9} {'seconds: base, refreshes':>26}")
    for name, words, seconds in (("infvoc", inf_words, inf_seconds), ("fixvoc", fix_words, fix_seconds)):
        top = [t[:10] for t in words]
        common = [[w for w in t if df[w] >= 50][:10] for t in words]
        median = sorted(df[w] for t in top for w in t)[len(top) * 5]
        print(f"{name:<8} {npmi(top, everything):>20.4f} {npmi(top, last):>18.4f} {npmi(common, everything):>19.4f} "
              f"{median:>10} {accuracy[name][0]:>9.3f} {' / '.join(f'{s:.0f}' for s in seconds):>26}")
    print(f"infvoc: TOS sizes (min, max, words new to the base in the topics) after each refresh: {sizes}; "
          f"{new} of the {10 * options.topics} top words are new to the base; base vocabulary "
          f"{len(inf_model.known)} words, fixvoc's {fix_model.lambda_.shape[1]}")
    print(f"classification: majority class {accuracy['infvoc'][1]:.3f} of {accuracy['infvoc'][2]} test entries; "
          f"balanced accuracy (mean recall over classes) infvoc {accuracy['infvoc'][3]:.3f}, fixvoc "
          f"{accuracy['fixvoc'][3]:.3f}, majority class {1 / len(set(l for _, l in labels.values())):.3f}")
    for k, words in enumerate(inf_model.top_words(10)[:5]):
        print(f"  infvoc topic {k}: " + " ".join(w + ("+" if m else "") for w, _, m in words))
    for k, words in enumerate(fix_model.top_words(10)[:5]):
        print(f"  fixvoc topic {k}: " + " ".join(w for w, _ in words))
    spark.stop()


if __name__ == "__main__":
    main()
