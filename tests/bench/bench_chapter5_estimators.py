"""Benchmark: the chapter-5 models' held-out figures by other estimators than ``evaluate --method left-to-right``
(README, "Chapter 5 on real text"): the thesis' harmonic mean (3.57) and, for the measurement check of issue 27
item 1, LDA's left-to-right estimator on the same model.

For a trained ``lda-gibbs``, ``cluster-lda`` or ``dp-mixture`` model and its corpus (the held-out split of the
training corpus, as ``evaluate`` takes it), on the driver, in bits per word:

* ``hm_whole``: the thesis' harmonic mean of the whole test set's sum_d l_{s,d} over S samples of the model's own
  frozen chain (:mod:`inference.gibbs.harmonic_mean`; the thesis' schedules: LDA burn-in 1,000, 200 samples
  every 50 sweeps; cluster-lda 100, 200 every 25; the DP mixture's clusters are exact draws); ``hm_per_document``:
  the sum of every document's own harmonic mean;
* ``lda_l2r`` (a cluster-lda model trained in one cluster throughout, lda-hier): LDA's left-to-right estimator
  (earlier topics resampled before every token, :func:`inference.left_to_right.lda_scores`) with the document
  prior alpha q_1, q_1 the one cluster's predictive (5.7) from the frozen levels (a test document's own additions
  to the cluster level, 1 in ~10^4 document counts, left out); ``lda_l2r_flat_minka`` the same topics with a flat
  alpha m fitted by Minka's fixed point to the training documents' topic counts (recovered from
  doc_topics.parquet's predictive (5.7)); for an lda-gibbs model ``l2r_no_revisit``: its own estimator with
  resampling off (earlier topics never revisited, as cluster-lda's estimator does).

    python tests/bench/bench_chapter5_estimators.py /tmp/ch5/pydoc-cluster-lda-lda1-K50-s1/model /tmp/ch5/pydoc \\
        --seed 1 --particles 5
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from drivers import registry  # noqa: E402
from drivers.families.gibbs.evaluate import open_test_corpus  # noqa: E402
from drivers.families.gibbs.models import open_trained  # noqa: E402
from drivers.models.cluster_lda import one_cluster  # noqa: E402
from drivers.models.cluster_lda.kernels import cluster_topic  # noqa: E402
from inference.gibbs import harmonic_mean  # noqa: E402
from inference.gibbs.heldout import HeldoutSchedule  # noqa: E402
from inference.left_to_right import LEFT_TO_RIGHT, SCORED, LeftToRight, lda_scores  # noqa: E402

SCHEDULES = {"lda-gibbs": (1000, 50, 200), "cluster-lda": (100, 25, 200), "dp-mixture": (0, 1, 200)}


def bits(loglik: float, tokens: int) -> float:
    return -loglik / (tokens * math.log(2))


def one_cluster_prior(model, hyper: dict) -> np.ndarray:
    """(T,) alpha q_1(t): a one-cluster model's document prior, from its frozen levels."""
    ctk, ck, _, kt, ktot = model.frozen_levels()
    alpha, alpha1, alpha0 = model.concentrations(one_cluster.scoring_hyper(hyper))
    T = model.num_topics
    return np.array([alpha * cluster_topic(0, t, ctk, ck, kt, ktot, alpha1, alpha0, T) for t in range(T)])


def training_counts(model_dir: str, corpus_dir: str, prior: np.ndarray, alpha: float) -> np.ndarray:
    """(D, T) the training documents' topic counts N_td = theta_t (N_d + alpha) - alpha q(t), from
    doc_topics.parquet's predictive (5.7) theta and the documents' lengths N_d (docs.parquet ``n_tokens``);
    checked to be whole numbers."""
    import pyarrow.dataset as ds

    table = ds.dataset(str(Path(model_dir) / "doc_topics.parquet"), format="parquet").to_table()
    if "heldout" in table.column_names:              # the held-out documents' rows are the frozen chain's mean
        table = table.filter(ds.field("heldout") == False)  # noqa: E712
    docs = ds.dataset(str(Path(corpus_dir) / "docs.parquet"), format="parquet").to_table(columns=["doc_id", "n_tokens"])
    length_of = dict(zip(docs.column("doc_id").to_pylist(), docs.column("n_tokens").to_pylist()))
    lengths = np.array([length_of[d] for d in table.column("doc_id").to_pylist()], dtype=np.float64)
    theta = np.array(table.column("theta").to_pylist(), dtype=np.float64)
    counts = theta * (lengths[:, None] + alpha) - alpha * prior[None, :]
    whole = np.rint(counts)
    if np.max(np.abs(counts - whole)) > 1e-4 or np.any(whole.sum(axis=1) != lengths):
        raise ValueError(f"the documents' counts are not whole numbers ({np.max(np.abs(counts - whole)):.2e})")
    return whole


def minka_flat(counts: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Minka's fixed point for alpha m (the Dirichlet-multinomial evidence of the documents' topic counts)."""
    from scipy.special import digamma

    a = start.copy()
    lengths = counts.sum(axis=1)
    for _ in range(2000):
        num = (digamma(counts + a[None, :]) - digamma(a[None, :])).sum(axis=0)
        den = (digamma(lengths + a.sum()) - digamma(a.sum())).sum()
        new = a * num / den
        if np.max(np.abs(new - a) / a) < 1e-10:
            return new
        a = new
    return a


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model_dir")
    p.add_argument("corpus_dir")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--particles", type=int, default=5)
    p.add_argument("--samples", type=int, default=None, help="harmonic mean: samples (default the thesis' 200)")
    p.add_argument("--no-hm", action="store_true")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    from jobs.spark import get_spark

    spark = get_spark("bench-chapter5-estimators", "local[1]")
    saved, model = open_trained(args.model_dir, registry)
    meta, hyper = saved.meta, saved.meta["hyper"]
    test, _ = open_test_corpus(spark, registry.of_meta(meta), meta, args.corpus_dir, text_order=True)
    blocks = sorted(test.blocks.collect(), key=lambda item: item[0])
    phi_vk = np.ascontiguousarray(saved.lambda_.T, dtype=np.float64)
    out = {"model": args.model_dir, "model_type": meta["model"], "seed": args.seed,
           "documents": int(sum(b.n_docs for _, b in blocks))}
    if not args.no_hm:
        burn, lag, samples = SCHEDULES[meta["model"]]
        samples = args.samples or samples
        schedule = HeldoutSchedule(burn + lag * samples, burn, lag, samples)
        started = time.process_time()
        parts = [harmonic_mean.estimate(model, b, hyper, phi_vk, schedule, args.seed, part) for part, b in blocks]
        logliks = np.hstack([e.logliks for e in parts])
        tokens = sum(e.tokens for e in parts)
        est = harmonic_mean.HarmonicMean(logliks, tokens, sum(e.skipped for e in parts))
        out.update(hm_whole=bits(est.whole_set, tokens), hm_per_document=bits(est.per_document, tokens),
                   hm_schedule=[burn, lag, samples], hm_tokens=tokens, hm_cpu_s=time.process_time() - started)

    def lda_bits(alpha, resample=True):
        total, tokens = 0.0, 0
        for _, b in blocks:
            rows = lda_scores(b.doc_ids, b.token_ptr(), b.words, alpha, phi_vk,
                              LeftToRight(args.particles, resample, args.seed))
            total += rows[:, LEFT_TO_RIGHT].sum()
            tokens += int(rows[:, SCORED].sum())
        return bits(total, tokens)

    if meta["model"] == "cluster-lda" and one_cluster.never_left(hyper):
        prior = one_cluster_prior(model, hyper)
        out["lda_l2r"] = lda_bits(prior)
        alpha = model.concentrations(one_cluster.scoring_hyper(hyper))[0]
        counts = training_counts(args.model_dir, args.corpus_dir, prior / alpha, alpha)
        out["training_documents"] = int(counts.shape[0])
        flat = minka_flat(counts, prior)
        out.update(lda_l2r_flat_minka=lda_bits(flat), minka_alpha=float(flat.sum()), hier_alpha=float(alpha),
                   prior_top5={"hier": sorted(prior / prior.sum())[-5:], "minka": sorted(flat / flat.sum())[-5:]})
    if meta["model"] == "lda-gibbs":
        alpha = np.asarray(hyper["alpha"], dtype=np.float64)
        out.update(l2r=lda_bits(alpha), l2r_no_revisit=lda_bits(alpha, resample=False))
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
