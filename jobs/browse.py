"""``spark-topics browse``: a static site to explore a trained model's topics (no Spark, no server, no network)."""
from __future__ import annotations

import argparse

from drivers.browse.build import FORMATS, build
from jobs.flags import add_model_dir
from jobs.spark import local_path


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    add_model_dir(parser, "MODEL_DIR, or a model ROOT (its LATEST version; the page shows drift across versions)",
                  dest="model_dir")
    parser.add_argument("--version", default=None,
                        help="a model root's version to show (default: its LATEST; a number like 000003 is enough)")
    parser.add_argument("--output", required=True, metavar="SITE", type=local_path,
                        help="the folder to write: open SITE/index.html in a browser, or copy it to any static host")
    parser.add_argument("--format", choices=FORMATS, default="site",
                        help="site (default): our page; pyldavis: pyLDAvis' prepared data (and its page when "
                             "pyLDAvis is installed)")
    parser.add_argument("--top-docs", type=int, default=10, help="documents listed per topic (default: 10)")
    parser.add_argument("--no-coherence", dest="coherence", action="store_false",
                        help="skip the NPMI coherence (one pass over the training corpus)")


def run(args) -> dict:
    result = build(args.model_dir, args.output, args.version, args.format, args.top_docs, args.coherence)
    what = f"{result['topics']} topics, " if result["topics"] is not None else ""
    print(f"browse: wrote {result['output']} ({what}{result['files']} files, {result['seconds']} s); "
          f"open {result['open']}")
    return result


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("browse"))
