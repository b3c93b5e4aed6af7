"""Progress of a phase that runs as Spark jobs (prepare, infer, evaluate on Spark; train between its iterations'
own lines): every few seconds a short line with the tasks done of the stages running now, a bar in a terminal,
the time left of those stages (:func:`drivers.progress.line`); nothing for a phase shorter than that. Read from
Spark's status tracker by a thread beside the driver's work."""
from __future__ import annotations

import contextlib
import logging
import threading
import time

from drivers import progress

log = logging.getLogger("spark_topics.progress")


def running_tasks(tracker) -> tuple[tuple, int, int]:
    """(ids of the active stages, their tasks done, their tasks) from a ``StatusTracker``."""
    stages, done, total = [], 0, 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            stages.append(stage_id)
            done += info.numCompletedTasks
            total += info.numTasks
    return tuple(sorted(stages)), done, total


@contextlib.contextmanager
def watching(spark, what: str, every: float = progress.EVERY, between_steps: bool = False):
    """Log ``what``'s progress line every ``every`` seconds while the block runs (``spark`` None: nothing);
    ``between_steps``: only when no step's own line (a training iteration's, :func:`drivers.progress.stepped`)
    came in the last ``every`` seconds, so a long start-up or first iteration (kernels compiled on a fresh install,
    a large corpus read) is not silent and short iterations print their own lines only."""
    if spark is None:
        yield
        return
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()

    def watch():
        stages, since = (), time.perf_counter()
        while not stop.wait(every):
            running, done, total = running_tasks(tracker)
            if running != stages:            # other stages: their time left counts from now
                stages, since = running, time.perf_counter()
            if total and not (between_steps and progress.seconds_since_step() < every):
                log.info("%s: %s", what, progress.line(done, total, time.perf_counter() - since, what="tasks"))

    thread = threading.Thread(target=watch, name=f"progress of {what}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
