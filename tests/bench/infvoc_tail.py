"""Where the infinite-vocabulary model's least coherent topics come from (issue 30), in this process: the default
schedule (each part's minibatches ``--passes`` times, ``expand="every"``, D the documents seen) run as
:func:`infvoc_ladder.run_tos` runs it, watching after every step each topic's evidence, sum_t (nu1_kt - 1) (the
D/|S|-scaled counts (7.6) the topic holds), and the nu1 of the stream's rare words (document frequency <=
``--rare``). At the end: each topic's NPMI over the whole stream against its share of that evidence, and for the
topics below 0 their evidence at the end of each part and their rare top words (when they entered, nu1 after each
pass over the last part against 1 + D/|part| x the word's tokens in the part, the stationary value of (7.7)'s
average if every token went to the topic). ``--unscaled-df N``: a screen of the hypothesis that a rare word's few
counts, scaled by D/|S|, lift it into a topic's top words: the words of stream df <= N enter (7.6)-(7.8) at their
counts instead.

    .venv/bin/python tests/bench/infvoc_tail.py --corpus python-news-joined [--seed 1] [--unscaled-df 12]
"""
from __future__ import annotations

from collections import Counter

import bench_common  # noqa: F401  (first: puts the project on sys.path)
import numpy as np
import pandas as pd
from bench_infvoc import npmi
from infvoc_corpora import CORPORA
from infvoc_ladder import run_tos, schedule
from infvoc_sweep import scoring_sets, stream_arguments, stream_parts, tokens_of


def main() -> None:
    from drivers.models.infvoc.model import InfVocModel
    from drivers.preparation.text import stopword_list
    from inference.infvoc.base_measure import CharNgramBase
    from inference.infvoc.tos import OnlineSettings, TopicSet

    parser = stream_arguments("python-news-joined")
    parser.add_argument("--alpha-beta", type=float, default=1000.0)
    parser.add_argument("--truncation", type=int, default=2000)
    parser.add_argument("--delay", type=int, default=10)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--rare", type=int, default=12)
    parser.add_argument("--unscaled-df", type=int, default=0)
    options = parser.parse_args()
    rows = CORPORA[options.corpus]()
    stop = set(stopword_list("english"))
    base_vocab, parts = stream_parts(rows, options.batches, stop)
    quarter = len(rows) // 4                   # the words prepare cut from the base as too frequent (df > 50%)
    base_df = Counter(w for r in rows[:quarter] for w in set(tokens_of(r["text"], stop)))
    frequent = {w for w, n in base_df.items() if n > 0.5 * quarter}
    parts = [[(d, t) for d, t in ((d, [w for w in t if w not in frequent]) for d, t in part) if t] for part in parts]
    everything = scoring_sets(rows, stop, options)[0]
    stream_df = Counter(w for d in everything for w in d)
    rare = {w for w, n in stream_df.items() if n <= options.rare}
    unscaled = frozenset(w for w, n in stream_df.items() if n <= options.unscaled_df)
    settings = OnlineSettings(alpha_beta=options.alpha_beta, truncation=options.truncation, delay=options.delay,
                              tau0=options.tau0, kappa=options.kappa, expand="every")
    steps = schedule(parts, "passes", options.minibatch_size, settings, options.passes, options.passes)
    ends = np.cumsum([options.passes * len(range(0, len(p), options.minibatch_size)) for p in parts])
    last_steps = len(range(0, len(parts[-1]), options.minibatch_size))
    evidence, watched = [], {}

    def watch(n, sets):
        evidence.append([float((s.nu1 - 1.0).sum()) for s in sets])
        if n > ends[-2] and (n - ends[-2]) % last_steps == 0:               # after each pass over the last part
            for k, s in enumerate(sets):
                hit = s.nu1 > 1.05
                for w, v in zip(s.terms[hit], s.nu1[hit]):
                    if w in rare:
                        watched.setdefault((k, w), {})[n] = float(v)

    base = CharNgramBase.fit(base_vocab)
    sets, alpha = run_tos(steps, base, settings, [TopicSet.empty() for _ in range(options.topics)], options.seed,
                          watch=watch, unscaled=unscaled)
    model = InfVocModel(sets, base, alpha, settings, pd.Index(base_vocab, dtype=object))
    top = [[w for w, _, _ in t] for t in model.top_words(10)]
    per = np.array([npmi([t], everything) for t in top])
    evidence = np.array(evidence)
    share = evidence[-1] / evidence[-1].sum()
    order = np.argsort(share)
    rank_of = np.empty(len(share), dtype=int)
    rank_of[order] = np.arange(len(share))
    tail = np.flatnonzero(per < 0)
    rare_top = np.array([np.mean([w in rare for w in t]) for t in top])
    last_tokens = Counter(w for _, t in parts[-1] for w in t)
    scale_part = sum(len(p) for p in parts) / len(parts[-1])
    print(f"{options.corpus} seed {options.seed} (unscaled df <= {options.unscaled_df}): NPMI whole {per.mean():.4f}, "
          f"median topic {np.median(per):.3f}, {len(tail)} below 0; Spearman(evidence share, NPMI) "
          f"{pd.Series(share).corr(pd.Series(per), method='spearman'):.2f}; rare top words (df <= {options.rare}) "
          f"{100 * rare_top.mean():.1f}% (below-0 topics {100 * rare_top[tail].mean() if len(tail) else 0:.0f}%); "
          f"evidence share of the below-0 topics {np.round(100 * share[tail], 2)}% (ranks among {len(share)} "
          f"{sorted(rank_of[tail].tolist())}), mean share {100 / len(share):.1f}%", flush=True)
    for k in tail[np.argsort(per[tail])]:
        at_ends = [round(float(evidence[e - 1, k])) for e in ends]
        print(f"  topic {k}: NPMI {per[k]:.3f}, evidence at the end of each part {at_ends} (the median topic's "
              f"{[round(float(np.median(evidence[e - 1]))) for e in ends]})")
        ts = sets[k]
        for w in top[k]:
            i = ts.index.get_loc(w)
            line = f"    {w:>14} df {stream_df[w]:4d} entered {int(ts.since[i]):3d} nu1 {ts.nu1[i]:7.2f}"
            if w in rare:
                trail = watched.get((k, w), {})
                line += (f"; after each last-part pass {[round(v, 2) for v in trail.values()]}, bound "
                         f"1 + D/|part| x tokens {1 + scale_part * last_tokens[w]:.1f}")
            print(line)


if __name__ == "__main__":
    main()
