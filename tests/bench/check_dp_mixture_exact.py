"""A slow, direct check of dp-mixture's left-to-right score on real held-out documents (README, "Chapter 5"):
every held-out document's p(w_d | training state) = sum_c pi_c prod_n p(w_n | c, w_<n) recomputed here in plain
Python from the saved clusters (cluster_words.npy, cluster_docs.npy, zeta, beta), token by token in document order
(the predictive chain with the document's own earlier words counted), and the total compared with ``evaluate
--method left-to-right --json``'s bits per word; a few documents also by the closed form (lnGamma ratios).

    python tests/bench/check_dp_mixture_exact.py MODEL_DIR CORPUS_DIR L2R_JSON [--documents 5]

(the held-out documents: doc_topics.parquet's rows marked heldout)
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from scipy.special import gammaln, logsumexp



def chain_log_p(words, counts, totals, log_prior, beta):
    """sum_n log p(w_n | w_<n): the posterior over clusters updated token by token (plain loops)."""
    V = counts.shape[1]
    log_post = log_prior.copy()
    extra = [dict() for _ in range(counts.shape[0])]
    seen = 0
    total = 0.0
    for w in words:
        joint = np.array([log_post[c] + math.log((counts[c, w] + extra[c].get(w, 0) + beta)
                                                 / (totals[c] + seen + V * beta)) for c in range(counts.shape[0])])
        step = logsumexp(joint)
        total += step
        log_post = joint - step
        for c in range(counts.shape[0]):
            extra[c][w] = extra[c].get(w, 0) + 1
        seen += 1
    return total


def closed_form(words, counts, totals, log_prior, beta):
    """log sum_c pi_c DM(w_d | N_c + beta) by lnGamma ratios."""
    V = counts.shape[1]
    ids, n = np.unique(words, return_counts=True)
    per = [log_prior[c] + np.sum(gammaln(counts[c, ids] + n + beta) - gammaln(counts[c, ids] + beta))
           - gammaln(totals[c] + n.sum() + V * beta) + gammaln(totals[c] + V * beta) for c in range(counts.shape[0])]
    return float(logsumexp(per))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model_dir", type=Path)
    p.add_argument("corpus_dir", type=Path)
    p.add_argument("l2r_json", type=Path)
    p.add_argument("--documents", type=int, default=5)
    args = p.parse_args(argv)
    meta = json.loads((args.model_dir / "model.json").read_text())
    words = np.load(args.model_dir / "cluster_words.npy", allow_pickle=False).astype(np.float64)
    docs = np.load(args.model_dir / "cluster_docs.npy", allow_pickle=False).astype(np.float64)
    beta, zeta = float(meta["hyper"]["beta"]), float(meta["hyper"]["zeta"])
    rows = pq.read_table(args.model_dir / "doc_topics.parquet", columns=["doc_id", "heldout"]).to_pylist()
    trained_ids = {r["doc_id"] for r in rows if not r["heldout"]}
    counts = np.vstack([words, np.zeros((1, words.shape[1]))])
    totals = counts.sum(axis=1)
    log_prior = np.log(np.append(docs, zeta) / (docs.sum() + zeta))
    ordered = pq.read_table(args.corpus_dir / "ordered.parquet").to_pylist()
    V = words.shape[1]
    total, tokens, checked = 0.0, 0, 0
    for row in ordered:
        if row["doc_id"] in trained_ids:          # the held-out documents: those the model was not trained on
            continue
        seq = [w for seg in row["segments"] for w in seg if 0 <= w < V]
        if not seq:
            continue
        value = chain_log_p(seq, counts, totals, log_prior, beta)
        if checked < args.documents:
            other = closed_form(np.array(seq), counts, totals, log_prior, beta)
            print(f"{row['doc_id']}: {len(seq)} tokens, chain {value:.6f}, closed form {other:.6f}, "
                  f"difference {value - other:.2e} nats")
            checked += 1
        total += value
        tokens += len(seq)
    figures = json.loads(args.l2r_json.read_text())
    bits = -total / (tokens * math.log(2))
    print(f"held-out documents' tokens {tokens} (evaluate: {figures['tokens']['scored']}); "
          f"bits per word: direct {bits:.6f}, evaluate {figures['bits_per_word']:.6f}, "
          f"difference {bits - figures['bits_per_word']:.2e}")


if __name__ == "__main__":
    main()
