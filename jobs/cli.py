"""The ``spark-topics`` console script: one subcommand per job in ``jobs/``.

Each job module exposes ``add_arguments(parser, argv)`` (``argv``: the command
line, so ``train`` can offer the flags of the model it names) and ``run(args)``;
the same module runs under ``spark-submit jobs/<job>.py`` with the same flags.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from drivers.failures import one_line
from inference.errors import SparkTopicsError
from jobs.flags import DefaultsFormatter
from jobs.spark import add_spark_arguments, setup_logging

JOBS = {
    "prepare": "raw text -> Parquet corpus and vocabulary",
    "train": "fit a topic model on a prepared corpus",
    "infer": "topic proportions for new documents with a trained model",
    "evaluate": "held-out perplexity, held-out ELBO and coherence (gensim's c_v, c_npmi, u_mass and ours)",
    "select-k": "train once per number of topics K and compare them on held-out documents (table and curves)",
    "topics": "print the top words of every topic of a trained model",
    "evolution": "per-segment topic proportions of one document and their changes (Gibbs models), with a plot",
    "tree": "a prior tree from bilingual dictionaries, for tree LDA (tlda, ptlda)",
    "refresh": "the next version of a model root from new documents (accumulate, online or batch updates)",
    "browse": "a static site to explore a model's topics (opens from file://, no server)",
}


def installed_version() -> str:
    """The installed package's version (pyproject.toml's when run from a checkout without an install)."""
    from importlib import metadata

    try:
        return metadata.version("spark-topics")
    except metadata.PackageNotFoundError:
        import os
        import tomllib

        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml"),
                  "rb") as f:
            return tomllib.load(f)["project"]["version"]


def module_name(job: str) -> str:
    """The module of a job in ``jobs/`` (``select-k`` -> ``select_k``)."""
    return job.replace("-", "_")


def build_parser(only: str | None = None, argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark-topics", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"spark-topics {installed_version()}")
    sub = parser.add_subparsers(dest="job", required=True)
    for name, help_text in JOBS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(f"jobs.{module_name(name)}")
        p = sub.add_parser(name, help=help_text, description=help_text, formatter_class=DefaultsFormatter)
        module.add_arguments(p, argv)
        p.formatter_class = DefaultsFormatter
        add_spark_arguments(p)
        p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return parser


def main(argv: list[str] | None = None, only: str | None = None) -> int:
    """Run one job; its :class:`SparkTopicsError` (what library code raises for a failure a user can act on)
    becomes the exit status 1 and its one line on stderr, here and nowhere else. Any other failure is one line
    naming its cause, or with ``-v`` the whole trace."""
    argv = list(sys.argv[1:] if argv is None else argv)
    job = only or next((a for a in argv if a in JOBS), "")
    try:
        parser = build_parser(only, argv)
        args, unknown = parser.parse_known_args(argv)
        job = args.job
        module = importlib.import_module(f"jobs.{module_name(args.job)}")
        if unknown:
            explain = getattr(module, "unknown_arguments", None)
            parser.error(explain(args, unknown) if explain else f"unrecognized arguments: {' '.join(unknown)}")
        setup_logging(args.verbose)
        try:
            module.run(args)
        except SparkTopicsError:
            raise
        except Exception as exc:  # a failure a user can act on gets one line; -v keeps the whole trace
            if args.verbose:
                raise
            raise SystemExit(f"spark-topics {args.job}: {one_line(exc)} (run with -v for the full trace)") from None
    except SparkTopicsError as exc:
        raise SystemExit(exit_message(exc, job)) from None
    return 0


def exit_message(exc: SparkTopicsError, job: str) -> str:
    """The one line the command line prints for a refusal (``spark-topics JOB:`` first where the error asks)."""
    text = " ".join(str(exc).split("\n")).strip()
    return f"spark-topics {job}: {text}" if exc.names_job and job else text


def job_main(name: str, argv: list[str] | None = None) -> int:
    """Entry point for ``spark-submit jobs/<name>.py ...`` (same flags as the subcommand)."""
    return main([name] + list(sys.argv[1:] if argv is None else argv), only=name)


if __name__ == "__main__":
    sys.exit(main())
