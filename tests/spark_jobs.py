"""The Spark jobs a block of code runs in the session, for tests that bound a command's jobs (a tiny run costs its
number of Spark jobs, not its data: README "Tests")."""
from __future__ import annotations

import contextlib


def _job_ids(spark) -> list:
    """The ids of the session's jobs outside a job group, once the listener bus has delivered every event posted so
    far (the status tracker learns of a job asynchronously: on a loaded machine a job a command has finished may
    not be listed yet, and a count taken then comes out one short)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    return spark.sparkContext.statusTracker().getJobIdsForGroup(None)


def job_count(spark) -> int:
    """How many jobs outside a job group the session has run (see :func:`_job_ids`)."""
    return len(_job_ids(spark))


def last_job(spark) -> int:
    """The id of the session's last job outside a job group (-1: none yet); job ids are consecutive."""
    return max(_job_ids(spark), default=-1)


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
