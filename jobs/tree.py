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
from drivers.models.tree.build import dictionary_concepts
from drivers.models.tree.prior_tree import format_report, save_tree
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


def build(spark, dictionaries: list[str], corpus_dir: str, output: str, languages: dict | None = None) -> dict:
    concepts, report, corpus_languages, n_pairs = dictionary_concepts(spark, dictionaries, corpus_dir, languages)
    if len(concepts) == 0:
        dropped = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in report.get("dropped", {}).items() if n)
        raise UsageError(f"no concept: none of the {n_pairs} dictionary pairs has both its words in the "
                         f"vocabularies of {corpus_dir} ({dropped or 'none kept'}); a tree without concepts makes "
                         f"tlda/ptlda plain LDA. Check --languages and that the dictionaries are of the corpus' "
                         f"languages; nothing was written")
    corpus_meta = storage.load_json(storage.join(corpus_dir, CORPUS_JSON))
    from drivers.corpora.files import data_version

    meta = {"languages": list(corpus_languages), "dictionaries": list(dictionaries), "language_codes": languages or {},
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
