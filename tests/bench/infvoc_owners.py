"""What fixvoc's top words have that infvoc's least coherent topics lack (issue 30, the joined stream's whole-stream
NPMI): a bench run's two final models, topic by topic. For each topic: NPMI of its 10 top words over the whole
stream, its share of the model's evidence (infvoc: sum_t (nu1_kt - 1), the D/|S|-scaled counts (7.6) it holds;
fixvoc: sum_w (lambda_kw - eta)), and of its top words the **ownership** (the topic's share of the word's evidence
over all topics: (nu1_kw - 1) / sum_j (nu1_jw - 1), a word outside a TOS holding 0; fixvoc (lambda_kw - eta) / sum_j
(lambda_jw - eta)), their document frequency, and how much of each top word's E[beta] the stick's prior alone would
give it at its TOS place (the word at Beta(1, alpha^beta) there: 1/(1 + alpha^beta) x the stick left before it).
Summaries over infvoc's topics below 0, its other topics and fixvoc's topics; and, as a check of where the tail's
words come from, the NPMI of infvoc's topics with their top words ranked by the counts they hold (nu1 - 1) rather
than by E[beta] (a reading of the same state, not a model change).

    .venv/bin/python tests/bench/infvoc_owners.py --corpus python-news-joined \\
        --run out/bench/infvoc-python-news-joined-K50-tau64-0-h30own
"""
from __future__ import annotations

import argparse
from collections import Counter

import bench_common  # noqa: F401  (first: puts the project on sys.path)
import numpy as np
from bench_infvoc import document_sets, npmi
from infvoc_corpora import CORPORA


def infvoc_tables(model):
    """(top words, evidence per topic, ownership lookup, prior-only share of each top word's E[beta]) of infvoc."""
    held = Counter()
    for ts in model.sets:
        for w, v in zip(ts.terms, ts.nu1 - 1.0):
            held[str(w)] += float(v)
    top, evidence, owned, prior, by_counts = [], [], [], [], []
    ab = model.settings.alpha_beta
    for k, ts in enumerate(model.sets):
        weights = model.expected_weights(k)
        order = np.argsort(-weights, kind="stable")[:10]
        left = weights / (ts.nu1 / (ts.nu1 + ts.nu2))               # the stick left before each word
        top.append([str(ts.terms[i]) for i in order])
        evidence.append(float((ts.nu1 - 1.0).sum()))
        owned.append([float((ts.nu1[i] - 1.0) / held[str(ts.terms[i])]) if held[str(ts.terms[i])] > 0 else 0.0
                      for i in order])
        prior.append([float(left[i] / (1.0 + ab) / weights[i]) for i in order])
        by_counts.append([str(ts.terms[i]) for i in np.argsort(-(ts.nu1 - 1.0), kind="stable")[:10]])
    return top, np.array(evidence), np.array(owned), np.array(prior), by_counts


def fixvoc_tables(model):
    counts = np.maximum(model.lambda_ - float(model.meta.get("eta", model.lambda_.min())), 0.0)
    words = model.vocab["term"].astype(str).to_numpy()
    top, owned = [], []
    for k in range(counts.shape[0]):
        order = np.argsort(-model.lambda_[k], kind="stable")[:10]
        top.append([words[i] for i in order])
        owned.append(counts[k, order] / np.maximum(counts[:, order].sum(axis=0), 1e-300))
    return top, counts.sum(axis=1), np.array(owned)


def summary(name, per, share, owned, df_of, top, extra=""):
    q = np.quantile
    return (f"{name:<24} {len(per):>3} topics: NPMI {per.mean():7.3f} (median {np.median(per):6.3f}); evidence share "
            f"median {100 * np.median(share):5.2f}% (min {100 * share.min():5.2f}%); top words owned by their topic: "
            f"median {np.median(owned):.2f}, >= 0.5 {100 * (owned >= 0.5).mean():4.0f}%, < 0.1 "
            f"{100 * (owned < 0.1).mean():4.0f}%; df median {int(np.median([df_of[w] for t in top for w in t]))}, "
            f"10% {int(q([df_of[w] for t in top for w in t], 0.1))}{extra}")


def main() -> None:
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.text import stopword_list
    from drivers.store import model_store

    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="python-news-joined")
    parser.add_argument("--run", required=True, help="a bench run's folder")
    parser.add_argument("--show", default="", help="topics to print besides those below 0 (e.g. 38,2)")
    options = parser.parse_args()
    rows = CORPORA[options.corpus]()
    everything = document_sets(rows, set(stopword_list("english")))
    df_of = Counter(w for d in everything for w in d)
    inf = InfVocModel.load(model_store.resolve(f"{options.run}/inf-root"))
    fix = model_store.load_model(f"{options.run}/fix-root")
    top, evidence, owned, prior, by_counts = infvoc_tables(inf)
    per = np.array([npmi([t], everything) for t in top])
    share = evidence / evidence.sum()
    tail = per < 0
    ftop, fevidence, fowned = fixvoc_tables(fix)
    fper = np.array([npmi([t], everything) for t in ftop])
    fshare = fevidence / fevidence.sum()
    print(f"{options.run}: infvoc NPMI whole {per.mean():.4f}, fixvoc {fper.mean():.4f}")
    if tail.any():
        print(summary("infvoc, topics below 0", per[tail], share[tail], owned[tail], df_of, [top[k] for k in np.flatnonzero(tail)],
                      f"; prior-only share of the top words' E[beta] median {np.median(prior[tail]):.2f}"))
    print(summary("infvoc, the others", per[~tail], share[~tail], owned[~tail], df_of, [top[k] for k in np.flatnonzero(~tail)],
                  f"; prior-only share median {np.median(prior[~tail]):.2f}"))
    print(summary("fixvoc, all", fper, fshare, fowned, df_of, ftop))
    low = fper < np.quantile(fper, 0.1)
    print(summary("fixvoc, lowest 10%", fper[low], fshare[low], fowned[low], df_of, [ftop[k] for k in np.flatnonzero(low)]))
    counted = np.array([npmi([t], everything) for t in by_counts])
    print(f"infvoc, top words by held counts (nu1 - 1): NPMI {counted.mean():.4f} (median {np.median(counted):.3f}, "
          f"{int((counted < 0).sum())} below 0; the topics below 0 by E[beta]: {counted[tail].mean() if tail.any() else 0:.3f} "
          f"against {per[tail].mean() if tail.any() else 0:.3f})")
    print("Spearman(evidence share, NPMI): infvoc "
          f"{np.corrcoef(np.argsort(np.argsort(share)), np.argsort(np.argsort(per)))[0, 1]:.2f}, fixvoc "
          f"{np.corrcoef(np.argsort(np.argsort(fshare)), np.argsort(np.argsort(fper)))[0, 1]:.2f}")
    shown = [int(k) for k in options.show.split(",") if k]
    for k in [*np.flatnonzero(tail)[np.argsort(per[tail])], *shown]:
        print(f"  infvoc topic {k} NPMI {per[k]:.3f} share {100 * share[k]:.2f}%: " + " ".join(
            f"{w}(df {df_of[w]}, own {o:.2f}, prior {p:.2f})" for w, o, p in zip(top[k], owned[k], prior[k])))


if __name__ == "__main__":
    main()
