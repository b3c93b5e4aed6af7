"""``spark-topics topics``: print the top words of every topic of a trained model."""
from __future__ import annotations

import argparse

from drivers.models.infvoc import model as infinite_model
from drivers.store import model_store, topics_text
from jobs.flags import add_model_dir


def add_arguments(parser: argparse.ArgumentParser, argv=None) -> None:
    add_model_dir(parser, "MODEL_DIR, or a model ROOT (its LATEST version)", dest="model_dir")
    parser.add_argument("--version", default=None,
                        help="a model root's version to read (default: its LATEST; a number like 000003 is enough)")
    parser.add_argument("--top-words", "-n", type=int, default=10)
    parser.add_argument("--weights", action="store_true", help="show each word's probability")


def run(args) -> str:
    meta = model_store.read_meta(args.model_dir, getattr(args, "version", None))
    if infinite_model.is_infinite(meta):     # marks the words that entered after the base vocabulary
        directory = model_store.resolve(args.model_dir, getattr(args, "version", None))
        text = infinite_model.InfVocModel.load(directory).format_topics(args.top_words, args.weights)
        print(text)
        return text
    model = model_store.load_model(args.model_dir, getattr(args, "version", None))
    text = topics_text.format_model_topics(model, args.top_words, args.weights)
    print(text)
    return text


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.cli import job_main
    sys.exit(job_main("topics"))
