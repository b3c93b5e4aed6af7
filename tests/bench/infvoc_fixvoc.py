"""The thesis' fixvoc hybrid-null for ``bench_infvoc.py --fixvoc minibatches`` (issue 30; moved out of the bench
to keep it under 400 lines)."""
from __future__ import annotations

import time


def fixvoc_on_minibatches(spark, work, parts, options, parse, write_jsonl) -> list:
    """The thesis' fixvoc hybrid-null (§7.5): online hybrid LDA over the minibatches infvoc sees (each part of the
    stream cut into --minibatch-size documents, as ``run_stream`` cuts it), one pass, one online step per
    minibatch (``refresh --mode online --iterations 1``), the vocabulary the first minibatch's words (prepared
    with --min-df 1; no word enters later). Returns the seconds of the first training and of all refreshes."""
    from drivers.preparation.corpus import prepare_corpus
    from jobs import refresh, train

    size = options.minibatch_size
    chunks = [part[i:i + size] for part in parts for i in range(0, len(part), size)]
    first = write_jsonl(work / "fix-mb0.jsonl", chunks[0])
    began = time.time()
    prepare_corpus(spark, first, str(work / "fix-c0"), min_df=1)
    train.train(spark, train.parse_request(["--corpus", work / "fix-c0", "--output", work / "fix-base", "--topics",
                                            options.topics, "--iterations", 1, "--seed", options.seed]))
    seconds = [time.time() - began]
    began = time.time()
    for j, chunk in enumerate(chunks[1:], 1):
        path = write_jsonl(work / "fix-mb.jsonl", chunk)
        flags = ["--model", work / "fix-root", "--input", path, "--mode", "online", "--iterations", 1,
                 "--min-new-df", 10 ** 9, "--tau0", options.tau0, "--kappa", options.kappa,
                 "--corpus-size", options.corpus_size]
        refresh.refresh_root(spark, refresh.request_from(parse(refresh, flags + (["--base", work / "fix-base"]
                                                                              if j == 1 else []))))
    seconds.append(time.time() - began)
    return seconds
