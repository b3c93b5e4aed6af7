"""Failures in one line: what a user can act on, without the JVM's and Python's stack traces."""
from __future__ import annotations

import re

_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$")


def one_line(exc: BaseException) -> str:
    """The cause of a failure in one line: for an error raised in Spark's JVM its deepest ``Caused by``, and for
    one raised in a Python task the task's own exception."""
    text = str(exc)
    if getattr(exc, "java_exception", None) is None:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        return f"{type(exc).__name__}: {first[:500]}"
    lines = [line.strip() for line in text.splitlines()]
    causes = [line[len("Caused by:"):].strip() for line in lines if line.startswith("Caused by:")]
    cause = causes[-1] if causes else next((line for line in lines if line), "Spark failed")
    if "PythonException" in cause or "PythonException" in text:
        python = [line for line in lines if _PYTHON_ERROR.match(line) and not line.startswith(("org.", "java."))]
        cause = python[-1] if python else cause
    return cause[:500]


def is_spark_failure(exc: BaseException) -> bool:
    """Raised in Spark's JVM (a Py4J error), e.g. a task that could not read a file."""
    return getattr(exc, "java_exception", None) is not None
