"""Progress of a phase run as Spark jobs (prepare, infer, evaluate on Spark): ``drivers/spark_progress.py``."""
from __future__ import annotations

import logging
import time

from drivers.spark_progress import watching


def test_a_spark_phase_logs_its_tasks_and_time_left(spark_session, caplog):
    """``watching``: while Spark runs a stage of 4 tasks of 0.6 s each, lines of the tasks done and the time left
    (short, no internals); none after the block ends, none when there is no Spark."""
    caplog.set_level(logging.INFO, logger="spark_topics.progress")
    with watching(spark_session, "evaluate", every=0.3):
        spark_session.sparkContext.parallelize(range(4), 4).map(lambda x: time.sleep(0.6) or x).collect()
    lines = [r.getMessage() for r in caplog.records if r.name == "spark_topics.progress"]
    assert lines and all(line.startswith("evaluate: tasks ") and "/4 " in line and len(line) < 80 for line in lines)
    caplog.clear()
    time.sleep(0.7)
    with watching(None, "evaluate", every=0.01):
        time.sleep(0.05)
    assert not [r for r in caplog.records if r.name == "spark_topics.progress"]


def test_a_training_logs_its_tasks_only_between_its_iterations_lines(spark_session, caplog):
    """``watching(..., between_steps=True)`` (train): while a long first step runs, lines of its tasks; while steps
    log their own lines (drivers.progress.stepped) more often than the interval, none."""
    import threading

    from drivers import progress

    caplog.set_level(logging.INFO, logger="spark_topics.progress")

    def stage():
        spark_session.sparkContext.parallelize(range(4), 4).map(lambda x: time.sleep(0.6) or x).collect()

    with watching(spark_session, "train", every=0.3, between_steps=True):
        stage()                                   # the first iteration: no step's line yet
    first = [r.getMessage() for r in caplog.records if r.name == "spark_topics.progress"]
    assert first and all(line.startswith("train: tasks ") for line in first), first
    caplog.clear()
    done = threading.Event()

    def steps():                                  # iterations' lines every 0.02 s
        while not done.wait(0.02):
            progress.stepped()

    stepper = threading.Thread(target=steps)
    progress.stepped()
    stepper.start()
    try:
        with watching(spark_session, "train", every=0.3, between_steps=True):
            stage()
    finally:
        done.set()
        stepper.join()
    assert not [r for r in caplog.records if r.name == "spark_topics.progress"]
