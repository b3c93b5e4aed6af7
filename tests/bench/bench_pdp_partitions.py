"""Benchmark (issue 28, pyp-lda): a network trained through the Gibbs engine's hooks in this process (no Spark) on
the bench corpus of ``bench_pdp_perplexity.py`` (run that first: it prepares the corpus), with its documents split
into P partitions that sweep side by side on private copies of the summed tables (the engine's AD-LDA), or one
after the other on the tables the previous one left (``--sequential``: no staleness, the exact sampler in
distribution), then scored by ``evaluate``'s held-out estimator (document completion, 50 sweeps, 5 samples).
Shows what the partitions' staleness does to a network, e.g. to the Pitman-Yor word side's tables::

    python tests/bench/bench_pdp_partitions.py --network pyp-lda --parts 2 [--sequential] [--iterations 100]

Prints every 10th iteration (log-likelihood per token, the largest topic's share of the tokens, the word side's
tables, a and b) and the perplexity."""
from __future__ import annotations

import argparse
import time

import numpy as np

from bench_common import CACHE  # noqa: E402  (first: puts the project on sys.path)


def common_arguments(parser: argparse.ArgumentParser) -> None:
    """--iterations, --topics, --seed (the in-process benches of the WEB chapters in sentences)."""
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--seed", type=int, default=3)


def web_sentences():
    """(training, held-out) in-process corpora of ``bench_pdp_perplexity.py``'s WEB chapters in sentences."""
    from drivers.corpora.in_process import load_segmented_corpus

    corpus = CACHE / "web-chapters-sentences-holdout20"
    return load_segmented_corpus(str(corpus), 1), load_segmented_corpus(str(corpus / "heldout"), 1)


def main() -> None:
    from drivers.evaluation.heldout import score_heldout
    from drivers.models.pdp_network import words_pyp
    from drivers.models.pdp_network.model import PdpNetwork
    from inference.gibbs.block import SegmentedBlock
    from inference.gibbs.heldout import HeldoutSchedule
    from inference.gibbs.tables import merge

    parser = argparse.ArgumentParser()
    parser.add_argument("--network", default="pyp-lda")
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--sequential", action="store_true")
    common_arguments(parser)
    args = parser.parse_args()
    train, test = web_sentences()
    whole = train.blocks[0][1]
    docs = [(whole.doc_ids[d], [whole.words[whole.seg_ptr[s]:whole.seg_ptr[s + 1]].tolist()
                                for s in range(whole.doc_ptr[d], whole.doc_ptr[d + 1])]) for d in range(whole.n_docs)]
    model = PdpNetwork(args.topics, train.vocab_size)
    hyper = model.initial_hyper(network=args.network)
    blocks = [model.prepare_block(SegmentedBlock.from_segments(docs[p::args.parts])) for p in range(args.parts)]
    states = [model.initial_state(b, hyper, args.seed + p) for p, b in enumerate(blocks)]

    def tables():
        parts = [model.table_counts(b, st, np.unique(b.words, return_inverse=True)) for b, st in zip(blocks, states)]
        return {t.name: merge(t, [c[t.name] for c in parts]) for t in model.count_tables()}
    summary, samples, cpu = None, 0, time.process_time()
    for it in range(1, args.iterations + 1):
        tabs, stats = tables(), []
        for p, (b, st) in enumerate(zip(blocks, states)):
            if args.sequential and p > 0:
                tabs = tables()
            own = {k: np.array(v, copy=True) for k, v in tabs.items()}
            model.sweep_tables(b, st, hyper, own, model.derive(own), 1000 * it + p)
            stats.append(model.partition_stats(b, st, hyper, 7000 * it + p))
        stats = np.sum(stats, axis=0)
        tabs = tables()
        hyper = model.update_hyper(hyper, stats, whole.n_docs, 90 + it)
        tabs, hyper, _ = model.global_step(tabs, hyper, stats, 40 + it)
        if it % 10 == 0:
            nk = tabs["nwk"].sum(axis=0)
            print(f"{it:4d} log-lik/token {model.loglik(tabs, model.derive(tabs), hyper) / whole.n_tokens:.4f}  "
                  f"largest topic {nk.max() / nk.sum():.3f}  word tables "
                  f"{int(tabs[words_pyp.TABLE].sum()) if words_pyp.TABLE in tabs else '-'}  a {hyper['a_values']}  "
                  f"b {hyper['b_values']}  {time.process_time() - cpu:.0f} CPU s", flush=True)
        if it > args.iterations - 50 and (args.iterations - it) % 10 == 0:      # 5 samples, 10 apart
            summary = model.summarise_sample(summary, tabs, model.derive(tabs), hyper)
            samples += 1
    score = score_heldout(None, model, hyper, summary / samples, test.blocks, HeldoutSchedule.default(50, 5, 0.5), 1)
    print(f"perplexity {score['perplexity']:.1f}  ({args.network}, {args.parts} partitions"
          f"{', one after the other' if args.sequential else ''}, {args.iterations} iterations)")


if __name__ == "__main__":
    main()
