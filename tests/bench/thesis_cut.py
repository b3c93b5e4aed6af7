"""The thesis' chapter-5 cut of a JSON-lines corpus (spec 004 §4.6: stop words removed, the first 70 words of each
paper dropped, each truncated to 180 tokens): every document's text is tokenised by ``prepare``'s own tokenizer
(``drivers.preparation.text.tokenize``: Spark's RegexTokenizer with the default pattern and minimum length 2,
lower-cased, then the shipped English stop-word list), its first ``--skip`` tokens are dropped and the next
``--keep`` written back as its text, space-separated. Documents with fewer than ``--skip + --keep`` tokens are left
out, so every kept document has exactly ``--keep`` tokens before ``prepare``'s vocabulary cut (``--min-df 3``), which
re-tokenises them to the same tokens (no stop words are left to remove). Other columns are kept.

    python tests/bench/thesis_cut.py /tmp/pydoc2000.jsonl /tmp/pydoc-cut.jsonl
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--skip", type=int, default=70)
    ap.add_argument("--keep", type=int, default=180)
    args = ap.parse_args(argv)
    from pyspark.sql import SparkSession

    from drivers.preparation.text import load_stopwords, tokenize

    spark = SparkSession.builder.master("local[1]").appName("thesis-cut").config("spark.ui.enabled", "false").getOrCreate()
    rows = [json.loads(line) for line in Path(args.input).read_text(encoding="utf-8").splitlines() if line.strip()]
    df = spark.createDataFrame([(i, r["text"]) for i, r in enumerate(rows)], "row long, text string")
    df = tokenize(df, "text", "tokens", stopwords=load_stopwords("english"))
    cut = {r["row"]: r["tokens"] for r in df.select("row", "tokens").collect()}
    spark.stop()
    written = 0
    with open(args.output, "w", encoding="utf-8") as out:
        for i, row in enumerate(rows):
            tokens = cut[i]
            if len(tokens) < args.skip + args.keep:
                continue
            out.write(json.dumps(dict(row, text=" ".join(tokens[args.skip:args.skip + args.keep]))) + "\n")
            written += 1
    print(f"{written} of {len(rows)} documents have at least {args.skip + args.keep} tokens -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
