"""``spark-topics tree``: a two-level prior tree from bilingual dictionaries for a prepared corpus.

    spark-topics tree --dictionary /usr/share/dictd/freedict-eng-spa.index,/usr/share/dictd/freedict-spa-eng.index \\
        --corpus CORPUS_DIR --output TREE_DIR

Dictionaries: FreeDict dictd files as Debian's ``dict-freedict-*`` packages install them (the ``.index``, its
``.dict.dz`` beside it; languages from the name, ``--languages eng=en,spa=es`` to override) or TSV files of pairs
(``lang1<TAB>word1<TAB>lang2<TAB>word2``). Phrases are normalised with the corpus' own tokenizer; single-word pairs
whose two words are in the corpus vocabularies become concepts (:mod:`drivers.models.tree.prior_tree`). Prints the
coverage report,
which ``TREE_DIR/tree.json`` keeps.
"""
from __future__ import annotations

import logging

from drivers import storage
from drivers.corpora.files import CORPUS_JSON
from drivers.models.tree.dictionaries import read_dictionaries
from drivers.models.tree.prior_tree import build_concepts, format_report, save_tree
from inference.errors import UsageError
from jobs.spark import get_spark, local_path, path_list

log = logging.getLogger("spark_topics.tree")


def add_arguments(parser, argv=None) -> None:
    parser.add_argument("--dictionary", required=True, type=path_list,
                        help="comma-separated dictionaries: FreeDict .index files (dictd) or .tsv files of pairs")
    parser.add_argument("--corpus", required=True, type=local_path,
                        help="the prepared corpus the tree is for (monolingual or aligned)")
    parser.add_argument("--output", required=True, type=local_path, help="the tree directory to write")
    parser.add_argument("--languages", default=None,
                        help="ISO 639-3 code of a dictionary name -> the corpus' language code, e.g. eng=en,spa=es "
                             "(default: the usual two-letter codes)")


def parse_languages(text: str | None) -> dict:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        if "=" not in item:
            raise UsageError(f"--languages expects CODE=LANG pairs separated by commas, got {item!r}")
        code, language = item.split("=", 1)
        out[code.strip().lower()] = language.strip()
    return out


def corpus_vocabulary(corpus_dir: str) -> tuple[dict, tuple, dict]:
    """((language, word) -> global id, the corpus' languages, its tokenizer options per language)."""
    from drivers.corpora.aligned import aligned_vocab, is_aligned

    meta_path = storage.join(corpus_dir, CORPUS_JSON)
    if not storage.exists(meta_path):
        raise UsageError(f"{corpus_dir} is not a prepared corpus (no {CORPUS_JSON}): run spark-topics prepare first")
    meta = storage.load_json(meta_path)
    if is_aligned(corpus_dir):          # global ids over the languages' concatenated vocabularies
        languages = tuple(meta["languages"])
        vocab, _ = aligned_vocab(corpus_dir, languages)
        options = {l: (storage.load_json(storage.join(corpus_dir, l, CORPUS_JSON)).get("options") or {})
                   for l in languages}
        return dict(zip(zip(vocab["lang"], vocab["term"]), vocab["id"].astype(int))), languages, options
    vocab = storage.read_vocab(storage.join(corpus_dir, "vocab.parquet"))
    return (dict(zip(zip([""] * len(vocab), vocab["term"]), vocab["id"].astype(int))), ("",),
            {"": meta.get("options") or {}})


def spark_tokenizer(spark, options: dict):
    """``tokenize(language, phrases)`` with the corpus' own tokenizer (its pattern and minimum length; no stop-word
    removal, so a phrase with a stop word in it still counts as several words)."""
    from drivers.preparation.text import DEFAULT_TOKEN_PATTERN, tokenize as tokenize_frame

    def tokenize(language: str, phrases: list[str]) -> list[list[str]]:
        opts = options.get(language) or {}
        frame = spark.createDataFrame([(i, p) for i, p in enumerate(phrases)], "i long, text string")
        rows = tokenize_frame(frame, "text", "tokens", pattern=opts.get("token_pattern") or DEFAULT_TOKEN_PATTERN,
                              min_token_length=int(opts.get("min_token_length") or 2)).select("i", "tokens").collect()
        by_index = {r["i"]: list(r["tokens"]) for r in rows}
        return [by_index[i] for i in range(len(phrases))]
    return tokenize


def build(spark, dictionaries: list[str], corpus_dir: str, output: str, languages: dict | None = None) -> dict:
    vocabulary, corpus_languages, options = corpus_vocabulary(corpus_dir)
    pairs = list(read_dictionaries(dictionaries, languages))
    if not pairs:
        raise UsageError(f"no translation pairs in {', '.join(dictionaries)}")
    spark.sparkContext.setJobDescription("tree: tokenise the dictionaries' phrases")
    concepts, report = build_concepts(pairs, spark_tokenizer(spark, options), vocabulary, corpus_languages)
    spark.sparkContext.setJobDescription(None)
    if len(concepts) == 0:
        dropped = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in report.get("dropped", {}).items() if n)
        raise UsageError(f"no concept: none of the {len(pairs)} dictionary pairs has both its words in the "
                         f"vocabularies of {corpus_dir} ({dropped or 'none kept'}); a tree without concepts makes "
                         f"tlda/ptlda plain LDA. Check --languages and that the dictionaries are of the corpus' "
                         f"languages; nothing was written")
    corpus_meta = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))
    from drivers.corpora.files import data_version

    meta = {"languages": list(corpus_languages), "dictionaries": list(dictionaries),
            "corpus": {"path": storage.absolute(corpus_dir), "version": data_version(corpus_meta)}, "report": report}
    save_tree(output, concepts, meta)
    return meta


def run(args) -> dict:
    spark = get_spark("spark-topics tree", args.master, args.conf)
    dictionaries = [d.strip() for d in args.dictionary.split(",") if d.strip()]
    meta = build(spark, dictionaries, args.corpus, args.output, parse_languages(args.languages))
    print(format_report(meta["report"]))
    print(f"tree written to {args.output}")
    return meta


if __name__ == "__main__":
    import sys

    from jobs.cli import job_main

    sys.exit(job_main("tree"))
