"""Diagnostic: Wallach's chapter-5 ordering on data drawn from the cluster model itself (README, "Chapter 5 on real
text"). The true model must win: cluster-lda's left-to-right bits per word on held-out documents drawn from the same
model below lda-gibbs's, which is below the DP mixture's.

The corpus (thesis (5.16), (5.30), (5.15)): K topics phi_k ~ Dir(beta) over V words; C planted clusters, each with its
own topic base measure m_c (a few topics of its own carry most of the mass, ``--own`` of them, the rest share
``--leak``); a document picks its cluster uniformly, theta_d ~ Dir(alpha m_c), a length uniform in
[``--min-len``, ``--max-len``] and draws its words. Training and test documents are drawn alike. Every model is
trained in process (:func:`inference.gibbs.local.run_local_tables`: the engine's steps on one block, no Spark) with
the bench_chapter5 settings (lda-gibbs: beta sampled, alpha m by Minka's fixed point; cluster-lda: 50 iterations
of its one-cluster LDA, then clusters; dp-mixture) and scored by its ``left_to_right`` with the training statistics
frozen (the topics the final state's (5.7)).

    python tests/bench/bench_chapter5_planted.py --seeds 1,2
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from drivers.models.cluster_lda.model import ClusterLDA  # noqa: E402
from drivers.models.dp_mixture.model import DPMixture  # noqa: E402
from drivers.models.lda_gibbs.model import LdaGibbs  # noqa: E402
from inference.gibbs.local import run_local_tables  # noqa: E402
from inference.gibbs.model import SegmentedBlock  # noqa: E402
from inference.left_to_right import LeftToRight  # noqa: E402


def planted_corpus(args, seed: int):
    """(train docs, test docs, true clusters of the training docs): lists of word-id lists."""
    rng = np.random.default_rng(seed)
    K, V, C = args.topics, args.vocab, args.clusters
    phi = rng.dirichlet(np.full(V, args.beta), K)
    m = np.full((C, K), args.leak / K)
    for c in range(C):
        own = [(c * args.own + j) % K for j in range(args.own)]
        m[c, own] += (1 - args.leak) / args.own
    m /= m.sum(axis=1, keepdims=True)

    def draw(n):
        clusters = rng.integers(0, C, n)
        docs, counts = [], np.zeros((n, K))
        for d, c in enumerate(clusters):
            theta = rng.dirichlet(args.alpha * m[c])
            length = int(rng.integers(args.min_len, args.max_len + 1))
            topics = rng.choice(K, length, p=theta)
            counts[d] = np.bincount(topics, minlength=K)
            docs.append([int(rng.choice(V, p=phi[t])) for t in topics])
        return docs, counts
    train, train_counts = draw(args.train)
    test, _ = draw(args.test)
    return train, test, {"phi": phi, "m": m, "counts": train_counts}


def oracle(truth, test_block, alpha: float, particles: int, seed: int):
    """Bits per word of the test block under the true topics: the true cluster model (p(w_d) = mean over the
    clusters c of LDA's p(w_d | alpha m_c), each by LDA's left-to-right), and LDA with one flat alpha m fitted by
    Minka's fixed point to the training documents' true topic counts (the best a flat prior does)."""
    from inference.dm.estimators import estimate
    from inference.dm.histograms import CountHistograms
    from inference.left_to_right import LEFT_TO_RIGHT, SCORED, lda_scores

    phi_vk = np.ascontiguousarray(truth["phi"].T)
    settings = LeftToRight(particles, True, seed)
    ptr, words, ids = test_block.token_ptr(), test_block.words, test_block.doc_ids
    per_cluster = np.stack([lda_scores(ids, ptr, words, alpha * m_c, phi_vk, settings)[:, LEFT_TO_RIGHT]
                            for m_c in truth["m"]])
    tokens = lda_scores(ids, ptr, words, alpha * truth["m"][0], phi_vk, LeftToRight(1, False, seed))[:, SCORED].sum()
    mixture = np.logaddexp.reduce(per_cluster, axis=0) - math.log(len(truth["m"]))
    flat = estimate(CountHistograms(truth["m"].shape[1]).add_counts(truth["counts"]), "fixed-point").alpha_m
    lda = lda_scores(ids, ptr, words, flat, phi_vk, settings)[:, LEFT_TO_RIGHT]
    to_bits = -1 / (tokens * math.log(2))
    return mixture.sum() * to_bits, lda.sum() * to_bits, float(flat.sum())


def block_of(docs, prefix):
    return SegmentedBlock.from_segments([(f"{prefix}{d:05d}", [w]) for d, w in enumerate(docs)])


def score(model, hyper, tables, derived, test_block, particles, seed):
    """Bits per word of the test block by the model's left-to-right (and its importance-sampling figure)."""
    model.bind_result(SimpleNamespace(tables=tables, hyper=hyper))
    phi_vk = (np.zeros((model.vocab_size, 1)) if "nwk" not in tables      # the DP mixture: its clusters' words
              else np.ascontiguousarray(model.topic_word(tables["nwk"], derived["nk"], hyper).T))
    rows = model.left_to_right(test_block, hyper, phi_vk, LeftToRight(particles, True, seed)).per_document
    tokens = rows[:, 2].sum()
    return -rows[:, 0].sum() / (tokens * math.log(2)), -rows[:, 1].sum() / (tokens * math.log(2))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1")
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--vocab", type=int, default=500)
    p.add_argument("--clusters", type=int, default=4)
    p.add_argument("--own", type=int, default=3, help="topics that carry a cluster's mass")
    p.add_argument("--leak", type=float, default=0.1, help="the mass of m_c spread over every topic")
    p.add_argument("--alpha", type=float, default=3.0)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--train", type=int, default=400)
    p.add_argument("--test", type=int, default=100)
    p.add_argument("--min-len", type=int, default=50)
    p.add_argument("--max-len", type=int, default=180)
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--one-cluster-iterations", type=int, default=50)
    p.add_argument("--particles", type=int, default=10)
    p.add_argument("--models", default="lda-gibbs,cluster-lda,dp-mixture")
    args = p.parse_args(argv)
    print(f"{'seed':>4} {'model':12} {'bits/word':>10} {'importance':>10} {'CPU s':>7}  final state")
    for seed in map(int, args.seeds.split(",")):
        train, test, truth = planted_corpus(args, seed)
        train_block, test_block = block_of(train, "d"), block_of(test, "t")
        K, V = args.topics, args.vocab
        true_cluster, true_lda, flat_sum = oracle(truth, test_block, args.alpha, args.particles, seed)
        print(f"{seed:>4} {'true model':12} {true_cluster:>10.4f} {'':>10} {'':>7}  the true topics, m_c and alpha")
        print(f"{seed:>4} {'true-phi LDA':12} {true_lda:>10.4f} {'':>10} {'':>7}  the true topics, flat alpha m by "
              f"Minka on the true topic counts (sum {flat_sum:.3g})", flush=True)
        for name in args.models.split(","):
            if name == "lda-gibbs":
                model = LdaGibbs(K, V)
                hyper = model.initial_hyper(beta_update="sample")
            elif name == "cluster-lda":
                model = ClusterLDA(K, V)
                hyper = model.initial_hyper(one_cluster_iterations=args.one_cluster_iterations)
            else:
                model = DPMixture(K, V)
                hyper = model.initial_hyper()
            started = time.process_time()
            _, state, hyper, tables, derived = run_local_tables(model, train_block, args.iterations, seed=seed,
                                                                hyper=hyper)
            bits, importance = score(model, hyper, tables, derived, test_block, args.particles, seed)
            cpu = time.process_time() - started
            note = f"beta {hyper['beta']:.3g}"
            if name == "lda-gibbs":
                note += f", sum alpha m {sum(hyper['alpha']):.3g}"
            if "cluster" in state:
                sizes = sorted(np.unique(state["cluster"], return_counts=True)[1].tolist(), reverse=True)
                sizes = [s for s in sizes if s]
                note += f", {len(sizes)} clusters {sizes[:8]}"
                if name == "cluster-lda":
                    note += (f", alpha {hyper['alpha_doc']:.3g}, alpha1 {hyper['alpha1']:.3g}, alpha0 "
                             f"{hyper['alpha0']:.3g}, zeta {hyper['zeta']:.3g}")
            print(f"{seed:>4} {name:12} {bits:>10.4f} {importance:>10.4f} {cpu:>7.1f}  {note}", flush=True)


if __name__ == "__main__":
    main()
