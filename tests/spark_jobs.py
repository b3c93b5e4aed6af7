"""The Spark jobs a block of code runs in the session, for tests that bound a command's jobs (a tiny run costs its
number of Spark jobs, not its data: README "Tests")."""
from __future__ import annotations

import contextlib


def last_job(spark) -> int:
    """The id of the session's last job outside a job group (-1: none yet); job ids are consecutive."""
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(None), default=-1)


def job_names(spark, first: int, last: int) -> list:
    """Where each job ``first..last`` comes from: its last stage's name (the call site, e.g. ``collect at
    drivers/engines/variational/tasks.py:18``)."""
    tracker, names = spark.sparkContext.statusTracker(), []
    for job in range(first, last + 1):
        info = tracker.getJobInfo(job)
        stages = [tracker.getStageInfo(s) for s in (info.stageIds if info is not None else ())]
        names.append(next((s.name for s in reversed(stages) if s is not None), "?"))
    return names


@contextlib.contextmanager
def counted_jobs(spark):
    """``with counted_jobs(spark) as jobs:`` ... then ``len(jobs)`` is the number of Spark jobs the block ran and
    ``jobs`` their call sites (the last job of the block must be outside a job group, as every job of ours
    but the Gibbs engine's resident stage is)."""
    first = last_job(spark) + 1
    jobs: list = []
    yield jobs
    jobs.extend(job_names(spark, first, last_job(spark)))
