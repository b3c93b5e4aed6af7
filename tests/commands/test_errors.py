"""Errors as exceptions (issue 26, 5): library code raises the project's exception, only the command line exits;
model options and settings are checked against their declared constraints, in one line naming the flag."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from numbers import Integral, Real

import pytest

from drivers import registry
from inference.constraints import (AT_LEAST_1, NON_NEGATIVE, POSITIVE, TOPICS, UNIT_LEFT, Interval, StrOptions, check,
                                   validate)
from inference.errors import DamagedError, RefusedError, SparkTopicsError, UsageError
from jobs import train

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: the one module that turns the project's exception into an exit status
CLI = os.path.join("jobs", "cli.py")


def _is_main_block(node) -> bool:
    """``if __name__ == "__main__":`` (a job module run by spark-submit: an entry point, it may exit)."""
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


def _exits(tree) -> list:
    """Line numbers where the code names SystemExit or calls sys.exit / exit / quit, outside ``__main__`` blocks."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if _is_main_block(node):
            continue
        if isinstance(node, ast.Name) and node.id == "SystemExit":
            found.append(node.lineno)
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "exit" and isinstance(f.value, ast.Name)
                    and f.value.id == "sys") or (isinstance(f, ast.Name) and f.id in ("exit", "quit")):
                found.append(node.lineno)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(found)


def test_no_system_exit_below_the_command_line():
    """No module of drivers/, inference/, partitioners/ or jobs/ raises or names SystemExit, or exits, except the
    CLI (jobs/cli.py) and the job modules' ``__main__`` blocks (spark-submit's entry points, which call it)."""
    offenders, scanned = [], 0
    for package in ("drivers", "inference", "partitioners", "jobs"):
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, ROOT)
                if relative == CLI:
                    continue
                with open(path, encoding="utf-8") as f:
                    source = f.read()
                scanned += 1
                offenders += [f"{relative}:{line}" for line in _exits(ast.parse(source, relative))]
    assert scanned > 80, scanned
    assert not offenders, "SystemExit or an exit below the CLI: " + ", ".join(offenders)
    # the check can fail: it finds both ways of exiting, and spares only a __main__ block
    assert _exits(ast.parse("def f():\n    raise SystemExit('x')\n")) == [2]
    assert _exits(ast.parse("import sys\nsys.exit(1)\nif __name__ == '__main__':\n    sys.exit(2)\n")) == [2]


def test_a_bad_option_raises_the_project_exception_and_the_cli_exits_with_one_line(tmp_path, capsys):
    """A library call with a bad option raises UsageError (a ValueError, not SystemExit) naming the flag; the
    command line turns the same refusal into exit status 1 and the message alone, one line on stderr."""
    argv = ["--model", "lda-gibbs", "--corpus", str(tmp_path / "c"), "--output", str(tmp_path / "m"), "--topics",
            "3", "--beta", "-1"]
    with pytest.raises(UsageError, match=r"^--beta must be a positive number, got -1\.0$") as refused:
        train.parse_request(argv)
    assert isinstance(refused.value, ValueError) and not isinstance(refused.value, SystemExit)

    from jobs.cli import main
    with pytest.raises(SystemExit) as exited:
        main(["train", *argv])
    assert exited.value.code == "--beta must be a positive number, got -1.0"      # Python prints it, status 1
    run = subprocess.run([sys.executable, "-m", "jobs.cli", "train", *argv], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and run.stderr == "--beta must be a positive number, got -1.0\n", run.stderr
    assert not (tmp_path / "m").exists()                      # refused before anything was written

    # a refusal from deep inside a job (a model directory that is not complete) takes the same one path
    with pytest.raises(DamagedError, match="has no _SUCCESS marker"):
        from drivers.store import model_store
        model_store.load_model(str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        main(["topics", "--model", str(tmp_path)])
    assert exited.value.code.startswith(f"{tmp_path} has no _SUCCESS marker") and "\n" not in exited.value.code


@pytest.mark.parametrize("name", sorted(registry.MODELS))
def test_every_model_option_with_a_constraint_is_checked_when_the_request_is_made(tmp_path, name):
    """Each registered model's declared constraints are checked by the request, before a session or a corpus:
    a value outside refused in one line naming the flag; a value inside accepted."""
    spec = registry.model(name)
    base = ["--model", name, "--corpus", str(tmp_path / "c"), "--output", str(tmp_path / "m"), "--topics", "3"]
    for option in [o for o in spec.options if o.constraint is not None]:
        bad = {POSITIVE: "-1", UNIT_LEFT: "1.5", AT_LEAST_1: "0"}.get(option.constraint, "no-such-value")
        with pytest.raises(UsageError, match=rf"^{option.flag} must be .*, got "):
            train.parse_request(base + [option.flag, bad])
    with pytest.raises(UsageError, match=r"^--alpha must be a positive number, got 0\.0$"):
        train.parse_request(base + ["--alpha", "0"])
    with pytest.raises(UsageError, match=r"^--topics must be at least 2, got 1$"):
        train.parse_request(base[:-1] + ["1"])
    request = train.parse_request(base)
    assert request.topics == 3


def test_the_families_settings_declare_their_constraints(tmp_path):
    """The Gibbs family's and the variational family's settings refuse values outside their declared constraints
    when the request is made (before, --checkpoint-every 0 was found after the corpus was loaded)."""
    gibbs = ["--model", "lda-gibbs", "--corpus", "c", "--output", str(tmp_path / "m"), "--topics", "3"]
    for flags, message in ((["--checkpoint-every", "0"], "--checkpoint-every must be at least 1, got 0"),
                           (["--heldout-fraction", "1"], r"--heldout-fraction must be in \[0, 1\), got 1\.0"),
                           (["--samples", "0"], "--samples must be at least 1, got 0"),
                           (["--burn-in", "-2"], "--burn-in must be at least 0, got -2")):
        with pytest.raises(UsageError, match=f"^{message}$"):
            train.parse_request(gibbs + flags)
    lda = ["--model", "lda", "--corpus", "c", "--output", str(tmp_path / "m"), "--topics", "3"]
    for flags, message in ((["--tol", "-1"], r"--tol must be a number >= 0, got -1\.0"),
                           (["--hybrid-samples", "0"], "--hybrid-samples must be at least 1, got 0"),
                           (["--hybrid-alpha-warmup", "-3"], "--hybrid-alpha-warmup must be at least -1, got -3"),
                           (["--eta", "0"], r"--eta must be a positive number, got 0\.0")):
        with pytest.raises(UsageError, match=f"^{message}$"):
            train.parse_request(lda + flags)


def test_constraints_describe_what_they_accept():
    """Interval and StrOptions: the boundaries as declared, never a bool, NaN or infinity; None is 'not given'."""
    cases = [(POSITIVE, 1e-300, 0.0, "a positive number"), (NON_NEGATIVE, 0, -1e-9, "a number >= 0"),
             (AT_LEAST_1, 1, 0, "at least 1"), (TOPICS, 2, 1, "at least 2"), (UNIT_LEFT, 0.0, 1.0, "in [0, 1)"),
             (Interval(Real, 0.5, 1, closed="right"), 1, 0.5, "in (0.5, 1]"),
             (Interval(Integral, None, 3, closed="neither"), 2, 3, "an integer < 3"),
             (StrOptions(("auto", "jobs", "resident")), "jobs", "Jobs", "one of auto, jobs, resident"),
             (StrOptions({"b", "a"}), "a", "c", "a or b")]
    for constraint, good, bad, text in cases:
        assert str(constraint) == text
        assert check("--x", good, constraint) == good and check("--x", None, constraint) is None
        with pytest.raises(UsageError) as refused:
            check("--x", bad, constraint)
        assert str(refused.value) == f"--x must be {text}, got {bad!r}"
    for value in (True, float("nan"), float("inf"), "1", 1.5):
        assert not AT_LEAST_1.accepts(value), value
    assert not POSITIVE.accepts(True) and not POSITIVE.accepts(float("inf")) and POSITIVE.accepts(3)
    with pytest.raises(UsageError, match=r"^SparkTopicsLDA: maxIter must be at least 1, got 0$"):
        validate({"maxIter": 0}, {"maxIter": AT_LEAST_1}, name=lambda p: f"SparkTopicsLDA: {p}")


def test_the_exception_types():
    """One base; bad usage and damaged files are also ValueErrors (what pyspark.ml users catch), a refusal a
    RuntimeError; the errors of the corpus preparation show the job's name on the command line."""
    from drivers.models.lda.informed_prior import PriorError
    from drivers.storage import OutsideDirectory
    from jobs.cli import exit_message
    from drivers.preparation.options import PrepareError
    from drivers.models.tree.dictionaries import DictionaryError

    assert issubclass(UsageError, ValueError) and issubclass(DamagedError, ValueError)
    assert issubclass(RefusedError, RuntimeError) and not issubclass(RefusedError, ValueError)
    for cls in (UsageError, RefusedError, DamagedError, PrepareError, PriorError, DictionaryError, OutsideDirectory):
        assert issubclass(cls, SparkTopicsError) and not issubclass(cls, SystemExit)
    assert exit_message(PrepareError("input path does not exist: x"), "infer") == \
        "spark-topics infer: input path does not exist: x"
    assert exit_message(UsageError("--topics must be at least 2, got 1"), "train") == \
        "--topics must be at least 2, got 1"
