"""The command line a new user meets: ``--version``, ``--help`` that shows every default in plain words, and one
name per thing (``--model-dir`` for a model directory or root; the old ``--model`` still works, with a note)."""
from __future__ import annotations

import argparse
import re

import pytest

from drivers import registry
from jobs import cli
from jobs.flags import DefaultsFormatter

#: words of the thesis a user of the command line cannot be expected to know
JARGON = re.compile(r"\beq\.? ?\d|\bPsi\b|§")


def parsers():
    for job in cli.JOBS:
        argvs = [[job]] if job != "train" else [[job, "--model", name] for name in registry.MODELS]
        for argv in argvs:
            parser = cli.build_parser(job, argv)
            (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            yield " ".join(argv), sub.choices[job]


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert re.fullmatch(r"spark-topics \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


def test_every_help_shows_its_defaults_without_jargon():
    for label, parser in parsers():
        assert parser.formatter_class is DefaultsFormatter, label
        formatter = parser._get_formatter()
        for action in parser._actions:
            empty = action.default in (None, False, "", argparse.SUPPRESS) or \
                (isinstance(action.default, (list, tuple)) and not action.default)
            if action.option_strings and action.nargs != 0 and not empty:
                assert "default" in formatter._get_help_string(action).lower(), (label, action.option_strings)
        text = parser.format_help()
        assert not JARGON.search(text), (label, JARGON.search(text).group(0))


@pytest.mark.parametrize("job,extra", [("evaluate", ["--corpus", "c"]), ("infer", ["--input", "i", "--output", "o"]),
                                       ("refresh", []), ("topics", []), ("browse", ["--output", "s"])])
def test_model_dir_and_its_old_name(job, extra, capsys):
    parser = cli.build_parser(job, [job])
    new = parser.parse_args([job, "--model-dir", "m", *extra])
    assert capsys.readouterr().err == ""
    old = parser.parse_args([job, "--model", "m", *extra])
    assert capsys.readouterr().err.strip() == "note: --model is now --model-dir here (the old name still works)"
    dest = "model" if job in ("evaluate", "infer", "refresh") else "model_dir"
    assert getattr(new, dest) == getattr(old, dest) and getattr(new, dest).endswith("/m")


def test_inference_choices_in_help_are_every_engine_the_model_accepts():
    """A model with another engine (tlda, ptlda: --inference gibbs) lists it among --inference's choices in its
    help, and its help accepts every choice it lists (issue 29: tlda's help showed {variational,hybrid})."""
    for name, spec in registry.MODELS.items():
        parser = cli.build_parser("train", ["train", "--model", name])
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        action = sub.choices["train"]._option_string_actions.get("--inference")
        if action is None:
            assert not spec.engines, name
            continue
        assert set(registry.inference_modes(name)) <= set(action.choices), (name, action.choices)
        for mode in action.choices:
            cli.build_parser("train", ["train", "--model", name, "--inference", mode])   # builds, no error


@pytest.mark.parametrize("name", ["stm", "seqlda"])
def test_table_sampler_flag_reaches_the_hyperparameters(name):
    """``train --model stm|seqlda --sampler exact`` chooses the exact table sampler (README: seqlda.json's band);
    without it the hyperparameters are as before (cmgs); another value is refused in one line."""
    from drivers.families.gibbs.models import hyper_overrides, initial_hyper, make_model
    from inference.errors import UsageError
    from jobs import train

    base = ["--model", name, "--corpus", "c", "--output", "o", "--topics", "3"]
    model = make_model(registry.model(name), 3, 20)
    for extra, expected in (([], "cmgs"), (["--sampler", "exact"], "exact")):
        request = train.request_from(cli.build_parser("train", ["train", *base, *extra]).parse_args(
            ["train", *base, *extra]))
        assert initial_hyper(model, hyper_overrides(request, model))["sampler"] == expected
    argv = ["train", *base, "--sampler", "fast"]
    with pytest.raises((UsageError, SystemExit)):
        train.request_from(cli.build_parser("train", argv).parse_args(argv))
