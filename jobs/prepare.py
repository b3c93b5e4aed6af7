"""``spark-topics prepare``: raw text -> Parquet corpus and vocabulary (:mod:`drivers.preparation`).

A monolingual input becomes one corpus directory (:mod:`drivers.preparation.corpus`);
with ``--lang-column`` an aligned multilingual input becomes one sub-corpus per
language (:mod:`drivers.preparation.aligned`).
"""
from __future__ import annotations

import argparse
import dataclasses

from drivers import storage
from drivers.preparation import aligned, heldout_corpus, holdout
from drivers.preparation.corpus import prepare_corpus, summary_line
from drivers.preparation.options import FORMATS, PrepareOptions
from drivers.preparation.text import NO_STOPWORDS, available_languages
from inference.errors import UsageError
from jobs.spark import engine_of, get_spark, local_path

def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    """Flags of ``spark-topics prepare`` (``--master``/``--conf``/``-v`` come from the CLI)."""
    d = PrepareOptions()
    io = parser.add_argument_group("input and output")
    io.add_argument("--input", required=True, metavar="PATH", type=local_path,
                    help="a .txt file or directory of .txt files (one document each, id = file "
                         "name without extension), JSON lines (.jsonl, .jsonl.gz, .json), "
                         ".csv with a header row, or Parquet (file or directory)")
    io.add_argument("--output", required=True, metavar="CORPUS_DIR", type=local_path,
                    help="corpus directory: docs.parquet/, vocab.parquet/, rejects/, corpus.json")
    io.add_argument("--format", default=d.format, choices=("auto",) + FORMATS,
                    help="input format (default: detected from the file extensions)")
    io.add_argument("--id-column", default=d.id_column, metavar="NAME",
                    help="document id column of JSON/CSV/Parquet input (default: %(default)s)")
    io.add_argument("--text-column", default=d.text_column, metavar="NAME",
                    help="text column of JSON/CSV/Parquet input (default: %(default)s)")
    io.add_argument("--lang-column", default=None, metavar="NAME",
                    help="aligned multilingual input: rows sharing an id in different languages (this "
                         "column) form one tuple; one sub-corpus per language (see drivers/preparation/aligned.py)")
    io.add_argument("--holdout-fraction", "--heldout-fraction", dest="holdout_fraction", type=float, default=0.0,
                    metavar="F",
                    help="hold out this fraction of the documents (aligned input: of the tuples), chosen by a "
                         "hash of the id, into CORPUS_DIR/heldout, prepared with the training vocabulary, for "
                         "`evaluate` and `select-k` (default: %(default)s, none; --heldout-fraction, train's "
                         "spelling, is the same option)")
    io.add_argument("--partitions", type=int, default=None, metavar="N",
                    help="number of docs.parquet files (default: chosen by Spark)")
    io.add_argument("--overwrite", action="store_true",
                    help="replace the corpus files of an existing non-empty CORPUS_DIR")
    io.add_argument("--segments", default=None, metavar="paragraph|sentence|COLUMN",
                    help="also write segments.parquet: each document's ordered segments, split at blank "
                         "lines (paragraph), at sentence ends (sentence), or given as a list of strings in "
                         "COLUMN (then the text is that column); see drivers/preparation/segments.py")
    io.add_argument("--keep-columns", default=(), metavar="COLUMN[,COLUMN...]",
                    type=lambda text: tuple(c.strip() for c in text.split(",") if c.strip()),
                    help="copy these input columns into docs.parquet as they are (e.g. the authors that "
                         "train --model cluster-lda --author-column reads)")
    io.add_argument("--ordered", action="store_true",
                    help="also keep every document's tokens in text order, after stop-word and vocabulary "
                         "filtering (for models of word order, e.g. --model bigram-lm): ordered.parquet, or "
                         "with --segments the segments (bag-of-words models are unaffected)")

    tok = parser.add_argument_group("tokens")
    tok.add_argument("--language", default=d.language, metavar="NAME",
                     help=f"stop-word list: {', '.join(available_languages())}, or "
                          f"'{NO_STOPWORDS}' (default: %(default)s)")
    tok.add_argument("--stopwords", default=None, metavar="FILE", type=local_path,
                     help="extra stop words, one per line, added to the --language list "
                          "(use --language none to use only these)")
    tok.add_argument("--min-token-length", type=int, default=d.min_token_length, metavar="N",
                     help="shortest token kept, in characters (default: %(default)s)")
    tok.add_argument("--token-pattern", default=d.token_pattern, metavar="REGEX",
                     help="Java regex a token matches; tokens are lower-cased and ’ is read "
                          "as ' (default: letters, with inner apostrophes except 's: %(default)s)")

    voc = parser.add_argument_group("vocabulary")
    voc.add_argument("--min-df", type=count_or_fraction, default=d.min_df, metavar="N|F",
                     help="drop terms in fewer documents: an integer count or a fraction "
                          "in [0, 1] (default: %(default)s)")
    voc.add_argument("--max-df", type=count_or_fraction, default=d.max_df, metavar="F|N",
                     help="drop terms in more documents: a fraction in [0, 1] or an integer "
                          "count (default: %(default)s)")
    voc.add_argument("--max-vocab", type=int, default=None, metavar="N",
                     help="keep only the N most frequent terms after --min-df/--max-df "
                          "(default: no limit)")
    voc.add_argument("--vocab", default=None, metavar="PATH", type=local_path,
                     help="reuse this vocabulary (a vocab.parquet or a corpus directory): no "
                          "pruning, ids kept, other words counted as out-of-vocabulary")


def count_or_fraction(text: str) -> int | float:
    """argparse type of ``--min-df``/``--max-df``: ``"5"`` -> 5, ``"0.5"`` -> 0.5."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer document count or a fraction in [0, 1], got {text!r}") from None


def run(args: argparse.Namespace) -> dict:
    """Entry point of ``spark-topics prepare``: prepare the corpus and print the summary."""
    options = {field.name: getattr(args, field.name) for field in dataclasses.fields(PrepareOptions)
               if hasattr(args, field.name)}
    engine = engine_of(args.master)
    if args.lang_column:
        if engine == "in-process":
            raise UsageError("--master none: an aligned corpus (--lang-column) is prepared with Spark")
        spark = get_spark("spark-topics prepare", args.master, args.conf)
        corpus = aligned.prepare_aligned(spark, args.input, args.output, args.lang_column, args.holdout_fraction,
                                         **options)
        print(aligned.summary_line(corpus, args.output))
        return corpus
    session = lambda: get_spark("spark-topics prepare", args.master, args.conf)  # noqa: E731 (made when needed)
    if args.holdout_fraction:
        corpus = heldout_corpus.prepare_with_holdout(session, args.input, args.output, args.holdout_fraction, engine,
                                              **options)
        print(summary_line(corpus, args.output))
        print(summary_line(corpus["heldout"], storage.join(args.output, holdout.HELDOUT_DIR)) + " (held out)")
        return corpus
    corpus = prepare_corpus(session, args.input, args.output, engine, **options)
    print(summary_line(corpus, args.output))
    return corpus


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("prepare"))
