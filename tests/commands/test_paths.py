"""Path flags are resolved on the driver: every job's parser (train: every model and engine) gives each flag
that names a file or directory one of ``jobs.spark.PATH_TYPES``, so a relative path means the folder the job
was started in, also for executors that run in a worker's folder; URIs are left alone."""
from __future__ import annotations

import argparse
import os
import re

import pytest

from drivers import registry
from jobs import cli
from jobs.spark import PATH_TYPES, local_path, path_list, path_map

#: the path flags of every job (train: the common ones; the models' own below)
EXPECTED = {
    "prepare": {"--input", "--output", "--stopwords", "--vocab"},
    "train": {"--corpus", "--output", "--checkpoint-dir"},
    "infer": {"--model", "--input", "--output"},
    "evaluate": {"--model", "--language-models", "--corpus", "--reference", "--output", "--stability-of"},
    "select-k": {"--corpus", "--output", "--heldout"},
    "topics": {"--model-dir"},
    "evolution": {"--model-dir", "--output"},
    "tree": {"--dictionary", "--corpus", "--output"},
    "refresh": {"--model", "--input", "--base", "--probe", "--drift-report"},
    "browse": {"--model-dir", "--output"},
}
MODEL_PATHS = {"lda": {"--prior"}, "tlda": {"--tree"}, "ptlda": {"--tree"}, "pdp-network": {"--network"}}
#: models whose --path is Wallach's path assumption (minimal|maximal), not a file
PATH_ASSUMPTION = {"tlm", "cluster-lda"}
#: names of files and directories (MODEL_DIR, PATH, FILE, ROOT, "directory", ...) in a metavar or a help text
PATH_WORDS = re.compile(r"\b[A-Z_]*(DIR|PATH|FILE|ROOT)\b|\b(director(y|ies)|folder|file)\b")
PATH_NAMES = re.compile(r"^--(input|output|corpus|dictionary)$|-(dir|file|path|root)$")


def looks_like_a_path(action) -> bool:
    """The flag's name, its metavar or the first clause of its help names a file or directory."""
    first_clause = re.split(r"[:;(]", action.help or "")[0]
    return bool(PATH_NAMES.search(action.option_strings[-1]) or PATH_WORDS.search(action.metavar or "")
                or PATH_WORDS.search(first_clause))


def job_parsers():
    """(label, job, parser) for every job, and for train every model and each of its engines."""
    for job in cli.JOBS:
        argvs = [[job]] if job != "train" else [
            [job, "--model", name] + (["--inference", mode] if mode else [])
            for name in registry.MODELS for mode in [None, *registry.inference_modes(name)]]
        for argv in argvs:
            parser = cli.build_parser(job, argv)
            (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            yield " ".join(argv), job, sub.choices[job]


def path_flags(parser) -> set:
    return {a.option_strings[0] for a in parser._actions if a.type in PATH_TYPES}


def test_every_path_flag_of_every_job_is_resolved():
    seen = set()
    for label, job, parser in job_parsers():
        model = label.split()[2] if job == "train" else None
        expected = EXPECTED[job] | MODEL_PATHS.get(model, set())
        assert expected <= path_flags(parser), (label, expected - path_flags(parser))
        for action in parser._actions:
            if not action.option_strings or action.nargs == 0 or action.type in PATH_TYPES:
                continue
            if model in PATH_ASSUMPTION and action.option_strings == ["--path"]:
                continue   # minimal|maximal: the path counts of a hierarchy of Dirichlets, not a file
            assert not looks_like_a_path(action), \
                f"{label} {action.option_strings[0]} looks like a path: give it type=local_path (jobs/spark.py)"
        seen.add(job)
    assert seen == set(EXPECTED) == set(cli.JOBS)


def test_relative_paths_become_absolute_and_uris_stay(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = str(tmp_path)
    args = cli.build_parser("train", ["train", "--model", "lda"]).parse_args(
        ["train", "--corpus", "out/c", "--output", "./m/", "--topics", "3", "--checkpoint-dir", "../ck",
         "--prior", "seeds.txt"])
    assert (args.corpus, args.output, args.checkpoint_dir, args.prior) == (
        f"{here}/out/c", f"{here}/m", os.path.join(os.path.dirname(here), "ck"), f"{here}/seeds.txt")
    for uri in ("hdfs:///data/c", "s3a://bucket/c", "file:///tmp/c", "file:/tmp/c", "gs://b/c", "abfss://x@y/c"):
        assert local_path(uri) == uri
    assert local_path("/abs/c") == "/abs/c"
    assert path_list("a.index, hdfs:///d/b.tsv") == f"{here}/a.index,hdfs:///d/b.tsv"
    assert path_map("en=m_en, es=s3a://b/m_es,bad") == f"en={here}/m_en,es=s3a://b/m_es,bad"
    evaluate = cli.build_parser("evaluate", ["evaluate"]).parse_args(
        ["evaluate", "--model", "m", "--corpus", "c", "--language-models", "en=m1,es=/x/m2"])
    assert (evaluate.model, evaluate.corpus, evaluate.language_models) == (
        f"{here}/m", f"{here}/c", f"en={here}/m1,es=/x/m2")


@pytest.mark.parametrize("argv", [["train", "--corpus", "c", "--output", "o", "--topics", "2"]])
def test_train_request_parsed_outside_the_cli_is_resolved_too(argv, tmp_path, monkeypatch):
    """train.parse_request (the Python API's parser) applies the same types."""
    from jobs import train

    monkeypatch.chdir(tmp_path)
    request = train.parse_request(argv[1:])
    assert (request.corpus, request.output) == (f"{tmp_path}/c", f"{tmp_path}/o")
