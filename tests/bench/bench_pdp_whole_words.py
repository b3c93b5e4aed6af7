"""Whole-network mode's held-out word side (issue 28, 3): one spec the split engine runs whole, scored by the
network's own word predictive (the shared word vectors frozen at the trained state, the document's own burst
vectors sampled / seated: drivers/models/pdp_network/whole_words.py) and by the topics' posterior means (the same
model directory without its ``whole_word_*.npy``, as a session-25 directory is read), document completion and left
to right. Not in the default run.

The spec: burst-pyp-lda.json with phi[topic] over a Pitman-Yor phi0[topic] over the corpus root (the split engine
wants phi[topic]'s parent corpus-level: whole-network mode). The corpus: the first ``--documents`` chapters of
sample_data/web_chapters.jsonl.gz (the quickstart's), 20% held out, ``--max-vocab`` words (the burst vectors are
dense in this mode: K x documents x V cells).

    python tests/bench/bench_pdp_whole_words.py [--documents 200] [--topics 10] [--iterations 50] [--seed 1]
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
REPO = Path(__file__).resolve().parents[2]


def spec() -> dict:
    raw = json.loads((REPO / "sample_data" / "networks" / "burst-pyp-lda.json").read_text())
    pyp = {"a": {"value": 0.5, "sample": True}, "b": {"value": 10.0, "sample": True}}
    raw["name"] = "burst-pyp-lda-3"
    raw["nodes"]["phi0"] = {"index": ["topic"], "over": "word", "pyp": pyp,
                            "parents": [{"node": "base", "index": ["corpus"]}]}
    raw["nodes"]["phi"]["parents"] = [{"node": "phi0", "index": ["topic"]}]
    return raw


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--max-vocab", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--particles", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=str(REPO / "out" / "bench" / "whole-words"))
    args = parser.parse_args()
    from bench_common import bench_session
    from conftest import train_args
    from drivers.preparation.heldout_corpus import prepare_with_holdout
    from inference.left_to_right import LeftToRight
    from jobs import train
    from jobs.evaluate import evaluate_model

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spark = bench_session("bench whole-network held-out word side")
    text = out / f"web{args.documents}.jsonl"
    with gzip.open(REPO / "sample_data" / "web_chapters.jsonl.gz", "rt") as src:
        text.write_text("".join(line for _, line in zip(range(args.documents), src)))
    corpus = out / f"web{args.documents}-v{args.max_vocab}"
    if not (corpus / "corpus.json").exists():
        prepare_with_holdout(spark, str(text), str(corpus), 0.2, max_vocab=args.max_vocab, overwrite=True)
    path = out / "burst-pyp-lda-3.json"
    path.write_text(json.dumps(spec()))
    model = out / f"model-K{args.topics}-I{args.iterations}-S{args.seed}"
    t0 = time.process_time()
    meta = train.train(spark, train_args(str(corpus), str(model), "--model", "pdp-network", "--network", str(path),
                                         "--topics", args.topics, "--iterations", args.iterations, "--seed",
                                         args.seed))
    print(json.dumps({"whole_network": meta["hyper"].get("whole_network"), "tokens": meta["data"]["tokens"],
                      "train_cpu_s (driver)": round(time.process_time() - t0, 1)}), flush=True)
    means = Path(str(model) + "-means")
    shutil.rmtree(means, ignore_errors=True)
    shutil.copytree(model, means, ignore=shutil.ignore_patterns("whole_word_*"))
    marker = json.loads((means / "_SUCCESS").read_text())       # the manifest without them: as session 25 wrote it
    for part in ("files", "blake2b"):
        marker[part] = {k: v for k, v in marker[part].items() if not k.startswith("whole_word_")}
    (means / "_SUCCESS").write_text(json.dumps(marker, indent=2))
    rows = {}
    for name, directory in (("network predictive", model), ("posterior means", means)):
        done = evaluate_model(spark, str(directory), str(corpus / "heldout"), seed=args.seed)
        l2r = evaluate_model(spark, str(directory), str(corpus / "heldout"), seed=args.seed,
                             left_to_right=LeftToRight(particles=args.particles, seed=args.seed))["left_to_right"]
        rows[name] = {"completion perplexity": done["perplexity"], "left-to-right bits/word": l2r["bits_per_word"],
                      "left-to-right perplexity": 2.0 ** l2r["bits_per_word"]}
        print(name, json.dumps(rows[name]), flush=True)
    a, b = rows["network predictive"], rows["posterior means"]
    print(f"completion {a['completion perplexity']:.1f} vs {b['completion perplexity']:.1f} "
          f"({a['completion perplexity'] / b['completion perplexity'] - 1:+.1%}); left to right "
          f"{a['left-to-right perplexity']:.1f} vs {b['left-to-right perplexity']:.1f} "
          f"({a['left-to-right perplexity'] / b['left-to-right perplexity'] - 1:+.1%})")


if __name__ == "__main__":
    main()
