"""The project's exceptions: what library code raises for a failure a user can act on, in one line.

Library code (``inference``, ``partitioners``, ``drivers``, the library modules under ``jobs``) raises these and
never exits the interpreter; the command line (:mod:`jobs.cli`) prints the message as the one line on stderr
and exits with status 1, and a notebook or the Spark ML API gets the exception. The subclasses tell apart what a
caller may do about it: fix the call (:class:`UsageError`), wait or change the situation
(:class:`RefusedError`), write the files again (:class:`DamagedError`).
"""
from __future__ import annotations


class SparkTopicsError(Exception):
    """A failure of spark-topics a user can act on; ``str(exc)`` is one line that says what to do."""

    #: the command line shows the message after ``spark-topics JOB:`` (an error of a step that several jobs run,
    #: such as preparing a corpus, which does not know the job that ran it)
    names_job = False


class UsageError(SparkTopicsError, ValueError):
    """Bad flags, parameters or input: a value out of range, a flag of another model, a corpus of the wrong kind
    for the model, a path that is not what the job needs. Also a ``ValueError``, as pyspark.ml's params raise."""


class RefusedError(SparkTopicsError, RuntimeError):
    """An operation refused in the present situation: another run holds the output, the model does not fit the
    memory, the model does not support it, the output would replace something that must be kept."""


class DamagedError(SparkTopicsError, ValueError):
    """A model directory, corpus, checkpoint, tree or model root that is damaged or incomplete (a missing, changed
    or unreadable file, numbers that cannot be the model's): write it again."""
